"""Multiclass benchmark (issue 19, item 4): the multinomial default, plain, beside the fit
without the private conditioning and one-vs-rest.

Problems (every parameter below public and fixed in this file, none chosen by looking at
results):

* scikit-learn's bundled ``wine`` (K = 3, 13 columns from near 0.1 to near 1 700),
  ``iris`` (K = 3) and ``digits`` (K = 10, pixels 0-16), raw, each split 75/25 stratified
  by the run's seed;
* generated families (``family_problem``), training rows and 5 000 test rows drawn alike:

  - ``mixed``: ``n = 3 000``, ``p = 20`` standard normal features times scales log-spaced over
    100x plus offsets ``U(-5, 5)`` times the scale (raw columns far from the origin and of
    very different spreads), ``K = 3`` classes from a softmax model with weights
    ``N(0, 0.6^2)`` on the standardised features (Gumbel noise);
  - ``onehot``: ``n = 5 000``, five categorical features of 5, 8, 3, 10 and 6 levels, one-hot
    encoded (32 uncentred 0/1 columns), ``K = 4`` classes from per-level scores ``N(0, 1)``;
  - ``imbalanced``: ``n = 4 000``, ``p = 10`` features uniform on [0, 1], ``K = 4`` classes of
    about 70%, 15%, 10% and 5% (softmax model with weights ``N(0, 3^2)`` and intercepts
    set to those shares at the origin of the centred features);
  - ``large`` (on request: ``--problems large``, slow under NoisyGD): ``n = 100 000``,
    ``p = 50`` standard normal features over ``sqrt(p)``, ``K = 7`` classes from a softmax
    model with weights ``N(0, 3^2)`` (Gumbel noise): where NoisyGD's compute budget binds.

For each problem, epsilon in {0.5, 1, 2, 8} and seed: ``DPLogisticRegression(epsilon,
classes=...)`` with every default (``default``: one multinomial problem with the private
conditioning, its feature range and per-feature scale, what a user who declares nothing
gets), ``uncond`` (``conditioning_share=0``: the same fit without those releases, which
was the multinomial default before 2026-12-01), ``ovr`` (``multiclass="ovr"``: ``K``
binary problems, each conditioned), and the default without one of its releases
(``no_feature_scale``: ``feature_scale_share=0``; ``no_feature_range``:
``feature_range_share=0``), and the default's two methods forced: ``noisy_gd``
(``method="noisy_gd"``: the multinomial default before 2026-12-01, when ``method="auto"``
ran NoisyGD for every multinomial fit) and ``newton`` (``method="newton"``: private Newton
on the softmax loss's curvature sums). The metric is the macro one-vs-rest AUC on the test
rows and the share of the non-private gain ``(AUC - 0.5) / (AUC_np - 0.5)`` (the constant
predictor is 0), with scikit-learn's ``LogisticRegression()`` on standardised columns as the
non-private model; accuracy, the training log loss, the median fit time (``fit_s``, one
thread) and the methods that ran (``fit_info_["method"]``) beside it; each problem's first
row is that non-private fit itself (``sklearn lbfgs (non-private)``: its AUC, training log
loss and median whole-fit time, the same process and thread).

Run: ``.venv/bin/python benchmarks/bench_multiclass.py [--seeds 5]``, and
``... --problems large --seeds 2 --name bench_multiclass_large``.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from _common import environment, write_results

NAME = "bench_multiclass"
EPSILONS = (0.5, 1.0, 2.0, 8.0)
VARIANTS = {"default": {}, "uncond": {"conditioning_share": 0.0},
            "ovr": {"multiclass": "ovr"}, "no_feature_scale": {"feature_scale_share": 0.0},
            "no_feature_range": {"feature_range_share": 0.0},
            "noisy_gd": {"method": "noisy_gd"}, "newton": {"method": "newton"}}
BUNDLED = ("wine", "iris", "digits")
FAMILIES = ("mixed", "onehot", "imbalanced", "large")
#: The non-private reference's row (the ceiling, timed): scikit-learn lbfgs, standardised.
SKLEARN = "sklearn lbfgs (non-private)"
#: The problems run by default (``large``, slow under NoisyGD, runs on request).
DEFAULT_PROBLEMS = ("wine", "iris", "digits", "mixed", "onehot", "imbalanced")
TEST_ROWS = 5000
COLUMNS = ("problem", "n", "p", "K", "variant", "epsilon", "auc_mean", "auc_min", "share_mean",
           "accuracy_mean", "auc_np", "log_loss_mean", "fit_s", "methods")


def family_problem(family: str, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                    np.ndarray]:
    """``(X, y, Xt, yt)`` of one generated family (module doc), test rows drawn alike."""
    rng = np.random.default_rng([seed, FAMILIES.index(family), 19])
    if family == "mixed":
        n, p, K = 3000, 20, 3
        W = rng.normal(0.0, 0.6, (K, p))
        scales = np.geomspace(1.0, 100.0, p)
        offsets = rng.uniform(-5.0, 5.0, p) * scales

        def draw(m: int) -> tuple[np.ndarray, np.ndarray]:
            Z = rng.normal(size=(m, p))
            y = np.argmax(Z @ W.T + rng.gumbel(size=(m, K)), axis=1)
            return Z * scales + offsets, y
    elif family == "onehot":
        n, levels, K = 5000, (5, 8, 3, 10, 6), 4
        scores = [rng.normal(size=(L, K)) for L in levels]

        def draw(m: int) -> tuple[np.ndarray, np.ndarray]:
            picks = [rng.integers(0, L, m) for L in levels]
            z = sum(S[v] for S, v in zip(scores, picks, strict=True)) + rng.gumbel(size=(m, K))
            rows = np.hstack([np.eye(L)[v] for L, v in zip(levels, picks, strict=True)])
            return rows, np.argmax(z, axis=1)
    elif family == "large":
        n, p, K = 100_000, 50, 7
        W = rng.normal(0.0, 3.0, (K, p))

        def draw(m: int) -> tuple[np.ndarray, np.ndarray]:
            X = rng.normal(size=(m, p)) / np.sqrt(p)
            return X, np.argmax(X @ W.T + rng.gumbel(size=(m, K)), axis=1)
    else:
        n, p, K = 4000, 10, 4
        W = rng.normal(0.0, 3.0, (K, p))
        b = np.log(np.array([0.70, 0.15, 0.10, 0.05]))

        def draw(m: int) -> tuple[np.ndarray, np.ndarray]:
            X = rng.random((m, p))
            z = (X - 0.5) @ W.T / np.sqrt(p) + b + rng.gumbel(size=(m, K))
            return X, np.argmax(z, axis=1)
    X, y = draw(n)
    Xt, yt = draw(TEST_ROWS)
    return X, y, Xt, yt


def bundled_problem(name: str, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                   np.ndarray]:
    """``(X, y, Xt, yt)``: scikit-learn's set, raw, split 75/25 stratified by ``seed``."""
    from sklearn import datasets
    from sklearn.model_selection import train_test_split

    X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    X, Xt, y, yt = train_test_split(X, y, test_size=0.25, stratify=y, random_state=seed)
    return X, y, Xt, yt


