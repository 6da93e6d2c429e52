"""Peer libraries for ``benchmarks/bench_utility.py``, run with the peers' own python.

Runs in ``.venv-peers`` (torch 2.13.0 CPU, opacus 1.6.0, diffprivlib 0.6.6, scikit-learn
1.6.1), never in noisygd's environment. Reads one problem from an ``.npz`` written by the main
benchmark (``X, y, Xt, yt``, the public per-feature bounds ``bounds_lo, bounds_hi`` and the
public target bounds ``y_lo, y_hi``), fits every (library, epsilon, seed) asked for, writes
the test-set scores to ``--out`` (an ``.npz``, key ``"<library>|<epsilon>|<seed>"``) and prints
one JSON object to stdout: ``{"versions": {...}, "fits": [{library, epsilon, seed, status,
fit_seconds, epsilon_spent, notes}, ...]}``. Metrics are computed by the caller, from the
scores, with the same code for every library.

Peers and their fixed recipes (nothing tuned on any data):

* ``opacus``: DP-SGD on the same linear model (``torch.nn.Linear(d, 1)`` with
  ``BCEWithLogitsLoss`` for binary, ``Linear(d, K)`` with ``CrossEntropyLoss`` for multiclass,
  ``Linear(d, 1)`` with ``MSELoss`` for regression), Poisson sampling with expected batch size
  ``min(--batch-size, n)``, 10 epochs, SGD lr 2.5, momentum 0.9, clip 1, noise calibrated by
  ``PrivacyEngine(accountant="prv").make_private_with_epsilon`` to ``(epsilon, delta)``.
* ``diffprivlib``: ``LogisticRegression(epsilon, data_norm=row_norm_bound)`` (its defaults
  otherwise; one-vs-rest with epsilon split over classes for K > 2) and
  ``LinearRegression(epsilon, bounds_X, bounds_y)`` with the public bounds; pure epsilon-DP.

Scores: binary, the decision value (logit; > 0 predicts class 1); multiclass, the predicted
class index; regression, the prediction.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

EPOCHS = 10
LR = 2.5
MOMENTUM = 0.9
CLIP = 1.0


def _versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0], "numpy": np.__version__}
    for mod in ("torch", "opacus", "diffprivlib", "sklearn"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception as exc:  # reported, not fatal
            out[mod] = f"not importable: {type(exc).__name__}: {exc}"
    return out


def _cache_calibration() -> None:
    """Memoise Opacus' noise calibration (a bisection over sigma, about a second per call).

    ``make_private_with_epsilon`` calls ``get_noise_multiplier(target_epsilon, target_delta,
    sample_rate, epochs, accountant, ...)``, a deterministic function of public arguments that
    is the same for every seed; caching it changes nothing but the run time.
    """
    import opacus.privacy_engine as pe

    if not hasattr(pe.get_noise_multiplier, "cache_info"):
        pe.get_noise_multiplier = functools.cache(pe.get_noise_multiplier)


def fit_opacus(X, y, Xt, task: str, n_classes: int, epsilon: float, delta: float,
               seed: int, batch_size: int) -> tuple[np.ndarray, float, str]:
    """DP-SGD with the fixed recipe; returns (test scores, epsilon spent, notes)."""
    import torch
    from opacus import PrivacyEngine
    from torch.utils.data import DataLoader, TensorDataset

    _cache_calibration()
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    n, d = X.shape
    Xtr = torch.as_tensor(X, dtype=torch.float32)
    if task == "multiclass":
        out_dim, ytr = n_classes, torch.as_tensor(y, dtype=torch.long)
        criterion: torch.nn.Module = torch.nn.CrossEntropyLoss()
    else:
        out_dim, ytr = 1, torch.as_tensor(y, dtype=torch.float32).reshape(-1, 1)
        criterion = torch.nn.BCEWithLogitsLoss() if task == "binary" else torch.nn.MSELoss()
    model = torch.nn.Linear(d, out_dim)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    bs = int(min(batch_size, n))
    gen = torch.Generator().manual_seed(seed)
    loader = DataLoader(TensorDataset(Xtr, ytr), batch_size=bs, generator=gen)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine = PrivacyEngine(accountant="prv")
        model, optimizer, loader = engine.make_private_with_epsilon(
            module=model, optimizer=optimizer, data_loader=loader, target_epsilon=epsilon,
            target_delta=delta, epochs=EPOCHS, max_grad_norm=CLIP, poisson_sampling=True,
            noise_generator=torch.Generator().manual_seed(10_000 + seed))
        model.train()
        for _ in range(EPOCHS):
            for xb, yb in loader:
                optimizer.zero_grad()
                loss = criterion(model(xb), yb)
                loss.backward()
                optimizer.step()
        spent = float(engine.get_epsilon(delta))
    model.eval()
    with torch.no_grad():
        out = model(torch.as_tensor(Xt, dtype=torch.float32)).numpy().astype(np.float64)
    if task == "multiclass":
        scores = np.argmax(out, axis=1).astype(np.float64)
    else:
        scores = out[:, 0]
    note = (f"Poisson q={bs}/{n}, {EPOCHS} epochs, SGD lr {LR} momentum {MOMENTUM}, clip {CLIP}, "
            f"sigma={optimizer.noise_multiplier:.4g} (prv accountant)")
    return scores, spent, note


def fit_diffprivlib(X, y, Xt, task: str, epsilon: float, seed: int, row_norm: float,
                    bounds: tuple[np.ndarray, np.ndarray], y_bounds: tuple[float, float]
                    ) -> tuple[np.ndarray, float, str]:
    """diffprivlib's model with the public bounds it asks for."""
    from diffprivlib.models import LinearRegression, LogisticRegression

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if task == "regression":
            model = LinearRegression(epsilon=epsilon, bounds_X=bounds, bounds_y=y_bounds,
                                     random_state=seed).fit(X, y)
            return np.asarray(model.predict(Xt), dtype=np.float64), epsilon, (
                "LinearRegression(bounds_X, bounds_y public); pure eps-DP")
        model = LogisticRegression(epsilon=epsilon, data_norm=row_norm,
                                   random_state=seed).fit(X, y)
    if task == "binary":
        scores = np.asarray(model.decision_function(Xt), dtype=np.float64)
    else:
        scores = np.searchsorted(model.classes_, model.predict(Xt)).astype(np.float64)
    note = f"LogisticRegression(data_norm={row_norm:g}, C=1, max_iter=100); pure eps-DP"
    if task == "multiclass":
        note += "; one-vs-rest, eps split over classes"
    return scores, epsilon, note


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--npz", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--task", required=True, choices=("binary", "multiclass", "regression"))
    p.add_argument("--n-classes", type=int, default=2)
    p.add_argument("--epsilons", type=float, nargs="+", required=True)
    p.add_argument("--seeds", type=int, nargs="+", required=True)
    p.add_argument("--delta", type=float, required=True)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--row-norm", type=float, default=1.0)
    p.add_argument("--libraries", nargs="+", default=("opacus", "diffprivlib"))
    args = p.parse_args(argv)

    data = np.load(args.npz)
    X, y, Xt = data["X"], data["y"], data["Xt"]
    bounds = (data["bounds_lo"], data["bounds_hi"])
    y_bounds = (float(data["y_lo"]), float(data["y_hi"]))
    fits, scores = [], {}
    for lib in args.libraries:
        for eps in args.epsilons:
            for seed in args.seeds:
                rec = {"library": lib, "epsilon": eps, "seed": seed}
                t0 = time.perf_counter()
                try:
                    if lib == "opacus":
                        s, spent, note = fit_opacus(X, y, Xt, args.task, args.n_classes, eps,
                                                    args.delta, seed, args.batch_size)
                    elif lib == "diffprivlib":
                        s, spent, note = fit_diffprivlib(X, y, Xt, args.task, eps, seed,
                                                         args.row_norm, bounds, y_bounds)
                    else:
                        raise ValueError(f"unknown library {lib!r}")
                    scores[f"{lib}|{eps!r}|{seed}"] = s
                    rec.update(status="ok", epsilon_spent=spent, notes=note)
                except Exception as exc:  # recorded as a row; the run goes on
                    rec.update(status=f"error: {type(exc).__name__}: {exc}"[:300])
                rec["fit_seconds"] = time.perf_counter() - t0
                fits.append(rec)
    np.savez(args.out, **scores)
    json.dump({"versions": _versions(), "fits": fits}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
