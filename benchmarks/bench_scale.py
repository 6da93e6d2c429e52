"""Scale benchmark (issue 9): the default fit at the memory-bandwidth floor, with its peers.

Problems (``_scale_problems.py``; fixed seed, rows of norm <= 1, generated in blocks):
synthetic dense logistic data with d = 50 and n = 1e5, 1e6, 1e7 (float64, C-contiguous; X is
4 GB at n = 1e7), and a CSR problem n = 1e6, d = 1e4 at 0.1% density. For each problem, each
in its own fresh process (so that peak memory belongs to one fit):

* noisygd's default ``DPLogisticRegression`` (epsilon 1, delta 1e-5, ``classes`` and
  ``n_samples_public`` declared), run through the estimator;
* scikit-learn ``LogisticRegression(solver="lbfgs")`` on the same matrix (non-private);
* diffprivlib 0.6.6 ``LogisticRegression(epsilon=1, data_norm=1)``, run by the python of the
  peers' environment ``.venv-peers`` (``make bench-env``); "not installed" rows when it is absent.

Columns: wall time of the fit; its steps (noisy steps for noisygd, L-BFGS iterations for the
others); for noisygd the passes over X per step read from the oracle's ``rows_read`` counter
(``(rows_read - setup rows) / n / steps``) and the setup passes before the first gradient;
seconds per step (noisygd: the step phase, first gradient call to last, over the steps; the
others: fit time over iterations) against the time of one read of all of X at the bandwidth
that ``X.sum()`` reaches in the same process; peak resident memory (``ru_maxrss``) against
``X.nbytes``. Targets (issue 9, for noisygd): passes/step <= 1.1, time/step <= 1.2 reads,
peak RSS <= 1.2 X + 200 MB, the n = 1e7 fit completes, sparse X fits through the estimator.

Whole fits (issue 19): per problem, one more process fits noisygd's default and scikit-learn
lbfgs alternately on the same X, three times each after one untimed fit of each (reported
apart: a process's first fit also pays one-off costs), each timed fit after 0.5 s of rest, and
reports the median wall times, their ratio (target <= 2), both training log losses (target:
noisygd within 0.002 of lbfgs), the method the default chose, its steps and its passes over X;
beside them the same pairs back to back, with no rest (``_scale_problems.PAUSE_S``).

Also on Adult (``noisygd.data.load_uci``): the time of
``best(SelfComposed(Gaussian(4.0), 500), 1e-5)`` (target < 10 ms); the NoisySGD fit against
the NoisyGD fit (target ratio <= 2); ``langevin`` and ``output_perturbation`` fits, with the
storage their oracle used and the per-step cost of that oracle against dense storage forced.

Run: ``.venv/bin/python benchmarks/bench_scale.py [--quick] [--data-dir ../shared/data/uci]``
(``make bench-scale``; ``--quick`` runs n = 1e5 only, for development).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from _common import data_dir, environment, markdown_table, write_results

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORKER = HERE / "_scale_problems.py"
PEERS_PYTHON = ROOT / ".venv-peers" / "bin" / "python"
MB = 1e6

FULL_PROBLEMS = ("dense-100000", "dense-1000000", "dense-10000000", "sparse")
QUICK_PROBLEMS = ("dense-100000",)
CONTENDERS = ("noisygd", "sklearn", "diffprivlib")
# Resident memory a worker may need, in multiples of X (diffprivlib clips into a copy of X and
# scikit-learn's lbfgs path may copy again); a worker is not started without it.
MEMORY_FACTOR = {"noisygd": 1.5, "sklearn": 2.5, "diffprivlib": 3.5, "interleaved": 2.5}
#: Whole-fit targets (issue 19): the default fit at most 2x lbfgs, training log loss within
#: 0.002 of lbfgs's.
TARGET_WHOLE_RATIO, TARGET_LOSS_GAP = 2.0, 0.002
WHOLE_COLUMNS = (
    "problem", "method", "steps", "passes", "noisygd_s", "sklearn_s", "ratio", "noisygd_first_s",
    "sklearn_first_s", "back_to_back_noisygd_s", "back_to_back_sklearn_s",
    "ratio_back_to_back", "sklearn_iter",
    "noisygd_loss", "sklearn_loss", "loss_gap", "peak_rss_mb", "time_ok", "loss_ok", "rss_ok",
    "status",
)

TARGET_PASSES = 1.1
TARGET_STEP_READS = 1.2
TARGET_RSS_FACTOR, TARGET_RSS_EXTRA = 1.2, 200 * MB
TARGET_BEST_SECONDS = 0.010
TARGET_SGD_OVER_GD = 2.0

COLUMNS = (
    "problem", "library", "storage", "n", "d", "x_mb", "fit_s", "vs_sklearn", "setup_s", "steps",
    "setup_passes", "passes_per_step", "s_per_step", "one_read_s", "step_over_read",
    "peak_rss_mb", "peak_over_x", "imports_mb", "fit_extra_mb", "passes_ok", "step_ok",
    "rss_ok", "status",
)
ADULT_COLUMNS = ("item", "value", "target", "holds", "details")


# --------------------------------------------------------------------------- workers
def _mem_available() -> int | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - not Linux
        return None
    return None


def _x_bytes(problem: str) -> int:
    if problem == "sparse":
        return 124 * 10**6
    return int(float(problem.split("-", 1)[1])) * 50 * 8


def peers_python(cli_value: str | None) -> tuple[str | None, str]:
    """The peers' python and a reason when it cannot import diffprivlib."""
    exe = Path(cli_value) if cli_value else PEERS_PYTHON
    if not exe.exists():
        return None, f"not installed: {exe} absent (run `make bench-env`)"
    probe = subprocess.run([str(exe), "-c", "import diffprivlib; print(diffprivlib.__version__)"],
                           capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["?"])[-1]
        return None, f"not installed: {exe} cannot import diffprivlib ({last})"
    return str(exe), f"diffprivlib {probe.stdout.strip()}"


