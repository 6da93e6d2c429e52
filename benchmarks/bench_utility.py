"""Utility benchmark (issue 10): noisygd's defaults against peers on data nobody tuned for.

Nine problems, every library given the same matrices:

* UCI ``adult``, ``bank``, ``credit`` (binary), ``wine``, ``bike`` (regression) from
  ``noisygd.data.load_uci`` (public-bound preprocessing, rows of norm <= 1, seeded split; adult
  uses its train/test files);
* scikit-learn's bundled ``breast_cancer`` (binary), ``digits`` (``digits_binary``: digit >= 5,
  and ``digits10``: 10 classes) and ``diabetes`` (regression), each feature mapped onto [0, 1]
  by PUBLIC bounds (see :data:`SKLEARN_BOUNDS_DOC`), rows multiplied by ``1/sqrt(k)`` (norm
  <= 1), targets of diabetes mapped onto [0, 1] by a public bound, seeded 80/20 split
  (``numpy.random.default_rng(0).permutation(n)``, first 20% test), no statistic of the data.

Methods, all in one run, at each epsilon in ``--epsilons`` and seed in ``range(--seeds)``:

* ``noisygd default``: ``DPLogisticRegression`` / ``DPLinearRegression`` with every setting at
  its default except the public declarations a user gives (:func:`declarations`: ``classes``,
  ``feature_bounds`` = the schema's ``public_centring`` for UCI sets or the public box of the
  scikit-learn sets, ``target_range=(0, 1)`` for regressors; ``delta`` as below; the rows'
  notes show the estimator's ``conditioning_``), then each ``method=`` of
  :data:`noisygd.solvers.SOLVERS` with all else default (``noisy_gd`` reuses the default's
  fits where ``method="auto"`` ran NoisyGD in every cell; a method that cannot run with
  defaults, or whose projected cost
  exceeds ``--method-budget`` seconds on a problem, gets a "skipped: reason" row);
* Opacus 1.6 DP-SGD and diffprivlib 0.6.6 (``benchmarks/peers/run_peer.py``, run in
  ``.venv-peers``; recipes in that file's docstring; "not installed" rows if it is absent);
* the non-private scikit-learn model (``LogisticRegression(max_iter=10000)``, i.e. C = 1, and
  ``LinearRegression()``): the ceiling.

``delta = min(1e-5, n^-1.1)`` with ``n`` the training rows. Metrics on the test split:
accuracy and ROC AUC (binary), accuracy (multiclass), R^2 (regression); mean and std over seeds.
Nothing is tuned: every library runs its defaults or its fixed recipe, and the test split is
only scored.

Acceptance checks (issue 10), for ``noisygd default``:

* classification, every epsilon: mean primary metric (AUC for binary, accuracy for
  multiclass) >= the best peer's mean;
* classification: share of the non-private gain, ``(AUC - 0.5) / (AUC_np - 0.5)`` for binary,
  ``(acc - m) / (acc_np - m)`` for multiclass with ``m`` the test accuracy of predicting the
  training majority class, >= 0.90 at epsilon 1 and >= 0.97 at epsilon 8;
* regression, every epsilon: R^2 > 0 for every seed; share ``R^2 / R^2_np`` >= 0.80 at
  epsilon 1 and >= 0.95 at epsilon 8;
* adult: mean accuracy >= 0.845 at epsilon 1.

With ``--tune`` also ``noisygd tune=True`` (private selection, docs/tuning.md; not checked).
``--no-declarations`` (comparison only) and ``--no-peers`` change what is fitted.

Run: ``.venv/bin/python benchmarks/bench_utility.py [--quick] [--data-dir ../shared/data/uci]``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from _common import data_dir, environment, write_results

NAME = "bench_utility"
REPO = Path(__file__).resolve().parents[1]
PEERS_PYTHON = REPO / ".venv-peers" / "bin" / "python"
PEER_SCRIPT = Path(__file__).resolve().parent / "peers" / "run_peer.py"

ALL_PROBLEMS = ("adult", "bank", "credit", "wine", "bike", "breast_cancer", "digits_binary",
                "digits10", "diabetes")
QUICK_PROBLEMS = ("breast_cancer", "digits10", "diabetes")
EPSILONS = (0.5, 1.0, 2.0, 8.0)
QUICK_EPSILONS = (1.0, 8.0)
DEFAULT = "noisygd default"
TUNED = "noisygd tune=True"
NONPRIVATE = "sklearn non-private"
PEERS = ("opacus", "diffprivlib")
PEER_LABEL = {"opacus": "opacus DP-SGD", "diffprivlib": "diffprivlib"}

#: Public bounds of the scikit-learn data sets, and where they come from.
SKLEARN_BOUNDS_DOC = {
    "breast_cancer": "min/max of each feature as printed in load_breast_cancer().DESCR "
                     "(noisygd.cli._breast_cancer_public_bounds)",
    "digits": "pixel values 0..16 (load_digits().DESCR: 'an integer in the range 0..16')",
    "diabetes": "load_diabetes(scaled=False) (raw units; the default 'scaled' copy is centred "
                "and scaled by data statistics, so it is not used). DESCR prints no ranges, "
                "so each feature's bounds are wide clinical/domain ranges fixed in this file "
                "(DIABETES_BOUNDS), not the data's min/max; target 'disease progression' "
                "mapped by the bound [0, 400]",
}

#: Wide domain ranges for the diabetes features (raw units of Efron et al. 2004) and target.
DIABETES_BOUNDS = {
    "age": (18.0, 90.0),     # adult patients, years
    "sex": (1.0, 2.0),       # coded 1/2
    "bmi": (15.0, 50.0),     # body mass index, kg/m^2
    "bp": (50.0, 150.0),     # average (mean arterial) blood pressure, mmHg
    "s1": (50.0, 400.0),     # total serum cholesterol, mg/dL
    "s2": (0.0, 300.0),      # LDL, mg/dL
    "s3": (10.0, 120.0),     # HDL, mg/dL
    "s4": (1.0, 12.0),       # total cholesterol / HDL ratio
    "s5": (3.0, 7.0),        # log serum triglycerides (ln of 20..1100 mg/dL)
    "s6": (40.0, 250.0),     # blood glucose, mg/dL
}
DIABETES_TARGET_BOUNDS = (0.0, 400.0)


@dataclass
class Problem:
    """One data set as every library sees it (public bounds included)."""

    name: str
    task: str  # "binary" | "multiclass" | "regression"
    X: np.ndarray
    y: np.ndarray
    Xt: np.ndarray
    yt: np.ndarray
    bounds_lo: np.ndarray
    bounds_hi: np.ndarray
    y_bounds: tuple[float, float] = (0.0, 1.0)
    n_classes: int = 2
    source: str = ""
    notes: list[str] = field(default_factory=list)
    #: What a user declares to noisygd from public knowledge: the feature domain
    #: (``feature_bounds=``: the schema's PublicCentring where one exists, else the box
    #: ``(bounds_lo, bounds_hi)``); regressors also get ``target_range=y_bounds``.
    feature_bounds: Any = None
    declared: str = ""

    @property
    def delta(self) -> float:
        return min(1e-5, self.X.shape[0] ** -1.1)


def _by_bounds(X: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Clip to the public bounds, map onto [0, 1], multiply by 1/sqrt(k): ||row|| <= 1."""
    from noisygd.data import scale_by_bounds

    return scale_by_bounds(X, lo, hi) / math.sqrt(X.shape[1])


