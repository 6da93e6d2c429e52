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