def run_worker(python: str, problem: str, contender: str, timeout: float) -> dict[str, Any]:
    """One fit in a fresh process; its ``RESULT`` line, or a row that says why there is none."""
    need = MEMORY_FACTOR[contender] * _x_bytes(problem) + 300 * MB
    avail = _mem_available()
    if avail is not None and avail < need:
        return {"status": f"not run: needs ~{need / 1e9:.1f} GB, {avail / 1e9:.1f} GB available"}
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([python, str(WORKER), problem, contender], capture_output=True,
                              text=True, timeout=timeout, cwd=ROOT, check=False)
    except subprocess.TimeoutExpired:
        return {"status": f"timed out after {timeout:.0f} s"}
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            out = json.loads(line[len("RESULT "):])
            out["status"] = "ok"
            return out
    tail = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
    return {"status": f"failed (exit {proc.returncode}, {time.perf_counter() - t0:.0f} s): "
                      f"{tail[:300]}"}


def scale_row(problem: str, library: str, res: dict[str, Any]) -> dict[str, Any]:
    """The table row of one worker result, with the targets evaluated."""
    row: dict[str, Any] = {"problem": problem, "library": library, "status": res["status"]}
    if res["status"] != "ok":
        return row
    x = res["x_bytes"]
    per_step = res.get("seconds_per_step")
    read = res["one_read_seconds"]
    passes = res.get("passes_per_step")
    row.update({
        "storage": ",".join(res.get("oracle_storage") or []) or ("csr" if res["sparse"]
                                                                  else "dense"),
        "n": res["n"], "d": res["d"], "x_mb": x / MB, "fit_s": res["fit_seconds"],
        "steps": res["steps"], "setup_passes": res.get("setup_passes"),
        "setup_s": res.get("setup_seconds"),
        "passes_per_step": passes, "s_per_step": per_step, "one_read_s": read,
        "step_over_read": per_step / read if per_step is not None else None,
        "peak_rss_mb": res["peak_rss"] / MB, "peak_over_x": res["peak_rss"] / x,
        "fit_extra_mb": res["fit_extra_rss"] / MB,
        "imports_mb": res["rss_after_imports"] / MB,
        "passes_ok": None if passes is None else bool(passes <= TARGET_PASSES),
        "step_ok": None if per_step is None else bool(per_step <= TARGET_STEP_READS * read),
        "rss_ok": bool(res["peak_rss"] <= TARGET_RSS_FACTOR * x + TARGET_RSS_EXTRA),
    })
    row["raw"] = res
    return row


