"""AWS's limits, enforced on moto, so that nothing passes locally that AWS would refuse.

moto is kinder than AWS: it takes any SQS group or deduplication id, measures message sizes in characters, has
no DeleteMessageBatch entry limit, sizes DynamoDB items by its own rule (a binary value counted as its base64
text) against 405,000 bytes, and has no TransactWriteItems aggregate nor PutEvents size limit. `install()` patches
moto's classes (once per process, idempotent) so that each request over a limit is refused with AWS's error code;
it runs in the embedded AWS (`inbox_local/embedded_aws.py` serve()) and in the tests' in-process `mock_aws`
(tests/conftest.py), so both refuse the same requests. Every figure, its documentation page and its test:
docs/aws-limits.md.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from moto.dynamodb.exceptions import ItemSizeTooLarge, MockValidationException, TransactionCanceledException
from moto.dynamodb.models.dynamo_type import DynamoType, LimitedSizeDict
from moto.dynamodb.responses import DynamoHandler
from moto.events.exceptions import ValidationException as EventsValidationException
from moto.events.models import EventsBackend
from moto.sqs.exceptions import BatchRequestTooLong, InvalidParameterValue, TooManyEntriesInBatchRequest
from moto.sqs.models import SQSBackend

from shared.definitions import TRANSACT_WRITE_MAX_ACTIONS, TRANSACT_WRITE_MAX_BYTES
from shared.inbox.model import FIFO_ID_MAX_LENGTH, is_valid_fifo_id

# SQS: SendMessage's MessageBody, and the sum of a SendMessageBatch's bodies, at most 1 MiB (SQS API reference).
SQS_MAX_MESSAGE_BYTES = 1_048_576
# SQS: SendMessageBatch, DeleteMessageBatch and ChangeMessageVisibilityBatch take at most 10 entries.
SQS_MAX_BATCH_ENTRIES = 10
# Lambda: an SQS event source mapping on a FIFO queue takes a BatchSize of at most 10 (standard queues: 10,000).
LAMBDA_FIFO_MAX_BATCH_SIZE = 10
# DynamoDB: an item is at most 400 KB, in binary units (1 KB = 1,024 bytes), attribute names included.
DYNAMODB_MAX_ITEM_BYTES = 400 * 1024
# DynamoDB: TransactWriteItems groups at most 100 actions whose items total at most 4 MB.
DYNAMODB_MAX_TRANSACTION_ACTIONS = TRANSACT_WRITE_MAX_ACTIONS
DYNAMODB_MAX_TRANSACTION_BYTES = TRANSACT_WRITE_MAX_BYTES
# EventBridge: a PutEvents request's entries total less than 1 MB (256 KB until January 2026).
EVENTBRIDGE_MAX_PUT_EVENTS_BYTES = 1_048_576
_PUT_EVENTS_TIME_BYTES = 14  # "If specified, the Time parameter is 14 bytes."

_LIST_OR_MAP_OVERHEAD = 3
_ELEMENT_OVERHEAD = 1


def _utf8(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _binary_bytes(value: Any) -> int:
    """Raw length of a binary value: DynamoDB sizes the bytes, not their base64 text on the wire (moto keeps the
    text; boto3 gives bytes or a `Binary`)."""
    if isinstance(value, str):
        padding = len(value) - len(value.rstrip("="))
        return len(value) * 3 // 4 - padding
    return len(bytes(value))


def _number_bytes(value: str) -> int:
    """1 byte per two significant digits (leading and trailing zeros trimmed), plus 1."""
    mantissa = value.lstrip("+-").lower().split("e", 1)[0].replace(".", "").strip("0")
    return (max(len(mantissa), 1) + 1) // 2 + 1


def _typed(value: Any) -> tuple[str, Any]:
    if isinstance(value, DynamoType):
        return value.type, value.value
    ((kind, inner),) = value.items()
    return kind, inner


def dynamodb_value_bytes(value: Any) -> int:
    """A value's size by DynamoDB's documented rules; `value` is wire format ({"S": ...}) or a moto DynamoType."""
    kind, inner = _typed(value)
    if kind == "S":
        return _utf8(inner)
    if kind == "N":
        return _number_bytes(inner)
    if kind == "B":
        return _binary_bytes(inner)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(_utf8(member) for member in inner)
    if kind == "NS":
        return sum(_number_bytes(member) for member in inner)
    if kind == "BS":
        return sum(_binary_bytes(member) for member in inner)
    if kind == "L":
        return _LIST_OR_MAP_OVERHEAD + sum(_ELEMENT_OVERHEAD + dynamodb_value_bytes(member) for member in inner)
    if kind == "M":
        return _LIST_OR_MAP_OVERHEAD + sum(
            _ELEMENT_OVERHEAD + _utf8(name) + dynamodb_value_bytes(member) for name, member in inner.items()
        )
    raise ValueError(f"unknown DynamoDB type {kind!r}")


def dynamodb_item_bytes(attributes: Mapping[str, Any]) -> int:
    """An item's size: the sum of its attribute names' UTF-8 lengths and its values' sizes."""
    return sum(_utf8(name) + dynamodb_value_bytes(value) for name, value in attributes.items())


