"""The Webhook Inbox stack: one construct per concern, wired together with explicit grants."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from infra import definitions
from infra.config import StackSettings
from infra.constructs.inbox_storage import InboxStorage
from infra.constructs.ingest_api import IngestApi
from infra.constructs.ingest_function import IngestFunction
from infra.constructs.signing_secrets import SigningSecrets


class WebhookInboxStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        # Validated first: a bad context value stops the synth before any resource is described.
        settings = StackSettings.from_context(self.node)
        self.settings = settings

        self.storage = InboxStorage(self, "InboxStorage", retention_days=settings.retention_days)
        self.signing_secrets = SigningSecrets(self, "SigningSecrets", stack_name=self.stack_name)
        self.ingest = IngestFunction(
            self, "IngestFunction", storage=self.storage, secrets=self.signing_secrets, settings=settings
        )
        self.api = IngestApi(self, "IngestApi", handler=self.ingest.function)

        outputs = {
            definitions.OUTPUT_API_URL: (self.api.url, "Base URL; gateways POST to <url>webhooks/<provider>"),
            definitions.OUTPUT_INBOX_TABLE: (self.storage.table.table_name, "Inbox DynamoDB table"),
            definitions.OUTPUT_BODY_BUCKET: (self.storage.body_bucket.bucket_name, "Bucket of large bodies"),
            definitions.OUTPUT_SECRET_PREFIX: (
                self.signing_secrets.prefix,
                "Secrets Manager name prefix of the signing secrets (<prefix><provider>)",
            ),
            definitions.OUTPUT_INGEST_FUNCTION: (self.ingest.function.function_name, "Ingest Lambda"),
        }
        for key, (value, description) in outputs.items():
            CfnOutput(self, key, value=value, description=description)
