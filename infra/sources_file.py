"""Reading sources.json: how the CDK app, the local stack and the CLI find a deployment's declared sources.

It reads a file, so it lives here, where the stack is built, and never in what a Lambda carries: the functions
receive the parsed declaration in INBOX_SOURCES (shared.definitions.sources_from_environment reads it), and
tests/infra/test_packaging.py fails when an asset holds this module or reads the file. The rules that parse a
declaration are the definitions package's, one set for the stack, the local stack, the CLI and the functions.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from shared.definitions import (
    ENV_SOURCES,
    ENV_SOURCES_FILE,
    SOURCES_FILE_NAME,
    SourcesInvalid,
    SourceSpec,
    default_sources,
    parse_sources_json,
)

REPOSITORY_ROOT = Path(__file__).resolve().parents[1]


def sources_file_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where sources.json is: INBOX_SOURCES_FILE, else the repository root's."""
    env = os.environ if environ is None else environ
    configured = env.get(ENV_SOURCES_FILE, "").strip()
    return Path(configured) if configured else REPOSITORY_ROOT / SOURCES_FILE_NAME


def load_sources(environ: Mapping[str, str] | None = None) -> tuple[SourceSpec, ...]:
    """The declared sources: INBOX_SOURCES when set (a process the local stack started hands it on), else the
    sources.json file (the stack, the local stack, the CLI), else default_sources(). A file named by
    INBOX_SOURCES_FILE must exist."""
    env = os.environ if environ is None else environ
    handed = env.get(ENV_SOURCES, "").strip()
    if handed:
        return parse_sources_json(handed, where=ENV_SOURCES)
    path = sources_file_path(env)
    if not path.is_file():
        if env.get(ENV_SOURCES_FILE, "").strip():
            raise SourcesInvalid(f"{ENV_SOURCES_FILE}={path}: no such file")
        return default_sources()
    return parse_sources_json(path.read_text(encoding="utf-8"), where=str(path))