def _limited_size_setitem(self: LimitedSizeDict, key: str, value: Any) -> None:
    """moto's item attribute store, sized by DynamoDB's rules against 400 KB (moto: its own rule, 405,000)."""
    others = sum(_utf8(name) + dynamodb_value_bytes(held) for name, held in self.items() if name != key)
    if others + _utf8(key) + dynamodb_value_bytes(value) > DYNAMODB_MAX_ITEM_BYTES:
        raise ItemSizeTooLarge  # PutItem: "Item size has exceeded ..."; UpdateItem: "Item size to update ..."
    dict.__setitem__(self, key, value)


def _action_bytes(action: Mapping[str, Any]) -> int:
    """What one TransactWriteItems action counts toward the 4 MB: a Put its whole item; an Update, Delete or
    ConditionCheck its key and the values it names (the updated item is not known before it is applied)."""
    if "Item" in action:
        return dynamodb_item_bytes(action["Item"])
    return dynamodb_item_bytes(action.get("Key", {})) + sum(
        dynamodb_value_bytes(value) for value in action.get("ExpressionAttributeValues", {}).values()
    )


def check_transaction(transact_items: list[dict[str, Any]]) -> None:
    """Refuse a TransactWriteItems request AWS refuses before writing anything."""
    if len(transact_items) > DYNAMODB_MAX_TRANSACTION_ACTIONS:
        raise MockValidationException(
            f"1 validation error detected: Value at 'transactItems' failed to satisfy constraint: Member must have "
            f"length less than or equal to {DYNAMODB_MAX_TRANSACTION_ACTIONS}"
        )
    actions = [next(iter(entry.values())) for entry in transact_items]
    oversized = [
        "Item" in action and dynamodb_item_bytes(action["Item"]) > DYNAMODB_MAX_ITEM_BYTES for action in actions
    ]
    if any(oversized):
        raise TransactionCanceledException(
            [
                ("ValidationError", "Item size has exceeded the maximum allowed size", None)
                if bad
                else (None, None, None)
                for bad in oversized
            ]
        )
    if sum(_action_bytes(action) for action in actions) > DYNAMODB_MAX_TRANSACTION_BYTES:
        raise MockValidationException("Transaction request cannot be larger than 4 MB")


def sqs_message_bytes(body: str) -> int:
    return _utf8(body)


def _check_fifo_id(name: str, value: str | None) -> None:
    if value is not None and not is_valid_fifo_id(value):
        raise InvalidParameterValue(
            f"Value {value} for parameter {name} is invalid. Reason: {name} can only include alphanumeric and "
            f"punctuation characters. 1 to {FIFO_ID_MAX_LENGTH} in length."
        )


