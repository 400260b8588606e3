"""Where the local stack's CPU goes: the stack process's CPU profile (`INBOX_PROFILE`, inbox_local/profiling.py)
attributed by the path of the code that spent it, plus the embedded AWS process's CPU.

Categories, by the file of a function:
- `shared/`, `functions/`, `infra/` of this repository: our product code (what the Lambdas run);
- `inbox_local/`: our emulation glue (API Gateway front door, Pipe, queue mapping, schedules, gateway simulator);
- `moto/`, `werkzeug/`: the embedded AWS (the Pipe's filter is moto's event-pattern matcher, in the stack process);
- boto3, botocore, s3transfer, urllib3, jmespath, dateutil: the AWS SDK client the functions call AWS with;
- Powertools and pydantic; the Python runtime and stdlib (http.server, socket, json, threading); other.

Two views of the stack process's profile:
- self: each function's self-time to its own file's category; a built-in (C) function has no file, so its
  self-time goes to its callers' categories, split by the time each call edge recorded;
- by caller: the self-time of the runtime/stdlib (and of built-ins) goes up the call edges to the nearest callers
  that are not the runtime (a `socket.recv_into` under urllib3 is the SDK's; `json.loads` called from shared/
  is ours), split in proportion to the edges' times.

The embedded AWS process exists only to be AWS (our patches of moto's transaction and SQS attributes in
inbox_local/embedded_aws.py run inside it too): all of its CPU counts as the embedded AWS, from its process clock.
"""

from __future__ import annotations

import pstats
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

OURS_PRODUCT = "ours_product"
OURS_GLUE = "ours_local_glue"
EMBEDDED_AWS = "embedded_aws"
AWS_SDK = "aws_sdk_client"
POWERTOOLS = "powertools_pydantic"
RUNTIME = "python_runtime_stdlib"
OTHER = "other"
BUILTIN = "builtin"  # no file: resolved through the callers, never reported

OURS = frozenset({OURS_PRODUCT, OURS_GLUE})
LABELS = {
    OURS_PRODUCT: "our code: shared/, functions/",
    OURS_GLUE: "our code: inbox_local/ emulation glue",
    EMBEDDED_AWS: "embedded AWS: moto, werkzeug",
    AWS_SDK: "AWS SDK client: boto3, botocore, urllib3",
    POWERTOOLS: "Powertools, pydantic",
    RUNTIME: "Python runtime, stdlib",
    OTHER: "other",
}

_PRODUCT_DIRS = frozenset({"shared", "functions", "infra"})
_AWS_PACKAGES = frozenset({"moto", "werkzeug"})
_SDK_PACKAGES = frozenset({"boto3", "botocore", "s3transfer", "urllib3", "jmespath", "dateutil"})
_POWERTOOLS_PACKAGES = frozenset({"aws_lambda_powertools", "pydantic", "pydantic_core"})
_MAX_CALLER_DEPTH = 30

# pstats' layout: {(file, line, function): (primitive calls, calls, self, cumulative, {caller: (same four)})}
Function = tuple[str, int, str]
Stats = Mapping[Function, tuple[Any, ...]]


def classify(path: str, root: Path) -> str:
    """The category of the code in file `path` (as the profile names it), `root` being this repository."""
    if path == "~":
        return BUILTIN
    if path.startswith("<"):  # <frozen importlib._bootstrap>, <string>: the interpreter's own
        return RUNTIME
    parts = PurePosixPath(path).parts
    if "site-packages" in parts:
        index = parts.index("site-packages")
        package = parts[index + 1].removesuffix(".py") if index + 1 < len(parts) else ""
        if package in _AWS_PACKAGES:
            return EMBEDDED_AWS
        if package in _SDK_PACKAGES:
            return AWS_SDK
        if package in _POWERTOOLS_PACKAGES:
            return POWERTOOLS
        return OTHER
    pure, base = PurePosixPath(path), PurePosixPath(root)
    if pure.is_relative_to(base):
        top = pure.relative_to(base).parts[0] if pure.relative_to(base).parts else ""
        if top in _PRODUCT_DIRS:
            return OURS_PRODUCT
        if top == "inbox_local":
            return OURS_GLUE
        return OTHER
    return RUNTIME


