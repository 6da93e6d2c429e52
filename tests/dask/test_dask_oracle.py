"""The Dask oracle on a real distributed.LocalCluster (2 worker processes, loopback):
same seed, same data, the same fits as in memory, for 1, 2 and 7 partitions; faults.

One cluster for every Dask test (tests/dask/conftest.py)."""

from __future__ import annotations

import os
import signal
from typing import Any

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")

from noisygd.algorithms.dp_ftrl import dp_ftrl  # noqa: E402
from noisygd.algorithms.noisy_sgd import noisy_sgd  # noqa: E402
from noisygd.objectives.glm import LogisticLoss, SquaredLoss  # noqa: E402
from noisygd.oracles import make_oracle  # noqa: E402
from noisygd.oracles.array import ArrayOracle  # noqa: E402
from noisygd.oracles.dask import DaskFitError, DaskOracle, StepProgress  # noqa: E402
from noisygd.oracles.selection import PoissonRows, RowIndices, RowRange  # noqa: E402
from noisygd.training import fit_private  # noqa: E402

N, D, B = 700, 4, 2.0
PARTITIONS = (1, 2, 7)
#: The issue's tolerance for a Dask fit against the in-memory fit (float64).
RTOL = 1e-10


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(N, D)) * np.array([1.0, 0.5, 2.0, 0.1])
    X[:5] *= 10  # rows outside the ball: mapped onto it
    y = np.where(X[:, 0] - X[:, 2] + rng.normal(size=N) > 0, 1.0, -1.0)
    return X, y


def _chunks(P: int) -> tuple[int, ...]:
    return tuple(len(c) for c in np.array_split(np.arange(N), P))


def _dask(X: np.ndarray, y: np.ndarray, P: int) -> tuple[Any, Any]:
    return da.from_array(X, chunks=(_chunks(P), D)), da.from_array(y, chunks=(_chunks(P),))


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    return float(np.max(np.abs(a - b))) <= RTOL * max(float(np.max(np.abs(b))), 1e-300)


@pytest.mark.parametrize("P", PARTITIONS)
def test_sums_equal_in_memory_for_every_selection(client, data, P: int) -> None:
    X, y = data
    obj = LogisticLoss(l2=0.01)
    mem = ArrayOracle(obj, X, y, row_norm_bound=B)
    dk = DaskOracle(obj, *_dask(X, y, P), row_norm_bound=B, client=client)
    assert dk.n_rows == N and dk.n_partitions == P and dk.n_params == mem.n_params
    theta = np.random.default_rng(P).normal(size=mem.n_params)
    rng = np.random.default_rng(0)
    selections = [None, PoissonRows(0.3, (5, 6), 2), RowRange(90, 611), RowRange(650, 900),
                  RowIndices(rng.choice(N, size=40, replace=False))]
    for sel in selections:
        idx = None if sel is None else sel.indices(N)
        for clip in (None, 0.3):
            assert _close(dk.clipped_gradient_sum(theta, clip, rows=sel),
                          mem.clipped_gradient_sum(theta, clip, rows=idx))
        assert _close(dk.per_example_loss(theta, rows=sel), mem.per_example_loss(theta, rows=idx))
    assert abs(dk.value(theta) - mem.value(theta)) <= RTOL * abs(mem.value(theta))
    for sel in selections[:3]:  # the curvature sums of second-order methods
        idx = None if sel is None else sel.indices(N)
        assert _close(dk.clipped_curvature_sum(theta, 0.2, rows=sel),
                      mem.clipped_curvature_sum(theta, 0.2, rows=idx))
        assert _close(dk.clipped_curvature_diagonal(theta, None, rows=sel),
                      mem.clipped_curvature_diagonal(theta, None, rows=idx))
    assert dk.self_concordance() == mem.self_concordance()
    assert np.array_equal(dk.clipped_gradient_sum(theta, 1.0, rows=RowRange(N, N + 5)),
                          np.zeros(mem.n_params))
    with pytest.raises(ValueError, match="outside"):
        dk.clipped_gradient_sum(theta, 1.0, rows=np.array([N]))
    dk.close()


