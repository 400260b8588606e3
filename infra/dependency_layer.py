"""The Lambdas' third-party code, built into the stack's own layer from uv.lock, at synth time, without docker.

Why our own layer and not the public Powertools layer: the versions the tests run (uv.lock) are then, by
construction, the versions the Lambdas run; a Powertools or pydantic bump in uv.lock reaches AWS with the next
deploy, with no layer number to keep in step by hand. It also carries what the public layer does not promise
(``tzdata``, ``cryptography`` at our version), and it deploys in every partition alike: the public layer is
published under one account in the commercial regions and another in China (``arn:aws-cn:...:498634801083:...``),
which a region-templated ARN got wrong.

What goes in: the project's runtime dependencies (pyproject.toml ``[project].dependencies``) at uv.lock's exact
versions, with their dependencies: ``uv export --no-dev --frozen``. The AWS SDK too (boto3, botocore, s3transfer,
urllib3, ...): the runtime carries one, but whichever version AWS last put there, changed under a deployed function
without a deploy; the layer's comes first on the function's search path (``/opt/python`` before the runtime's
libraries: https://docs.aws.amazon.com/lambda/latest/dg/python-package.html), so the SDK the functions run is the
one the tests ran, moved by uv.lock like everything else. The wheels are the ones for the function's platform
(CPython 3.13, manylinux aarch64 up to Amazon Linux 2023's glibc 2.34), installed with ``uv pip install
--target`` from the hashes in uv.lock, binary wheels only, no dependency resolution of its own (``--no-deps``: the
export is the whole, locked closure).

Bytecode: where this machine has CPython of the runtime's version, ``python/`` is compiled by it, unchecked-hash
(infra/bytecode.py: ``/opt`` is read-only in Lambda, so without it every cold start compiles the SDK and the rest
from source). The hash CDK is given is of the installed sources (``SOURCE_DIGEST_FILE``) and the runtime's version,
never of the bytecode: a machine without that Python synthesizes the same layer version.

Staging: ``build/layers/dependencies-<key>/python/`` where the key hashes the requirement list, the target
platform and whether it was compiled. A folder that exists is complete (it is renamed into place only once
installed), so every synth after the first reuses it, offline; two synths racing (parallel test workers) each
build a private copy and the first rename wins, the other's is discarded.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Literal

from infra.bytecode import RuntimePython, asset_hash, find_runtime_python, source_digest

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

# Lambda puts a layer under /opt; for Python runtimes /opt/python is on sys.path.
LAYER_PYTHON_DIR = "python"
LAYER_DEPLOYED_AT = f"/opt/{LAYER_PYTHON_DIR}"
# Beside python/: the digest of its sources (bytecode left out), the layer's asset hash is made of it.
SOURCE_DIGEST_FILE = "source-sha256"
# Beside python/, written last: the requirement list the folder was built from. Its presence marks the folder
# complete. Neither file is uploaded (infra/constructs/python_function.py excludes them).
REQUIREMENTS_FILE = "requirements.txt"
STAGING_FILES = (SOURCE_DIGEST_FILE, REQUIREMENTS_FILE)


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
    return _run([str(_uv()), "export", "--no-dev", "--frozen", "--no-emit-project", "--no-header", "--quiet"])


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


def install(
    requirements: str, target: Path, *, platform: str | None, python_version: str | None, interpreter: str | None = None
) -> None:
    """Install exactly `requirements` (hash-checked wheels, no resolution) into `target`; `platform` and
    `python_version` None mean those of `interpreter`, by default the one running this (the host copies of the
    packaging test and of the cold-start benchmark)."""
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
        if interpreter is not None:
            arguments += ["--python", interpreter]
        _run(arguments)
    # Console scripts (jmespath's jp.py) carry the building machine's interpreter path: no use in Lambda, and
    # they would make the layer's content (hence its asset hash) differ from one machine to the next.
    shutil.rmtree(target / "bin", ignore_errors=True)


def stage_dependency_layer(
    layers_dir: Path = LAYERS_DIR, python: RuntimePython | Literal["find"] | None = "find"
) -> str:
    """Build (once per requirement list) and return the folder whose ``python/`` is the layer's content, compiled
    by `python` (by default the runtime's Python, where this machine has one: infra/bytecode.py)."""
    runtime = find_runtime_python(PYTHON_VERSION) if isinstance(python, str) else python
    requirements = layer_requirements()
    bytecode = runtime.cache_tag if runtime else "source"
    key = hashlib.sha256(f"{UV_PLATFORM}\0{PYTHON_VERSION}\0{bytecode}\0{requirements}".encode()).hexdigest()[:16]
    target = layers_dir / f"dependencies-{key}"
    if (target / REQUIREMENTS_FILE).is_file():
        return str(target)

    layers_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".dependencies-staging-", dir=layers_dir))
    try:
        site = staging / LAYER_PYTHON_DIR
        install(requirements, site, platform=UV_PLATFORM, python_version=PYTHON_VERSION)
        (staging / SOURCE_DIGEST_FILE).write_text(source_digest(site))
        if runtime is not None:
            runtime.compile_tree(site, LAYER_DEPLOYED_AT)
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


def layer_asset_hash(folder: str | Path) -> str:
    """The hash CDK is given for a staged layer: of its installed sources and the runtime's version, never of its
    bytecode (infra/bytecode.py), so a machine that cannot compile does not change a deployed layer."""
    return asset_hash((Path(folder) / SOURCE_DIGEST_FILE).read_text().strip(), PYTHON_VERSION)