def _sklearn_problem(name: str) -> Problem:
    from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits

    from noisygd.data.uci._common import seeded_split

    if name == "breast_cancer":
        from noisygd.cli import _breast_cancer_public_bounds

        data = load_breast_cancer()
        lo, hi = _breast_cancer_public_bounds(data.DESCR, data.data.shape[1])
        X, y, task, k = data.data, data.target.astype(np.float64), "binary", 2
        doc = SKLEARN_BOUNDS_DOC["breast_cancer"]
    elif name in ("digits_binary", "digits10"):
        data = load_digits()
        lo, hi = np.zeros(64), np.full(64, 16.0)
        X = data.data
        if name == "digits_binary":
            y, task, k = (data.target >= 5).astype(np.float64), "binary", 2
        else:
            y, task, k = data.target.astype(np.float64), "multiclass", 10
        doc = SKLEARN_BOUNDS_DOC["digits"]
    elif name == "diabetes":
        data = load_diabetes(scaled=False)
        lo = np.array([DIABETES_BOUNDS[f][0] for f in data.feature_names])
        hi = np.array([DIABETES_BOUNDS[f][1] for f in data.feature_names])
        X, task, k = data.data, "regression", 0
        t_lo, t_hi = DIABETES_TARGET_BOUNDS
        y = (np.clip(data.target, t_lo, t_hi) - t_lo) / (t_hi - t_lo)
        doc = SKLEARN_BOUNDS_DOC["diabetes"]
    else:
        raise ValueError(name)
    Z = _by_bounds(X, lo, hi)
    tr, te = seeded_split(Z.shape[0], test_size=0.2, split_seed=0)  # as load_uci splits
    d = Z.shape[1]
    box = (np.zeros(d), np.full(d, 1.0 / math.sqrt(d)))
    return Problem(name, task, Z[tr], y[tr], Z[te], y[te], *box, n_classes=k,
                   source=f"scikit-learn {name}; {doc}; split 80/20 seed 0",
                   feature_bounds=box,
                   declared="feature_bounds=(0, 1/sqrt(d)) per feature (the public scaling)")


