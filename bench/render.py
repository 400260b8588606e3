"""`python -m bench render`: write the measured figures of README.md and docs/*.md from bench/results/latest.json.

A measured figure on a page is followed by a marker, an HTML comment (invisible once rendered, and free of `|`, so
it fits in a table cell) naming its format and where its value comes from:

    17.7<!-- bench .1f end_to_end.single.events_per_s -->

- the format: a Python format spec (`.1f`, `,.0f`, `.2f`, `.0%`, `d`), applied to the value;
- the value: a path into the results, its keys joined by `.` (a key may hold spaces: `ingest_cost.2 KB.overhead_ratio`),
  or `=` and the name of a figure derived from the results by a formula registered here (`formula`: the cost
  model's $ per million webhooks and fixed $ a month, and its lines, computed by inbox_cli/cost.py as `inbox cost`
  computes them).

The figure is the number right before the marker (digits, thousands commas, a decimal part, a `%`). `render` rewrites
it; `render --check` changes nothing and exits 1 listing every figure that disagrees (page, line, written,
expected). A marker whose path or formula names nothing, whose value is not a number, or with no figure before it is
an error (exit 2): never a silent pass.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

MARKER = re.compile(r"<!-- bench (?P<format>\S+) (?P<name>[^<>]+?) -->")
# The figure a marker closes: the number ending right where the marker starts (its `%` too, when the format is one).
NUMBER = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
FIGURE, PERCENT_FIGURE = re.compile(NUMBER + "$"), re.compile(NUMBER + "%$")


class RenderError(Exception):
    """Markers that name no figure, or that no figure precedes: one line each."""


@dataclass(frozen=True)
class Figure:
    page: str  # relative to the repository root
    line: int  # 1-based
    name: str  # the marker's path or `=formula`
    written: str  # what the page says
    expected: str  # what the results say, formatted


# ------------------------------------------------------------------------------------- derived figures (formulas)
Formula = Callable[[Path], float]
DECLARATIONS = ("all_sources", "one_stripe_source")


@cache
def cost_report(results: Path, declaration: str, forwarding: bool, *, tracing: bool = False) -> dict[str, Any]:
    """`inbox cost --events-per-month 1000000 --json` (us-east-1, no dashboard; `--tracing` with `tracing`) priced
    from `results`, for a deployment of the default declaration (one source per provider) or of one Stripe source,
    forwarding on or off: what the command prints for that deployment (inbox_cli/cost.py computes both)."""
    from inbox_cli.cost import deployment_assumptions, measured_usage, monthly_cost  # noqa: PLC0415
    from shared import definitions  # noqa: PLC0415

    sources = (
        definitions.default_sources()
        if declaration == "all_sources"
        else (definitions.SourceSpec("stripe-br", "stripe"),)
    )
    assumptions = deployment_assumptions(
        sources, forwarding=forwarding, dashboard=False, tracing=tracing, results_path=results
    )
    return monthly_cost(1_000_000, "us-east-1", assumptions, measured_usage(results))


def _cost(declaration: str, forwarding: bool, figure: str) -> Formula:
    return lambda results: float(cost_report(results, declaration, forwarding)[figure])


def _cost_lines(names: str, *, forwarding: bool = True) -> Formula:
    """The sum of cost lines (names joined by `;`), $ per million webhooks for the default declaration with
    forwarding on (the scenario docs/cost.md prices line by line), or off."""
    wanted = [name.strip() for name in names.split(";")]

    def compute(results: Path) -> float:
        lines = cost_report(results, "all_sources", forwarding)["lines"]
        missing = [name for name in wanted if name not in lines]
        if missing:
            raise KeyError(f"no cost line {', '.join(map(repr, missing))} (lines: {', '.join(lines)})")
        return float(sum(lines[name] for name in wanted))

    return compute


FORMULAS: dict[str, Formula] = {
    f"cost.{figure}.{declaration}.forwarding_{'on' if forwarding else 'off'}": _cost(declaration, forwarding, figure)
    for figure in ("variable_per_million_events", "fixed_per_month")
    for declaration in DECLARATIONS
    for forwarding in (True, False)
}


def processor_lambda_ms(results: Path, shape: str, way: str, memory_mb: int | None = None) -> float:
    """The processor's time per event of a batch shape on Lambda, at its memory (inbox_cli/cost.py `lambda_ms`): the
    benchmark's wall time beyond its own CPU is waiting; its CPU (the processor's own, measured on the "after" way
    of the shape, and the AWS SDK's for the DynamoDB requests per event item_sizes counts) runs at the function's
    share of a vCPU. The "before" way ran its groups one at a time."""
    from inbox_cli.cost import lambda_ms  # noqa: PLC0415
    from shared.definitions import PROCESSOR_MEMORY_MB  # noqa: PLC0415

    figures = json.loads(results.read_text())
    batch = figures["processor_batch"]
    row = batch[shape]
    own = float(row["after"]["own_cpu_ms_per_event"])
    requests = figures["item_sizes"]["detail_per_event"]["requests"]
    calls = sum(count for name, count in requests.items() if name.startswith("processor: dynamodb."))
    cpu = own + calls * float(batch["sdk_cpu_ms_per_dynamodb_call"])
    concurrent = row["payments_per_batch"] if way == "after" else 1
    memory = memory_mb or PROCESSOR_MEMORY_MB
    return lambda_ms(float(row[way]["ms_per_event"]) - own, cpu, memory, concurrent=concurrent)


def _processor_events_per_s(shape: str, way: str) -> Formula:
    """Events a second the processor's concurrency allows at a batch shape's time per event on Lambda
    (`PROCESSOR_MAX_CONCURRENCY` batches at once, each taking its events one after the other: scale.md)."""

    def compute(results: Path) -> float:
        from shared.definitions import PROCESSOR_MAX_CONCURRENCY  # noqa: PLC0415

        return float(PROCESSOR_MAX_CONCURRENCY * 1000 / processor_lambda_ms(results, shape, way))

    return compute


# The Black Friday burst of docs/scale.md: 5,000 webhooks a second for 10 minutes, 1.25 deliveries per event.
BURST_EVENTS = 2_400_000

FORMULAS |= {
    f"scale.processor_events_per_s.{shape}.{way}": _processor_events_per_s(shape, way)
    for shape in ("typical", "burst")
    for way in ("before", "after")
}


def _processor_lambda_ms(shape: str) -> Formula:
    return lambda results: processor_lambda_ms(results, shape, "after")


# The processor's memory sizes docs/cost.md compares.
COMPARED_PROCESSOR_MEMORY_MB = (256, 384, 512)


def _processor_ms_at(memory_mb: int) -> Formula:
    return lambda results: processor_lambda_ms(results, "typical", "after", memory_mb)


def _processor_line_at(memory_mb: int) -> Formula:
    """The processor's GB-seconds line ($ per million webhooks) were it `memory_mb`: a typical batch's time per event on
    Lambda at that size (`processor_lambda_ms`) times the size, at prices.json's arm64 price."""

    def compute(results: Path) -> float:
        from inbox_cli.cost import PRICES  # noqa: PLC0415

        price = json.loads(PRICES.read_text())["regions"]["us-east-1"]["lambda_arm64_per_gb_second"]
        ms = processor_lambda_ms(results, "typical", "after", memory_mb)
        return 1_000_000 * ms / 1000 * memory_mb / 1024 * float(price)

    return compute


