"""Lambda code assets, staged at synth time without docker.

A function's asset is its own folder's modules at the root (so the handler is ``handler.lambda_handler``) plus the
modules of the ``shared`` package that the function can import, beside them in ``shared/``: the ingest carries the
drivers and not the gateway clients, the forwarder the Standard Webhooks signer and not the processor. Third-party
code is not bundled: it comes with the stack's dependency layer, built from uv.lock (infra/dependency_layer.py), the
AWS SDK included.

What a function can import is read from the source with ``ast``, never by importing it (infra does not import
Lambda code: docs/architecture.md):
- every import statement anywhere in a module (a function-level import runs too, only later), ``import a.b``,
  ``from a import b`` (``a.b`` when that is a module), relative imports, ``importlib.import_module("literal")``;
  not the ``if TYPE_CHECKING:`` blocks, which never run;
- every package ``__init__.py`` on the way to a module (Python runs them first);
- what the registries load by name. A module that calls ``import_module`` with a computed name is a *loader*; it
  loads the modules that the code it can read names as data: a string ``"shared.a.b"`` or ``"shared.a.b:attribute"``
  (the catalog's entries, ``"shared.providers.stripe.driver:driver"``, wherever they live), or an f-string whose
  literal start is a package (``f"shared.a.{name}"``: any module of that package). Which of them: those matching the
  loader's own ``LOADS_MODULES`` pattern (``"shared.providers.*.driver"``, the pattern the loader also holds every
  reference to), else those of its own package. That pattern is what keeps the gateway clients (named by the same
  catalog entries, in the same provider folders) out of the ingest, whose only loader is the drivers registry.
  Reading the data, not naming the registries here, keeps this right wherever the catalog lives.
  tests/infra/test_assets.py proves the result: each asset, alone on ``sys.path``, imports its handler and every
  driver and client its registries list.

The staged folder is rebuilt on every synth so a file deleted from the source never lingers in the asset; the
developer's ``__pycache__`` never enters it, and where this machine has the runtime's Python the folder carries
that Python's bytecode instead (infra/bytecode.py), compiled again only when a source changed. The swap is atomic
and skipped when nothing changed, so two synths running at once (parallel test workers) never see a half-written
folder; the hash CDK is given (``function_asset_hash``) is of the sources alone, so the deployed code changes with
the code, not with the machine that synthesized it.
"""

from __future__ import annotations

import ast
import functools
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatch, fnmatchcase
from pathlib import Path
from typing import Final, Literal

from infra.bytecode import PYCACHE, RuntimePython, asset_hash, compiled_modules, find_runtime_python, source_digest
from infra.dependency_layer import PYTHON_VERSION

REPO_ROOT = Path(__file__).resolve().parent.parent
FUNCTIONS_DIR = REPO_ROOT / "functions"
SHARED_DIR = REPO_ROOT / "shared"
ASSETS_DIR = REPO_ROOT / "build" / "assets"
# Where Lambda unpacks a function's code: the paths its bytecode records for tracebacks.
LAMBDA_TASK_ROOT = "/var/task"
# The default compiler: the runtime's Python if this machine has one (None compiles nothing).
Find = Literal["find"]
FIND: Final[Find] = "find"

_IGNORED_PATTERNS = ("__pycache__", "*.pyc", "*.pyo", ".*", "tests", "test_*.py", "*_test.py")
_IGNORED = shutil.ignore_patterns(*_IGNORED_PATTERNS)
# A module named as data: "package.module" or "package.module:attribute" (the registries' and catalog's spelling).
# A loader's module-level string naming, as a glob over dotted names, the modules it imports by name.
LOADS_MODULES = "LOADS_MODULES"
_MODULE_REFERENCE = re.compile(r"(?P<module>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?::[A-Za-z_][\w.]*)?")


@dataclass(frozen=True)
class SourceModule:
    """A module of a package in the source tree: ``shared.gateway`` is ``shared/gateway/__init__.py``."""

    name: str
    path: Path
    is_package: bool


def _ignored(relative: Path) -> bool:
    """Whether a path inside a package is left out of assets (tests, caches, hidden files)."""
    return any(fnmatch(part, pattern) for part in relative.parts for pattern in _IGNORED_PATTERNS)