def run_scale(problems: tuple[str, ...], peers: str | None, peers_reason: str,
              timeout: float) -> list[dict[str, Any]]:
    rows = []
    for problem in problems:
        fits: dict[str, dict[str, Any]] = {}
        for contender in CONTENDERS:
            if contender == "diffprivlib" and peers is None:
                fits[contender] = {"problem": problem, "library": contender,
                                   "status": peers_reason}
                continue
            python = peers if contender == "diffprivlib" else sys.executable
            print(f"  {problem}: {contender} ...", flush=True)
            res = run_worker(python, problem, contender, timeout)
            fits[contender] = scale_row(problem, contender, res)
            print(f"  {problem}: {contender}: {fits[contender]['status']} "
                  f"{fits[contender].get('fit_s', float('nan')):.2f} s", flush=True)
        base = fits["sklearn"].get("fit_s")
        for row in fits.values():
            if base and row.get("fit_s") is not None:
                row["vs_sklearn"] = row["fit_s"] / base
            rows.append(row)
    return rows


def whole_fit_row(problem: str, res: dict[str, Any], solo: dict[str, Any] | None
                  ) -> dict[str, Any]:
    """The whole-fit row (issue 19) of one interleaved worker, with the noisygd-alone
    worker's peak memory (``solo``, its own process) and the targets evaluated."""
    row: dict[str, Any] = {"problem": problem, "status": res["status"]}
    if res["status"] != "ok":
        return row
    gap = res["noisygd_log_loss"] - res["sklearn_log_loss"]
    row.update({
        "method": res.get("method"), "steps": res["steps"], "passes": res["passes"],
        "noisygd_s": res["noisygd_median_s"], "sklearn_s": res["sklearn_median_s"],
        "noisygd_first_s": res.get("noisygd_first_s"),
        "sklearn_first_s": res.get("sklearn_first_s"), "ratio": res["ratio"],
        "back_to_back_noisygd_s": res.get("noisygd_back_to_back_s"),
        "back_to_back_sklearn_s": res.get("sklearn_back_to_back_s"),
        "ratio_back_to_back": res.get("ratio_back_to_back"),
        "sklearn_iter": res["sklearn_iterations"],
        "noisygd_loss": res["noisygd_log_loss"], "sklearn_loss": res["sklearn_log_loss"],
        "loss_gap": gap, "time_ok": bool(res["ratio"] <= TARGET_WHOLE_RATIO),
        "loss_ok": bool(gap <= TARGET_LOSS_GAP),
    })
    if solo is not None and solo.get("status") == "ok":
        row["peak_rss_mb"] = solo.get("peak_rss_mb")
        row["rss_ok"] = solo.get("rss_ok")
    row["raw"] = res
    return row


def run_whole_fits(problems: tuple[str, ...], rows: list[dict[str, Any]],
                   timeout: float) -> list[dict[str, Any]]:
    """One interleaved worker per problem (noisygd and lbfgs alternately, median of 3)."""
    out = []
    for problem in problems:
        print(f"  {problem}: whole fits, interleaved ...", flush=True)
        res = run_worker(sys.executable, problem, "interleaved", timeout * 6)
        solo = next((r for r in rows if r["problem"] == problem
                     and r["library"] == "noisygd"), None)
        out.append(whole_fit_row(problem, res, solo))
        r = out[-1]
        print(f"  {problem}: {r['status']} ratio {r.get('ratio', float('nan')):.2f} "
              f"loss gap {r.get('loss_gap', float('nan')):.4f}", flush=True)
    return out


