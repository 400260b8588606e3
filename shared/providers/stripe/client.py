"""Stripe refetch: the PaymentIntent, its latest charge and, when the charge is disputed, the dispute.

Requests (`Authorization: Bearer <key>`, `Stripe-Version` pinned so the shapes below do not drift with the
account's default version):
1. `GET /v1/payment_intents/{id}?expand[]=latest_charge` - Stripe returns the charge inline. A stand-in server
   that ignores `expand` returns the charge id instead, and then:
2. `GET /v1/charges/{latest_charge}` - only when the intent `succeeded`: the charge can only refine a succeeded
   intent, so other statuses never pay for the second call.
3. `GET /v1/disputes?charge={charge_id}&limit=10` - only when the charge says `disputed: true`. The flag stays
   true after the dispute closes, whatever the outcome, so the dispute's own status decides (the most recent
   one by `created`). A stand-in that answers 404 there leaves the outcome unknown: `disputed`.

Canonical status (first matching row wins):

| intent.status                 | condition                                   | canonical          |
|-------------------------------|---------------------------------------------|--------------------|
| requires_payment_method       | `last_payment_error` not null               | failed             |
| requires_payment_method, requires_confirmation, requires_action, processing | | pending          |
| requires_capture              |                                             | authorized         |
| canceled                      |                                             | canceled           |
| succeeded                     | charge.disputed, latest dispute `lost`      | charged_back       |
| succeeded                     | charge.disputed, dispute still open (*)     | disputed           |
| succeeded                     | charge.refunded true                        | refunded           |
| succeeded                     | charge.amount_refunded > 0                  | partially_refunded |
| succeeded                     | otherwise (incl. disputes `won`, `warning_closed`, `prevented`) | paid |
| anything else                 |                                             | GatewayResponseInvalid |

(*) needs_response, under_review, warning_needs_response, warning_under_review, appeal_*, a status we do not
know, or no dispute listed at all: while in doubt the money is in question.

A closed-in-our-favour dispute falls through to the refund rows, so a won dispute on a partly refunded charge
returns to `partially_refunded` (the status table allows disputed -> paid | partially_refunded | refunded).

amount = intent.amount, currency = intent.currency upper-cased, amount_refunded = charge.amount_refunded.

Sub-accounts (`account`, from the event): a request acts as a connected account only when it names the account
(https://docs.stripe.com/connect/authentication); without it, the connected account's objects are not found
(404). An event's `account` goes as `Stripe-Account: acct_...` (https://docs.stripe.com/api/connected-accounts);
a thin (or organization) event's `context` as `Stripe-Context: <context>`, the header that supersedes
Stripe-Account and can name a path of accounts (`acct_platform/acct_connected`, https://docs.stripe.com/context).
stripe-python does the same: its EventNotification.fetch_related_object sends the thin event's context as
Stripe-Context (stripe 16.1). Every request of one fetch carries the header. A reference of any other shape is
refused before any request is made.

Thin events name the object that changed, which may be a charge (`ch_`/`py_`), a refund (`re_`/`pyr_`) or a
dispute (`dp_`/`du_`) instead of the intent: those are read first (`GET /v1/charges|refunds|disputes/{id}`) for
their `payment_intent`, and the snapshot is the intent's (its resource_id is the intent's id, so the payment is
the same whichever object the event named). Stripe's id prefixes are not a documented contract, but they are
stable and the related object's `type` put the id here in the first place.

A charge with no intent (the Charges API: `payment_intent` null, https://docs.stripe.com/api/charges/object) is its
own payment: a snapshot event names it (or a refund's or dispute's `charge`), and the refetch reads
`GET /v1/charges/{id}` (a refund or dispute with no intent is read first for its `charge`), then, when the charge
says `disputed: true`, its disputes as above. Its resource_id is the charge's id. Canonical status of such a charge:

| charge                                                   | canonical                                            |
|----------------------------------------------------------|------------------------------------------------------|
| status `failed` (before `status` existed: `paid: false`) | failed                                               |
| status `pending`                                         | pending                                              |
| status `succeeded` (or `paid: true`), `captured: false`  | authorized (the funds are held)                      |
| status `succeeded`                                       | the intent table's succeeded rows (dispute, refunds) |

amount, currency and amount_refunded are the charge's; provider_status is `charge:<status>` refined the same way.
provider_status: the intent status, refined by what decided it, e.g. "succeeded/refunded",
"succeeded/disputed:needs_response", "requires_payment_method/last_payment_error".
"""

