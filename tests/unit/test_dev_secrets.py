"""The local stack's development secrets (inbox_local/dev_secrets.py): one per catalog provider, and distinct."""

from __future__ import annotations

from inbox_local.dev_secrets import DEV_SECRETS
from shared.definitions import PROVIDER_CATALOG


def test_every_catalog_provider_has_its_own_development_secret_and_no_other_has_one() -> None:
    # Given the catalog  Then each provider has a development secret, in catalog order, and no unknown id has one
    assert tuple(DEV_SECRETS) == tuple(entry.id for entry in PROVIDER_CATALOG)
    assert all(secret.strip() for secret in DEV_SECRETS.values())
    # And no two providers share one: a delivery signed for one provider never verifies as another's
    assert len(set(DEV_SECRETS.values())) == len(DEV_SECRETS)
