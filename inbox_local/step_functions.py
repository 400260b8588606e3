"""moto's Step Functions interpreter held to what AWS does, for the replay workflow (local stack and tests).

Two differences matter to the replay workflow, and both are corrected here by patching moto's classes in this
process (``install()``; the embedded AWS calls it at start-up, the tests' in-process moto fixtures too):

- History quota. A STANDARD execution has at most 25,000 history events; AWS: "When an execution reaches 24,999
  events, it waits for the next event to happen. If the event number 25,000 is ExecutionSucceeded, the execution
  finishes successfully. If the event number 25,000 isn't ExecutionSucceeded, the ExecutionFailed event is logged
  and the state machine execution fails" (https://docs.aws.amazon.com/step-functions/latest/dg/bp-history-limit.html).
  moto records any number. Here, the event that would be number ``limit`` is replaced by ExecutionFailed
  (``States.Runtime``, "The execution reached the maximum number of history events (25000).", the words AWS
  reports), nothing more is recorded, and the running state is unwound so that no further task runs. EXPRESS
  executions keep an unlimited history in AWS (https://docs.aws.amazon.com/step-functions/latest/dg/express-limits.html)
  and are left alone.
- The optimized ``arn:aws:states:::states:startExecution`` integration (how the replay continues itself in a new
  execution). Its parameters are PascalCase (``StateMachineArn``, ``Input``, ``Name``) and its result is too
  (``ExecutionArn``, ``StartDate``) (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-nested-workflows.html);
  moto 5.2.5 hands the PascalCase names to boto3 unchanged (KeyError 'StateMachineArn': its parameter and response
  normalisation are stubs). Here they are mapped onto the API's own member names through botocore's service model,
  as AWS maps them.

- GetExecutionHistory pages. AWS returns at most ``maxResults`` events per call (default 100, at most 1,000; 0 means
  the default), with a ``nextToken`` for the rest, newest first with ``reverseOrder``
  (https://docs.aws.amazon.com/step-functions/latest/apireference/API_GetExecutionHistory.html). moto 5.2.5 ignores
  all three and serializes the whole history on every call (a deep copy, then ~1 ms per event: ~40 s of CPU to
  read back the five histories of a 1,000-event replay). Here the call returns the page asked for, copied alone.

- TimeoutSeconds. "If the execution runs longer than the specified time, then the execution fails with a
  States.Timeout error" (https://docs.aws.amazon.com/step-functions/latest/dg/statemachine-structure.html): the
  execution ends TIMED_OUT, its history's last event ExecutionTimedOut, and no state starts after it. moto joins
  its interpreter's thread for TimeoutSeconds of wall-clock time only. Here every execution keeps its own clock
  (`ExecutionTimer`): real time, except that a Wait state's seconds pass `CLOCK.scale` times faster than real ones
  (1, as AWS, unless a test or the local stack scales them: `INBOX_LOCAL_SFN_WAIT_SCALE`), so an hour of a
  replay's paced pages can be run in a test in a few seconds with its timeout still enforced: a Wait that would
  end past the deadline ends at it and times the execution out there; other states are checked against it
  every few milliseconds of real time.

- Lambda tasks. moto's interpreter invokes a task's function through moto's Lambda, which runs code only in docker.
  Here a function registered with `register_function` (the replay's page function: inbox_local/replay.py) is run
  in this process as the local stack runs every function (inbox_local/invocation.py: its own timeout, its errors
  reported as Lambda reports them, ``{"errorType", "errorMessage"}``, a timeout as ``Lambda.Unknown``), and the
  task's payload is held to Step Functions' quota: "Maximum input or output size for a task, state, or execution:
  256 KiB of data as a UTF-8 encoded string" (https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html),
  which moto checks on a state's input and a task's result but not on the payload a task sends once its
  Parameters are applied: such a task fails with ``States.DataLimitExceeded``, as in AWS, before the function runs.

And two for speed, not behaviour (measured with a sampling profile of a replay): moto's interpreter parses every
JSONPath again each time it evaluates it (jsonpath_ng builds a yacc parser per call), and builds a new boto3 client
for every task it runs; ``install()`` makes it reuse parsed paths and one client per service and endpoint.
"""

from __future__ import annotations

import copy
import functools
import importlib
import json
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Final

