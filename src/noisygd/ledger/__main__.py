"""``python -m noisygd.ledger show|set-budget|history|export ...``."""

from __future__ import annotations

import sys

from noisygd.ledger.cli import main

if __name__ == "__main__":
    sys.exit(main())