from __future__ import annotations

from typing import Any

from shared.gateway.base import GatewayRejected, PaymentSnapshot, ResourceNotFound
from shared.gateway.http import ApiKeyClient, GatewayResponseInvalid, answered_currency, check_answered, path_segment
from shared.payments.status import PaymentStatus
from shared.providers.stripe.account import is_account_id, is_account_reference
from shared.sub_account import SubAccount

PROVIDER = "stripe"
DEFAULT_BASE_URL = "https://api.stripe.com"
API_VERSION = "2024-06-20"

_PENDING_INTENT_STATUSES = frozenset(
    {"requires_payment_method", "requires_confirmation", "requires_action", "processing"}
)
DISPUTE_LOST = frozenset({"lost"})
DISPUTE_RESOLVED_FOR_MERCHANT = frozenset({"won", "warning_closed", "prevented"})

# The objects a thin event may name that are not the intent: id prefix -> the v1 collection that serves them
_OBJECTS_OF_AN_INTENT: tuple[tuple[tuple[str, ...], str], ...] = (
    (("ch_", "py_"), "charges"),
    (("re_", "pyr_"), "refunds"),
    (("dp_", "du_"), "disputes"),
)

S = PaymentStatus


def account_headers(account: SubAccount | None) -> dict[str, str]:
    """The header that scopes a request to `account` (see the module docstring); GatewayRejected for a value that
    is not an account id (Stripe-Account) or a context (Stripe-Context), so nothing attacker-shaped ever becomes a
    header."""
    if account is None:
        return {}
    if account.context:
        if not is_account_reference(account.reference):
            raise GatewayRejected("the payment's context is not a Stripe account reference: nothing was requested")
        return {"Stripe-Context": account.reference}
    if not is_account_id(account.reference):
        raise GatewayRejected("the payment's account is not a Stripe account reference: nothing was requested")
    return {"Stripe-Account": account.reference}


def _settled_charge_status(
    label: str, charge: dict[str, Any], dispute: dict[str, Any] | None
) -> tuple[PaymentStatus, str]:
    """A succeeded (captured) charge refined by its dispute and refunds; `label` prefixes the provider status."""
    if charge.get("disputed") is True:
        dispute_status = dispute.get("status") if dispute else None
        shown = dispute_status if isinstance(dispute_status, str) else "unknown"
        if dispute_status in DISPUTE_LOST:
            return S.CHARGED_BACK, f"{label}/disputed:{shown}"
        if dispute_status not in DISPUTE_RESOLVED_FOR_MERCHANT:
            return S.DISPUTED, f"{label}/disputed:{shown}"
    if charge.get("refunded") is True:
        return S.REFUNDED, f"{label}/refunded"
    if _int(charge, "amount_refunded", "charge") > 0:
        return S.PARTIALLY_REFUNDED, f"{label}/partially_refunded"
    return S.PAID, label


def charge_status(charge: dict[str, Any], dispute: dict[str, Any] | None) -> tuple[PaymentStatus, str]:
    """(canonical status, provider status) of a Charges-API charge (no intent) and its latest dispute."""
    status = charge.get("status")
    if status is None and isinstance(charge.get("paid"), bool):  # objects of API versions before `status`
        status = "succeeded" if charge["paid"] else "failed"
    if not isinstance(status, str):
        raise GatewayResponseInvalid("stripe charge has no status")
    label = f"charge:{status[:40]}"
    if status == "failed":
        return S.FAILED, label
    if status == "pending":
        return S.PENDING, label
    if status != "succeeded":
        raise GatewayResponseInvalid(f"stripe charge status {status[:40]!r} is not mapped")
    if charge.get("captured") is False:
        return S.AUTHORIZED, f"{label}/uncaptured"
    return _settled_charge_status(label, charge, dispute)


