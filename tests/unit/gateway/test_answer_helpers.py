"""What every refetch client reads of a gateway's answer the same way (Basic credentials, amounts in centavos, the
currency, the answered id, the status word and its canonical meaning), and the base that injects the HTTP client
and the API key."""

from __future__ import annotations

import base64

import pytest

from shared.gateway.http import (
    ApiKeyClient,
    GatewayResponseInvalid,
    answered_currency,
    basic_authorization,
    centavos,
    check_answered,
    mapped_status,
    status_word,
)
from shared.payments.status import PaymentStatus


def test_basic_authorization_is_rfc_7617_with_an_empty_password_by_default():
    # Given a key used as the user, and a client id with its secret
    # When the Authorization values are built
    # Then each is "Basic " and the base64 of user:password
    assert basic_authorization("sk_test_1") == "Basic " + base64.b64encode(b"sk_test_1:").decode("ascii")
    assert basic_authorization("client", "s3cr:et") == "Basic " + base64.b64encode(b"client:s3cr:et").decode("ascii")


def test_basic_authorization_encodes_non_ascii_as_utf8():
    assert base64.b64decode(basic_authorization("ção")[len("Basic ") :]) == "ção:".encode()


@pytest.mark.parametrize(("document", "expected"), [({"amount": 1990}, 1990), ({"amount": 0}, 0), ({}, None)])
def test_centavos_reads_a_non_negative_integer_or_nothing(document, expected):
    # Given an answer with an integer amount, a zero, or none / When it is read / Then the value, or None when absent
    assert centavos(document, "amount", "acme charge") == expected
    assert centavos({"amount": None}, "amount", "acme charge") is None


@pytest.mark.parametrize("value", [-1, 19.9, "1990", True, [1990], {"value": 1}])
def test_centavos_refuses_anything_else_naming_the_field(value):
    # Given an amount that is negative, a float, a string, a boolean or a container
    # When it is read / Then the answer is invalid, and the error names the provider's object and the key
    with pytest.raises(GatewayResponseInvalid, match=r"^acme charge\.amount is not an amount in centavos$"):
        centavos({"amount": value}, "amount", "acme charge")


@pytest.mark.parametrize(
    ("value", "default", "expected"),
    [("brl", "USD", "BRL"), ("", "BRL", "BRL"), (None, "BRL", "BRL"), (None, None, None), (978, None, None)],
)
def test_answered_currency_is_upper_case_or_the_default(value, default, expected):
    assert answered_currency(value, default) == expected


def test_check_answered_accepts_the_asked_id_or_none_and_refuses_another():
    # Given answers naming the asked id, naming none, and naming another
    check_answered("pay_1", "pay_1", provider="acme", what="payment")
    check_answered(None, "pay_1", provider="acme", what="payment")
    # When the other is checked / Then it is an invalid answer that says which object and provider
    with pytest.raises(GatewayResponseInvalid, match=r"^acme answered a different payment than the one asked for$"):
        check_answered("pay_2", "pay_1", provider="acme", what="payment")
    with pytest.raises(GatewayResponseInvalid):
        check_answered(1, "1", provider="acme", what="payment")  # an integer id is not the asked string


def test_api_key_client_holds_what_it_was_given_and_reads_the_key_late():
    # Given a client built with an HTTP client and a key callable whose value later changes
    keys = iter(["old", "new"])
    http = object()

    class AcmeClient(ApiKeyClient):
        provider = "acme"

        def key(self) -> str:
            return self._api_key()

    client = AcmeClient(http, lambda: next(keys))  # type: ignore[arg-type]
    # When the key is read twice / Then each read asks the callable again (a rotated key is used at once)
    assert client._http is http
    assert (client.key(), client.key()) == ("old", "new")


@pytest.mark.parametrize("document", [{}, {"status": None}, {"status": ""}, {"status": 3}, {"status": ["paid"]}])
def test_status_word_refuses_an_answer_without_one(document):
    # Given an answer whose status is absent, empty or not a string / When it is read / Then it is invalid
    with pytest.raises(GatewayResponseInvalid, match=r"^acme invoice has no status$"):
        status_word(document, "acme invoice")
    assert status_word({"status": "paid"}, "acme invoice") == "paid"


def test_mapped_status_maps_a_known_word_and_refuses_an_unknown_one_cut_short():
    # Given a table that maps "paid"
    table = {"paid": PaymentStatus.PAID}
    # When a known word and an unknown, long one are mapped
    assert mapped_status(table, "paid", "acme invoice") is PaymentStatus.PAID
    # Then the unknown one is an invalid answer quoting at most 40 characters of it
    with pytest.raises(GatewayResponseInvalid) as error:
        mapped_status(table, "x" * 100, "acme invoice")
    assert str(error.value) == f"acme invoice status {'x' * 40!r} is not mapped"
