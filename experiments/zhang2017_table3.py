"""Reproduce Table 3 of Zhang et al. (IJCAI 2017); see noisygd.reproductions.zhang2017_table3."""

import sys

from noisygd.reproductions.zhang2017_table3 import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
