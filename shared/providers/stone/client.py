"""Stone refetch: Connect Stone payments are read from Pagar.me's core v5 API with the account's secret key
(connect-stone.stone.com.br, "Autenticação": HTTP Basic with `sk_...:` against `https://api.pagar.me/core/v5`).
The client is Pagar.me's (shared/providers/pagarme/client.py: endpoints, status table, error mapping), under Stone's
id."""

from __future__ import annotations

from shared.providers.pagarme.client import PagarmeClient

PROVIDER = "stone"
DEFAULT_BASE_URL = "https://api.pagar.me"


class StoneClient(PagarmeClient):
    provider: str = PROVIDER
