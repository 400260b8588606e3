"""Bytecode for the Lambda code (the function assets and the dependency layer), compiled at synth time by the
runtime's own Python, and asset hashes that do not depend on whether it was.

Why ship bytecode: Lambda's ``/var/task`` and ``/opt`` are read-only, so a module with no ``.pyc`` beside it is
compiled from source on every cold start and the result thrown away (``make bench``, section ``cold_start``,
measures what that costs). A ``.pyc`` serves only the interpreter whose tag it carries
(``__pycache__/handler.cpython-313.pyc``): it must be written by CPython of the runtime's minor version itself.
Where the synthesizing machine has none, the code ships as source, and synth says so (``BYTECODE_MISSING``).

Invalidation: unchecked-hash (PEP 552; ``py_compile.PycInvalidationMode.UNCHECKED_HASH``). The default, timestamp
validation, compares the source's modification time with the one recorded in the ``.pyc``; CDK zips every file
with the same fixed date, so in Lambda no timestamp ``.pyc`` would ever match, and each would be compiled again.
Checked-hash would hash every source file at every import. A ``.pyc`` and its source are shipped together in one
immutable asset, so the ``.pyc`` is trusted as it is.

Asset hashes: CDK's default hash is of the staged folder's content, ``.pyc`` included, so a deploy from a machine
without that Python would change every function's code (and a deployed stack would churn between machines). The
hash given to CDK (``asset_hash``) is of the sources alone and the runtime's version: the same on every machine,
changed by a changed source, a changed pin, or another runtime.

Compiled by a fresh interpreter of that version (``compileall``, no site packages, ``PYTHONHASHSEED=0`` so that
frozenset constants come out in the same order on every machine), with the paths the code has in Lambda
(``/var/task/...``, ``/opt/python/...``) recorded instead of the build folder's.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

# Where a Python of the runtime's version is taken from when it is not on PATH: an explicit interpreter first.
BYTECODE_PYTHON_ENV = "INBOX_BYTECODE_PYTHON"
# The folder Python writes bytecode into; never copied from the source tree (that is the developer's Python's).
PYCACHE = "__pycache__"
# PEP 552's flags word (bytes 4-8 of a .pyc): bit 0 hash-based, bit 1 check the source. Unchecked-hash is 0b01.
UNCHECKED_HASH_FLAGS = 0b01

# Run by the runtime's Python: compile argv[1] in place, recording argv[2] as its path in Lambda. Exit 1 when a
# file does not compile (compileall prints which).
_COMPILE = """
import compileall, py_compile, sys
ok = compileall.compile_dir(
    sys.argv[1], quiet=1, stripdir=sys.argv[1], prependdir=sys.argv[2], workers=1,
    invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
)
sys.exit(0 if ok else 1)
"""
_TAG = "import sys; print(sys.implementation.cache_tag)"


class BytecodeError(RuntimeError):
    """The runtime's Python could not compile the staged code (a syntax error for that version): synth stops."""


