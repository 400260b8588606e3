"""Every command README.md (and the pages it sends readers to for commands) shows is run by a test: their commands
(as written) == the registry's, and each test
the registry names exists (found by parsing its module, without importing it: an infra module would start jsii)."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

from tests.readme_commands import COMMAND_PAGES, ROOT, extract, readme_commands, strip_comment
from tests.readme_registry import AWS_ONLY_MOTO, AWS_ONLY_TEMPLATE, REGISTRY

PLACEHOLDER = re.compile(r"^(?:[A-Z][A-Z_]*|\$\w+|.*\.\.\.)$")


@cache
def module_tree(path: str) -> ast.Module:
    return ast.parse((ROOT / path).read_text())


@cache
def module_source(path: str) -> str:
    return (ROOT / path).read_text()


def test_every_command_the_readme_shows_is_in_the_registry():
    # Given README's commands, When each is looked up, Then the registry lists it with the tests that run it
    missing = sorted({f"{c.page}:{c.line}: {c.text}" for c in readme_commands() if c.text not in REGISTRY})
    assert not missing, "README or a command page shows commands no test is registered to run:\n" + "\n".join(missing)


def test_every_registry_entry_is_still_in_the_readme():
    shown = {command.text for command in readme_commands()}
    stale = sorted(set(REGISTRY) - shown)
    assert not stale, f"registered commands neither README nor a command page shows any more: {stale}"


@pytest.mark.parametrize("command", sorted(REGISTRY))
def test_each_registered_test_exists_and_mentions_the_commands_words(command):
    runs = REGISTRY[command]
    assert runs, command
    for run in runs:
        path, _, name = run.test.partition("::")
        assert name and (ROOT / path).is_file(), f"{command!r}: no test file {path}"
        defined = {node.name for node in module_tree(path).body if isinstance(node, ast.FunctionDef)}
        assert name in defined and name.startswith("test_"), f"{command!r}: {path} has no test function {name}"
        assert run.how.strip(), run
    # The command's literal words (not placeholders, not optional brackets) appear in the modules that run it
    sources = "\n".join(module_source(run.test.partition("::")[0]) for run in runs)
    words = [w.strip("[]") for w in command.split() if w.strip("[]") and not PLACEHOLDER.match(w.strip("[]"))]
    for word in words:
        if word.startswith((".venv/bin/", "export", "INBOX_FORWARD_URL=", "$(")) or word in {"inbox", "make"}:
            continue
        if "=" in word or "'" in word or '"' in word:
            continue
        assert word in sources, f"{command!r}: {word!r} appears in none of {[run.test for run in runs]}"


def test_aws_only_commands_say_so():
    for command, runs in REGISTRY.items():
        if "--stack" in command or "deploy" in command:
            assert all(run.how.startswith((AWS_ONLY_MOTO, AWS_ONLY_TEMPLATE)) for run in runs), (command, runs)


# ----------------------------------------------------------------------------------------- the extraction itself


def test_bash_lines_lose_comments_join_continuations_and_keep_exports_as_environment():
    # Given a README with a bash block, a plain block, a mermaid block and commands in prose and tables
    text = "\n".join(
        [
            "## Try",
            "```bash",
            "make run   # starts it",
            '.venv/bin/inbox send "a # not a comment" \\',
            "    --json",
            "            # a comment-only continuation line",
            "export SECRET=\"x$(echo '#')\"",
            "```",
            "```",
            "make notshown",
            "```",
            "| a | `inbox stats [--json]` |",
            "Run `make synth`, not `inbox_local/x.py` nor `python -X importtime`.",
        ]
    )
    # When its commands are extracted
    commands = extract(text)
    # Then each comes as written, whitespace collapsed, in order, with its kind
    assert [(c.text, c.kind, c.section) for c in commands] == [
        ("make run", "bash", "Try"),
        ('.venv/bin/inbox send "a # not a comment" --json', "bash", "Try"),
        ("export SECRET=\"x$(echo '#')\"", "env", "Try"),
        ("inbox stats [--json]", "inline", "Try"),
        ("make synth", "inline", "Try"),
    ]


def test_a_hash_inside_a_word_is_not_a_comment():
    assert strip_comment("curl $URL/#anchor # comment") == "curl $URL/#anchor "


def test_the_readme_shows_the_walkthrough_block():
    # A sanity check on the real README: its "Try it locally" block is found, starting with `make run`
    block = [c.text for c in readme_commands() if c.section == "Try it locally" and c.kind == "bash"]
    assert block[0] == "make run" and len(block) >= 4, block


def test_readme_is_the_repositorys():
    assert (ROOT / "README.md").is_file() and Path(__file__).resolve().is_relative_to(ROOT)


def test_every_command_page_is_linked_from_the_readme():
    # Given the pages whose commands are registered, When README is read, Then each is one link away from it
    readme = (ROOT / "README.md").read_text()
    for page in COMMAND_PAGES[1:]:
        assert f"]({page.relative_to(ROOT).as_posix()})" in readme, page


def test_commands_carry_the_page_that_shows_them():
    # Given the commands of every page, When each is looked up by its text, Then the first page showing it is named
    pages: dict[str, str] = {}
    for command in readme_commands():
        pages.setdefault(command.text, command.page)
    assert pages["make run"] == "README.md"
    assert pages[".venv/bin/python -m bench end_to_end"] == "docs/benchmarks.md"
    assert pages["inbox receiver --port P [--secret whsec_...] [--json]"] == "docs/cli.md"
