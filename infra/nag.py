"""cdk-nag acknowledgements: one place that spells the rule ids the way cdk-nag 3 reports them.

cdk-nag 3 runs as a CDK validation plugin (``Validations.of(app).add_plugins(AwsSolutionsChecks(app))``) and
accepts acknowledgements through CDK's own ``Validations.of(construct).acknowledge``. The id carries the
plugin's name (``AwsSolutions::AwsSolutions-S1``): acknowledged that way, the finding is listed with its reason
under ``suppressedViolations`` in the cloud assembly's validation report, an audit trail of every exception.
Findings with a detail (IAM5 wildcards) are acknowledged one by one: ``AwsSolutions-IAM5[Resource::*]``.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct

PLUGIN = "AwsSolutions"
MINIMUM_REASON_LENGTH = 40  # a reason is a sentence that explains, not a label


def acknowledge(construct: IConstruct, rule: str, reason: str) -> None:
    """Acknowledge one AwsSolutions finding (``rule`` like ``AwsSolutions-S1`` or ``AwsSolutions-IAM5[...]``)
    on ``construct`` and everything under it."""
    if not rule.startswith(f"{PLUGIN}-"):
        raise ValueError(f"{rule!r} is not an {PLUGIN} rule id")
    if len(reason.strip()) < MINIMUM_REASON_LENGTH:
        raise ValueError(f"the reason for acknowledging {rule} must explain why, got {reason!r}")
    Validations.of(construct).acknowledge(Acknowledgment(id=f"{PLUGIN}::{rule}", reason=reason))
