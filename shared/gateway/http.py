"""A small JSON GET client for gateway APIs: short timeouts, bounded retries, full jitter, Retry-After.

What maps to what (the refetch contract in `shared.gateway.base`):
- 2xx with a JSON object body -> the object.
- 404 -> ResourceNotFound (the webhook raced the API: retry with backoff, outside this call).
- with a rate limit (`throttle`, shared/gateway/ratelimit.py): every request takes a slot first, and a 429 blocks
  the whole source (`throttle.block(Retry-After)`) and ends the call at once with GatewayUnavailable(throttled=True):
  waiting for the gateway's limit is not one of the event's attempts.
- 429 (without a rate limit), 408 and 5xx, timeouts and connection errors -> retried here, at most `max_attempts`
  calls in all, with full-jitter exponential backoff (a random wait in [0, min(max_delay, base_delay * 2**n)]).
  A `Retry-After` (delay-seconds or HTTP-date) is honoured when it is within `max_retry_after`; a longer one gives
  up at once with GatewayUnavailable(retry_after=...), so the caller delays the message instead of the Lambda sleeping.
  No new attempt starts more than `budget_seconds` after the first: a Lambda batch must not spend its timeout
  here.
  Once retries are exhausted: GatewayUnavailable.
- any other status (400, 401, 403, 3xx, ...) -> GatewayHttpRejected (a GatewayRejected): retrying will not fix it.
- 2xx whose body is not a JSON object -> GatewayUnavailable (a proxy's HTML page or a truncated answer is
  worth another try later, not an operator page).

Never logged: request headers (the API key is one), response bodies (they hold customer data). Logged: the
method, the path, the status or error class, the attempt and the wait. Error codes a gateway puts in a 4xx body
(`error.code`, `errors[].code`) are kept on the exception: they are enumerations, not data.

urllib3 ships with botocore, so this costs no dependency in Lambda. One PoolManager per process keeps TLS
connections warm across invocations.
"""

from __future__ import annotations

import base64
import json
import math
import random as _random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import Any, Protocol
from urllib.parse import quote, urlencode

import urllib3

from shared.backoff import Backoff, Jitter
from shared.gateway.base import GatewayRejected, GatewayUnavailable, ResourceNotFound
from shared.observability import logger
from shared.payments.status import PaymentStatus

CONNECT_TIMEOUT_SECONDS = 2.0
READ_TIMEOUT_SECONDS = 5.0
MAX_ATTEMPTS = 3
BASE_DELAY_SECONDS = 0.25
MAX_DELAY_SECONDS = 2.0
MAX_RETRY_AFTER_SECONDS = 10.0
# No attempt starts (its wait included) later than this after the first one began: a call lasts at most about
# BUDGET_SECONDS + one request (connect 2 s + read 5 s), ~19 s, and typically far less.
BUDGET_SECONDS = 12.0
MAX_BODY_BYTES = 1024 * 1024  # a payment is a few KB; anything near this is not the API we asked
USER_AGENT = "webhook-inbox/0.1 (+refetch)"

RETRYABLE_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504}) | frozenset(range(505, 600))


class GatewayHttpRejected(GatewayRejected):
    """A non-retryable HTTP answer. `error_codes` are the gateway's error codes, if its body had any."""

    def __init__(self, message: str, *, status: int, error_codes: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.status = status
        self.error_codes = error_codes


class GatewayResponseInvalid(GatewayRejected):
    """The gateway answered 2xx with JSON we cannot read (a field missing, a status we do not know).

    Retrying returns the same answer: our mapping is out of date or the base URL points at the wrong thing.
    """


def basic_authorization(user: str, password: str = "") -> str:
    """An HTTP Basic `Authorization` value (RFC 7617): `Basic ` and the base64 of `user:password`. Gateways that
    take their API key as the user leave the password empty."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


def centavos(document: Mapping[str, Any], key: str, where: str) -> int | None:
    """An amount a gateway answers in integer minor units (centavos): None when absent; GatewayResponseInvalid when
    it is anything but a non-negative integer (`where` names the object, provider first: "iugu invoice")."""
    value = document.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise GatewayResponseInvalid(f"{where}.{key} is not an amount in centavos")
    return value


def status_word(document: Mapping[str, Any], where: str) -> str:
    """The `status` an answer states; GatewayResponseInvalid when it states none (`where`: "iugu invoice")."""
    status = document.get("status")
    if not isinstance(status, str) or not status:
        raise GatewayResponseInvalid(f"{where} has no status")
    return status


def mapped_status(table: Mapping[str, PaymentStatus], status: str, where: str) -> PaymentStatus:
    """What a gateway's status word is in canonical terms; GatewayResponseInvalid for a word the table does not know
    (our mapping is out of date: retrying returns the same answer)."""
    try:
        return table[status]
    except KeyError:
        raise GatewayResponseInvalid(f"{where} status {status[:40]!r} is not mapped") from None


def answered_currency(value: object, default: str | None) -> str | None:
    """The currency an answer states, upper case; `default` when it states none."""
    return value.upper() if isinstance(value, str) and value else default


def check_answered(answered_id: object, asked_id: str, *, provider: str, what: str) -> None:
    """GatewayResponseInvalid when the answer is about another resource than the one asked for (an answer without
    an id is taken as the one asked for: the path named it)."""
    if answered_id not in (None, asked_id):
        raise GatewayResponseInvalid(f"{provider} answered a different {what} than the one asked for")


class RequestThrottle(Protocol):
    """The source's shared rate limit (shared/gateway/ratelimit.py): a slot before each request, a block on 429."""

    def acquire(self) -> float: ...

    def block(self, retry_after: float | None) -> None: ...


class HttpPool(Protocol):
    """What we use of urllib3.PoolManager; tests inject a fake."""

    def request(self, method: str, url: str, **kwargs: Any) -> Any: ...


_pool_lock = threading.Lock()
_shared_pool: urllib3.PoolManager | None = None


def shared_pool() -> urllib3.PoolManager:
    """The process-wide connection pool, created on first use (never at import)."""
    global _shared_pool  # noqa: PLW0603 - one pool per process is the point
    with _pool_lock:
        if _shared_pool is None:
            _shared_pool = urllib3.PoolManager(
                num_pools=4,
                maxsize=10,  # the processor's batch fans out to at most this many concurrent refetches
                timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT_SECONDS, read=READ_TIMEOUT_SECONDS),
                retries=False,
            )
        return _shared_pool


