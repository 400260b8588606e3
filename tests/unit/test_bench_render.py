"""The measured figures of README.md and docs/*.md come from bench/results/latest.json (bench/render.py): the pages
agree with the results, and the renderer rewrites a figure, reports a disagreeing one, and refuses a marker that
names nothing."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench import render
from bench.render import FORMULAS, RenderError, Values, pages, render_pages, render_text
from inbox_cli.main import cli

ROOT = Path(__file__).resolve().parents[2]

RESULTS = {
    "end_to_end": {"single": {"events_per_s": 17.74, "post_to_processed": {"p50_ms": 155.8}}},
    "ingest_cost": {"2 KB": {"handler_median_ms": 2.18}},
    "refetch_burst": {"events": 2000, "ok": True},
    "cpu_split": {"ours": 0.007},
    "confirm_burst": {"ratio": None},
}


def marker(spec: str, name: str) -> str:
    return f"<!-- bench {spec} {name} -->"


def a_repository(tmp_path: Path, readme: str, docs: dict[str, str] | None = None, results=RESULTS) -> Path:
    """A repository's pages and results: README.md, docs/*.md, bench/results/latest.json."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "bench" / "results").mkdir(parents=True)
    (tmp_path / "README.md").write_text(readme)
    for name, text in (docs or {}).items():
        (tmp_path / "docs" / name).write_text(text)
    (tmp_path / "bench" / "results" / "latest.json").write_text(json.dumps(results))
    return tmp_path


