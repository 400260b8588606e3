"""The staged Lambda asset (the function's modules at the root, beside them the modules of `shared/` the function
can import, nothing else), the staged dependency layer, and the bytecode synth compiles into both (the runtime's
Python's, never the developer's, and never part of the asset hash)."""

from __future__ import annotations

import compileall
import json
import subprocess
import sys
import sysconfig
import textwrap
from concurrent.futures import ThreadPoolExecutor
from fnmatch import fnmatch
from pathlib import Path

import pytest

from infra.assets import (
    FUNCTIONS_DIR,
    SHARED_DIR,
    SourceModule,
    _copy_shared_modules,
    function_asset_hash,
    lazily_loaded_modules,
    module_facts,
    package_modules,
    shared_modules_for,
    stage_function_asset,
)
from infra.bytecode import PYCACHE, UNCHECKED_HASH_FLAGS, RuntimePython, compiled_modules
from infra.dependency_layer import (
    LAYER_PYTHON_DIR,
    REQUIREMENTS_FILE,
    layer_asset_hash,
    layer_requirements,
    stage_dependency_layer,
)
from shared.definitions import PROVIDERS

# One worker runs them all (`--dist loadgroup`): the session fixture synthesizes once, not once per worker.
pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

REPO_ROOT = FUNCTIONS_DIR.parent
FUNCTIONS = sorted(path.parent.name for path in FUNCTIONS_DIR.glob("*/handler.py"))

# Of the provider folders, a function that verifies, parses or refetches nothing carries only the catalog's entries
# (every function imports the catalog, which imports them): no driver, client, interface or shared scheme module.
NO_PROVIDER_CODE = (
    "shared/providers/*/driver.py",
    "shared/providers/*/client.py",
    "shared/providers/*/account.py",
    "shared/providers/base.py",
    "shared/providers/registry.py",
    "shared/providers/_[a-z]*",  # the scheme families and helpers, not the package's __init__
)

# What each function's asset must carry, and what it must not (a path ending in "/" is a whole package, a `*` any
# one name: "shared/providers/*/client.py" is every gateway client).
CARRIES: dict[str, tuple[set[str], set[str]]] = {
    "ingest": (
        {"shared/ingest.py", "shared/providers/registry.py", "shared/providers/stripe/driver.py", "shared/secrets.py"},
        # the gateway clients live in the drivers' provider folders, named by the same catalog entries: not here
        {
            "shared/gateway/",
            "shared/providers/*/client.py",
            "shared/process/",
            "shared/forwarding.py",
            "shared/sweeper.py",
            "shared/retention.py",
        },
    ),
    "process": (
        # the driver modules whose event lists the catalog's routes name (Kiwify's sales events)
        {
            "shared/process/app.py",
            "shared/gateway/registry.py",
            "shared/providers/stripe/client.py",
            "shared/payments/store.py",
            "shared/providers/kiwify/driver.py",
        },
        {"shared/ingest.py", "shared/forwarding.py", "shared/sweeper.py", "shared/retention.py"},
    ),
    "forwarder": (
        # the forwarder signs Standard Webhooks: it keeps that signer
        {"shared/forwarding.py", "shared/providers/standard/driver.py", "shared/payments/publishing.py"},
        # ... and no other driver: the drivers' registry is not reachable from the signer
        {
            "shared/gateway/",
            "shared/providers/*/client.py",
            "shared/process/",
            "shared/ingest.py",
            "shared/sweeper.py",
            "shared/retention.py",
            "shared/providers/registry.py",
            "shared/providers/stripe/driver.py",
        },
    ),
    "publisher": (
        {"shared/payments/publishing.py", "shared/payments/events.py"},
        {
            "shared/gateway/",
            "shared/process/",
            *NO_PROVIDER_CODE,
            "shared/ingest.py",
            "shared/forwarding.py",
            "shared/sweeper.py",
        },
    ),
    "archiver": (
        # its settings are read by the one settings helper, like every function's
        {"shared/retention.py", "shared/inbox/store.py", "shared/settings.py"},
        {
            "shared/gateway/",
            "shared/process/",
            *NO_PROVIDER_CODE,
            "shared/ingest.py",
            "shared/forwarding.py",
            "shared/sweeper.py",
        },
    ),
    "replay": (
        # a page of events set back to pending through the inbox's store and lifecycle, nothing else
        {"shared/replay.py", "shared/inbox/store.py", "shared/inbox/lifecycle.py", "shared/settings.py"},
        {
            "shared/gateway/",
            "shared/process/",
            *NO_PROVIDER_CODE,
            "shared/payments/",
            "shared/ingest.py",
            "shared/forwarding.py",
            "shared/sweeper.py",
            "shared/retention.py",
        },
    ),
    "sweeper": (
        # the gateway registry is imported inside a function (supported_providers): it still rides along; of the
        # processor it sends to, only the queue messages (not the service that handles them)
        {"shared/sweeper.py", "shared/gateway/registry.py", "shared/process/messages.py"},
        {
            "shared/ingest.py",
            "shared/forwarding.py",
            "shared/process/app.py",
            "shared/process/service.py",
            "shared/retention.py",
        },
    ),
}