def stripe_status(
    intent: dict[str, Any], charge: dict[str, Any] | None, dispute: dict[str, Any] | None
) -> tuple[PaymentStatus, str]:
    """(canonical status, provider status) for an intent, its latest charge and that charge's latest dispute."""
    status = intent.get("status")
    if not isinstance(status, str):
        raise GatewayResponseInvalid("stripe payment intent has no status")
    if status == "requires_payment_method" and intent.get("last_payment_error") is not None:
        return S.FAILED, f"{status}/last_payment_error"
    if status in _PENDING_INTENT_STATUSES:
        return S.PENDING, status
    if status == "requires_capture":
        return S.AUTHORIZED, status
    if status == "canceled":
        return S.CANCELED, status
    if status != "succeeded":
        raise GatewayResponseInvalid(f"stripe payment intent status {status[:40]!r} is not mapped")
    if charge is None:
        return S.PAID, status
    return _settled_charge_status(status, charge, dispute)


# `requires_payment_method` is `failed` only with a `last_payment_error`, which the stored event does not keep: it is
# `failed` in payment_intent.payment_failed, `pending` in payment_intent.created, and states nothing in any other.
_PAYLOAD_UNPAID_INTENT: dict[str, PaymentStatus] = {
    "payment_intent.payment_failed": S.FAILED,
    "payment_intent.created": S.PENDING,
}


def payload_status(event_type: str, provider_status: str | None) -> str | None:
    """The canonical payment status a stored Stripe event states in its signed body (the driver keeps the object's
    `status`), or None when it states none a payment may be confirmed with: thin events (no state), charge, refund
    and dispute events (their object is not the payment: a charge may be uncaptured, a refund's amount or a
    dispute's outcome is for the refetch to read). A payment_intent.* event's PaymentIntent is read by this
    module's table without its charge: a succeeded intent is `paid` (refunds and disputes arrive as charge.* events).
    The provider catalog names this function (`payload_status_from`): Stripe's snapshot events may confirm a payment
    from the payload."""
    if not event_type.startswith("payment_intent.") or provider_status is None:
        return None
    if provider_status == "requires_payment_method":
        unpaid = _PAYLOAD_UNPAID_INTENT.get(event_type)
        return unpaid.value if unpaid is not None else None
    try:
        return stripe_status({"status": provider_status}, None, None)[0].value
    except GatewayResponseInvalid:  # a status the table does not map: nothing to confirm with
        return None


def _int(obj: dict[str, Any], key: str, where: str, *, default: int = 0) -> int:
    value = obj.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise GatewayResponseInvalid(f"stripe {where}.{key} is not an integer")
    return value


def _reference(value: Any) -> str | None:
    """An object reference as Stripe writes it: an id, null, or (expanded) an object with an id."""
    if isinstance(value, dict):
        value = value.get("id")
    return value if isinstance(value, str) and value else None


def _latest_dispute(listing: dict[str, Any]) -> dict[str, Any] | None:
    data = listing.get("data")
    if not isinstance(data, list):
        raise GatewayResponseInvalid("stripe dispute list has no data")
    disputes = [item for item in data if isinstance(item, dict)]
    if not disputes:
        return None
    return max(disputes, key=lambda item: item["created"] if isinstance(item.get("created"), int) else 0)


