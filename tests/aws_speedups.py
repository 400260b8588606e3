"""Cheaper botocore and moto for the test process: caches of what they rebuild on every session or request, and
nothing that changes what a call does or answers. Installed once by tests/conftest.py, before any client exists.

Measured in CPU seconds on this machine (tests/README.md says how):
- one botocore data loader for every session: the code under test makes a `boto3.session.Session()` per client
  (shared/aws.py) and every test starts with fresh clients, so each client parsed its service model, the endpoint
  rules and the partitions from JSON again. An integration test's moto world (mock_aws + provision):
  0.50 -> 0.19 CPU s.
- moto's request dispatch lists a response class's methods (`inspect.getmembers`) on every request: once per
  class instead.
"""

from __future__ import annotations

import functools
from typing import Any

import botocore.loaders
import botocore.session


class _SearchPaths(list[str]):
    """A loader's search paths, each once: boto3 appends its own data folder for every session it creates."""

    def append(self, path: str) -> None:
        if path not in self:
            super().append(path)


@functools.cache
def _shared_loader(search_path_string: str | None = None) -> botocore.loaders.Loader:
    """What botocore's `create_loader` makes, made once per search path. A session already shares its loader (and
    the models it caches) between all its clients; this shares it between sessions too. The models are read-only
    to botocore, as they are between a session's clients."""
    loader = botocore.loaders.create_loader(search_path_string)
    loader._search_paths = _SearchPaths(loader.search_paths)  # type: ignore[attr-defined]  # boto3 appends to it
    return loader


def _cache_method_names() -> None:
    from moto.core import responses, utils  # moto only once the environment is set

    original = utils.method_names_from_class

    @functools.cache
    def method_names_from_class(clazz: Any) -> list[str]:
        # A response class's methods are its definition's: the patches tests apply replace methods, never add one.
        return original(clazz)

    responses.method_names_from_class = method_names_from_class  # type: ignore[attr-defined]


def install() -> None:
    botocore.session.create_loader = _shared_loader
    _cache_method_names()
