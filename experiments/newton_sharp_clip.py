"""Newton's sharp clip after the first step: the private Newton method with and without it.

After step 0's releases (the curvature and the first noisy gradient) the run reads the
output's noise-to-signal ratio in parameter space, ``q`` = the rms norm of the output's error
(one gradient release at the tail's mu through the released curvature) over the first noisy
Newton step's length, and clips the remaining steps at ``C (1 - (1 - s) r(q))``: NoisyGD's
noise regime ``r`` and the loss's sharp ratio ``s`` (1/2 logistic, 0.5015 least squares)
(``noisygd.algorithms.newton``, "The sharp clip after the first step"). This script measures
``DPLogisticRegression(method="newton")`` and ``DPLinearRegression(method="newton")`` with
the rule (the default) against the same fit with ``method_options={"sharp_clip": 1.0}``
(factor 1: every step at the base clip, the rule before), on

* ``bench_conditioning``'s four families (one-hot, imbalanced, scales, off-centre; n 500,
  2000, 10 000; p 5, 20, 100) and, where the data is present, the eight binary and
  regression ``bench_utility`` sets, plain (no bounds) and with the declared box: share of
  the non-private gain (AUC, or R^2);
* the sparse problems of ``experiments/diagonal_preconditioner.py`` (the diagonal form, its
  row support paid for) and ``benchmarks/_scale_problems.py``'s CSR problem: test AUC (an
  80/20 split; the CSR problem has no test split: training AUC) and training log loss,

at epsilon 0.5, 1, 2 and 8 and seeds 0 and 1 (``--seeds``); ``factor`` is the mean clip factor
the rule applied.

Run: ``python experiments/newton_sharp_clip.py --part k/2`` for k = 0, 1, then ``--merge 2``;
writes ``experiments/results/newton_sharp_clip.{json,md}``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from _experiment import (
    EPSILONS,
    FAMILY_CELLS,
    UTILITY_TABLES,
    add_part_arguments,
    change_summary,
    experiment_parser,
    rows_in_parts,
    write_experiment,
)

NAME = "newton_sharp_clip"
SPARSE = ("onehot-50000 (20 fields x 100)", "onehot-200000 (5 fields x 300)",
          "sparse-200000 (5 of 5000)", "sparse-300000 (30 of 3000)", "scale CSR 1e6 x 1e4")
VARIANTS = (("base clip", {"sharp_clip": 1.0}), ("sharp after step 0", None))


def items(data_dir: Any) -> list[tuple[str, Any]]:
    """The ``bench_conditioning`` problems, then the sparse ones (built lazily)."""
    from bench_conditioning import named_problems

    return [*named_problems(FAMILY_CELLS, data_dir, UTILITY_TABLES),
            *((name, None) for name in SPARSE)]


def sparse_problem(name: str) -> dict[str, Any]:
    """``{"X", "y", "Xt", "yt"}`` of a sparse problem (module doc)."""
    if name.startswith("scale"):
        from _scale_problems import sparse_problem as scale_csr

        X, y = scale_csr()
        return {"X": X, "y": y, "Xt": X, "yt": y}
    from diagonal_preconditioner import PROBLEMS

    X, y = PROBLEMS[name]()
    cut = int(0.8 * X.shape[0])
    return {"X": X[:cut], "y": y[:cut], "Xt": X[cut:], "yt": y[cut:]}


def newton_fit(prob: dict[str, Any], declared: str, eps: float, seed: int,
               options: dict | None) -> tuple[Any, float]:
    """The Newton fit (``bench_conditioning.fit_estimator``: a classifier, or a regressor with
    ``target_range=(0, 1)``) and the clip factor its rule applied (1 when off)."""
    from bench_conditioning import fit_estimator

    _, est = fit_estimator(prob, "newton", declared, eps, seed, method_options=options)
    record = est.fit_info_["plans"][0].get("sharp_clip") or {}
    return est, float(record.get("factor", 1.0))


def score(prob: dict[str, Any], est: Any, ceiling: float | None) -> tuple[float, float]:
    """``(metric, training loss)`` of a fit: the share of the non-private gain (AUC or R^2;
    the test AUC itself where ``ceiling`` is None, the sparse problems) and the training log
    loss, or half the mean squared error for regression."""
    from bench_conditioning import _metric, _share
    from sklearn.metrics import log_loss

    task = prob["task"]
    if task == "regression":
        value = _metric(task, prob["yt"], est.predict(prob["Xt"]))
        train = est.predict(prob["X"]) - prob["y"]
        return _share(task, value, ceiling), float(np.mean(train * train)) / 2
    auc = _metric(task, prob["yt"], est.decision_function(prob["Xt"]))
    loss = log_loss(prob["y"], est.predict_proba(prob["X"])[:, 1])
    return (auc if ceiling is None else _share(task, auc, ceiling)), loss


def run_item(item: tuple[str, Any], seeds: int) -> list[dict[str, Any]]:
    """Rows of one problem: per declared form and epsilon, each variant's mean metric."""
    from bench_conditioning import nonprivate

    name, prob = item
    sparse = prob is None
    if sparse:
        prob = {**sparse_problem(name), "task": "binary"}
    task = prob["task"]
    ceiling = None if sparse else nonprivate(prob)
    out = []
    for declared in ("plain",) if sparse else ("plain", "box"):
        for eps in EPSILONS:
            row: dict[str, Any] = {"problem": name, "task": task, "declared": declared,
                                   "epsilon": eps}
            for label, options in VARIANTS:
                fits = [newton_fit(prob, declared, eps, seed, options)
                        for seed in range(seeds)]
                scores = [score(prob, est, ceiling) for est, _ in fits]
                row[label] = float(np.mean([metric for metric, _ in scores]))
                row[f"{label} loss"] = float(np.mean([loss for _, loss in scores]))
                if options is None:  # the rule's variant: the clip factor it applied
                    row["factor"] = float(np.mean([factor for _, factor in fits]))
            row["change"] = row[VARIANTS[1][0]] - row[VARIANTS[0][0]]
            row["loss change"] = row[f"{VARIANTS[1][0]} loss"] - row[f"{VARIANTS[0][0]} loss"]
            out.append(row)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = experiment_parser(__doc__, seeds=2)
    add_part_arguments(ap)
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    rows = rows_in_parts(NAME, lambda: items(args.data_dir), args.part, args.merge,
                         lambda item: run_item(item, args.seeds))
    if rows is None:
        return 0
    first, second = (label for label, _ in VARIANTS)
    dense = [r for r in rows if r["problem"] not in SPARSE]
    lines = [
        "# Newton's sharp clip after the first step",
        "",
        "`DPLogisticRegression(method=\"newton\")` and `DPLinearRegression(method=\"newton\")` "
        "with every step at the base clip "
        "(`method_options={\"sharp_clip\": 1.0}`) and with the sharp clip after step 0 "
        "(the default; module doc of `experiments/newton_sharp_clip.py`); means over seeds "
        f"0..{args.seeds - 1}. bench_conditioning problems: share of the non-private gain, AUC "
        "or R^2 (" + "; ".join(
            change_summary(f"{task}, {d}", [r["change"] for r in dense
                                            if r["declared"] == d and r["task"] == task])
            for task in ("binary", "regression") for d in ("plain", "box"))
        + "); sparse problems: test AUC (training AUC for the scale CSR problem). `factor`: "
        "the mean clip factor applied; losses are training log losses (half the mean squared "
        "error for regression).",
        "",
        f"| problem | declared | epsilon | {first} | {second} | change | factor | "
        f"{first} loss | {second} loss | loss change |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *(f"| {r['problem']} | {r['declared']} | {r['epsilon']:g} | {r[first]:.4f} | "
          f"{r[second]:.4f} | {r['change']:+.4f} | {r['factor']:.3f} | "
          f"{r[first + ' loss']:.4f} | {r[second + ' loss']:.4f} | {r['loss change']:+.4f} |"
          for r in rows),
        "",
        f"Command: `python experiments/{NAME}.py --part k/2` for k = 0, 1, then `--merge 2`.",
    ]
    write_experiment(NAME, rows, "\n".join(lines) + "\n")
    print("\n".join(lines[:3]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