def _methods() -> list[tuple[str, Any, dict]]:
    return [
        ("noisy_gd", LogisticLoss(), {"relation": "add_remove", "max_iter": 12}),
        ("output_perturbation", LogisticLoss(l2=0.05), {"relation": "replace_one",
                                                        "max_iter": 12}),
        ("langevin", LogisticLoss(l2=0.05, radius=5.0), {"relation": "replace_one",
                                                         "max_iter": 12}),
        ("noisy_sgd", LogisticLoss(), {"relation": "add_remove", "clip": 1.0, "max_iter": 12}),
        # the planned ridge: a RidgedOracle over each, Poisson descriptions still resolved
        ("noisy_sgd", LogisticLoss(), {"relation": "add_remove", "clip": 1.0, "max_iter": 12,
                                       "options": {"l2": "auto"}}),
        # DP-FTRL's steps are ceil(n / batch_size) x epochs (it refuses max_iter)
        ("dp_ftrl", LogisticLoss(), {"relation": "replace_one", "clip": 1.0,
                                     "options": {"l2_ftrl": 50.0, "batch_size": 64,
                                                 "epochs": 2}}),
        ("newton", LogisticLoss(), {"relation": "add_remove", "max_iter": 12}),
    ]


@pytest.mark.parametrize("P", PARTITIONS)
@pytest.mark.parametrize("method,objective,kw", _methods(),
                         ids=[m[0] + ("_ridge" if "l2" in m[2].get("options", {}) else "")
                              for m in _methods()])
def test_private_fit_on_dask_equals_the_in_memory_fit(client, data, P, method, objective,
                                                      kw) -> None:
    X, y = data
    mem = ArrayOracle(objective, X, y, row_norm_bound=B)
    dk = DaskOracle(objective, *_dask(X, y, P), row_norm_bound=B, client=client)
    fits = [fit_private([o], method=method, epsilon=1.0, delta=1e-5,
                        rng=np.random.default_rng(11), **kw) for o in (mem, dk)]
    assert fits[0].n_samples == fits[1].n_samples  # the private count: same draw, same n
    assert fits[0].event == fits[1].event
    assert _close(fits[1].results[0].theta, fits[0].results[0].theta)
    if "l2" in kw.get("options", {}):
        from noisygd.solvers.ridge import RidgedOracle

        assert fits[0].results[0].info["plan"]["l2_planned"] > 0
        assert RidgedOracle(dk, 0.1).resolves_row_selections
        assert not RidgedOracle(mem, 0.1).resolves_row_selections
    dk.close()


@pytest.mark.parametrize("P", [1, 3])
def test_multinomial_newton_on_dask_equals_the_in_memory_fit(client, data, P) -> None:
    """The softmax loss's curvature sums (K margins), summed over the partitions' oracles:
    the same Newton fit as in memory, and the same curvature sum."""
    from noisygd.objectives.multinomial import MultinomialLogisticLoss

    X, _ = data
    labels = np.digitize(X[:, 0] - X[:, 2], [-1.0, 1.0]).astype(float)
    objective = MultinomialLogisticLoss(3, centre=np.zeros(D), intercept_scale=0.7)
    mem = ArrayOracle(objective, X, labels, row_norm_bound=B)
    dk = DaskOracle(objective, *_dask(X, labels, P), row_norm_bound=B, client=client)
    theta = np.random.default_rng(5).standard_normal(mem.n_params)
    assert dk.self_concordance() == mem.self_concordance()
    assert _close(dk.clipped_curvature_sum(theta, 0.3), mem.clipped_curvature_sum(theta, 0.3))
    fits = [fit_private([o], method="newton", epsilon=1.0, delta=1e-5, relation="add_remove",
                        max_iter=6, rng=np.random.default_rng(11)) for o in (mem, dk)]
    assert fits[0].event == fits[1].event
    assert _close(fits[1].results[0].theta, fits[0].results[0].theta)
    dk.close()