# --------------------------------------------------------------------------- Adult
#: What each import costs in resident memory (issue 19: what the fit path's imports cost and
#: which of them it could avoid): a fresh interpreter per row; ``None`` blocks pandas
#: (scikit-learn imports it at import time whenever it is installed).
IMPORT_PROBES = (
    ("(bare interpreter)", "pass", ""),
    ("numpy", "import numpy", ""),
    ("scipy.sparse", "import scipy.sparse", ""),
    ("scipy.linalg", "import scipy.linalg", ""),
    ("scipy.stats", "import scipy.stats", ""),
    ("pandas", "import pandas", ""),
    ("dp_accounting", "import dp_accounting", ""),
    ("sklearn.base", "import sklearn.base", ""),
    ("sklearn.base, pandas blocked", "import sys; sys.modules['pandas'] = None; "
     "import sklearn.base", "scikit-learn's sklearn.utils.fixes imports pandas if it can"),
    ("sklearn.linear_model", "import sklearn.linear_model", "the lbfgs contender's imports"),
    ("noisygd.oracles.array", "import noisygd.oracles.array", "numpy, scipy.sparse, the kernels"),
    ("noisygd.training", "import noisygd.training", "accounting (dp_accounting)"),
    ("noisygd.estimators", "import noisygd.estimators",
     "the fit path (scikit-learn's base classes); the fit imports nothing more of size"),
)


def import_costs() -> list[dict[str, Any]]:
    """Peak resident memory (``VmHWM``) of a fresh interpreter after each import of
    :data:`IMPORT_PROBES` (this interpreter, this environment)."""
    rows = []
    for name, code, note in IMPORT_PROBES:
        # VmHWM: the peak of this interpreter's own memory map (ru_maxrss would keep the
        # parent's peak across fork and exec)
        probe = (f"{code}\nprint([int(line.split()[1]) * 1024 for line in "
                 "open('/proc/self/status') if line.startswith('VmHWM')][0])")
        proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                              check=False, cwd=ROOT)
        value = (int(proc.stdout.split()[-1]) / MB if proc.returncode == 0 and proc.stdout
                 else None)
        rows.append({"import": name, "peak_rss_mb": value, "note": note})
    return rows


def _median_time(fn: Any, repeats: int) -> tuple[float, float]:
    """(first call, median of ``repeats`` further calls) in seconds."""
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return first, statistics.median(times)


def best_row() -> dict[str, Any]:
    """``best`` on a Gaussian composition: first call (cold caches) and warm median."""
    from noisygd.accounting import Gaussian, SelfComposed, best

    event = SelfComposed(Gaussian(4.0), 500)
    result = best(event, 1e-5)
    first, warm = _median_time(lambda: best(event, 1e-5), 20)
    return {"section": "adult", "item": "best(SelfComposed(Gaussian(4.0), 500), 1e-5) [ms]",
            "value": warm * 1e3, "target": f"< {TARGET_BEST_SECONDS * 1e3:g}",
            "holds": bool(warm < TARGET_BEST_SECONDS),
            "details": f"median of 20 calls; first call {first * 1e3:.2f} ms; epsilon "
                       f"{result.epsilon:.4f} by {result.accountant}"}


#: The neighbouring relation each method's accountant needs (the estimator's default otherwise).
RELATION = {"langevin": "replace_one", "output_perturbation": "replace_one"}


