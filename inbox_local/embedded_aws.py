"""The local stack's AWS: moto's server, with DynamoDB made atomic per request.

moto's backends are not thread-safe: two concurrent requests can interleave inside one operation (seen here:
`dictionary changed size during iteration` in TransactWriteItems, and a conditional put racing another). Real
DynamoDB applies each request atomically, and the product's correctness rests on that, so DynamoDB and its
stream requests are serialized here. Everything else stays concurrent (an SQS long poll must not block the
table).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from moto.core.utils import camelcase_to_underscores
from moto.dynamodb.comparisons import get_filter_expression
from moto.dynamodb.exceptions import (
    MultipleTransactionsException,
    TooManyTransactionsException,
    TransactionCanceledException,
    TransactWriteSingleOpException,
)
from moto.dynamodb.models import DynamoDBBackend
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from moto.sqs.models import Queue
from werkzeug.serving import make_server

from inbox_local import aws_limits, moto_speedups

_SERIALIZED_TARGETS = ("DynamoDB_20120810.", "DynamoDBStreams_20120810.")


class SerializeDynamoDB:
    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("HTTP_X_AMZ_TARGET", "").startswith(_SERIALIZED_TARGETS):
            with self.lock:
                return list(self.app(environ, start_response))  # consume the body inside the lock
        return self.app(environ, start_response)


def transact_write_items_conditions_first(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
    """TransactWriteItems as DynamoDB does it: every condition is checked before anything is written.

    moto's own version writes item by item and, to roll back, deep-copies every table the transaction touches
    first: O(table size) per transaction, which made the local stack crawl as the inbox grew. Under the
    serializing lock above nothing can change between the checks and the writes, so no rollback is needed.
    """
    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    targets: set[tuple[str, str]] = set()
    operations: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    errors: list[tuple[str | None, str | None, dict[str, Any] | None]] = []
    for entry in transact_items:
        if len(entry) > 1:
            raise TransactWriteSingleOpException
        op_type, op = next(iter(entry.items()))
        table = self.get_table(op["TableName"])
        if op_type == "Put":
            key = {table.hash_key_attr: op["Item"][table.hash_key_attr]}
            if table.range_key_attr is not None:
                key[table.range_key_attr] = op["Item"][table.range_key_attr]
        else:
            key = op["Key"]
        target = (op["TableName"], str(dict(sorted(key.items()))))
        if target in targets:
            raise MultipleTransactionsException()
        targets.add(target)
        condition = op.get("ConditionExpression")
        if condition is not None:
            current = self.get_item(op["TableName"], key)
            check = get_filter_expression(
                condition, op.get("ExpressionAttributeNames"), op.get("ExpressionAttributeValues")
            )
            if not check.expr(current):
                old = (
                    current.to_json()["Attributes"]
                    if current and op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD"
                    else None
                )
                errors.append(("ConditionalCheckFailed", "The conditional request failed", old))
                continue
        errors.append((None, None, None))
        operations.append((op_type, op, key))
    if any(code is not None for code, _, _ in errors):
        raise TransactionCanceledException(errors)
    for op_type, op, key in operations:
        names, values = op.get("ExpressionAttributeNames"), op.get("ExpressionAttributeValues")
        if op_type == "Put":
            self.put_item(
                op["TableName"], op["Item"], expression_attribute_names=names, expression_attribute_values=values
            )
        elif op_type == "Delete":
            self.delete_item(op["TableName"], key, expression_attribute_names=names, expression_attribute_values=values)
        elif op_type == "Update":
            self.update_item(
                op["TableName"],
                key,
                update_expression=op["UpdateExpression"],
                expression_attribute_names=names or {},
                expression_attribute_values=values or {},
            )


class LazyQueueAttributes(Mapping[str, Any]):
    """moto's `Queue.attributes`, computed per name on access.

    moto reads one attribute (`ContentBasedDeduplication`) on every SendMessage through a property that builds
    them all, including the approximate message counts, each a walk over the whole queue."""

    def __init__(self, queue: Queue) -> None:
        self._queue = queue
        names = list(queue.BASE_ATTRIBUTES)
        if queue.fifo_queue:
            names += queue.FIFO_ATTRIBUTES
        if queue.kms_master_key_id:  # type: ignore[attr-defined]
            names += queue.KMS_ATTRIBUTES
        if queue.policy:
            names.append("Policy")
        if queue.redrive_policy:
            names.append("RedrivePolicy")
        self._names = names

    def __getitem__(self, name: str) -> Any:
        if name not in self._names:
            raise KeyError(name)
        if name == "Policy":
            return self._queue.policy
        if name == "RedrivePolicy":
            return json.dumps(self._queue.redrive_policy)
        value = getattr(self._queue, camelcase_to_underscores(name))
        return str(value).lower() if isinstance(value, bool) else value

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def enable_step_functions_execution(port: int) -> None:
    """Make moto run Step Functions executions (the replay workflow), not only store their definitions.

    moto's interpreter calls the services a state machine integrates with (aws-sdk:dynamodb:...) through boto3 at
    ``http://localhost:$MOTO_PORT`` when it runs as a server, so that must be this server's port. Set before any
    state machine is created: moto keeps executable state machines in a backend of their own."""
    from moto.core.config import default_user_config  # noqa: PLC0415

    os.environ["MOTO_PORT"] = str(port)
    default_user_config["stepfunctions"] = {"execute_state_machine": True}


def serve(host: str, port: int) -> None:
    """Run the embedded AWS in this process until it is terminated."""
    DynamoDBBackend.transact_write_items = transact_write_items_conditions_first  # type: ignore[method-assign]
    moto_speedups.install()  # caches of what moto recomputes per request; first: it defers an import
    from inbox_local.step_functions import install as install_step_functions_limits  # noqa: PLC0415 (after it)

    aws_limits.install()  # refuse what AWS refuses (ids, sizes, batch lengths): moto is more lenient
    Queue.attributes = property(LazyQueueAttributes)  # type: ignore[assignment,method-assign]
    enable_step_functions_execution(port)
    install_step_functions_limits()  # the 25,000-event history quota and startExecution as AWS runs them
    from inbox_local.replay import register_page_function  # noqa: PLC0415

    register_page_function()  # the replay's page task runs the page function here, where executions run
    app = SerializeDynamoDB(DomainDispatcherApplication(create_backend_app))
    server = make_server(host, port, app, threaded=True, request_handler=MotoRequestHandler)
    # Served from a daemon thread: the main thread only waits for SIGTERM, then leaves at once (a SystemExit
    # raised inside werkzeug's serve loop did not always end the process, and the parent waited its timeout).
    threading.Thread(target=server.serve_forever, name="embedded-aws", daemon=True).start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    parent = os.getppid()
    # A timed wait: the handler runs between the waits. A parent killed outright (SIGKILL: a test's timeout, an
    # OOM kill) cannot stop us, and an orphan would hold its port and its memory for ever: its death ends us too.
    while not stop.wait(0.2) and os.getppid() == parent:
        pass
    os._exit(0)


if __name__ == "__main__":
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's per-request access lines
    # moto's Step Functions interpreter logs, as errors, conditions a workflow handles itself (a Choice probing an
    # absent field, a caught ConditionalCheckFailed); an execution's real failure reaches `inbox replay` anyway.
    logging.getLogger("moto.stepfunctions").setLevel(logging.CRITICAL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop
    serve(sys.argv[1], int(sys.argv[2]))