def _uci_problem(name: str, root: Path) -> Problem:
    from noisygd.data import dataset_info, load_uci, public_centring

    info = dataset_info(name)
    X, y, Xt, yt = load_uci(name, root)
    n_blocks = len(info.numeric_features) + len(info.categorical_features)
    d = X.shape[1]
    task = "regression" if info.task == "regression" else "binary"
    # every encoded feature lies in [0, 1/sqrt(n_blocks)] by construction (load_uci's docs)
    return Problem(name, task, X, y, Xt, yt, np.zeros(d), np.full(d, 1.0 / math.sqrt(n_blocks)),
                   source=f"noisygd.data.load_uci({name!r}); {info.split_rule}",
                   feature_bounds=public_centring(name),
                   declared=f"feature_bounds=noisygd.data.public_centring({name!r}) (schema)")


def load_problem(name: str, root: Path) -> Problem:
    if name in ("adult", "bank", "credit", "wine", "bike"):
        return _uci_problem(name, root)
    return _sklearn_problem(name)


def subsample(p: Problem, max_train: int | None) -> Problem:
    """Keep the first ``max_train`` training rows of a seeded permutation (public rule)."""
    if max_train is None or p.X.shape[0] <= max_train:
        return p
    keep = np.sort(np.random.default_rng(1).permutation(p.X.shape[0])[:max_train])
    p.notes.append(f"training set subsampled to {max_train} of {p.X.shape[0]} rows "
                   "(seeded permutation, seed 1)")
    p.X, p.y = p.X[keep], p.y[keep]
    return p


# ----------------------------------------------------------------------------- metrics


def metrics(task: str, y: np.ndarray, scores: np.ndarray) -> dict[str, float]:
    """Accuracy (+ AUC) for classification, R^2 for regression, from test scores."""
    from sklearn.metrics import r2_score, roc_auc_score

    s = np.asarray(scores, dtype=np.float64)
    if not np.all(np.isfinite(s)):
        return {"accuracy": math.nan, "auc": math.nan, "r2": math.nan}
    if task == "binary":
        return {"accuracy": float(np.mean((s > 0) == (y == 1))),
                "auc": float(roc_auc_score(y, s))}
    if task == "multiclass":
        return {"accuracy": float(np.mean(s == y))}
    return {"r2": float(r2_score(y, s))}


def primary(task: str) -> str:
    return {"binary": "auc", "multiclass": "accuracy", "regression": "r2"}[task]


# ----------------------------------------------------------------------------- noisygd


#: Set by ``--no-declarations`` (comparison runs only): fit without the declarations.
DECLARE = True


def declarations(p: Problem) -> dict[str, Any]:
    """The public declarations a user gives noisygd (never computed from the data): the
    feature domain, and for regressors the target range (``load_uci`` and the diabetes
    mapping put every target in ``[0, 1]`` by public bounds)."""
    kw: dict[str, Any] = {}
    if not DECLARE:
        return kw
    if p.feature_bounds is not None:
        kw["feature_bounds"] = p.feature_bounds
    if p.task == "regression":
        kw["target_range"] = tuple(p.y_bounds)
    return kw


def _noisygd_factory(p: Problem, method: str, **extra: Any) -> Callable[[float, int], Any]:
    from noisygd.estimators import DPLinearRegression, DPLogisticRegression

    kw: dict[str, Any] = (declarations(p) | ({} if method == "auto" else {"method": method})
                          | extra)
    if p.task == "regression":
        return lambda eps, seed: DPLinearRegression(epsilon=eps, delta=p.delta,
                                                    random_state=seed, **kw)
    classes = list(range(p.n_classes))
    return lambda eps, seed: DPLogisticRegression(epsilon=eps, delta=p.delta, classes=classes,
                                                  random_state=seed, **kw)


def _scores(p: Problem, model: Any) -> np.ndarray:
    if p.task == "binary":
        return np.asarray(model.decision_function(p.Xt), dtype=np.float64)
    return np.asarray(model.predict(p.Xt), dtype=np.float64)


def run_noisygd(p: Problem, method: str, epsilons: tuple[float, ...], seeds: list[int],
                budget_s: float, base: dict[str, Any] | None = None
                ) -> dict[tuple[float, int], dict[str, Any]]:
    """Fit ``method`` at every (epsilon, seed); per-fit records keyed by (epsilon, seed).

    Every setting is the estimator's default, except that a method which refuses the default
    add/remove relation (its event is accounted under replace-one only) is refitted with
    ``neighbouring="replace_one"``, the one setting it needs, and the rows say so. A method
    that still refuses its defaults gets "skipped: <its message>" rows.
    """
    extra: dict[str, Any] = dict(base or {})
    out = _fit_all(p, method, epsilons, seeds, budget_s, extra)
    first = out[(epsilons[0], seeds[0])]["status"]
    if first.startswith("skipped: ValueError") and "not add_remove" in first:
        extra = {**extra, "neighbouring": "replace_one"}
        out = _fit_all(p, method, epsilons, seeds, budget_s, extra)
        note = "neighbouring='replace_one' (the method refuses add_remove)"
        for rec in out.values():
            if rec["status"].startswith("skipped"):
                rec["status"] = f"skipped (with {note}): {rec['status'][len('skipped: '):]}"
            else:
                rec["notes"] = note if not rec.get("notes") else f"{note}; {rec['notes']}"
    return out