@pytest.mark.parametrize("P", [2, 7])
def test_noisy_sgd_and_dp_ftrl_with_explicit_indices_and_ranges(client, data, P) -> None:
    """Samplers drawn on the client (uniform subsets, shuffled epochs) and DP-FTRL's
    consecutive batches: the same fits, with and without persisted partitions."""
    X, y = data
    obj = LogisticLoss(l2=0.001)
    mem = ArrayOracle(obj, X, y, row_norm_bound=B)
    for persist in (True, False):
        dk = DaskOracle(obj, *_dask(X, y, P), row_norm_bound=B, client=client, persist=persist)
        for sampling in ("without_replacement", "shuffle_fixed"):
            kw = dict(noise_multiplier=1.0, clip=1.0, learning_rate=1e-3, n_samples=N,
                      sampling=sampling, batch_size=50, steps=15)
            a = noisy_sgd(mem, rng=np.random.default_rng(2), **kw)
            b = noisy_sgd(dk, rng=np.random.default_rng(2), **kw)
            assert _close(b.theta, a.theta)
        kw = dict(noise_multiplier=2.0, clip=1.0, l2_ftrl=20.0, batch_size=100, epochs=2)
        a = dp_ftrl(mem, rng=np.random.default_rng(4), **kw)
        b = dp_ftrl(dk, rng=np.random.default_rng(4), **kw)
        assert a.n_iter == b.n_iter == 14 and _close(b.theta, a.theta)
        dk.close()


def test_dataframe_input_and_progress(client, data) -> None:
    import pandas as pd

    X, y = data
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(D)]).assign(target=y)
    ddf = dd.from_pandas(frame, npartitions=3)
    seen: list[StepProgress] = []
    obj = SquaredLoss(l2=0.1)
    dk = make_oracle(obj, ddf[[f"x{j}" for j in range(D)]], ddf["target"], row_norm_bound=B,
                     client=client, progress=seen.append)
    assert isinstance(dk, DaskOracle) and dk.n_partitions == 3
    mem = make_oracle(obj, X, y, row_norm_bound=B)
    assert isinstance(mem, ArrayOracle)
    theta = np.linspace(-1, 1, mem.n_params)
    assert _close(dk.clipped_gradient_sum(theta, 0.5), mem.clipped_gradient_sum(theta, 0.5))
    assert [s.kind for s in seen] == ["build", "gradient"]
    assert seen[-1].partitions == 3 and seen[-1].rows_scanned == N and seen[-1].call == 2
    dk.close()


def test_persisted_partitions_lie_once_each_on_a_worker_of_the_cluster(client, data) -> None:
    """Building persisted partitions copies none of them (each is held by exactly one
    worker: counting their rows runs where they lie), each on a live worker of the cluster
    (which worker is the scheduler's choice: no spread is asserted), the oracle knows where
    each lies (one task per worker groups them), and the sums are still the in-memory ones."""
    client.wait_for_workers(2, timeout=60)
    X, y = data
    obj = LogisticLoss()
    dk = DaskOracle(obj, *_dask(X, y, 7), row_norm_bound=B, client=client)
    who = client.who_has(dk._parts)
    holders = [tuple(who[part.key]) for part in dk._parts]
    assert len(holders) == 7 and all(len(h) == 1 for h in holders)
    # the workers asked of the scheduler now (Client.nthreads is one call to it);
    # scheduler_info() is the client's cached copy, refreshed by a periodic callback, and was
    # seen empty on two loaded cores
    assert {h[0] for h in holders} <= set(client.nthreads())
    assert dk._where == [h[0] for h in holders]
    theta = np.linspace(-1, 1, dk.n_params)
    mem = ArrayOracle(obj, X, y, row_norm_bound=B)
    for rows in (None, RowRange(150, 420)):
        idx = None if rows is None else rows.indices(N)
        assert _close(dk.clipped_gradient_sum(theta, 0.5, rows=rows),
                      mem.clipped_gradient_sum(theta, 0.5, rows=idx))
    dk.close()


