"""What the Lambdas carry stays readable: no module of shared/ is over 600 lines (docs/contributing.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared"
MAX_LINES = 600


def long_modules(root: Path, limit: int = MAX_LINES) -> list[str]:
    """The modules under `root` over `limit` lines, with their length."""
    found = []
    for module in sorted(root.rglob("*.py")):
        lines = len(module.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            found.append(f"{module.relative_to(root.parent)}: {lines} lines")
    return found


def test_no_module_in_shared_is_over_600_lines():
    # Given the code the Lambdas share, When its modules are measured, Then none is over the limit
    assert long_modules(SHARED) == []


@pytest.mark.parametrize("lines, expected", [(MAX_LINES, []), (MAX_LINES + 1, ["pkg/long.py: 601 lines"])])
def test_a_module_over_the_limit_is_named(tmp_path: Path, lines: int, expected: list[str]):
    # Given a package with one module of `lines` lines
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "long.py").write_text("x = 1\n" * lines, encoding="utf-8")
    # When it is measured, Then only a module over the limit is named
    assert long_modules(package) == expected
