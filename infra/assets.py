"""Lambda code assets, staged at synth time without docker.

A function's asset is its own folder's modules at the root (so the handler is ``handler.lambda_handler``)
plus the ``shared`` package beside them. Third-party code is not bundled: boto3 comes with the Lambda runtime,
everything else (Powertools, pydantic, cryptography, tzdata) with the stack's dependency layer, built from uv.lock
(infra/dependency_layer.py).

The staged folder is rebuilt on every synth so a file deleted from the source never lingers in the asset. The
swap is atomic and skipped when nothing changed, so two synths running at once (parallel test workers) never
see a half-written folder, and CDK's content hash (hence the deployed code) only changes with the code.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
FUNCTIONS_DIR = REPO_ROOT / "functions"
SHARED_DIR = REPO_ROOT / "shared"
ASSETS_DIR = REPO_ROOT / "build" / "assets"

_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo", ".*", "tests", "test_*.py", "*_test.py")


def _copy_function_sources(source: Path, target: Path) -> None:
    """The function folder's modules and subpackages, at the asset root. Its own ``__init__.py`` is left out:
    at the root of the asset the folder is not a package, and an ``__init__.py`` there would be dead weight."""
    for entry in sorted(source.iterdir()):
        if entry.name.startswith((".", "__pycache__")):
            continue
        if entry.is_file() and entry.suffix == ".py" and entry.name != "__init__.py":
            shutil.copy2(entry, target / entry.name)
        elif entry.is_dir() and (entry / "__init__.py").is_file() and entry.name != "tests":
            shutil.copytree(entry, target / entry.name, ignore=_IGNORED)


def _tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def stage_function_asset(name: str, assets_dir: Path = ASSETS_DIR) -> str:
    """Stage ``functions/<name>/`` + ``shared/`` into ``build/assets/<name>/`` and return that folder."""
    source = FUNCTIONS_DIR / name
    if not (source / "handler.py").is_file():
        raise FileNotFoundError(f"{source / 'handler.py'} not found: every function folder needs its handler.py")
    target = assets_dir / name
    assets_dir.mkdir(parents=True, exist_ok=True)

    staging = Path(tempfile.mkdtemp(prefix=f".{name}-staging-", dir=assets_dir))
    try:
        _copy_function_sources(source, staging)
        if (staging / "shared").exists() or (staging / "shared.py").exists():
            raise ValueError(f"{source} must not hold a module named 'shared': it would shadow the shared package")
        shutil.copytree(SHARED_DIR, staging / "shared", ignore=_IGNORED)
        wanted = _tree_digest(staging)
        staging.chmod(0o755)
        for _attempt in range(3):
            if target.is_dir() and _tree_digest(target) == wanted:
                break  # unchanged (or a concurrent synth staged the same): leave the folder alone
            retired = Path(tempfile.mkdtemp(prefix=f".{name}-retired-", dir=assets_dir))
            try:
                if target.exists():
                    os.replace(target, retired / name)
                os.replace(staging, target)
                break
            except OSError:  # a concurrent synth swapped its copy in between: look again
                continue
            finally:
                shutil.rmtree(retired, ignore_errors=True)
        else:
            raise RuntimeError(f"could not stage {target}: it keeps changing under this synth")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return str(target)
