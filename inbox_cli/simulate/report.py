"""The simulation's verdict, for a terminal."""

from __future__ import annotations

import json

from inbox_cli.simulate.run import SimulationReport


def render_report(report: SimulationReport) -> str:
    s = report.statuses
    lines = [
        "Simulation verdict",
        f"  payments                 {report.payments}",
        f"  webhooks sent by gateway {report.webhooks}   deliveries (with duplicates) {report.deliveries}",
        f"  events processed         {s.get('processed', 0)}",
        f"  events ignored           {s.get('ignored', 0)}   (late or repeated: nothing to change)",
        f"  events failed            {s.get('failed', 0)}",
        f"  events pending           {s.get('pending', 0)}",
        f"  payments matching truth  {report.matching}/{report.payments}",
        f"  deliveries not 2xx       {report.delivery_failures}",
        f"  throughput               {report.events_per_second} events/s over {report.elapsed_seconds} s",
        f"  receipt -> processed     p50 {report.latency_ms['p50']} ms, p99 {report.latency_ms['p99']} ms",
        "  per provider             payments / webhooks / deliveries / matching",
    ]
    for provider, figures in report.providers.items():
        lines.append(
            f"    {provider:<22} {figures['payments']:>4} / {figures['webhooks']:>4} / {figures['deliveries']:>4} / "
            f"{figures['matching']:>4}"
        )
    lines.append(f"  verdict                  {'OK' if report.ok else 'NOT OK'}")
    for mismatch in report.mismatches[:10]:
        lines.append(f"  MISMATCH {json.dumps(mismatch)}")
    return "\n".join(lines)