def _files(root: Path) -> set[str]:
    return {path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file()}


def _write(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_every_function_has_its_expectations() -> None:
    assert sorted(CARRIES) == FUNCTIONS


@pytest.mark.parametrize("function", FUNCTIONS)
def test_asset_holds_the_function_and_the_shared_modules_it_can_import(function: str, tmp_path: Path) -> None:
    # Given a function's staged asset
    asset = Path(stage_function_asset(function, assets_dir=tmp_path, python=None))
    assert asset == tmp_path / function
    files = _files(asset)
    # Then it holds the function's modules at the root, which is not a package
    assert "handler.py" in files
    assert "__init__.py" not in files
    function_modules = {p.name for p in (FUNCTIONS_DIR / function).glob("*.py")} - {"__init__.py"}
    assert function_modules <= files
    # And exactly the shared modules its imports reach, every package on the way with its __init__.py
    shared = package_modules(SHARED_DIR)
    wanted = {
        f"shared/{shared[name].path.relative_to(SHARED_DIR).as_posix()}"
        for name in shared_modules_for(FUNCTIONS_DIR / function)
    }
    assert {f for f in files if f.startswith("shared/") and f.endswith(".py")} == wanted
    # (and beside a package it carries, that package's data files: shared/inbox's zlib dictionaries)
    data = {f for f in files if f.startswith("shared/") and not f.endswith(".py")}
    assert all(f"{Path(f).parent.as_posix()}/__init__.py" in wanted for f in data), data
    for module in wanted:
        for package in Path(module).parents[:-1]:
            assert f"{package.as_posix()}/__init__.py" in files, module
    # And nothing else (infra, the CLI, the local runtime, tests, caches)
    assert {f.split("/")[0] for f in files} <= function_modules | {"shared"} | {
        p.name for p in (FUNCTIONS_DIR / function).iterdir() if p.is_dir() and p.name != "__pycache__"
    }
    assert not [f for f in files if "__pycache__" in f or f.endswith(".pyc")]


@pytest.mark.parametrize("function", FUNCTIONS)
def test_asset_carries_what_its_function_uses_and_not_the_rest(function: str, tmp_path: Path) -> None:
    # Given a function's staged asset
    files = _files(Path(stage_function_asset(function, assets_dir=tmp_path, python=None)))
    needed, not_needed = CARRIES[function]
    # Then it carries what the function uses (the catalog's entries, which the catalog finds by their folders, with
    # their packages and types, whatever the function), and none of what it does not
    entries = {
        f"shared/providers/{provider}/{module}" for provider in PROVIDERS for module in ("__init__.py", "entry.py")
    }
    assert needed | entries | {"shared/providers/__init__.py", "shared/providers/entry_types.py"} <= files
    assert not {f for f in files for path in not_needed if f == path or f.startswith(path) or fnmatch(f, path)}


# Runs in an interpreter whose only code is the asset (argv[1]) and the venv's third-party libraries (argv[2:]):
# -I -S, so neither the current directory nor the editable install's .pth puts the repository on sys.path. It
# imports the handler, then every driver and gateway client the registries in the asset can load by name.
IMPORT_RUNNER = textwrap.dedent(
    """
    import json, os, sys
    asset = sys.argv[1]
    sys.path[:0] = [asset, *sys.argv[2:]]

    import handler
    lazily_loaded = []
    if os.path.isfile(os.path.join(asset, "shared", "providers", "registry.py")):
        from shared.providers.registry import get_driver, provider_names
        for name in provider_names():
            get_driver(name)
            lazily_loaded.append(f"driver {name}")
    if os.path.isfile(os.path.join(asset, "shared", "gateway", "registry.py")):
        from shared.gateway.registry import client_class, supported_providers
        for provider in supported_providers():
            client_class(provider)
            lazily_loaded.append(f"client {provider}")
    origins = {name: getattr(module, "__file__", None) for name, module in list(sys.modules.items())}
    print(json.dumps({"lazily_loaded": lazily_loaded, "origins": origins}))
    """
)
FIRST_PARTY = {"handler", "shared", "functions", "infra", "inbox_local", "inbox_cli", "tests", "bench"}


@pytest.mark.parametrize("function", FUNCTIONS)
def test_asset_alone_imports_its_handler_and_every_registered_driver_and_client(function: str, tmp_path: Path) -> None:
    # Given a function's staged asset, in an interpreter with only it and the venv's libraries on sys.path
    asset = Path(stage_function_asset(function, assets_dir=tmp_path / "assets", python=None))
    libraries = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    # When it imports the handler and loads everything its registries name
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", IMPORT_RUNNER, str(asset), *libraries],
        env={"AWS_DEFAULT_REGION": "us-east-1", "AWS_LAMBDA_FUNCTION_NAME": function},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    # Then nothing is missing (no ImportError)
    assert result.returncode == 0, result.stderr[-5000:]
    output = json.loads(result.stdout.strip().splitlines()[-1])
    # And every module of ours came from the asset, none from the repository
    ours = {name: origin for name, origin in output["origins"].items() if name.split(".")[0] in FIRST_PARTY}
    assert "handler" in ours
    assert {name: origin for name, origin in ours.items() if not str(origin).startswith(f"{asset}/")} == {}
    assert not [origin for origin in output["origins"].values() if str(origin).startswith(f"{REPO_ROOT}/shared")]
    # And the registries the asset carries did load their drivers and clients (the runner skipped none)
    carried = _files(asset)
    assert ("driver stripe" in output["lazily_loaded"]) is ("shared/providers/registry.py" in carried)
    assert ("client stripe" in output["lazily_loaded"]) is ("shared/gateway/registry.py" in carried)


def test_restaging_drops_stale_files_and_keeps_an_unchanged_folder(tmp_path: Path) -> None:
    asset = Path(stage_function_asset("ingest", assets_dir=tmp_path, python=None))
    (asset / "stale.py").write_text("left over from a deleted module\n")
    again = Path(stage_function_asset("ingest", assets_dir=tmp_path, python=None))
    assert again == asset
    assert not (asset / "stale.py").exists()

    inode = asset.stat().st_ino
    stage_function_asset("ingest", assets_dir=tmp_path, python=None)
    assert asset.stat().st_ino == inode  # unchanged content: the folder is left alone
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ingest"]  # no staging leftovers


def test_unknown_function_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"handler\.py"):
        stage_function_asset("no-such-function", assets_dir=tmp_path)


