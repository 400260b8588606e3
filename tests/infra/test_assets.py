"""The staged Lambda asset (the function's modules at the root, `shared/` beside them, nothing else) and the staged
dependency layer."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from infra.assets import FUNCTIONS_DIR, SHARED_DIR, stage_function_asset
from infra.dependency_layer import LAYER_PYTHON_DIR, REQUIREMENTS_FILE, layer_requirements, stage_dependency_layer

# One worker runs them all (`--dist loadgroup`): the session fixture synthesizes once, not once per worker.
pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]


def _files(root: Path) -> set[str]:
    return {path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file()}


def test_ingest_asset_layout(tmp_path: Path) -> None:
    asset = Path(stage_function_asset("ingest", assets_dir=tmp_path))
    assert asset == tmp_path / "ingest"
    files = _files(asset)
    assert "handler.py" in files
    assert "__init__.py" not in files  # the asset root is not a package
    assert "shared/__init__.py" in files
    shared_sources = {
        f"shared/{p.relative_to(SHARED_DIR).as_posix()}"
        for p in SHARED_DIR.rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert shared_sources <= files
    assert not [f for f in files if "__pycache__" in f or f.endswith(".pyc")]
    function_modules = {p.name for p in (FUNCTIONS_DIR / "ingest").glob("*.py")} - {"__init__.py"}
    assert function_modules <= files
    # nothing from the rest of the repository (infra, the CLI, the local runtime, tests) rides along
    assert {f.split("/")[0] for f in files} <= function_modules | {"shared"} | {
        p.name for p in (FUNCTIONS_DIR / "ingest").iterdir() if p.is_dir() and p.name != "__pycache__"
    }


def test_restaging_drops_stale_files_and_keeps_an_unchanged_folder(tmp_path: Path) -> None:
    asset = Path(stage_function_asset("ingest", assets_dir=tmp_path))
    (asset / "stale.py").write_text("left over from a deleted module\n")
    again = Path(stage_function_asset("ingest", assets_dir=tmp_path))
    assert again == asset
    assert not (asset / "stale.py").exists()

    inode = asset.stat().st_ino
    stage_function_asset("ingest", assets_dir=tmp_path)
    assert asset.stat().st_ino == inode  # unchanged content: the folder is left alone
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ingest"]  # no staging leftovers


def test_unknown_function_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"handler\.py"):
        stage_function_asset("no-such-function", assets_dir=tmp_path)


def test_dependency_layer_is_staged_once_even_by_concurrent_synths(tmp_path: Path) -> None:
    # Given two synths (parallel test workers) staging the dependency layer into the same folder at once
    with ThreadPoolExecutor(max_workers=2) as pool:
        staged = list(pool.map(lambda _: stage_dependency_layer(layers_dir=tmp_path), range(2)))
    # Then both get the same complete folder, and no staging copy is left behind
    assert staged[0] == staged[1]
    layer = Path(staged[0])
    assert sorted(p.name for p in tmp_path.iterdir()) == [layer.name]
    assert (layer / REQUIREMENTS_FILE).read_text() == layer_requirements()
    assert (layer / LAYER_PYTHON_DIR / "aws_lambda_powertools").is_dir()

    # When a later synth stages it again, Then the folder is reused as it is (offline: nothing is installed)
    inode = (layer / LAYER_PYTHON_DIR).stat().st_ino
    assert stage_dependency_layer(layers_dir=tmp_path) == staged[0]
    assert (layer / LAYER_PYTHON_DIR).stat().st_ino == inode