def _fit_all(p: Problem, method: str, epsilons: tuple[float, ...], seeds: list[int],
             budget_s: float, extra: dict[str, Any]) -> dict[tuple[float, int], dict[str, Any]]:
    make = _noisygd_factory(p, method, **extra)
    out: dict[tuple[float, int], dict[str, Any]] = {}
    n_fits = len(epsilons) * len(seeds)
    for i, eps in enumerate(epsilons):
        for seed in seeds:
            t0 = time.perf_counter()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model = make(eps, seed).fit(p.X, p.y)
                rec: dict[str, Any] = {"status": "ok", **metrics(p.task, p.yt, _scores(p, model))}
                rec["epsilon_reported"] = float(model.privacy_.epsilon)
                rec["accountant"] = str(model.privacy_.accountant)
                rec["n_iter"] = int(np.max(model.n_iter_))
                rec["method_ran"] = str((getattr(model, "fit_info_", None) or {}).get(
                    "method", method))
                if getattr(model, "tuning_", None):
                    rec["notes"] = f"tune=True chose {model.tuning_['candidate']}"
                cond = getattr(model, "conditioning_", None) or {}
                if cond:  # public: the declared centre's use, the row bound, the intercept scale
                    rec["conditioning"] = (
                        f"{'centred' if cond.get('centre') is not None else 'not centred'}, "
                        f"R={cond['row_norm_bound']:.3g}, s="
                        + ("-" if cond.get("intercept_scale") is None
                           else f"{cond['intercept_scale']:.3g}"))
            except Exception as exc:  # recorded as a row; the run goes on
                msg = str(exc).splitlines()[0] if str(exc) else ""
                rec = {"status": f"error: {type(exc).__name__}: {msg}"[:240]}
            rec["fit_seconds"] = time.perf_counter() - t0
            out[(eps, seed)] = rec
            if i == 0 and seed == seeds[0]:
                projected = rec["fit_seconds"] * n_fits
                if rec["status"] != "ok" and _is_config_error(rec["status"]):
                    return {k: {"status": "skipped: " + rec["status"][len("error: "):]}
                            for k in _keys(epsilons, seeds)}
                if projected > budget_s:
                    reason = (f"skipped: one fit took {rec['fit_seconds']:.1f} s, {n_fits} fits "
                              f"projected {projected:.0f} s > budget {budget_s:.0f} s")
                    return {k: {"status": reason} for k in _keys(epsilons, seeds)}
    return out


def _keys(epsilons, seeds):
    return [(e, s) for e in epsilons for s in seeds]


def _is_config_error(status: str) -> bool:
    """A ValueError/TypeError raised before any data is read: the defaults do not apply."""
    return status.startswith(("error: ValueError", "error: TypeError"))


def run_nonprivate(p: Problem) -> dict[str, Any]:
    from sklearn.linear_model import LinearRegression, LogisticRegression

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if p.task == "regression":
            model = LinearRegression().fit(p.X, p.y)
        else:
            model = LogisticRegression(max_iter=10000).fit(p.X, p.y)
    rec = {"status": "ok", **metrics(p.task, p.yt, _scores(p, model))}
    rec["fit_seconds"] = time.perf_counter() - t0
    return rec


# ----------------------------------------------------------------------------- peers


def start_peers(p: Problem, epsilons, seeds, tmp: Path, batch_size: int, enabled: bool = True
                ) -> tuple[subprocess.Popen | None, Path, str]:
    """Write the matrices to ``tmp`` and start run_peer.py in .venv-peers (or say why not)."""
    if not enabled:
        return None, tmp, "not run (--no-peers)"
    if not PEERS_PYTHON.exists():
        return None, tmp, (f"not installed: {PEERS_PYTHON.relative_to(REPO)} is absent "
                           "(make bench-utility-env)")
    src, out = tmp / f"{p.name}.npz", tmp / f"{p.name}_scores.npz"
    np.savez(src, X=p.X, y=p.y, Xt=p.Xt, yt=p.yt, bounds_lo=p.bounds_lo, bounds_hi=p.bounds_hi,
             y_lo=p.y_bounds[0], y_hi=p.y_bounds[1])
    cmd = [str(PEERS_PYTHON), str(PEER_SCRIPT), "--npz", str(src), "--out", str(out),
           "--task", p.task, "--n-classes", str(max(p.n_classes, 2)), "--epsilons",
           *map(repr, epsilons), "--seeds", *map(str, seeds), "--delta", repr(p.delta),
           "--batch-size", str(batch_size)]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    return proc, out, ""