def package_modules(directory: Path, package: str | None = None) -> dict[str, SourceModule]:
    """Every module of the package in `directory` by dotted name, tests and caches left out."""
    package = package or directory.name
    modules: dict[str, SourceModule] = {}
    for path in sorted(directory.rglob("*.py")):
        relative = path.relative_to(directory)
        if _ignored(relative):
            continue
        parts = [package, *relative.with_suffix("").parts]
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        modules[".".join(parts)] = SourceModule(".".join(parts), path, is_package)
    return modules


@dataclass(frozen=True)
class ModuleFacts:
    """What one module's source says about the modules it may load."""

    # Dotted names it imports; `from a import b` is a.b, the module a.b or the attribute b of module a (the caller
    # knows which names are modules: the longest one that is, is what the statement imports; a before it runs).
    imports: frozenset[str]
    loads_by_name: bool  # it calls import_module/__import__ with a computed name: a loader
    named_modules: frozenset[str]  # "a.b" of every string constant "a.b" or "a.b:attribute"
    named_packages: frozenset[str]  # "a" of every f-string starting "a.{...}": any module of package a
    loads_modules: str | None = None  # its LOADS_MODULES: which of the named modules a loader loads


def _is_import_call(function: ast.expr) -> bool:
    if isinstance(function, ast.Name):
        return function.id in {"import_module", "__import__"}
    return (
        isinstance(function, ast.Attribute)
        and function.attr == "import_module"
        and isinstance(function.value, ast.Name)
        and function.value.id == "importlib"
    )


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _Collector(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool, *, runtime_only: bool, at_import_only: bool) -> None:
        self.package = module.split(".") if is_package else module.split(".")[:-1]
        self.module = module
        self.runtime_only = runtime_only
        self.at_import_only = at_import_only
        self.imports: set[str] = set()
        self.loads_by_name = False
        self.named_modules: set[str] = set()
        self.named_packages: set[str] = set()

    def _absolute(self, name: str | None, level: int) -> str:
        if level == 0:
            return name or ""
        if level - 1 > len(self.package) or not self.package:
            raise ValueError(f"{self.module}: relative import beyond its top-level package")
        base = self.package[: len(self.package) - (level - 1)]
        return ".".join([*base, name] if name else base)

    def visit_Import(self, node: ast.Import) -> None:
        self.imports.update(alias.name for alias in node.names)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = self._absolute(node.module, node.level)
        self.imports.update(base if alias.name == "*" else f"{base}.{alias.name}" for alias in node.names)

    def visit_If(self, node: ast.If) -> None:
        if self.runtime_only and _is_type_checking(node.test):
            for statement in node.orelse:
                self.visit(statement)
            return
        self.generic_visit(node)

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        if not self.at_import_only:
            self.generic_visit(node)
            return
        # The body runs when called, not at import; decorators and default values run at import.
        for decorator in getattr(node, "decorator_list", ()):
            self.visit(decorator)
        self.visit(node.args)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _visit_function

    def visit_Call(self, node: ast.Call) -> None:
        if _is_import_call(node.func) and node.args:
            argument = node.args[0]
            if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                name = argument.value
                level = len(name) - len(name.lstrip("."))
                self.imports.add(self._absolute(name[level:] or None, level))
            else:
                self.loads_by_name = True
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and (match := _MODULE_REFERENCE.fullmatch(node.value)):
            self.named_modules.add(match["module"])

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        first = node.values[0] if node.values else None
        if isinstance(first, ast.Constant) and isinstance(first.value, str) and len(node.values) > 1:
            package, dot, rest = first.value.rpartition(".")
            if dot and not rest and _MODULE_REFERENCE.fullmatch(f"{package}.x"):
                self.named_packages.add(package)
        self.generic_visit(node)


def module_facts(module: SourceModule, *, runtime_only: bool = True, at_import_only: bool = False) -> ModuleFacts:
    """Read one module's imports and the modules it names as data.

    `runtime_only` leaves out the ``if TYPE_CHECKING:`` blocks (they never run); `at_import_only` leaves out
    function bodies, keeping what runs when the module is imported (what an import cycle is made of)."""
    source = module.path.read_text(encoding="utf-8")
    return _source_facts(source, str(module.path), module.name, module.is_package, runtime_only, at_import_only)


