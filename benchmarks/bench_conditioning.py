"""Conditioning benchmark (issue 19): every method's default, plain and with the public box.

Problems:

* generated families (:func:`family_problem`, fixed seeds, every parameter below public and
  fixed in this file, none chosen by looking at results):

  - ``onehot``: uncentred one-hot-heavy rows: ``k = p // 5`` categorical features with 5 levels
    of Zipf frequencies (1/j normalised), one-hot encoded, next to ``p - 5k`` numeric features
    uniform on [0, 1]; every column in [0, 1] (the public box), rows scaled by
    ``1/sqrt(#columns)`` so that the box lies in the unit ball; binary labels from a logistic
    model with coefficients ``N(0, 4^2/p)`` and the intercept that gives a 30% base rate;
  - ``imbalanced``: numeric features uniform on [0, 1] (box [0, 1]), a target base rate of
    5%, 10% or 15% (by ``p``; the logistic noise makes the realised rate 9-18%), same label
    model;
  - ``scales``: numeric features ``s_j U(-1, 1)`` with scales ``s_j`` log-spaced over 100x,
    the public box ``[-s_j, s_j]``; the plain default sees the raw columns (rows projected
    onto the unit ball, what a user who declares nothing gets);
  - ``offcentre`` (regression): numeric features uniform on [0, 1], targets
    ``0.8 + 0.1 x.w + N(0, 0.05^2)`` clipped to the declared range [0, 1] (an off-centre
    target: the intercept far from the range's midpoint);

  with ``n`` in {500, 2000, 10000, 50000} (training rows; a test split of ``n/4`` rows drawn
  alike and more from a stream of their own, :data:`TEST_ROWS` in all) and ``p`` in {5, 20, 100};
* the nine ``bench_utility`` sets (``bench_utility.load_problem``) with ``--utility``
  (digits10, 10 classes, by its macro one-vs-rest AUC, since the multinomial default is
  conditioned: 2026-12-01; the peers' runner gives labels only there, so no Opacus AUC).

For each problem, epsilon in {0.5, 1, 2, 8} and seed: noisygd's ``DPLogisticRegression`` /
``DPLinearRegression`` with ``method="auto"`` (the default) and each other method that runs
with its defaults under add/remove (``noisy_sgd``, ``dp_ftrl``, ``dynamic``, ``newton``, and
for regression ``ssp``; ``output_perturbation``, ``langevin`` and ``rrpsgd`` are accounted
under replace-one only and refuse the default relation with a message naming
``neighbouring="replace_one"``), each **plain**
(no ``feature_bounds``, and for regressors no ``target_range``: what a user gets, including
the private centre, and for classifiers the row scale, on by default,
``conditioning_share="auto"``, share 0.1, the private per-feature scale after it,
``feature_scale_share="auto"``, share 0.05, and for regressors the private target range,
``target_range_share="auto"``, share 0.05) and with the **declared box** (``feature_bounds``
the public box; regressors also get ``target_range=(0, 1)``, public by construction), and
**uncond** (no bounds, ``conditioning_share=0``: the fit without the private conditioning,
nor the per-feature scale, which needs it; regressors still release their target range).
The metric is the share of the non-private gain:
``(AUC - 0.5) / (AUC_np - 0.5)`` for binary problems, ``R^2 / R^2_np`` for regression (the
constant predictor is 0), on the test split, with scikit-learn's ``LogisticRegression()`` /
``LinearRegression()`` as the non-private model. Opacus's fixed recipe
(``benchmarks/peers/run_peer.py``, the same one ``bench_utility`` runs: DP-SGD, 10 epochs,
expected batch ``min(256, n)``, lr 2.5, momentum 0.9, clip 1, PRV accountant) runs on the
same matrices from the peers' environment (``.venv-peers``, ``make bench-env``); without it
its rows say "not installed".

Targets for the default (issue 19): share >= 0.90 at epsilon 1 and >= 0.97 at epsilon 8
wherever n >= 2000; never below the constant predictor, every seed: AUC >= 0.5 (share >= 0), and
for regression R^2 at least that of the training rows' mean (``share_constant``: the constant
predictor a fit on the training rows can give; below 0 on the test rows by the two means'
difference).

Run: ``.venv/bin/python benchmarks/bench_conditioning.py [--quick] [--utility]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from _common import environment, write_results

NAME = "bench_conditioning"
FAMILIES = ("onehot", "imbalanced", "scales", "offcentre")
SIZES = (500, 2000, 10000, 50000)
DIMS = (5, 20, 100)
EPSILONS = (0.5, 1.0, 2.0, 8.0)
METHODS = ("auto", "noisy_sgd", "dp_ftrl", "dynamic", "newton", "ssp")
#: Methods that apply to one task only (``ssp``: least squares); others run on both.
TASK_OF_METHOD = {"ssp": "regression"}
DECLARED = ("plain", "uncond", "box")
QUICK = {"sizes": (2000, 10000), "dims": (20,), "epsilons": (1.0, 8.0), "seeds": 2}
COLUMNS = ("problem", "task", "n", "p", "method", "declared", "epsilon", "share_mean",
           "share_min", "share_constant", "metric_mean", "metric_np", "fits", "chosen",
           "status")


#: Test rows of every generated problem: the ``n/4`` drawn with the training rows, then more
#: from a stream of their own (same model) up to this many. At ``n = 500`` the ``n/4`` split
#: held about 12 positive rows (10% base rate), so the test AUC's own sampling sd (about 0.09)
#: exceeded the shares being judged; at 20 000 rows it is below 0.01.
TEST_ROWS = 20_000


def _raw_rows(family: str, rng: np.random.Generator, rows: int, p: int
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``rows`` raw rows of ``family`` and its public box ``(raw, lo, hi)`` (module doc)."""
    if family == "onehot":
        k = max(1, p // 5)
        freq = 1.0 / np.arange(1, 6)
        freq /= freq.sum()
        blocks = [np.eye(5)[rng.choice(5, size=rows, p=freq)] for _ in range(k)]
        numeric = rng.random((rows, max(p - 5 * k, 0)))
        raw = np.hstack([*blocks, numeric])
        return raw, np.zeros(raw.shape[1]), np.ones(raw.shape[1])
    if family == "scales":
        s = np.geomspace(1.0, 100.0, p)
        return s * rng.uniform(-1.0, 1.0, (rows, p)), -s, s
    return rng.random((rows, p)), np.zeros(p), np.ones(p)


def family_problem(family: str, n: int, p: int, seed: int = 0) -> dict[str, Any]:
    """``{"X", "y", "Xt", "yt", "lo", "hi", "task"}`` of one generated problem (module doc):
    ``n`` training rows and :data:`TEST_ROWS` test rows (at least ``n/4``)."""
    rng = np.random.default_rng([seed, n, p, FAMILIES.index(family)])
    total = n + n // 4
    raw, lo, hi = _raw_rows(family, rng, total, p)
    # public scaling: every box corner inside the unit ball (the plain fit sees the same X)
    scale = 1.0 / np.linalg.norm(np.maximum(np.abs(lo), np.abs(hi)))
    X, lo, hi = raw * scale, lo * scale, hi * scale
    w = rng.normal(0.0, 4.0 / np.sqrt(p), p) * np.sqrt(p)

    def signal_of(X: np.ndarray) -> np.ndarray:
        z = (X - (lo + hi) / 2) / np.maximum(hi - lo, 1e-12)  # unit-free, public centring
        return z @ w / np.sqrt(p)

    signal = signal_of(X)
    if family == "offcentre":
        task = "regression"

        def labels(signal: np.ndarray, rng: np.random.Generator) -> np.ndarray:
            return np.clip(0.8 + 0.1 * signal + rng.normal(0.0, 0.05, signal.size), 0.0, 1.0)
    else:
        task = "binary"
        rate = {"onehot": 0.3}.get(family, (0.05, 0.10, 0.15)[DIMS.index(p) % 3]
                                   if p in DIMS else 0.1)
        b = np.quantile(signal, 1.0 - rate)

        def labels(signal: np.ndarray, rng: np.random.Generator) -> np.ndarray:
            return (rng.random(signal.size) < 1.0 / (1.0 + np.exp(-(signal - b) * 3.0))
                    ).astype(int)
    y = labels(signal, rng)
    extra = max(TEST_ROWS - n // 4, 0)
    rng_test = np.random.default_rng([seed, n, p, FAMILIES.index(family), 1])
    Xe = _raw_rows(family, rng_test, extra, p)[0] * scale
    ye = labels(signal_of(Xe), rng_test)
    return {"X": X[:n], "y": y[:n], "Xt": np.vstack([X[n:], Xe]),
            "yt": np.concatenate([y[n:], ye]), "lo": lo, "hi": hi, "task": task}


def named_problems(cells: Any, data_dir: Any,
                   tables: tuple[str, ...] = ("adult", "bank", "credit")
                   ) -> list[tuple[str, dict[str, Any]]]:
    """``(name, problem)`` of the generated ``cells`` (``(family, n, p)``, seed 0, named
    ``family-nxp``) and, where ``data_dir`` is a directory, of the ``bench_utility`` ``tables``
    in this module's form (:func:`utility_problem`): the experiments' problem sets."""
    out = [(f"{fam}-{n}x{p}", family_problem(fam, n, p, 0)) for fam, n, p in cells]
    if Path(data_dir).is_dir():
        from bench_utility import load_problem

        out += [(name, utility_problem(load_problem(name, data_dir))) for name in tables]
    return out


def utility_problem(pr: Any) -> dict[str, Any]:
    """A ``bench_utility.Problem`` in this module's form (``{"X", "y", "Xt", "yt", "lo",
    "hi", "task"}``, its declared box as ``lo, hi``)."""
    return {"X": pr.X, "y": pr.y, "Xt": pr.Xt, "yt": pr.yt, "lo": pr.bounds_lo,
            "hi": pr.bounds_hi, "task": pr.task}


def _metric(task: str, y: np.ndarray, scores: np.ndarray) -> float:
    """R^2 (regression), AUC (binary: ``scores`` the decision function) or the macro
    one-vs-rest AUC (multiclass: ``scores`` the ``(n, K)`` class probabilities)."""
    from sklearn.metrics import r2_score, roc_auc_score

    if task == "regression":
        return float(r2_score(y, scores))
    if len(np.unique(y)) < 2:
        return float("nan")
    if task == "multiclass":
        return float(roc_auc_score(y, scores, multi_class="ovr",
                                   labels=np.arange(scores.shape[1])))
    return float(roc_auc_score(y, scores))


def _share(task: str, value: float, ceiling: float) -> float:
    if task == "regression":
        return value / ceiling if ceiling > 0 else float("nan")
    return (value - 0.5) / (ceiling - 0.5) if ceiling > 0.5 else float("nan")


def nonprivate(prob: dict[str, Any]) -> float:
    from sklearn.linear_model import LinearRegression, LogisticRegression

    if prob["task"] == "regression":
        m = LinearRegression().fit(prob["X"], prob["y"])
        return _metric("regression", prob["yt"], m.predict(prob["Xt"]))
    m = LogisticRegression(max_iter=10000).fit(prob["X"], prob["y"])
    if prob["task"] == "multiclass":
        return _metric("multiclass", prob["yt"], m.predict_proba(prob["Xt"]))
    return _metric("binary", prob["yt"], m.decision_function(prob["Xt"]))


def fit_noisygd(prob: dict[str, Any], method: str, declared: str, eps: float,
                seed: int) -> tuple[float, str]:
    """One default fit; ``(metric, method that ran)``."""
    metric, est = fit_estimator(prob, method, declared, eps, seed)
    return metric, str(est.fit_info_.get("method"))


def fit_estimator(prob: dict[str, Any], method: str, declared: str, eps: float, seed: int,
                  **extra: Any) -> tuple[float, Any]:
    """One fit (the default's, with ``extra`` parameters added); ``(metric, estimator)``."""
    from noisygd.estimators import DPLinearRegression, DPLogisticRegression

    kw: dict[str, Any] = {"epsilon": eps, "delta": min(1e-5, len(prob["y"]) ** -1.1),
                          "random_state": seed, **extra}
    if method != "auto":
        kw["method"] = method
    if declared == "box":
        kw["feature_bounds"] = (prob["lo"], prob["hi"])
    if declared == "uncond":
        kw["conditioning_share"] = 0.0
    if prob["task"] == "regression":
        if declared == "box":
            kw["target_range"] = (0.0, 1.0)
        est = DPLinearRegression(**kw).fit(prob["X"], prob["y"])
        scores = est.predict(prob["Xt"])
    elif prob["task"] == "multiclass":  # the declared label set: 0..K-1
        classes = list(range(int(max(np.max(prob["y"]), np.max(prob["yt"]))) + 1))
        est = DPLogisticRegression(classes=classes, **kw).fit(prob["X"], prob["y"])
        scores = est.predict_proba(prob["Xt"])
    else:
        est = DPLogisticRegression(classes=[0, 1], **kw).fit(prob["X"], prob["y"])
        scores = est.decision_function(prob["Xt"])
    return _metric(prob["task"], prob["yt"], scores), est


def run_problem(name: str, prob: dict[str, Any], epsilons: tuple[float, ...], seeds: int,
                methods: tuple[str, ...], peers: bool = True) -> list[dict[str, Any]]:
    ceiling = nonprivate(prob)
    # the constant predictor's share: 0 for AUC (ties), the training mean's for R^2
    constant = 0.0 if prob["task"] == "multiclass" else _share(
        prob["task"], _metric(prob["task"], prob["yt"], np.full(
            len(prob["yt"]), float(np.mean(prob["y"])))), ceiling)
    rows = []
    n, p = prob["X"].shape
    for method in methods:
        if TASK_OF_METHOD.get(method, prob["task"]) != prob["task"]:
            continue
        for declared in DECLARED:
            for eps in epsilons:
                vals, chosen, status = [], set(), "ok"
                for seed in range(seeds):
                    try:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            v, ran = fit_noisygd(prob, method, declared, eps, seed)
                        vals.append(v)
                        chosen.add(ran)
                    except Exception as exc:  # a refusal is a result: its message is shown
                        status = f"skipped: {type(exc).__name__}: {str(exc)[:160]}"
                        break
                shares = [_share(prob["task"], v, ceiling) for v in vals]
                rows.append({
                    "problem": name, "task": prob["task"], "n": n, "p": p,
                    "method": "noisygd default" if method == "auto" else method,
                    "declared": declared, "epsilon": eps,
                    "share_mean": float(np.mean(shares)) if shares else None,
                    "share_min": float(np.min(shares)) if shares else None,
                    "metric_mean": float(np.mean(vals)) if vals else None,
                    "metric_np": ceiling, "share_constant": constant, "fits": len(vals),
                    "chosen": ",".join(sorted(chosen)), "status": status,
                })
    rows += run_opacus(name, prob, epsilons, seeds, ceiling) if peers else [
        {"problem": name, "task": prob["task"], "n": n, "p": p, "method": OPACUS,
         "metric_np": ceiling, "status": "not run (--no-peers)"}]
    return rows


OPACUS = "opacus DP-SGD (fixed recipe)"


def run_opacus(name: str, prob: dict[str, Any], epsilons: tuple[float, ...], seeds: int,
               ceiling: float) -> list[dict[str, Any]]:
    """Opacus's fixed recipe (``benchmarks/peers/run_peer.py --libraries opacus``) on the same
    matrices, in ``.venv-peers``; one row per epsilon, as noisygd's."""
    import json
    import subprocess
    import tempfile

    from bench_utility import PEER_SCRIPT, PEERS_PYTHON

    n, p = prob["X"].shape
    head = {"problem": name, "task": prob["task"], "n": n, "p": p, "method": OPACUS,
            "declared": "", "metric_np": ceiling}
    if prob["task"] == "multiclass":  # run_peer.py returns predicted labels there: no AUC
        return [{**head, "status": "not run: the peers' runner gives labels, not class "
                                   "probabilities, for a multiclass problem (no AUC)"}]
    if not PEERS_PYTHON.exists():
        return [{**head, "status": "not installed: the peers' environment .venv-peers is "
                                   "absent (make bench-env)"}]
    delta = min(1e-5, n ** -1.1)
    with tempfile.TemporaryDirectory(prefix="bench_conditioning_") as tmp:
        src, out = Path(tmp) / "p.npz", Path(tmp) / "s.npz"
        np.savez(src, X=prob["X"], y=prob["y"], Xt=prob["Xt"], yt=prob["yt"],
                 bounds_lo=prob["lo"], bounds_hi=prob["hi"], y_lo=0.0, y_hi=1.0)
        cmd = [str(PEERS_PYTHON), str(PEER_SCRIPT), "--npz", str(src), "--out", str(out),
               "--task", prob["task"], "--epsilons", *map(repr, epsilons), "--seeds",
               *map(str, range(seeds)), "--delta", repr(delta), "--libraries", "opacus"]
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or ["?"])[-1][:200]
            return [{**head, "status": f"error: run_peer.py exited {proc.returncode}: {tail}"}]
        fits = json.loads(proc.stdout)["fits"]
        scores = dict(np.load(out))
    rows = []
    for eps in epsilons:
        vals = [_metric(prob["task"], prob["yt"], scores[f"opacus|{f['epsilon']!r}|{f['seed']}"])
                for f in fits if f["epsilon"] == eps and f["status"] == "ok"]
        bad = [f["status"] for f in fits if f["epsilon"] == eps and f["status"] != "ok"]
        shares = [_share(prob["task"], v, ceiling) for v in vals]
        rows.append({**head, "epsilon": eps,
                     "share_mean": float(np.mean(shares)) if shares else None,
                     "share_min": float(np.min(shares)) if shares else None,
                     "metric_mean": float(np.mean(vals)) if vals else None,
                     "fits": len(vals), "chosen": "dp-sgd",
                     "status": "ok" if not bad else bad[0][:160]})
    return rows


def checks(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Issue 19's targets, cell by cell: every noisygd method's default (plain and box) not
    below the constant predictor on any seed (``share_constant``); the default's shares at
    epsilon 1 and 8 where ``n >= 2000``. ``uncond`` (not a default) and Opacus are shown, not
    checked."""
    out = []
    for r in rows:
        if (r["method"] == OPACUS or r.get("share_mean") is None
                or r.get("declared") == "uncond"):
            continue
        out.append({**_cell(r), "check": "not below the constant predictor (every seed)",
                    "holds": bool(r["share_min"] >= r.get("share_constant", 0.0))})
        target = {1.0: 0.90, 8.0: 0.97}.get(r["epsilon"])
        if r["method"] == "noisygd default" and target is not None and r["n"] >= 2000:
            out.append({**_cell(r), "check": f"share >= {target}",
                        "holds": bool(r["share_mean"] >= target)})
    return out


def _cell(r: dict[str, Any]) -> dict[str, Any]:
    return {k: r[k] for k in ("problem", "method", "declared", "epsilon", "share_mean",
                              "share_min")}


def _summary(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Held / total per (check kind, method, declared)."""
    tally: dict[tuple[str, str, str], list[bool]] = {}
    for c in found:
        kind = "not below constant" if c["check"].startswith("not below") else c["check"]
        tally.setdefault((kind, c["method"], c["declared"]), []).append(c["holds"])
    return [{"check": k[0], "method": k[1], "declared": k[2], "held": sum(v),
             "total": len(v)} for k, v in sorted(tally.items())]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="n 2000, 10000; p 20; eps 1, 8")
    ap.add_argument("--utility", action="store_true", help="also the nine bench_utility sets")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--seeds", type=int, default=None, help="default 3 (2 with --quick)")
    ap.add_argument("--methods", nargs="+", default=list(METHODS))
    ap.add_argument("--sizes", nargs="+", type=int, default=None, help="default 500..50000")
    ap.add_argument("--dims", nargs="+", type=int, default=None, help="default 5 20 100")
    ap.add_argument("--no-peers", action="store_true", help="no Opacus column")
    ap.add_argument("--name", default=None)
    ap.add_argument("--results-dir", default=None)
    args = ap.parse_args(argv)
    sizes = tuple(args.sizes or (QUICK["sizes"] if args.quick else SIZES))
    dims = tuple(args.dims or (QUICK["dims"] if args.quick else DIMS))
    epsilons = QUICK["epsilons"] if args.quick else EPSILONS
    seeds = args.seeds or (QUICK["seeds"] if args.quick else 3)
    env, t0 = environment(), time.perf_counter()
    rows: list[dict[str, Any]] = []
    for family in FAMILIES:
        for n in sizes:
            for p in dims:
                name = f"{family}-{n}x{p}"
                print(f"  {name} ...", flush=True)
                rows += run_problem(name, family_problem(family, n, p), epsilons, seeds,
                                    tuple(args.methods), not args.no_peers)
    if args.utility:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import bench_utility as bu
        from _common import data_dir

        root = data_dir(args.data_dir)
        for name in bu.ALL_PROBLEMS:
            prob = utility_problem(bu.load_problem(name, root))
            print(f"  {name} ...", flush=True)
            rows += run_problem(name, prob, epsilons, seeds, ("auto",), not args.no_peers)
    found = checks(rows)
    meta = {
        "title": "Conditioning: share of the non-private gain, plain and with the public box",
        "description": ("Share of the non-private gain (AUC or R^2, the constant predictor as "
                        "0) of every method's default, plain (no bounds: with the private "
                        "conditioning, on by default), uncond (conditioning_share=0) and with "
                        "the declared public box, beside Opacus's fixed recipe; generated "
                        "families and the bench_utility sets (module docstring)."),
        "environment": env,
        "command": "python " + " ".join(["benchmarks/bench_conditioning.py", *sys.argv[1:]]),
        "seeds": seeds, "epsilons": list(epsilons), "sizes": list(sizes), "dims": list(dims),
        "checks": found, "summary": _summary(found), "checks_held": sum(c["holds"] for c in found),
        "checks_total": len(found), "wall_seconds": time.perf_counter() - t0,
    }
    from _common import markdown_table

    failed = [c for c in found if not c["holds"]]
    extra = "\n".join([
        "## Targets (issue 19)", "",
        f"{meta['checks_held']} of {meta['checks_total']} hold.", "",
        markdown_table(_summary(found), ("check", "method", "declared", "held", "total")),
        "", "Cells that miss:", "",
        markdown_table(failed, ("problem", "method", "declared", "epsilon", "check",
                                "share_mean", "share_min")) if failed else "(none)",
    ])
    name = args.name or (NAME + ("_quick" if args.quick else ""))
    write_results(name, rows, meta, columns=COLUMNS,
                  results_dir=Path(args.results_dir) if args.results_dir else None,
                  extra_markdown=extra)
    print(f"  {meta['checks_held']} of {meta['checks_total']} checks hold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
