"""Standard Webhooks's development signing secret: the local stack's (it signs nothing real), never shipped to AWS.

inbox_local/dev_secrets.py gathers every provider folder's (`DEV_SECRETS`): the local stack stores it as the provider's
default source's signing secret unless INBOX_SECRET_<SOURCE> is set, and the CLI, the senders and the tests sign with
it. Standard library only: the local stack's resource emulation imports it."""

from __future__ import annotations

from typing import Final

# whsec_ + base64(b"local-development-only-key-32byt"): the scheme's secrets are base64 keys
DEV_SECRET: Final = "whsec_bG9jYWwtZGV2ZWxvcG1lbnQtb25seS1rZXktMzJieXQ="