@dataclass(frozen=True)
class RuntimePython:
    """A CPython interpreter of the runtime's minor version, found on this machine."""

    interpreter: Path
    cache_tag: str  # "cpython-313": the part of a .pyc's name that says which interpreter it serves

    def compile_tree(self, root: Path, deployed_at: str) -> None:
        """Write unchecked-hash bytecode beside every module under `root`; tracebacks name `deployed_at`/..."""
        result = subprocess.run(  # noqa: S603 - an interpreter this module verified, arguments built here
            [str(self.interpreter), "-S", "-s", "-B", "-c", _COMPILE, str(root), deployed_at],
            env={"PYTHONHASHSEED": "0", "PATH": os.environ.get("PATH", "")},
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        if result.returncode != 0:
            raise BytecodeError(
                f"{self.interpreter} could not compile {root}: {(result.stdout + result.stderr).strip()[-3000:]}"
            )


def cache_tag_of(version: str) -> str:
    """``cpython-313`` for ``3.13``."""
    return "cpython-" + version.replace(".", "")


def _candidates(version: str) -> list[Path]:
    """Where an interpreter of `version` may be, most explicit first: $INBOX_BYTECODE_PYTHON, ``python3.13`` on
    PATH (a pyenv shim there fails when that version is not the active one, hence pyenv's own folders too), the
    usual system places, and uv's managed interpreters (found, never downloaded)."""
    found: list[str] = []
    if explicit := os.environ.get(BYTECODE_PYTHON_ENV):
        found.append(explicit)
    if on_path := shutil.which(f"python{version}"):
        found.append(on_path)
    found += [f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"]
    pyenv_root = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    found += sorted(glob.glob(f"{pyenv_root}/versions/{version}.*/bin/python{version}"), reverse=True)
    uv_dir = os.environ.get("UV_PYTHON_INSTALL_DIR") or str(Path.home() / ".local" / "share" / "uv" / "python")
    found += sorted(glob.glob(f"{uv_dir}/cpython-{version}.*/bin/python{version}"), reverse=True)
    return [Path(path) for path in dict.fromkeys(found)]


def _cache_tag(interpreter: Path) -> str | None:
    if not (interpreter.is_file() and os.access(interpreter, os.X_OK)):
        return None
    try:
        result = subprocess.run(  # noqa: S603 - a candidate interpreter, asked its tag and nothing else
            [str(interpreter), "-I", "-S", "-c", _TAG], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.strip() if result.returncode == 0 else None


@functools.lru_cache(maxsize=4)
def find_runtime_python(version: str) -> RuntimePython | None:
    """A CPython `version` interpreter on this machine, or None (then synth says so, once, on stderr).

    An interpreter named by $INBOX_BYTECODE_PYTHON that is not CPython `version` is an error, not a fallback."""
    wanted = cache_tag_of(version)
    for candidate in _candidates(version):
        tag = _cache_tag(candidate)
        if tag == wanted:
            return RuntimePython(candidate, tag)
        if str(candidate) == os.environ.get(BYTECODE_PYTHON_ENV):
            raise BytecodeError(f"${BYTECODE_PYTHON_ENV}={candidate} is not CPython {version} (its tag: {tag})")
    print(BYTECODE_MISSING.format(version=version, env=BYTECODE_PYTHON_ENV), file=sys.stderr, flush=True)
    return None


BYTECODE_MISSING = (
    "Note: no CPython {version} on this machine, so the Lambda code is synthesized WITHOUT bytecode: every cold "
    "start compiles its modules from source (docs/deploy.md, 'Bytecode'). Install python{version} (or set "
    "${env} to one) to ship it. This does not change a deployed stack: the assets' hashes come from the sources."
)


def _source_files(root: Path) -> list[Path]:
    return sorted(path for path in root.rglob("*") if path.is_file() and PYCACHE not in path.relative_to(root).parts)


def source_digest(root: Path) -> str:
    """SHA-256 of every file under `root` but bytecode: each path, then its bytes."""
    digest = hashlib.sha256()
    for path in _source_files(root):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def asset_hash(source: str, version: str) -> str:
    """The hash CDK is given for an asset: of its sources' digest and the runtime's version, not of its bytecode,
    so it is the same whether this machine could compile or not."""
    return hashlib.sha256(f"python{version}\0{source}".encode()).hexdigest()


def compiled_modules(root: Path, cache_tag: str) -> dict[Path, Path]:
    """{module source: its .pyc} for every module under `root` that has bytecode of `cache_tag`."""
    found: dict[Path, Path] = {}
    for pyc in sorted(root.rglob(f"{PYCACHE}/*.{cache_tag}.pyc")):
        found[pyc.parent.parent / f"{pyc.name.removesuffix(f'.{cache_tag}.pyc')}.py"] = pyc
    return found


def has_bytecode(root: Path) -> bool:
    """Whether any bytecode was written under `root`."""
    return any(root.rglob(f"{PYCACHE}/*.pyc"))
