"""The local front door's request log prints no secret of a URL: iugu's `?token=` and Efí's `?hmac=` are the
secret itself; only the query parameters a source's driver keeps with its event (`replay_query`) show a value."""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from inbox_local.server import ApiServer, loggable_path, query_kept
from shared import definitions
from shared.providers.efi.driver import HMAC_QUERY_PARAMETER
from shared.providers.iugu.driver import TOKEN_PARAM
from shared.providers.mercadopago.driver import DATA_ID_QUERY, TYPE_QUERY
from shared.providers.registry import get_driver
from shared.redaction import REDACTED, redact_query
from shared.sources import reset_declared_sources

IUGU_TOKEN = "iugu-webhook-token-0123456789"
EFI_HMAC = "efi-registered-hmac-abcdef"
# Two sources of one provider and a renamed one: the rule follows the source's driver, not its name.
SOURCES = [
    {"name": "iugu", "provider": "iugu"},
    {"name": "efi-br", "provider": "efi"},
    {"name": "mp", "provider": "mercadopago"},
]


@pytest.fixture(autouse=True)
def declared(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(definitions.ENV_SOURCES, json.dumps(SOURCES))
    reset_declared_sources()
    yield
    reset_declared_sources()


def test_the_secret_query_parameters_are_ones_their_drivers_never_keep() -> None:
    # The rule's premise: a driver keeps (replay_query) no parameter that carries its secret
    assert TOKEN_PARAM not in get_driver("iugu").replay_query
    assert HMAC_QUERY_PARAMETER not in get_driver("efi").replay_query
    assert query_kept("/webhooks/mp") == (DATA_ID_QUERY, TYPE_QUERY)


@pytest.mark.parametrize(
    ("raw", "logged"),
    [
        (f"/webhooks/iugu?{TOKEN_PARAM}={IUGU_TOKEN}", f"/webhooks/iugu?{TOKEN_PARAM}={REDACTED}"),
        (
            f"/webhooks/efi-br/pix?{HMAC_QUERY_PARAMETER}={EFI_HMAC}&ignorar=",
            f"/webhooks/efi-br/pix?{HMAC_QUERY_PARAMETER}={REDACTED}&ignorar={REDACTED}",
        ),
        # Mercado Pago's signed query is kept with the event: the log shows it too
        ("/webhooks/mp?data.id=123456&type=payment", "/webhooks/mp?data.id=123456&type=payment"),
        (
            f"/webhooks/mp?data.id=1&token={IUGU_TOKEN}&{IUGU_TOKEN}",
            f"/webhooks/mp?data.id=1&token={REDACTED}&{REDACTED}",
        ),
        # An undeclared source, another route: no value is shown at all
        (f"/webhooks/nobody?{TOKEN_PARAM}={IUGU_TOKEN}", f"/webhooks/nobody?{TOKEN_PARAM}={REDACTED}"),
        (f"/health?data.id={IUGU_TOKEN}", f"/health?data.id={REDACTED}"),
        ("/webhooks/iugu", "/webhooks/iugu"),
    ],
)
def test_a_logged_path_shows_only_the_values_its_source_keeps(raw: str, logged: str) -> None:
    assert loggable_path(raw) == logged


def test_an_unreadable_declaration_shows_no_value(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given sources that cannot be parsed (the ingest answers that; the log line must not fail)
    monkeypatch.setenv(definitions.ENV_SOURCES, "not json")
    reset_declared_sources()
    # Then a delivery's query values are redacted, even the ones a driver would keep
    assert loggable_path("/webhooks/mp?data.id=1") == f"/webhooks/mp?data.id={REDACTED}"


def test_query_names_are_compared_decoded_and_blank_parts_kept() -> None:
    assert redact_query("data%2Eid=7&&type", ("data.id",)) == f"data%2Eid=7&&{REDACTED}"


def _answer_ok(_event: dict[str, Any], _context: Any) -> dict[str, Any]:
    return {"statusCode": 200, "body": "{}"}


def test_the_request_log_of_the_front_door_prints_no_token(capsys: pytest.CaptureFixture[str]) -> None:
    # Given the local front door, its request log on
    server = ApiServer(("127.0.0.1", 0), _answer_ok, access_log=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        # When iugu and Efí deliver with their secret in the URL
        for path in (f"/webhooks/iugu?{TOKEN_PARAM}={IUGU_TOKEN}", f"/webhooks/efi-br/pix?hmac={EFI_HMAC}"):
            request = urllib.request.Request(base + path, data=b"{}", method="POST")
            with urllib.request.urlopen(request, timeout=10) as response:
                assert response.status == 200
    finally:
        server.shutdown()
        server.server_close()
    # Then the log has a line per request and neither secret
    log = capsys.readouterr().err
    assert f"POST /webhooks/iugu?{TOKEN_PARAM}={REDACTED} -> 200" in log
    assert f"POST /webhooks/efi-br/pix?hmac={REDACTED} -> 200" in log
    assert IUGU_TOKEN not in log and EFI_HMAC not in log