def _burst_confirm_hours(shape: str) -> Formula:
    """Hours the processor takes to confirm the burst's events at a batch shape's events per second on Lambda."""
    return lambda results: BURST_EVENTS / _processor_events_per_s(shape, "after")(results) / 3600


def _cost_assumption(name: str) -> Formula:
    """An assumption `inbox cost` priced the default declaration with (forwarding off), e.g. a Lambda duration."""
    return lambda results: float(cost_report(results, "all_sources", False)["assumptions"][name])


FORMULAS |= {f"scale.processor_lambda_ms.{shape}.after": _processor_lambda_ms(shape) for shape in ("typical", "burst")}
FORMULAS |= {f"scale.burst_confirm_hours.{shape}": _burst_confirm_hours(shape) for shape in ("typical", "burst")}
FORMULAS |= {f"scale.processor_lambda_ms_at.{mb}": _processor_ms_at(mb) for mb in COMPARED_PROCESSOR_MEMORY_MB}
FORMULAS |= {f"cost.processor_line_at.{mb}": _processor_line_at(mb) for mb in COMPARED_PROCESSOR_MEMORY_MB}
FORMULAS |= {
    f"cost.assumption.{name}": _cost_assumption(name)
    for name in ("ingest_ms", "processor_ms_per_event", "ingest_cpu_ms", "processor_cpu_ms_per_event")
}
FORMULAS["cost.xray_traces_with_tracing"] = lambda results: float(
    cost_report(results, "all_sources", True, tracing=True)["lines"]["X-Ray traces"]
)


