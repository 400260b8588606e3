"""A function invocation as Lambda runs it: the function's own timeout, and the identity its AWS calls carry.

Lambda stops an invocation at its timeout ("the amount of time that Lambda allows a function to run before
stopping it", https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html; it logs "Task timed out
after N seconds"): the invocation counts as failed, whatever it would have returned, and nothing it had not yet
sent reaches AWS. For a queue's event source mapping a failed invocation means its whole batch comes back after
the queue's visibility timeout (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html).

A thread cannot be frozen, so the local stack does what a thread allows (`invoke`):
- the handler runs in a thread of its own; at the deadline the caller stops waiting and gets `FunctionTimedOut`
  (the queue mapping then acknowledges nothing, as Lambda's does);
- the thread runs on, but from its deadline on every AWS call it (or a thread it started, which inherits its
  context) tries to make is refused before it is sent (`refuse_calls_after_the_deadline`, patched into botocore's
  client by `install()`): `InvocationFrozen`, a BaseException, which no `except Exception` of the function can
  swallow. So what an overrun invocation leaves is what a real timeout could have left: the writes it sent before
  its deadline (one in flight at the deadline may land, as in AWS), none after. Requests to a gateway's API are
  reads and are not stopped; their answers can no longer be written anywhere.

What the deadline counts: the function's own time, not the embedded AWS's. moto is not AWS: its DynamoDB is
serialized (inbox_local/embedded_aws.py), so under a burst of 200 concurrent deliveries an ingest's one PutItem can
wait seconds for the calls queued before it, where AWS answers in milliseconds. The time during which at least one
of an invocation's AWS calls is in flight is therefore added to its deadline (`Invocation.deadline`): the timeout
holds the function's code and its requests to a gateway's API (a hanging gateway still times it out), never the
emulation's queue. The leniency is AWS's own latency per call (milliseconds), listed in docs/aws-limits.md.

The same context variable names the calling function, which is what the local S3 answers by
(inbox_local/s3_access.py: a function's declared grants).
"""

from __future__ import annotations

import contextvars
import functools
import threading
import time
from collections.abc import Callable
from typing import Any, Final

import botocore.client

from inbox_local.lambda_context import LocalLambdaContext
from shared import definitions

Handler = Callable[[dict[str, Any], Any], Any]

# Each function's timeout, as the stack deploys it (the local stack's names for them).
FUNCTION_TIMEOUT_SECONDS: Final[dict[str, float]] = {
    "ingest": definitions.INGEST_TIMEOUT_SECONDS,
    "process": definitions.PROCESSOR_TIMEOUT_SECONDS,
    "archiver": definitions.ARCHIVER_TIMEOUT_SECONDS,
    "sweeper": definitions.SWEEPER_TIMEOUT_SECONDS,
    "publisher": definitions.PUBLISHER_TIMEOUT_SECONDS,
    "forwarder": definitions.FORWARDER_TIMEOUT_SECONDS,
    "replay": definitions.REPLAY_PAGE_TIMEOUT_SECONDS,
}


class Invocation:
    """One invocation's clock: its timeout, counted on the function's own time (the embedded AWS's excluded)."""

    def __init__(self, function: str, timeout_seconds: float, *, started: float | None = None) -> None:
        self.function = function
        self._timeout = timeout_seconds
        self._started = time.monotonic() if started is None else started
        self._lock = threading.Lock()
        self._in_aws = 0  # AWS calls in flight (the function's group threads may overlap theirs)
        self._in_aws_since = 0.0
        self._aws_seconds = 0.0  # time with at least one AWS call in flight, calls that have ended

    @property
    def deadline(self) -> float:
        """time.monotonic() at which the function's own time reaches its timeout, as known now."""
        with self._lock:
            in_flight = time.monotonic() - self._in_aws_since if self._in_aws else 0.0
            return self._started + self._timeout + self._aws_seconds + in_flight

    def overran(self) -> bool:
        return time.monotonic() >= self.deadline

    def aws_call_started(self) -> None:
        with self._lock:
            if self._in_aws == 0:
                self._in_aws_since = time.monotonic()
            self._in_aws += 1

    def aws_call_ended(self) -> None:
        with self._lock:
            self._in_aws -= 1
            if self._in_aws == 0:
                self._aws_seconds += time.monotonic() - self._in_aws_since


