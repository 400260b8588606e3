"""`python -m inbox_local.gateway_simulator`: the simulator alone, until Ctrl-C."""

from __future__ import annotations

import argparse
import sys
import threading

from inbox_local.api_keys import api_key_variable
from inbox_local.gateway_simulator.core import GatewaySimulator


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Payment gateway API simulator (the local stack's gateway truth)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8790)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    simulator = GatewaySimulator(args.port, host=args.host, seed=args.seed).start()
    print(f"gateway simulator on {simulator.url}", flush=True)
    for name, value in simulator.environment().items():
        print(f"  {name}={value}", flush=True)
    # The accounts' keys, as the local stack takes them from its environment (and stores them as their secrets).
    for account, key in simulator.api_keys.items():
        if key:
            print(f"  {api_key_variable(account)}={key}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        simulator.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