def test_clear_errors(client, data) -> None:
    X, y = data
    with pytest.raises(ValueError, match="rows"):
        DaskOracle(LogisticLoss(), da.from_array(X), da.from_array(y[:-1]), row_norm_bound=B,
                   client=client)
    with pytest.raises(TypeError, match="dask array"):
        DaskOracle(LogisticLoss(), X, y, row_norm_bound=B, client=client)
    bad = X.copy()
    bad[3, 1] = np.nan  # the partition's own check, raised on the client as is
    with pytest.raises(ValueError, match="NaN"):
        DaskOracle(LogisticLoss(), da.from_array(bad, chunks=(100, D)),
                   da.from_array(y, chunks=(100,)), row_norm_bound=B, client=client)


def test_a_closed_client_is_a_clear_error(client, data) -> None:
    X, y = data
    other = distributed.Client(client.scheduler.address)
    other.close()
    with pytest.raises(DaskFitError, match="not running"):
        DaskOracle(LogisticLoss(), da.from_array(X), da.from_array(y), row_norm_bound=B,
                   client=other)


def _frame(X: np.ndarray, target: np.ndarray, P: int) -> tuple[Any, Any]:
    import pandas as pd

    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(D)]).assign(target=target)
    ddf = dd.from_pandas(frame, npartitions=P)
    return ddf[[f"x{j}" for j in range(D)]], ddf["target"]


@pytest.mark.parametrize("P", PARTITIONS)
def test_partition_sum_equals_the_in_memory_statistic(client, data, P) -> None:
    import scipy.sparse as sp

    from noisygd.mechanisms.feature_range import range_statistic
    from noisygd.oracles.dask import partition_sum

    X, y = data
    X = X.copy()
    X[::3, 1] = 0.0  # zeros are not counted
    expected = range_statistic(X)
    Xd = da.from_array(X, chunks=(_chunks(P), 2))  # column chunks are merged first
    assert np.array_equal(partition_sum(Xd, range_statistic, expected.size, client=client),
                          expected)
    frame = _frame(X, y, P)[0]
    assert np.array_equal(partition_sum(frame, range_statistic, expected.size, client=client),
                          expected)
    sparse = da.from_array(X, chunks=(_chunks(P), D)).map_blocks(sp.csr_matrix)
    assert np.array_equal(partition_sum(sparse, range_statistic, expected.size,
                                        client=client), expected)
    with pytest.raises(ValueError, match="entries"):
        partition_sum(Xd, range_statistic, expected.size - 1, client=client)
    with pytest.raises(TypeError, match="2-D dask"):
        partition_sum(X, range_statistic, expected.size, client=client)


@pytest.mark.parametrize("P", PARTITIONS)
def test_partition_sums_of_the_column_offsets_equal_the_in_memory_ones(client, data, P) -> None:
    """The column offsets' two statistics (noisygd.mechanisms.column_offsets), divided by
    sqrt(S + 1), summed over the partitions: the in-memory ones (counts exactly, the clipped
    sums to rounding)."""
    import functools

    from noisygd.mechanisms.column_offsets import (
        OffsetBox,
        deviation_statistic,
        offset_statistic,
    )
    from noisygd.oracles.dask import partition_sum

    X = data[0].copy()
    X[:, 0] += 1990.0  # a year
    box = OffsetBox(np.array([0]), np.array([1024.0]), np.array([2048.0]))
    offset = np.array([1990.0])
    Xd = da.from_array(X, chunks=(_chunks(P), D))
    for statistic in (functools.partial(offset_statistic, box=box),
                      functools.partial(deviation_statistic, box=box, offset=offset)):
        expected = statistic(X)
        got = partition_sum(Xd, statistic, expected.size, client=client)
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-9)


