"""load_uci on the real UCI files: documented row and class counts, bounds, split behaviour.

Counts come from shared/data/uci/README.md and adult/adult.names. Every test here carries the
``data`` marker: ``tests/conftest.py`` skips them with a reason when the data folder
(:func:`noisygd.data.uci_data_dir`: ``$NOISYGD_DATA_DIR``, else ``<repo>/../shared/data/uci``)
is absent.
"""

from __future__ import annotations

import functools
import gzip
import math
from pathlib import Path

import numpy as np
import pytest

from noisygd.data import dataset_info, load_uci, uci_data_dir

DATA_DIR = uci_data_dir()
pytestmark = pytest.mark.data

# Row counts (README.md "Rows:" lines) and positives (README class counts).
N_ROWS = {"bank": 45211, "credit": 30000, "wine": 6497, "bike": 17379}
POSITIVES = {"bank": 5289, "credit": 6636}
SPLIT = ["bank", "credit", "wine", "bike"]


@functools.cache
def _load(name: str, seed: int = 0, bound: float = 1.0):
    out = load_uci(name, DATA_DIR, split_seed=seed, row_norm_bound=bound)
    for a in out:
        a.setflags(write=False)
    return out


def _blocks(name: str) -> dict[str, list[int]]:
    info = dataset_info(name)
    return {
        c.name: [info.feature_names.index(f) for f in c.feature_names]
        for c in info.categorical_features
    }


def test_adult_counts_match_the_documentation() -> None:
    X, y, Xt, yt = _load("adult")
    assert X.shape == (32561, 105) and Xt.shape == (16281, 105)
    assert y.sum() == 7841 and yt.sum() == 3846  # README: >50K in adult.data / adult.test
    assert set(np.unique(y)) == set(np.unique(yt)) == {0.0, 1.0}
    # adult.names: "45222 if instances with unknown values are removed (train=30162,
    # test=15060)". Unknowns are the rows with an all-zero one-hot block; no other block is zero.
    blocks = _blocks("adult")
    for M, n_complete in ((X, 30162), (Xt, 15060)):
        sums = {k: M[:, idx].sum(axis=1) for k, idx in blocks.items()}
        unknown = np.zeros(M.shape[0], dtype=bool)
        for k in ("workclass", "occupation", "native-country"):
            unknown |= sums[k] == 0
        assert M.shape[0] - unknown.sum() == n_complete
        for k in blocks.keys() - {"workclass", "occupation", "native-country"}:
            assert np.all(sums[k] > 0), k  # the adult.names lists cover every value


@pytest.mark.parametrize("name", SPLIT)
def test_split_sizes_and_labels(name: str) -> None:
    X, y, Xt, yt = _load(name)
    n = N_ROWS[name]
    n_test = math.ceil(0.2 * n)
    assert X.shape == (n - n_test, dataset_info(name).n_features)
    assert Xt.shape == (n_test, X.shape[1])
    if name in POSITIVES:
        assert set(np.unique(np.concatenate([y, yt]))) == {0.0, 1.0}
        assert y.sum() + yt.sum() == POSITIVES[name]
    else:
        t = np.concatenate([y, yt])
        assert np.all((0.0 <= t) & (t <= 1.0))
        scale = 10.0 if name == "wine" else 2000.0  # quality / 10, cnt / 2000
        raw = t * scale
        np.testing.assert_allclose(raw, np.round(raw), atol=1e-9)  # integer scores / counts


@pytest.mark.parametrize("name", ["adult", *SPLIT])
def test_arrays_are_finite_bounded_and_contiguous(name: str) -> None:
    for A in _load(name):
        assert A.dtype == np.float64 and A.flags.c_contiguous
        assert np.all(np.isfinite(A))
    X, _, Xt, _ = _load(name)
    for M in (X, Xt):
        assert np.all(np.linalg.norm(M, axis=1) <= 1.0)
        assert M.min() >= 0.0  # numeric features in [0, 1], one-hot in {0, 1}, times B/sqrt(k)
        for idx in _blocks(name).values():
            s = M[:, idx].sum(axis=1) * math.sqrt(len(dataset_info(name).numeric_features)
                                                  + len(_blocks(name)))
            assert np.all(s <= 1.0 + 1e-12)  # one-hot block sums to at most 1 (before scaling)


def test_row_norm_bound_is_honoured() -> None:
    X, _, Xt, _ = _load("bank", bound=2.5)
    X1 = _load("bank")[0]
    assert np.all(np.linalg.norm(X, axis=1) <= 2.5) and np.all(np.linalg.norm(Xt, axis=1) <= 2.5)
    np.testing.assert_allclose(X, 2.5 * X1, rtol=1e-14)


@pytest.mark.parametrize("name", ["wine", "bike"])
def test_documented_codings_cover_every_value(name: str) -> None:
    X, _, Xt, _ = _load(name)
    for idx in _blocks(name).values():
        for M in (X, Xt):
            assert np.all(M[:, idx].sum(axis=1) > 0)


@pytest.mark.parametrize("name", SPLIT)
def test_split_is_deterministic_and_seed_dependent(name: str) -> None:
    a = _load(name, seed=0)
    b = load_uci(name, DATA_DIR, split_seed=0)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(u, v)
    c = _load(name, seed=1)
    assert not np.array_equal(a[0], c[0])
    # Same multiset of rows: the union of train and test does not depend on the seed
    # (rows, each with its target, compared after a lexicographic sort).
    def rows(out):
        Z = np.column_stack([np.vstack([out[0], out[2]]), np.concatenate([out[1], out[3]])])
        return Z[np.lexsort(Z.T[::-1])]

    np.testing.assert_array_equal(rows(a), rows(c))


def test_adult_ignores_the_seed() -> None:
    a, b = _load("adult", seed=0), _load("adult", seed=3)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(u, v)


def test_changing_one_real_row_changes_one_encoded_row(tmp_path: Path) -> None:
    """Row-locality on bank-full: an extreme edit of one row moves exactly one row of X, and the
    split (positions of every other row) is unchanged, because no step uses a data statistic."""
    lines = gzip.decompress((DATA_DIR / "bank_marketing" / "bank-full.csv.gz").read_bytes())
    rows = lines.decode().split("\n")
    # Data row 100: age 95, job unknown, balance 10^6, max duration/campaign/pdays/previous.
    rows[100] = ('95;"unknown";"single";"tertiary";"yes";1000000;"no";"no";"cellular";31;"dec";'
                 '9000;99;999;99;"success";"yes"')
    (tmp_path / "bank_marketing").mkdir()
    (tmp_path / "bank_marketing" / "bank-full.csv.gz").write_bytes(
        gzip.compress("\n".join(rows).encode())
    )
    a = _load("bank", seed=0)
    b = load_uci("bank", tmp_path, split_seed=0)
    assert a[0].shape == b[0].shape and a[2].shape == b[2].shape
    Xa, Xb = np.vstack([a[0], a[2]]), np.vstack([b[0], b[2]])
    ya, yb = np.concatenate([a[1], a[3]]), np.concatenate([b[1], b[3]])
    moved = np.flatnonzero(np.any(Xa != Xb, axis=1))
    assert moved.size == 1
    assert set(np.flatnonzero(ya != yb)) <= set(moved)