def _split_over_callers(stats: Stats, function: Function, amount: float, *, edge: int) -> list[tuple[Function, float]]:
    """`amount` shared among the callers of `function` (itself excluded: recursion) in proportion to their call
    edges' field `edge` (2: the callee's self-time from that caller, 3: its cumulative time)."""
    callers = stats[function][4] if function in stats else {}
    weights = {
        caller: float(times[edge]) for caller, times in callers.items() if caller != function and times[edge] > 0
    }
    recorded = sum(weights.values())
    return [(caller, amount * weight / recorded) for caller, weight in weights.items()] if recorded > 0 else []


def attribute(stats: Stats, root: Path, *, by_caller: bool = False) -> dict[str, float]:
    """Seconds of the profile's self-time per category (the two views: see the module's docstring)."""
    totals: dict[str, float] = defaultdict(float)
    passed_up = (BUILTIN, RUNTIME) if by_caller else (BUILTIN,)
    # Time being passed up the call edges, one level at a time: function -> seconds spent under it.
    frontier: dict[Function, float] = defaultdict(float)
    for function, entry in stats.items():
        own = float(entry[2])
        if own <= 0:
            continue
        category = classify(function[0], root)
        if category not in passed_up:
            totals[category] += own
            continue
        shares = _split_over_callers(stats, function, own, edge=2)
        if not shares:  # called from nowhere the profile saw (a thread's first frame)
            totals[RUNTIME] += own
        for caller, share in shares:
            frontier[caller] += share
    for _ in range(_MAX_CALLER_DEPTH):
        upper: dict[Function, float] = defaultdict(float)
        for function, amount in frontier.items():
            category = classify(function[0], root)
            if category not in passed_up:
                totals[category] += amount
                continue
            shares = _split_over_callers(stats, function, amount, edge=3)
            if not shares:
                totals[RUNTIME] += amount
            for caller, share in shares:
                upper[caller] += share
        frontier = upper
    totals[RUNTIME] += sum(frontier.values())  # deeper than _MAX_CALLER_DEPTH levels of runtime
    return {category: seconds for category, seconds in totals.items() if seconds > 0}


def load(path: Path) -> dict[Function, tuple[Any, ...]]:
    return pstats.Stats(str(path)).stats  # type: ignore[attr-defined,no-any-return]  # not in typeshed


def percentages(seconds: Mapping[str, float]) -> dict[str, float]:
    total = sum(seconds.values())
    if total <= 0:
        raise ValueError("no CPU time to split")
    return {category: round(100 * value / total, 1) for category, value in sorted(seconds.items()) if value > 0}


def combine(stack_categories: Mapping[str, float], stack_cpu_seconds: float, aws_cpu_seconds: float) -> dict[str, Any]:
    """The stack process's profile shares scaled to its CPU, plus the embedded AWS process's CPU, as percentages
    of the two processes' CPU together."""
    profiled = sum(stack_categories.values())
    if profiled <= 0:
        raise ValueError("the stack process's profile recorded no CPU time")
    seconds = {category: value * stack_cpu_seconds / profiled for category, value in stack_categories.items()}
    seconds[EMBEDDED_AWS] = seconds.get(EMBEDDED_AWS, 0.0) + aws_cpu_seconds
    shares = percentages(seconds)
    return {
        "percent": shares,
        "ours_percent": round(sum(100 * seconds.get(c, 0.0) for c in OURS) / sum(seconds.values()), 1),
        "embedded_aws_percent": shares.get(EMBEDDED_AWS, 0.0),
    }


def top_functions(stats: Stats, root: Path, categories: frozenset[str], count: int = 8) -> list[str]:
    """The functions of `categories` with the most self-time, as a share of the profile's total."""
    total = sum(float(entry[2]) for entry in stats.values()) or 1.0
    ranked = sorted(
        ((function, float(entry[2])) for function, entry in stats.items() if classify(function[0], root) in categories),
        key=lambda item: -item[1],
    )[:count]
    return [
        f"{function[0].removeprefix(f'{root}/')}:{function[1]}({function[2]}) {100 * own / total:.1f}%"
        for function, own in ranked
    ]


def from_profile(profile: Path, stack_cpu_seconds: float, aws_cpu_seconds: float, root: Path) -> dict[str, Any]:
    stats = load(profile)
    self_view = attribute(stats, root)
    return {
        "self": combine(self_view, stack_cpu_seconds, aws_cpu_seconds),
        "by_caller": combine(attribute(stats, root, by_caller=True), stack_cpu_seconds, aws_cpu_seconds),
        "stack_process_profile_percent": percentages(self_view),
        "stack_process_profiled_cpu_seconds": round(sum(self_view.values()), 2),
        "top_ours_in_stack_process": top_functions(stats, root, OURS),
    }