@functools.lru_cache(maxsize=2048)
def _source_facts(
    source: str, filename: str, name: str, is_package: bool, runtime_only: bool, at_import_only: bool
) -> ModuleFacts:
    """module_facts of a module's text, remembered by that text: every synth stages each function's asset and
    reads the shared modules it reaches (about 200 parses, 2 of a synth's ~5 CPU s in Python), and a process that
    builds several apps (the infrastructure tests) read the same unchanged files again. Keyed by the content
    itself, an edited module is read afresh."""
    tree = ast.parse(source, filename=filename)
    collector = _Collector(name, is_package, runtime_only=runtime_only, at_import_only=at_import_only)
    collector.visit(tree)
    return ModuleFacts(
        frozenset(collector.imports),
        collector.loads_by_name,
        frozenset(collector.named_modules),
        frozenset(collector.named_packages),
        _loads_modules(tree),
    )


def _loads_modules(tree: ast.Module) -> str | None:
    """The string a module assigns to LOADS_MODULES at its top level (``X: Final = "..."`` or ``X = "..."``)."""
    for statement in tree.body:
        value: ast.expr | None
        if isinstance(statement, ast.Assign):
            targets, value = statement.targets, statement.value
        elif isinstance(statement, ast.AnnAssign):
            targets, value = [statement.target], statement.value
        else:
            continue
        named = any(isinstance(target, ast.Name) and target.id == LOADS_MODULES for target in targets)
        if named and isinstance(value, ast.Constant) and isinstance(value.value, str):
            return value.value
    return None


def lazily_loaded_modules(
    loaders: Iterable[str], facts: Iterable[ModuleFacts], modules: Mapping[str, SourceModule]
) -> set[str]:
    """The modules `loaders` can load by name: those that `facts` (the modules the function can read) name as data,
    as a "module[:attribute]" string or an f-string over a package, and that match the loader's LOADS_MODULES
    pattern (without one: that are of the loader's own package)."""
    facts = list(facts)
    named = {name for fact in facts for name in fact.named_modules if name in modules}
    named |= {
        name for fact in facts for package in fact.named_packages for name in modules if name.startswith(f"{package}.")
    }
    loaded: set[str] = set()
    for loader in loaders:
        package = loader if modules[loader].is_package else loader.rpartition(".")[0]
        pattern = module_facts(modules[loader]).loads_modules or f"{package}.*"
        loaded |= {name for name in named if fnmatchcase(name, pattern)}
    return loaded


def function_modules(function_dir: Path) -> dict[str, SourceModule]:
    """A function folder's own modules, named as in the source tree (``functions.ingest.handler``). Its own
    ``__init__.py`` is not one: the asset leaves it out (see _copy_function_sources)."""
    package = f"{function_dir.parent.name}.{function_dir.name}"
    return {name: module for name, module in package_modules(function_dir, package).items() if name != package}


def _prefixes(dotted: str) -> list[str]:
    """``a``, ``a.b``, ``a.b.c`` for ``a.b.c``: importing a module runs every package on the way first."""
    parts = dotted.split(".")
    return [".".join(parts[:length]) for length in range(1, len(parts) + 1)]


def shared_modules_for(function_dir: Path, shared_dir: Path = SHARED_DIR) -> set[str]:
    """The modules of the shared package (``shared_dir``) that the function in `function_dir` can import: the
    closure of its own modules' imports, with every package on the way and what its loaders load by name (see
    the module docstring)."""
    shared = package_modules(shared_dir)
    facts = {module.name: module_facts(module) for module in function_modules(function_dir).values()}
    wanted: set[str] = set()
    to_resolve = {imported for fact in facts.values() for imported in fact.imports}
    while to_resolve:
        found = {prefix for imported in to_resolve for prefix in _prefixes(imported) if prefix in shared} - wanted
        wanted |= found
        facts |= {module: module_facts(shared[module]) for module in found}
        to_resolve = {imported for module in found for imported in facts[module].imports}
        if not to_resolve:  # every import followed: now what the loaders among them load by name
            loaders = [module for module in wanted if facts[module].loads_by_name]
            to_resolve = lazily_loaded_modules(loaders, facts.values(), shared) - wanted
    return wanted