@pytest.mark.parametrize("estimator,labels", [
    ("DPLogisticRegression", "binary"), ("DPLogisticRegression", "ovr"),
    ("DPLogisticRegression", "multinomial"),
    ("DPLinearRegression", "real"), ("DPHuberRegressor", "real"),
])
def test_estimators_on_dask_collections_equal_the_in_memory_fit(client, data, estimator,
                                                                labels) -> None:
    from noisygd import estimators
    from noisygd.dask import fit_estimator
    from noisygd.oracles.dask import oracle_defaults

    X, y = data
    params: dict[str, Any] = {"epsilon": 1.0, "random_state": 0, "max_iter": 10}
    if labels == "binary":
        target, params["classes"] = np.where(y > 0, "yes", "no"), ["no", "yes"]
    elif labels in ("ovr", "multinomial"):
        target = np.digitize(X[:, 0], [-0.5, 0.5])
        params.update(classes=[0, 1, 2], multiclass=labels)
    else:
        target, params["target_bound"] = X[:, 0] - X[:, 2], 3.0
    cls = getattr(estimators, estimator)
    mem = cls(**params).fit(X, target)
    with oracle_defaults(client=client):  # the estimator's own fit hands Dask data over
        dk = cls(**params).fit(*_frame(X, target, 3))
    assert _close(np.atleast_1d(dk.coef_), np.atleast_1d(mem.coef_))
    assert _close(np.atleast_1d(dk.intercept_), np.atleast_1d(mem.intercept_))
    assert dk.privacy_.event == mem.privacy_.event
    # the private feature range, released from the partitions' summed histogram: the same
    released = dk.conditioning_["feature_range_release"]
    assert released["magnitude"] == mem.conditioning_["feature_range_release"]["magnitude"]
    assert released["row_features"] == mem.conditioning_["feature_range_release"][
        "row_features"]
    assert list(dk.feature_names_in_) == [f"x{j}" for j in range(D)]
    if labels != "real":
        assert np.array_equal(dk.classes_, mem.classes_)
        with pytest.raises(ValueError, match="not in classes"), oracle_defaults(client=client):
            fit_estimator(cls(**{**params, "classes": params["classes"][:2]}),
                          *_frame(X, target, 3)) if labels != "binary" else fit_estimator(
                cls(**params), *_frame(X, np.where(y > 0, "yes", "maybe"), 3))
        with pytest.raises(ValueError, match="declared"), oracle_defaults(client=client):
            fit_estimator(cls(**{**params, "classes": None}), *_frame(X, target, 3))


def test_column_offsets_on_dask_collections_equal_the_in_memory_fit(client, data) -> None:
    """A column of years: its offset rounds (noisygd.mechanisms.column_offsets) read the
    partitions and release what the in-memory fit releases, so the models agree."""
    from noisygd.estimators import DPLogisticRegression
    from noisygd.oracles.dask import oracle_defaults

    X, y = data
    X = X.copy()
    X[:, 1] += 1990.0
    params: dict[str, Any] = {"epsilon": 2.0, "random_state": 0, "max_iter": 10,
                              "classes": ["no", "yes"]}
    target = np.where(y > 0, "yes", "no")
    mem = DPLogisticRegression(**params).fit(X, target)
    with oracle_defaults(client=client):
        dk = DPLogisticRegression(**params).fit(*_frame(X, target, 3))
    released, expected = (m.conditioning_["feature_range_release"] for m in (dk, mem))
    assert expected["offset_columns"] == [1] and released["offset_columns"] == [1]
    assert released["offset"] == pytest.approx(expected["offset"], rel=1e-12)
    assert released["magnitude"] == expected["magnitude"]
    assert _close(np.atleast_1d(dk.coef_), np.atleast_1d(mem.coef_))
    assert dk.privacy_.event == mem.privacy_.event


