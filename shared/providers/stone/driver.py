"""Stone (Brazil): Connect Stone, whose accounts are Pagar.me v5 accounts: the Pagar.me driver under the id `stone`.

What Stone's documentation says (connect-stone.stone.com.br):
- "Processo de integração": a Connect Stone integration gets a Pagar.me dashboard and account; "Autenticação": the
  API keys are Pagar.me's (`sk_...`, HTTP Basic) and the requests go to `https://api.pagar.me/core/v5/...`;
- "Retorno Webhook": the hooks are Pagar.me v5 hooks, `{"id": "hook_...", "account", "type": "charge.paid",
  "created_at", "data": <the charge>}` (a POS charge: `payment_method` `cash`/card, the terminal in `metadata`).

So nothing is copied: this module is `PagarmeDriver` named `stone` (shared/providers/pagarme/driver.py holds the scheme,
the parsing, the statuses and their sources). What differs is configuration: the id (URL, `INBOX_SECRET_STONE`,
`INBOX_API_KEY_STONE`), the JWKS variables `INBOX_STONE_JWKS` / `INBOX_STONE_JWKS_URL`, and the catalog entry.

Inferred (docs/providers.md): that Connect Stone hooks carry Pagar.me's `X-Webhook-Asymmetric-Signature` (Stone's
pages show the body only; it is the same platform sending them) and that the legacy `X-Hub-Signature` postback
path never fires for a v5 account. That path is kept because it is the platform's: it is keyed with the source's
signing secret, so it accepts only what that secret signed.
"""

from __future__ import annotations

from shared.providers.base import ProviderDriver
from shared.providers.pagarme.driver import PagarmeDriver

PROVIDER = "stone"

driver: ProviderDriver = PagarmeDriver(name=PROVIDER)
