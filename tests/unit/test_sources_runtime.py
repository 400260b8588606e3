"""Sources at run time (docs/sources.md): which source a URL names, who may send to it, and the keys, variables
and secrets that belong to a source."""

from __future__ import annotations

import json

import pytest

from inbox_local.api_keys import api_key_variable
from inbox_local.dev_secrets import DEV_SECRETS, local_signing_secrets, signing_secret_variable
from inbox_local.dev_secrets import dev_signing_secret as dev_secret
from shared.definitions import SourceSpec, parse_sources, source_of
from shared.gateway.breaker import GuardedClient
from shared.gateway.registry import ApiKeySource, base_url_variable, build_gateway_client
from shared.inbox.model import event_key, fifo_group_id, resource_key
from shared.payments.model import Payment
from shared.payments.status import PaymentStatus
from shared.process.messages import ReconcileMessage, parse_message
from shared.providers.standard.driver import decode_secret
from shared.retention import Archiver, archived_body
from shared.sources import Sources, UnknownSource, sender_allowed

BR = SourceSpec("stripe-br", "stripe")
US = SourceSpec("stripe-us", "stripe")


def ranged(*cidrs: str) -> SourceSpec:
    [source] = parse_sources([{"name": "stripe-br", "provider": "stripe", "allowed_ip_ranges": list(cidrs)}])
    return source


class TestSourceResolution:
    def test_a_declared_source_is_found_by_its_name(self) -> None:
        # Given two Stripe sources, When the URL names one, Then that one (with its provider) is the answer
        sources = Sources.of((BR, US))
        assert sources.get("stripe-us") == US
        assert sources.provider_of("stripe-br") == "stripe"

    def test_an_undeclared_name_is_unknown_and_named_in_the_message(self) -> None:
        # Given only stripe-br is declared, When the URL names stripe (the provider itself), Then it is unknown
        with pytest.raises(UnknownSource, match="unknown source 'stripe'"):
            Sources.of((BR,)).get("stripe")

    @pytest.mark.parametrize("name", ["Stripe", "x" * 200, "stripe_br", "1abc", "a/../b", "<script>"])
    def test_a_name_that_cannot_be_a_source_is_refused_without_echoing_it(self, name: str) -> None:
        # Given any text a sender can put in the URL, When it is not a valid source name
        with pytest.raises(UnknownSource) as refused:
            Sources.of((BR,)).get(name)
        # Then the message states the rule and does not repeat the sender's text
        assert "lower-case letters" in str(refused.value)
        assert name not in str(refused.value)


class TestSenderIpRanges:
    def test_a_source_without_ranges_takes_any_sender(self) -> None:
        assert sender_allowed(BR, "198.51.100.7")
        assert sender_allowed(BR, None)

    @pytest.mark.parametrize(
        ("ip", "allowed"),
        [
            ("3.18.12.63", True),  # inside 3.18.12.0/24
            ("3.18.13.1", False),
            ("2600:1f16:ffff::1", True),  # inside the IPv6 range
            ("2600:1f17::1", False),
            ("::ffff:3.18.12.9", True),  # IPv4-mapped IPv6: checked as the IPv4 address it carries
            ("::ffff:9.9.9.9", False),
            ("", False),
            (None, False),
            ("not-an-ip", False),
            ("3.18.12.63, 10.0.0.1", False),  # a list is not an address
        ],
    )
    def test_only_addresses_inside_the_ranges_are_allowed(self, ip: str | None, allowed: bool) -> None:
        # Given a source with an IPv4 and an IPv6 range, When a delivery comes from `ip`, Then it is allowed or not
        source = ranged("3.18.12.0/24", "2600:1f16::/32")
        assert sender_allowed(source, ip) is allowed

    def test_a_single_address_range_matches_only_itself(self) -> None:
        source = ranged("203.0.113.9")
        assert sender_allowed(source, "203.0.113.9")
        assert not sender_allowed(source, "203.0.113.10")


