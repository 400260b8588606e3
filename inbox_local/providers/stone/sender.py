"""Stone: deliveries as the Pagar.me platform sends them for a Connect Stone account
(inbox_local/providers/pagarme/sender.py; shared/providers/stone/driver.py verifies and parses them)."""

from __future__ import annotations

from inbox_local.providers.pagarme.sender import PagarmeSender

sender = PagarmeSender()
