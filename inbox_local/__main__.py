"""`python -m inbox_local`: run the local stack until interrupted (what `make run` does)."""

from __future__ import annotations

import signal
import sys

from inbox_local import profiling
from inbox_local.runtime import LocalStack


def main() -> int:
    profile = profiling.start()  # INBOX_PROFILE=<directory>: CPU profile of this process
    stack = LocalStack()

    def _stop(signum: int, _frame: object) -> None:
        print(f"\nstopping (signal {signum})...", file=sys.stderr, flush=True)
        stack.request_stop()

    # Installed before start(): the API answers /health as soon as start() serves it, and an interrupt that
    # lands between then and here would otherwise kill the process by the default handler (exit -2).
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    try:
        stack.start()
        print(stack.banner(), flush=True)
        stack.wait()
    finally:
        stack.stop()
        profiling.finish(profile)
    print("stopped.", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
