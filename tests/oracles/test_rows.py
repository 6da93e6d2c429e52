"""noisygd.oracles.rows: the one row-norm / row-clipping home (closed forms, overflow safety)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from noisygd.oracles.rows import block_rows, clip_rows, row_norms, row_scale, scan_rows


def _rows(seed: int = 0, n: int = 3000, d: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # norms over many orders of magnitude; more rows than one block, so blocks are exercised
    return rng.standard_normal((n, d)) * np.exp(rng.uniform(-5, 5, size=(n, 1)))


def test_norms_and_scales_match_the_closed_form_dense_and_sparse() -> None:
    X = _rows()
    X[5] = 0.0
    B = 1.3
    norms = np.linalg.norm(X, axis=1)
    for A in (X, sp.csr_array(X), sp.csr_matrix(X)):
        np.testing.assert_allclose(row_norms(A), norms, rtol=1e-13)
        s = row_scale(A, B)
        inside = norms <= B
        assert np.all(s[inside] == 1.0)  # exactly 1: rows inside are untouched
        np.testing.assert_allclose(s[~inside], B / norms[~inside], rtol=1e-13)
    c = np.linspace(-1, 1, 7)
    np.testing.assert_allclose(row_norms(X, centre=c), np.linalg.norm(X - c, axis=1), rtol=1e-12)
    np.testing.assert_allclose(row_norms(sp.csr_array(X), centre=c),
                               np.linalg.norm(X - c, axis=1), rtol=1e-9)


def test_huge_and_tiny_rows_do_not_overflow() -> None:
    X = np.array([
        [3.0, 4.0, 0.0],
        [1.3e154, 1.3e154, 0.0],  # the squared norm overflows
        [1.5e308, 1.5e308, -1.5e308],  # even the norm overflows
        [1e-170, 0.0, 1e-170],  # the squared norm underflows
        [0.0, 0.0, 0.0],
    ])
    for A in (X, sp.csr_array(X)):
        norms = row_norms(A)
        np.testing.assert_allclose(norms[[0, 1, 3]], [5.0, 1.3e154 * np.sqrt(2),
                                                       1e-170 * np.sqrt(2)], rtol=1e-14)
        assert norms[2] == np.inf and norms[4] == 0.0  # true norm above the largest float
        s = row_scale(A, 2.0)
        assert np.all(np.isfinite(s)) and np.all(s > 0)
        out = clip_rows(A, 2.0)
        out = out.toarray() if sp.issparse(out) else out
        assert np.all(np.isfinite(out))
        np.testing.assert_allclose(row_norms(out), [2.0, 2.0, 2.0, 1e-170 * 2**0.5, 0.0],
                                   rtol=1e-14)
        np.testing.assert_allclose(out[2], 2.0 * np.array([1, 1, -1]) / np.sqrt(3), rtol=1e-14)
    assert scan_rows(X, 1.0).big.tolist() == [1, 2]


def test_weights_above_one_on_rows_near_the_largest_float_do_not_overflow() -> None:
    # f (x - c) exceeds the largest float for these finite rows: their norm is inf and their
    # factor B / ||f (x - c)||, finite and positive (found by the slow hostile fuzz)
    big = np.finfo(np.float64).max
    X = np.array([[0.0, 1e308, 1e308], [big, 1e308, 1e308], [1.0, 2.0, 3.0]])
    f = np.full(3, 1.0 + 2.0**-52)
    c = np.array([1.3, -0.5, 0.8])
    with np.errstate(over="raise", invalid="raise"):  # (the factor underflows: subnormal)
        scan = scan_rows(X, 2.0, centre=c, feature_scale=f)
    assert np.isinf(scan.norms[1])  # true norm above the largest float
    assert scan.norms[0] == pytest.approx(np.sqrt(2.0) * 1e308 * f[0], rel=1e-14)
    assert scan.norms[2] == pytest.approx(np.linalg.norm(f * (X[2] - c)), rel=1e-14)
    s = row_scale(X, 2.0, centre=c, feature_scale=f)
    assert np.all(np.isfinite(s)) and np.all(s > 0)
    assert s[0] == pytest.approx(2.0 / (np.sqrt(2.0) * 1e308 * f[0]), rel=1e-12)
    # 2 / ||f (x - c)|| for the row beyond the largest float: a subnormal factor
    assert s[1] == pytest.approx(2.0 / (1e308 * f[0] * np.hypot(big / 1e308, np.sqrt(2.0))),
                                 rel=1e-9)


@pytest.mark.parametrize("bound", [1.0, 0.3, 7.0, 1e-3])
def test_clip_rows_is_the_projection_and_bounds_every_row(bound: float) -> None:
    X = _rows(1)
    out = clip_rows(X, bound)
    assert out.dtype == np.float64 and out.flags.c_contiguous and not np.shares_memory(out, X)
    assert np.all(np.linalg.norm(out, axis=1) <= bound)  # in floating point
    norms = np.linalg.norm(X, axis=1)
    inside = norms <= bound
    np.testing.assert_array_equal(out[inside], X[inside])
    np.testing.assert_allclose(out[~inside], X[~inside] * (bound / norms[~inside])[:, None],
                               rtol=1e-12)
    np.testing.assert_array_equal(clip_rows(out, bound), out)  # idempotent
    S = clip_rows(sp.csr_array(X), bound)
    assert sp.issparse(S)
    np.testing.assert_allclose(S.toarray(), out, rtol=1e-14)
    assert np.all(row_norms(S) <= bound)


def test_bad_input_messages_show_no_data() -> None:
    with pytest.raises(ValueError, match="NaN or infinite") as err:
        row_norms(np.array([[12345.678, np.nan]]))
    assert "12345" not in str(err.value)
    with pytest.raises(ValueError, match="2-D"):
        row_norms(np.ones(3))
    with pytest.raises(ValueError, match="real numbers"):
        row_norms(np.ones((2, 2), dtype=complex))
    with pytest.raises(TypeError, match="bound"):
        clip_rows(np.ones((2, 2)), "a")  # type: ignore[arg-type]
    for bad in (0.0, -1.0, np.nan, np.inf):
        with pytest.raises(ValueError, match="bound"):
            clip_rows(np.ones((2, 2)), bad)


def test_block_partition_depends_on_shape_only() -> None:
    X = np.zeros((10**5, 50))
    assert block_rows(X) == block_rows(np.ones((10**5, 50)))
    assert 16 <= block_rows(X) <= 10**5
    assert block_rows(np.zeros((3, 50))) == 16  # at least 16 rows per block


@pytest.mark.parametrize("storage", ["dense", "csr"])
def test_scale_factors_are_kept_sparse(storage) -> None:
    # the scale factors are kept sparse: the rows outside the ball and their factors (none
    # when every row is inside: no O(n) vector), while row_scale (public) returns them dense
    rng = np.random.default_rng(3)
    X = rng.standard_normal((50, 4))
    X /= 2.0 * np.linalg.norm(X, axis=1, keepdims=True)  # norms 1/2
    A = sp.csr_array(X) if storage == "csr" else X
    scan = scan_rows(A, 1.0)
    assert scan.outside.size == 0 and scan.outside_scale.size == 0
    assert scan.scale.shape == (50,) and np.all(scan.scale == 1.0)
    public = row_scale(A, 1.0)
    assert public.flags.writeable and np.all(public == 1.0)
    # rows outside: listed in order, with the closed form s_i = B / ||x_i|| there
    X[7] *= 10.0
    X[31] *= 4.0
    A = sp.csr_array(X) if storage == "csr" else X
    scan = scan_rows(A, 1.0)
    np.testing.assert_array_equal(scan.outside, [7, 31])
    assert scan.outside.dtype == np.int64
    np.testing.assert_allclose(scan.outside_scale, 1.0 / np.linalg.norm(X[[7, 31]], axis=1),
                               rtol=1e-15)
    np.testing.assert_array_equal(scan.scale[[7, 31]], scan.outside_scale)
    assert np.all(np.delete(scan.scale, [7, 31]) == 1.0)
    np.testing.assert_array_equal(row_scale(A, 1.0), scan.scale)
    # any selection of rows, a slice or indices in any order, reads the same factors
    from noisygd.oracles.rows import scale_at

    for sel in (slice(0, 50), slice(5, 32), slice(8, 31), slice(40, 50)):
        np.testing.assert_array_equal(scale_at(scan.outside, scan.outside_scale, sel),
                                      scan.scale[sel])
    idx = np.array([31, 0, 7, 7, 49, 30])
    np.testing.assert_array_equal(scale_at(scan.outside, scan.outside_scale, idx),
                                  scan.scale[idx])


def test_block_size_rule_closed_form() -> None:
    # clamp(bytes / 10, 2 MiB, 4 MiB) per block: unchanged 2 MiB blocks up to 20 MiB of X,
    # about ten blocks between 20 and 40 MiB, 4 MiB blocks beyond (d = 50 dense: 400 B a row)
    from noisygd.oracles.rows import BLOCK_BYTES, MAX_BLOCK_BYTES, TARGET_BLOCKS

    def rows(n: int) -> int:
        return block_rows(np.lib.stride_tricks.as_strided(np.zeros(1), (n, 50), (0, 0)))

    assert rows(45_222) == BLOCK_BYTES // 400  # 18 MB: the former 2 MiB blocks
    assert rows(100_000) == 100_000 // TARGET_BLOCKS  # 40 MB: ten blocks
    assert rows(10**7) == MAX_BLOCK_BYTES // 400
    assert rows(100) == 100  # one block


@pytest.mark.parametrize("storage", ["dense", "csr"])
def test_scan_is_the_same_for_every_number_of_threads(storage) -> None:
    """Rows are scanned independently: norms, scale factors, overflow-prone rows and the
    nonzero count are bit-identical for 1, 2 and 3 threads (huge, tiny and zero rows in
    several blocks, rows outside the ball in every block)."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((60_000, 12)) * (rng.random((60_000, 12)) < 0.5) + 0.3
    X[[5, 30_000, 59_990]] *= 1e200
    X[[7, 40_000]] *= 1e-200
    X[11] = 0.0
    A = sp.csr_array(X) if storage == "csr" else X
    c, f = rng.standard_normal(12), rng.uniform(0.5, 2.0, 12)
    for kw in ({}, {"centre": c}, {"centre": c, "feature_scale": f}):
        scans = [scan_rows(A, 2.0, count_nonzero=True, n_threads=t, **kw) for t in (1, 2, 3)]
        for s in scans[1:]:
            np.testing.assert_array_equal(s.norms, scans[0].norms)
            np.testing.assert_array_equal(s.scale, scans[0].scale)
            np.testing.assert_array_equal(np.sort(s.big), np.sort(scans[0].big))
            assert s.nonzeros == scans[0].nonzeros
        assert np.sort(scans[0].big).tolist() == [5, 30_000, 59_990]
    if storage == "dense":
        assert scans[0].nonzeros == np.count_nonzero(X)


