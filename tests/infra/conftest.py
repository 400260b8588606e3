"""One synth for the whole infrastructure suite (it takes several seconds): the same app app.py builds, with
cdk.json's feature flags and the cdk-nag plugin, into a temporary cloud assembly."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# Before aws_cdk is imported: jsii reads it when it starts (Node 20 works; the warning is noise).
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from aws_cdk import App
from aws_cdk.assertions import Template

from infra.application import build_app
from infra.stack import WebhookInboxStack


@dataclass(frozen=True)
class Synthesized:
    app: App
    stack: WebhookInboxStack
    assembly_dir: Path
    template: Template
    template_json: dict[str, Any]

    @property
    def validation_report(self) -> dict[str, Any]:
        report: dict[str, Any] = json.loads((self.assembly_dir / "validation-report.json").read_text())
        return report

    def resources(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {
            logical_id: resource
            for logical_id, resource in self.template_json["Resources"].items()
            if resource["Type"] == resource_type
        }

    def only(self, resource_type: str) -> tuple[str, dict[str, Any]]:
        found = self.resources(resource_type)
        assert len(found) == 1, f"expected one {resource_type}, found {sorted(found)}"
        return next(iter(found.items()))


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    outdir = tmp_path_factory.mktemp("cdk.out")
    app, stack = build_app(outdir=str(outdir))
    try:
        assembly = app.synth()
    except RuntimeError as error:  # cdk-nag findings (or another validation) stop the synth: show them
        report = outdir / "validation-report.json"
        details = report.read_text() if report.exists() else ""
        pytest.fail(f"synth failed: {error}\n{details}")
    template_json: dict[str, Any] = json.loads((Path(assembly.directory) / stack.template_file).read_text())
    return Synthesized(
        app=app,
        stack=stack,
        assembly_dir=Path(assembly.directory),
        template=Template.from_json(template_json),
        template_json=template_json,
    )