def _copy_function_sources(source: Path, target: Path) -> None:
    """The function folder's modules and subpackages, at the asset root. Its own ``__init__.py`` is left out:
    at the root of the asset the folder is not a package, and an ``__init__.py`` there would be dead weight."""
    for entry in sorted(source.iterdir()):
        if entry.name.startswith((".", "__pycache__")):
            continue
        if entry.is_file() and entry.suffix == ".py" and entry.name != "__init__.py":
            shutil.copy2(entry, target / entry.name)
        elif entry.is_dir() and (entry / "__init__.py").is_file() and entry.name != "tests":
            shutil.copytree(entry, target / entry.name, ignore=_IGNORED)


def _copy_shared_modules(names: Iterable[str], target: Path, shared_dir: Path = SHARED_DIR) -> None:
    """The chosen modules of ``shared`` under ``target/shared/``, and any data file (not a module) beside a chosen
    package's ``__init__.py``: a package's data travels with the package."""
    shared = package_modules(shared_dir)
    for name in sorted(names):
        module = shared[name]
        relative = module.path.relative_to(shared_dir)
        destination = target / shared_dir.name / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(module.path, destination)
        if module.is_package:
            for entry in sorted(module.path.parent.iterdir()):
                if entry.is_file() and entry.suffix != ".py" and not _ignored(entry.relative_to(shared_dir)):
                    shutil.copy2(entry, destination.parent / entry.name)


def _bytecode_as_wanted(root: Path, python: RuntimePython | None) -> bool:
    """Whether `root` holds `python`'s bytecode for every module and no other (none at all when `python` is None)."""
    pycs = {pyc.relative_to(root) for pyc in root.rglob(f"{PYCACHE}/*.pyc")}
    if python is None:
        return not pycs
    compiled = compiled_modules(root, python.cache_tag)
    return set(compiled.values()) == {root / pyc for pyc in pycs} and set(compiled) == set(root.rglob("*.py"))


def stage_function_asset(name: str, assets_dir: Path = ASSETS_DIR, python: RuntimePython | Find | None = FIND) -> str:
    """Stage ``functions/<name>/`` + the ``shared/`` modules it uses into ``build/assets/<name>/``, compiled by
    `python` (by default the runtime's Python, where this machine has one: infra/bytecode.py); return that
    folder. Its hash for CDK is ``function_asset_hash(folder)``: of the sources, compiled or not."""
    runtime = find_runtime_python(PYTHON_VERSION) if isinstance(python, str) else python
    source = FUNCTIONS_DIR / name
    if not (source / "handler.py").is_file():
        raise FileNotFoundError(f"{source / 'handler.py'} not found: every function folder needs its handler.py")
    target = assets_dir / name
    assets_dir.mkdir(parents=True, exist_ok=True)

    def unchanged(wanted: str) -> bool:
        return target.is_dir() and source_digest(target) == wanted and _bytecode_as_wanted(target, runtime)

    staging = Path(tempfile.mkdtemp(prefix=f".{name}-staging-", dir=assets_dir))
    try:
        _copy_function_sources(source, staging)
        if (staging / "shared").exists() or (staging / "shared.py").exists():
            raise ValueError(f"{source} must not hold a module named 'shared': it would shadow the shared package")
        _copy_shared_modules(shared_modules_for(source), staging)
        wanted = source_digest(staging)
        if runtime is not None and not unchanged(wanted):  # compiled only when the sources changed
            runtime.compile_tree(staging, LAMBDA_TASK_ROOT)
        staging.chmod(0o755)
        for _attempt in range(3):
            if unchanged(wanted):
                break  # unchanged (or a concurrent synth staged the same): leave the folder alone
            retired = Path(tempfile.mkdtemp(prefix=f".{name}-retired-", dir=assets_dir))
            try:
                if target.exists():
                    os.replace(target, retired / name)
                os.replace(staging, target)
                break
            except OSError:  # a concurrent synth swapped its copy in between: look again
                continue
            finally:
                shutil.rmtree(retired, ignore_errors=True)
        else:
            raise RuntimeError(f"could not stage {target}: it keeps changing under this synth")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return str(target)


def function_asset_hash(folder: str | Path) -> str:
    """The hash CDK is given for a staged function asset: of its sources and the runtime's version, never of its
    bytecode (infra/bytecode.py), so a machine that cannot compile does not change a deployed function."""
    return asset_hash(source_digest(Path(folder)), PYTHON_VERSION)
