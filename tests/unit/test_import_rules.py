"""docs/architecture.md's "Which way imports run", checked on the source with `ast` (infra/assets.py reads the
imports the same way it stages each Lambda's asset), and no import cycle among the local runtime's modules.

Rules, for every import statement anywhere in a module (a function-level or type-only import is a dependency
too):
- `functions/` imports nothing of ours but `shared/`;
- `shared/` imports nothing of ours outside `shared/` (not functions/, infra/, the local runtime, the CLI...);
- `infra/` imports of `shared/` only the definitions package, `shared/definitions/` (the functions' S3 grants
  included), and the provider catalog's entries: each provider's entry module (`shared/providers/<id>/entry.py`) and
  the types they are written in (`shared/providers/entry_types.py`); so do the local stack's modules that emulate
  the deployed resources (LOCAL_RESOURCE_MODULES);
- the definitions package imports only the standard library, its own modules and the entries (the stack, the local
  runtime and every Lambda import it), and the entries only the standard library and their types: importing the
  definitions loads nothing else, which a fresh interpreter proves.

Cycles: only what runs when a module is imported counts (top-level statements, class bodies, decorators; not
function bodies, not `if TYPE_CHECKING:` blocks). A function-level import is how one breaks a cycle on purpose,
so it is allowed; a cycle at import time is what fails (a half-initialized module) depending on which module is
imported first. An edge goes to the module a statement imports: `from p import m` to p.m when that is a module,
to p when m is one of p's names. Importing p.m runs p's `__init__` first, but that is not an edge: a package
whose `__init__` re-exports its modules would otherwise be a cycle with each of them, and Python handles that
one (the package is already in sys.modules while its `__init__` runs).
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from infra.assets import SourceModule, module_facts, package_modules
from shared.definitions import PROVIDERS

REPO_ROOT = Path(__file__).resolve().parents[2]
# Our top-level packages and modules (functions, shared, infra, inbox_local, inbox_cli, tests, bench, app...).
FIRST_PARTY = frozenset(
    {path.parent.name for path in REPO_ROOT.glob("*/__init__.py")} | {path.stem for path in REPO_ROOT.glob("*.py")}
)
DEFINITIONS_MODULE = "shared.definitions"
ENTRY_TYPES_MODULE = "shared.providers.entry_types"
# A provider's catalog entry: `shared.providers.<id>.entry` (an id is lower-case letters and digits).
ENTRY_MODULE = re.compile(r"shared\.providers\.[a-z][a-z0-9]*\.entry")
# What infra/ may import of shared/: the package of plain data the stack, the local stack and the Lambdas share, and
# the provider entries it gathers (with their types).
PURE_SHARED_MODULES = frozenset({DEFINITIONS_MODULE, ENTRY_TYPES_MODULE})
# The local stack's modules that build and run its emulation of what the stack deploys (tables, queues, Pipes,
# stream mappings, TTL, S3 access, secrets, names and environment): from the same definitions as infra/, and nothing
# else of shared/. The rest of the local stack runs the functions' own code, as Lambda does (handlers, drivers).
LOCAL_RESOURCE_MODULES = (
    "inbox_local.api_keys",
    "inbox_local.archive_mapping",
    "inbox_local.config",
    "inbox_local.dev_secrets",
    "inbox_local.expiry",
    "inbox_local.pipe",
    "inbox_local.resources",
    "inbox_local.s3_access",
)


def _imports(modules: Mapping[str, SourceModule]) -> dict[str, set[str]]:
    """Every name each module imports, wherever the statement is (type-only imports included)."""
    return {name: set(module_facts(module, runtime_only=False).imports) for name, module in modules.items()}


def _violations(modules: Mapping[str, SourceModule], allowed: Callable[[str], bool]) -> dict[str, set[str]]:
    """{module: the names of ours it imports that `allowed` refuses}."""
    found = {
        name: {imported for imported in imports if imported.partition(".")[0] in FIRST_PARTY and not allowed(imported)}
        for name, imports in _imports(modules).items()
    }
    return {name: refused for name, refused in found.items() if refused}


def _only_shared(imported: str) -> bool:
    """functions/ and shared/ alike: of ours, only shared/."""
    return imported.partition(".")[0] == "shared"


def _is_or_is_in(imported: str, module: str) -> bool:
    """Whether `imported` is `module` or one of its names (`from module import name`)."""
    return imported == module or imported.startswith(f"{module}.")


def _pure_shared(imported: str) -> bool:
    """The definitions package, the entry types or a provider's entry module (or a name of one of them)."""
    parts = imported.split(".")
    entry = ".".join(parts[:4])
    return any(_is_or_is_in(imported, module) for module in PURE_SHARED_MODULES) or bool(ENTRY_MODULE.fullmatch(entry))


def _infra_rule(imported: str) -> bool:
    top = imported.partition(".")[0]
    return _pure_shared(imported) if top == "shared" else top == "infra"


