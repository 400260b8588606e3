"""`make bench`: every figure is a ratio against a baseline measured in the same run.

`python -m bench` runs every section; `python -m bench end_to_end` (or `cold_start`, `ingest_cost`, `item_sizes`,
`ingest_burst`, `refetch_burst`, `processor_batch`, `confirm_burst`) runs some, keeping the other sections of
bench/results/latest.json as they were. `--quick` runs the sections that have a smoke-test size at it
(`confirm_burst`) and writes bench/results/quick.json instead, so the measured figures stay.

`python -m bench render` writes the figures README.md and docs/*.md mark from bench/results/latest.json;
`python -m bench render --check` only lists those that disagree (bench/render.py).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import (
    cold_start,
    confirm_burst,
    end_to_end,
    ingest_burst,
    ingest_cost,
    item_sizes,
    processor_batch,
    refetch_burst,
)

RESULTS = Path(__file__).resolve().parent / "results" / "latest.json"
QUICK_RESULTS = RESULTS.with_name("quick.json")
TARGETS = {"ingest: import + init": 1.3, "processor: import + init": 1.2}
INGEST_OVERHEAD_TARGET = 1.5
SECTIONS = (
    "cold_start",
    "ingest_cost",
    "end_to_end",
    "item_sizes",
    "ingest_burst",
    "refetch_burst",
    "processor_batch",
    "confirm_burst",
)


def print_cold_start(cold: dict[str, Any]) -> None:
    if "programs" not in cold:  # a results file written before the section measured bytecode
        print("\nCold start: not measured in this format yet (`python -m bench cold_start`)")
        return
    print(
        f"\nCold start: import + init in fresh interpreters, CPU ms (median), on a {cold['host_platform']} copy of "
        f"the staged code, Python {cold['python']} (Lambda runs {cold['runtime_python']} on arm64)"
    )
    print(
        f"  {'program':34} {'no bytecode':>12} {'bytecode':>9} {'saved':>7} "
        f"{'ratio, no bytecode':>19} {'ratio, bytecode':>16} {'target':>7}"
    )
    counted = cold.get("instructions") or {}
    for name, figures in cold["programs"].items():
        source, compiled = figures["no bytecode"], figures["bytecode"]
        target = TARGETS.get(name)
        decisive = counted[name]["ratio_to_baseline"] if name in counted else compiled["ratio_to_baseline"]
        verdict = "" if target is None else ("met" if decisive <= target else "NOT MET")
        print(
            f"  {name:34} {source['cpu_median_ms']:>12} {compiled['cpu_median_ms']:>9} "
            f"{figures['bytecode_saves_ms']:>7} {source['ratio_to_baseline']:>18}x "
            f"{compiled['ratio_to_baseline']:>15}x "
            f"{'' if target is None else f'{target}x':>7} {verdict}"
        )
    print("  (each ratio against the baseline of the same copy; the target is on the copy with bytecode)")
    if counted:
        print("  instructions with bytecode (valgrind's callgrind, once each, load-independent; the target's verdict):")
        for name, figures in counted.items():
            print(f"    {name:32} {figures['millions']:>9,.1f} million {figures['ratio_to_baseline']:>7}x")
    else:
        print("  (no valgrind here: the target's verdict is on the CPU medians, which move with the machine's load)")


def print_ingest_cost(ingest: dict[str, Any]) -> None:
    print("\nIngest cost per event: handler vs bare conditional PutItem (same backend)")
    print(f"  {'body':6} {'handler ms':>11} {'bare ms':>9} {'ratio':>7} {'target':>7}")
    for label, figures in ingest.items():
        verdict = "met" if figures["overhead_ratio"] <= INGEST_OVERHEAD_TARGET else "NOT MET"
        print(
            f"  {label:6} {figures['handler_median_ms']:>11} {figures['bare_putitem_median_ms']:>9} "
            f"{figures['overhead_ratio']:>6}x {INGEST_OVERHEAD_TARGET:>6}x {verdict}"
        )


def print_end_to_end(e2e: dict[str, Any]) -> None:
    single, storm, ratios = e2e["single"], e2e["storm"], e2e["ratios"]
    latency, put = single["post_to_processed"], e2e["baseline_putitem"]
    print(
        f"\nEnd to end on a local stack of its own: {single['events']} signed 1 KB `{e2e['provider']}` webhooks, "
        f"<= {e2e['window']} in flight (max seen {single['max_events_in_flight']})"
    )
    print(f"  {'figure':40} {'measured':>12} {'baseline (same run)':>34} {'ratio':>8}")
    rows = [
        (
            "events/s, POST -> processed",
            f"{single['events_per_s']}/s",
            f"bare PutItem, {put['clients']} clients: {put['puts_per_s']}/s",
            f"{ratios['events_per_s_vs_putitem_per_s']}x",
        ),
        (
            "latency p50",
            f"{latency['p50_ms']} ms",
            f"bare PutItem p50: {put['round_trip']['p50_ms']} ms",
            f"{ratios['p50_vs_putitem_p50']}x",
        ),
        (
            "latency p95",
            f"{latency['p95_ms']} ms",
            f"bare PutItem p95: {put['round_trip']['p95_ms']} ms",
            f"{ratios['p95_vs_putitem_p95']}x",
        ),
        (
            "latency p99",
            f"{latency['p99_ms']} ms",
            f"bare PutItem p99: {put['round_trip']['p99_ms']} ms",
            f"{ratios['p99_vs_putitem_p99']}x",
        ),
        (
            f"duplicate storm x{storm['deliveries'] // storm['events']}, deliveries/s",
            f"{storm['deliveries_per_s']}/s",
            f"single delivery: {single['deliveries_per_s']}/s",
            f"{ratios['storm_deliveries_per_s_vs_single']}x",
        ),
    ]
    for figure, measured, baseline, ratio in rows:
        print(f"  {figure:40} {measured:>12} {baseline:>34} {ratio:>8}")
    health = e2e["baseline_health"]
    print(
        f"  (front door: GET /health {health['requests_per_s']}/s with {health['senders']} senders, "
        f"p50 {health['round_trip']['p50_ms']} ms: not what limits)"
    )
    check = e2e["storm_check"]
    print(
        f"  duplicates absorbed: {'yes' if check['all_absorbed'] else 'NO'} "
        f"({check['items']} items for {storm['events']} events; answers {storm['answers']}; "
        f"one attempt each: {check['every_event_processed_once']}; payments written once: "
        f"{check['every_payment_written_once']})"
    )
    print(f"  latency histogram: {e2e['histogram']}")
    cpu, split = e2e.get("process_cpu", {}), e2e.get("cpu_split")
    if cpu.get("stack_process_s") is not None:
        print(
            f"  CPU over the timed run: stack process {cpu['stack_process_s']} s, embedded AWS process "
            f"{cpu['embedded_aws_process_s']} s ({cpu['stack_plus_aws_ms_per_event']} ms per event, "
            f"{cpu['cores_busy']} cores busy)"
        )
    if split:
        from bench.cpu_split import LABELS  # noqa: PLC0415

        print("\nCPU split (share of both processes' CPU; the stack process by its profile, self-time by path)")
        print(f"  {'code':52} {'self':>7} {'by caller':>10}")
        for category in sorted(split["self"]["percent"], key=lambda c: -split["self"]["percent"][c]):
            by_caller = split["by_caller"]["percent"].get(category, 0.0)
            print(f"  {LABELS[category]:52} {split['self']['percent'][category]:>6}% {by_caller:>9}%")
        print(
            f"  our code {split['self']['ours_percent']}% (by caller {split['by_caller']['ours_percent']}%) vs "
            f"embedded AWS {split['self']['embedded_aws_percent']}%; profile: {split['profile']} "
            f"(cProfile made the stack process {split['stack_profile_inflation']}x slower, per call: "
            f"call-heavy code such as botocore is overstated against ours)"
        )


def print_item_sizes(sizes: dict[str, Any]) -> None:
    scenario, per = sizes["scenario"], sizes["per_event"]
    print(
        f"\nMeasured per event (bench/item_sizes.py): {scenario['events']} {scenario['provider']} events of "
        f"{scenario['body_bytes']} bytes through a local stack, {scenario['deliveries_per_event']} deliveries and "
        f"{scenario['transitions_per_event']} transitions per event (inbox simulate, seed {scenario['seed']}), "
        f"forwarding {'on' if scenario['forwarding'] else 'off'}; simulation ok: {scenario['simulation_ok']}"
    )
    print(f"  {'figure':44} {'per event':>10}")
    for name, value in per.items():
        print(f"  {name:44} {value:>10}")
    print("  write units by function and table:", sizes["detail_per_event"]["table_write_units"])
    print("  index write units:", sizes["detail_per_event"]["index_write_units"])
    print("  item sizes (median bytes):", sizes["item_bytes_median"])


def print_ingest_burst(burst: dict[str, Any]) -> None:
    ratio = burst["ratios"]["absorbed_per_s_vs_putitem_per_s"]
    print(
        f"\nIngest burst (bench/ingest_burst.py): {burst['deliveries']} signed {burst['body_bytes']}-byte deliveries "
        f"from {burst['senders']} senders at once, processing paused"
    )
    print(
        f"  absorbed {burst['absorbed_per_s']}/s, nothing lost: {burst['nothing_lost']} "
        f"({burst['stored_items']} items for {burst['deliveries']} deliveries; answers {burst['answers']})"
    )
    print(
        f"  bare PutItem, same stack, {burst['baseline_putitem']['clients']} clients: "
        f"{burst['baseline_putitem']['puts_per_s']}/s -> ratio {ratio}x"
    )


def print_refetch_burst(burst: dict[str, Any]) -> None:
    print(
        f"\nRefetch burst (bench/refetch_burst.py): {burst['events']} Stripe events over {burst['payments']} payments, "
        f"the gateway limited to {burst['limit_per_second']:g} requests/s (429 above), the source's rate the same"
    )
    print(
        f"  gateway saw per second: max {burst['gateway_per_second_max']}, p99 {burst['gateway_per_second_p99']} "
        f"({burst['gateway_requests']} requests, {burst['gateway_requests_per_event']} per event); "
        f"429s: {burst['gateway_429s']}; refetches per event {burst.get('refetches_per_event', '-')}"
    )
    print(
        f"  drained in {burst['drain_seconds']} s from the first POST (posting took {burst['post_seconds']} s); "
        f"the limit allows {burst['ideal_drain_seconds']} s at best -> ratio {burst['drain_vs_ideal']}x"
    )
    print(
        f"  failed {burst['failed']}, pending {burst['pending']}, payments differing from the gateway "
        f"{burst['mismatched_payments']}; attempts per event {burst['attempts_per_event']}; "
        f"limiter {burst['limiter']}; ok: {burst['ok']}"
    )


def print_processor_batch(figures: dict[str, Any]) -> None:
    scenario = figures["scenario"]
    print(
        f"\nProcessor per event (bench/processor_batch.py): gateway {scenario['gateway_latency_ms_assumed']} ms and "
        f"DynamoDB {scenario['dynamodb_latency_ms_assumed']} ms per request (assumed), "
        f"{scenario['max_concurrent_groups']} groups at once after"
    )
    print(f"  {'batch':28} {'before ms':>10} {'after ms':>9} {'ratio':>7} {'refetches/event before, after':>31}")
    for shape in ("typical", "burst"):
        row = figures[shape]
        label = f"{shape}: {row['events_per_batch']} events, {row['payments_per_batch']} payments"
        refetches = f"{row['before']['refetches_per_event']}, {row['after']['refetches_per_event']}"
        print(
            f"  {label:28} {row['before']['ms_per_event']:>10} {row['after']['ms_per_event']:>9} "
            f"{row['after_vs_before']:>6}x {refetches:>31}"
        )
    typical = figures["typical"]["after"]
    print(
        f"  CPU: the processor's own {typical.get('own_cpu_ms_per_event')} ms per event (typical batch), the AWS SDK "
        f"{figures.get('sdk_cpu_ms_per_dynamodb_call')} ms per DynamoDB request (this machine's cores)"
    )


def print_confirm_burst(burst: dict[str, Any]) -> None:
    shares = ", ".join(f"{kind} {share:.0%}" for kind, share in burst["shares"].items())
    print(
        f"\nConfirm from the payload (bench/confirm_burst.py): {burst['payments']} Stripe payments (created, then "
        f"succeeded) posted at once, the gateway limited to {burst['limit_per_second']:g} read/s (429 above); "
        f"moved on at the gateway: {shares}"
    )
    print(
        f"  {'mode':12} {'to correct p50/p99 s':>21} {'to verified p50/p99 s':>22} {'to confirmed p50/p99 s':>23} "
        f"{'corrections':>11} {'mismatched':>10} {'gateway max/s':>13} {'over bound':>10} {'seconds':>8}"
    )
    for mode in confirm_burst.MODES:
        run = burst.get(mode)
        if run is None:
            continue
        if not run.get("available"):
            print(f"  {mode:12} not available: {run.get('reason', '')}")
            continue

        def pair(figure: dict[str, Any]) -> str:
            return f"{figure['p50_s']} / {figure['p99_s']}" + (
                f" ({figure['missing']} never)" if figure["missing"] else ""
            )

        gateway = run["gateway"]
        print(
            f"  {mode:12} {pair(run['to_correct']):>21} {pair(run['to_verified']):>22} "
            f"{pair(run['to_confirmed']):>23} {run['corrections']:>11} {run['mismatched_payments']:>10} "
            f"{gateway['per_second_max']:>13} {gateway['windows_over_bound']:>10} {run['seconds']:>8}"
        )
    ratio = burst["p99_to_correct_when_behind_vs_never"]
    verdict = "not measured" if ratio is None else ("met" if burst["target_met"] else "NOT MET")
    print(
        f"  p99 to the correct status, when_behind / never: {ratio if ratio is not None else '-'} "
        f"(target <= {burst['target_ratio']}: {verdict}); ok: {burst['ok']}"
    )


PRINTERS: dict[str, Callable[[dict[str, Any]], None]] = {
    "cold_start": print_cold_start,
    "ingest_cost": print_ingest_cost,
    "end_to_end": print_end_to_end,
    "item_sizes": print_item_sizes,
    "ingest_burst": print_ingest_burst,
    "refetch_burst": print_refetch_burst,
    "processor_batch": print_processor_batch,
    "confirm_burst": print_confirm_burst,
}


def main(argv: list[str] | None = None) -> int:
    arguments_given = sys.argv[1:] if argv is None else argv
    if arguments_given[:1] == ["render"]:
        from bench import render  # noqa: PLC0415

        return render.main(arguments_given[1:])
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("sections", nargs="*", metavar="section", help=f"any of {', '.join(SECTIONS)} (default: all)")
    parser.add_argument(
        "--quick", action="store_true", help="smoke-test sizes where a section has one; results to quick.json"
    )
    arguments = parser.parse_args(arguments_given)
    chosen, results = arguments.sections or list(SECTIONS), QUICK_RESULTS if arguments.quick else RESULTS
    unknown = set(chosen) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown section(s): {', '.join(sorted(unknown))}")
    started = time.monotonic()
    previous: dict[str, Any] = {}
    if set(chosen) != set(SECTIONS) and results.exists():
        previous = json.loads(results.read_text())  # the sections not run this time stay as they were
    document: dict[str, Any] = {
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "sections_measured": chosen,
        "python": platform.python_version(),
        "machine": platform.machine(),
    } | {section: previous[section] for section in SECTIONS if section in previous}
    if "cold_start" in chosen:
        print("measuring cold starts (fresh interpreters, a host copy of the staged code)...", flush=True)
        document["cold_start"] = cold_start.measure()
    if "ingest_cost" in chosen:
        print("measuring ingest cost per event (moto in-process)...", flush=True)
        document["ingest_cost"] = ingest_cost.measure()
    if "end_to_end" in chosen:
        print("measuring end to end on a local stack of its own (then a profiled one)...", flush=True)
        document["end_to_end"] = end_to_end.measure()
    if "item_sizes" in chosen:
        print("measuring item sizes and write units per event (a local stack in a child process)...", flush=True)
        document["item_sizes"] = item_sizes.measure()
    if "ingest_burst" in chosen:
        print("measuring an ingest burst (a local stack of its own, processing paused)...", flush=True)
        document["ingest_burst"] = ingest_burst.measure()
    if "refetch_burst" in chosen:
        print("measuring a refetch burst against a rate-limited gateway (a local stack of its own)...", flush=True)
        document["refetch_burst"] = refetch_burst.measure()
    if "processor_batch" in chosen:
        print("measuring the processor per event (the gateway simulator, latencies assumed)...", flush=True)
        document["processor_batch"] = processor_batch.measure()
    if "confirm_burst" in chosen:
        print(
            "measuring confirm from the payload against a gateway at 1 read/s (a local stack per mode)...", flush=True
        )
        size = confirm_burst.QUICK_PAYMENTS if arguments.quick else confirm_burst.PAYMENTS
        document["confirm_burst"] = confirm_burst.measure(payments=size)
    for section, show in PRINTERS.items():
        if section in document:
            show(document[section])
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps(document, indent=2) + "\n")
    where = results.relative_to(Path.cwd()) if results.is_relative_to(Path.cwd()) else results
    print(f"\nwritten to {where} in {time.monotonic() - started:.0f} s")
    if not arguments.quick:
        print("the pages' figures: `python -m bench render` writes them, `python -m bench render --check` compares")
    return 0


if __name__ == "__main__":
    sys.exit(main())