def test_cli_fit_on_a_parquet_directory_equals_the_in_memory_fit(client, data, tmp_path,
                                                                 capsys, monkeypatch) -> None:
    import json

    import pandas as pd

    from noisygd.cli import main

    X, y = data
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(D)]).assign(label=(y > 0) * 1)
    frame.to_parquet(tmp_path / "one.parquet")
    dd.from_pandas(frame, npartitions=4).to_parquet(tmp_path / "parts")
    common = ["--target", "label", "--classes", "0,1", "--seed", "3", "--max-iter", "8"]
    assert main(["fit", str(tmp_path / "one.parquet"), *common, "--out",
                 str(tmp_path / "mem.json")]) == 0
    # progress lines are drawn where the bars are (stderr a terminal: as if here), without
    # the private row count (cli._dask_session; the gate itself: test_dask_io)
    monkeypatch.setattr("noisygd.cli.progress_enabled", lambda args: True)
    assert main(["fit", str(tmp_path / "parts"), *common, "--scheduler",
                 client.scheduler.address, "--out", str(tmp_path / "dask.json")]) == 0
    progress = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("dask ")]
    assert len([ln for ln in progress if ln.startswith("dask gradient")]) >= 8
    assert not any("rows" in ln for ln in progress)
    mem, dk = (json.loads((tmp_path / f).read_text()) for f in ("mem.json", "dask.json"))
    assert _close(np.array(dk["coef"]), np.array(mem["coef"]))
    assert dk["privacy"] == mem["privacy"]


def test_a_worker_killed_during_a_fit_gives_the_same_model_and_one_release(
        client, data, tmp_path) -> None:
    """Kill (SIGKILL) the worker holding part of the persisted rows while the fit runs:
    Dask recomputes its partitions, the noise is the client's, so the model is the one of
    the fit without the fault, and the ledger records exactly that one release."""
    from noisygd.ledger import Ledger

    X, y = data
    obj = LogisticLoss()
    kw = dict(method="noisy_gd", epsilon=1.0, delta=1e-5, max_iter=12, relation="add_remove")
    expected = fit_private([ArrayOracle(obj, X, y, row_norm_bound=B)],
                           rng=np.random.default_rng(5), **kw)
    pids = client.run(os.getpid)
    victim = sorted(pids)[0]
    killed: list[int] = []

    def kill_at_step_4(step: StepProgress) -> None:
        if step.kind == "gradient" and step.call == 5 and not killed:
            os.kill(pids[victim], signal.SIGKILL)  # the next step finds the worker gone
            killed.append(step.call)

    dk = DaskOracle(obj, *_dask(X, y, 7), row_norm_bound=B, client=client,
                    progress=kill_at_step_4)
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as ledger:
        ledger.set_budget("d", 5.0, 1e-5)
        fit = fit_private([dk], rng=np.random.default_rng(5), ledger=ledger, dataset="d", **kw)
        assert killed and _close(fit.results[0].theta, expected.results[0].theta)
        releases = ledger.releases("d")
        assert len(releases) == 1 and releases[0].id == fit.release.id
    dk.close()
    client.wait_for_workers(2, timeout=60)


def test_a_worker_lost_beyond_retries_is_a_clear_error(client, data, tmp_path) -> None:
    """A partition whose task kills its worker from its 3rd run on (persist=False: the
    partitions are recomputed at every call), with no retry allowed: the fit stops with
    DaskFitError naming the call, and returns no model."""
    X, y = data
    counter = tmp_path / "calls"
    counter.write_text("0")

    def poisoned(block: np.ndarray) -> np.ndarray:  # defined here: pickled by value
        import os as _os
        from pathlib import Path as _Path

        calls = int(_Path(str(counter)).read_text()) + 1
        _Path(str(counter)).write_text(str(calls))
        if calls >= 3:
            _os._exit(1)
        return block

    Xd = da.from_array(X, chunks=(N, D)).map_blocks(poisoned, dtype=X.dtype)
    dk = DaskOracle(LogisticLoss(), Xd, da.from_array(y, chunks=(N,)), row_norm_bound=B,
                    client=client, persist=False)
    scheduler = client.cluster.scheduler
    allowed, scheduler.allowed_failures = scheduler.allowed_failures, 0
    try:
        with pytest.raises(DaskFitError,
                           match=r"distributed call \d+ \(gradient\).*KilledWorker.*no model"):
            fit_private([dk], method="noisy_gd", epsilon=1.0, delta=1e-5, max_iter=12,
                        relation="replace_one", rng=np.random.default_rng(0))
    finally:
        scheduler.allowed_failures = allowed
        client.wait_for_workers(2, timeout=60)