def _xray_million_traces(results: Path) -> float:
    """The traces a month (millions) that `cost.xray_traces_with_tracing` pays for, at prices.json's price."""
    from inbox_cli.cost import PRICES  # noqa: PLC0415

    price = json.loads(PRICES.read_text())["regions"]["us-east-1"]["xray_per_million_traces_recorded"]
    return float(cost_report(results, "all_sources", True, tracing=True)["lines"]["X-Ray traces"]) / float(price)


FORMULAS["cost.xray_million_traces_with_tracing"] = _xray_million_traces
# A sum of the cost model's lines: `=cost.line.DynamoDB reads`, `=cost.line.EventBridge Pipes; SQS FIFO (send, ...)`;
# `=cost.line_forwarding_off.` the same with forwarding off (the default deployment).
COST_LINES = "cost.line."
COST_LINES_FORWARDING_OFF = "cost.line_forwarding_off."


def formula(name: str) -> Formula | None:
    """The formula registered under `name` (FORMULAS, or a sum of the cost model's lines), None when there is none."""
    if name.startswith(COST_LINES) and name != COST_LINES:
        return _cost_lines(name.removeprefix(COST_LINES))
    if name.startswith(COST_LINES_FORWARDING_OFF) and name != COST_LINES_FORWARDING_OFF:
        return _cost_lines(name.removeprefix(COST_LINES_FORWARDING_OFF), forwarding=False)
    return FORMULAS.get(name)


# -------------------------------------------------------------------------------------------------- the values
def lookup(results: dict[str, Any], path: str) -> Any:
    """The value at `path` (keys joined by `.`) in the results; KeyError naming the first key missing."""
    value: Any = results
    walked: list[str] = []
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            where = ".".join(walked) or "the results"
            raise KeyError(f"no {key!r} in {where}")
        value, walked = value[key], [*walked, key]
    return value