def collect_peers(p: Problem, proc: subprocess.Popen | None, out: Path, why: str, epsilons,
                  seeds) -> tuple[dict[str, dict[tuple[float, int], dict[str, Any]]], dict]:
    """Per-library records keyed by (epsilon, seed), and the peers' versions."""
    if proc is None:
        return {lib: {k: {"status": why} for k in _keys(epsilons, seeds)} for lib in PEERS}, {}
    stdout, stderr = proc.communicate()
    if proc.returncode != 0:
        tail = (stderr.strip().splitlines() or ["?"])[-1][:200]
        why = f"error: run_peer.py exited {proc.returncode}: {tail}"
        return {lib: {k: {"status": why} for k in _keys(epsilons, seeds)} for lib in PEERS}, {}
    report = json.loads(stdout)
    scores = np.load(out)
    res: dict[str, dict[tuple[float, int], dict[str, Any]]] = {lib: {} for lib in PEERS}
    for f in report["fits"]:
        rec = {k: f[k] for k in ("status", "fit_seconds") if k in f}
        if f["status"] == "ok":
            rec.update(metrics(p.task, p.yt, scores[f"{f['library']}|{f['epsilon']!r}|"
                                                     f"{f['seed']}"]))
            rec["epsilon_reported"] = f.get("epsilon_spent")
            rec["notes"] = f.get("notes", "")
        res[f["library"]][(float(f["epsilon"]), int(f["seed"]))] = rec
    return res, report.get("versions", {})


def _peer_worker(problems: list[Problem], epsilons, seeds, tmp: Path, batch_size: int,
                 results: dict[str, tuple[dict, dict]], enabled: bool = True) -> None:
    """Run the peers on each problem in turn; store (records, versions) by problem name."""
    for p in problems:
        t0 = time.perf_counter()
        try:
            proc, out, why = start_peers(p, epsilons, seeds, tmp, batch_size, enabled)
            results[p.name] = collect_peers(p, proc, out, why, epsilons, seeds)
        except Exception as exc:  # a row per cell says what went wrong
            why = f"error: {type(exc).__name__}: {exc}"[:240]
            results[p.name] = ({lib: {k: {"status": why} for k in _keys(epsilons, seeds)}
                                for lib in PEERS}, {})
        print(f"[{p.name}] peers: {time.perf_counter() - t0:.0f} s", file=sys.stderr)


# ----------------------------------------------------------------------------- aggregation


def aggregate(p: Problem, method: str, eps: float, recs: list[dict[str, Any]]) -> dict[str, Any]:
    """One row per (dataset, method, epsilon): mean/std over the seeds that ran."""
    ok = [r for r in recs if r.get("status") == "ok"]
    row: dict[str, Any] = {"dataset": p.name, "task": p.task, "method": method, "epsilon": eps,
                           "delta": p.delta if math.isfinite(eps) else 0.0,
                           "n_seeds": len(ok)}
    keys = ("accuracy", "auc") if p.task == "binary" else (
        ("accuracy",) if p.task == "multiclass" else ("r2",))
    for k in keys:
        vals = np.array([r[k] for r in ok], dtype=np.float64)
        row[f"{k}_mean"] = float(np.mean(vals)) if vals.size else None
        row[f"{k}_std"] = float(np.std(vals)) if vals.size else None
        if k == "r2":
            row["r2_min"] = float(np.min(vals)) if vals.size else None
    row["fit_seconds_mean"] = float(np.mean([r["fit_seconds"] for r in recs
                                             if "fit_seconds" in r])) if ok else None
    eps_rep = [r["epsilon_reported"] for r in ok if r.get("epsilon_reported") is not None]
    row["epsilon_reported_max"] = max(eps_rep) if eps_rep else None
    statuses = sorted({r.get("status", "") for r in recs if r.get("status") != "ok"})
    extra = sorted({r["notes"] for r in ok if r.get("notes")})
    acct = sorted({r["accountant"] for r in ok if r.get("accountant")})
    iters = sorted({r["n_iter"] for r in ok if r.get("n_iter") is not None})
    conds = sorted({r["conditioning"] for r in ok if r.get("conditioning")})
    notes = [*statuses, *extra, *conds]
    if acct:
        notes.append("accountant " + "/".join(acct))
    if iters:
        notes.append("T=" + ("/".join(map(str, iters)) if len(iters) <= 3 else
                             f"{iters[0]}..{iters[-1]}"))
    row["status"] = "ok" if len(ok) == len(recs) else (
        f"{len(ok)}/{len(recs)} ok" if ok else (statuses[0] if statuses else "no result"))
    row["notes"] = "; ".join(notes + p.notes)
    return row