def test_every_import_form_is_read(tmp_path: Path) -> None:
    # Given a module of a package using each way Python has to import
    _write(
        tmp_path,
        {
            "pkg/sub/mod.py": """
                import json
                import pkg.plain
                from pkg import named
                from pkg.attrs import CONSTANT
                from . import sibling
                from .. import parent_level
                from ..other.deep import thing
                import importlib
                from importlib import import_module

                importlib.import_module("pkg.literal")
                import_module(".relative_literal", __package__)
                __import__("pkg.dunder")
            """
        },
    )
    module = SourceModule("pkg.sub.mod", tmp_path / "pkg/sub/mod.py", is_package=False)
    # When its facts are read, Then every name is absolute; `from a import b` is a.b (a module or an attribute)
    facts = module_facts(module)
    assert facts.imports == {
        "json",
        "pkg.plain",
        "pkg.named",
        "pkg.attrs.CONSTANT",
        "pkg.sub.sibling",
        "pkg.parent_level",
        "pkg.other.deep.thing",
        "pkg.literal",
        "pkg.sub.relative_literal",
        "pkg.dunder",
        "importlib",
        "importlib.import_module",
    }
    assert not facts.loads_by_name  # every name it imports is a literal


def test_type_checking_imports_are_left_out_and_function_bodies_only_when_asked(tmp_path: Path) -> None:
    # Given a module with a type-only import and an import inside a function
    _write(
        tmp_path,
        {
            "pkg/mod.py": """
                from typing import TYPE_CHECKING
                if TYPE_CHECKING:
                    from pkg.types_only import Hint
                else:
                    import pkg.at_run_time
                def later() -> None:
                    from pkg.when_called import helper
            """
        },
    )
    module = SourceModule("pkg.mod", tmp_path / "pkg/mod.py", is_package=False)
    # Then the type-only import never counts (it never runs), the function's import does (it runs when called)
    assert "pkg.types_only.Hint" not in module_facts(module).imports
    assert {"pkg.at_run_time", "pkg.when_called.helper"} <= module_facts(module).imports
    # And looking only at what runs at import (for import cycles), the function body is skipped
    assert "pkg.when_called.helper" not in module_facts(module, at_import_only=True).imports
    assert "pkg.types_only.Hint" in module_facts(module, runtime_only=False).imports