def _auc(y: np.ndarray, P: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, P, multi_class="ovr", labels=np.arange(P.shape[1])))


def nonprivate_fit(X: np.ndarray, y: np.ndarray, Xt: np.ndarray, yt: np.ndarray
                   ) -> tuple[float, float, float]:
    """``(AUC, seconds, training log loss)`` of scikit-learn's ``LogisticRegression()``
    (lbfgs) on standardised columns: the non-private ceiling, timed as a whole fit."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    t0 = time.perf_counter()
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=10000)).fit(X, y)
    seconds = time.perf_counter() - t0
    return (_auc(yt, model.predict_proba(Xt)), seconds,
            float(log_loss(y, model.predict_proba(X), labels=model.classes_)))


def run_problem(name: str, load: Any, seeds: int) -> list[dict[str, Any]]:
    """Rows of one problem: per variant and epsilon, the mean over ``seeds`` splits/draws."""
    from sklearn.metrics import log_loss

    from noisygd.estimators import DPLogisticRegression

    data = [load(s) for s in range(seeds)]
    fits = [nonprivate_fit(*d) for d in data]
    ceilings = [f[0] for f in fits]
    n, p = data[0][0].shape
    K = int(max(int(np.max(d[1])) for d in data)) + 1
    rows = [{"problem": name, "n": n, "p": p, "K": K, "variant": SKLEARN, "epsilon": None,
             "auc_mean": float(np.mean(ceilings)), "auc_min": float(np.min(ceilings)),
             "auc_np": float(np.mean(ceilings)),
             "log_loss_mean": float(np.mean([f[2] for f in fits])),
             "fit_s": float(np.median([f[1] for f in fits])), "methods": "lbfgs"}]
    for variant, options in VARIANTS.items():
        for eps in EPSILONS:
            aucs, shares, accs, losses, seconds, ran = [], [], [], [], [], set()
            for seed, ((X, y, Xt, yt), ceiling) in enumerate(zip(data, ceilings, strict=True)):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    t0 = time.perf_counter()
                    model = DPLogisticRegression(epsilon=eps, classes=list(range(K)),
                                                 random_state=seed, **options).fit(X, y)
                    seconds.append(time.perf_counter() - t0)
                ran.add(str(model.fit_info_.get("method")))
                losses.append(float(log_loss(y, model.predict_proba(X), labels=np.arange(K))))
                auc = _auc(yt, model.predict_proba(Xt))
                aucs.append(auc)
                shares.append((auc - 0.5) / (ceiling - 0.5))
                accs.append(float(np.mean(model.predict(Xt) == yt)))
            rows.append({"problem": name, "n": n, "p": p, "K": K, "variant": variant,
                         "epsilon": eps, "auc_mean": float(np.mean(aucs)),
                         "auc_min": float(np.min(aucs)), "share_mean": float(np.mean(shares)),
                         "accuracy_mean": float(np.mean(accs)),
                         "auc_np": float(np.mean(ceilings)),
                         "log_loss_mean": float(np.mean(losses)),
                         "fit_s": float(np.median(seconds)), "methods": ",".join(sorted(ran))})
            print(f"  {name} {variant} eps {eps:g}: AUC {rows[-1]['auc_mean']:.3f}", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--problems", nargs="+", default=list(DEFAULT_PROBLEMS),
                    choices=[*BUNDLED, *FAMILIES])
    ap.add_argument("--name", default=NAME)
    args = ap.parse_args()
    env, t0 = environment(), time.perf_counter()
    rows: list[dict[str, Any]] = []
    for name in args.problems:
        if name in BUNDLED:
            rows += run_problem(name, lambda s, name=name: bundled_problem(name, s), args.seeds)
        else:
            rows += run_problem(name, lambda s, name=name: family_problem(name, s), args.seeds)
    by = {(r["problem"], r["variant"], r["epsilon"]): r for r in rows}
    summary = []
    for eps in EPSILONS:
        mean = {v: float(np.mean([by[(pr, v, eps)]["share_mean"] for pr in args.problems]))
                for v in VARIANTS}
        summary.append({"epsilon": eps, **{f"share_{v}": mean[v] for v in VARIANTS}})
    meta = {
        "title": "Multiclass: the multinomial default (plain) beside uncond and one-vs-rest",
        "description": ("Macro one-vs-rest AUC and share of the non-private gain of "
                        "DPLogisticRegression's multinomial default with the private "
                        "conditioning, without it (conditioning_share=0) and one-vs-rest "
                        "(module docstring)."),
        "environment": env, "seeds": args.seeds, "epsilons": list(EPSILONS),
        "command": ("python benchmarks/bench_multiclass.py " + f"--seeds {args.seeds}"
                    + ("" if tuple(args.problems) == DEFAULT_PROBLEMS
                       else " --problems " + " ".join(args.problems))
                    + ("" if args.name == NAME else f" --name {args.name}")),
        "summary": summary, "wall_seconds": time.perf_counter() - t0,
    }
    from _common import markdown_table

    extra = "\n".join(["## Mean share of the non-private gain over the problems", "",
                       markdown_table(summary, ("epsilon", *[f"share_{v}" for v in VARIANTS]))])
    write_results(args.name, rows, meta, columns=COLUMNS, extra_markdown=extra)


if __name__ == "__main__":
    main()
