"""One real ``distributed.LocalCluster`` (2 single-threaded worker processes, loopback) for
every Dask test of a session: its start is most of these tests' time. Tests that kill workers
take a cluster of their own (``own_client``): a killed worker's restart can outlast the test
(or meet a task that kills it again), and the shared cluster must not inherit that."""

from __future__ import annotations

from typing import Any

import pytest


def _local_client() -> Any:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="session")
def client() -> Any:
    yield from _local_client()


@pytest.fixture
def own_client() -> Any:
    """A 2-worker cluster for one test that kills workers, closed after it."""
    yield from _local_client()
