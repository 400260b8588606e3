"""Adyen's development signing secret: the local stack's (it signs nothing real), never shipped to AWS.

inbox_local/dev_secrets.py gathers every provider folder's (`DEV_SECRETS`): the local stack stores it as the provider's
default source's signing secret unless INBOX_SECRET_<SOURCE> is set, and the CLI, the senders and the tests sign with
it. Standard library only: the local stack's resource emulation imports it."""

from __future__ import annotations

from typing import Final

# Adyen's HMAC key is hex (it is hex-decoded before use)
DEV_SECRET: Final = "6c6f63616c2d646576656c6f706d656e742d6f6e6c792d6164796e2d6b6579"