def _local_resource_rule(imported: str) -> bool:
    """Of shared/, the definitions package alone; of ours, the local stack and infra/ (sources.json's reader)."""
    top = imported.partition(".")[0]
    return _infra_rule(imported) if top == "shared" else top in {"inbox_local", "infra"}


RULES: dict[str, Callable[[str], bool]] = {"functions": _only_shared, "shared": _only_shared, "infra": _infra_rule}


@pytest.mark.parametrize("package", sorted(RULES))
def test_imports_run_the_way_design_md_says(package: str) -> None:
    # Given every module of the package, When its imports are read, Then none reaches where the rules forbid
    modules = package_modules(REPO_ROOT / package)
    assert modules  # the package is where the rule expects it
    assert _violations(modules, RULES[package]) == {}


@pytest.mark.parametrize("name", LOCAL_RESOURCE_MODULES)
def test_the_local_stacks_resources_are_built_from_the_definitions_alone(name: str) -> None:
    # Given a module of the local stack's resource emulation, When its imports are read
    modules = package_modules(REPO_ROOT / "inbox_local")
    # Then of shared/ it imports only the definitions package, as infra/ does
    assert _violations({name: modules[name]}, _local_resource_rule) == {}


def test_a_local_resource_module_importing_lambda_code_is_reported(tmp_path: Path) -> None:
    # Given a local resource module importing the ingest's code, and one importing the definitions' S3 grants
    path = tmp_path / "mod.py"
    path.write_text("from shared.ingest import IngestService\nfrom shared.definitions.s3_grants import Bucket\n")
    modules = {"inbox_local.mod": SourceModule("inbox_local.mod", path, is_package=False)}
    # Then only the first is refused
    assert _violations(modules, _local_resource_rule) == {"inbox_local.mod": {"shared.ingest.IngestService"}}


