"""The declared sources at run time: parsed once per cold start, looked up by name, and their sender IP ranges.

The declaration is the one the functions are handed in INBOX_SOURCES (`sources_from_environment`; the stack and
the local stack set it from sources.json, which no function reads). It is read and parsed once per process
(`declared_sources`), and each source's IP ranges are parsed once too, so the work per delivery is a dict lookup
and at most MAX_SOURCE_IP_RANGES network membership tests, whatever a sender puts in the URL or its headers.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from functools import cache
from typing import NamedTuple

from shared.definitions import SOURCE_NAME_RULE, SourceSpec, source_name_problem, sources_from_environment

IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class UnknownSource(LookupError):
    """The URL names no declared source (or is not a source name at all). The message is safe to answer."""


class Sources(NamedTuple):
    """The declaration, indexed by name."""

    by_name: Mapping[str, SourceSpec]

    @classmethod
    def of(cls, sources: tuple[SourceSpec, ...]) -> Sources:
        return cls({source.name: source for source in sources})

    def get(self, name: str) -> SourceSpec:
        """The source named `name`; UnknownSource (with a message that never echoes an invalid name, which
        may be anything a sender wrote) when none is declared."""
        source = self.by_name.get(name)
        if source is not None:
            return source
        if source_name_problem(name):
            raise UnknownSource(f"not a source name: a source name is {SOURCE_NAME_RULE}")
        raise UnknownSource(f"unknown source {name!r}: it is not declared in sources.json")

    def provider_of(self, name: str) -> str | None:
        source = self.by_name.get(name)
        return source.provider if source else None

    def names(self) -> tuple[str, ...]:
        return tuple(self.by_name)


@cache
def declared_sources() -> Sources:
    """The process's declared sources, read once (a Lambda instance's environment does not change). A broken
    declaration raises SourcesInvalid here, at the first use, naming every bad entry."""
    return Sources.of(sources_from_environment(os.environ))


def reset_declared_sources() -> None:
    """Forget the cached declaration (tests change the environment between cases)."""
    declared_sources.cache_clear()
    _networks.cache_clear()


@cache
def _networks(ranges: tuple[str, ...]) -> tuple[tuple[int, int, int], ...]:
    """(IP version, first address, last address) of each range, as integers: parsed once per source (the ranges
    were validated by parse_sources), so a check is at most MAX_SOURCE_IP_RANGES integer comparisons."""
    networks: list[IpNetwork] = [ipaddress.ip_network(cidr, strict=False) for cidr in ranges]
    return tuple((n.version, int(n.network_address), int(n.broadcast_address)) for n in networks)


def sender_allowed(source: SourceSpec, source_ip: str | None) -> bool:
    """Whether a delivery from `source_ip` may reach the source's verification. A source with no ranges takes
    any sender. `source_ip` must be the connection's address as API Gateway saw it (requestContext.http.sourceIp),
    never X-Forwarded-For, which the sender writes itself. A missing or unparseable address is refused. An
    IPv4-mapped IPv6 address (::ffff:a.b.c.d) is checked as the IPv4 address it carries."""
    if not source.allowed_ip_ranges:
        return True
    try:
        address = ipaddress.ip_address((source_ip or "").strip())
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    version, value = address.version, int(address)
    return any(v == version and first <= value <= last for v, first, last in _networks(source.allowed_ip_ranges))
