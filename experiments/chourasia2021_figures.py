"""Figures 1 and 2 of Chourasia, Ye, Shokri (NeurIPS 2021).

Same as ``noisygd reproduce chourasia2021-figures``.
"""

import sys

from noisygd.reproductions.chourasia2021 import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