@pytest.mark.parametrize(
    ("package", "source", "refused"),
    [
        ("functions", "from infra import definitions\n", "infra.definitions"),
        ("functions", "import inbox_local.runtime\n", "inbox_local.runtime"),
        ("functions", "from functions.other.handler import lambda_handler\n", "functions.other.handler.lambda_handler"),
        ("shared", "from inbox_cli.main import main\n", "inbox_cli.main.main"),
        ("shared", "def later():\n    from infra import stack\n", "infra.stack"),
        ("shared", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import functions\n", "functions"),
        ("infra", "from shared.settings import EnvironmentSettings\n", "shared.settings.EnvironmentSettings"),
        ("infra", "from shared.sources import declared_sources\n", "shared.sources.declared_sources"),
        ("infra", "import shared\n", "shared"),
        ("infra", "from shared.providers.stripe.driver import driver\n", "shared.providers.stripe.driver.driver"),
        ("infra", "from shared.providers import base\n", "shared.providers.base"),
        ("infra", "import shared.providers.stripe\n", "shared.providers.stripe"),
        ("infra", "from functions.ingest import handler\n", "functions.ingest.handler"),
    ],
)
def test_a_forbidden_import_is_reported(package: str, source: str, refused: str, tmp_path: Path) -> None:
    # Given a module of the package importing what the rules forbid
    path = tmp_path / package / "mod.py"
    path.parent.mkdir()
    path.write_text(source)
    modules = {f"{package}.mod": SourceModule(f"{package}.mod", path, is_package=False)}
    # Then the rule reports it
    assert _violations(modules, RULES[package]) == {f"{package}.mod": {refused}}


@pytest.mark.parametrize(
    "source",
    [
        "from shared.definitions import INBOX_TABLE\n",
        "from shared import definitions\n",
        "from shared.definitions.s3_grants import Bucket\n",
        "from shared.providers.stripe.entry import ENTRY\n",
        "from shared.providers.mercadopago import entry\n",
        "from shared.providers.entry_types import ProviderEntry\n",
        "import json\n",
    ],
)
def test_infra_may_import_the_definitions_package(source: str, tmp_path: Path) -> None:
    # Given an infra module importing the definitions package (or one of its modules), a provider's entry or the
    # entry types from shared/, or the standard library
    path = tmp_path / "infra" / "mod.py"
    path.parent.mkdir()
    path.write_text(source)
    # Then nothing is reported
    assert _violations({"infra.mod": SourceModule("infra.mod", path, is_package=False)}, _infra_rule) == {}


def _import_time_graph(modules: Mapping[str, SourceModule]) -> dict[str, set[str]]:
    """{module: the modules of `modules` it imports when it is itself imported} (see the module docstring)."""

    def imported_module(name: str) -> str | None:
        parts = name.split(".")
        candidates = (".".join(parts[:length]) for length in range(len(parts), 0, -1))
        return next((candidate for candidate in candidates if candidate in modules), None)

    return {
        name: {
            target
            for imported in module_facts(module, at_import_only=True).imports
            if (target := imported_module(imported)) is not None
        }
        for name, module in modules.items()
    }


def _cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module, or a module importing itself (Tarjan)."""
    index: dict[str, int] = {}
    lowlink: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = lowlink[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                lowlink[node] = min(lowlink[node], lowlink[target])
            elif target in on_stack:
                lowlink[node] = min(lowlink[node], index[target])
        if lowlink[node] == index[node]:
            component: list[str] = []
            while not component or component[-1] != node:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1 or node in graph[node]:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_the_local_runtime_has_no_import_cycle() -> None:
    # Given the local runtime's modules and what each imports when it is imported
    graph = _import_time_graph(package_modules(REPO_ROOT / "inbox_local"))
    assert len(graph) > 10 and any(graph.values())  # the graph was read, not empty
    # Then no group of them imports itself round
    assert _cycles(graph) == []


def test_an_import_cycle_is_found_and_a_function_level_import_breaks_it(tmp_path: Path) -> None:
    # Given a package whose modules import each other round at import time, and one whose third edge is only
    # taken when a function runs, or only by the type checker
    sources = {
        "cyclic/__init__.py": "from cyclic.a import A\n",
        "cyclic/a.py": "from cyclic import b\nA = 1\n",
        "cyclic/b.py": "import cyclic.c\n",
        "cyclic/c.py": "from cyclic.a import A\n",
        "broken/__init__.py": "",
        "broken/a.py": "from broken import b\n",
        "broken/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from broken import a\n",
        "broken/c.py": "import broken.a\ndef later():\n    from broken import c\n",
    }
    for relative, text in sources.items():
        (tmp_path / relative).parent.mkdir(exist_ok=True)
        (tmp_path / relative).write_text(textwrap.dedent(text))
    # When the cycles are looked for
    cyclic = _cycles(_import_time_graph(package_modules(tmp_path / "cyclic")))
    broken = _cycles(_import_time_graph(package_modules(tmp_path / "broken")))
    # Then the import-time cycle is reported (not the package re-exporting its module), the broken one is not
    assert cyclic == [["cyclic.a", "cyclic.b", "cyclic.c"]]
    assert broken == []


def _ours(imported: set[str]) -> set[str]:
    return {name for name in imported if name.partition(".")[0] not in sys.stdlib_module_names}


def test_the_definitions_package_imports_only_the_standard_library_and_the_entries() -> None:
    # Given the imports of every module of the definitions package, wherever they are
    modules = package_modules(REPO_ROOT / "shared" / "definitions", DEFINITIONS_MODULE)
    assert {"shared.definitions", "shared.definitions.catalog", "shared.definitions.sources"} <= set(modules)
    for name, module in modules.items():
        ours = _ours(set(module_facts(module, runtime_only=False).imports))
        # Then each is the standard library's, the package's own, the entry types or the providers' package (whose
        # folders the catalog lists; it imports nothing itself): no boto3, no CDK, nothing else of ours
        allowed = {n for n in ours if n.startswith(f"{DEFINITIONS_MODULE}.") or _pure_shared(n)}
        assert ours - allowed <= {"shared.providers"}, name


def test_every_entry_imports_only_the_standard_library_and_its_types() -> None:
    # Given every provider folder's entry module and the entry types
    modules = package_modules(REPO_ROOT / "shared" / "providers", "shared.providers")
    entries = {name: module for name, module in modules.items() if ENTRY_MODULE.fullmatch(name)}
    assert len(entries) >= 20 and ENTRY_TYPES_MODULE in modules
    for name, module in {**entries, ENTRY_TYPES_MODULE: modules[ENTRY_TYPES_MODULE]}.items():
        imported = _ours(set(module_facts(module, runtime_only=False).imports))
        # Then of ours, each imports the entry types at most
        assert {n for n in imported if not _is_or_is_in(n, ENTRY_TYPES_MODULE)} == set(), name


def _loaded_by(statement: str) -> set[str]:
    """The modules of ours a fresh interpreter has loaded after `statement` (the standard library left out)."""
    script = f"import sys\n{statement}\nprint('\\n'.join(sorted(sys.modules)))"
    output = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout
    return {name for name in output.split() if name.partition(".")[0] in FIRST_PARTY}


@pytest.mark.parametrize("statement", ["import shared.definitions", "import shared.providers.stripe.entry"])
def test_importing_the_definitions_or_an_entry_loads_nothing_else_of_ours(statement: str) -> None:
    # Given a fresh interpreter (as the stack or the local stack starts)  When it imports the definitions package,
    # or a provider's entry first (no import cycle between an entry and the catalog that gathers it)
    loaded = _loaded_by(statement)
    # Then of ours it has loaded the definitions, the entry types, the entries and the packages on their way alone
    providers = {name.split(".")[2] for name in loaded if ENTRY_MODULE.fullmatch(name)}
    on_the_way = {"shared", "shared.providers"} | {f"shared.providers.{provider}" for provider in providers}
    assert {name for name in loaded if not _pure_shared(name)} == on_the_way
    assert "shared.providers.stripe.entry" in loaded
    if statement == "import shared.definitions":
        assert providers == set(PROVIDERS)
