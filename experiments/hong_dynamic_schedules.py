"""Uniform vs dynamic noise schedules (Hong, Wang, Zhou): ``noisygd reproduce hong-dynamic``."""

import sys

from noisygd.reproductions.hong_dynamic import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