_current: contextvars.ContextVar[Invocation | None] = contextvars.ContextVar("local_invocation", default=None)


def current_invocation() -> Invocation | None:
    """The invocation the calling thread works for (None outside any: the CLI, the tests' own calls)."""
    return _current.get()


class FunctionTimedOut(Exception):
    def __init__(self, function: str, timeout_seconds: float) -> None:
        super().__init__(f"{function}: Task timed out after {timeout_seconds:.2f} seconds")
        self.function = function
        self.timeout_seconds = timeout_seconds


class InvocationFrozen(BaseException):
    """An AWS call by an invocation past its deadline: Lambda would have frozen it before the call was sent."""


def invoke(function: str, handler: Handler, event: Any, *, timeout_seconds: float | None = None) -> Any:
    """Run ``handler(event, context)`` as the Lambda ``function`` would run: its result, its exception, or
    `FunctionTimedOut` once its timeout (the stack's, unless ``timeout_seconds`` says otherwise) has passed."""
    timeout = FUNCTION_TIMEOUT_SECONDS[function] if timeout_seconds is None else timeout_seconds
    context = LocalLambdaContext(function, timeout_seconds=timeout)
    invocation = Invocation(function, timeout)
    outcome: dict[str, Any] = {}

    def run() -> None:
        _current.set(invocation)
        try:
            outcome["result"] = handler(event, context)
        except BaseException as error:  # handed to the caller, as Lambda reports the function's error
            outcome["error"] = error

    worker = threading.Thread(
        target=contextvars.copy_context().run, args=(run,), name=f"lambda-{function}", daemon=True
    )
    worker.start()
    while worker.is_alive() and not invocation.overran():
        # The deadline moves while the function waits on the embedded AWS: wait for it in slices.
        worker.join(min(0.05, max(0.0, invocation.deadline - time.monotonic())))
    if worker.is_alive():
        raise FunctionTimedOut(function, timeout)
    error = outcome.get("error")
    if error is not None:
        if isinstance(error, InvocationFrozen):  # finished after its deadline, in the join's last instant
            raise FunctionTimedOut(function, timeout) from None
        raise error
    return outcome.get("result")


# ----------------------------------------------------------------------------------- AWS calls of an invocation
# What botocore's client called before the hooks were put in front of it (whatever was there when they were: the
# SDK's own, or a recorder of the bench's, bench/item_sizes.py).
_next_make_api_call: Any = None
# Checks run on every AWS call the process makes, in order: each may raise or answer instead of the service
# (a callable taking the client, the operation and its parameters, and the call to make).
CallHook = Callable[[Any, str, dict[str, Any], Callable[[], Any]], Any]
_hooks: list[CallHook] = []
_install_lock = threading.Lock()


def refuse_calls_after_the_deadline(
    client: Any, operation: str, params: dict[str, Any], call: Callable[[], Any]
) -> Any:
    invocation = current_invocation()
    if invocation is not None and invocation.overran():
        service = client.meta.service_model.service_name
        raise InvocationFrozen(f"{invocation.function} timed out: its {service} {operation} was never sent")
    if invocation is None:
        return call()
    invocation.aws_call_started()
    try:
        return call()
    finally:
        invocation.aws_call_ended()


def _make_api_call(self: Any, operation_name: str, api_params: dict[str, Any]) -> Any:
    def call(index: int) -> Any:
        if index == len(_hooks):
            return _next_make_api_call(self, operation_name, api_params)
        return _hooks[index](self, operation_name, api_params, functools.partial(call, index + 1))

    return call(0)


def add_call_hook(hook: CallHook) -> None:
    """Run ``hook`` around every AWS call of this process (idempotent); installs the interception once, in front
    of what the client calls then."""
    global _next_make_api_call  # noqa: PLW0603 - the one interception of the process
    with _install_lock:
        if hook not in _hooks:
            _hooks.append(hook)
        current = botocore.client.BaseClient._make_api_call  # type: ignore[attr-defined]
        if current is not _make_api_call:
            _next_make_api_call = current
            botocore.client.BaseClient._make_api_call = _make_api_call  # type: ignore[attr-defined]


def install() -> None:
    """Hold invocations to their deadline (idempotent)."""
    add_call_hook(refuse_calls_after_the_deadline)
