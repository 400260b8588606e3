"""What every function's composition root shares: the clients it is given, the hook that wraps what it hands out,
and the slot its handler takes it from.

Each function has one root, a `build_*` function next to its service (docs/architecture.md, "Composition roots"),
that builds everything the function uses from its settings and the clients it is given, and nothing else in the
function builds a collaborator of its own. The handler, the local stack and the tests call the same builder: the
handler through its `Root` (built from the environment at the first invocation), a test with fakes, the local stack
with its fault injection's `Wrap`, installed with `Root.install` before the stack serves.

Standard library only: every Lambda imports it on its cold-start path.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, Protocol, TypeVar

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_events import EventBridgeClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient

T = TypeVar("T")


class AwsClients(NamedTuple):
    """The AWS clients a root hands to what it builds. A service left None is the function's shared client of it
    (shared/aws.py; the forwarder's two DynamoDB clients are its own, shared/forwarding.py), made on first use, not
    when the root is built: a cold start makes only the clients its first request needs. Tests pass fakes or
    moto's clients."""

    dynamodb: DynamoDBClient | None = None
    # For writes whose loss is only counted (the rejected-delivery log, the forwarding log): short timeouts.
    dynamodb_best_effort: DynamoDBClient | None = None
    s3: S3Client | None = None
    sqs: SQSClient | None = None
    events: EventBridgeClient | None = None


SHARED_CLIENTS = AwsClients()  # what a Lambda's root is built with


class Wrap(Protocol):
    """Applied by a root to each part it builds that talks to AWS (a store, the retry queue, a log, the publisher)
    before handing it out; returns what to hand out in its place, of the same type. The local stack's fault
    injection wraps the ingest's inbox store and the processor's store this way (inbox_local/faults.py)."""

    def __call__(self, part: T, /) -> T: ...


def unwrapped(part: T, /) -> T:
    """The Wrap of a root that hands out what it built, as it is (every Lambda's)."""
    return part


class Root(Generic[T]):
    """A function's root as its handler takes it: built by `build` (its settings from the environment, the shared
    clients) at the first call, once per Lambda instance, unless one was installed."""

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._root: T | None = None
        # Concurrent first calls (the local front door's threads) build one root, not one each.
        self._lock = threading.Lock()
        _ROOTS.append(self)

    def __call__(self) -> T:
        root = self._root
        if root is None:
            with self._lock:
                root = self._root
                if root is None:
                    root = self._root = self._build()
        return root

    def install(self, root: T) -> None:
        """Make `root` the one the handler uses from now on: the local stack installs each root it built with its
        fault injection's Wrap, before the function's first invocation. The one supported way to change what a
        handler runs with; nothing assigns to a built service."""
        with self._lock:
            self._root = root

    def reset(self) -> None:
        """Forget the built or installed root: the next call builds it again (tests change the environment and the
        AWS endpoint between cases)."""
        with self._lock:
            self._root = None

    def __repr__(self) -> str:  # what a failed assertion names
        name = getattr(self._build, "__qualname__", repr(self._build))
        return f"Root({name})"


_ROOTS: list[Root[Any]] = []  # every function's, one each: the modules that define them are imported once


def reset_roots() -> None:
    """Forget every root built or installed in this process (tests: a root must not outlive its AWS mock)."""
    for root in _ROOTS:
        root.reset()