def test_dp_ftrl_random_leaves_on_dask_equal_the_in_memory_fit(client, data) -> None:
    # add/remove: every row goes to a random leaf each epoch (oracles.selection.RandomLeaf),
    # resolved on each partition; the in-memory oracle lists the same rows
    X, y = data
    mem = ArrayOracle(LogisticLoss(), X, y, row_norm_bound=B)
    dk = DaskOracle(LogisticLoss(), *_dask(X, y, 7), row_norm_bound=B, client=client)
    kw = {"relation": "add_remove", "clip": 1.0,
          "options": {"l2_ftrl": 50.0, "batch_size": 64, "epochs": 2}}
    fits = [fit_private([o], method="dp_ftrl", epsilon=1.0, delta=1e-5,
                        rng=np.random.default_rng(11), **kw) for o in (mem, dk)]
    assert fits[0].event == fits[1].event and fits[0].event.events[-1].leaves == "random"
    assert _close(fits[1].results[0].theta, fits[0].results[0].theta)
    dk.close()


@pytest.mark.parametrize("P", [1, 2, 7])
def test_bounded_row_sums_equal_in_memory(client, data, P) -> None:
    """The pre-release reduction (``bounded_row_sums``, training's pre-release stages) is
    one distributed reduction equal to the in-memory sums, with and without a centre."""
    from noisygd.objectives.centred import CentredGLM
    from noisygd.objectives.glm import SquaredLoss

    X, y = data
    for obj in (SquaredLoss(), CentredGLM(SquaredLoss(), np.full(D, 0.1), 0.5)):
        mem = ArrayOracle(obj, X, y, row_norm_bound=B).bounded_row_sums(2.0)
        dk = DaskOracle(obj, *_dask(X, y, P), row_norm_bound=B, client=client)
        got = dk.bounded_row_sums(2.0)
        dk.close()
        names = ("count", "rows", "squared_norms", "targets", "squared_targets")
        np.testing.assert_allclose(got.vector(names), mem.vector(names), rtol=1e-12)


def _forbid_pulls(monkeypatch: Any) -> None:
    """Make turning any dask array into a NumPy array (on the client) fail the test."""
    def pulled(self, *args, **kwargs):
        raise AssertionError("a dask array was pulled to the client")

    monkeypatch.setattr(da.Array, "__array__", pulled)


def test_linear_regression_scale_release_reads_no_rows_on_the_client(client, data,
                                                                      monkeypatch) -> None:
    """DPLinearRegression's private scale is a reduction on the DaskOracle: no dask array
    is turned into a NumPy array on the client during the fit, and the model equals the
    in-memory one."""
    from noisygd.estimators import DPLinearRegression
    from noisygd.oracles.dask import oracle_defaults

    X, _ = data
    target = X[:, 0] - X[:, 2]
    params: dict[str, Any] = {"epsilon": 1.0, "random_state": 0, "max_iter": 10,
                              "target_bound": 3.0, "scale_share": 0.1, "method": "noisy_gd"}
    mem = DPLinearRegression(**params).fit(X, target)

    Xd, yd = _dask(X, target, 3)
    _forbid_pulls(monkeypatch)
    with oracle_defaults(client=client):
        dk = DPLinearRegression(**params).fit(Xd, yd)
    assert mem.target_scale_ < 1.0
    assert dk.target_scale_ == pytest.approx(mem.target_scale_, rel=1e-10)
    assert _close(np.atleast_1d(dk.coef_), np.atleast_1d(mem.coef_))
    assert dk.privacy_.event == mem.privacy_.event


