"""`python -m inbox_cli.chaos [inbox chaos options]`: the same run as `inbox chaos`, on a local stack of its own."""

from __future__ import annotations

import sys

from inbox_cli.chaos.own_stack import main

if __name__ == "__main__":
    sys.exit(main())
