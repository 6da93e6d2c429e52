"""Run every benchmark script in this folder (``make bench``).

Each ``bench_*.py`` writes JSON and a Markdown table under ``benchmarks/results/``.
The data directory is passed as ``NOISYGD_DATA_DIR``. Scripts in :data:`SEPARATE` (over half
an hour on 2 cores) run only when named with ``--only`` (or by their own make target).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: Run only on request: ``make bench-utility``, ``make bench-dask`` (20 million rows: 4 GB of
#: Parquet in a temporary folder).
SEPARATE = ("bench_utility", "bench_dask")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", default=str(HERE.parent / ".." / "shared" / "data" / "uci"))
    parser.add_argument("--only", nargs="*", help="names of scripts to run (default: all)")
    args = parser.parse_args(argv)
    env = dict(os.environ, NOISYGD_DATA_DIR=str(Path(args.data_dir).resolve()))
    scripts = sorted(HERE.glob("bench_*.py"))
    if args.only:
        scripts = [s for s in scripts if s.stem in args.only or s.name in args.only]
    else:
        scripts = [s for s in scripts if s.stem not in SEPARATE]
    failed = []
    for script in scripts:
        t0 = time.perf_counter()
        print(f"== {script.name}", flush=True)
        code = subprocess.call([sys.executable, str(script)], env=env, cwd=HERE.parent)
        print(f"== {script.name}: exit {code} in {time.perf_counter() - t0:.1f} s", flush=True)
        if code:
            failed.append(script.name)
    if failed:
        print("failed: " + ", ".join(failed), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
