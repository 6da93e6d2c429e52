"""Hostile input to the scikit-learn estimators (docs/hostile_input.md, issue 12 item 4).

Property: for any input, ``fit``/``predict`` either succeed with finite coefficients and
finite scores, or raise a documented error type (``ValueError``/``TypeError`` and their
subclasses) whose message quotes no value of the data. The fuzz is bounded and reproducible
(``derandomize=True``); the ``slow`` variants run the same properties on more examples.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hostile_helpers import (
    FAST,
    LONG,
    assert_documented,
    hostile_warnings,
    quoted_values,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.exceptions import NotFittedError

from noisygd._checks import DataTypeError, check_data
from noisygd.estimators import DPHuberRegressor, DPLinearRegression, DPLogisticRegression

# Every scipy sparse format, as a matrix and as a sparse array.
SPARSE_FORMATS = ("csr", "csc", "coo", "lil", "dok", "bsr", "dia")

#: Values a hostile table may hold: ordinary, huge (up to the largest double), subnormal,
#: signed zeros, and (separately) NaN and infinities.
FINITE = st.one_of(
    st.floats(-10.0, 10.0),
    st.sampled_from([1e308, -1e308, 1.5e308, 1.7976931348623157e308, 1.3e154, -2e200,
                     5e-324, -5e-324, 2.2250738585072014e-308, 0.0, -0.0]),
    st.floats(allow_nan=False, allow_infinity=False),
)
NONFINITE = st.sampled_from([np.nan, np.inf, -np.inf])


def _estimator(kind: str, method: str):
    """A small, fast configuration of each estimator; ``n`` declared public (so no row count
    is spent and the plan does not depend on a noisy count)."""
    common = {"epsilon": 1.0, "delta": 1e-5, "random_state": 0, "max_iter": 20}
    if method != "noisy_gd":
        common["neighbouring"] = "replace_one"
    if kind == "logistic":
        return DPLogisticRegression(classes=[0, 1], method=method, **common)
    if kind == "linear":
        return DPLinearRegression(target_bound=1.0, radius=2.0, method=method, **common)
    return DPHuberRegressor(target_bound=1.0, method=method, **common)


def _public_n(est, n: int):
    if est.neighbouring == "add_remove":
        est.set_params(n_samples_public=n)
    return est


@st.composite
def tables(draw, *, nonfinite: bool = False):
    n = draw(st.integers(2, 12))
    d = draw(st.integers(1, 4))
    elements = st.one_of(FINITE, NONFINITE) if nonfinite else FINITE
    X = draw(arrays(np.float64, (n, d), elements=elements))
    y = draw(arrays(np.int64, (n,), elements=st.integers(0, 1)))
    return X, y


def _container(X: np.ndarray, kind: str):
    if kind == "ndarray":
        return X
    if kind == "fortran":
        return np.asfortranarray(X)
    if kind == "float32":
        with np.errstate(over="ignore"):
            return X.astype(np.float32)  # huge values become inf: refused as non-finite
    if kind == "list":
        return X.tolist()
    if kind == "frame":
        return pd.DataFrame(X, columns=[f"c{j}" for j in range(X.shape[1])])
    fmt, _, flavour = kind.partition("-")
    base = sp.csr_array(X) if flavour == "array" else sp.csr_matrix(X)
    return base.asformat(fmt)


CONTAINERS = ("ndarray", "fortran", "float32", "list", "frame",
              *(f"{f}-{flavour}" for f in SPARSE_FORMATS for flavour in ("matrix", "array")))
FAST_METHODS = ("noisy_gd", "output_perturbation", "dp_ftrl")


def _targets(kind: str, y01: np.ndarray, X: np.ndarray) -> np.ndarray:
    if kind == "logistic":
        return y01
    return np.where(y01 == 1, 0.5, -0.25) * (1 + np.arange(y01.size) % 3)


def _check_fit_predict(X: np.ndarray, y01: np.ndarray, kind: str, method: str,
                       container: str, must_fit: bool = False) -> None:
    """Finite fit and scores, or a documented error quoting no value (``must_fit``: the fit
    must succeed, a documented error fails too)."""
    est = _public_n(_estimator(kind, method), X.shape[0])
    data = _container(X, container)
    y = _targets(kind, y01, X)
    with hostile_warnings():
        try:
            est.fit(data, y)
        except Exception as exc:
            if must_fit:
                raise
            assert_documented(exc)
            leaked = quoted_values(str(exc), X, allowed=(1e-5, 20, 2.0))
            assert not leaked, f"{type(exc).__name__} quotes data values {leaked}: {exc}"
            return
        assert np.all(np.isfinite(est.coef_)), "non-finite coefficients"
        assert np.all(np.isfinite(est.intercept_)), "non-finite intercept"
        moderate = np.all(np.abs(X) < 1e150, axis=1)
        if not moderate.any():
            return
        rows = X[moderate]
        out = est.decision_function(rows) if kind == "logistic" else est.predict(rows)
        assert np.all(np.isfinite(out)), "non-finite scores on moderate rows"
        if kind == "logistic":
            proba = est.predict_proba(rows)
            np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-9)
            assert set(np.unique(est.predict(rows))) <= {0, 1}


def _fuzz(profile):
    @settings(**profile, suppress_health_check=[HealthCheck.too_slow,
                                                HealthCheck.data_too_large])
    @given(table=tables(), kind=st.sampled_from(["logistic", "linear", "huber"]),
           method=st.sampled_from(FAST_METHODS), container=st.sampled_from(CONTAINERS))
    def run(table, kind, method, container):
        X, y = table
        _check_fit_predict(X, y, kind, method, container)
    return run


def test_fuzz_fit_predict_finite_values_any_container():
    """Huge, subnormal, zero and constant values in every container: finite fit or a
    documented error quoting no value."""
    _fuzz(FAST)()


@pytest.mark.slow
def test_fuzz_fit_predict_finite_values_any_container_long():
    _fuzz(LONG)()


@settings(**FAST)
@given(table=tables(nonfinite=True), kind=st.sampled_from(["logistic", "linear", "huber"]),
       container=st.sampled_from(["ndarray", "frame", "csr-matrix", "coo-array", "list"]))
def test_fuzz_nonfinite_values_are_refused_or_fitted(table, kind, container):
    """NaN and infinities: refused with a ValueError (``Input X contains NaN``, ...) unless
    the table happens to hold none."""
    X, y = table
    est = _public_n(_estimator(kind, "noisy_gd"), X.shape[0])
    with hostile_warnings():
        try:
            est.fit(_container(X, container), _targets(kind, y, X))
        except Exception as exc:
            assert isinstance(exc, ValueError), exc
            assert "X" in str(exc)
            return
    assert np.all(np.isfinite(X)), "a table with NaN or inf was fitted"
    assert np.all(np.isfinite(est.coef_))


@settings(**FAST)
@given(n=st.integers(2, 30), d=st.integers(1, 5), value=FINITE,
       kind=st.sampled_from(["logistic", "linear", "huber"]))
def test_constant_features_fit_finite(n, d, value, kind):
    """A constant table (every cell the same, 0 included) is a documented behaviour: the fit
    succeeds (no error, not even a documented one), coefficients are finite, and so are the
    scores of the rows below 1e150."""
    X = np.full((n, d), value)
    y = np.arange(n) % 2
    _check_fit_predict(X, y, kind, "noisy_gd", "ndarray", must_fit=True)


@settings(**FAST)
@given(n=st.integers(2, 20), label=st.sampled_from([0, 1]))
def test_one_class_in_y_with_declared_classes_is_fitted(n, label):
    """Documented: with ``classes=[0, 1]`` declared, a sample holding one class is fitted (the
    label set is public; refusing would reveal that the data holds one class)."""
    X = np.linspace(-1, 1, 2 * n).reshape(n, 2)
    est = DPLogisticRegression(classes=[0, 1], n_samples_public=n, random_state=0, max_iter=20)
    with hostile_warnings():
        est.fit(X, np.full(n, label))
    assert list(est.classes_) == [0, 1]
    assert np.all(np.isfinite(est.coef_))


def test_every_sparse_format_gives_the_dense_fit():
    """Documented: any scipy sparse matrix or array (all seven formats) is used as CSR and
    gives the same coefficients as the dense array (same seed)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4)) * (rng.random((30, 4)) < 0.5)
    y = (X[:, 0] > 0).astype(int)
    dense = DPLogisticRegression(classes=[0, 1], n_samples_public=30, random_state=1).fit(X, y)
    for fmt in SPARSE_FORMATS:
        for make in (sp.csr_matrix, sp.csr_array):
            Xs = make(X).asformat(fmt)
            est = DPLogisticRegression(classes=[0, 1], n_samples_public=30,
                                       random_state=1).fit(Xs, y)
            np.testing.assert_allclose(est.coef_, dense.coef_, rtol=1e-10, atol=1e-12,
                                       err_msg=f"{make.__name__} {fmt}")
            np.testing.assert_array_equal(est.predict(Xs), dense.predict(X))