class StripeClient(ApiKeyClient):
    provider: str = PROVIDER

    def fetch_payment(self, resource_id: str, *, account: SubAccount | None = None) -> PaymentSnapshot:
        headers = {
            **account_headers(account),
            "Authorization": f"Bearer {self._api_key()}",
            "Stripe-Version": API_VERSION,
        }
        owner = self._owner(resource_id, headers)
        if isinstance(owner, dict):
            return self._charge_payment(owner, headers)
        resource_id = owner
        intent = self._http.get_json(
            f"/v1/payment_intents/{path_segment(resource_id)}",
            headers=headers,
            query=[("expand[]", "latest_charge")],
        )
        check_answered(intent.get("id"), resource_id, provider=PROVIDER, what="payment intent")

        charge: dict[str, Any] | None = None
        dispute: dict[str, Any] | None = None
        if intent.get("status") == "succeeded":
            charge = self._charge(intent.get("latest_charge"), headers)
            if charge is not None and charge.get("disputed") is True:
                charge_id = charge.get("id")
                if isinstance(charge_id, str) and charge_id:
                    dispute = self._latest_dispute(charge_id, headers)

        status, provider_status = stripe_status(intent, charge, dispute)
        amount = intent.get("amount")
        if amount is not None and (isinstance(amount, bool) or not isinstance(amount, int)):
            raise GatewayResponseInvalid("stripe payment intent amount is not an integer")
        return PaymentSnapshot(
            resource_id=resource_id,
            status=status,
            provider_status=provider_status,
            amount=amount,
            currency=answered_currency(intent.get("currency"), None),
            amount_refunded=_int(charge, "amount_refunded", "charge") if charge is not None else 0,
        )

    def _owner(self, resource_id: str, headers: dict[str, str]) -> str | dict[str, Any]:
        """What `resource_id` is the payment of: the id of the PaymentIntent a charge, refund or dispute belongs to
        (an intent's own id as it is), or, for one with no intent (the Charges API), the charge itself (read)."""
        for prefixes, collection in _OBJECTS_OF_AN_INTENT:
            if resource_id.startswith(prefixes):
                obj = self._http.get_json(f"/v1/{collection}/{path_segment(resource_id)}", headers=headers)
                if obj.get("id") not in (None, resource_id):
                    raise GatewayResponseInvalid(f"stripe answered another {collection[:-1]} than the one asked for")
                intent_id = _reference(obj.get("payment_intent"))
                if intent_id:
                    return intent_id
                if collection == "charges":
                    return obj
                charge_id = _reference(obj.get("charge"))
                if not charge_id:
                    raise GatewayResponseInvalid(f"stripe {collection[:-1]} belongs to no payment intent nor charge")
                return self._read_charge(charge_id, headers)
        return resource_id

    def _read_charge(self, charge_id: str, headers: dict[str, str]) -> dict[str, Any]:
        charge = self._http.get_json(f"/v1/charges/{path_segment(charge_id)}", headers=headers)
        if charge.get("id") not in (None, charge_id):
            raise GatewayResponseInvalid("stripe answered another charge than the one asked for")
        return charge

    def _charge_payment(self, charge: dict[str, Any], headers: dict[str, str]) -> PaymentSnapshot:
        """A Charges-API charge as its own payment (see the module docstring)."""
        if _reference(charge.get("payment_intent")):
            raise GatewayResponseInvalid("stripe charge belongs to a payment intent: it is not its own payment")
        charge_id = charge.get("id")
        if not isinstance(charge_id, str) or not charge_id:
            raise GatewayResponseInvalid("stripe charge has no id")
        dispute = self._latest_dispute(charge_id, headers) if charge.get("disputed") is True else None
        status, provider_status = charge_status(charge, dispute)
        amount = charge.get("amount")
        if amount is not None and (isinstance(amount, bool) or not isinstance(amount, int)):
            raise GatewayResponseInvalid("stripe charge amount is not an integer")
        return PaymentSnapshot(
            resource_id=charge_id,
            status=status,
            provider_status=provider_status,
            amount=amount,
            currency=answered_currency(charge.get("currency"), None),
            amount_refunded=_int(charge, "amount_refunded", "charge"),
        )

    def _latest_dispute(self, charge_id: str, headers: dict[str, str]) -> dict[str, Any] | None:
        try:
            listing = self._http.get_json(
                "/v1/disputes", headers=headers, query=[("charge", charge_id), ("limit", "10")]
            )
        except ResourceNotFound:
            # Stripe never answers 404 to a list: a stand-in that does not serve disputes. The outcome is then
            # unknown, which reads as `disputed` (the money is in question), never as a guess either way.
            return None
        return _latest_dispute(listing)

    def _charge(self, latest_charge: Any, headers: dict[str, str]) -> dict[str, Any] | None:
        if latest_charge is None:
            return None
        if isinstance(latest_charge, dict):
            return latest_charge  # expanded inline
        if isinstance(latest_charge, str) and latest_charge:
            return self._http.get_json(f"/v1/charges/{path_segment(latest_charge)}", headers=headers)
        raise GatewayResponseInvalid("stripe payment intent latest_charge is neither an id nor an object")