@pytest.mark.parametrize("estimator", ["DPLinearRegression", "DPHuberRegressor"])
def test_private_target_range_on_dask_equals_the_in_memory_fit(client, data, monkeypatch,
                                                               estimator) -> None:
    """With no target range declared, the private target range's histogram is summed over
    the partitions on the cluster (no dask array pulled to the client) and the fit equals
    the in-memory one: the same released range, model and event."""
    from noisygd import estimators
    from noisygd.oracles.dask import oracle_defaults

    X, _ = data
    target = 40.0 + 10.0 * (X[:, 0] - X[:, 2])  # in its own units: nothing declared
    params: dict[str, Any] = {"epsilon": 1.0, "random_state": 0, "max_iter": 10}
    cls = getattr(estimators, estimator)
    mem = cls(**params).fit(X, target)

    Xd, yd = _dask(X, target, 3)
    _forbid_pulls(monkeypatch)
    with oracle_defaults(client=client):
        dk = cls(**params).fit(Xd, yd)
    assert mem.fit_info_["target_range"]["resolved"]
    # the histograms' counts are exact; the refined rounds' means are float sums, equal up
    # to the order of summation over the partitions
    on_dask, in_memory = dk.fit_info_["target_range"], mem.fit_info_["target_range"]
    floats = {"released", "rounds"}
    assert {k: v for k, v in on_dask.items() if k not in floats} == {
        k: v for k, v in in_memory.items() if k not in floats}
    assert on_dask["released"] == pytest.approx(in_memory["released"], rel=1e-12)
    assert [r["kind"] for r in on_dask["rounds"]] == [r["kind"] for r in in_memory["rounds"]]
    for a, b in zip(on_dask["rounds"], in_memory["rounds"], strict=True):
        for key in ("noise_std", "centre", "range"):
            assert (a.get(key) is None) == (b.get(key) is None)
            if a.get(key) is not None:
                assert a[key] == pytest.approx(b[key], rel=1e-12)
    assert dk.target_range_ == pytest.approx(mem.target_range_, rel=1e-12)
    assert _close(np.atleast_1d(dk.coef_), np.atleast_1d(mem.coef_))
    assert _close(np.atleast_1d(dk.intercept_), np.atleast_1d(mem.intercept_))
    assert dk.privacy_.event == mem.privacy_.event


def test_partitions_not_persisted_are_read_again_at_every_call(client, data,
                                                                tmp_path) -> None:
    """``persist=False``: every call reads each partition again (a block map appends one
    line per read to a file), even calls made back to back, while the client still releases
    the previous call's futures; and the sums stay the in-memory ones. (Under the same keys
    at every call, 44-60 reads of 84 were made in three runs: the rest bound to the
    previous call's results.)"""
    X, y = data
    reads = tmp_path / "reads"
    reads.touch()

    def counted(block: np.ndarray) -> np.ndarray:  # defined here: pickled by value
        if block.size:  # not dask's call on an empty array (its meta)
            with open(str(reads), "a") as f:
                f.write("r\n")
        return block

    P, calls = 7, 12
    Xd = da.from_array(X, chunks=(_chunks(P), D)).map_blocks(counted, dtype=X.dtype)
    dk = DaskOracle(LogisticLoss(), Xd, da.from_array(y, chunks=(_chunks(P),)),
                    row_norm_bound=B, client=client, persist=False)
    mem = ArrayOracle(LogisticLoss(), X, y, row_norm_bound=B)
    theta = np.linspace(-0.5, 0.5, D + 1)
    for _ in range(calls):
        assert _close(dk.clipped_gradient_sum(theta, 1.0), mem.clipped_gradient_sum(theta, 1.0))
    assert len(reads.read_text().splitlines()) == calls * P
