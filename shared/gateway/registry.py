"""Which gateway client refetches a source's payments, built once per process: one client per SOURCE, each with
its own base URL, API key and circuit breaker (two Stripe accounts are two clients; an outage or a revoked key of
one does not stop the other). The client class is the source's provider's (docs/sources.md).

Configuration (environment; <SOURCE> is the source name upper-cased, `-` as `_`; a provider's default source is
named after it, so `INBOX_API_BASE_STRIPE` is the default Stripe source's):
- `INBOX_API_BASE_<SOURCE>`: the API base URL (default: the provider's real API). Any server speaking
  the provider's REST shape can stand in: the local stack's gateway simulator, a test double.
- The API key: always a plain-string Secrets Manager secret, never a variable: the one the deployed stack lists
  for the source in `INBOX_API_KEY_SECRETS` (a JSON object `{source: secret ARN}`: CloudFormation names the
  secrets, see shared/secrets.py), else `{INBOX_API_KEY_SECRET_PREFIX}{source}` (the local stack loads its keys
  there: inbox_local/api_keys.py), read on first use and cached for five minutes (a rotated key reaches every
  instance within that time). Resolved on every call, never at import or construction.
- `CONTROL_TABLE`: the table holding the shared circuit breakers and refetch rate limits. Unset: neither (plain
  calls).
- The refetch rate of a source: its `refetch_rate_per_second` in sources.json (INBOX_SOURCES), else its provider's
  documented rate (`ProviderEntry.refetch_rate_per_second`, docs/providers.md). `INBOX_REFETCH_BURST_SECONDS`
  (default 0.25 s of the rate, at least one request) and `INBOX_REFETCH_MAX_WAIT_SECONDS` (default 1 s, at most 5)
  shape it: shared/gateway/ratelimit.py.
- `INBOX_BREAKER_COOLDOWN_SECONDS`: how long an open circuit refuses calls (default 30 s, at most 3600).

Providers with no payment API to refetch from (e.g. `standard`: Standard Webhooks is a signing scheme, not a
gateway) get None: the processor then orders their events by `occurred_at` instead.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable, Mapping
from fnmatch import fnmatchcase
from typing import Any, Final

from shared.definitions import (
    ENV_API_KEY_SECRET_PREFIX,
    ENV_API_KEY_SECRETS,
    ENV_CONTROL_TABLE,
    PROVIDER_CATALOG,
    SourcesInvalid,
    SourceSpec,
    find_source,
    source_env_suffix,
    sources_from_environment,
)
from shared.gateway.base import GatewayClient, GatewayRejected, GatewayUnavailable
from shared.gateway.breaker import DEFAULT_COOLDOWN_SECONDS, CircuitBreaker, GuardedClient
from shared.gateway.http import JsonHttpClient
from shared.gateway.ratelimit import DEFAULT_BURST_SECONDS, DEFAULT_MAX_WAIT_SECONDS, RateLimiter, burst_size
from shared.secrets import secret_id
from shared.settings import ConfigurationError, positive_number, text_map
from shared.sources import declared_sources, reset_declared_sources

API_KEY_CACHE_SECONDS = 300
# How long an open circuit refuses calls before it lets one through (shared/gateway/breaker.py). An operator may
# shorten it for a gateway that recovers fast, or lengthen it for one whose outages last; at most an hour.
ENV_BREAKER_COOLDOWN = "INBOX_BREAKER_COOLDOWN_SECONDS"
MAX_BREAKER_COOLDOWN_SECONDS = 3600.0
# The refetch rate limit's shape (shared/gateway/ratelimit.py; the rate itself is the source's): how many seconds of
# its rate a rested source may send at once, and how long a request may sleep for its slot before it is sent back
# to the queue instead.
ENV_REFETCH_BURST_SECONDS = "INBOX_REFETCH_BURST_SECONDS"
ENV_REFETCH_MAX_WAIT_SECONDS = "INBOX_REFETCH_MAX_WAIT_SECONDS"
# Secrets Manager answers that a retry will not fix: the secret is missing or we may not read it.
_CONFIGURATION_ERRORS = frozenset(
    {"ResourceNotFoundException", "AccessDeniedException", "AccessDeniedFault", "DecryptionFailure"}
)

_ClientFactory = Callable[[JsonHttpClient, Callable[[], str]], GatewayClient]
# The modules this registry imports by name: each provider folder's client module (shared/providers/<id>/client.py).
# It refuses any other, and infra/assets.py reads this pattern to stage with the registry the client modules the
# catalog names (and not the drivers it names beside them).
LOADS_MODULES: Final = "shared.providers.*.client"
# provider -> "module:Class" of its client (the provider catalog's `refetch_client`; the module's PROVIDER is the
# provider's id and DEFAULT_BASE_URL its API). A module is imported with the first client of its provider: a
# processor only loads the gateways it refetches from (all seven at import were ~12 ms of its cold start,
# `python -X importtime`).
_PROVIDERS: dict[str, str] = {
    entry.id: entry.refetch_client for entry in PROVIDER_CATALOG if entry.refetch_client is not None
}


def client_class(provider: str) -> tuple[_ClientFactory, str]:
    """The client class of `provider` and its API's default base URL (KeyError for a provider with no API)."""
    module_name, class_name = _PROVIDERS[provider].split(":")
    if not fnmatchcase(module_name, LOADS_MODULES):
        raise ValueError(f"not a gateway client module reference: {_PROVIDERS[provider]!r}")
    module = importlib.import_module(module_name)
    factory: _ClientFactory = getattr(module, class_name)
    return factory, module.DEFAULT_BASE_URL


