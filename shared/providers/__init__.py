"""One folder per provider (`<id>/`: its catalog entry, its driver, its refetch client) and what they all share
(`base.py`: the driver interface; `registry.py`: the one way to find a driver; the signature scheme families).

Empty on purpose: importing any module of the package runs this first, and the stack and the local stack import
each provider's catalog entry (`<id>/entry.py`, standard library only) through it. Anything imported here would
load with the catalog in the stack, the local stack and every Lambda (infra/assets.py follows imports): the driver
interface is `shared.providers.base`, the registry `shared.providers.registry`.
"""
