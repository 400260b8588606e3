"""The mutual-TLS front door: an API Gateway custom domain with a truststore, mapped onto the ingest's HTTP API.

Only synthesized when a declared source has ``mutual_tls`` (Efí Pix authenticates its webhooks this way). The
gateway posts to ``https://<inbox_mtls_domain>/webhooks/<source>``; API Gateway completes the TLS handshake only
for a client certificate that chains to the truststore, and writes what it verified into the event
(``requestContext.authentication.clientCert``), where nothing the sender writes can go.

What AWS asks of it (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-mutual-tls.html): a
*regional* custom domain with a minimum TLS version of 1.2, an ACM certificate for the name, and a truststore in
S3. The domain is mapped onto the same ``$default`` stage as the default endpoint, so one throttle, one access
log and one function serve both.

The default ``execute-api`` endpoint stays enabled: AWS advises disabling it so that clients can reach the API
only through the mutual-TLS domain, but that is per API, and the sources without mutual TLS (Stripe, Asaas...)
post to it. What keeps a ``mutual_tls`` source safe on it is the ingest itself: an event without a verified
client certificate (every event of the default endpoint) is refused 403 before any secret is read
(shared/ingest.py, reason ``client_certificate_missing``).

The certificate must be in the stack's Region (a regional domain), and the stack is environment-agnostic: a template
rule compares the certificate ARN's Region with the Region CloudFormation deploys to and refuses the change set
before anything is created, rather than failing at the domain, half-way through a deploy.

The truststore is the operator's S3 object, read by API Gateway with the deploying principal's access when the
domain is created or updated; the stack grants nothing on it, and no function ever reads it.
"""

from __future__ import annotations

from aws_cdk import Aws, CfnRule, CfnRuleAssertion, Fn
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.config import MutualTlsSettings
from infra.constructs.ingest_api import IngestApi


class MutualTlsDomain(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, settings: MutualTlsSettings, api: IngestApi) -> None:
        super().__init__(scope, construct_id)
        self.settings = settings
        self.certificate_region_rule = CfnRule(
            self,
            "CertificateRegion",
            assertions=[
                CfnRuleAssertion(
                    assert_=Fn.condition_equals(settings.certificate_region, Aws.REGION),
                    assert_description=(
                        f"The mutual-TLS certificate (context value inbox_mtls_certificate_arn) is in "
                        f"{settings.certificate_region}: API Gateway's mutual TLS needs a regional custom domain, "
                        f"whose certificate is in the stack's own Region. Deploy to {settings.certificate_region}, "
                        "or request or import the certificate in this Region."
                    ),
                )
            ],
        )
        self.domain = apigwv2.DomainName(
            self,
            "DomainName",
            domain_name=settings.domain,
            certificate=acm.Certificate.from_certificate_arn(self, "Certificate", settings.certificate_arn),
            endpoint_type=apigwv2.EndpointType.REGIONAL,
            security_policy=apigwv2.SecurityPolicy.TLS_1_2,
            mtls=apigwv2.MTLSConfig(
                bucket=s3.Bucket.from_bucket_name(self, "Truststore", settings.truststore_bucket),
                key=settings.truststore_key,
                version=settings.truststore_version,
            ),
        )
        self.mapping = apigwv2.ApiMapping(
            self, "ApiMapping", api=api.http_api, domain_name=self.domain, stage=api.stage
        )
        # The stage is named by a literal ($default), not a reference: without this, CloudFormation could map the
        # domain before the stage exists.
        self.mapping.node.add_dependency(api.stage)

    @property
    def url(self) -> str:
        return f"https://{self.settings.domain}/"

    @property
    def dns_target(self) -> str:
        return self.domain.regional_domain_name

    @property
    def dns_hosted_zone_id(self) -> str:
        return self.domain.regional_hosted_zone_id