def parse_retry_after(value: str | None, *, now: float) -> float | None:
    """`Retry-After` as seconds from `now`: delay-seconds or an HTTP-date. None when absent or unreadable."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = when.timestamp() - now
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def path_segment(value: str) -> str:
    """A resource id as one path segment: `/`, `..`, `?` and `#` in an id cannot reach another endpoint."""
    segment = quote(value, safe="")
    if segment in {"", ".", ".."}:
        raise ResourceNotFound("not a resource id")
    return segment


def _error_codes(body: bytes) -> tuple[str, ...]:
    """The error codes of a 4xx body: Stripe `{"error": {"code"}}`, Asaas `{"errors": [{"code"}]}`."""
    try:
        document = json.loads(body[:65536].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return ()
    if not isinstance(document, dict):
        return ()
    codes: list[str] = []
    error = document.get("error")
    if isinstance(error, dict):
        for key in ("code", "type"):
            if isinstance(error.get(key), str):
                codes.append(error[key])
    errors = document.get("errors")
    if isinstance(errors, list):
        codes.extend(item["code"] for item in errors if isinstance(item, dict) and isinstance(item.get("code"), str))
    return tuple(code[:64] for code in codes[:10])


class JsonHttpClient:
    """GET JSON objects from one API base URL. Thread-safe: it holds no per-request state."""

    def __init__(
        self,
        base_url: str,
        *,
        provider: str,
        pool: HttpPool | None = None,
        max_attempts: int = MAX_ATTEMPTS,
        base_delay: float = BASE_DELAY_SECONDS,
        max_delay: float = MAX_DELAY_SECONDS,
        max_retry_after: float = MAX_RETRY_AFTER_SECONDS,
        budget_seconds: float = BUDGET_SECONDS,
        timeout: urllib3.Timeout | None = None,
        sleep: Callable[[float], None] = time.sleep,
        random: Callable[[], float] = _random.random,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        throttle: RequestThrottle | None = None,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.base_url = base_url.rstrip("/")
        self.provider = provider
        self._pool = pool
        self._max_attempts = max_attempts
        self._backoff = Backoff(base=base_delay, cap=max_delay, jitter=Jitter.FULL)
        self._max_retry_after = max_retry_after
        self._budget = budget_seconds
        self._timeout = timeout or urllib3.Timeout(connect=CONNECT_TIMEOUT_SECONDS, read=READ_TIMEOUT_SECONDS)
        self._sleep = sleep
        self._random = random
        self._clock = clock
        self._monotonic = monotonic
        self._throttle = throttle

    def get_json(
        self,
        path: str,
        *,
        headers: Mapping[str, str],
        query: Sequence[tuple[str, str]] = (),
        parse_float: Callable[[str], Any] | None = None,
        pool: HttpPool | None = None,
    ) -> dict[str, Any]:
        """GET `{base_url}{path}?{query}`; `path` must already be escaped (see `path_segment`). `pool` overrides
        the client's pool for this call (a gateway that wants a client certificate: shared/providers/efi/client.py)."""
        return self.request_json("GET", path, headers=headers, query=query, parse_float=parse_float, pool=pool)

    def post_json(
        self, path: str, *, headers: Mapping[str, str], body: bytes, pool: HttpPool | None = None
    ) -> dict[str, Any]:
        """POST `body` to `{base_url}{path}` (an OAuth token request), with the same retries and mapping as GET:
        only for requests that are safe to repeat."""
        return self.request_json("POST", path, headers=headers, body=body, pool=pool)

    def request_json(
        self,
        method: str,
        path: str,
        *,
        headers: Mapping[str, str],
        query: Sequence[tuple[str, str]] = (),
        body: bytes | None = None,
        parse_float: Callable[[str], Any] | None = None,
        pool: HttpPool | None = None,
    ) -> dict[str, Any]:
        url = f"{self.base_url}{path}"
        if query:
            url = f"{url}?{urlencode(list(query))}"
        request_headers = {"Accept": "application/json", "User-Agent": USER_AGENT, **headers}
        pool = pool or self._pool or shared_pool()
        started = self._monotonic()
        send: dict[str, Any] = {} if body is None else {"body": body}

        for attempt in range(1, self._max_attempts + 1):
            retry_after: float | None = None
            self._take_slot(attempt, path)
            try:
                response = pool.request(
                    method,
                    url,
                    **send,
                    headers=request_headers,
                    timeout=self._timeout,
                    retries=False,
                    redirect=False,
                    preload_content=False,
                )
                status, body, retry_after_header = self._consume(response)
            except urllib3.exceptions.HTTPError as error:  # timeouts, refused/reset connections, TLS, protocol
                failure = type(error).__name__
            else:
                if 200 <= status < 300:
                    return self._decode(body, path, parse_float)
                if status == 404:
                    raise ResourceNotFound(f"{self.provider} answered 404 for {path}")
                if status not in RETRYABLE_STATUSES:
                    codes = _error_codes(body)
                    raise GatewayHttpRejected(
                        f"{self.provider} answered {status} for {path}" + (f" ({', '.join(codes)})" if codes else ""),
                        status=status,
                        error_codes=codes,
                    )
                failure = f"HTTP {status}"
                retry_after = parse_retry_after(retry_after_header, now=self._clock())
                if status == 429 and self._throttle is not None:
                    # The gateway's own limit: the whole source waits (every instance), this call gives up now.
                    self._throttle.block(retry_after)
                    raise GatewayUnavailable(
                        f"{self.provider} answered 429 for {path}", retry_after=retry_after, throttled=True
                    )

            message = f"{self.provider} unavailable for {path}: {failure} (attempt {attempt}/{self._max_attempts})"
            if retry_after is not None and retry_after > self._max_retry_after:
                # Sleeping that long would hold the whole batch: hand the wait to the queue instead.
                raise GatewayUnavailable(message, retry_after=retry_after)
            if attempt == self._max_attempts:
                raise GatewayUnavailable(message, retry_after=retry_after)
            delay = self._backoff.delay(attempt, self._random)
            if retry_after is not None:
                delay = max(delay, retry_after)
            if self._monotonic() - started + delay > self._budget:
                raise GatewayUnavailable(message + "; retry budget spent", retry_after=retry_after)
            logger.warning(
                "gateway call failed, retrying",
                extra={
                    "provider": self.provider,
                    "path": path,
                    "failure": failure,
                    "attempt": attempt,
                    "delay_seconds": round(delay, 3),
                },
            )
            self._sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover - the loop always returns or raises

    def _take_slot(self, attempt: int, path: str) -> None:
        """Every request, retries included, takes a slot of the source's rate limit. Refused before the first one:
        RateLimited propagates (no request was made, not an attempt). Refused before a retry: the call did fail,
        so it ends as the failure it is, with the limiter's wait as its Retry-After."""
        if self._throttle is None:
            return
        try:
            self._throttle.acquire()
        except GatewayUnavailable as refused:
            if attempt == 1:
                raise
            raise GatewayUnavailable(
                f"{self.provider} unavailable for {path}; retry {attempt} not within the rate limit",
                retry_after=refused.retry_after,
            ) from refused

    @staticmethod
    def _consume(response: Any) -> tuple[int, bytes, str | None]:
        """Status, body (bounded) and Retry-After of a response; the connection goes back to the pool."""
        try:
            status = int(response.status)
            retry_after = response.headers.get("Retry-After")
            body: bytes = response.read(MAX_BODY_BYTES + 1)
            if len(body) > MAX_BODY_BYTES:
                response.close()  # the rest is unread: this connection must not serve another request
        finally:
            response.release_conn()
        return status, body, retry_after

    def _decode(self, body: bytes, path: str, parse_float: Callable[[str], Any] | None) -> dict[str, Any]:
        if len(body) > MAX_BODY_BYTES:
            raise GatewayUnavailable(f"{self.provider} answered an oversized body for {path}")
        try:
            document = json.loads(body.decode("utf-8"), parse_float=parse_float, parse_constant=_no_constants)
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise GatewayUnavailable(f"{self.provider} answered a body that is not JSON for {path}") from None
        if not isinstance(document, dict):
            raise GatewayUnavailable(f"{self.provider} answered JSON that is not an object for {path}")
        return document


def _no_constants(name: str) -> Any:
    raise ValueError(f"non-finite number {name}")


class ApiKeyClient:
    """Base of a client that reads one gateway API with the source's API key. Both are injected: the HTTP client
    (its base URL, retries and rate limit are the source's) and the key as a callable, read at each request so
    that a rotated key is used as soon as it is stored. A subclass names its `provider` and reads the payment."""

    provider: str

    def __init__(self, http: JsonHttpClient, api_key: Callable[[], str]) -> None:
        self._http = http
        self._api_key = api_key
