"""The provider catalog (PROVIDER_CATALOG): every provider folder's entry, gathered; the checks the entries must pass
at import, and the lists derived from them.

A provider is declared once, by its folder's entry module (`shared/providers/<id>/entry.py`, its `ENTRY`), written
in the types of shared/providers/entry_types.py (the definitions package re-exports them): everything the code, the
stack, the local stack and the docs need to know that it exists. The catalog is every folder of `shared/providers/`
that has an entry module, sorted by id: no list of providers is edited anywhere, and every list of providers is
derived from the catalog (the drivers' and the gateway clients' registries, the processor's routing table, the
stack's secrets, the test parameter lists, docs/sources.md's provider table). tests/unit/test_catalog.py fails when a
provider is half-added, and docs/adding-a-provider.md is the checklist. An entry names code, never imports it
("module:attribute" strings): a Lambda imports only the driver and the gateway client it uses, when it first uses
them. Importing the catalog loads the standard library, the entry types and the entry modules, nothing else
(tests/unit/test_import_rules.py): the stack and the local stack import it.
"""

from __future__ import annotations

import os
from importlib import import_module
from typing import Final

import shared.providers
from shared.definitions.resources import retained_days
from shared.providers.entry_types import (
    BODY_BINDING_TRUST,
    HANDLER_REFETCH,
    TRUST_CLASSES,
    TRUST_NONE,
    TRUST_SIGNED_FIELDS,
    ProviderEntry,
)

# A body the class does not bind and that cannot be parsed proves nothing: it is answered 2xx (a 401 would make a
# token sender pause its queue: Asaas does after 15 failures), stored `ignored`, and at most this many such bodies
# per source and hour are kept (their keys are hour slots: a further one is a duplicate of its slot).
UNBOUND_UNPARSEABLE_SLOTS_PER_HOUR: Final = 8


class CatalogInvalid(ValueError):
    """The provider catalog declares something the code cannot honour (raised when this module is imported)."""


# A documented retry window longer than this is not one to keep every event for (Adyen's 30 is the longest).
MAXIMUM_REDELIVERY_DAYS: Final = 90


def catalog_problems(catalog: tuple[ProviderEntry, ...]) -> list[str]:
    """What is wrong with `catalog`: a trust class that is not one, a `signed_fields` class that names no field (or
    another class that names some), a `redelivery_days` that is not 0 to
    MAXIMUM_REDELIVERY_DAYS days, a refetch-verified provider (`none`) without a refetch API, or with a route
    that does not refetch (its notifications prove nothing, so only a read from the gateway may move a payment)."""
    problems: list[str] = []
    for entry in catalog:
        if entry.trust not in TRUST_CLASSES:
            problems.append(f"{entry.id}: trust {entry.trust!r} is not one of {', '.join(TRUST_CLASSES)}")
        if (entry.trust == TRUST_SIGNED_FIELDS) != bool(entry.signed_fields):
            problems.append(f"{entry.id}: signed_fields are named by, and only by, a signed_fields trust class")
        if entry.confirms_from_payload and not (
            entry.binds_body and entry.refetch_client is not None and entry.ordering == HANDLER_REFETCH
        ):
            problems.append(
                f"{entry.id}: only a provider whose scheme binds the whole body "
                f"({', '.join(sorted(BODY_BINDING_TRUST))}) and whose routes refetch from an API may confirm from "
                "the payload"
            )
        if (
            isinstance(entry.redelivery_days, bool)
            or not isinstance(entry.redelivery_days, int)
            or not (0 <= entry.redelivery_days <= MAXIMUM_REDELIVERY_DAYS)
        ):
            problems.append(f"{entry.id}: redelivery_days must be whole days, 0 to {MAXIMUM_REDELIVERY_DAYS}")
        if entry.trust != TRUST_NONE:
            continue
        if entry.refetch_client is None:
            problems.append(f"{entry.id}: refetch-verified but has no refetch_client (no API to refetch from)")
        if not entry.routes or any(route.handler != HANDLER_REFETCH for route in entry.routes):
            problems.append(f"{entry.id}: refetch-verified, so every route must refetch (and there must be one)")
    return problems


