"""Finding the runtime's Python for the bytecode synth ships (infra/bytecode.py), and saying so when there is none."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from infra import bytecode
from infra.bytecode import BYTECODE_PYTHON_ENV, BytecodeError, cache_tag_of, find_runtime_python

pytestmark = [pytest.mark.infra]

HOST_VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"


@pytest.fixture(autouse=True)
def _fresh_lookup(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(BYTECODE_PYTHON_ENV, raising=False)
    find_runtime_python.cache_clear()
    yield
    find_runtime_python.cache_clear()


def _script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_the_first_interpreter_of_that_version_is_taken_and_a_failing_shim_skipped(monkeypatch, tmp_path):
    # Given a pyenv-like shim that fails (its version is not the active one), another version, then this interpreter
    shim = _script(tmp_path / "shim", "#!/bin/sh\necho 'pyenv: command not found' >&2\nexit 127\n")
    other = _script(tmp_path / "other", "#!/bin/sh\necho cpython-27\n")
    monkeypatch.setattr(bytecode, "_candidates", lambda version: [shim, other, Path(sys.executable)])
    # When the runtime's Python is looked for (this interpreter's version standing in for 3.13)
    found = find_runtime_python(HOST_VERSION)
    # Then this interpreter is found, with the tag its bytecode carries
    assert found is not None
    assert found.interpreter == Path(sys.executable)
    assert found.cache_tag == cache_tag_of(HOST_VERSION) == sys.implementation.cache_tag


def test_no_interpreter_of_that_version_means_source_only_and_synth_says_so(monkeypatch, tmp_path, capsys):
    # Given a machine whose only Python is of another version
    monkeypatch.setattr(bytecode, "_candidates", lambda version: [Path(sys.executable), tmp_path / "missing"])
    # When the runtime's Python is looked for (a version this interpreter is not)
    found = find_runtime_python("3.99")
    # Then there is none, and the synth's output says plainly that the code ships without bytecode, and why
    assert found is None
    note = capsys.readouterr().err
    assert "no CPython 3.99 on this machine" in note
    assert "WITHOUT bytecode" in note and "every cold start compiles" in note
    assert BYTECODE_PYTHON_ENV in note and "does not change a deployed stack" in note


def test_an_explicit_interpreter_of_another_version_is_an_error(monkeypatch):
    # Given $INBOX_BYTECODE_PYTHON naming an interpreter that is not the runtime's version
    monkeypatch.setenv(BYTECODE_PYTHON_ENV, sys.executable)
    # When the runtime's Python is looked for, Then the synth stops and says why, rather than ship nothing silently
    with pytest.raises(BytecodeError, match=BYTECODE_PYTHON_ENV):
        find_runtime_python("3.99")


def test_the_candidates_start_with_the_explicit_interpreter_then_path_then_pyenv(monkeypatch, tmp_path):
    # Given an explicit interpreter, a python3.13 on PATH and one in a pyenv root
    explicit = _script(tmp_path / "explicit", "#!/bin/sh\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    on_path = _script(bin_dir / "python3.13", "#!/bin/sh\n")
    pyenv = tmp_path / "pyenv" / "versions" / "3.13.0" / "bin"
    pyenv.mkdir(parents=True)
    in_pyenv = _script(pyenv / "python3.13", "#!/bin/sh\n")
    monkeypatch.setenv(BYTECODE_PYTHON_ENV, str(explicit))
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "pyenv"))
    # When the places to look are listed, Then they come in that order (the system's own places between)
    candidates = bytecode._candidates("3.13")
    assert candidates[:2] == [explicit, on_path]
    assert candidates.index(in_pyenv) > candidates.index(Path("/usr/bin/python3.13"))
