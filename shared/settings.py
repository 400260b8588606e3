"""Function configuration read from the environment once, validated, and passed explicitly.

Frozen dataclasses rather than pydantic models: pydantic's import and schema building are measurable on a cold
start, and these are a handful of values. (The processor's settings, in shared/process/app.py, were a pydantic
model until `make bench` showed it was ~200 ms of the processor's cold start.)
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from shared.definitions import (
    DEFAULT_RETENTION_DAYS,
    DEFAULT_SIGNATURE_TOLERANCE_SECONDS,
    ENV_BODY_BUCKET,
    ENV_INBOX_TABLE,
    ENV_RETENTION_DAYS,
    ENV_SECRET_PREFIX,
    ENV_SIGNATURE_TOLERANCE,
    ENV_SIGNING_SECRETS,
    INLINE_BODY_LIMIT_BYTES,
    MINIMUM_RETENTION_DAYS,
)


class ConfigurationError(ValueError):
    pass


def required_text(environ: Mapping[str, str], name: str) -> str:
    """A variable that must be set to a non-blank value."""
    value = environ.get(name, "").strip()
    if not value:
        raise ConfigurationError(f"environment variable {name} is required")
    return value


def integer(
    environ: Mapping[str, str], name: str, default: int, *, low: int | None = None, high: int | None = None
) -> int:
    """A whole number (surrounding blanks ignored), `default` when unset or blank, within [low, high] if given."""
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigurationError(f"{name} must be an integer, got {raw!r}") from None
    if (low is not None and value < low) or (high is not None and value > high):
        raise ConfigurationError(f"{name} must be within {low}..{high}, got {value}")
    return value


def positive_number(environ: Mapping[str, str], name: str, default: float, *, high: float) -> float:
    """A number in (0, high] (surrounding blanks ignored), `default` when unset or blank. NaN and inf refused."""
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigurationError(f"{name} must be a number, got {raw!r}") from None
    if not 0 < value <= high:  # NaN compares false with everything: refused here too
        raise ConfigurationError(f"{name} must be within (0, {high}], got {raw!r}")
    return value


def text_map(environ: Mapping[str, str], name: str) -> dict[str, str]:
    """A JSON object of non-blank strings (e.g. the stack's `{provider: secret ARN}` maps); empty when unset or
    blank. Refused when set to anything else: a broken deployment fails at cold start, not at the first event."""
    raw = environ.get(name, "").strip()
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        raise ConfigurationError(f"{name} must be a JSON object, got something else") from None
    if not isinstance(value, dict) or not all(
        isinstance(key, str) and isinstance(item, str) and item.strip() for key, item in value.items()
    ):
        raise ConfigurationError(f"{name} must be a JSON object of non-blank strings")
    return {key: item.strip() for key, item in value.items()}


@dataclass(frozen=True, slots=True)
class IngestSettings:
    inbox_table: str
    body_bucket: str
    secret_prefix: str
    # {provider: secret ARN} of the deployed stack (shared/secrets.py explains; the prefix serves the local stack).
    signing_secret_ids: Mapping[str, str] = field(default_factory=dict)
    signature_tolerance_seconds: int = DEFAULT_SIGNATURE_TOLERANCE_SECONDS
    retention_days: int = DEFAULT_RETENTION_DAYS
    inline_body_limit_bytes: int = INLINE_BODY_LIMIT_BYTES

    def __post_init__(self) -> None:
        if self.retention_days < MINIMUM_RETENTION_DAYS:
            raise ConfigurationError(
                f"retention of {self.retention_days} days refused: at least {MINIMUM_RETENTION_DAYS} days "
                "are needed to replay a week-long gateway outage"
            )
        if self.signature_tolerance_seconds < 0:
            raise ConfigurationError("signature tolerance cannot be negative")

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> IngestSettings:
        env = os.environ if environ is None else environ
        return cls(
            inbox_table=required_text(env, ENV_INBOX_TABLE),
            body_bucket=required_text(env, ENV_BODY_BUCKET),
            secret_prefix=env.get(ENV_SECRET_PREFIX, ""),
            signing_secret_ids=text_map(env, ENV_SIGNING_SECRETS),
            signature_tolerance_seconds=integer(env, ENV_SIGNATURE_TOLERANCE, DEFAULT_SIGNATURE_TOLERANCE_SECONDS),
            retention_days=integer(env, ENV_RETENTION_DAYS, DEFAULT_RETENTION_DAYS),
        )