class TestKeysBelongToTheSource:
    def test_a_default_source_keeps_the_keys_of_a_deployment_before_sources(self) -> None:
        # Given the default Stripe source (named after its provider), Then its keys are the provider's as before
        assert event_key("stripe", "evt_1") == "stripe#evt_1"
        assert resource_key("stripe", "pi_1") == "stripe#pi_1"
        payment = _payment(provider="stripe")
        assert payment.source == "stripe"
        assert payment.key == "stripe#pi_1"
        assert payment.to_item()["reconcile_key"] == "stripe#pending"

    def test_two_sources_of_one_provider_never_share_a_key_or_a_group(self) -> None:
        # Given the same event id and payment id on two Stripe accounts
        # Then the dedup keys, payment keys, FIFO groups and reconcile partitions all differ
        assert event_key("stripe-br", "evt_1") != event_key("stripe-us", "evt_1")
        br, us = _payment(source="stripe-br"), _payment(source="stripe-us")
        assert (br.key, us.key) == ("stripe-br#pi_1", "stripe-us#pi_1")
        assert fifo_group_id(resource_key("stripe-br", "pi_1")) != fifo_group_id(resource_key("stripe-us", "pi_1"))
        assert br.to_item()["reconcile_key"] == "stripe-br#pending"
        assert br.to_item()["source"] == "stripe-br" and br.to_item()["provider"] == "stripe"

    def test_a_payment_reads_back_its_source(self) -> None:
        item = _payment(source="stripe-br").to_item()
        assert Payment.from_item(item).source == "stripe-br"

    def test_a_legacy_item_without_source_belongs_to_its_providers_default_source(self) -> None:
        # Given an item written before sources existed (no `source` attribute)
        legacy = {k: v for k, v in _payment(provider="asaas").to_item().items() if k != "source"}
        # Then it reads as the provider's default source, and keeps its key
        assert source_of(legacy) == "asaas"
        assert Payment.from_item(legacy).key == legacy["pk"]


class TestReconcileMessages:
    def test_a_reconciliation_names_its_source_and_provider(self) -> None:
        message = ReconcileMessage("stripe-br", "pi_1", "stripe")
        assert message.key == "stripe-br#pi_1"
        assert parse_message(message.to_body()) == message

    def test_a_message_sent_before_sources_reads_as_the_default_source(self) -> None:
        body = json.dumps({"kind": "reconcile", "provider": "stripe", "resource_id": "pi_1"})
        assert parse_message(body) == ReconcileMessage("stripe", "pi_1", "stripe")

    @pytest.mark.parametrize("data", [{"source": 3, "resource_id": "x"}, {"source": "a"}, {"resource_id": "x"}])
    def test_a_reconciliation_without_a_source_or_resource_is_malformed(self, data: dict[str, object]) -> None:
        with pytest.raises(ValueError, match="reconcile message"):
            parse_message(json.dumps({"kind": "reconcile", **data}))


class TestVariablesAndSecretsPerSource:
    def test_variable_names_use_the_source_suffix(self) -> None:
        assert signing_secret_variable("stripe-br") == "INBOX_SECRET_STRIPE_BR"
        assert api_key_variable("stripe-br") == "INBOX_API_KEY_STRIPE_BR"
        assert base_url_variable("stripe-br") == "INBOX_API_BASE_STRIPE_BR"
        assert signing_secret_variable("stripe") == "INBOX_SECRET_STRIPE"  # the default source: as before

    def test_each_local_source_takes_its_own_signing_secrets_from_its_variables(self) -> None:
        # Given variables for two sources of one provider, and none for a third source
        env = {
            "INBOX_SECRET_STRIPE_BR": "whsec_br",
            "INBOX_SECRET_STRIPE_BR_PREVIOUS": "whsec_br_old",
            "INBOX_SECRET_STRIPE_US": "whsec_us",
        }
        # When the local stack reads each source's pair, Then each gets its own, and the third its development one
        assert local_signing_secrets(BR, env) == ("whsec_br", "whsec_br_old")
        assert local_signing_secrets(US, env) == ("whsec_us", None)
        other = SourceSpec("stripe-eu", "stripe")
        assert local_signing_secrets(other, env) == (dev_secret(other), None)

    def test_each_source_gets_its_own_gateway_client_base_key_and_breaker(self) -> None:
        # Given two Stripe sources with their own API settings
        env = {
            "INBOX_API_BASE_STRIPE_BR": "http://br.example",
            "INBOX_API_BASE_STRIPE_US": "http://us.example",
            "INBOX_API_KEY_SECRET_PREFIX": "stack/gateway-api-key/",
            "CONTROL_TABLE": "control",
        }
        # When their clients are built
        br = build_gateway_client("stripe-br", env, provider="stripe")
        us = build_gateway_client("stripe-us", env, provider="stripe")
        # Then each has its source's base URL, key and breaker item
        assert isinstance(br, GuardedClient) and isinstance(us, GuardedClient)
        assert (br.client._http.base_url, us.client._http.base_url) == ("http://br.example", "http://us.example")  # type: ignore[attr-defined]
        keys = (br.client._api_key, us.client._api_key)  # type: ignore[attr-defined]
        assert all(isinstance(key, ApiKeySource) for key in keys)
        assert [key.source for key in keys] == ["stripe-br", "stripe-us"]  # each reads its own source's secret
        assert br.breaker is not None and us.breaker is not None
        assert (br.breaker.source, us.breaker.source) == ("stripe-br", "stripe-us")

    def test_local_dev_secrets_differ_per_source_and_keep_their_providers_shape(self) -> None:
        # Given two sources of each provider, Then their development secrets differ
        for provider, base in DEV_SECRETS.items():
            default, named = (
                dev_secret(SourceSpec(provider, provider)),
                dev_secret(SourceSpec(f"{provider}-b", provider)),
            )
            assert default == base
            assert named != default
        # And the shapes a driver checks survive: Standard Webhooks' whsec_<base64> still verifies its own signature
        standard = dev_secret(SourceSpec("standard-b", "standard"))
        assert standard.startswith("whsec_")
        assert len(decode_secret(standard)) == 32  # raises on a malformed secret
        adyen = dev_secret(SourceSpec("adyen-b", "adyen"))
        assert bytes.fromhex(adyen)


