"""What `make synth` and `make deploy` print once the stack is synthesized: the sources it deploys, its secrets, its
alarms and who is subscribed to them, and the fixed cost per month as `inbox cost` computes it (inbox_cli/cost.py),
with a warning for what a first deploy most often gets wrong: no one subscribed to the alarms, and no sources.json
(a source per provider, with their secrets and alarms).

app.py prints it (infra/ imports nothing of the CLI); the facts come from the synthesized template itself, so the
summary says what the deploy would create, not what the settings meant to.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from inbox_cli.cost import deployment_assumptions, measured_usage, monthly_cost
from shared import definitions

COST_REGION = "us-east-1"  # the prices inbox_cli/prices.json holds: what `inbox cost` prices by default
SECRET = "AWS::SecretsManager::Secret"  # noqa: S105 - a resource type, not a secret
ALARM = "AWS::CloudWatch::Alarm"
SUBSCRIPTION = "AWS::SNS::Subscription"


@dataclass(frozen=True)
class DeploymentSummary:
    stack_name: str
    sources: tuple[definitions.SourceSpec, ...]
    sources_file: str | None  # the declaration's file; None: there was none (a source per provider)
    secrets: int
    alarms: int
    subscribers: tuple[str, ...]  # each subscription's protocol and endpoint, as the template has it
    fixed_per_month: float

    @property
    def warnings(self) -> list[str]:
        found = []
        if not self.subscribers:
            found.append(
                f"no one would hear an alarm: {self.alarms} alarms notify the SNS topic (output "
                f"{definitions.OUTPUT_ALARM_TOPIC}) and nothing is subscribed to it. Deploy with "
                'CDK_ARGS="-c alarm_email=you@example.com" (then confirm the e-mail AWS sends), or subscribe your '
                "on-call to that topic"
            )
        if self.sources_file is None:
            found.append(
                f"no sources.json: this deploys a source per provider ({len(self.sources)} sources, "
                f"{self.secrets} secrets). Declare your own gateway accounts in sources.json first "
                "(docs/sources.md): a deployment pays for the secrets and alarms of the sources it declares"
            )
        return found

    def render(self) -> str:
        names = ", ".join(f"{source.name} ({source.provider})" for source in self.sources)
        lines = [
            f"Stack {self.stack_name} as synthesized:",
            f"  sources ({len(self.sources)}, from {self.sources_file or 'no sources.json: one per provider'}): "
            + names,
            f"  secrets: {self.secrets} (store each source's with `inbox secrets set SOURCE --kind ... --stack "
            f"{self.stack_name}` after the deploy)",
            f"  alarms: {self.alarms}, subscribed: {', '.join(self.subscribers) or 'nobody'}",
            f"  fixed cost: ${self.fixed_per_month:.2f} a month ({COST_REGION} list prices, as `inbox cost` "
            "computes it; traffic costs per event on top)",
        ]
        lines += [f"warning: {warning}" for warning in self.warnings]
        return "\n".join(lines)


def summarize(
    template: Mapping[str, Any],
    *,
    stack_name: str,
    sources: tuple[definitions.SourceSpec, ...],
    sources_file: str | None,
    forwarding: bool,
    dashboard: bool,
    tracing: bool,
) -> DeploymentSummary:
    """The summary of a synthesized `template` of `sources` (the settings say what `inbox cost` should price)."""
    resources = list(template.get("Resources", {}).values())
    subscribers = tuple(
        f"{resource['Properties'].get('Protocol')} {resource['Properties'].get('Endpoint')}"
        for resource in resources
        if resource.get("Type") == SUBSCRIPTION
    )
    assumptions = deployment_assumptions(sources, forwarding=forwarding, dashboard=dashboard, tracing=tracing)
    report = monthly_cost(1_000_000, COST_REGION, assumptions, measured_usage())
    return DeploymentSummary(
        stack_name=stack_name,
        sources=sources,
        sources_file=sources_file,
        secrets=sum(1 for resource in resources if resource.get("Type") == SECRET),
        alarms=sum(1 for resource in resources if resource.get("Type") == ALARM),
        subscribers=subscribers,
        fixed_per_month=float(report["fixed_per_month"]),
    )
