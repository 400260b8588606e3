"""The provider catalog (`shared.definitions.PROVIDER_CATALOG`) is complete: a provider half-added fails here.

docs/adding-a-provider.md is the checklist; this is what enforces it. A provider is two folders
(`shared/providers/<id>/` with its catalog entry, `inbox_local/providers/<id>/` with its development secret) and its
documentation rows.
`catalog_problems` reads a catalog and a repository tree and says what is missing, so the same checks run on the real
catalog and tree (no problem allowed), on broken copies of the catalog and on broken copies of the tree (each must be
caught: the checks can fail).
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pytest

from inbox_local.dev_secrets import DEV_SECRETS
from shared import definitions
from shared.definitions import HANDLER_KINDS, ORDERING_NONE, PROVIDER_CATALOG, ProviderEntry, Route

REPO = Path(__file__).resolve().parents[2]
# Where a provider's two folders live: its Lambda half (driver, refetch client) and its local half (sender, simulator).
LAMBDA_FOLDERS = Path("shared/providers")
LOCAL_FOLDERS = Path("inbox_local/providers")
# The files of each folder: every provider's, and a refetched provider's besides.
ENTRY_FILE = "entry.py"  # its catalog entry: `ENTRY = ProviderEntry(id=<the folder's name>, ...)`
DEV_FILE = "dev.py"  # its development signing secret: `DEV_SECRET = "..."`
EVERY_PROVIDER = (
    LAMBDA_FOLDERS / "{id}/__init__.py",
    LAMBDA_FOLDERS / "{id}" / ENTRY_FILE,
    LAMBDA_FOLDERS / "{id}/driver.py",
)
EVERY_PROVIDER_LOCALLY = (
    LOCAL_FOLDERS / "{id}/__init__.py",
    LOCAL_FOLDERS / "{id}/sender.py",
    LOCAL_FOLDERS / "{id}" / DEV_FILE,
)
REFETCHED = (LAMBDA_FOLDERS / "{id}/client.py", LOCAL_FOLDERS / "{id}/simulator.py")
# The page whose "Providers" table renders the catalog's documented facts, one row per provider.
PROVIDER_TABLE_PAGE = "docs/sources.md"
README_ORDERING = {"refetch": "refetch", "occurred_at": "occurred_at", ORDERING_NONE: "none (not payments: ignored)"}
SOURCE_WORDS = {
    "verified": "verified",
    "secondary": "secondary source",
    "project-notes": "project notes",
    "inferred": "inferred",
    "configured": "configured",
}


def load(reference: str) -> object:
    module_name, attribute = reference.split(":")
    return getattr(importlib.import_module(module_name), attribute)


def readme_provider_rows(readme: str) -> dict[str, list[str]]:
    """The provider table of PROVIDER_TABLE_PAGE, by URL id: its cells, stripped."""
    section = readme.split("\n## Providers\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, list[str]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) > 1 and re.fullmatch(r"`[a-z0-9]+`", cells[1]):
            rows[cells[1].strip("`")] = cells
    return rows


def readme_row(entry: ProviderEntry) -> str:
    """The provider table row the entry's facts make."""
    facts = entry.facts
    name = f"[{facts.display_name}]({facts.docs_url})" if facts.docs_url else facts.display_name
    cells = [
        name,
        f"`{entry.id}`",
        facts.signature,
        SOURCE_WORDS[facts.signature_source],
        facts.dedup_key,
        README_ORDERING.get(entry.ordering, entry.ordering),
    ]
    return "| " + " | ".join(cells) + " |"


def readme_table(catalog: Iterable[ProviderEntry]) -> str:
    header = "| provider | URL id | signature | signature checked | dedup key | ordering |\n|---|---|---|---|---|---|\n"
    return header + "\n".join(readme_row(entry) for entry in catalog) + "\n"


