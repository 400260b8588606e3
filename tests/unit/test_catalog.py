"""The provider catalog (`shared.definitions.PROVIDER_CATALOG`) is complete: a provider half-added fails here.

docs/adding-a-provider.md is the checklist; this is what enforces it. `catalog_problems` reads a catalog and the
repository and says what is missing, so the same checks run on the real catalog (no problem allowed) and on broken
copies of it (each must be caught: the checks can fail).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable
from pathlib import Path

import pytest

from inbox_local.dev_secrets import DEV_SECRETS
from shared import definitions
from shared.definitions import HANDLER_KINDS, ORDERING_NONE, PROVIDER_CATALOG, ProviderEntry, Route

REPO = Path(__file__).resolve().parents[2]
# Modules of shared/providers/ and shared/gateway/ that are machinery, not a provider's (a name starting with an
# underscore is a private helper and needs no listing).
PROVIDER_MACHINERY = frozenset({"__init__", "base", "registry"})
GATEWAY_MACHINERY = frozenset({"__init__", "base", "breaker", "http", "ratelimit", "registry"})
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


def module_names(folder: Path) -> set[str]:
    return {path.stem for path in folder.glob("*.py") if not path.stem.startswith("_") or path.stem == "__init__"}


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
        shape = repo / "inbox_local" / "providers" / entry.id / "simulator.py"
        if not shape.is_file():
            problems.append(f"{entry.id}: refetched, but the gateway simulator has no REST shape ({shape.name})")
    kinds = {route.handler for route in entry.routes}
    for route in entry.routes:
        problems.extend(route_problems(entry.id, route))
    if len(kinds) > 1:
        problems.append(f"{entry.id}: routes mix handler kinds {sorted(kinds)}: its ordering would be ambiguous")
    if (definitions.HANDLER_REFETCH in kinds) != (entry.refetch_client is not None):
        problems.append(f"{entry.id}: refetch routes need a refetch client, and a refetch client refetch routes")
    if not DEV_SECRETS.get(entry.id, "").strip():
        problems.append(f"{entry.id}: no development secret for the local stack (inbox_local/dev_secrets.py)")
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


def catalog_problems(catalog: tuple[ProviderEntry, ...], repo: Path = REPO) -> list[str]:
    """Everything that says a provider is half-added (empty when the catalog and the repository agree)."""
    problems: list[str] = []
    ids = [entry.id for entry in catalog]
    problems.extend(f"{provider}: declared twice" for provider in sorted({p for p in ids if ids.count(p) > 1}))
    for entry in catalog:
        problems.extend(entry_problems(entry, repo))
    drivers = {entry.driver.split(":")[0] for entry in catalog}
    for path in sorted((repo / "shared" / "providers").glob("*/driver.py")):
        if f"shared.providers.{path.parent.name}.driver" not in drivers:
            problems.append(f"shared/providers/{path.parent.name}/driver.py belongs to no catalog entry")
    clients = {entry.refetch_client.split(":")[0] for entry in catalog if entry.refetch_client}
    for path in sorted((repo / "shared" / "providers").glob("*/client.py")):
        if f"shared.providers.{path.parent.name}.client" not in clients:
            problems.append(f"shared/providers/{path.parent.name}/client.py belongs to no catalog entry")
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


# ------------------------------------------------------------------------------ the checks catch a half-add


def _replaced(provider: str, **changes: object) -> tuple[ProviderEntry, ...]:
    return tuple(e._replace(**changes) if e.id == provider else e for e in PROVIDER_CATALOG)  # type: ignore[arg-type]


def _without(provider: str) -> tuple[ProviderEntry, ...]:
    return tuple(entry for entry in PROVIDER_CATALOG if entry.id != provider)


def _facts(provider: str, **changes: object) -> tuple[ProviderEntry, ...]:
    entry = definitions.provider_entry(provider)
    return _replaced(provider, facts=entry.facts._replace(**changes))  # type: ignore[arg-type]


BROKEN = {
    "a driver module with no entry": (
        _without("adyen"),
        "shared/providers/adyen/driver.py belongs to no catalog entry",
    ),
    "a gateway client with no entry": (
        _replaced("iugu", refetch_client=None, routes=()),
        "shared/providers/iugu/client.py belongs to no catalog entry",
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
        "square: refetched, but the gateway simulator has no REST shape (simulator.py)",
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
    "a provider declared twice": ((*PROVIDER_CATALOG, PROVIDER_CATALOG[0]), "stripe: declared twice"),
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