def checks_for(p: Problem, rows: list[dict[str, Any]], epsilons, seeds_per_cell: dict
               ) -> list[dict[str, Any]]:
    """Acceptance checks of issue 10 for noisygd's default, one row per (dataset, epsilon)."""
    m = primary(p.task)
    by = {(r["method"], r["epsilon"]): r for r in rows if r["dataset"] == p.name}
    ceil = by[(NONPRIVATE, math.inf)].get(f"{m}_mean")
    base = 0.5 if p.task == "binary" else (_majority_share(p) if p.task == "multiclass" else 0.0)
    out = []
    for eps in epsilons:
        d = by.get((DEFAULT, eps), {})
        val = d.get(f"{m}_mean")
        peers = [(lab, by.get((lab, eps), {}).get(f"{m}_mean")) for lab in PEER_LABEL.values()]
        peers = [(lab, v) for lab, v in peers if v is not None and math.isfinite(v)]
        best_lab, best = max(peers, key=lambda t: t[1]) if peers else ("", None)
        share = ((val - base) / (ceil - base)) if val is not None and ceil is not None and (
            ceil - base) > 0 else None
        row: dict[str, Any] = {"dataset": p.name, "metric": m, "epsilon": eps,
                               "noisygd_default": val, "best_peer": best,
                               "best_peer_name": best_lab, "non_private": ceil,
                               "share": share}
        target = {1.0: 0.90, 8.0: 0.97} if p.task != "regression" else {1.0: 0.80, 8.0: 0.95}
        if val is None:
            row["checks"] = {"default ran": False}
        elif p.task == "regression":
            row["r2_min"] = d.get("r2_min")
            row["checks"] = {"R2>0 every seed": d.get("r2_min") is not None
                             and d["r2_min"] > 0 and d["n_seeds"] == seeds_per_cell[p.name]}
        else:
            row["checks"] = {">= best peer": None if best is None else bool(val >= best)}
        if val is not None and eps in target:
            row["checks"][f"share >= {target[eps]:.2f}"] = share is not None and bool(
                share >= target[eps])
        if p.name == "adult" and eps == 1.0 and val is not None:
            row["adult_accuracy"] = d.get("accuracy_mean")
            row["checks"]["adult acc >= 0.845"] = bool(d.get("accuracy_mean", 0) >= 0.845)
        if p.task == "regression" and best is not None and val is not None:
            row["info"] = f"vs best peer: {'>=' if val >= best else '<'} ({best_lab})"
        out.append(row)
    return out


def _majority_share(p: Problem) -> float:
    """Test accuracy of predicting the training set's most frequent class (a trivial model)."""
    vals, counts = np.unique(p.y, return_counts=True)
    return float(np.mean(p.yt == vals[np.argmax(counts)]))


# ----------------------------------------------------------------------------- report


def _f(v: Any, digits: int = 4) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return f"{v:.{digits}f}"