def test_nonzero_limit_decides_like_the_full_count() -> None:
    """With ``nonzero_limit`` the count stops once above it: it is then above the limit
    (so ``count <= limit`` decides as the full count does), and exact when it stays below."""
    rng = np.random.default_rng(8)
    X = rng.standard_normal((200_000, 10)) * (rng.random((200_000, 10)) < 0.6)
    total = np.count_nonzero(X)
    for limit in (0.0, 0.1 * X.size, 0.25 * X.size, total - 1, float(total), 0.9 * X.size):
        for t in (1, 2):
            got = scan_rows(X, count_nonzero=True, nonzero_limit=limit, n_threads=t).nonzeros
            assert (got <= limit) == (total <= limit)
            assert got <= total
            if total <= limit:
                assert got == total


# ------------------------------------------------------------ the scan's sums (issue 19)
def _served(X: np.ndarray, B: float, c: np.ndarray | None, f: np.ndarray | None
            ) -> tuple[np.ndarray, np.ndarray]:
    """The served rows s_i f (x_i - c) and min(||f (x_i - c)||/B, 1), with max-abs scaling
    (no overflow)."""
    D = X.astype(np.float64) - (0.0 if c is None else c)
    D = D * (1.0 if f is None else f)
    m = np.max(np.abs(D), axis=1)
    m[m == 0] = 1.0
    unit = np.linalg.norm(D / m[:, None], axis=1)
    with np.errstate(over="ignore", divide="ignore"):
        norm = m * unit
        s = np.where(norm > B, (B / m) / np.where(unit > 0, unit, 1.0), 1.0)
    return D * s[:, None], np.minimum(norm / B, 1.0)


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("weighted", ["none", "centre", "scale", "both"])
def test_scan_sums_are_the_served_rows_sums(compiled: bool, weighted: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """``sums``: sum_i s_i f (x_i - c), sum_i s_i |f (x_i - c)| and
    sum_i min(||f (x_i - c)||/B, 1)^2 against a row-by-row closed form, also with rows whose
    squared norm overflows or underflows (their blocks take the NumPy path), by the compiled
    scan and by NumPy alone, and the same for every number of threads."""
    import noisygd.oracles.rows as rows_module

    if not compiled:
        monkeypatch.setattr(rows_module, "_scan_blocks", None)
    elif rows_module._scan_blocks is None:  # pragma: no cover (an install without C)
        pytest.skip("the compiled scan is not built")
    X = _rows(3, n=70_000, d=9)  # several blocks
    X[11] = 0.0
    X[12] = 1e-200  # squared norm underflows
    X[60_000] = 1e200  # squared norm overflows
    rng = np.random.default_rng(4)
    c = rng.standard_normal(9) if weighted in ("centre", "both") else None
    f = rng.uniform(0.5, 2.0, 9) if weighted in ("scale", "both") else None
    B = 2.0
    A, u = _served(X, B, c, f)
    scans = [scan_rows(X, B, centre=c, feature_scale=f, n_threads=k,
                       sums=("rows", "absolute_rows")) for k in (1, 3)]
    for scan in scans:
        np.testing.assert_allclose(scan.rows, A.sum(axis=0), rtol=1e-11, atol=1e-9)
        np.testing.assert_allclose(scan.absolute_rows, np.abs(A).sum(axis=0), rtol=1e-11)
        assert scan.squared_norms == pytest.approx(float(np.sum(u * u)), rel=1e-12)
    for name in ("rows", "absolute_rows", "norms", "scale"):  # threads change nothing
        np.testing.assert_array_equal(getattr(scans[0], name), getattr(scans[1], name))
    assert scans[0].squared_norms == scans[1].squared_norms
    plain = scan_rows(X, B, centre=c, feature_scale=f)  # the sums change no norm or scale
    np.testing.assert_array_equal(plain.norms, scans[0].norms)
    np.testing.assert_array_equal(plain.scale, scans[0].scale)
    assert plain.rows is None and plain.absolute_rows is None


def test_scan_sums_need_a_bound_and_known_names() -> None:
    X = _rows(5, n=50)
    with pytest.raises(ValueError, match="need a bound"):
        scan_rows(X, None, sums=("rows",))
    with pytest.raises(ValueError, match="unknown scan sums"):
        scan_rows(X, 1.0, sums=("counts",))
    # sparse X: the oracle sums it itself (the scan's sums are for dense rows)
    assert scan_rows(sp.csr_array(X), 1.0, sums=("rows",)).rows is None


def test_compiled_scan_matches_numpy_norms_to_rounding(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    import noisygd.oracles.rows as rows_module

    if rows_module._scan_blocks is None:  # pragma: no cover (an install without C)
        pytest.skip("the compiled scan is not built")
    X = _rows(6, n=20_000, d=13)
    c = np.linspace(-1.0, 1.0, 13)
    fast = scan_rows(X, 1.0, centre=c, count_nonzero=True)
    monkeypatch.setattr(rows_module, "_scan_blocks", None)
    slow = scan_rows(X, 1.0, centre=c, count_nonzero=True)
    np.testing.assert_allclose(fast.norms, slow.norms, rtol=1e-14)
    np.testing.assert_allclose(fast.scale, slow.scale, rtol=1e-14)
    assert fast.nonzeros == slow.nonzeros == int(np.count_nonzero(X))


# --------------------------------------------------------------------------- CSR kernel
def _csr_rows(index_dtype) -> sp.csr_array:
    """CSR rows with empty rows, tiny and huge entries, about 5% dense, of one index width."""
    rng = np.random.default_rng(11)
    X = sp.random(3000, 120, density=0.05, random_state=12, format="csr")
    X.data = (X.data - 0.4) * np.exp(rng.uniform(-8, 8, X.data.size))
    X = sp.csr_array(X)
    X.indices = X.indices.astype(index_dtype)
    X.indptr = X.indptr.astype(index_dtype)
    assert np.any(np.diff(X.indptr) == 0)  # some empty rows
    return X


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("about", ["origin", "centre", "scale", "both"])
def test_compiled_csr_norms_are_the_numpy_norms_to_the_bit(index_dtype, about, monkeypatch):
    """The compiled CSR squared norms sum the same terms in the same order as the NumPy path
    (bincount, csr_matvec): the scan's norms and scale factors are equal bit for bit."""
    from noisygd.oracles import rows

    if rows._csr_sq_norms is None:
        pytest.skip("the compiled kernel is not built")
    X = _csr_rows(index_dtype)
    rng = np.random.default_rng(13)
    kw = {"centre": rng.standard_normal(120) if about in ("centre", "both") else None,
          "feature_scale": rng.uniform(0.1, 3.0, 120) if about in ("scale", "both") else None}
    assert rows._compiled_csr(X)
    compiled = scan_rows(X, 0.5, **kw)
    monkeypatch.setattr(rows, "_csr_sq_norms", None)
    numpy_path = scan_rows(X, 0.5, **kw)
    np.testing.assert_array_equal(compiled.norms, numpy_path.norms)
    np.testing.assert_array_equal(compiled.outside_scale, numpy_path.outside_scale)
    np.testing.assert_array_equal(compiled.outside, numpy_path.outside)


def test_compiled_csr_norms_check_their_arguments():
    from noisygd.oracles import rows

    kernel = rows._csr_sq_norms
    if kernel is None:
        pytest.skip("the compiled kernel is not built")
    X = _csr_rows(np.int32)
    q, m = np.empty(10), np.empty(10)
    w = np.ones(120)
    with pytest.raises(TypeError, match="both int32 or int64"):
        kernel(X.data, X.indices, X.indptr.astype(np.int64), 0, 10, w, None, q, None)
    with pytest.raises(ValueError, match="outside w or cw"):
        kernel(X.data, X.indices, X.indptr, 0, 10, np.ones(5), None, q, None)
    with pytest.raises(ValueError, match="outside indptr or the outputs"):
        kernel(X.data, X.indices, X.indptr, 0, 11, w, None, q, None)
    with pytest.raises(TypeError, match="out_m"):
        kernel(X.data, X.indices, X.indptr, 0, 10, w, w, q, None)
    bad = X.indptr.copy()
    bad[10] = X.data.size + 1
    with pytest.raises(ValueError, match="outside data or indices"):
        kernel(X.data, X.indices, bad, 0, 10, w, None, q, None)
    bad = X.indptr.copy()
    bad[5] = np.iinfo(np.int32).max  # a pointer past the data between two valid ends
    with pytest.raises(ValueError, match="indptr decreases"):
        kernel(X.data, X.indices, bad, 0, 10, w, None, q, None)
    kernel(X.data, X.indices, X.indptr, 0, 10, w, w, q, m)  # accepted
    mixed = sp.csr_array(X)
    mixed.indptr = mixed.indptr.astype(np.int64)  # widths differ: the NumPy path serves it
    assert not rows._compiled_csr(mixed)
    np.testing.assert_array_equal(row_norms(mixed), row_norms(X))


# --------------------------------------------------------------------------- duplicates
def _duplicated_rows() -> tuple[sp.csr_matrix, np.ndarray]:
    """A CSR matrix whose rows store columns twice (and unsorted), and the dense rows it means."""
    data = np.array([3.0, 4.0, -1.0, 0.5, 0.5, 2.0])
    indices = np.array([0, 0, 2, 1, 1, 0])
    indptr = np.array([0, 3, 5, 6])
    X = sp.csr_matrix((data, indices, indptr), shape=(3, 3))
    return X, X.toarray()  # toarray sums the duplicates: rows (7, 0, -1), (0, 1, 0), (2, 0, 0)


def test_norms_of_rows_with_duplicate_entries_are_those_of_the_rows_they_mean() -> None:
    X, dense = _duplicated_rows()
    assert not X.has_canonical_format
    centre = np.array([0.5, -0.25, 1.0])
    np.testing.assert_allclose(row_norms(X), np.linalg.norm(dense, axis=1), rtol=1e-15)
    np.testing.assert_allclose(row_norms(X, centre=centre),
                               np.linalg.norm(dense - centre, axis=1), rtol=1e-15)
    clipped = clip_rows(X, 1.0)
    assert np.all(np.linalg.norm(clipped.toarray(), axis=1) <= 1.0)
    np.testing.assert_allclose(clipped.toarray()[0], dense[0] / np.linalg.norm(dense[0]))
    assert X.data.tolist() == [3.0, 4.0, -1.0, 0.5, 0.5, 2.0]  # the caller's X untouched


def test_canonical_rows_copies_only_what_is_not_canonical() -> None:
    from noisygd.oracles.rows import canonical_rows

    X, dense = _duplicated_rows()
    A = canonical_rows(X)
    assert A is not X and isinstance(A, sp.csr_matrix) and A.has_canonical_format
    np.testing.assert_array_equal(A.toarray(), dense)
    assert canonical_rows(A) is A
    B = sp.csr_array(dense)
    assert canonical_rows(B) is B
    assert isinstance(canonical_rows(sp.coo_array(X)), sp.csr_array)
    assert canonical_rows(dense) is dense
    corrupt = sp.csr_matrix((np.ones(6), np.array([0, 1, 0, 1, 0, 1]), np.array([0, 4, 2, 6])),
                            shape=(3, 2))  # SciPy builds it; its row pointers decrease
    with pytest.raises(ValueError, match="row pointers"):
        canonical_rows(corrupt)
    with pytest.raises(ValueError, match="row pointers"):
        row_norms(corrupt)
    wide = sp.csr_array((np.ones(2), np.array([0, 7]), np.array([0, 1, 2])), shape=(2, 3))
    assert canonical_rows(wide) is wide  # a scan does not look at the columns
    with pytest.raises(ValueError, match=r"outside \[0, 3\)"):
        canonical_rows(wide, check_columns=True)


def test_a_row_stored_with_duplicates_adds_no_more_than_the_bound_to_the_round_sums() -> None:
    """Privacy: a row of the refined conditioning's round adds a vector of norm at most
    sqrt 3 (``round_sums``). A hostile CSR row storing column 0 a hundred times (value 100,
    norm 100) once had its norm read as 10 from its stored squares, was scaled by 1/10
    instead of 1/100, and added a vector of norm about 10."""
    from noisygd.estimators._conditioning import round_sums

    k = 100
    hostile = sp.csr_matrix((np.ones(k), np.zeros(k, dtype=np.int32), np.array([0, k])),
                            shape=(1, 4))
    rest = sp.csr_matrix(np.random.default_rng(9).uniform(-0.3, 0.3, (50, 4)))
    stacked = sp.vstack([rest, hostile], format="csr")
    assert not stacked.has_canonical_format  # the duplicates are still stored
    with_row = round_sums(stacked, np.zeros(4), None, 1.0)
    without = round_sums(rest, np.zeros(4), None, 1.0)
    assert np.linalg.norm(with_row - without) <= math.sqrt(3.0) * (1 + 1e-12)
