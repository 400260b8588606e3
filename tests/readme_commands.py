"""The commands README.md and the pages it sends readers to for commands show, extracted as written.

Those pages (COMMAND_PAGES) are README.md, docs/getting-started.md, docs/cli.md, docs/benchmarks.md and
docs/contributing.md: every command they show is run by a test (tests/readme_registry.py names it).

- Each line of a ```bash block: a `#` comment (outside quotes) removed, a trailing `\\` joined with the next line,
  blank lines skipped. `export NAME=value` lines are commands of kind "env": the environment of the commands after
  them in the block.
- Outside fenced blocks, each inline code span (it may wrap onto the next line) that starts like a command:
  `inbox ...`, `.venv/bin/...`, `make ...`, `curl ...`, `cdk ...`, `--stack ...`.

Whitespace runs are collapsed to one space, so `evt_...   --json` reads `evt_... --json`. Everything else is kept:
placeholders (`PROVIDER`, `EVENT_ID`, `evt_...`), optional parts (`[--json]`) and literal values stay as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
COMMAND_PAGES = (
    README,
    ROOT / "docs" / "getting-started.md",
    ROOT / "docs" / "cli.md",
    ROOT / "docs" / "benchmarks.md",
    ROOT / "docs" / "contributing.md",
)

INLINE_PREFIXES = ("inbox ", ".venv/bin/", "make ", "curl ", "cdk ", "--stack")
_FENCE = re.compile(r"^\s*```(\w*)")
_CODE_SPAN = re.compile(r"`([^`]+)`")


@dataclass(frozen=True)
class Command:
    text: str  # as written, whitespace collapsed
    line: int  # the line of its page it starts on (1-based)
    section: str  # the nearest heading above it
    kind: str  # "bash" (a line of a bash block), "env" (an export line of one), "inline" (a code span)
    page: str = "README.md"  # the page that shows it, relative to the repository root


def strip_comment(line: str) -> str:
    """`line` without a shell comment: a `#` at the start of a word, outside single and double quotes."""
    quote = ""
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index]
    return line


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _spans(prose: list[tuple[int, str, str]]) -> list[Command]:
    """The command-like code spans of consecutive prose lines (a span may wrap onto the next line)."""
    text = "\n".join(line for _, line, _ in prose)
    starts = [0]
    for _, line, _ in prose:
        starts.append(starts[-1] + len(line) + 1)
    found = []
    for match in _CODE_SPAN.finditer(text):
        span = _collapse(match.group(1))
        if span.startswith(INLINE_PREFIXES):
            index = max(i for i, start in enumerate(starts[:-1]) if start <= match.start())
            number, _, section = prose[index]
            found.append(Command(span, number, section, "inline"))
    return found


def extract(text: str) -> list[Command]:
    commands: list[Command] = []
    section = ""
    fence: str | None = None  # the language of the open fenced block, "" for a plain one
    pending = ""  # a bash line continued with a backslash
    pending_line = 0
    prose: list[tuple[int, str, str]] = []  # (line number, text, section) since the last fence
    for number, raw in enumerate(text.splitlines(), start=1):
        opened = _FENCE.match(raw)
        if opened:
            if fence is None:
                commands += _spans(prose)
                prose = []
            fence = None if fence is not None else opened.group(1)
            pending = ""
            continue
        if fence is None:
            if raw.startswith("#"):
                commands += _spans(prose)
                section = raw.lstrip("#").strip()
                prose = []
            prose.append((number, raw, section))
            continue
        if fence != "bash":
            continue
        line = strip_comment(raw).rstrip()
        if not pending:
            pending_line = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        joined = _collapse(pending + line)
        pending = ""
        if joined:
            kind = "env" if joined.startswith("export ") else "bash"
            commands.append(Command(joined, pending_line, section, kind))
    commands += _spans(prose)
    return commands


def readme_commands() -> list[Command]:
    """Every command README.md and its command pages show, page by page in COMMAND_PAGES' order."""
    commands: list[Command] = []
    for page in COMMAND_PAGES:
        name = page.relative_to(ROOT).as_posix()
        commands += [replace(command, page=name) for command in extract(page.read_text())]
    return commands


def section_commands(section: str) -> list[Command]:
    """The bash-block commands under one heading (of any command page), in order."""
    return [command for command in readme_commands() if command.section == section and command.kind != "inline"]
