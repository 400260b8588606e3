"""Stone (Connect Stone): the Pagar.me driver, client and simulator shape under Stone's id, configured, not copied."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import urllib3

from inbox_local.gateway_simulator import GatewaySimulator, running_simulator
from shared.gateway.http import JsonHttpClient
from shared.payments.status import PaymentStatus as S
from shared.providers._public_keys import StaticKeySource, b64url_encode, parse_jwks
from shared.providers.base import SignatureInvalid, SigningSecrets, WebhookRequest
from shared.providers.pagarme.client import PagarmeClient
from shared.providers.pagarme.driver import PagarmeDriver, jwks_variables
from shared.providers.stone.client import DEFAULT_BASE_URL, StoneClient
from shared.providers.stone.driver import driver
from tests.unit.gateway.fakes import Clock, Sleeps

NOW = 1_696_969_693
# Connect Stone's published `charge.paid` hook (connect-stone.stone.com.br/reference/retorno-webhook), trimmed to
# the charge's own fields (its customer, order, last transaction and POS metadata left out).
CONNECT_STONE_CHARGE_PAID = {
    "id": "hook_j0R8BYh0dS123RQ34",
    "account": {"id": "acc_Wd46j1nsecRFDE12G", "name": "PARTNER TESTE"},
    "type": "charge.paid",
    "created_at": "2023-10-10T20:28:13.6201993Z",
    "data": {
        "id": "ch_NRPl6mouLuZ123FR4",
        "code": "38332544765625",
        "amount": 12500,
        "paid_amount": 12500,
        "status": "paid",
        "currency": "BRL",
        "payment_method": "cash",
        "paid_at": "2023-10-10T20:28:13.5135427Z",
        "created_at": "2023-10-10T20:28:13.4661957Z",
        "updated_at": "2023-10-10T20:28:13.5135427Z",
    },
}


def _rsa_key():
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _jwk(private, kid: str) -> dict[str, str]:
    numbers = private.public_key().public_numbers()
    to_b64 = lambda value: b64url_encode(value.to_bytes((value.bit_length() + 7) // 8, "big"))  # noqa: E731
    return {"kty": "RSA", "use": "sig", "alg": "RS256", "kid": kid, "n": to_b64(numbers.n), "e": to_b64(numbers.e)}


def _signed(private, kid: str, body: bytes) -> WebhookRequest:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    signature = b64url_encode(private.sign(body, padding.PKCS1v15(), hashes.SHA256()))
    header = f"alg=RS256; kid={kid}; signature={signature}"
    return WebhookRequest(body=body, headers={"x-webhook-asymmetric-signature": header})


class TestTheDriverIsPagarmesUnderStonesName:
    def test_name_and_key_variables(self):
        assert isinstance(driver, PagarmeDriver)
        assert driver.name == "stone"
        assert jwks_variables("stone") == ("INBOX_STONE_JWKS", "INBOX_STONE_JWKS_URL")

    def test_the_published_hook_signed_by_the_platform_key_verifies_and_parses(self):
        # Given Connect Stone's published hook, signed RS256 by a key the source trusts
        private = _rsa_key()
        stone = PagarmeDriver(StaticKeySource(parse_jwks({"keys": [_jwk(private, "k1")]})), name="stone")
        body = json.dumps(CONNECT_STONE_CHARGE_PAID).encode()
        request = _signed(private, "k1", body)
        # When verified and parsed  Then it is the charge, deduplicated by the hook id
        stone.verify(request, SigningSecrets("unused"), now=NOW, tolerance_seconds=300)
        event = stone.parse(request)
        assert (event.event_id, event.event_type, event.resource_id) == (
            "hook_j0R8BYh0dS123RQ34",
            "charge.paid",
            "ch_NRPl6mouLuZ123FR4",
        )
        assert (event.provider_status, event.amount, event.currency) == ("paid", 12500, "BRL")
        # and a key the source does not trust is refused
        other = _rsa_key()
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            stone.verify(_signed(other, "k1", body), SigningSecrets("unused"), now=NOW, tolerance_seconds=300)

    def test_the_inline_jwks_is_read_from_stones_variable_not_pagarmes(self, monkeypatch):
        private = _rsa_key()
        monkeypatch.setenv("INBOX_STONE_JWKS", json.dumps({"keys": [_jwk(private, "k2")]}))
        monkeypatch.setenv("INBOX_PAGARME_JWKS", json.dumps({"keys": [_jwk(_rsa_key(), "k2")]}))
        stone, pagarme = PagarmeDriver(name="stone"), PagarmeDriver()
        request = _signed(private, "k2", json.dumps(CONNECT_STONE_CHARGE_PAID).encode())
        stone.verify(request, SigningSecrets("unused"), now=NOW, tolerance_seconds=300)
        with pytest.raises(SignatureInvalid):
            pagarme.verify(request, SigningSecrets("unused"), now=NOW, tolerance_seconds=300)


class TestTheClientIsPagarmesUnderStonesName:
    def test_the_api_is_pagarmes(self):
        assert issubclass(StoneClient, PagarmeClient)
        assert StoneClient.provider == "stone"
        assert DEFAULT_BASE_URL == "https://api.pagar.me"


@pytest.fixture
def sim() -> Iterator[GatewaySimulator]:
    with running_simulator(seed=3, clock=Clock(NOW)) as simulator:
        yield simulator


def _client(sim: GatewaySimulator, provider: str, key: str):
    http = JsonHttpClient(
        sim.url,
        provider=provider,
        pool=urllib3.PoolManager(retries=False),
        sleep=Sleeps(),
        random=lambda: 0.0,
        timeout=urllib3.Timeout(connect=1.0, read=2.0),
    )
    return (StoneClient if provider == "stone" else PagarmeClient)(http, lambda: key)


class TestTheSimulatorTellsTheAccountsApartByKey:
    def test_the_same_path_reads_the_account_whose_key_is_presented(self, sim):
        # Given a Stone charge and a Pagar.me charge with the same id (both live on api.pagar.me)
        sim.create_payment("stone", 700, resource_id="ch_shared00000000001")
        sim.create_payment("pagarme", 900, resource_id="ch_shared00000000001")
        sim.transition("stone", "ch_shared00000000001", S.PAID)
        stone_key, pagarme_key = sim.api_keys["stone"] or "", sim.api_keys["pagarme"] or ""
        assert stone_key != pagarme_key
        # When each client reads it with its own key  Then each reads its own account's charge
        stone = _client(sim, "stone", stone_key).fetch_payment("ch_shared00000000001")
        pagarme = _client(sim, "pagarme", pagarme_key).fetch_payment("ch_shared00000000001")
        assert (stone.status, stone.amount) == (S.PAID, 700)
        assert (pagarme.status, pagarme.amount) == (S.PENDING, 900)

    def test_a_key_of_neither_account_is_refused(self, sim):
        from shared.gateway.base import GatewayRejected

        sim.create_payment("stone", 700, resource_id="ch_onlystone00000001")
        with pytest.raises(GatewayRejected):
            _client(sim, "stone", "sk_wrong").fetch_payment("ch_onlystone00000001")
