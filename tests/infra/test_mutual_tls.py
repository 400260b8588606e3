"""The mutual-TLS deployment (issue 13, Efí Pix): a source declaring mutual_tls gets an API Gateway custom domain
with a truststore, mapped onto the ingest's HTTP API; its context values are required then, and refused otherwise.

One extra synth (the `mutual` fixture, tests/infra/conftest.py): a plain Stripe source beside an Efí-like source (a
`standard` one with mutual_tls), checked by cdk-nag and cfn-lint like the default deployment. The settings tests
need no synth.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import App, Environment, Stack

from infra.application import build_app
from infra.config import MUTUAL_TLS_CONTEXT, SettingsError, mutual_tls_settings
from shared import definitions

from .conftest import (
    CERTIFICATE_ARN,
    MUTUAL_TLS_SOURCES,
    MUTUAL_TLS_VALUES,
    Synthesized,
    cfn_lint,
    refused_by_rules,
)

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

SOURCES = MUTUAL_TLS_SOURCES
CONTEXT = MUTUAL_TLS_VALUES


# ---------------------------------------------------------------------------------------- the custom domain
def test_the_domain_is_regional_tls_1_2_with_the_operators_truststore_version(mutual: Synthesized) -> None:
    _, domain = mutual.only("AWS::ApiGatewayV2::DomainName")
    properties = domain["Properties"]
    assert properties["DomainName"] == "pix.webhooks.example.com"
    assert properties["DomainNameConfigurations"] == [
        {"CertificateArn": CERTIFICATE_ARN, "EndpointType": "REGIONAL", "SecurityPolicy": "TLS_1_2"}
    ]
    # The truststore is the operator's object, at the version given: a new version is what updates the domain
    assert properties["MutualTlsAuthentication"] == {
        "TruststoreUri": "s3://example-truststores/efi/chain.pem",
        "TruststoreVersion": "3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY",
    }


def test_the_domain_maps_onto_the_ingest_apis_stage_after_it_exists(mutual: Synthesized) -> None:
    _, mapping = mutual.only("AWS::ApiGatewayV2::ApiMapping")
    api_id = mutual.logical_id(mutual.stack.api.http_api)
    stage_id = mutual.logical_id(mutual.stack.api.stage)
    domain_id, _ = mutual.only("AWS::ApiGatewayV2::DomainName")
    assert mapping["Properties"]["ApiId"] == {"Ref": api_id}
    assert mapping["Properties"]["DomainName"] == {"Ref": domain_id}
    assert mapping["Properties"]["Stage"] == "$default"
    assert "ApiMappingKey" not in mapping["Properties"]  # /webhooks/<source> at the domain's root
    assert stage_id in mapping["DependsOn"]


def test_the_default_endpoint_stays_on_for_the_other_sources(mutual: Synthesized) -> None:
    # The plain sources post to the execute-api endpoint: it stays enabled (the ingest refuses mutual_tls sources
    # there, shared/ingest.py), and nothing grants anything on the truststore
    _, api = mutual.only("AWS::ApiGatewayV2::Api")
    assert api["Properties"].get("DisableExecuteApiEndpoint") in (None, False)
    assert "example-truststores" not in json.dumps(mutual.resources("AWS::IAM::Policy"))


def test_the_outputs_give_the_url_the_dns_target_and_the_sources(mutual: Synthesized) -> None:
    outputs = mutual.template_json["Outputs"]
    domain_id, _ = mutual.only("AWS::ApiGatewayV2::DomainName")
    assert outputs[definitions.OUTPUT_MUTUAL_TLS_URL]["Value"] == "https://pix.webhooks.example.com/"
    assert outputs[definitions.OUTPUT_MUTUAL_TLS_DNS_TARGET]["Value"] == {
        "Fn::GetAtt": [domain_id, "RegionalDomainName"]
    }
    assert outputs[definitions.OUTPUT_MUTUAL_TLS_DNS_ZONE]["Value"] == {
        "Fn::GetAtt": [domain_id, "RegionalHostedZoneId"]
    }
    assert json.loads(outputs[definitions.OUTPUT_MUTUAL_TLS_SOURCES]["Value"]) == ["pix"]


def test_the_ingest_learns_which_sources_require_mutual_tls(mutual: Synthesized) -> None:
    variables = mutual.resource(mutual.stack.ingest.function)[1]["Properties"]["Environment"]["Variables"]
    declared = definitions.sources_from_environment({definitions.ENV_SOURCES: variables[definitions.ENV_SOURCES]})
    assert [source.name for source in definitions.mutual_tls_sources(declared)] == ["pix"]


def test_without_a_mutual_tls_source_there_is_no_custom_domain(synthesized: Synthesized) -> None:
    assert synthesized.resources("AWS::ApiGatewayV2::DomainName") == {}
    assert definitions.OUTPUT_MUTUAL_TLS_URL not in synthesized.template_json["Outputs"]


def test_the_mutual_tls_stack_is_cdk_nag_clean(mutual: Synthesized) -> None:
    (report,) = [r for r in mutual.validation_report["pluginReports"] if r["pluginName"] == "AwsSolutions"]
    assert report["violations"] == []
    assert report["conclusion"] == "success"
    # And the domain needed no acknowledgement of its own
    suppressed = [c["constructPath"] for s in report["suppressedViolations"] for c in s["violatingConstructs"]]
    assert not [path for path in suppressed if "/MutualTls/" in path]


def test_the_mutual_tls_stack_passes_cfn_lint(mutual: Synthesized) -> None:
    findings = cfn_lint(mutual.template_path)
    assert findings == [], "\n".join(findings)


# ------------------------------------------------------------------------------------------------ settings
def _node(context: dict[str, str]) -> Any:
    return Stack(App(context=context), "Settings").node


def test_a_mutual_tls_source_without_the_context_values_stops_the_synth_naming_each() -> None:
    # Given sources.json declaring a mutual_tls source, and no mutual-TLS context value
    with pytest.raises(SettingsError) as raised:
        build_app(sources=SOURCES)
    # Then the synth stops before anything is described, naming the source and every missing value
    message = str(raised.value)
    assert "the source(s) pix declare mutual_tls" in message
    for key in MUTUAL_TLS_CONTEXT:
        assert f"context value {key!r} is required" in message


def test_mutual_tls_values_without_a_mutual_tls_source_are_refused() -> None:
    with pytest.raises(SettingsError, match=r"no source in sources\.json declares"):
        mutual_tls_settings(_node(CONTEXT), SOURCES[:1])
    assert mutual_tls_settings(_node({}), SOURCES[:1]) is None


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("inbox_mtls_domain", "Pix_Webhooks", "is not a domain name"),
        ("inbox_mtls_certificate_arn", "arn:aws:iam::123456789012:server-certificate/x", "not an ACM certificate ARN"),
        ("inbox_mtls_truststore_uri", "https://example-truststores.s3.amazonaws.com/chain.pem", "s3://bucket/key"),
        ("inbox_mtls_truststore_uri", "s3://example-truststores", "s3://bucket/key"),
        ("inbox_mtls_truststore_version", "v" * 65, "S3 version id"),
    ],
)
def test_a_malformed_mutual_tls_value_is_refused(key: str, value: str, message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        mutual_tls_settings(_node({**CONTEXT, key: value}), SOURCES)


def test_a_deploy_to_another_region_than_the_certificates_is_refused_before_anything_is_created(
    mutual: Synthesized,
) -> None:
    # Given the environment-agnostic mutual-TLS template (its Region is CloudFormation's to know) and a
    # certificate of sa-east-1
    assert mutual.stack.mutual_tls is not None
    assert mutual.stack.mutual_tls.settings.certificate_region == "sa-east-1"
    # When it is deployed to sa-east-1, the change set is created
    assert refused_by_rules(mutual.template_json, "sa-east-1") == []
    # When it is deployed to us-east-1, the rules refuse the change set, saying why and what to do
    (refusal,) = refused_by_rules(mutual.template_json, "us-east-1")
    assert "certificate (context value inbox_mtls_certificate_arn) is in sa-east-1" in refusal
    assert "Deploy to sa-east-1" in refusal
    # And the rule compares the certificate ARN's own Region with the stack's
    rule = mutual.template_json["Rules"][mutual.stack.get_logical_id(mutual.stack.mutual_tls.certificate_region_rule)]
    assert rule["Assertions"][0]["Assert"] == {"Fn::Equals": ["sa-east-1", {"Ref": "AWS::Region"}]}
    assert CERTIFICATE_ARN.split(":")[3] == "sa-east-1"


def test_without_mutual_tls_there_is_no_certificate_rule(synthesized: Synthesized) -> None:
    assert [name for name in synthesized.template_json["Rules"] if "Certificate" in name] == []


def test_the_certificate_must_be_in_the_stacks_region() -> None:
    # Given a stack deployed to us-east-1 and a certificate of sa-east-1 (mutual TLS needs a regional domain)
    stack = Stack(App(context=CONTEXT), "Regional", env=Environment(region="us-east-1"))
    with pytest.raises(SettingsError, match="must be in the stack's region, us-east-1"):
        mutual_tls_settings(stack.node, SOURCES, region=stack.region)
    # And in its own region it is accepted, its truststore URI split into bucket and key
    settings = mutual_tls_settings(stack.node, SOURCES, region="sa-east-1")
    assert settings is not None
    assert (settings.truststore_bucket, settings.truststore_key) == ("example-truststores", "efi/chain.pem")