def test_a_relative_import_above_the_top_package_is_refused(tmp_path: Path) -> None:
    _write(tmp_path, {"pkg/mod.py": "from ... import nowhere\n"})
    with pytest.raises(ValueError, match="beyond its top-level package"):
        module_facts(SourceModule("pkg.mod", tmp_path / "pkg/mod.py", is_package=False))


# A catalog shaped as the providers' entries write it: entries naming "module:attribute", the driver and the
# client of a provider side by side in its folder, read by two registries that import by name, each the modules its
# LOADS_MODULES pattern matches.
CATALOG_SHAPED_SHARED = {
    "shared/__init__.py": "",
    "shared/definitions.py": """
        CATALOG = (
            {
                "id": "alpha",
                "driver": "shared.providers.alpha.driver:driver",
                "client": "shared.providers.alpha.client:AlphaClient",
            },
            {"id": "beta", "driver": "shared.providers.beta.driver:driver", "client": None},
        )
    """,
    "shared/providers/__init__.py": "",
    "shared/providers/registry.py": """
        import importlib
        from typing import Final
        from shared import definitions
        LOADS_MODULES: Final = "shared.providers.*.driver"
        def get_driver(provider):
            module, attribute = next(e["driver"] for e in definitions.CATALOG if e["id"] == provider).split(":")
            return getattr(importlib.import_module(module), attribute)
    """,
    "shared/providers/_helpers.py": "",
    "shared/providers/alpha/__init__.py": "",
    "shared/providers/alpha/driver.py": "from shared.providers import _helpers\n",
    "shared/providers/alpha/client.py": "",
    "shared/providers/beta/__init__.py": "",
    "shared/providers/beta/driver.py": "",
    "shared/providers/beta/client.py": "",
    "shared/providers/unlisted/__init__.py": "",
    "shared/providers/unlisted/driver.py": "",
    "shared/gateway/__init__.py": "",
    "shared/gateway/registry.py": """
        import importlib
        from shared import definitions
        LOADS_MODULES = "shared.providers.*.client"
        def client_class(provider):
            module, name = next(e["client"] for e in definitions.CATALOG if e["id"] == provider).split(":")
            return getattr(importlib.import_module(module), name)
    """,
}