def test_numeric_categorical_frame_is_read_as_its_numbers():
    """Documented: a pandas categorical column with numeric categories is read as numbers."""
    rng = np.random.default_rng(0)
    a = rng.choice([0.25, 0.5], size=40)
    frame = pd.DataFrame({"a": pd.Categorical(a), "b": rng.normal(size=40)})
    y = (frame["b"] > 0).astype(int).to_numpy()
    est = DPLogisticRegression(classes=[0, 1], n_samples_public=40, random_state=0)
    ref = DPLogisticRegression(classes=[0, 1], n_samples_public=40, random_state=0)
    est.fit(frame, y)
    ref.fit(np.column_stack([a, frame["b"]]), y)
    np.testing.assert_allclose(est.coef_, ref.coef_)


# ------------------------------------------------------------------ before fit, wrong width

@pytest.mark.parametrize("method", ["predict", "predict_proba", "decision_function"])
def test_predict_before_fit_is_not_fitted_error(method):
    est = DPLogisticRegression(classes=[0, 1])
    with pytest.raises(NotFittedError, match="not fitted"):
        getattr(est, method)(np.zeros((3, 2)))


@pytest.mark.parametrize("cls", [DPLinearRegression, DPHuberRegressor])
def test_regressor_predict_before_fit(cls):
    with pytest.raises(NotFittedError, match="not fitted"):
        cls(target_bound=1.0).predict(np.zeros((3, 2)))


