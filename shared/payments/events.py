"""The published events' contract as pydantic models, checked before anything leaves the stack.

docs/events.schema.json is the contract for receivers (any language); these models state the same rules for
our own code, and the publisher and the forwarder validate every event with them before it goes out: an event
that breaks the contract (a bug in the outbox writer) fails its batch, which the Pipe retries and finally
dead-letters (an alarm fires), instead of reaching customers malformed. tests/integration/test_event_contract.py
checks that the models and the JSON Schema accept and refuse the same events.

Not imported by the processor, which writes the outbox records: pydantic's import and schema building are
~200 ms of a cold start, paid here only by the two downstream functions. Unknown properties are allowed (the
schema tells receivers to ignore them; a new optional property may appear within schema_version 1).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from shared.payments.status import PaymentStatus

SOURCE_PATTERN = r"^[a-z][a-z0-9-]{0,31}$"  # shared.definitions.SOURCE_NAME_PATTERN, as the schema spells it
Timestamp = Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")]


class _Event(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True, strict=True)

    schema_version: Literal["1"]
    created_at: Timestamp
    sequence: int = Field(ge=1)


class PaymentStatusChanged(_Event):
    type: Literal["payment.status_changed"]
    id: str = Field(pattern=r"^tr_[0-9a-f]{32}$")
    transition_id: str = Field(pattern=r"^tr_[0-9a-f]{32}$")
    provider: str = Field(pattern=r"^[a-z0-9_-]+$")
    # Optional within schema_version 1: records written before sources existed have none (read: the provider).
    source: str | None = Field(default=None, pattern=SOURCE_PATTERN)
    resource_id: str = Field(min_length=1)
    previous_status: PaymentStatus | None
    new_status: PaymentStatus
    amount: int | None
    currency: str | None
    amount_refunded: int = Field(ge=0)
    occurred_at: Timestamp
    source_event_id: str | None
    # Optional within schema_version 1: records written before payloads could confirm a payment have none (true).
    verified: bool = True


class PaymentVerified(_Event):
    type: Literal["payment.verified"]
    id: str = Field(pattern=r"^pv_[0-9a-f]{32}$")
    transition_id: str = Field(pattern=r"^tr_[0-9a-f]{32}$")
    provider: str = Field(pattern=r"^[a-z0-9_-]+$")
    source: str | None = Field(default=None, pattern=SOURCE_PATTERN)
    resource_id: str = Field(min_length=1)
    status: PaymentStatus
    amount: int | None
    currency: str | None
    amount_refunded: int = Field(ge=0)
    verified: Literal[True]


class WebhookFailed(_Event):
    type: Literal["webhook.failed"]
    id: str = Field(pattern=r"^wf_[0-9a-f]{32}$")
    provider: str | None
    source: str | None = Field(default=None, pattern=SOURCE_PATTERN)
    event_id: str | None
    event_type: str | None
    resource_id: str | None
    last_error: str
    attempts: int = Field(ge=0)
    failed_at: Timestamp


PublishedEvent = Annotated[PaymentStatusChanged | PaymentVerified | WebhookFailed, Field(discriminator="type")]
_adapter: TypeAdapter[PaymentStatusChanged | PaymentVerified | WebhookFailed] = TypeAdapter(PublishedEvent)


class ContractViolation(Exception):
    """An event that breaks the published contract: never sent. The message names the fields, not the values."""


def check_published(event: dict[str, Any]) -> None:
    """Raise ContractViolation unless `event` (as published: without its outbox `pk`) meets the contract."""
    document = {name: value for name, value in event.items() if name != "pk"}
    try:
        # As JSON, the way receivers get it (strict mode still reads a status from its string value).
        _adapter.validate_json(json.dumps(document, default=str))
    except ValidationError as error:
        fields = sorted({".".join(str(part) for part in e["loc"]) for e in error.errors()})
        raise ContractViolation(f"event {event.get('id')!r} breaks the contract at: {', '.join(fields)}") from None