def test_registries_load_the_modules_the_catalog_names_that_their_pattern_matches(tmp_path: Path) -> None:
    # Given a shared package whose registries import the modules a catalog names, and two functions
    _write(
        tmp_path,
        {
            **CATALOG_SHAPED_SHARED,
            "functions/receive/handler.py": "from shared.providers.registry import get_driver\n",
            "functions/refetch/handler.py": "from shared.gateway.registry import client_class\n",
        },
    )
    # When the shared modules each function can import are worked out
    receive = shared_modules_for(tmp_path / "functions/receive", tmp_path / "shared")
    refetch = shared_modules_for(tmp_path / "functions/refetch", tmp_path / "shared")
    # Then the drivers registry brings the drivers the catalog names (and what they import, and their folders), not
    # the clients the same catalog names in the same folders, nor a driver no entry names
    assert receive == {
        "shared",
        "shared.definitions",
        "shared.providers",
        "shared.providers.registry",
        "shared.providers.alpha",
        "shared.providers.alpha.driver",
        "shared.providers._helpers",
        "shared.providers.beta",
        "shared.providers.beta.driver",
    }
    # And the gateway registry brings the clients it names, not the drivers, nor a client no entry names
    assert refetch == {
        "shared",
        "shared.definitions",
        "shared.gateway",
        "shared.gateway.registry",
        "shared.providers",
        "shared.providers.alpha",
        "shared.providers.alpha.client",
    }


def test_an_f_string_module_name_loads_any_module_of_its_package(tmp_path: Path) -> None:
    # Given a registry importing f"shared.gateway.{provider}" (today's gateway registry)
    _write(
        tmp_path,
        {
            "shared/__init__.py": "",
            "shared/gateway/__init__.py": "",
            "shared/gateway/registry.py": """
                import importlib
                def client_class(provider):
                    return importlib.import_module(f"shared.gateway.{provider}")
            """,
            "shared/gateway/alpha.py": "",
            "shared/gateway/beta.py": "",
            "shared/other.py": "",
        },
    )
    modules = package_modules(tmp_path / "shared")
    facts = [module_facts(module) for module in modules.values()]
    # Then that loader can load every module of its package, and nothing outside it
    assert lazily_loaded_modules(["shared.gateway.registry"], facts, modules) == {
        "shared.gateway.alpha",
        "shared.gateway.beta",
        "shared.gateway.registry",
    }
    # And no loader, nothing loaded by name
    assert lazily_loaded_modules([], facts, modules) == set()


def test_a_data_file_travels_with_its_package(tmp_path: Path) -> None:
    # Given a shared package holding a data file beside its modules, and another package not chosen
    _write(
        tmp_path,
        {
            "shared/__init__.py": "",
            "shared/keys/__init__.py": "",
            "shared/keys/public.pem": "-----BEGIN PUBLIC KEY-----",
            "shared/keys/.hidden": "",
            "shared/unused/__init__.py": "",
            "shared/unused/data.json": "{}",
        },
    )
    # When the chosen modules are copied into an asset
    _copy_shared_modules({"shared", "shared.keys"}, tmp_path / "asset", tmp_path / "shared")
    # Then the chosen package's data file is there, the rest is not
    assert _files(tmp_path / "asset") == {"shared/__init__.py", "shared/keys/__init__.py", "shared/keys/public.pem"}


def test_dependency_layer_is_staged_once_even_by_concurrent_synths(tmp_path: Path) -> None:
    # Given two synths (parallel test workers) staging the dependency layer into the same folder at once
    with ThreadPoolExecutor(max_workers=2) as pool:
        staged = list(pool.map(lambda _: stage_dependency_layer(layers_dir=tmp_path, python=None), range(2)))
    # Then both get the same complete folder, and no staging copy is left behind
    assert staged[0] == staged[1]
    layer = Path(staged[0])
    assert sorted(p.name for p in tmp_path.iterdir()) == [layer.name]
    assert (layer / REQUIREMENTS_FILE).read_text() == layer_requirements()
    assert (layer / LAYER_PYTHON_DIR / "aws_lambda_powertools").is_dir()

    # When a later synth stages it again, Then the folder is reused as it is (offline: nothing is installed)
    inode = (layer / LAYER_PYTHON_DIR).stat().st_ino
    assert stage_dependency_layer(layers_dir=tmp_path, python=None) == staged[0]
    assert (layer / LAYER_PYTHON_DIR).stat().st_ino == inode


# This interpreter stands in for the runtime's Python (3.13) here: what is tested is what synth does with one, and
# that the asset hash does not see it. The synthesized stack's own bytecode is checked in test_packaging.py.
HOST_PYTHON = RuntimePython(Path(sys.executable), sys.implementation.cache_tag)