def _payment(*, source: str = "", provider: str = "stripe") -> Payment:
    return Payment(
        source=source,
        provider=provider,
        resource_id="pi_1",
        status=PaymentStatus.PENDING,
        provider_status="processing",
        amount=100,
        currency="BRL",
        amount_refunded=0,
        version=1,
        transitions=1,
        last_event_at=None,
        last_event_id=None,
        updated_at="2026-12-01T00:00:00.000000Z",
    )


class TestRedactionPerSource:
    def test_a_sources_redact_fields_apply_to_its_items_only_besides_the_deployments(self) -> None:
        # Given the deployment redacts "email" and stripe-br also redacts "cpf"
        archiver = Archiver(
            "archive", redact_fields=frozenset({"email"}), source_redact_fields={"stripe-br": frozenset({"cpf"})}
        )
        body = b'{"email": "a@b.c", "cpf": "123.456.789-00", "amount": 10}'
        # When an item of each source is archived
        br = archived_body(body, archiver.fields_for({"pk": "stripe-br#evt_1", "source": "stripe-br"}))
        us = archived_body(body, archiver.fields_for({"pk": "stripe-us#evt_1", "source": "stripe-us"}))
        legacy = archived_body(body, archiver.fields_for({"pk": "stripe#evt_1", "provider": "stripe"}))
        # Then stripe-br's archive has neither value, the others keep the cpf but never the email
        assert "123.456.789-00" not in br["body"] and "a@b.c" not in br["body"]
        assert "123.456.789-00" in us["body"] and "a@b.c" not in us["body"]
        assert "123.456.789-00" in legacy["body"]


def test_a_deployed_secret_map_writes_the_arns_common_part_once_and_every_reader_expands_it() -> None:
    # Given a map as the stack writes it: the ARNs' common part under "*", each source's secret name after it
    from shared.definitions import SECRET_MAP_ARN_PREFIX_KEY
    from shared.secrets import secret_arns, secret_id

    common = "arn:aws:secretsmanager:sa-east-1:123456789012:secret:"
    written = {SECRET_MAP_ARN_PREFIX_KEY: common, "stripe-br": "SigningStripeBr-Ab12-XyZ123", "asaas": "Asaas-Q-1"}
    # When the functions and the CLI read it, Then each source's id is its full ARN, and "*" is no source
    assert secret_id(written, "", "stripe-br") == f"{common}SigningStripeBr-Ab12-XyZ123"
    assert secret_id(written, "", SECRET_MAP_ARN_PREFIX_KEY) is None
    assert secret_arns(written) == {"stripe-br": f"{common}SigningStripeBr-Ab12-XyZ123", "asaas": f"{common}Asaas-Q-1"}
    # And a map written in full (an older stack's) reads as it is
    assert secret_arns({"stripe": f"{common}Stripe-1"}) == {"stripe": f"{common}Stripe-1"}
