"""The console's "Rejected deliveries" pages against moto (Flask's test client): the rows are `inbox rejected
list`'s, the filters apply, a secret-bearing header shows only as its fingerprint, sender content is escaped."""

from __future__ import annotations

from typing import Any

import pytest

from functions.ingest.handler import lambda_handler
from inbox_cli import rejected
from inbox_cli.console.app import create_app
from inbox_cli.target import Target
from inbox_local.config import DEV_FINGERPRINT_KEY
from inbox_local.lambda_context import LocalLambdaContext
from inbox_local.server import api_gateway_event
from shared.rejections import fingerprint

PORT = 8791
HOST = f"127.0.0.1:{PORT}"
HOSTILE = '<script>alert("owned")</script>'


@pytest.fixture
def console(aws_world: Any) -> Any:
    names = aws_world.names
    target = Target(
        api_url="http://127.0.0.1:1",
        inbox_table=names.inbox_table,
        payments_table=names.payments_table,
        body_bucket=names.body_bucket,
        local=True,
        rejected_table=names.rejected_table,
    )
    app = create_app(target, port=PORT, token="t")
    app.config["SERVER_NAME"] = HOST
    client = app.test_client()
    client.target = target  # type: ignore[attr-defined]
    return client


def refuse(provider: str, body: bytes, headers: dict[str, str]) -> None:
    event = api_gateway_event(
        "POST", f"/webhooks/{provider}", {"content-type": "application/json", **headers}, body, "203.0.113.5"
    )
    assert lambda_handler(event, LocalLambdaContext("ingest"))["statusCode"] == 401


def test_the_page_lists_what_the_cli_lists_and_filters(console):
    # Given two refused deliveries through the real ingest
    refuse("stripe", b'{"id": "evt_1"}', {"stripe-signature": "t=1,v1=00"})
    refuse("asaas", b'{"id": "evt_2"}', {"asaas-access-token": "tok_wrong"})
    # When the page is read
    page = console.get("/rejected").get_data(as_text=True)
    # Then it shows every row `inbox rejected list` returns, with its id and reason
    rows = rejected.list_rejected(console.target)
    assert len(rows) == 2
    for row in rows:
        assert f'data-rejected-id="{row["id"]}"' in page and row["reason"] in page
    # and the filters apply
    only_asaas = console.get("/rejected?source=asaas").get_data(as_text=True)
    assert only_asaas.count('class="rejected-row"') == 1 and 'data-source="asaas"' in only_asaas
    missing = console.get("/rejected?reason=signature_missing").get_data(as_text=True)
    assert missing.count('class="rejected-row"') == 0
    assert console.get("/rejected?reason=nonsense").status_code == 400


def test_the_detail_shows_the_fingerprint_never_the_token(console):
    # Given a refused Asaas delivery with a token
    refuse("asaas", b'{"id": "evt_2"}', {"asaas-access-token": "tok_wrong"})
    [row] = rejected.list_rejected(console.target)
    # When its page is read
    response = console.get(f"/rejected/{row['id']}")
    page = response.get_data(as_text=True)
    # Then the header is its fingerprint, the token appears nowhere, the body is shown
    assert response.status_code == 200
    assert fingerprint(DEV_FINGERPRINT_KEY.encode(), "tok_wrong") in page
    assert "tok_wrong" not in page
    assert "{&#34;id&#34;: &#34;evt_2&#34;}" in page
    assert f"inbox doctor --rejected {row['id']}" in page


def test_sender_content_is_escaped_and_an_unknown_id_is_404(console):
    # Given a refused delivery whose body and user agent are HTML
    refuse("stripe", HOSTILE.encode(), {"stripe-signature": HOSTILE, "user-agent": HOSTILE})
    [row] = rejected.list_rejected(console.target)
    # Then neither page carries it unescaped
    for path in ("/rejected", f"/rejected/{row['id']}"):
        page = console.get(path).get_data(as_text=True)
        assert HOSTILE not in page
    assert "&lt;script&gt;alert(&#34;owned&#34;)&lt;/script&gt;" in console.get(f"/rejected/{row['id']}").get_data(
        as_text=True
    )
    assert console.get("/rejected/rej_0000000000ZZZZZZZZZZZZZZZZ").status_code == 404
    assert console.get("/rejected/not-an-id").status_code == 404


def test_each_row_and_the_detail_carry_the_doctors_diagnosis(console):
    # Given a Stripe delivery whose body was re-serialized after signing, refused by the real ingest
    import json
    import time

    from inbox_local.dev_secrets import DEV_SECRETS
    from inbox_local.senders import sender_for

    original = b'{\n  "id": "evt_9",\n  "type": "payment_intent.succeeded"\n}'
    request = sender_for("stripe").sign(original, DEV_SECRETS["stripe"], now=int(time.time()))
    refuse("stripe", json.dumps(json.loads(original), separators=(",", ":")).encode(), dict(request.headers))
    [row] = rejected.list_rejected(console.target)
    # When the list and the record's page are read
    listing = console.get("/rejected").get_data(as_text=True)
    detail = console.get(f"/rejected/{row['id']}").get_data(as_text=True)
    # Then both say what `inbox doctor --rejected` says: the body was re-serialized
    assert 'class="diagnosis-code"' in listing and "body_reserialized" in listing
    assert '<strong id="diagnosis-code">body_reserialized</strong>' in detail