class Values:
    """The figures markers name, read once from one results file."""

    def __init__(self, results_path: Path, results: dict[str, Any] | None = None) -> None:
        """The results at `results_path` (or `results`, already read from it)."""
        self.path = results_path
        self.results: dict[str, Any] = json.loads(results_path.read_text()) if results is None else results
        self.derived: dict[str, float] = {}  # each formula computed once a run

    def value(self, name: str) -> float:
        if name.startswith("="):
            compute = formula(name[1:])
            if compute is None:
                known = ", ".join([*sorted(FORMULAS), COST_LINES + "LINE[; LINE...]"])
                raise KeyError(f"no formula {name[1:]!r} (known: {known})")
            if name not in self.derived:
                self.derived[name] = compute(self.path)
            return self.derived[name]
        value = lookup(self.results, name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise KeyError(f"{name} is {value!r}, not a measured number")
        return value

    def formatted(self, name: str, spec: str) -> str:
        value = self.value(name)
        try:
            return format(value, spec)
        except ValueError as error:
            raise KeyError(f"format {spec!r} does not apply to {value!r}: {error}") from None


# ------------------------------------------------------------------------------------------------- the pages
def pages(root: Path = ROOT) -> list[Path]:
    """README.md and every page of docs/."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def render_text(text: str, values: Values, page: str) -> tuple[str, list[Figure]]:
    """`text` with every marked figure written from `values`, and each figure (written as it was, and expected).
    RenderError lists every marker that names nothing or closes no figure."""
    figures: list[Figure] = []
    problems: list[str] = []
    rendered: list[str] = []
    for number, line in enumerate(text.split("\n"), start=1):
        out, last = [], 0
        markers = list(MARKER.finditer(line))
        if line.count("<!-- bench") != len(markers):  # a marker misspelt would leave its figure unchecked
            problems.append(f"{page}:{number}: a bench marker not of the form <!-- bench FORMAT PATH -->")
        for marker in markers:
            before = line[last : marker.start()]
            name, spec = marker["name"].strip(), marker["format"]
            written = (PERCENT_FIGURE if spec.endswith("%") else FIGURE).search(before)
            try:
                expected = values.formatted(name, spec)
            except KeyError as error:
                problems.append(f"{page}:{number}: {name}: {error.args[0]}")
                expected = None
            if written is None:
                problems.append(f"{page}:{number}: no figure right before the marker of {name}")
            if written is None or expected is None:
                out.append(line[last : marker.end()])
            else:
                figures.append(Figure(page, number, name, written.group(), expected))
                out.append(before[: written.start()] + expected + marker.group())
            last = marker.end()
        out.append(line[last:])
        rendered.append("".join(out))
    if problems:
        raise RenderError("\n".join(problems))
    return "\n".join(rendered), figures


def render_pages(paths: list[Path], values: Values, root: Path, *, write: bool) -> list[Figure]:
    """Every marked figure of `paths`; with `write`, each page whose figures disagree rewritten. RenderError (every
    page's problems together, nothing written) when a marker names nothing."""
    rendered: dict[Path, str] = {}
    figures: list[Figure] = []
    problems: list[str] = []
    for path in paths:
        text = path.read_text()
        try:
            new, found = render_text(text, values, path.relative_to(root).as_posix())
        except RenderError as error:
            problems.append(str(error))
            continue
        figures += found
        if new != text:
            rendered[path] = new
    if problems:
        raise RenderError("\n".join(problems))
    if write:
        for path, text in rendered.items():
            path.write_text(text)
    return figures


def main(argv: list[str] | None = None, root: Path = ROOT) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench render",
        description="Write the measured figures of README.md and docs/*.md from the bench results.",
    )
    parser.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 listing each figure that disagrees"
    )
    parser.add_argument(
        "--results", type=Path, default=None, help="the results file (default: bench/results/latest.json)"
    )
    arguments = parser.parse_args(argv)
    results = arguments.results or root / "bench" / "results" / "latest.json"
    try:
        figures = render_pages(pages(root), Values(results), root, write=not arguments.check)
    except (RenderError, OSError, json.JSONDecodeError) as error:
        print(f"cannot render the figures:\n{error}", file=sys.stderr)
        return 2
    disagreeing = [figure for figure in figures if figure.written != figure.expected]
    for figure in disagreeing:
        print(f"{figure.page}:{figure.line}: {figure.name}: written {figure.written}, expected {figure.expected}")
    marked = len({figure.page for figure in figures})
    if arguments.check:
        print(f"{len(figures)} figures in {marked} pages, {len(disagreeing)} disagreeing with {results.name}")
        return 1 if disagreeing else 0
    print(f"{len(figures)} figures in {marked} pages, {len(disagreeing)} rewritten from {results.name}")
    return 0