def payload_reader(reference: str) -> Callable[[str, str | None], str | None]:
    """The payload-status reading a catalog entry names (`payload_status_from`,
    "shared.providers.<id>.client:function"): a function of the provider's client module, beside the refetch's
    status table (shared/process/confirm.py)."""
    module_name, _, attribute = reference.partition(":")
    if not fnmatchcase(module_name, LOADS_MODULES) or not attribute:
        raise ValueError(f"not a gateway module reference: {reference!r}")
    reader: Callable[[str, str | None], str | None] = getattr(importlib.import_module(module_name), attribute)
    return reader


def base_url_variable(source: str) -> str:
    return f"INBOX_API_BASE_{source_env_suffix(source)}"


class ApiKeySource:
    """The source's API key, from Secrets Manager (cached by Powertools)."""

    def __init__(self, source: str, environ: Mapping[str, str] | None = None) -> None:
        self.source = source
        self._environ = os.environ if environ is None else environ

    def __call__(self) -> str:
        try:
            ids = text_map(self._environ, ENV_API_KEY_SECRETS)
        except ConfigurationError as error:  # a broken deployment: an operator must act, retrying will not help
            raise GatewayRejected(f"API key secret for {self.source} not configured: {error}") from None
        identifier = secret_id(ids, self._environ.get(ENV_API_KEY_SECRET_PREFIX, "").strip(), self.source)
        if identifier is None:
            raise GatewayRejected(
                f"no API key for {self.source}: set {ENV_API_KEY_SECRETS} or {ENV_API_KEY_SECRET_PREFIX}"
            )
        # Imported here: only the first refetch of each provider pays for Powertools' parameters module.
        from aws_lambda_powertools.utilities import parameters  # noqa: PLC0415

        try:
            value: Any = parameters.get_secret(identifier, max_age=API_KEY_CACHE_SECONDS)
        except Exception as error:
            reason = type(error).__name__
            if _error_code(error) in _CONFIGURATION_ERRORS:
                raise GatewayRejected(f"API key secret for {self.source} not readable: {reason}") from error
            raise GatewayUnavailable(f"API key secret for {self.source} unavailable: {reason}") from error
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        if not isinstance(value, str) or not value.strip():
            raise GatewayRejected(f"API key secret for {self.source} is empty")
        return value.strip()


