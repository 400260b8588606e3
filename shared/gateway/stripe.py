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
provider_status: the intent status, refined by what decided it, e.g. "succeeded/refunded",
"succeeded/disputed:needs_response", "requires_payment_method/last_payment_error".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shared.gateway.base import GatewayRejected, PaymentSnapshot, ResourceNotFound
from shared.gateway.http import GatewayResponseInvalid, JsonHttpClient, path_segment
from shared.payments.status import PaymentStatus
from shared.providers._stripe_account import is_account_id, is_account_reference
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
    if charge.get("disputed") is True:
        dispute_status = dispute.get("status") if dispute else None
        label = dispute_status if isinstance(dispute_status, str) else "unknown"
        if dispute_status in DISPUTE_LOST:
            return S.CHARGED_BACK, f"{status}/disputed:{label}"
        if dispute_status not in DISPUTE_RESOLVED_FOR_MERCHANT:
            return S.DISPUTED, f"{status}/disputed:{label}"
    if charge.get("refunded") is True:
        return S.REFUNDED, f"{status}/refunded"
    if _int(charge, "amount_refunded", "charge") > 0:
        return S.PARTIALLY_REFUNDED, f"{status}/partially_refunded"
    return S.PAID, status


def _int(obj: dict[str, Any], key: str, where: str, *, default: int = 0) -> int:
    value = obj.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise GatewayResponseInvalid(f"stripe {where}.{key} is not an integer")
    return value


def _latest_dispute(listing: dict[str, Any]) -> dict[str, Any] | None:
    data = listing.get("data")
    if not isinstance(data, list):
        raise GatewayResponseInvalid("stripe dispute list has no data")
    disputes = [item for item in data if isinstance(item, dict)]
    if not disputes:
        return None
    return max(disputes, key=lambda item: item["created"] if isinstance(item.get("created"), int) else 0)


class StripeClient:
    provider: str = PROVIDER

    def __init__(self, http: JsonHttpClient, api_key: Callable[[], str]) -> None:
        self._http = http
        self._api_key = api_key

    def fetch_payment(self, resource_id: str, *, account: SubAccount | None = None) -> PaymentSnapshot:
        headers = {
            **account_headers(account),
            "Authorization": f"Bearer {self._api_key()}",
            "Stripe-Version": API_VERSION,
        }
        resource_id = self._intent_id(resource_id, headers)
        intent = self._http.get_json(
            f"/v1/payment_intents/{path_segment(resource_id)}",
            headers=headers,
            query=[("expand[]", "latest_charge")],
        )
        if intent.get("id") not in (None, resource_id):
            raise GatewayResponseInvalid("stripe answered a different payment intent than the one asked for")

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
        currency = intent.get("currency")
        return PaymentSnapshot(
            resource_id=resource_id,
            status=status,
            provider_status=provider_status,
            amount=amount,
            currency=currency.upper() if isinstance(currency, str) and currency else None,
            amount_refunded=_int(charge, "amount_refunded", "charge") if charge is not None else 0,
        )

    def _intent_id(self, resource_id: str, headers: dict[str, str]) -> str:
        """The PaymentIntent a thin event's charge, refund or dispute belongs to; an intent's own id as it is."""
        for prefixes, collection in _OBJECTS_OF_AN_INTENT:
            if resource_id.startswith(prefixes):
                obj = self._http.get_json(f"/v1/{collection}/{path_segment(resource_id)}", headers=headers)
                if obj.get("id") not in (None, resource_id):
                    raise GatewayResponseInvalid(f"stripe answered another {collection[:-1]} than the one asked for")
                value: Any = obj.get("payment_intent")
                intent_id = value.get("id") if isinstance(value, dict) else value
                if not isinstance(intent_id, str) or not intent_id:
                    raise GatewayResponseInvalid(f"stripe {collection[:-1]} belongs to no payment intent")
                return intent_id
        return resource_id

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
