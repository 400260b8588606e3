"""`inbox doctor`: why a delivery does not verify, found by trying the usual mistakes with the ingest's own
verifiers. `profiles` says what each provider's scheme makes possible, `candidates` builds the candidate
deliveries, `diagnose` runs them, `recorded` reads a recorded rejection, `command` is the CLI."""

from __future__ import annotations

from inbox_cli.doctor.command import doctor
from inbox_cli.doctor.diagnose import Case, Diagnosis, DoctorError, diagnose
from inbox_cli.doctor.recorded import SourceSetup, doctor_for_rejected

__all__ = ["Case", "Diagnosis", "DoctorError", "SourceSetup", "diagnose", "doctor", "doctor_for_rejected"]
