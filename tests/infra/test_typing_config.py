"""mypy follows exactly the aws_cdk modules the project's typing needs (pyproject.toml, [tool.mypy] overrides).

aws_cdk's package __init__ imports all of its ~680 modules for type checkers; mypy, following them, spent most of a
cold run there. pyproject.toml skips every aws_cdk module but a list: the modules the project imports, the modules
their classes inherit from (a skipped base would be Any, and a class with an Any base accepts any attribute), and
the modules the core package itself imports for its own signatures (cx_api's CloudAssembly, what `app.synth()`
returns). This test computes that list from the code and the installed aws-cdk-lib and holds pyproject.toml to it,
so a new `from aws_cdk import aws_x` (or an aws-cdk-lib upgrade) cannot leave a module silently Any.

It reads text only (regular expressions over the installed sources; nothing is imported): well under a second.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.infra]

ROOT = Path(__file__).resolve().parents[2]
# What `mypy .` does not check (pyproject's mypy exclude), and what is not the project's code.
NOT_PROJECT = {".venv", ".tools", ".git", "cdk.out", "build", "node_modules", ".local-state"}

# jsii's generated modules import each other as `import aws_cdk.aws_ec2 as _aws_ec2_09840e12` (under TYPE_CHECKING)
# and name their bases through those aliases: `class Function(FunctionBase, _aws_ec2_09840e12.IConnectable, ...):`.
# (The alias's hash suffix tells these from the examples in the docstrings.)
_IMPORT_AS = re.compile(r"^\s*import (aws_cdk[\w.]*) as (_\w+_[0-9a-f]{8})$", re.MULTILINE)
_CLASS_HEADER = re.compile(r"^class \w+\(([^)]*)\):", re.MULTILINE)
_QUALIFIED = re.compile(r"(\w+)\.\w+")


def _package_dir() -> Path:
    spec = importlib.util.find_spec("aws_cdk")  # a top-level find_spec imports nothing
    assert spec is not None and spec.submodule_search_locations, "aws-cdk-lib is not installed"
    return Path(next(iter(spec.submodule_search_locations)))


def _source(package_dir: Path, module: str) -> Path | None:
    path = package_dir.parent.joinpath(*module.split("."))
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _project_files() -> list[Path]:
    """The project's .py files. The excluded folders are pruned before they are entered, never walked: another test
    worker's synth writes and removes staging folders under build/ meanwhile (a walk into one fails when it goes)."""
    files: list[Path] = []
    for folder, subfolders, names in os.walk(ROOT):
        subfolders[:] = [name for name in subfolders if name not in NOT_PROJECT]
        files.extend(Path(folder) / name for name in names if name.endswith(".py"))
    return files


def _project_imports(package_dir: Path) -> set[str]:
    """Every aws_cdk module a project file imports (`import aws_cdk.x`, `from aws_cdk import x`, `from aws_cdk.x
    import Y`)."""
    found: set[str] = set()
    for path in _project_files():
        text = path.read_text()
        if "aws_cdk" not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names if alias.name.split(".")[0] == "aws_cdk")
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module.split(".")[0] != "aws_cdk":
                    continue
                found.add(node.module)
                found.update(
                    f"{node.module}.{alias.name}"
                    for alias in node.names
                    if _source(package_dir, f"{node.module}.{alias.name}") is not None
                )
    return found


def _aliases(text: str) -> dict[str, str]:
    return {alias: module for module, alias in _IMPORT_AS.findall(text)}


def _base_modules(package_dir: Path, module: str) -> set[str]:
    """The aws_cdk modules the classes of `module` inherit from."""
    source = _source(package_dir, module)
    assert source is not None, module
    text = source.read_text()
    aliases = _aliases(text)
    return {
        aliases[name]
        for header in _CLASS_HEADER.findall(text)
        for name in _QUALIFIED.findall(header)
        if name in aliases
    }


def needed_modules() -> list[str]:
    package_dir = _package_dir()
    core = _source(package_dir, "aws_cdk")
    assert core is not None
    wanted = _project_imports(package_dir) | set(_aliases(core.read_text()).values())
    seen: set[str] = set()
    pending = sorted(wanted)
    while pending:
        module = pending.pop()
        if module in seen:
            continue
        seen.add(module)
        pending.extend(_base_modules(package_dir, module) - seen)
    return sorted(seen)


def _overrides() -> list[dict[str, Any]]:
    overrides: list[dict[str, Any]] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["overrides"]
    return overrides


def test_mypy_skips_aws_cdk_but_the_modules_the_project_needs():
    # Given pyproject.toml's mypy overrides
    overrides = _overrides()
    # Then every aws_cdk module is skipped by default
    assert {"module": ["aws_cdk.*"], "follow_imports": "skip"} in overrides
    # And the modules it follows are exactly those the project imports, their bases' modules and the core's own
    [followed] = [o["module"] for o in overrides if o.get("follow_imports") == "normal"]
    needed = needed_modules()
    missing, extra = sorted(set(needed) - set(followed)), sorted(set(followed) - set(needed))
    listing = ",\n".join(f'    "{module}"' for module in needed)
    assert (missing, extra) == ([], []), f"paste into pyproject.toml's follow_imports = 'normal' list:\n{listing}\n"


def test_the_cdk_code_may_not_name_a_skipped_modules_type():
    # Given pyproject.toml's mypy overrides, Then the code that builds the stack is checked with
    # disallow_any_unimported: an annotation naming a skipped CDK module's type is an error, not a silent Any
    [strict] = [o for o in _overrides() if o.get("disallow_any_unimported") is True]
    assert {"infra.*", "app", "tests.infra.*"} <= set(strict["module"])