def _check_entry_count(entries: Iterable[Any]) -> None:
    count = len(list(entries))
    if count > SQS_MAX_BATCH_ENTRIES:
        raise TooManyEntriesInBatchRequest(count)


def put_events_entry_bytes(entry: Mapping[str, Any]) -> int:
    """EventBridge's PutEvents entry size: Time 14 bytes if given; Source, DetailType, Detail and each Resources
    entry their UTF-8 length ("Calculating PutEvents event entry size", EventBridge user guide)."""
    size = _PUT_EVENTS_TIME_BYTES if entry.get("Time") is not None else 0
    size += sum(_utf8(str(entry.get(name) or "")) for name in ("Source", "DetailType", "Detail"))
    return size + sum(_utf8(resource) for resource in entry.get("Resources") or () if resource is not None)


def _before(original: Callable[..., Any], check: Callable[..., None]) -> Callable[..., Any]:
    @functools.wraps(original)
    def checked(*args: Any, **kwargs: Any) -> Any:
        check(*args, **kwargs)
        return original(*args, **kwargs)

    checked.__aws_limits__ = True  # type: ignore[attr-defined]
    return checked


def _sqs_validate_message(
    self: SQSBackend,
    queue: Any,
    message_body: str,
    delay_seconds: int,
    deduplication_id: str | None = None,
    group_id: str | None = None,
    validate_group_id: bool = True,
) -> None:
    _check_fifo_id("MessageGroupId", group_id)
    _check_fifo_id("MessageDeduplicationId", deduplication_id)
    limit = min(int(queue.maximum_message_size), SQS_MAX_MESSAGE_BYTES)
    if sqs_message_bytes(message_body) > limit:
        raise InvalidParameterValue(
            f"One or more parameters are invalid. Reason: Message must be shorter than {limit} bytes."
        )


def _sqs_send_message_batch(self: SQSBackend, queue_name: str, entries: dict[str, dict[str, Any]]) -> None:
    _check_entry_count(entries)
    total = sum(sqs_message_bytes(entry.get("MessageBody") or "") for entry in entries.values())
    if total > SQS_MAX_MESSAGE_BYTES:
        raise BatchRequestTooLong(total)


def _sqs_batch_of(self: SQSBackend, queue_name: str, entries: Iterable[Any]) -> None:
    _check_entry_count(entries)


def _dynamodb_transact_write_items(self: DynamoHandler) -> None:
    check_transaction(self.body["TransactItems"])


def _events_put_events(self: EventsBackend, events: list[dict[str, Any]]) -> None:
    total = sum(put_events_entry_bytes(entry) for entry in events)
    if total >= EVENTBRIDGE_MAX_PUT_EVENTS_BYTES:
        raise EventsValidationException("Total size of the entries in the request is over the limit.")


_PATCHES: list[tuple[type, str, Callable[..., None]]] = [
    (SQSBackend, "_validate_message", _sqs_validate_message),
    (SQSBackend, "send_message_batch", _sqs_send_message_batch),
    (SQSBackend, "delete_message_batch", _sqs_batch_of),
    (SQSBackend, "change_message_visibility_batch", _sqs_batch_of),
    (DynamoHandler, "transact_write_items", _dynamodb_transact_write_items),
    (EventsBackend, "put_events", _events_put_events),
]
_installed = threading.Lock()


def install() -> None:
    """Patch moto so that it refuses what AWS refuses (idempotent: a second call changes nothing).

    Each check runs before moto's own method; ReceiveMessage's MaxNumberOfMessages 1..10 moto checks itself.
    """
    with _installed:
        for owner, name, check in _PATCHES:
            original = getattr(owner, name)
            if not getattr(original, "__aws_limits__", False):
                setattr(owner, name, _before(original, check))
        LimitedSizeDict.__setitem__ = _limited_size_setitem  # type: ignore[method-assign]
