"""Each provider's local half, one folder per provider: `<id>/sender.py` (what its gateway does when it notifies:
sign a delivery, write a sample body) and, for a provider the processor refetches from, `<id>/simulator.py` (its
REST shape in the gateway simulator). Their shared machinery is in `inbox_local/senders/` and
`inbox_local/gateway_simulator/`; the provider's Lambda half is `shared/providers/<id>/`."""
