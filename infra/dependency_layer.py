"""The Lambdas' third-party code, built into the stack's own layer from uv.lock, at synth time, without docker.

Why our own layer and not the public Powertools layer: the versions the tests run (uv.lock) are then, by
construction, the versions the Lambdas run; a Powertools or pydantic bump in uv.lock reaches AWS with the next
deploy, with no layer number to keep in step by hand. It also carries what the public layer does not promise
(``tzdata``, ``cryptography`` at our version), and it deploys in every partition alike: the public layer is
published under one account in the commercial regions and another in China (``arn:aws-cn:...:498634801083:...``),
which a region-templated ARN got wrong.

What goes in: the project's runtime dependencies (pyproject.toml ``[project].dependencies``) at uv.lock's exact
versions, with their dependencies, less boto3 and what only boto3 needs (the runtime ships the SDK): that is
``uv export --no-dev --frozen --prune boto3``. The wheels are the ones for the function's platform (CPython 3.13,
manylinux aarch64 up to Amazon Linux 2023's glibc 2.34), installed with ``uv pip install --target`` from the
hashes in uv.lock, binary wheels only, no dependency resolution of its own (``--no-deps``: the export is the
whole, locked closure).

Staging: ``build/layers/dependencies-<key>/python/`` where the key hashes the requirement list and the target
platform. A folder that exists is complete (it is renamed into place only once installed), so every synth after
the first reuses it, offline; two synths racing (parallel test workers) each build a private copy and the first
rename wins, the other's is discarded.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
LAYERS_DIR = REPO_ROOT / "build" / "layers"
# Where the Makefile's setup puts uv (`make setup`); a fresh clone finds it there too.
UV = REPO_ROOT / ".tools" / "bin" / "uv"

# The function platform. Python 3.13 and arm64 are infra/constructs/python_function.py's RUNTIME and
# ARCHITECTURE; the python3.13 runtime runs on Amazon Linux 2023, whose glibc is 2.34.
PYTHON_VERSION = "3.13"
PYTHON_TAG = "cp313"
GLIBC = (2, 34)
MACHINE = "aarch64"
UV_PLATFORM = f"{MACHINE}-manylinux_{GLIBC[0]}_{GLIBC[1]}"

# In the Lambda runtime already (the SDK for Python); pruned with what only it needs (botocore, s3transfer, ...).
RUNTIME_PROVIDED = ("boto3",)

# Lambda puts a layer under /opt; for Python runtimes /opt/python is on sys.path.
LAYER_PYTHON_DIR = "python"
# Beside python/, written last: the requirement list the folder was built from. Its presence marks the folder
# complete; it is left out of the uploaded layer (infra/constructs/python_function.py excludes it).
REQUIREMENTS_FILE = "requirements.txt"


class LayerBuildError(RuntimeError):
    """The dependency layer could not be built (uv missing, no wheel for the platform, no network on a first
    build): synth stops with the reason."""


def _uv() -> Path:
    if not UV.is_file():
        raise LayerBuildError(f"uv not found at {UV}: run `make setup` first (it installs uv there)")
    return UV


def _run(arguments: list[str]) -> str:
    try:
        result = subprocess.run(  # noqa: S603 - fixed program (the project's uv), arguments built here
            arguments, cwd=REPO_ROOT, capture_output=True, text=True, check=False, timeout=900
        )
    except subprocess.TimeoutExpired as error:
        raise LayerBuildError(f"{arguments[1:3]} timed out") from error
    if result.returncode != 0:
        raise LayerBuildError(f"{' '.join(arguments[1:3])} failed: {result.stderr.strip()[-2000:]}")
    return result.stdout


def layer_requirements() -> str:
    """The layer's requirement list (pinned, with uv.lock's hashes), from uv.lock alone: no network."""
    arguments = [str(_uv()), "export", "--no-dev", "--frozen", "--no-emit-project", "--no-header", "--quiet"]
    for package in RUNTIME_PROVIDED:
        arguments += ["--prune", package]
    return _run(arguments)


def pinned_versions(requirements: str) -> dict[str, str]:
    """{normalized name: version} of a requirement list as `uv export` writes it (`name==version ; marker`)."""
    pins: dict[str, str] = {}
    for raw_line in requirements.splitlines():
        line = raw_line.strip()
        if not line or line.startswith(("#", "--")):
            continue
        requirement = line.split(";")[0].split("\\")[0].strip()
        name, separator, version = requirement.partition("==")
        if separator:
            pins[normalize(name)] = version.strip()
    return pins


def normalize(name: str) -> str:
    """A distribution name as PEP 503 compares them (`pydantic_core` is `pydantic-core`)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def install(requirements: str, target: Path, *, platform: str | None, python_version: str | None) -> None:
    """Install exactly `requirements` (hash-checked wheels, no resolution) into `target`; `platform` and
    `python_version` None mean the interpreter running this (the packaging test's host copy)."""
    with tempfile.TemporaryDirectory(prefix="layer-requirements-") as scratch:
        listing = Path(scratch) / "requirements.txt"
        listing.write_text(requirements)
        arguments = [
            str(_uv()),
            "pip",
            "install",
            "--quiet",
            "--target",
            str(target),
            "--only-binary",
            ":all:",
            "--no-deps",
            "--require-hashes",
            "--link-mode",
            "copy",  # the staged folder owns its files: nothing shared with uv's cache
            "-r",
            str(listing),
        ]
        if platform is not None:
            arguments += ["--python-platform", platform]
        if python_version is not None:
            arguments += ["--python-version", python_version]
        _run(arguments)
    # Console scripts (jmespath's jp.py) carry the building machine's interpreter path: no use in Lambda, and
    # they would make the layer's content (hence its asset hash) differ from one machine to the next.
    shutil.rmtree(target / "bin", ignore_errors=True)


def stage_dependency_layer(layers_dir: Path = LAYERS_DIR) -> str:
    """Build (once per requirement list) and return the folder whose ``python/`` is the layer's content."""
    requirements = layer_requirements()
    key = hashlib.sha256(f"{UV_PLATFORM}\0{PYTHON_VERSION}\0{requirements}".encode()).hexdigest()[:16]
    target = layers_dir / f"dependencies-{key}"
    if (target / REQUIREMENTS_FILE).is_file():
        return str(target)

    layers_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".dependencies-staging-", dir=layers_dir))
    try:
        install(requirements, staging / LAYER_PYTHON_DIR, platform=UV_PLATFORM, python_version=PYTHON_VERSION)
        (staging / REQUIREMENTS_FILE).write_text(requirements)
        staging.chmod(0o755)
        try:
            os.rename(staging, target)  # atomic; refused when a concurrent synth got there first
        except OSError:
            if not (target / REQUIREMENTS_FILE).is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return str(target)