def entry_problems(entry: ProviderEntry, repo: Path) -> list[str]:
    problems: list[str] = []
    if not re.fullmatch(r"[a-z][a-z0-9]*", entry.id):
        problems.append(f"{entry.id!r}: a provider id is lower-case letters and digits (URLs, env vars, CLI)")
    try:
        driver = load(entry.driver)
    except (ImportError, AttributeError, ValueError) as error:
        problems.append(f"{entry.id}: driver {entry.driver!r} does not import ({error})")
    else:
        if getattr(driver, "name", None) != entry.id:
            problems.append(f"{entry.id}: driver {entry.driver!r} is named {getattr(driver, 'name', None)!r}")
    if entry.refetch_client is not None:
        try:
            client = load(entry.refetch_client)
        except (ImportError, AttributeError, ValueError) as error:
            problems.append(f"{entry.id}: refetch client {entry.refetch_client!r} does not import ({error})")
        else:
            module = importlib.import_module(entry.refetch_client.split(":")[0])
            if not isinstance(client, type) or getattr(module, "PROVIDER", None) != entry.id:
                problems.append(f"{entry.id}: {entry.refetch_client!r} is not a client class of a module for it")
            if not hasattr(module, "DEFAULT_BASE_URL"):
                problems.append(f"{entry.id}: {entry.refetch_client!r}'s module has no DEFAULT_BASE_URL")
    kinds = {route.handler for route in entry.routes}
    for route in entry.routes:
        problems.extend(route_problems(entry.id, route))
    if len(kinds) > 1:
        problems.append(f"{entry.id}: routes mix handler kinds {sorted(kinds)}: its ordering would be ambiguous")
    if (definitions.HANDLER_REFETCH in kinds) != (entry.refetch_client is not None):
        problems.append(f"{entry.id}: refetch routes need a refetch client, and a refetch client refetch routes")
    if not DEV_SECRETS.get(entry.id, "").strip():
        problems.append(
            f"{entry.id}: no development secret for the local stack ({LOCAL_FOLDERS}/{entry.id}/{DEV_FILE})"
        )
    return problems


def route_problems(provider: str, route: Route) -> list[str]:
    if route.handler not in HANDLER_KINDS:
        return [f"{provider}: route names the unknown handler kind {route.handler!r} (known: {HANDLER_KINDS})"]
    from shared.process.handlers import route_event_types

    try:
        event_types = route_event_types(route)
    except (ImportError, AttributeError, ValueError) as error:
        return [f"{provider}: route's event types {route.event_types_from!r} do not load ({error})"]
    if not event_types:
        return [f"{provider}: a route with no event types"]
    return []


