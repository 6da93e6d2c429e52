"""One real ``distributed.LocalCluster`` (2 single-threaded worker processes, loopback) for
every Dask test of a session: its start is most of these tests' time."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(scope="session")
def client() -> Any:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


@pytest.fixture(autouse=True)
def _no_feature_range(monkeypatch):
    """The in-memory fits these tests compare a Dask fit with, without the private feature
    range: the Dask path does not release it (noisygd.mechanisms.feature_range; its
    histogram is summed over rows held in memory only), so the same estimator differs
    there by that release."""
    from noisygd.estimators import DPLinearRegression, DPLogisticRegression

    monkeypatch.setattr(DPLogisticRegression, "_RELEASES_FEATURE_RANGE", False)
    monkeypatch.setattr(DPLinearRegression, "_RELEASES_FEATURE_RANGE", False)
