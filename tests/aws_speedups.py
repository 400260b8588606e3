"""Cheaper botocore and moto for the test process: caches of what they rebuild on every session or request, and
nothing that changes what a call does or answers. Installed once by tests/conftest.py, before any client exists.

Measured in CPU seconds on this machine (tests/README.md says how):
- one botocore data loader for every session: the code under test makes a `boto3.session.Session()` per client
  (shared/aws.py) and every test starts with fresh clients, so each client parsed its service model, the endpoint
  rules and the partitions from JSON again. An integration test's moto world (mock_aws + provision):
  0.50 -> 0.19 CPU s.
- moto's request dispatch lists a response class's methods (`inspect.getmembers`) on every request: once per
  class instead.
- moto's Step Functions parses a state machine's definition (ANTLR, ~0.4 CPU s for the replay workflow's) when it is
  created and again for every execution: the parse tree once per definition (the components built anew each time).
Not here but installed beside these (tests/conftest.py installs inbox_local/moto_speedups.py, which the local
stack's embedded AWS runs too): faster implementations that answer the same (inbox_local/moto_query_speedup.py says
why they are the same, and tests/integration/test_moto_query_speedup.py compares the answers): moto's DynamoDB
sorted the whole table for every Query and Scan with a Python call per comparison (it now computes each item's sort
key once), and a string's `cast_value` went through five type tests. With the parse trees, the replay workflow's
1,000-event test (1,000 index queries on a 1,000-item table, six executions): 77 -> 53 CPU s;
tests/integration/test_replay_workflow.py with test_step_functions_limits.py: 186 -> 91 CPU s.
"""

from __future__ import annotations

import functools
from typing import Any

import botocore.loaders
import botocore.session

PARSE_TREES_CACHED = 64  # state machine definitions: a test process creates a few dozen distinct ones


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


def _cache_state_machine_parse_trees() -> None:
    """moto's Step Functions parses a definition (ANTLR: ~0.4 CPU s for the replay workflow's) when the state
    machine is created, and again for each execution it starts. The parse tree, built from the text alone and only
    read by what turns it into the interpreter's components, is kept per definition; the components are built anew
    for each call by moto's own preprocessor, as before (an execution's components are its own)."""
    from moto.stepfunctions.parser.asl.parse import asl_parser

    parser = asl_parser.AmazonStateLanguageParser
    if getattr(parser.parse, "parse_trees", None) is not None:
        return
    parse = parser.parse
    trees: dict[str, Any] = {}

    def parse_with_tree_cache(definition: str) -> tuple[Any, Any]:
        tree = trees.get(definition)
        if tree is None:
            program, tree = parse(definition)  # a definition that does not parse raises, every time, as moto's
            if len(trees) >= PARSE_TREES_CACHED:
                trees.clear()
            trees[definition] = tree
            return program, tree
        return asl_parser.Preprocessor().visit(tree), tree  # type: ignore[attr-defined]

    parse_with_tree_cache.parse_trees = trees  # type: ignore[attr-defined]
    parser.parse = staticmethod(parse_with_tree_cache)  # type: ignore[method-assign]


def install() -> None:
    botocore.session.create_loader = _shared_loader
    _cache_method_names()
    _cache_state_machine_parse_trees()
    # moto's faster Query/Scan sort (inbox_local/moto_query_speedup.py) comes with inbox_local/moto_speedups.py,
    # which tests/conftest.py installs too: the local stack's embedded AWS runs it as well.
