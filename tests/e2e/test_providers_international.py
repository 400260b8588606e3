"""The international providers over real HTTP: `inbox send` signs a sample with the local stack's development secret,
the stack verifies and stores it, and `inbox events list` shows it."""

from __future__ import annotations

import json
import re
import time
from urllib.parse import urlencode

import pytest

from inbox_cli.main import post_webhook
from inbox_local.senders import sender_for
from shared.providers.base import derive_event_id

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.xdist_group(__name__),
    pytest.mark.shared_stack,
]  # ingests and lists, never waits for processing

# provider -> (keeps the sent event id as its event id, names the sent resource)
PROVIDERS = {
    "github": (False, False),  # the signed body's digest (X-GitHub-Delivery is not signed); not payments
    "shopify": (False, True),  # derived from the signed body (X-Shopify-Event-Id is not signed)
    "paddle": (True, True),
    "mercadopago": (False, True),  # the signed manifest (the body's id is not signed)
    "adyen": (False, True),  # no event id: derived from pspReference + eventCode + success
    "generic": (True, True),  # the body's id (the default template does not sign the id header)
}
# A payment id the gateway simulator can hold, for the providers the processor refetches (`inbox send` registers
# it there): on the shared stack, an event about one it cannot hold would be refetched (404) eight times over minutes
RESOURCES = {"paddle": "txn_e2e_{stamp}", "mercadopago": "{stamp}"}
SAMPLE_STATUS = dict.fromkeys(PROVIDERS, "paid")
KEYED_BY_A_BODY_DATED_WHEN_SENT = frozenset({"github", "shopify", "mercadopago"})
FORGER_SECRETS = {"adyen": "00" * 32}  # Adyen's key must be hex to sign at all


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_inbox_send_is_accepted_and_listed(local_stack, provider):
    # Given the local stack is running
    stamp = int(time.time() * 1000)
    event_id, resource_id = f"evt_e2e_{provider}_{stamp}", RESOURCES.get(provider, "pay_e2e_{provider}_{stamp}")
    resource_id = resource_id.format(provider=provider, stamp=stamp)
    # When a signed sample of the provider is sent with the CLI
    sent = local_stack.cli("send", provider, "--event-id", event_id, "--resource-id", resource_id)
    # Then it is accepted (a valid signature, a new event; Adyen's answer also carries "[accepted]")
    assert re.search(r'-> 200 \{"received":true[,}]', sent.stdout) and '"duplicate"' not in sent.stdout, sent.stdout
    # And it shows up in the inbox listing under the expected dedup key
    keeps_id, names_resource = PROVIDERS[provider]
    shown = re.search(rf"inbox events show {provider} (\S+)", sent.stdout)
    assert shown, sent.stdout
    expected_id = shown.group(1)  # the key the stack stored it under, as `inbox send` derives it
    assert (expected_id == event_id) is keeps_id, expected_id
    if provider == "adyen":
        assert expected_id == derive_event_id(event_id, "CAPTURE", "true", "")
    listed = json.loads(local_stack.cli("events", "list", "--json", "--provider", provider).stdout)
    rows = [row for row in listed if row["event_id"] == expected_id]
    assert len(rows) == 1, listed
    assert rows[0]["resource_id"] == (resource_id if names_resource else None)
    # And sending the same sample again is absorbed as a duplicate (where the key comes from the signed body, or
    # Mercado Pago's from a request id its sender derives from the body, a second `inbox send` is a new body, dated
    # when it is sent: test_replays.py posts the same delivery again instead)
    if provider not in KEYED_BY_A_BODY_DATED_WHEN_SENT:
        again = local_stack.cli("send", provider, "--event-id", event_id, "--resource-id", resource_id)
        assert '"duplicate":true' in again.stdout, again.stdout


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_delivery_signed_with_another_secret_is_refused(local_stack, provider):
    # Given a sample signed exactly as the CLI would, but with a secret that is not the stack's
    sender = sender_for(provider)
    now = int(time.time())
    body = sender.sample_body(
        event_id=f"evt_forged_{now}",
        resource_id="pay_forged",
        status=SAMPLE_STATUS[provider],
        amount=100,
        occurred_at=now,
    )
    forged = sender.sign(body, FORGER_SECRETS.get(provider, "not-the-configured-secret"), now=now, event_id="evt_x")
    query = "?" + urlencode(forged.query) if forged.query else ""
    # When it is posted to the stack, Then it is refused before anything is stored
    code, answer = post_webhook(f"{local_stack.url}/webhooks/{provider}{query}", forged.body, dict(forged.headers))
    assert (code, json.loads(answer)) == (401, {"error": "invalid signature"})
