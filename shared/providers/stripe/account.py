"""What a Stripe account reference may look like before it becomes a request header.

Two places read it: the Stripe driver (an event's top-level `account`, a thin event's `context`) refuses a body
whose reference has another shape, and the Stripe client checks it again right before it writes the
`Stripe-Account` / `Stripe-Context` header (an item written by anything else, a replayed or hand-edited one, never
reaches the wire unchecked). Both are attacker-reachable values (the body is signed, but by a gateway account we
do not control the content of), so the rule is strict and bounded: letters and digits only after `acct_`, so no
CR/LF, `:` or `,` can split or add a header.

- Connect: a connected account's id, `acct_` + alphanumerics (https://docs.stripe.com/api/connected-accounts).
- Stripe-Context: one or more account ids joined by `/`, from the key's account down to the target one
  (`acct_111a`, `acct_111/acct_111a`, https://docs.stripe.com/context). Stripe documents no depth or length limit;
  the organization -> platform -> connected account -> recipient tree it describes is at most four deep.
"""

from __future__ import annotations

import re

ACCOUNT_ID_MAX_LENGTH = 64  # Stripe's ids are ~21 characters (acct_ + 16); a bound, not a claim about Stripe
CONTEXT_MAX_SEGMENTS = 4
_ACCOUNT_ID = re.compile(rf"acct_[A-Za-z0-9]{{1,{ACCOUNT_ID_MAX_LENGTH - 5}}}")


def is_account_id(value: object) -> bool:
    """A connected account id (`acct_...`), and nothing a header could be smuggled in."""
    return isinstance(value, str) and _ACCOUNT_ID.fullmatch(value) is not None


def is_account_reference(value: object) -> bool:
    """An account id, or a Stripe-Context path of at most CONTEXT_MAX_SEGMENTS account ids."""
    if not isinstance(value, str) or len(value) > CONTEXT_MAX_SEGMENTS * (ACCOUNT_ID_MAX_LENGTH + 1):
        return False
    segments = value.split("/")
    return len(segments) <= CONTEXT_MAX_SEGMENTS and all(is_account_id(segment) for segment in segments)