@settings(**FAST)
@given(d_fit=st.integers(1, 5), d_new=st.integers(1, 8),
       kind=st.sampled_from(["logistic", "linear", "huber"]))
def test_predict_with_the_wrong_width_names_the_expected_width(d_fit, d_new, kind):
    """The width is a public parameter of the model: the error states both widths."""
    rng = np.random.default_rng(d_fit)
    X = rng.normal(size=(20, d_fit))
    y = np.arange(20) % 2
    est = _public_n(_estimator(kind, "noisy_gd"), 20)
    with hostile_warnings():
        est.fit(X, _targets(kind, y, X))
    new = rng.normal(size=(4, d_new))
    if d_new == d_fit:
        assert np.all(np.isfinite(est.predict(new)))
        return
    with pytest.raises(ValueError, match=f"{d_new} features.*expecting {d_fit} features"):
        est.predict(new)


# ------------------------------------------------------ wrong dtypes: noisygd._checks.check_data

SECRET = 7.654321987
SECRET_TEXT = "s3cr3t-cell"


def _hostile_dtype_cases():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(37, 3))
    X[5, 1] = SECRET
    y = (np.arange(37) % 2).astype(int)
    text = X.astype(object)
    text[4, 2] = SECRET_TEXT
    frame = pd.DataFrame({"a": pd.Categorical([SECRET_TEXT, "b"] * 18 + ["b"]), "b": X[:, 0]})
    return {
        "complex X": (X + 1j, y),
        "1-d X": (X[:, 1], y),
        "text in X": (text, y),
        "unicode array X": (np.where(X > 0, SECRET_TEXT, "b"), y),
        "categorical text column": (frame, y),
        "object X holding a dict": (np.array([[{"k": SECRET}] * 3] * 37, dtype=object), y),
        "mismatched lengths": (X, y[:-1]),
        "one class, label read from y": (X, np.full(37, SECRET_TEXT)),
        "datetime X": (np.full((37, 3), np.datetime64("2024-01-01")), y),
    }