def check_catalog(catalog: tuple[ProviderEntry, ...]) -> None:
    problems = catalog_problems(catalog)
    if problems:
        raise CatalogInvalid("provider catalog: " + "; ".join(problems))


# What a provider folder's entry module (`shared/providers/<id>/entry.py`) calls its entry.
ENTRY_ATTRIBUTE: Final = "ENTRY"
# Which modules the catalog imports by a computed name: infra/assets.py stages every provider folder's entry module
# (and, for this, nothing else of the folders) in each Lambda's asset.
LOADS_MODULES: Final = "shared.providers.*.entry"


def discovered_entries() -> tuple[ProviderEntry, ...]:
    """The `ENTRY` of every provider folder (a package of `shared.providers` with an entry module), sorted by id;
    CatalogInvalid for an entry module whose ENTRY is not a ProviderEntry with its folder's name as id. Listing the
    package's folders is the one I/O: the import system reads the same folders to import them."""
    folders = sorted(
        item.name
        for path in shared.providers.__path__
        for item in os.scandir(path)
        if item.is_dir() and item.name.isidentifier() and not item.name.startswith("_")
    )
    entries: list[ProviderEntry] = []
    for folder in folders:
        name = f"shared.providers.{folder}.entry"
        try:
            module = import_module(name)
        except ModuleNotFoundError as error:
            if error.name == name:  # a folder without an entry is no provider (the catalog test refuses one)
                continue
            raise
        entry = getattr(module, ENTRY_ATTRIBUTE, None)
        if not isinstance(entry, ProviderEntry):
            raise CatalogInvalid(f"{name}: its {ENTRY_ATTRIBUTE} is not a ProviderEntry ({type(entry).__name__})")
        if entry.id != folder:  # the id names the folders, the URL and the variables: one name for all of them
            raise CatalogInvalid(f"{name}: declares the id {entry.id!r}: an entry's id is its folder's name")
        entries.append(entry)
    return tuple(sorted(entries, key=lambda entry: entry.id))


PROVIDER_CATALOG: Final[tuple[ProviderEntry, ...]] = discovered_entries()
check_catalog(PROVIDER_CATALOG)

# Derived lists (never spelled by hand).
# Provider ids the stack creates a signing secret for (one Secrets Manager secret each).
PROVIDERS: Final[tuple[str, ...]] = tuple(entry.id for entry in PROVIDER_CATALOG)
# Providers with a payment API the processor refetches from (one gateway API-key secret each). The others order
# their events by `occurred_at` (or have no route at all).
REFETCH_PROVIDERS: Final[tuple[str, ...]] = tuple(
    entry.id for entry in PROVIDER_CATALOG if entry.refetch_client is not None
)
# The suffixes some providers append to the registered URL (`/webhooks/{source}/pix`): each one API route.
WEBHOOK_PATH_SUFFIXES: Final[tuple[str, ...]] = tuple(
    sorted({suffix for entry in PROVIDER_CATALOG for suffix in entry.path_suffixes})
)

# Providers whose notifications are only hints: stored once per delivery, with no state from the body.
REFETCH_VERIFIED_PROVIDERS: Final[frozenset[str]] = frozenset(
    entry.id for entry in PROVIDER_CATALOG if entry.trust == TRUST_NONE
)


def longest_retention_days(retention_days: int, providers: tuple[str, ...]) -> int:
    """The longest an inbox item of any of `providers` lives (`retained_days`): what a large body kept in S3 must
    outlive."""
    return max(retained_days(retention_days, provider_entry(provider).redelivery_days) for provider in providers)


def provider_entry(provider: str) -> ProviderEntry:
    """The catalog entry of `provider` (KeyError for a provider the catalog does not declare)."""
    for entry in PROVIDER_CATALOG:
        if entry.id == provider:
            return entry
    raise KeyError(provider)