import botocore.session
from moto.core.responses import ActionResult
from moto.core.utils import camelcase_to_underscores
from moto.stepfunctions.exceptions import InvalidToken, ValidationException
from moto.stepfunctions.parser.api import (
    ExecutionFailedEventDetails,
    HistoryEventType,
    LambdaFunctionFailedEventDetails,
    StateMachineType,
)
from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEvent
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import StatesErrorNameType
from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent
from moto.stepfunctions.parser.asl.component.program.program import Program
from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sfn import (
    StateTaskServiceSfn,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task_lambda import StateTaskLambda
from moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function import WaitFunction
from moto.stepfunctions.parser.asl.eval.environment import Environment
from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails
from moto.stepfunctions.parser.asl.eval.event.event_manager import EventHistoryContext, EventManager
from moto.stepfunctions.parser.asl.utils import boto_client, json_path
from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker
from moto.stepfunctions.parser.utils import TMP_THREADS
from moto.stepfunctions.responses import StepFunctionResponse

from infra.replay_definition import EXECUTION_HISTORY_LIMIT

HISTORY_LIMIT_ERROR: Final = "States.Runtime"


def history_limit_cause(limit: int) -> str:
    return f"The execution reached the maximum number of history events ({limit})."


class HistoryLimitReached(Exception):
    """Raised inside the interpreter to unwind the state that tried to record one event too many."""


class HistoryLimitedEventManager(EventManager):
    """moto's event manager, failing its execution when the history would pass ``limit`` events."""

    def __init__(self, env: Environment, limit: int, cloud_watch_logging_session: Any) -> None:
        super().__init__(cloud_watch_logging_session=cloud_watch_logging_session)
        self._env = env
        self._limit = limit
        self._limit_lock = threading.Lock()
        self.closed = False

    @property
    def limit_error(self) -> ExecutionFailedEventDetails:
        return ExecutionFailedEventDetails(error=HISTORY_LIMIT_ERROR, cause=history_limit_cause(self._limit))

    def add_event(
        self,
        context: EventHistoryContext,
        event_type: HistoryEventType,
        event_details: EventDetails | None = None,
        timestamp: Any = None,
        update_source_event_id: bool = True,
    ) -> int:
        with self._limit_lock:
            recorded = len(self._history_event_list)
            if self.closed:
                return recorded  # the history is complete: nothing after its ExecutionFailed
            if recorded + 1 < self._limit or event_type in (
                HistoryEventType.ExecutionSucceeded,
                HistoryEventType.ExecutionFailed,
            ):
                return super().add_event(context, event_type, event_details, timestamp, update_source_event_id)
            # Event number `limit` is not the end of the execution: AWS logs ExecutionFailed in its place.
            self.closed = True
            event_id = super().add_event(
                context,
                HistoryEventType.ExecutionFailed,
                EventDetails(executionFailedEventDetails=self.limit_error),  # type: ignore[typeddict-item]
            )
        self._env.set_error(self.limit_error)  # stops the program loop (and every Map frame) at once
        raise HistoryLimitReached(f"{history_limit_cause(self._limit)} (event {event_id})")


def _limited_environment(original: Any, limit: int) -> Any:
    @functools.wraps(original)
    def build(self: ExecutionWorker) -> Environment:
        env: Environment = original(self)
        if self._evaluation_details.state_machine_details.typ != StateMachineType.STANDARD:
            return env
        manager = HistoryLimitedEventManager(env, limit, env.cloud_watch_logging_session)
        env.event_manager = manager  # Map iterations' frames share their parent's manager
        set_error = env.set_error

        def sticky_set_error(error: ExecutionFailedEventDetails) -> None:
            # Once the quota failed the execution, the error that unwinding raises must not replace it.
            set_error(manager.limit_error if manager.closed else error)

        env.set_error = sticky_set_error  # type: ignore[method-assign]
        return env

    build.history_limit = limit  # type: ignore[attr-defined]
    build.unlimited = original  # type: ignore[attr-defined]
    return build


def install_history_limit(limit: int = EXECUTION_HISTORY_LIMIT) -> None:
    """Executions started from now on fail as AWS fails them when their history would pass ``limit`` events."""
    current = ExecutionWorker._get_evaluation_environment
    original = getattr(current, "unlimited", current)
    ExecutionWorker._get_evaluation_environment = _limited_environment(original, limit)  # type: ignore[method-assign]


def history_limit() -> int | None:
    """The limit installed in this process, if any."""
    limit: int | None = getattr(ExecutionWorker._get_evaluation_environment, "history_limit", None)
    return limit


# --------------------------------------------------------------------------- states:startExecution, as AWS maps it
@functools.cache
def _stepfunctions_operation(boto_action: str) -> Any:
    model = botocore.session.get_session().get_service_model("stepfunctions")
    for name in model.operation_names:
        if camelcase_to_underscores(name) == boto_action:
            return model.operation_model(name)
    raise KeyError(boto_action)


_ORIGINAL_NORMALISE_PARAMETERS: Final = StateTaskServiceSfn._normalise_parameters


def _normalise_parameters(
    self: StateTaskServiceSfn,
    parameters: dict[str, Any],
    boto_service_name: str | None = None,
    service_action_name: str | None = None,
) -> None:
    _ORIGINAL_NORMALISE_PARAMETERS(self, parameters, boto_service_name, service_action_name)  # Input as JSON text
    operation = _stepfunctions_operation(self._get_boto_service_action(service_action_name))
    self._to_boto_request(parameters, operation.input_shape)


def _normalise_response(
    self: StateTaskServiceSfn,
    response: Any,
    boto_service_name: str | None = None,
    service_action_name: str | None = None,
) -> None:
    operation = _stepfunctions_operation(self._get_boto_service_action(service_action_name))
    self._from_boto_response(response, operation.output_shape)


def install_start_execution_integration() -> None:
    StateTaskServiceSfn._normalise_parameters = _normalise_parameters  # type: ignore[method-assign]
    StateTaskServiceSfn._normalise_response = _normalise_response  # type: ignore[method-assign,assignment]


# ------------------------------------------------------------------------------- one boto3 client per service
_UNCACHED_CLIENT: Final = boto_client.boto_client_for


@functools.cache
def _cached_client(region: str, service: str, intercepting: bool, port: str) -> Any:
    return _UNCACHED_CLIENT(region=region, service=service)


def _boto_client_for(region: str, service: str, state_credentials: Any = None) -> Any:
    # moto's own client ignores the state's credentials too (it signs with fixed test keys); what selects the
    # endpoint is whether calls are intercepted in-process or go to the server's port.
    intercepting: bool = boto_client.botocore_stubber.enabled  # type: ignore[attr-defined]
    port: str = boto_client.moto_server_port()  # type: ignore[attr-defined]
    return _cached_client(region, service, intercepting, port)


def install_client_reuse() -> None:
    # The task modules hold their own reference (``from ... import boto_client_for``): import them, then replace
    # it in each module that holds moto's.
    for module_name in _TASK_MODULES:
        importlib.import_module(module_name)
    boto_client.boto_client_for = _boto_client_for
    for name, module in list(sys.modules.items()):
        if (
            name.startswith("moto.stepfunctions.parser")
            and getattr(module, "boto_client_for", None) is _UNCACHED_CLIENT
        ):
            module.boto_client_for = _boto_client_for  # type: ignore[attr-defined]


_TASK_MODULES: Final = tuple(
    f"moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_{name}"
    for name in ("aws_sdk", "dynamodb", "sfn")
)


def install_json_path_reuse() -> None:
    # A parsed path is not changed by finding it in a document: one parse per distinct path string.
    if not hasattr(json_path.parse, "cache_info"):  # type: ignore[attr-defined]
        json_path.parse = functools.lru_cache(maxsize=4096)(json_path.parse)  # type: ignore[attr-defined]


# ------------------------------------------------------------------------- GetExecutionHistory, one page at a time
HISTORY_PAGE_DEFAULT: Final = 100
HISTORY_PAGE_MAX: Final = 1000


def history_page(events: Any, *, max_results: int | None, reverse: bool, next_token: str | None) -> dict[str, Any]:
    """The page of an execution's history (a sequence of events, oldest first) that AWS returns for these
    parameters: copied events, and a nextToken when events are left."""
    size = max_results or HISTORY_PAGE_DEFAULT
    if not 0 < size <= HISTORY_PAGE_MAX:
        raise ValidationException(
            f"1 validation error detected: Value '{max_results}' at 'maxResults' failed to satisfy constraint: "
            f"Member must have value less than or equal to {HISTORY_PAGE_MAX}"
        )
    start = 0
    if next_token is not None:
        if not next_token.isdigit() or int(next_token) > len(events):
            raise InvalidToken()
        start = int(next_token)
    stop = min(start + size, len(events))
    if reverse:  # newest first: position p of the reversed history is event len - 1 - p
        page = [events[len(events) - 1 - position] for position in range(start, stop)]
    else:
        page = list(events[start:stop])
    result: dict[str, Any] = {"events": copy.deepcopy(page)}
    if stop < len(events):
        result["nextToken"] = str(stop)
    return result


def _recorded_events(response: StepFunctionResponse, execution_arn: str) -> Any:
    """The execution's recorded history, not copied (the interpreter's event list), or the backend's own answer
    where moto runs no interpreter (its canned histories)."""
    backend = response.stepfunction_backend
    execution = backend.describe_execution(execution_arn)
    if not hasattr(execution, "exec_worker"):
        return backend.get_execution_history(execution_arn)["events"]
    env = execution.exec_worker.env if execution.exec_worker is not None else None
    if env is None:
        return []  # not started yet
    manager = env.event_manager
    with manager._mutex:
        return list(manager._history_event_list)  # a shallow copy: events are appended, never changed


def _get_execution_history(self: StepFunctionResponse) -> ActionResult:
    events = _recorded_events(self, self._get_param("executionArn"))
    return ActionResult(
        history_page(
            events,
            max_results=self._get_param("maxResults"),
            reverse=bool(self._get_param("reverseOrder")),
            next_token=self._get_param("nextToken"),
        )
    )


def install_history_paging() -> None:
    StepFunctionResponse.get_execution_history = _get_execution_history  # type: ignore[method-assign]


# ---------------------------------------------------------------------------------- TimeoutSeconds, on a clock
ENV_WAIT_SCALE: Final = "INBOX_LOCAL_SFN_WAIT_SCALE"
TIMEOUT_POLL_SECONDS: Final = 0.005  # how often, in real time, a running execution is checked against its deadline
_UNWIND_SECONDS: Final = 10.0  # real time a timed-out execution's current state gets to stop before it is left


@dataclass
class ExecutionClock:
    """How fast a Wait state's seconds pass locally: ``scale`` of them per real second (1: as in AWS; infinite:
    a Wait takes no real time). Every other state runs in real time."""

    scale: float = 1.0

    def real_seconds(self, seconds: float) -> float:
        return 0.0 if self.scale == float("inf") else seconds / self.scale


CLOCK = ExecutionClock(float(os.environ.get(ENV_WAIT_SCALE) or 1.0))


@dataclass
class ExecutionTimer:
    """One execution's time: real time since it started, plus the Wait seconds that passed without being waited
    for in real time (``CLOCK``)."""

    timeout_seconds: float | None
    env: Environment
    started: float = field(default_factory=time.monotonic)
    skipped: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def elapsed(self) -> float:
        with self.lock:
            return time.monotonic() - self.started + self.skipped

    def remaining(self) -> float | None:
        return None if self.timeout_seconds is None else self.timeout_seconds - self.elapsed()

    def expired(self) -> bool:
        remaining = self.remaining()
        return remaining is not None and remaining <= 0

    def wait(self, seconds: float) -> bool:
        """A Wait state's ``seconds`` on this clock, cut short at the deadline. True when the wait ran to its
        end; False when the deadline came first (the execution is then timed out) or the execution stopped."""
        remaining = self.remaining()
        until_deadline = remaining is not None and remaining <= seconds
        span = max(0.0, remaining if until_deadline and remaining is not None else seconds)
        began = time.monotonic()
        real_end = began + CLOCK.real_seconds(span)
        while (left := real_end - time.monotonic()) > 0:
            self.env.program_state_event.wait(left)  # set when the execution stops, fails or times out
            if not self.env.is_running():
                return False
        with self.lock:
            self.skipped += max(0.0, span - (time.monotonic() - began))
        if until_deadline:
            self.env.set_timed_out()
            return False
        return True


def _timer_of(env: Environment) -> ExecutionTimer | None:
    timer: ExecutionTimer | None = getattr(env.event_manager, "execution_timer", None)
    return timer


def _wait_interval(self: WaitFunction, env: Environment, wait_seconds: int) -> None:
    timer = _timer_of(env)
    if timer is None:  # an execution started before install()
        _ORIGINAL_WAIT_INTERVAL(self, env, wait_seconds)
        return
    timer.wait(wait_seconds)


def _eval_program(self: Program, env: Environment) -> None:
    """Program.eval, with TimeoutSeconds on the execution's own clock instead of moto's wall-clock join."""
    if env.is_frame():  # a Map iteration's program: it runs on its execution's clock, already set
        _ORIGINAL_PROGRAM_EVAL(self, env)
        return
    timeout = self.timeout_seconds.timeout_seconds if self.timeout_seconds else None
    timer = ExecutionTimer(timeout, env)
    env.event_manager.execution_timer = timer  # type: ignore[attr-defined]  # Map frames share the manager
    env.next_state_name = self.start_at.start_at_name
    worker = threading.Thread(target=EvalComponent.eval, args=(self, env), daemon=True)
    TMP_THREADS.append(worker)
    worker.start()
    while worker.is_alive():
        worker.join(TIMEOUT_POLL_SECONDS)
        if worker.is_alive() and timer.expired():
            env.set_timed_out()
            break
    # A timed-out execution: its current state stops (a Wait at once), and the interpreter records
    # ExecutionTimedOut before the execution's status is reported.
    worker.join(_UNWIND_SECONDS)


_ORIGINAL_WAIT_INTERVAL: Final = WaitFunction._wait_interval
_ORIGINAL_PROGRAM_EVAL: Final = Program.eval


def install_execution_timeout() -> None:
    WaitFunction._wait_interval = _wait_interval  # type: ignore[method-assign]
    Program.eval = _eval_program  # type: ignore[method-assign]


# ------------------------------------------------------------------------------- Lambda tasks, run in process
TASK_PAYLOAD_LIMIT_BYTES: Final = 256 * 1024  # Step Functions: a task's input or output, UTF-8 (see the docstring)
LAMBDA_UNHANDLED_ERROR: Final = "Lambda.Unknown"  # how Step Functions reports a function's timeout


@dataclass(frozen=True)
class LocalFunction:
    name: str  # the local stack's name for it (inbox_local/invocation.py FUNCTION_TIMEOUT_SECONDS)
    handler: Any


_LOCAL_FUNCTIONS: dict[str, LocalFunction] = {}


def register_function(arn: str, name: str, handler: Any) -> None:
    """Run Lambda tasks whose function is ``arn`` with ``handler``, in this process, as the function ``name``."""
    _LOCAL_FUNCTIONS[arn] = LocalFunction(name, handler)


class TaskPayloadTooLarge(Exception):
    """A Lambda task's payload is over Step Functions' quota: the task fails with States.DataLimitExceeded."""


def _invoke_local_function(parameters: dict[str, Any], region: str, state_credentials: Any) -> dict[str, Any]:
    function = _LOCAL_FUNCTIONS.get(parameters["FunctionName"])
    if function is None:
        return dict(_ORIGINAL_INVOKE_LAMBDA_FUNCTION(parameters, region, state_credentials))
    from inbox_local.invocation import FunctionTimedOut, invoke  # noqa: PLC0415 (botocore patched on import)

    payload: bytes = parameters.get("Payload") or b"{}"
    if len(payload) > TASK_PAYLOAD_LIMIT_BYTES:
        raise TaskPayloadTooLarge(
            f"The task's payload is {len(payload)} bytes, over Step Functions' {TASK_PAYLOAD_LIMIT_BYTES}."
        )
    try:
        result = invoke(function.name, function.handler, json.loads(payload))
    except FunctionTimedOut as timed_out:
        error = {"errorType": LAMBDA_UNHANDLED_ERROR, "errorMessage": str(timed_out)}
        return {"StatusCode": 200, "FunctionError": "Unhandled", "Payload": error}
    except Exception as failed:  # reported as Lambda reports a function's error: its type and message
        error = {"errorType": type(failed).__name__, "errorMessage": str(failed)}
        return {"StatusCode": 200, "FunctionError": "Unhandled", "Payload": error}
    # What Lambda hands back is the result's JSON: anything else fails the task here, as it would in AWS.
    return {"StatusCode": 200, "Payload": json.loads(json.dumps(result))}


def _lambda_task_error(self: StateTaskLambda, env: Environment, ex: Exception) -> FailureEvent:
    if isinstance(ex, TaskPayloadTooLarge):
        error_type = StatesErrorNameType.StatesStatesDataLimitExceeded
        return FailureEvent(
            env=env,
            error_name=StatesErrorName(typ=error_type),
            event_type=HistoryEventType.LambdaFunctionFailed,
            event_details=EventDetails(  # type: ignore[typeddict-item]
                lambdaFunctionFailedEventDetails=LambdaFunctionFailedEventDetails(
                    error=error_type.to_name(), cause=str(ex)
                )
            ),
        )
    failure: FailureEvent = _ORIGINAL_LAMBDA_TASK_ERROR(self, env, ex)
    return failure


_ORIGINAL_INVOKE_LAMBDA_FUNCTION: Final = lambda_eval_utils._invoke_lambda_function
_ORIGINAL_LAMBDA_TASK_ERROR: Final = StateTaskLambda._from_error


def install_local_functions() -> None:
    lambda_eval_utils._invoke_lambda_function = _invoke_local_function
    StateTaskLambda._from_error = _lambda_task_error  # type: ignore[method-assign]


def install(limit: int = EXECUTION_HISTORY_LIMIT) -> None:
    """The corrections above, in this process (idempotent)."""
    install_history_limit(limit)
    install_execution_timeout()
    install_history_paging()
    install_start_execution_integration()
    install_client_reuse()
    install_json_path_reuse()
    install_local_functions()
