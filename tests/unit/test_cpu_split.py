"""Where the local stack's CPU goes (bench/cpu_split.py): profile entries attributed by path, built-ins by their
callers, the embedded AWS process whole; and the profile window of inbox_local/profiling.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import cpu_split
from bench.cpu_split import (
    AWS_SDK,
    BUILTIN,
    EMBEDDED_AWS,
    OTHER,
    OURS_GLUE,
    OURS_PRODUCT,
    POWERTOOLS,
    RUNTIME,
    attribute,
    classify,
    combine,
)
from inbox_local.profiling import subtract

ROOT = Path("/work/repo")
SITE = "/work/repo/.venv/lib/python3.11/site-packages"
STDLIB = "/usr/lib/python3.11"


@pytest.mark.parametrize(
    ("path", "category"),
    [
        ("/work/repo/shared/ingest.py", OURS_PRODUCT),
        ("/work/repo/functions/process/handler.py", OURS_PRODUCT),
        ("/work/repo/shared/definitions.py", OURS_PRODUCT),
        ("/work/repo/inbox_local/server.py", OURS_GLUE),
        ("/work/repo/inbox_local/embedded_aws.py", OURS_GLUE),  # in the stack process; its own process is AWS
        (f"{SITE}/moto/dynamodb/models/table.py", EMBEDDED_AWS),
        (f"{SITE}/werkzeug/serving.py", EMBEDDED_AWS),
        (f"{SITE}/botocore/endpoint.py", AWS_SDK),
        (f"{SITE}/urllib3/connectionpool.py", AWS_SDK),
        (f"{SITE}/boto3/session.py", AWS_SDK),
        (f"{SITE}/aws_lambda_powertools/logging/logger.py", POWERTOOLS),
        (f"{SITE}/pydantic/main.py", POWERTOOLS),
        (f"{SITE}/six.py", OTHER),
        (f"{STDLIB}/json/decoder.py", RUNTIME),
        (f"{STDLIB}/socket.py", RUNTIME),
        ("<frozen importlib._bootstrap>", RUNTIME),
        ("/work/repo/bench/end_to_end.py", OTHER),
        ("/work/repository/shared/x.py", RUNTIME),  # not under the root: a prefix of a name is not a folder
        ("~", BUILTIN),
    ],
)
def test_code_is_classified_by_its_path(path, category):
    assert classify(path, ROOT) == category


OURS_FN = ("/work/repo/shared/ingest.py", 70, "receive")
GLUE_FN = ("/work/repo/inbox_local/server.py", 81, "_serve")
SDK_FN = (f"{SITE}/urllib3/connectionpool.py", 600, "urlopen")
SOCKET_FN = (f"{STDLIB}/socket.py", 700, "readinto")
HTTP_FN = (f"{STDLIB}/http/client.py", 300, "begin")
JSON_C = ("~", 0, "<built-in method _json.encode_basestring>")
RECV_C = ("~", 0, "<method 'recv_into' of '_socket.socket' objects>")


def entry(self_time, cumulative, callers=None):
    """A pstats entry; callers: {caller: (calls, primitive calls, callee self-time from it, callee cum from it)}."""
    return (1, 1, self_time, cumulative, callers or {})


def test_a_builtins_self_time_goes_to_its_callers_by_the_time_each_call_recorded():
    # Given json's C encoder called from our code (3 s of it) and from the SDK (1 s)
    stats = {
        OURS_FN: entry(0.5, 3.5),
        SDK_FN: entry(0.25, 1.25),
        JSON_C: entry(4.0, 4.0, {OURS_FN: (1, 1, 3.0, 3.0), SDK_FN: (1, 1, 1.0, 1.0)}),
    }
    # When attributed by self-time
    seconds = attribute(stats, ROOT)
    # Then the encoder's 4 s are split 3:1 between them, on top of their own self-time
    assert seconds == pytest.approx({OURS_PRODUCT: 3.5, AWS_SDK: 1.25})


def test_by_caller_the_runtime_is_charged_to_the_nearest_caller_that_is_not_the_runtime():
    # Given the SDK reading a response: urllib3 -> http.client -> socket.readinto -> recv_into (C)
    stats = {
        SDK_FN: entry(1.0, 10.0),
        HTTP_FN: entry(2.0, 9.0, {SDK_FN: (1, 1, 2.0, 9.0)}),
        SOCKET_FN: entry(3.0, 7.0, {HTTP_FN: (1, 1, 3.0, 7.0)}),
        RECV_C: entry(4.0, 4.0, {SOCKET_FN: (1, 1, 4.0, 4.0)}),
    }
    # When attributed by self-time, Then the C call is socket.py's and the stdlib is the runtime's
    assert attribute(stats, ROOT) == pytest.approx({AWS_SDK: 1.0, RUNTIME: 9.0})
    # When attributed by caller, Then all of it is the SDK's
    assert attribute(stats, ROOT, by_caller=True) == pytest.approx({AWS_SDK: 10.0})


def test_by_caller_a_shared_runtime_function_is_split_among_its_callers():
    # Given http.client used by the SDK (3 s under it) and by our front door (1 s)
    stats = {
        SDK_FN: entry(0.0, 3.0),
        GLUE_FN: entry(0.0, 1.0),
        HTTP_FN: entry(4.0, 4.0, {SDK_FN: (1, 1, 3.0, 3.0), GLUE_FN: (1, 1, 1.0, 1.0)}),
    }
    assert attribute(stats, ROOT, by_caller=True) == pytest.approx({AWS_SDK: 3.0, OURS_GLUE: 1.0})


def test_time_with_no_caller_in_the_profile_is_the_runtimes():
    # Given a thread's first frame (no caller recorded) and a recursive stdlib function calling itself only
    recursive = (f"{STDLIB}/copy.py", 128, "deepcopy")
    stats = {
        (f"{STDLIB}/threading.py", 1000, "_bootstrap"): entry(0.5, 0.5),
        recursive: entry(2.0, 2.0, {recursive: (5, 1, 2.0, 2.0)}),
        RECV_C: entry(1.0, 1.0),
    }
    # When attributed by caller, Then it all stays with the runtime (nothing is lost or doubled)
    assert attribute(stats, ROOT, by_caller=True) == pytest.approx({RUNTIME: 3.5})


def test_the_two_processes_combine_with_the_embedded_aws_process_wholly_aws():
    # Given the stack process's profile shares (profiled CPU: 2 s) and the processes' own CPU over the run
    stack_profile = {OURS_PRODUCT: 0.5, AWS_SDK: 1.0, RUNTIME: 0.4, EMBEDDED_AWS: 0.1}
    # When combined with a stack process of 4 s and an embedded AWS process of 6 s
    split = combine(stack_profile, stack_cpu_seconds=4.0, aws_cpu_seconds=6.0)
    # Then the profile is scaled to 4 s and the 6 s are the embedded AWS's, over 10 s in all
    assert split["percent"] == {AWS_SDK: 20.0, EMBEDDED_AWS: 62.0, OURS_PRODUCT: 10.0, RUNTIME: 8.0}
    assert split["ours_percent"] == 10.0
    assert split["embedded_aws_percent"] == 62.0


def test_a_profile_without_cpu_cannot_be_split():
    with pytest.raises(ValueError):
        combine({}, stack_cpu_seconds=1.0, aws_cpu_seconds=1.0)


def test_the_top_functions_of_our_code_are_named_relative_to_the_repository():
    stats = {OURS_FN: entry(3.0, 3.0), GLUE_FN: entry(1.0, 1.0), SDK_FN: entry(6.0, 6.0)}
    assert cpu_split.top_functions(stats, ROOT, cpu_split.OURS) == [
        "shared/ingest.py:70(receive) 30.0%",
        "inbox_local/server.py:81(_serve) 10.0%",
    ]


def test_the_profile_window_is_what_happened_between_the_two_snapshots():
    # Given a profiler's snapshot at the window's start and at its end
    before = {
        OURS_FN: (2, 2, 1.0, 1.5, {GLUE_FN: (2, 2, 1.0, 1.5)}),
        SDK_FN: (1, 1, 0.5, 0.5, {OURS_FN: (1, 1, 0.5, 0.5)}),
    }
    after = {
        OURS_FN: (5, 5, 2.5, 3.0, {GLUE_FN: (5, 5, 2.5, 3.0)}),
        SDK_FN: (1, 1, 0.5, 0.5, {OURS_FN: (1, 1, 0.5, 0.5)}),  # not called again
        HTTP_FN: (1, 1, 0.25, 0.25, {SDK_FN: (1, 1, 0.25, 0.25)}),  # first called inside the window
    }
    # When subtracted, Then only the calls made inside the window remain
    assert subtract(after, before) == {
        OURS_FN: (3, 3, 1.5, 1.5, {GLUE_FN: (3, 3, 1.5, 1.5)}),
        HTTP_FN: (1, 1, 0.25, 0.25, {SDK_FN: (1, 1, 0.25, 0.25)}),
    }
