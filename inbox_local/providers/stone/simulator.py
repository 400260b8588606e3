"""Stone's face: Pagar.me's REST shape (inbox_local/providers/pagarme/simulator.py) under Stone's id and its own API
key. On the real API both answer at `api.pagar.me`; the secret key says whose account a request reads, and so it
does here: the simulator hands a path both shapes answer to the one whose key the request carries."""

from __future__ import annotations

from inbox_local.providers.pagarme.simulator import PagarmeShape


class StoneShape(PagarmeShape):
    name = "stone"
    default_api_key = "sk_test_gateway_simulator_stone"


SHAPE = StoneShape()