@pytest.mark.parametrize("case", list(_hostile_dtype_cases()))
def test_wrong_dtypes_and_shapes_are_refused_without_quoting_the_data(case):
    X, y = _hostile_dtype_cases()[case]
    est = DPLogisticRegression(n_samples_public=37, random_state=0)
    with hostile_warnings(), pytest.raises((ValueError, TypeError)) as info:
        est.fit(X, y)
    message = str(info.value)
    assert "X" in message or "y" in message or "class" in message, message
    assert "7.65432" not in message and SECRET_TEXT not in message, message
    assert "37" not in message and "36" not in message, message  # row counts are private


@pytest.mark.parametrize("case", list(_hostile_dtype_cases()))
def test_check_data_refuses_without_quoting_the_data(case):
    """``noisygd._checks.check_data`` (the check the estimators are asked to run first)."""
    X, y = _hostile_dtype_cases()[case]
    if case == "one class, label read from y":
        check_data(X, y)  # a label set of one is the estimator's rule, not a type error
        return
    if case == "object X holding a dict":
        with pytest.raises(DataTypeError, match=r"argument must be a string.* number") as info:
            check_data(X, y)
    else:
        with pytest.raises((ValueError, TypeError)) as info:
            check_data(X, y)
    message = str(info.value)
    assert "7.65432" not in message and SECRET_TEXT not in message, message
    assert "37" not in message and "36" not in message, message
    if case in ("complex X",):
        assert isinstance(info.value, DataTypeError)
        assert "Complex data not supported" in message  # scikit-learn's check_complex_data
    if case == "categorical text column":
        assert "'a'" in message  # the column is named (a name is public)


def test_check_data_accepts_what_the_estimators_fit():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(10, 3))
    for value in (X, X.astype(object), X > 0, X.astype(np.float32), X.tolist(),
                  pd.DataFrame(X), sp.coo_array(X), sp.dok_matrix(X)):
        check_data(value, np.arange(10) % 2)
    check_data(X, np.array(["a", "b"] * 5, dtype=object))  # text labels for a classifier
    with pytest.raises(DataTypeError):
        check_data(X, np.array(["a", "b"] * 5), y_numeric=True)
    with pytest.raises(DataTypeError, match="Complex"):
        check_data(X, np.ones(10) + 1j)
    with pytest.raises(DataTypeError, match="None"):
        check_data(None)
    with pytest.raises(ValueError, match="rectangular"):
        check_data([[1.0, 2.0], [3.0]])


# ------------------------------------------------------------------------ huge rows, predict

@pytest.mark.parametrize("kind", ["linear", "huber", "logistic"])
def test_predict_on_huge_rows_is_the_prediction_of_the_mapped_row(kind):
    """A row ``t u`` (``||u|| = 1``, ``t = 1.7e308``) is mapped to ``B u`` before use, in
    training (the oracle scales before the product) and so in prediction: its score is the
    score of ``B u``, finite. The row is aligned with ``sign(coef)`` so that ``X @ coef``
    overflows when the product is taken first."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    targets = np.clip(X[:, 0] + X[:, 1] + X[:, 2], -1, 1)
    if kind == "logistic":
        # (the private feature range off: the expected score below is that of B u in
        # the unscaled coordinates)
        est = DPLogisticRegression(feature_range_share=0.0, classes=[0, 1], epsilon=20.0,
                                   n_samples_public=60, random_state=0)
    elif kind == "linear":
        est = DPLinearRegression(target_bound=1.0, epsilon=20.0, n_samples_public=60,
                                 random_state=0, feature_range_share=0.0)
    else:
        est = DPHuberRegressor(target_bound=1.0, epsilon=20.0, n_samples_public=60,
                               random_state=0, feature_range_share=0.0)
    with hostile_warnings():
        est.fit(X, y if kind == "logistic" else targets)
    coef = np.ravel(est.coef_)
    assert np.abs(coef).sum() > 1.1, "premise: X @ coef overflows for the huge row"
    u = np.sign(coef) / np.sqrt(coef.size)
    score = est.decision_function if kind == "logistic" else est.predict
    with hostile_warnings():
        huge = score(np.array([1.7e308 * u]))
    centre = est.conditioning_["centre"]  # the private centre (logistic default) or None
    bound = est.conditioning_["row_norm_bound"]
    mapped = score(np.array([bound * u if centre is None else centre + bound * u]))
    assert np.all(np.isfinite(huge))
    np.testing.assert_allclose(huge, mapped, rtol=1e-9)
