"""Woovi / OpenPix's development signing secret: the local stack's (it signs nothing real), never shipped to AWS.

inbox_local/dev_secrets.py gathers every provider folder's (`DEV_SECRETS`): the local stack stores it as the provider's
default source's signing secret unless INBOX_SECRET_<SOURCE> is set, and the CLI, the senders and the tests sign with
it. Standard library only: the local stack's resource emulation imports it."""

from __future__ import annotations

from typing import Final

# Woovi signs with its own RSA key (pinned in the driver): a source's signing secret holds public keys to trust
# besides the pinned ones. Locally, the public half of the development key (base64 of its PEM, the form Woovi
# publishes) whose private half only this folder's sender holds (sender.py).
DEV_SECRET: Final = (
    "LS0tLS1CRUdJTiBQVUJMSUMgS0VZLS0tLS0KTUlJQklqQU5CZ2txaGtpRzl3MEJBUUVGQUFPQ0FROEFNSUlCQ2dLQ0FRRUFtbTE0"
    "c0xGYjdMUm5JbHJqRHhoOQpzMllUVm9RTnFGVVVCSFRtazlSOHNRdG1VbEk4STUrMSt6RTBjMFlrUXBlN2dOTHQrSTJMUnc5YUJt"
    "YlduclhmCmVRcDY2Y2pVL1VOWWlQSy9ZUmM3RTZXdDZhTndEK0JnTmhKSk9paFZEU1ZxbHN2YXQyeC93YXdEU0FRdTlCdCsKeStG"
    "eEFHVnBYOU5jd3drbm5IU25RbDE2WWk2YVNhYkhpbnFicGhiU092ZWpTZDlGaVErMUliNXAzeUFpMGxtZQpTOTUvMmxYVDV3N1o0"
    "aytIZEsxTndsaGRnSUhNY2IyaVM3U2RzLzBKbC9LaWh2VUE2aUFhdmtmbE14NWRZOUI3ClR0Zkk2Tis5T1Q3MkNwZ2tVcWh4elVu"
    "Vm9CZDNsVHhsT2F1K2hVSTJhT0J3SkNoRE9wQXRvdGxYL0VNS3IxcXYKWHdJREFRQUIKLS0tLS1FTkQgUFVCTElDIEtFWS0tLS0t"
    "Cg=="
)
