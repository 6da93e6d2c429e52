"""Faults during an estimator's fit on a real LocalCluster (2 worker processes): a worker
killed in the middle of a distributed step, with the ledger recording the fit.

The tasks re-read their partitions at every call (``persist=False``), through a block map
that kills its own worker process (``os._exit``) exactly once, the first time it runs after
the client arms it from the progress callback: the kill lands inside a step's tasks."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

from noisygd.estimators import (  # noqa: E402
    CONDITIONING_RELEASES,
    FEATURE_RANGE_RELEASES,
    DPLogisticRegression,
)
from noisygd.ledger import Ledger  # noqa: E402
from noisygd.oracles.dask import StepProgress, oracle_defaults  # noqa: E402

N, D = 600, 3
RTOL = 1e-10


def _data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(8)
    X = rng.normal(size=(N, D))
    y = (X[:, 0] - X[:, 1] + rng.logistic(size=N) > 0).astype(np.int64)
    return X, y


def _poisoned(block: np.ndarray, armed: str, done: str) -> np.ndarray:
    """``block``; but once ``armed`` exists, the first call to claim ``done`` (created
    atomically: one kill in all) ends its worker process."""
    import os as _os

    if _os.path.exists(armed):
        try:
            _os.close(_os.open(done, _os.O_CREAT | _os.O_EXCL | _os.O_WRONLY))
        except FileExistsError:
            return block
        _os._exit(1)
    return block


def _killing_fit(client: Any, tmp_path: Path, ledger: Path, arm_at: int
                 ) -> DPLogisticRegression:
    """The estimator's fit on Dask with a worker killed during gradient call ``arm_at + 1``."""
    X, y = _data()
    armed, done = str(tmp_path / "armed"), str(tmp_path / "done")
    Xd = da.from_array(X, chunks=(100, D)).map_blocks(_poisoned, armed, done, dtype=X.dtype)
    yd = da.from_array(y, chunks=(100,))

    def arm(step: StepProgress) -> None:
        if step.kind == "gradient" and step.call >= arm_at:
            Path(armed).touch()

    est = DPLogisticRegression(epsilon=1.0, classes=[0, 1], max_iter=10, random_state=3,
                               method="noisy_gd", ledger=str(ledger), dataset="d")
    with oracle_defaults(client=client, persist=False, progress=arm):
        return est.fit(Xd, yd)


def test_a_worker_killed_mid_step_gives_the_in_memory_model_and_one_release(client,
                                                                          tmp_path) -> None:
    """Dask reruns the lost task on the other worker; its partial sum is the same and the
    step's noise was drawn once, on the client: the model is the in-memory fit's, and the
    ledger holds exactly the fit's releases (its default private feature range's rounds,
    conditioning's rounds and per-feature scale's, then its own)."""
    X, y = _data()
    ledger = tmp_path / "ledger.sqlite"
    with Ledger(ledger) as opened:
        opened.set_budget("d", 5.0, 1e-5)
    try:
        est = _killing_fit(client, tmp_path, ledger, arm_at=3)
    finally:
        client.wait_for_workers(2, timeout=60)
    assert (tmp_path / "done").exists()  # a worker was killed during the fit
    mem = DPLogisticRegression(epsilon=1.0, classes=[0, 1], max_iter=10, random_state=3,
                               method="noisy_gd").fit(X, y)
    scale = max(float(np.max(np.abs(mem.coef_))), abs(mem.intercept_))
    assert float(np.max(np.abs(est.coef_ - mem.coef_))) <= RTOL * scale
    assert abs(est.intercept_ - mem.intercept_) <= RTOL * scale
    assert est.privacy_.event == mem.privacy_.event
    with Ledger(ledger) as opened:
        releases = opened.releases("d")
    rounds = est.conditioning_["release"]
    frange = est.conditioning_["feature_range_release"]
    assert [r.id for r in releases] == [
        frange["ledger_release"],
        *(frange[f"{name}_ledger_release"] for name in FEATURE_RANGE_RELEASES[1:]),
        rounds["ledger_release"],
        *(rounds[f"{name}_release"] for name in CONDITIONING_RELEASES[1:]),
        est.conditioning_["feature_scale_release"]["ledger_release"], est.ledger_release_.id]
    assert os.path.exists(tmp_path / "armed")


def test_the_cli_reports_a_failed_cluster_in_one_line_and_writes_no_model(
        client, tmp_path, monkeypatch, capsys) -> None:
    import pandas as pd

    from noisygd.cli import main
    from noisygd.dask import DaskSession
    from noisygd.oracles.dask import DaskFitError

    X, y = _data()
    pd.DataFrame(X, columns=["a", "b", "c"]).assign(label=y).to_parquet(tmp_path / "t.parquet")

    def lost(self: Any, estimator: Any, X: Any, y: Any) -> None:
        raise DaskFitError("the Dask cluster failed during distributed call 7 (gradient): "
                           "KilledWorker; the fit stops and releases no model")

    monkeypatch.setattr(DaskSession, "fit", lost)
    out = tmp_path / "m.json"
    assert main(["fit", str(tmp_path / "t.parquet"), "--target", "label", "--classes", "0,1",
                 "--scheduler", client.scheduler.address, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == ("noisygd fit: error: the Dask cluster failed during distributed call 7 "
                       "(gradient): KilledWorker; the fit stops and releases no model")
    assert not any("Traceback" in line for line in err) and not out.exists()