def _error_code(error: BaseException) -> str | None:
    """The AWS error code somewhere in the exception chain (Powertools wraps botocore's ClientError)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        response = getattr(current, "response", None)
        if isinstance(response, dict):
            code = response.get("Error", {}).get("Code")
            if isinstance(code, str):
                return code
        current = current.__cause__ or current.__context__
    return None


_lock = threading.Lock()
_clients: dict[str, GatewayClient] = {}


def supported_providers() -> tuple[str, ...]:
    """Providers the processor can refetch from."""
    return tuple(_PROVIDERS)


def source_refetch_rate(source: str, provider: str, environ: Mapping[str, str]) -> float:
    """Requests per second `source` may send: its declaration's (INBOX_SOURCES, from sources.json), else its
    provider's documented rate (a source not declared: a default deployment names sources after their providers)."""
    try:
        sources = sources_from_environment(environ)
    except SourcesInvalid as error:  # a broken deployment: an operator must act, retrying will not help
        raise GatewayRejected(f"sources not readable for {source}: {error}") from None
    try:
        return find_source(sources, source).refetch_rate
    except KeyError:
        return SourceSpec(name=source, provider=provider).refetch_rate


def build_rate_limiter(
    source: str, provider: str, table: str, environ: Mapping[str, str], **options: Any
) -> RateLimiter:
    """The shared refetch rate limit of `source`, kept in the control table `table`."""
    rate = source_refetch_rate(source, provider, environ)
    burst_seconds = positive_number(environ, ENV_REFETCH_BURST_SECONDS, DEFAULT_BURST_SECONDS, high=10.0)
    max_wait = positive_number(environ, ENV_REFETCH_MAX_WAIT_SECONDS, DEFAULT_MAX_WAIT_SECONDS, high=5.0)
    return RateLimiter(table, source, rate, burst=burst_size(rate, burst_seconds), max_wait_seconds=max_wait, **options)


def build_gateway_client(
    source: str,
    environ: Mapping[str, str] | None = None,
    *,
    provider: str | None = None,
    api_key: Callable[[], str] | None = None,
) -> GatewayClient | None:
    """A new client for the source named `source` from `environ` (default: the process environment), or None if
    its provider has no API. `provider` defaults to `source` (a provider's default source is named after it);
    `api_key` to the source's Secrets Manager secret (`ApiKeySource`)."""
    provider = provider or source
    if provider not in _PROVIDERS:
        return None
    factory, default_base = client_class(provider)
    env = os.environ if environ is None else environ
    table = env.get(ENV_CONTROL_TABLE, "").strip()
    limiter = build_rate_limiter(source, provider, table, env) if table else None
    http = JsonHttpClient(
        env.get(base_url_variable(source), "").strip() or default_base, provider=provider, throttle=limiter
    )
    client = factory(http, api_key or ApiKeySource(source, env))
    cooldown = positive_number(env, ENV_BREAKER_COOLDOWN, DEFAULT_COOLDOWN_SECONDS, high=MAX_BREAKER_COOLDOWN_SECONDS)
    # One breaker per source: the control item is "breaker#{source}".
    breaker = CircuitBreaker(table, source, cooldown_seconds=cooldown) if table else None
    return GuardedClient(client, breaker, limiter)


def gateway_client(source: str) -> GatewayClient | None:
    """The process-wide client of the declared source `source` (None for a source whose provider has no API to
    refetch from, or a source not declared: its events then fail with a clear reason)."""
    provider = declared_sources().provider_of(source)
    if provider is None or provider not in _PROVIDERS:
        return None
    with _lock:
        client = _clients.get(source)
        if client is None:
            client = build_gateway_client(source, provider=provider)
            assert client is not None
            _clients[source] = client
        return client


def reset_gateway_clients() -> None:
    """Forget the cached clients and the declaration (tests change the environment between cases)."""
    with _lock:
        _clients.clear()
    reset_declared_sources()
