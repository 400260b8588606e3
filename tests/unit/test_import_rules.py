"""design.md, "Which way imports run": the definitions module is pure constants (standard library only), and it is
the one module of `shared/` that the stack (`infra/`, `app.py`) may import. Read from the source (ast), so a
violation fails here whether or not the offending line ever runs."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEFINITIONS = REPO / "shared" / "definitions.py"
STACK_SOURCES = sorted([REPO / "app.py", *(REPO / "infra").rglob("*.py")])


def imported_modules(source: str) -> Iterator[str]:
    """Every absolute module an import statement names: `import a.b` -> a.b; `from a import b` -> a.b (b may be
    a module or a name: the caller decides which prefix matters). Relative imports stay inside their package."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def non_stdlib_imports(source: str) -> list[str]:
    return [
        name
        for name in imported_modules(source)
        if name.split(".")[0] != "__future__" and name.split(".")[0] not in sys.stdlib_module_names
    ]


def shared_imports_other_than_definitions(source: str) -> list[str]:
    return [
        name
        for name in imported_modules(source)
        if name.split(".")[0] == "shared" and not name.startswith("shared.definitions")
    ]


def test_the_definitions_module_imports_only_the_standard_library() -> None:
    # Given the definitions module, which the stack, the local runtime and every Lambda import
    source = DEFINITIONS.read_text()
    # Then it imports nothing but the standard library (no boto3, no CDK, nothing of shared/)
    assert non_stdlib_imports(source) == []


@pytest.mark.parametrize("path", STACK_SOURCES, ids=lambda path: str(path.relative_to(REPO)))
def test_the_stack_imports_nothing_of_shared_but_the_definitions(path: Path) -> None:
    # Given a module of the CDK app
    source = path.read_text()
    # Then of shared/ it imports the definitions module alone (it describes resources, it runs no Lambda code)
    assert shared_imports_other_than_definitions(source) == []


@pytest.mark.parametrize(
    ("source", "non_stdlib", "shared_beyond_definitions"),
    [
        ("import json\nfrom typing import Final\n", [], []),
        ("import boto3\n", ["boto3"], []),
        ("from aws_cdk import Stack\n", ["aws_cdk.Stack"], []),
        ("from shared import definitions\n", ["shared.definitions"], []),
        ("from shared.definitions import PROVIDERS\n", ["shared.definitions.PROVIDERS"], []),
        ("from shared import settings\n", ["shared.settings"], ["shared.settings"]),
        ("import shared.providers.registry\n", ["shared.providers.registry"], ["shared.providers.registry"]),
        ("def f():\n    from shared.ingest import handle\n", ["shared.ingest.handle"], ["shared.ingest.handle"]),
    ],
)
def test_the_checks_see_what_they_are_meant_to(
    source: str, non_stdlib: list[str], shared_beyond_definitions: list[str]
) -> None:
    # Given a module's source  When its imports are classified  Then each rule flags exactly what it forbids
    assert non_stdlib_imports(source) == non_stdlib
    assert shared_imports_other_than_definitions(source) == shared_beyond_definitions
