"""RRPSGD vs Theorem 5 on UCI data: ``noisygd reproduce rrpsgd-theorem5``."""

import sys

from noisygd.reproductions.rrpsgd_theorem5 import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