def _fit(method: str, X: np.ndarray, y: np.ndarray, seed: int) -> tuple[float, Any, Any]:
    from _scale_problems import OracleProbe

    from noisygd.estimators import DPLogisticRegression

    est = DPLogisticRegression(epsilon=1.0, delta=1e-5, classes=[0.0, 1.0], method=method,
                               neighbouring=RELATION.get(method, "add_remove"),
                               random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # delta >= 1/n notes etc.: not what is measured here
        with OracleProbe() as probe:
            t0 = time.perf_counter()
            est.fit(X, y)
            wall = time.perf_counter() - t0
    return wall, est, probe


def sgd_over_gd_row(X: np.ndarray, y: np.ndarray, seeds: int) -> dict[str, Any]:
    """NoisySGD against NoisyGD on Adult, fits alternated, medians over seeds."""
    _fit("noisy_gd", X, y, 0)  # untimed warm-up of both paths (imports, first BLAS calls)
    _fit("noisy_sgd", X, y, 0)
    gd, sgd = [], []
    for seed in range(seeds):
        gd.append(_fit("noisy_gd", X, y, seed)[0])
        sgd.append(_fit("noisy_sgd", X, y, seed)[0])
    ratio = statistics.median(sgd) / statistics.median(gd)
    return {"section": "adult", "item": "NoisySGD fit / NoisyGD fit on Adult", "value": ratio,
            "target": f"<= {TARGET_SGD_OVER_GD:g}", "holds": bool(ratio <= TARGET_SGD_OVER_GD),
            "details": f"medians over {seeds} seeds: noisy_sgd {statistics.median(sgd):.2f} s, "
                       f"noisy_gd {statistics.median(gd):.2f} s"}


def oracle_step_seconds(X: np.ndarray, y_pm: np.ndarray, sparse: str, repeats: int) -> dict:
    """Median time of ``clipped_gradient_sum`` and ``gradient`` of an Adult oracle."""
    from noisygd.objectives import LogisticLoss
    from noisygd.oracles.array import ArrayOracle

    oracle = ArrayOracle(LogisticLoss(l2=1e-4), X, y_pm, row_norm_bound=1.0, sparse=sparse)
    theta = np.full(oracle.n_params, 0.05)
    _, clipped = _median_time(lambda: oracle.clipped_gradient_sum(theta, 1.0), repeats)
    _, full = _median_time(lambda: oracle.gradient(theta), repeats)
    return {"storage": "csr" if oracle.is_sparse else "dense", "clipped_gradient_sum": clipped,
            "gradient": full}


def sparse_path_rows(X: np.ndarray, y: np.ndarray, full_fits: bool) -> list[dict[str, Any]]:
    """``langevin`` and ``output_perturbation``: storage used and per-step cost vs dense."""
    y_pm = np.where(y > 0.5, 1.0, -1.0)
    auto = oracle_step_seconds(X, y_pm, "auto", 20)
    dense = oracle_step_seconds(X, y_pm, "never", 20)
    rows = [{
        "section": "adult", "item": "Adult oracle step, dense forced / default storage",
        "value": dense["clipped_gradient_sum"] / auto["clipped_gradient_sum"],
        "target": "> 1 (sparse path faster)",
        "holds": bool(auto["storage"] == "csr"
                      and dense["clipped_gradient_sum"] > auto["clipped_gradient_sum"]),
        "details": f"clipped_gradient_sum {auto['storage']} "
                   f"{auto['clipped_gradient_sum'] * 1e3:.2f} ms vs dense "
                   f"{dense['clipped_gradient_sum'] * 1e3:.2f} ms; gradient {auto['storage']} "
                   f"{auto['gradient'] * 1e3:.2f} ms vs dense {dense['gradient'] * 1e3:.2f} ms",
    }]
    if not full_fits:
        return rows
    for method in ("langevin", "output_perturbation"):
        try:
            wall, est, probe = _fit(method, X, y, 0)
        except Exception as exc:  # report, do not hide: the row says what failed
            rows.append({"section": "adult", "item": f"{method} fit on Adult", "value": None,
                         "target": "sparse path", "holds": False,
                         "details": f"failed: {type(exc).__name__}: {exc}"[:300]})
            continue
        s = probe.summary(X.shape[0], int(np.sum(est.n_iter_)))
        storage = s["oracle_storage"]
        per_step = s["seconds_per_step"]
        kernel = "gradient" if s["oracle_calls"].get("gradient", 0) > s["oracle_calls"].get(
            "clipped_gradient_sum", 0) else "clipped_gradient_sum"
        dense_est = dense[kernel] * s["steps"]
        rows.append({
            "section": "adult", "item": f"{method} fit on Adult [s]", "value": wall,
            "target": "sparse path (oracle storage csr)",
            "holds": bool(storage and all(t == "csr" for t in storage)),
            "details": f"oracle storage {','.join(storage)}; {s['steps']} steps, "
                       f"{per_step * 1e3 if per_step else float('nan'):.2f} ms/step "
                       f"({kernel}); calls {s['oracle_calls']}; the same steps with dense "
                       f"storage forced would take ~{dense_est:.1f} s of {kernel} alone",
        })
    return rows


def run_adult(root: Path, quick: bool) -> list[dict[str, Any]]:
    from noisygd.data import load_uci

    rows = [best_row()]
    if not (root / "adult").is_dir():
        rows.append({"section": "adult", "item": "Adult fits", "value": None, "target": "",
                     "holds": None, "details": f"not run: Adult data not found under {root}"})
        return rows
    X, y, _, _ = load_uci("adult", root)
    print("  adult: noisy_sgd vs noisy_gd ...", flush=True)
    rows.append(sgd_over_gd_row(X, y, 1 if quick else 3))
    print("  adult: langevin, output_perturbation ...", flush=True)
    rows += sparse_path_rows(X, y, full_fits=not quick)
    return rows


# --------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 1e5 only (development)")
    parser.add_argument("--problems", nargs="*", help="override: e.g. dense-1000000 sparse")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--peers-python", default=None,
                        help="python of the peers' environment (default .venv-peers/bin/python)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per fit")
    parser.add_argument("--skip-adult", action="store_true")
    parser.add_argument("--name", default=None)
    parser.add_argument("--results-dir", default=None)
    args = parser.parse_args(argv)

    problems = tuple(args.problems or (QUICK_PROBLEMS if args.quick else FULL_PROBLEMS))
    name = args.name or ("bench_scale_quick" if args.quick else "bench_scale")
    env = environment()  # load average at the start of the run
    peers, peers_note = peers_python(args.peers_python)
    t_start = time.perf_counter()
    print(f"bench_scale: {', '.join(problems)}; peers: {peers_note}", flush=True)
    rows = run_scale(problems, peers, peers_note, args.timeout)
    whole = run_whole_fits(problems, rows, args.timeout)
    adult = [] if args.skip_adult else run_adult(data_dir(args.data_dir), args.quick)
    imports = import_costs()

    table_rows = [{k: r.get(k) for k in COLUMNS} for r in rows]
    noisy = [r for r in rows if r["library"] == "noisygd"]
    summary = {
        "passes_per_step <= 1.1": all(r.get("passes_ok") for r in noisy) if noisy else None,
        "time/step <= 1.2 reads": all(r.get("step_ok") for r in noisy) if noisy else None,
        "peak RSS <= 1.2 X + 200 MB": all(r.get("rss_ok") for r in noisy) if noisy else None,
        "n = 1e7 fit completes": any(r["problem"] == "dense-10000000" and r["status"] == "ok"
                                     for r in noisy) if "dense-10000000" in problems else None,
        "sparse X through the estimator": any(r["problem"] == "sparse" and r["status"] == "ok"
                                              for r in noisy) if "sparse" in problems else None,
    }
    summary.update({
        "whole fit <= 2x lbfgs (median of 3, interleaved)":
            all(r.get("time_ok") for r in whole) if whole else None,
        "training log loss within 0.002 of lbfgs": all(r.get("loss_ok") for r in whole)
        if whole else None,
    })
    summary.update({r["item"]: r["holds"] for r in adult})
    meta = {
        "title": "Scale: noisygd's default fit vs scikit-learn lbfgs and diffprivlib 0.6.6",
        "description": (
            "Synthetic logistic data, rows of norm <= 1, fixed seed: dense d = 50 at n = 1e5, "
            "1e6, 1e7 and CSR n = 1e6, d = 1e4 at 0.1% density. Each fit in its own process. "
            "noisygd: default DPLogisticRegression (epsilon 1, delta 1e-5, classes and n "
            "declared public); scikit-learn LogisticRegression(solver='lbfgs') (non-private); "
            "diffprivlib 0.6.6 LogisticRegression(epsilon=1, data_norm=1) from .venv-peers."
        ),
        "command": "python " + " ".join(["benchmarks/bench_scale.py", *sys.argv[1:]]),
        "environment": env, "load_average_at_end": os.getloadavg(), "peers": peers_note,
        "problems": list(problems),
        "targets": {"passes_per_step": TARGET_PASSES, "step_over_read": TARGET_STEP_READS,
                    "peak_rss": "1.2 * X.nbytes + 200 MB", "best_seconds": TARGET_BEST_SECONDS,
                    "sgd_over_gd": TARGET_SGD_OVER_GD},
        "summary": summary, "wall_seconds": time.perf_counter() - t_start,
        "blas_threads": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS",
                                                         "OPENBLAS_NUM_THREADS")},
    }
    extra = "\n".join([
        "## Whole fits (issue 19)", "",
        markdown_table([{k: r.get(k) for k in WHOLE_COLUMNS} for r in whole], WHOLE_COLUMNS),
        "",
        "Whole fits: noisygd's default `DPLogisticRegression(epsilon=1)` (classes and n "
        "declared) and scikit-learn lbfgs alternately on the same X in one process, three "
        "times each after one untimed fit of each, each timed fit after 0.5 s of rest; "
        "`noisygd_s`, `sklearn_s` are the medians and `ratio` their quotient (the target's "
        "measure); `back_to_back_*` the same pairs run again with no rest, each fit right "
        "after the other library's (OpenBLAS's threads spin for about 0.1 s after a "
        "multi-threaded call and share the cores with the next fit: `_scale_problems."
        "PAUSE_S`); `*_first_s` the process's first fit of each (one-off "
        "costs: lazy imports, the kernels' first load); "
        "`method` is what the default chose (`fit_info_['method']`), `steps` its steps and "
        "`passes` its reads of X over n (setup included); losses are training log losses; "
        "`peak_rss_mb` is the noisygd-alone worker's (table above). Targets: ratio <= 2, "
        "loss gap <= 0.002, peak RSS <= 1.2 X + 200 MB.", "",
        "## Import cost", "", markdown_table(imports, ("import", "peak_rss_mb", "note")), "",
        "Peak resident memory of a fresh interpreter after each import (MB = 1e6 bytes). "
        "noisygd's fit path imports `noisygd.estimators` (scikit-learn's base classes); "
        "the fit itself imports only noisygd modules of a few MB. The floor is scikit-learn's "
        "own import, which loads pandas whenever it is installed: with X of 40 MB "
        "(n = 1e5) the `1.2 X + 200 MB` target leaves 248 MB, below what importing "
        "scikit-learn alone costs here, for lbfgs as for noisygd.", "",
        "## Adult", "", markdown_table([{k: r.get(k) for k in ADULT_COLUMNS} for r in adult],
                                       ADULT_COLUMNS) if adult else "(skipped)", "",
        "## Targets", "", markdown_table([{"target": k, "holds": v} for k, v in summary.items()],
                                         ("target", "holds")), "",
        "Columns: `s_per_step` for noisygd is the step phase (first gradient call to last) over "
        "its noisy steps, for the others fit time over L-BFGS iterations; `one_read_s` is one "
        "read of all of X at the bandwidth of `X.sum()` in the same process; `passes_per_step` "
        "is read from the oracle's `rows_read` counter (step reads only; `setup_passes` before "
        "the first gradient); `peak_rss_mb` is the worker's `ru_maxrss` (data generation "
        "included, so never below X); `fit_extra_mb` is that peak minus the resident memory "
        "just before the fit (after imports and data generation); `imports_mb` is the "
        "worker's resident memory after importing what its fit imports, before any data "
        "(for noisygd `noisygd.estimators`, which imports scikit-learn's base classes: the "
        "baseline the `1.2 X + 200 MB` target includes). Targets are issue 9's, "
        "stated for noisygd; the same columns are filled for the peers for comparison.",
    ])
    meta["adult"] = adult
    meta["import_costs"] = imports
    meta["whole_fits"] = [{k: r.get(k) for k in WHOLE_COLUMNS} for r in whole]
    meta["whole_workers"] = [r.get("raw") for r in whole if r.get("raw")]
    meta["workers"] = [r.get("raw") for r in rows if r.get("raw")]
    write_results(name, table_rows, meta, columns=COLUMNS,
                  results_dir=Path(args.results_dir) if args.results_dir else None,
                  extra_markdown=extra)
    for k, v in summary.items():
        print(f"  {k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