def run(root: Path, *arguments: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = render.main(list(arguments), root=root)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ------------------------------------------------------------------------------------------ the repository's own
def test_every_marked_figure_of_the_readme_and_docs_agrees_with_the_bench_results():
    # Given README.md and docs/*.md with their marked figures, and the committed bench results
    values = Values(ROOT / "bench" / "results" / "latest.json")
    # When every figure is rendered without writing
    figures = render_pages(pages(ROOT), values, ROOT, write=False)
    # Then each page says what the results say (`.venv/bin/python -m bench render` writes them)
    disagreeing = [
        f"{f.page}:{f.line}: {f.name}: written {f.written}, expected {f.expected}"
        for f in figures
        if f.written != f.expected
    ]
    assert not disagreeing, "figures disagree with bench/results/latest.json:\n" + "\n".join(disagreeing)
    # And the pages that state measured figures mark them
    marked = {figure.page for figure in figures}
    assert {"README.md", "docs/benchmarks.md"} <= marked, marked


def test_the_check_command_passes_on_the_repository_as_written():
    # Given the repository, When the check runs as docs/benchmarks.md shows it
    done = subprocess.run(
        [".venv/bin/python", "-m", "bench", "render", "--check"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    # Then it finds every figure in agreement
    assert done.returncode == 0, done.stdout + done.stderr
    assert ", 0 disagreeing with latest.json" in done.stdout


def test_the_render_command_writes_the_pages_of_its_own_repository_as_written(tmp_path):
    # Given a copy of the repository's pages and bench package, one figure made stale
    for name in ("shared", "infra", "inbox_cli", ".venv"):
        (tmp_path / name).symlink_to(ROOT / name)
    shutil.copytree(ROOT / "bench", tmp_path / "bench", ignore=shutil.ignore_patterns("*.png", "__pycache__"))
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    page = tmp_path / "docs" / "benchmarks.md"
    figure = marker(".1f", "end_to_end.single.events_per_s")
    stale = re.sub(r"[0-9.,]+" + re.escape(figure), lambda _: f"99999.9{figure}", page.read_text(), count=1)
    assert stale != page.read_text()
    page.write_text(stale)
    # When `.venv/bin/python -m bench render` runs there, as written
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run(
        [".venv/bin/python", "-m", "bench", "render"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        env=environment,
    )
    # Then it rewrote the stale figure in the copy, from the copy's results, and the copy now agrees
    assert done.returncode == 0, done.stdout + done.stderr
    single = json.loads((ROOT / "bench" / "results" / "latest.json").read_text())["end_to_end"]["single"]
    written = f"written 99999.9, expected {single['events_per_s']:.1f}"
    assert "docs/benchmarks.md" in done.stdout and written in done.stdout, done.stdout
    assert page.read_text() == (ROOT / "docs" / "benchmarks.md").read_text()


def test_the_cost_figures_are_what_inbox_cost_prints(monkeypatch):
    # Given the default declaration, one source per provider (the run's own, tests/conftest.py)
    monkeypatch.delenv("INBOX_SOURCES", raising=False)
    # When `inbox cost` prices a million webhooks and the renderer computes its cost figures
    printed = json.loads(CliRunner().invoke(cli, ["cost", "--events-per-month", "1000000", "--json"]).output)
    values = Values(ROOT / "bench" / "results" / "latest.json")
    # Then both say the same, forwarding on (the command's scenario) and off
    assert (
        values.value("=cost.variable_per_million_events.all_sources.forwarding_on")
        == printed["variable_per_million_events"]
    )
    assert values.value("=cost.fixed_per_month.all_sources.forwarding_on") == printed["fixed_per_month"]
    off = printed["with_forwarding_off"]
    assert (
        values.value("=cost.variable_per_million_events.all_sources.forwarding_off")
        == off["variable_per_million_events"]
    )
    assert values.value("=cost.fixed_per_month.all_sources.forwarding_off") == off["fixed_per_month"]


# --------------------------------------------------------------------------------------------------- the renderer
def test_a_disagreeing_figure_is_reported_with_its_page_line_and_both_values_and_nothing_is_written(tmp_path, capsys):
    # Given a page whose figure is not the results'
    page = "Throughput\n\n| events/s |\n|---|\n| " + "17.0" + marker(".1f", "end_to_end.single.events_per_s") + " |\n"
    root = a_repository(tmp_path, "# Inbox\n", {"benchmarks.md": page})
    # When the check runs
    code, out, _ = run(root, "--check", capsys=capsys)
    # Then it fails naming the page, the line, what is written and what the results say, and changes nothing
    assert code == 1
    assert "docs/benchmarks.md:5: end_to_end.single.events_per_s: written 17.0, expected 17.7" in out
    assert (root / "docs" / "benchmarks.md").read_text() == page


def test_rendering_rewrites_the_figure_and_a_second_render_changes_nothing(tmp_path, capsys):
    # Given a README with stale figures: a rate, a latency with thousands, a percentage, in a table and in prose
    rate, p50 = (
        marker(".1f", "end_to_end.single.events_per_s"),
        marker(",.0f", "end_to_end.single.post_to_processed.p50_ms"),
    )
    readme = (
        "| rate | p50 |\n|---|---|\n"
        f"| 9.9{rate}/s | 1{p50} ms |\n"
        f"our code: 5%{marker('.1%', 'cpu_split.ours')}; {'1,000'}{marker(',d', 'refetch_burst.events')} events;"
        f" 2.18{marker('.2f', 'ingest_cost.2 KB.handler_median_ms')} ms\n"
    )
    root = a_repository(tmp_path, readme)
    # When it renders
    code, out, _ = run(root, capsys=capsys)
    rendered = (root / "README.md").read_text()
    # Then each figure is the results' in its format, the markers kept, the rest of the text as it was
    assert code == 0 and "4 rewritten" in out
    assert f"| 17.7{rate}/s | 156{p50} ms |" in rendered
    assert (
        f"our code: 0.7%{marker('.1%', 'cpu_split.ours')}; 2,000{marker(',d', 'refetch_burst.events')} events;"
        in rendered
    )
    # And rendering again changes nothing, and the check passes
    assert run(root, capsys=capsys)[0] == 0
    assert (root / "README.md").read_text() == rendered
    code, out, _ = run(root, "--check", capsys=capsys)
    assert code == 0 and "5 figures in 1 pages, 0 disagreeing" in out


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("end_to_end.single.events_per_sec", "no 'events_per_sec' in end_to_end.single"),
        ("end_to_end.storm.events_per_s", "no 'storm' in end_to_end"),
        ("=cost.no_such_figure", "no formula 'cost.no_such_figure'"),
        ("refetch_burst.ok", "not a measured number"),
        ("confirm_burst.ratio", "not a measured number"),
        ("end_to_end.single", "not a measured number"),
    ],
)
def test_a_marker_naming_no_measured_number_is_an_error_not_a_pass(tmp_path, capsys, name, says):
    # Given a page whose marker names a path absent from the results, a formula not registered, or no number
    readme = f"# Inbox\n\nrate 17.7{marker('.1f', name)}/s\n"
    root = a_repository(tmp_path, readme)
    # When the check runs, and when the render runs
    for arguments in (("--check",), ()):
        code, out, err = run(root, *arguments, capsys=capsys)
        # Then it exits 2 naming the page, the line and what is missing, and writes nothing
        assert code == 2, (arguments, out)
        assert f"README.md:3: {name}: " in err and says in err
        assert (root / "README.md").read_text() == readme


def test_a_marker_with_no_figure_before_it_is_an_error(tmp_path, capsys):
    # Given a marker separated from its figure by a space
    root = a_repository(tmp_path, f"rate 17.7 {marker('.1f', 'end_to_end.single.events_per_s')}\n")
    # When the check runs, Then it is an error naming the marker
    code, _, err = run(root, "--check", capsys=capsys)
    assert code == 2 and "README.md:1: no figure right before the marker of end_to_end.single.events_per_s" in err


def test_every_page_s_problems_are_reported_together_and_no_page_is_written(tmp_path, capsys):
    # Given one page with a stale figure and another with an unknown path
    good = f"rate 1.0{marker('.1f', 'end_to_end.single.events_per_s')}\n"
    root = a_repository(
        tmp_path, good, {"a.md": f"x 1{marker('d', 'nowhere')}\n", "b.md": f"y 1{marker('d', 'no.where')}\n"}
    )
    # When it renders, Then both errors are listed and the stale page is left as it was
    code, _, err = run(root, capsys=capsys)
    assert code == 2 and "docs/a.md:1: nowhere" in err and "docs/b.md:1: no.where" in err
    assert (root / "README.md").read_text() == good


def test_the_marker_holds_no_pipe_so_a_table_row_keeps_its_cells():
    # Given a rendered table row with a marked figure, When its cells are split as Markdown splits them
    values = Values(Path("latest.json"), RESULTS)
    text, figures = render_text(f"| a | 1{marker('.1f', 'end_to_end.single.events_per_s')} | b |", values, "x.md")
    # Then it still has its three cells, and the figure was read
    assert text.count("|") == 4 and figures[0].expected == "17.7"


def test_a_format_that_does_not_apply_is_an_error():
    values = Values(Path("latest.json"), RESULTS)
    with pytest.raises(RenderError, match=r"format 'd' does not apply to 17\.74"):
        render_text(f"17{marker('d', 'end_to_end.single.events_per_s')}", values, "x.md")


def test_every_formula_is_a_number_from_the_committed_results():
    values = Values(ROOT / "bench" / "results" / "latest.json")
    for name in FORMULAS:
        assert values.value("=" + name) > 0, name


def test_bench_main_hands_render_its_arguments(monkeypatch):
    # Given `python -m bench render --check`, When bench's main reads it, Then the renderer runs with `--check`
    seen: list[list[str]] = []

    def renderer(argv: list[str]) -> int:
        seen.append(argv)
        return 0

    monkeypatch.setattr(render, "main", renderer)
    from bench.__main__ import main

    assert main(["render", "--check"]) == 0 and seen == [["--check"]]


def test_a_cost_line_formula_sums_the_models_lines_and_an_unknown_line_is_an_error():
    # Given the committed results and the cost model's report for the default declaration, forwarding on
    results = ROOT / "bench" / "results" / "latest.json"
    values = Values(results)
    lines = render.cost_report(results, "all_sources", True)["lines"]
    # When a marker names one line, two lines joined by `;`, or a line the model does not have
    one = values.value("=cost.line.DynamoDB reads")
    both = values.value("=cost.line.EventBridge Pipes; SQS FIFO (send, receive, delete)")
    # Then the first two are the model's figures, and the third is an error naming the line
    assert one == lines["DynamoDB reads"]
    assert both == pytest.approx(lines["EventBridge Pipes"] + lines["SQS FIFO (send, receive, delete)"])
    with pytest.raises(KeyError, match="no cost line 'SQS FIFO'"):
        values.value("=cost.line.EventBridge Pipes; SQS FIFO")


@pytest.mark.parametrize("written", ["<!-- bench .1f -->", "<!-- bench .1f  -->", "<!-- bench  -->"])
def test_a_malformed_marker_is_an_error_not_an_unchecked_figure(tmp_path, capsys, written):
    # Given a figure whose marker lacks its path or its format
    root = a_repository(tmp_path, f"# Inbox\n\nrate 17.0{written}/s\n")
    # When the check runs, Then it is an error naming the line, not a figure left unchecked
    code, _, err = run(root, "--check", capsys=capsys)
    assert code == 2 and "README.md:3: a bench marker not of the form <!-- bench FORMAT PATH -->" in err
