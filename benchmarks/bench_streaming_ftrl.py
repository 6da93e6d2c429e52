"""Streaming DP-FTRL over a 10-million-row synthetic logistic dataset read from disk in chunks.

The data (``--rows`` x ``--features`` float32, labels int8) are generated chunk by chunk into
raw files in a temporary directory (about 800 MB for the defaults), then DP-FTRL
(:func:`noisygd.algorithms.dp_ftrl.dp_ftrl_stream`) reads them back chunk by chunk with
plain ``numpy.fromfile`` reads (no memory map, so file pages are not charged to this
process), keeping O(d log T) state. Reported: peak resident memory of the process
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``) before and after the run, rows per second
of the training pass, the epsilon of the run and the test accuracy on fresh rows.
Writes ``benchmarks/results/streaming_ftrl.{json,md}``.

Run: ``.venv/bin/python benchmarks/bench_streaming_ftrl.py [--rows 10000000]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from _common import environment, write_results

from noisygd.accounting import best
from noisygd.algorithms.dp_ftrl import array_chunk_oracles, dp_ftrl_stream
from noisygd.objectives import LogisticLoss


def peak_rss_mb() -> float:
    """Peak resident set size of this process in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def generate(path: Path, rows: int, d: int, chunk: int, seed: int) -> np.ndarray:
    """Write X (float32, rows with norm <= 1) and y (int8, +-1) chunk by chunk; return w*."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d) * 4.0 / np.sqrt(d)
    with open(path / "X.f32", "wb") as fx, open(path / "y.i8", "wb") as fy:
        for lo in range(0, rows, chunk):
            k = min(chunk, rows - lo)
            Xc = rng.normal(size=(k, d)).astype(np.float32)
            Xc /= np.maximum(1.0, np.linalg.norm(Xc, axis=1, keepdims=True)).astype(np.float32)
            p = 1.0 / (1.0 + np.exp(-(Xc @ w)))
            yc = np.where(rng.random(k) < p, 1, -1).astype(np.int8)
            Xc.tofile(fx)
            yc.tofile(fy)
    return w


def read_chunks(
    path: Path, rows: int, d: int, chunk: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield (X, y) chunks read with ``numpy.fromfile`` (fresh buffers, no memory map)."""
    with open(path / "X.f32", "rb") as fx, open(path / "y.i8", "rb") as fy:
        for lo in range(0, rows, chunk):
            k = min(chunk, rows - lo)
            Xc = np.fromfile(fx, dtype=np.float32, count=k * d).reshape(k, d)
            yc = np.fromfile(fy, dtype=np.int8, count=k).astype(np.float64)
            yield Xc.astype(np.float64), yc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--chunk", type=int, default=200_000)
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--noise-multiplier", type=float, default=28.0)  # eps ~ 1 at T = 1e4
    parser.add_argument("--l2-ftrl", type=float, default=3000.0)
    parser.add_argument("--tmp-dir", default=None)
    parser.add_argument("--name", default="streaming_ftrl")
    args = parser.parse_args(argv)
    n, d = args.rows, args.features
    rss_start = peak_rss_mb()
    with tempfile.TemporaryDirectory(dir=args.tmp_dir) as tmp:
        path = Path(tmp)
        t0 = time.perf_counter()
        w_star = generate(path, n, d, args.chunk, seed=0)
        gen_s = time.perf_counter() - t0
        size_mb = sum(f.stat().st_size for f in path.iterdir()) / 2**20
        rss_after_gen = peak_rss_mb()
        obj = LogisticLoss()
        t0 = time.perf_counter()
        res = dp_ftrl_stream(
            array_chunk_oracles(obj, lambda: read_chunks(path, n, d, args.chunk),
                                row_norm_bound=1.0),
            noise_multiplier=args.noise_multiplier, clip=1.0, l2_ftrl=args.l2_ftrl,
            batch_size=args.batch_size, epochs=1, tree="honaker", output="average",
            rng=np.random.default_rng(1))
        fit_s = time.perf_counter() - t0
    rss_end = peak_rss_mb()
    acct = best(res.event, 1e-5)
    rng = np.random.default_rng(99)
    Xt = rng.normal(size=(100_000, d))
    Xt /= np.maximum(1.0, np.linalg.norm(Xt, axis=1, keepdims=True))
    yt = np.where(rng.random(100_000) < 1 / (1 + np.exp(-(Xt @ w_star))), 1, -1)
    acc = float(np.mean(np.sign(obj.margins(res.theta, Xt)) == yt))
    bayes = float(np.mean(np.sign(Xt @ w_star) == yt))
    rows = [{
        "rows": n, "features": d, "batch_size": args.batch_size, "steps": res.n_iter,
        "data_on_disk_MiB": size_mb, "fit_seconds": fit_s, "rows_per_second": n / fit_s,
        "peak_rss_MiB": rss_end, "peak_rss_before_fit_MiB": rss_after_gen,
        "epsilon": acct.epsilon, "delta": 1e-5, "accountant": acct.accountant,
        "test_accuracy": acc, "bayes_accuracy": bayes,
    }]
    meta = {"title": "Streaming DP-FTRL over data on disk",
            "command": "python " + " ".join(["benchmarks/bench_streaming_ftrl.py", *sys.argv[1:]]),
            "environment": environment(), "generation_seconds": gen_s,
            "rss_at_start_MiB": rss_start, "noise_multiplier": args.noise_multiplier,
            "l2_ftrl": args.l2_ftrl, "chunk_rows": args.chunk, "mu": res.event.mu,
            "peak_rss_under_1GB": rss_end < 1024.0}
    _, mpath = write_results(args.name, rows, meta, extra_markdown=(
        f"Peak RSS {rss_end:.0f} MiB (< 1 GiB: {rss_end < 1024}); "
        f"{n / fit_s:,.0f} rows/s; data {size_mb:.0f} MiB on disk, generated in {gen_s:.1f} s "
        "(just written, so reads are likely served from the OS page cache)."))
    print(mpath.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
