"""How shared/inbox/stripe-1.zdict was built: the zlib preset dictionary for Stripe bodies (run once; the file is
never rebuilt, because every item compressed with it needs exactly those bytes to be read back).

Source: Stripe's own API fixtures, `openapi/fixtures3.json` of github.com/stripe/openapi (MIT) at commit
f0758b15a2cf53779d699452f4ab07d11076af0f: the `event`, `dispute`, `refund`, `charge` and `payment_intent` resources,
the objects a payment's webhooks carry. Only their shape is kept, not their data: every field name, nested as a
webhook nests it (`data.object` of an event envelope, two-space indentation as Stripe prints its events), with
null, booleans, enumerated words and country codes kept and every id, fingerprint, URL, name, text and number
blanked, so the dictionary holds no fixture's data and favours no particular event. The most common object (the
PaymentIntent) is last: zlib reaches the end of a dictionary best (zlib's deflateSetDictionary documentation: "the
most commonly used strings occur at the end of the dictionary").

    python -m bench.stripe_zdict PATH/TO/fixtures3.json > shared/inbox/stripe-1.zdict
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

OBJECTS = ("dispute", "refund", "charge", "payment_intent")  # least to most common in a payment's webhooks
# Stripe prints an event's envelope in this order (the Event object's example in its API reference).
ENVELOPE_ORDER = ("id", "object", "api_version", "created", "data", "livemode", "pending_webhooks", "request", "type")
# Values kept: enumerated words (`automatic`, `requires_capture`, `usd`, `10.4`) and country codes (`US`); every
# other string (ids, fingerprints, URLs, names, descriptions) is blanked.
_ENUMERATED = re.compile(r"^(?:[a-z0-9_.]{1,32}|[A-Z]{2})$")
_IDENTIFIER = re.compile(r"^[a-z]+_[A-Za-z0-9]{10,}")


def skeleton(value: Any) -> Any:
    """The shape of a fixture value: its field names, nulls, booleans and short enumerated strings."""
    if isinstance(value, dict):
        ordered = sorted(value, key=lambda name: (name not in ("id", "object"), name != "id"))
        return {name: skeleton(value[name]) for name in ordered}
    if isinstance(value, list):
        return [skeleton(element) for element in value[:1]]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return 0
    if isinstance(value, str) and _ENUMERATED.match(value) and not _IDENTIFIER.match(value):
        return value
    return ""


def build(fixtures: dict[str, Any]) -> bytes:
    resources = fixtures["resources"]
    envelope = skeleton({name: value for name, value in resources["event"].items() if name != "data"})
    events = []
    for name in OBJECTS:
        event = {**envelope, "data": {"object": skeleton(resources[name])}, "type": f"{name}.updated"}
        events.append(json.dumps({key: event[key] for key in ENVELOPE_ORDER if key in event}, indent=2))
    return "\n".join(events).encode()


def main(argv: list[str]) -> int:
    sys.stdout.buffer.write(build(json.loads(Path(argv[0]).read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