def _pyc_flags(pyc: Path) -> int:
    """PEP 552's flags word: bytes 4-8 of a .pyc."""
    return int.from_bytes(pyc.read_bytes()[4:8], "little")


def _assert_compiled_by(root: Path, python: RuntimePython) -> None:
    """Every module under `root` has `python`'s unchecked-hash bytecode, and there is no other bytecode."""
    modules = sorted(root.rglob("*.py"))
    compiled = compiled_modules(root, python.cache_tag)
    assert modules and sorted(compiled) == modules
    assert sorted(root.rglob("*.pyc")) == sorted(compiled.values())
    assert {_pyc_flags(pyc) for pyc in compiled.values()} == {UNCHECKED_HASH_FLAGS}


def test_the_developers_bytecode_never_ships_and_the_runtimes_does(tmp_path: Path) -> None:
    # Given the function's folder holding this interpreter's own (timestamp) bytecode, as running the tests leaves
    compileall.compile_dir(FUNCTIONS_DIR / "ingest", quiet=1)
    assert any((FUNCTIONS_DIR / "ingest" / PYCACHE).glob("*.pyc"))
    # When it is staged without the runtime's Python, Then no bytecode at all is in the asset
    source_only = Path(stage_function_asset("ingest", assets_dir=tmp_path / "source", python=None))
    assert not [f for f in _files(source_only) if PYCACHE in f or f.endswith(".pyc")]
    # When it is staged with it, Then every module has that Python's unchecked-hash bytecode, and no other
    compiled = Path(stage_function_asset("ingest", assets_dir=tmp_path / "compiled", python=HOST_PYTHON))
    _assert_compiled_by(compiled, HOST_PYTHON)


def test_a_function_assets_hash_is_the_same_with_or_without_bytecode(tmp_path: Path) -> None:
    # Given the same function staged by a machine without the runtime's Python and by one with it
    source_only = stage_function_asset("process", assets_dir=tmp_path / "source", python=None)
    compiled = stage_function_asset("process", assets_dir=tmp_path / "compiled", python=HOST_PYTHON)
    assert _files(Path(source_only)) != _files(Path(compiled))
    # Then the hash CDK is given is the same: a deployed function does not change with the synthesizing machine
    assert function_asset_hash(source_only) == function_asset_hash(compiled)
    # And it does change with the code
    (Path(compiled) / "handler.py").write_text((Path(compiled) / "handler.py").read_text() + "\n# changed\n")
    assert function_asset_hash(compiled) != function_asset_hash(source_only)


def test_a_restaged_asset_is_compiled_again_only_when_its_sources_change(tmp_path: Path) -> None:
    # Given a compiled asset, staged again with nothing changed
    asset = Path(stage_function_asset("publisher", assets_dir=tmp_path, python=HOST_PYTHON))
    inode = asset.stat().st_ino
    stage_function_asset("publisher", assets_dir=tmp_path, python=HOST_PYTHON)
    # Then the folder is left alone
    assert asset.stat().st_ino == inode
    # When it is staged by a machine without that Python, Then the bytecode goes (nothing stale ships)
    stage_function_asset("publisher", assets_dir=tmp_path, python=None)
    assert not list(asset.rglob("*.pyc"))


def test_the_layers_hash_is_the_same_with_or_without_bytecode(tmp_path: Path) -> None:
    # Given the dependency layer staged by a machine without the runtime's Python and by one with it
    source_only = Path(stage_dependency_layer(layers_dir=tmp_path, python=None))
    compiled = Path(stage_dependency_layer(layers_dir=tmp_path, python=HOST_PYTHON))
    # Then they are two folders, the second compiled (every module, unchecked-hash), the first not at all
    assert source_only != compiled
    assert not list((source_only / LAYER_PYTHON_DIR).rglob("*.pyc"))
    _assert_compiled_by(compiled / LAYER_PYTHON_DIR, HOST_PYTHON)
    # And the hash CDK is given for either is the same
    assert layer_asset_hash(source_only) == layer_asset_hash(compiled)