def render(checks: list[dict[str, Any]], rows: list[dict[str, Any]], epsilons, meta) -> str:
    verdicts = [(c["dataset"], c["epsilon"], k, v) for c in checks
                for k, v in c["checks"].items() if v is not None]
    n_pass = sum(1 for *_, v in verdicts if v)
    fails = [f"{d} eps {e:g}: {k}" for d, e, k, v in verdicts if not v]
    lines = [f"**Summary: {n_pass} of {len(verdicts)} checks pass, {len(fails)} fail** "
             f"(noisygd default; {meta['seeds']} seeds; epsilons {', '.join(map(str, epsilons))}; "
             f"wall time {meta['wall_seconds']:.0f} s on {meta['environment']['cpu_count']} "
             f"shared CPUs).", ""]
    kinds: dict[str, list[bool]] = {}
    for _, _, k, v in verdicts:
        kinds.setdefault(k, []).append(bool(v))
    lines += ["| check | pass | fail |", "|---|---|---|"]
    lines += [f"| {k} | {sum(v)} | {len(v) - sum(v)} |" for k, v in kinds.items()]
    lines += ["", "Failing: " + ("; ".join(fails) if fails else "none"), ""]
    lines += ["## Acceptance checks (noisygd default)", "",
              "metric: AUC (binary), accuracy (multiclass), R^2 (regression). share: "
              "(m - b) / (m_np - b) with b = 0.5 for AUC, b = majority-class test accuracy for "
              "multiclass, b = 0 for R^2.", "",
              "| dataset | eps | metric | noisygd default | best peer | non-private | share | "
              "checks |", "|---|---|---|---|---|---|---|---|"]
    for c in checks:
        cks = ", ".join(f"{k}: {'pass' if v else 'FAIL'}" for k, v in c["checks"].items()
                        if v is not None) or "-"
        if c.get("info"):
            cks += f" ({c['info']})"
        peer = f"{_f(c['best_peer'])} ({c['best_peer_name']})" if c["best_peer"] is not None \
            else "-"
        lines.append(f"| {c['dataset']} | {c['epsilon']:g} | {c['metric']} | "
                     f"{_f(c['noisygd_default'])} | {peer} | {_f(c['non_private'])} | "
                     f"{_f(c['share'], 3)} | {cks} |")
    lines += ["", "## All methods: primary metric, mean ± std over seeds", ""]
    head = "| dataset | method | " + " | ".join(f"eps {e:g}" for e in epsilons) + " | status |"
    lines += [head, "|" + "---|" * (len(epsilons) + 3)]
    order: dict[tuple[str, str], dict[float, dict]] = {}
    for r in rows:
        if "task" not in r:  # a data set that could not be loaded
            lines.append(f"| {r['dataset']} | - | " + " | ".join("-" for _ in epsilons)
                         + f" | {r['status']} |")
            continue
        order.setdefault((r["dataset"], r["method"]), {})[r["epsilon"]] = r
    for (ds, meth), cells in order.items():
        task = next(iter(cells.values()))["task"]
        m = primary(task)
        if math.inf in cells:
            r = cells[math.inf]
            vals = [_f(r.get(f"{m}_mean"))] + ["" for _ in epsilons[1:]]
            st = f"{m}; non-private"
        else:
            vals = []
            for e in epsilons:
                r = cells.get(e, {})
                mu, sd = r.get(f"{m}_mean"), r.get(f"{m}_std")
                vals.append(f"{_f(mu)} ± {_f(sd, 3)}" if mu is not None else "-")
            stats = sorted({cells[e]["status"] for e in epsilons if e in cells})
            st = f"{m}; " + "; ".join(stats)
        lines.append(f"| {ds} | {meth} | " + " | ".join(vals) + f" | {st} |")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--quick", action="store_true",
                    help="1 seed, epsilons 1 and 8, breast_cancer/digits10/diabetes")
    ap.add_argument("--seeds", type=int, default=None, help="default 5 (1 with --quick)")
    ap.add_argument("--epsilons", type=float, nargs="+", default=None)
    ap.add_argument("--problems", nargs="+", default=None, choices=ALL_PROBLEMS)
    ap.add_argument("--methods", nargs="+", default=None,
                    help="noisygd methods besides the default (default: all of SOLVERS)")
    ap.add_argument("--method-budget", type=float, default=120.0,
                    help="skip a noisygd method on a problem whose projected cost exceeds this")
    ap.add_argument("--max-train", type=int, default=None,
                    help="subsample training sets above this many rows (default: none)")
    ap.add_argument("--batch-size", type=int, default=256,
                    help="Opacus expected batch size (capped at n)")
    ap.add_argument("--no-peers", action="store_true",
                    help="do not run Opacus/diffprivlib (their rows say 'not run')")
    ap.add_argument("--no-declarations", action="store_true",
                    help="fit noisygd without feature_bounds/target_range (comparison only)")
    ap.add_argument("--tune", action="store_true",
                    help="also fit 'noisygd tune=True' (private selection; docs/tuning.md)")
    ap.add_argument("--name", default=NAME)
    ap.add_argument("--results-dir", default=None, help="default benchmarks/results")
    args = ap.parse_args(argv)

    from noisygd.solvers import SOLVERS, get_solver

    global DECLARE
    DECLARE = not args.no_declarations
    seeds = list(range(args.seeds if args.seeds is not None else (1 if args.quick else 5)))
    epsilons = tuple(sorted(args.epsilons or (QUICK_EPSILONS if args.quick else EPSILONS)))
    names = tuple(args.problems or (QUICK_PROBLEMS if args.quick else ALL_PROBLEMS))
    methods = list(args.methods or SOLVERS)
    default_solver = get_solver("auto").name
    root = data_dir(args.data_dir)
    t_start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    checks: list[dict[str, Any]] = []
    problems_meta: dict[str, Any] = {}
    peer_versions: dict[str, Any] = {}
    seeds_per_cell: dict[str, int] = {}
    problems: list[Problem] = []
    for name in names:
        try:
            problems.append(subsample(load_problem(name, root), args.max_train))
        except Exception as exc:  # missing data: a row saying so
            rows.append({"dataset": name, "method": "(data)", "epsilon": None,
                         "status": f"skipped: {type(exc).__name__}: {exc}"[:240]})
            print(f"[{name}] skipped: {exc}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="bench_utility_") as tmpdir:
        # The peers run in one background thread (one subprocess at a time, largest problem
        # first) while this process fits noisygd: the two overlap on the machine's cores.
        peer_results: dict[str, tuple[dict, dict]] = {}
        peer_thread = threading.Thread(target=_peer_worker, daemon=True, args=(
            sorted(problems, key=lambda q: -q.X.shape[0] * max(q.X.shape[1], 1)), epsilons,
            seeds, Path(tmpdir), args.batch_size, peer_results, not args.no_peers))
        peer_thread.start()
        for p in problems:
            name = p.name
            t0 = time.perf_counter()
            seeds_per_cell[name] = len(seeds)
            problems_meta[name] = {"task": p.task, "n_train": p.X.shape[0],
                                   "n_test": p.Xt.shape[0], "n_features": p.X.shape[1],
                                   "n_classes": p.n_classes, "delta": p.delta,
                                   "source": p.source, "notes": p.notes,
                                   "declared": p.declared + (
                                       f"; target_range={tuple(p.y_bounds)}"
                                       if p.task == "regression" else ""),
                                   "max_row_norm_ok": bool(
                                       np.all(np.einsum("ij,ij->i", p.X, p.X) <= 1 + 1e-9))}
            np_rec = run_nonprivate(p)
            rows.append(aggregate(p, NONPRIVATE, math.inf, [np_rec]))
            fitted: dict[str, dict] = {}
            runs = [(DEFAULT, "auto"), *((f"noisygd {m}", m) for m in methods)]
            if args.tune:
                runs.append((TUNED, "auto"))
            for label, method in runs:
                if label == TUNED:
                    recs = run_noisygd(p, method, epsilons, seeds, args.method_budget,
                                       {"tune": True})
                    alias = "tune=True: private selection over the default candidates"
                elif method == default_solver and all(
                        r.get("method_ran", method) == method for r in fitted[DEFAULT].values()):
                    # method='auto' ran this method in every cell: the same fits
                    recs = fitted[DEFAULT]
                    alias = f"same fits as {DEFAULT} (method='auto' ran {default_solver!r})"
                else:
                    recs = run_noisygd(p, method, epsilons, seeds, args.method_budget)
                    fitted[label] = recs
                    alias = ""
                for eps in epsilons:
                    row = aggregate(p, label, eps, [recs[(eps, s)] for s in seeds])
                    if alias:
                        row["notes"] = "; ".join(x for x in (alias, row["notes"]) if x)
                    rows.append(row)
                print(f"[{name}] {label}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
            problems_meta[name]["noisygd_seconds"] = time.perf_counter() - t0
        print(f"noisygd done at {time.perf_counter() - t_start:.0f} s; waiting for peers",
              file=sys.stderr)
        peer_thread.join()
    for p in problems:
        peer_recs, versions = peer_results.get(p.name, ({}, {}))
        peer_versions.update(versions)
        for lib in PEERS:
            for eps in epsilons:
                recs = [peer_recs.get(lib, {}).get((eps, s), {"status": "no result"})
                        for s in seeds]
                rows.append(aggregate(p, PEER_LABEL[lib], eps, recs))
    rows.sort(key=lambda r: names.index(r["dataset"]))
    for p in problems:
        checks += checks_for(p, rows, epsilons, seeds_per_cell)
    wall = time.perf_counter() - t_start
    meta = {
        "title": "Utility on data nobody tuned for: noisygd defaults vs Opacus, diffprivlib, "
                 "non-private (issue 10)",
        "command": "python " + " ".join(["benchmarks/bench_utility.py", *sys.argv[1:]]),
        "environment": environment(), "peers": peer_versions or "not run",
        "seeds": len(seeds), "epsilons": list(epsilons), "problems": problems_meta,
        "default_solver": default_solver, "methods": methods,
        "method_budget_seconds": args.method_budget, "opacus_batch_size": args.batch_size,
        "wall_seconds": wall, "checks": checks,
        "delta_rule": "delta = min(1e-5, n_train^-1.1)",
        "ceiling": "scikit-learn LogisticRegression(max_iter=10000) (C=1, lbfgs) / "
                   "LinearRegression() on the same matrices",
    }
    meta["description"] = render(checks, rows, epsilons, meta)
    columns = ("dataset", "method", "epsilon", "delta", "n_seeds", "accuracy_mean",
               "accuracy_std", "auc_mean", "auc_std", "r2_mean", "r2_std", "r2_min",
               "fit_seconds_mean", "epsilon_reported_max", "status", "notes")
    extra = "\n".join([
        "Data and bounds: " + "; ".join(f"{k}: {v['source']} (n={v['n_train']}, "
                                         f"d={v['n_features']})"
                                         for k, v in problems_meta.items()),
        f"Peers ({json.dumps(peer_versions)}): see benchmarks/peers/run_peer.py; Opacus "
        f"expected batch size min({args.batch_size}, n).",
        f"Wall time: {wall:.0f} s; load average at start "
        f"{meta['environment']['load_average_at_start']} on "
        f"{meta['environment']['cpu_count']} CPUs.",
    ])
    _, mpath = write_results(args.name, rows, meta, columns=columns, extra_markdown=extra,
                             results_dir=Path(args.results_dir) if args.results_dir else None)
    print(meta["description"])
    print(f"\nwrote {mpath} ({wall:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
