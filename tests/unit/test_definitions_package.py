"""The definitions package (shared/definitions/): one module per concern, every public name of each read as
`definitions.NAME` (the ~120 modules that import it keep one spelling), and no name defined twice."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from shared import definitions

PACKAGE = Path(definitions.__file__).parent
MODULES = sorted(path.stem for path in PACKAGE.glob("*.py") if path.stem != "__init__")
# The modules whose names the package re-exports (`from shared.definitions.X import *`): its concerns, and the types
# a provider's catalog entry is written in (which live beside the entries, shared/providers/entry_types.py). A module
# read by its own name (`shared.definitions.s3_grants`) is not among them.
RE_EXPORTED = sorted(
    node.module
    for node in ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8")).body
    if isinstance(node, ast.ImportFrom) and node.module and [alias.name for alias in node.names] == ["*"]
)
ENTRY_TYPES = "shared.providers.entry_types"
MAX_MODULE_LINES = 600


def _defined(module: str) -> set[str]:
    """The public names a module (dotted name) defines at its top level (not the ones it imports)."""
    path = Path(str(importlib.import_module(module).__file__))
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {target.id for target in node.targets if isinstance(target, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {name for name in names if not name.startswith("_")}


def test_the_package_has_its_concerns() -> None:
    # Given the package's modules, Then each concern has its own, and the package re-exports them and the entry types
    concerns = {"resources", "lifecycle", "downstream", "catalog", "sources"}
    assert set(RE_EXPORTED) == {f"{definitions.__name__}.{concern}" for concern in concerns} | {ENTRY_TYPES}
    assert concerns < set(MODULES)


@pytest.mark.parametrize("module", RE_EXPORTED)
def test_every_public_name_of_a_module_is_the_packages(module: str) -> None:
    # Given a module of the package, When the package is imported
    submodule = importlib.import_module(module)
    # Then every name the module defines is the package's, the very same object
    for name in _defined(module):
        assert getattr(definitions, name) is getattr(submodule, name), name


def test_no_name_is_defined_by_two_modules() -> None:
    # Given what each module defines, Then no two define one name (the package would show only one of them)
    seen: dict[str, str] = {}
    twice = []
    for module in RE_EXPORTED:
        for name in _defined(module):
            if name in seen:
                twice.append(f"{name}: {seen[name]} and {module}")
            seen[name] = module
    assert twice == []
    assert len(seen) > 250  # the names were read


@pytest.mark.parametrize("module", [*MODULES, "__init__"])
def test_every_module_is_short_enough_to_read(module: str) -> None:
    # Given a module of the package, Then it stays under the project's module length
    assert len((PACKAGE / f"{module}.py").read_text(encoding="utf-8").splitlines()) < MAX_MODULE_LINES