def _assigned(path: Path, name: str) -> ast.expr | None:
    """What the module at `path` assigns to `name` at its top level (None: it assigns nothing to it, or does not
    parse)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except SyntaxError:
        return None
    for statement in tree.body:
        if isinstance(statement, ast.Assign | ast.AnnAssign) and statement.value is not None:
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if any(isinstance(target, ast.Name) and target.id == name for target in targets):
                return statement.value
    return None


def declared_id(path: Path) -> str | None:
    """The literal `id` of the `ENTRY = ProviderEntry(id=...)` an entry module declares (None: it declares none)."""
    value = _assigned(path, "ENTRY")
    if isinstance(value, ast.Call):
        for keyword in value.keywords:
            if keyword.arg == "id" and isinstance(keyword.value, ast.Constant):
                return str(keyword.value.value)
    return None


def has_dev_secret(path: Path) -> bool:
    """Whether a dev module assigns a non-empty string to DEV_SECRET."""
    value = _assigned(path, "DEV_SECRET")
    return isinstance(value, ast.Constant) and isinstance(value.value, str) and bool(value.value.strip())


def folder_problems(catalog: tuple[ProviderEntry, ...], repo: Path) -> list[str]:
    """The two folders of every entry, with their files; an entry's references naming its own folder's modules; each
    folder's entry declaring the folder's name as its id, each local folder's dev module its secret; and no provider
    folder, client or simulator that no entry accounts for."""
    problems: list[str] = []
    for entry in catalog:
        own = f"{LAMBDA_FOLDERS.as_posix().replace('/', '.')}.{entry.id}"
        if entry.driver.split(":")[0] != f"{own}.driver":
            problems.append(f"{entry.id}: driver {entry.driver!r} is not in its folder ({own}.driver)")
        if entry.refetch_client and entry.refetch_client.split(":")[0] != f"{own}.client":
            problems.append(f"{entry.id}: refetch client {entry.refetch_client!r} is not in its folder ({own}.client)")
        wanted = (*EVERY_PROVIDER, *EVERY_PROVIDER_LOCALLY, *(REFETCHED if entry.refetch_client else ()))
        for template in wanted:
            path = Path(str(template).format(id=entry.id))
            if not (repo / path).is_file():
                problems.append(f"{entry.id}: {path.as_posix()} is missing")
        if not entry.refetch_client:
            for template in REFETCHED:
                path = Path(str(template).format(id=entry.id))
                if (repo / path).exists():
                    problems.append(f"{path.as_posix()} belongs to no catalog entry ({entry.id} refetches nothing)")
    ids = {entry.id for entry in catalog}
    for side in (LAMBDA_FOLDERS, LOCAL_FOLDERS):
        for folder in sorted(path for path in (repo / side).iterdir() if path.is_dir() and path.name != "__pycache__"):
            where = (side / folder.name).as_posix()
            if folder.name not in ids:
                problems.append(f"{where}/ belongs to no catalog entry")
            if side == LAMBDA_FOLDERS and (folder / ENTRY_FILE).is_file():
                declared = declared_id(folder / ENTRY_FILE)
                if declared != folder.name:
                    problems.append(
                        f"{where}/{ENTRY_FILE} declares the id {declared!r}: an entry's id is its folder's name"
                    )
            if side == LOCAL_FOLDERS and (folder / DEV_FILE).is_file() and not has_dev_secret(folder / DEV_FILE):
                problems.append(f"{where}/{DEV_FILE} assigns no DEV_SECRET (a non-empty string)")
    return problems


def catalog_problems(catalog: tuple[ProviderEntry, ...], repo: Path = REPO) -> list[str]:
    """Everything that says a provider is half-added (empty when the catalog and the repository agree)."""
    problems: list[str] = []
    ids = [entry.id for entry in catalog]
    problems.extend(f"{provider}: declared twice" for provider in sorted({p for p in ids if ids.count(p) > 1}))
    for entry in catalog:
        problems.extend(entry_problems(entry, repo))
    problems.extend(folder_problems(catalog, repo))
    readme = (repo / PROVIDER_TABLE_PAGE).read_text()
    rows = readme_provider_rows(readme)
    for entry in catalog:
        if entry.id not in rows:
            problems.append(f"{entry.id}: no row in {PROVIDER_TABLE_PAGE}'s provider table")
        elif "| " + " | ".join(rows[entry.id]) + " |" != readme_row(entry):
            problems.append(
                f"{entry.id}: {PROVIDER_TABLE_PAGE}'s row is not what the catalog says: {readme_row(entry)}"
            )
    problems.extend(
        f"{provider}: {PROVIDER_TABLE_PAGE} lists a provider the catalog does not"
        for provider in rows
        if provider not in ids
    )
    providers_doc = (repo / "docs" / "providers.md").read_text()
    for entry in catalog:
        if not re.search(rf"^\| [^|]*\(`{entry.id}`", providers_doc, re.MULTILINE):
            problems.append(f"{entry.id}: no row in docs/providers.md's provider table")
    return problems


# ------------------------------------------------------------------------------------------------ the catalog


def test_the_catalog_and_the_repository_agree() -> None:
    # Given the provider catalog  When it is checked against the repository  Then nothing is half-added
    assert catalog_problems(PROVIDER_CATALOG) == []


def test_readmes_provider_table_is_the_catalogs() -> None:
    # Given the catalog's documented facts  Then the provider table of docs/sources.md is exactly what they render
    # (on a change: paste the rendered table into its "Providers" section)
    table = readme_table(PROVIDER_CATALOG)
    page = (REPO / PROVIDER_TABLE_PAGE).read_text()
    assert table in page, f"{PROVIDER_TABLE_PAGE}'s provider table should read:\n{table}"


def test_every_list_of_providers_is_the_catalogs() -> None:
    # Given the catalog  Then the stack's, the drivers', the gateways', the local stack's and the simulator's lists
    # are derived from it, in its order
    from inbox_local.gateway_simulator import SHAPES
    from shared.gateway.registry import supported_providers
    from shared.providers.registry import provider_names

    ids = tuple(entry.id for entry in PROVIDER_CATALOG)
    refetched = tuple(entry.id for entry in PROVIDER_CATALOG if entry.refetch_client)
    assert ids == definitions.PROVIDERS
    assert refetched == definitions.REFETCH_PROVIDERS
    assert set(provider_names()) >= set(ids)
    assert supported_providers() == refetched
    assert tuple(SHAPES) == refetched
    assert tuple(DEV_SECRETS) == ids  # a development secret per provider, and none for a provider that is not


@pytest.mark.parametrize("entry", PROVIDER_CATALOG, ids=lambda entry: entry.id)
def test_the_processor_routes_each_provider_as_its_catalog_entry_says(entry: ProviderEntry) -> None:
    # Given the processor's default routing table, built from the catalog
    from shared.process.handlers import (
        EventTimeOrderedHandler,
        RefetchPaymentHandler,
        default_router,
        route_event_types,
    )

    router = default_router(lambda _provider: None)
    expected = {
        definitions.HANDLER_REFETCH: RefetchPaymentHandler,
        definitions.HANDLER_OCCURRED_AT: EventTimeOrderedHandler,
    }
    # Then every event type of every route of the entry resolves to the handler of the route's kind
    for route in entry.routes:
        for event_type in route_event_types(route):
            sample = event_type.replace("*", "sample")
            assert isinstance(router.resolve(entry.id, sample), expected[route.handler]), (entry.id, sample)
    # And a type no route names is not applied (stored and ignored)
    assert router.resolve(entry.id, "no.such.event.type") is None


# ------------------------------------------------------------------------------ the catalog is found by folder


@pytest.fixture
def extra_provider_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str, str], None]]:
    """Writes a provider folder `name` with this entry module text (none when empty) into a folder the
    `shared.providers` package is also read from, as if it were one of its folders, for the time of one test."""
    import shared.providers

    monkeypatch.setattr(shared.providers, "__path__", [*shared.providers.__path__, str(tmp_path)])
    written: list[str] = []

    def write(name: str, entry_source: str) -> None:
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").touch()
        if entry_source:
            (tmp_path / name / ENTRY_FILE).write_text(entry_source, encoding="utf-8")
        written.append(f"shared.providers.{name}")
        importlib.invalidate_caches()

    yield write
    for module in [m for m in sys.modules if any(m == w or m.startswith(f"{w}.") for w in written)]:
        del sys.modules[module]


def test_the_catalog_is_every_provider_folder_with_an_entry() -> None:
    # Given the provider folders of the repository, When the catalog is gathered again
    folders = sorted(p.parent.name for p in (REPO / LAMBDA_FOLDERS).glob(f"*/{ENTRY_FILE}"))
    # Then it holds one entry per folder with an entry module, in the order of their ids, and is the package's
    assert [entry.id for entry in definitions.discovered_entries()] == folders == list(definitions.PROVIDERS)
    assert definitions.discovered_entries() == PROVIDER_CATALOG


def test_a_folder_with_a_new_entry_joins_the_catalog_and_one_without_is_left_out(
    extra_provider_folder: Callable[[str, str], None],
) -> None:
    # Given a new folder with an entry (Stripe's, under the folder's id) and a folder with none
    extra_provider_folder(
        "acme",
        "from shared.providers.stripe.entry import ENTRY as STRIPE\nENTRY = STRIPE._replace(id='acme')\n",
    )
    extra_provider_folder("notes", "")
    # When the catalog is gathered, Then the first joins it in its place by id, the second is no provider
    assert [entry.id for entry in definitions.discovered_entries()] == sorted([*definitions.PROVIDERS, "acme"])


@pytest.mark.parametrize(
    ("entry_source", "refused"),
    [
        (
            "from shared.providers.stripe.entry import ENTRY\n",
            "declares the id 'stripe': an entry's id is its folder's",
        ),
        ("ENTRY = {'id': 'acme'}\n", "its ENTRY is not a ProviderEntry (dict)"),
        ("PROVIDER = 'acme'\n", "its ENTRY is not a ProviderEntry (NoneType)"),
    ],
)
def test_an_entry_not_named_as_its_folder_is_refused_when_the_catalog_is_gathered(
    extra_provider_folder: Callable[[str, str], None], entry_source: str, refused: str
) -> None:
    # Given a provider folder whose entry module declares another provider's id, or no entry
    extra_provider_folder("acme", entry_source)
    # When the catalog is gathered, Then it is refused, naming the module and why
    with pytest.raises(definitions.CatalogInvalid, match=re.escape(f"shared.providers.acme.entry: {refused}")):
        definitions.discovered_entries()


# ------------------------------------------------------------------------------ the checks catch a half-add


def _replaced(provider: str, **changes: object) -> tuple[ProviderEntry, ...]:
    return tuple(e._replace(**changes) if e.id == provider else e for e in PROVIDER_CATALOG)  # type: ignore[arg-type]


def _without(provider: str) -> tuple[ProviderEntry, ...]:
    return tuple(entry for entry in PROVIDER_CATALOG if entry.id != provider)


def _facts(provider: str, **changes: object) -> tuple[ProviderEntry, ...]:
    entry = definitions.provider_entry(provider)
    return _replaced(provider, facts=entry.facts._replace(**changes))  # type: ignore[arg-type]


BROKEN = {
    "a provider folder with no entry": (_without("adyen"), "shared/providers/adyen/ belongs to no catalog entry"),
    "a local provider folder with no entry": (_without("adyen"), "inbox_local/providers/adyen/ belongs to no catalog"),
    "a gateway client with no entry": (
        _replaced("iugu", refetch_client=None, routes=()),
        "shared/providers/iugu/client.py belongs to no catalog entry (iugu refetches nothing)",
    ),
    "a simulator with no entry": (
        _replaced("iugu", refetch_client=None, routes=()),
        "inbox_local/providers/iugu/simulator.py belongs to no catalog entry",
    ),
    "a driver outside its provider's folder": (
        _replaced("stone", driver="shared.providers.pagarme.driver:driver"),
        "stone: driver 'shared.providers.pagarme.driver:driver' is not in its folder (shared.providers.stone.driver)",
    ),
    "a refetch client outside its provider's folder": (
        _replaced("stone", refetch_client="shared.providers.pagarme.client:PagarmeClient"),
        "stone: refetch client 'shared.providers.pagarme.client:PagarmeClient' is not in its folder",
    ),
    "a driver that does not import": (
        _replaced("stripe", driver="shared.providers.strype:driver"),
        "stripe: driver 'shared.providers.strype:driver' does not import",
    ),
    "a driver named otherwise": (
        _replaced("asaas", driver="shared.providers.stripe.driver:driver"),
        "asaas: driver 'shared.providers.stripe.driver:driver' is named 'stripe'",
    ),
    "a refetch client that does not import": (
        _replaced("paddle", refetch_client="shared.providers.paddle.client:PadleClient"),
        "paddle: refetch client 'shared.providers.paddle.client:PadleClient' does not import",
    ),
    "a refetching provider the simulator cannot speak": (
        (
            *PROVIDER_CATALOG,
            ProviderEntry(
                id="square",
                driver="shared.providers.stripe.driver:driver",
                refetch_client="shared.providers.stripe.client:StripeClient",
                routes=(Route(definitions.HANDLER_REFETCH, ("payment.*",)),),
                facts=definitions.provider_entry("stripe").facts,
            ),
        ),
        "square: inbox_local/providers/square/simulator.py is missing",
    ),
    "a route naming an unknown handler kind": (
        _replaced("hotmart", routes=(Route("by_magic", ("PURCHASE_*",)),)),  # type: ignore[arg-type]
        "hotmart: route names the unknown handler kind 'by_magic'",
    ),
    "a route whose event types do not load": (
        _replaced(
            "adyen",
            routes=(Route(definitions.HANDLER_OCCURRED_AT, event_types_from="shared.providers.adyen.driver:NOPE"),),
        ),
        "adyen: route's event types 'shared.providers.adyen.driver:NOPE' do not load",
    ),
    "refetch routes without a client": (
        _replaced("standard", routes=(Route(definitions.HANDLER_REFETCH, ("payment.*",)),)),
        "standard: refetch routes need a refetch client",
    ),
    "a provider declared twice": ((*PROVIDER_CATALOG, definitions.provider_entry("stripe")), "stripe: declared twice"),
    "no development secret": (
        (*PROVIDER_CATALOG, definitions.provider_entry("github")._replace(id="gitlab")),
        "gitlab: no development secret",
    ),
    "no row in the provider table": (
        (*_without("generic"), definitions.provider_entry("generic")._replace(id="generik")),
        "generik: no row in docs/sources.md's provider table",
    ),
    "a provider table row the catalog disagrees with": (
        _facts("shopify", dedup_key="the body"),
        "shopify: docs/sources.md's row is not what the catalog says",
    ),
    "an upper-case id": (
        (*PROVIDER_CATALOG, definitions.provider_entry("kiwify")._replace(id="Kiwi")),
        "'Kiwi': a provider id is lower-case",
    ),
}


@pytest.mark.parametrize(("catalog", "expected"), BROKEN.values(), ids=BROKEN.keys())
def test_a_half_added_provider_is_caught(catalog: tuple[ProviderEntry, ...], expected: str) -> None:
    # Given a deliberately broken copy of the catalog  When it is checked  Then the check names what is missing
    problems = catalog_problems(catalog)
    assert any(problem.startswith(expected) for problem in problems), problems


# ---------------------------------------------------------------------- the checks catch a half-added tree


def _copy_of_the_tree(root: Path) -> Path:
    """What the checks read of the repository, copied under `root`: the provider folders' files (empty: the checks
    look at which files exist, but for the entry and dev modules, whose id and secret they read) and the two
    documentation pages."""
    for side in (LAMBDA_FOLDERS, LOCAL_FOLDERS):
        for path in (REPO / side).glob("*/*.py"):
            copy = root / path.relative_to(REPO)
            copy.parent.mkdir(parents=True, exist_ok=True)
            if path.name in {ENTRY_FILE, DEV_FILE}:
                copy.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
            else:
                copy.touch()
    for page in (PROVIDER_TABLE_PAGE, "docs/providers.md"):
        (root / page).parent.mkdir(parents=True, exist_ok=True)
        (root / page).write_text((REPO / page).read_text())
    return root


def _remove(relative: str) -> Callable[[Path], None]:
    return lambda root: (root / relative).unlink()


def _add(*relatives: str) -> Callable[[Path], None]:
    def add(root: Path) -> None:
        for relative in relatives:
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            (root / relative).touch()

    return add


def _edit(relative: str, old: str, new: str) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        text = (root / relative).read_text(encoding="utf-8")
        assert old in text, f"{relative} holds no {old!r} to change"
        (root / relative).write_text(text.replace(old, new), encoding="utf-8")

    return edit


def _drop_providers_row(provider: str) -> Callable[[Path], None]:
    def drop(root: Path) -> None:
        page = root / "docs/providers.md"
        row = re.compile(rf"^\| [^|]*\(`{provider}`.*\n", re.MULTILINE)
        page.write_text(row.sub("", page.read_text()))

    return drop


HALF_ADDED_TREES = {
    "an entry without its driver": (
        _remove("shared/providers/paddle/driver.py"),
        "paddle: shared/providers/paddle/driver.py is missing",
    ),
    "an entry without its sender": (
        _remove("inbox_local/providers/github/sender.py"),
        "github: inbox_local/providers/github/sender.py is missing",
    ),
    "a refetched provider without its client": (
        _remove("shared/providers/zoop/client.py"),
        "zoop: shared/providers/zoop/client.py is missing",
    ),
    "a refetched provider without its simulator": (
        _remove("inbox_local/providers/efi/simulator.py"),
        "efi: inbox_local/providers/efi/simulator.py is missing",
    ),
    "a provider folder without its entry": (
        _remove("shared/providers/paddle/entry.py"),
        "paddle: shared/providers/paddle/entry.py is missing",
    ),
    "an entry whose id is not its folder's name": (
        _edit("shared/providers/stone/entry.py", 'id="stone"', 'id="pagarme"'),
        "shared/providers/stone/entry.py declares the id 'pagarme': an entry's id is its folder's name",
    ),
    "an entry that declares no ENTRY": (
        _edit("shared/providers/iugu/entry.py", "ENTRY = ", "IUGU = "),
        "shared/providers/iugu/entry.py declares the id None",
    ),
    "a sender folder without its development secret": (
        _remove("inbox_local/providers/shopify/dev.py"),
        "shopify: inbox_local/providers/shopify/dev.py is missing",
    ),
    "a dev module that assigns no secret": (
        _edit("inbox_local/providers/eduzz/dev.py", "DEV_SECRET: Final = ", "SECRET: Final = "),
        "inbox_local/providers/eduzz/dev.py assigns no DEV_SECRET",
    ),
    "a folder that is not a package": (
        _remove("shared/providers/stripe/__init__.py"),
        "stripe: shared/providers/stripe/__init__.py is missing",
    ),
    "a provider folder with no catalog entry": (
        _add("shared/providers/square/__init__.py", "shared/providers/square/driver.py"),
        "shared/providers/square/ belongs to no catalog entry",
    ),
    "a local provider folder with no catalog entry": (
        _add("inbox_local/providers/square/sender.py"),
        "inbox_local/providers/square/ belongs to no catalog entry",
    ),
    "a client for a provider that refetches nothing": (
        _add("shared/providers/hotmart/client.py"),
        "shared/providers/hotmart/client.py belongs to no catalog entry (hotmart refetches nothing)",
    ),
    "a provider without its docs/providers.md row": (
        _drop_providers_row("kiwify"),
        "kiwify: no row in docs/providers.md's provider table",
    ),
}


def test_a_copy_of_the_tree_is_whole(tmp_path: Path) -> None:
    # Given a copy of what the checks read of the repository  When it is checked  Then nothing is half-added (the
    # broken copies below differ from a whole one by their one change)
    assert catalog_problems(PROVIDER_CATALOG, _copy_of_the_tree(tmp_path)) == []


@pytest.mark.parametrize(("change", "expected"), HALF_ADDED_TREES.values(), ids=HALF_ADDED_TREES.keys())
def test_a_half_added_provider_folder_is_caught(change: Callable[[Path], None], expected: str, tmp_path: Path) -> None:
    # Given a copy of the repository's provider folders and docs with one file missing or one too many
    tree = _copy_of_the_tree(tmp_path)
    change(tree)
    # When the real catalog is checked against it
    problems = catalog_problems(PROVIDER_CATALOG, tree)
    # Then the check names what is missing or whose it is not
    assert any(problem.startswith(expected) for problem in problems), problems
