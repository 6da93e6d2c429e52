"""Argument checks shared by every layer: one policy, one module (imports nothing of noisygd).

The policy, the same for every public function of noisygd:

* a value of the wrong **type** raises :class:`TypeError` (``True`` and ``False`` are never
  numbers here, strings are never numbers, a float is never a count);
* a value of the right type but a **bad value** (negative, zero where positive is needed,
  NaN, infinite, out of range) raises :class:`ValueError`.

Messages name the parameter and what was expected, and show the value the caller passed
(a parameter, never a statistic of the data).

:func:`check_data` applies the same policy to the *data* arguments ``X`` and ``y`` of the
estimators, with one more rule: a message about the data never quotes a value of it, nor a
number of rows (under add/remove neighbours the number of rows is private). It runs before
scikit-learn's ``validate_data``, whose messages quote cells (``could not convert string to
float: 'x'``), print the array (complex or 1-D input) or the row counts (``inconsistent
numbers of samples: [40, 39]``).
"""

from __future__ import annotations

import math
import numbers
import sys
from typing import Any

import numpy as np

__all__ = [
    "MAX_SCALE",
    "DataTypeError",
    "check_bool",
    "check_choice",
    "check_data",
    "check_fraction",
    "check_generator",
    "check_nonnegative",
    "check_positive",
    "check_positive_int",
    "check_probability",
    "check_real",
    "check_scale",
]


def user_stacklevel() -> int:
    """The ``stacklevel`` for ``warnings.warn`` that names the first caller outside noisygd
    (and outside scikit-learn's wrappers of ``fit``), however deep the call that warns: the
    estimators reach their releases through paths of different depths (in memory, Dask)."""
    import os

    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame = sys._getframe(1)  # the function that warns: stacklevel 1
    level = 1
    while frame is not None and (
            os.path.abspath(frame.f_code.co_filename).startswith(package)
            or str(frame.f_globals.get("__name__", "")).startswith("sklearn.")):
        frame = frame.f_back
        level += 1
    return level


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_real(name: str, value: Any) -> float:
    """``float(value)`` for a real number (``TypeError`` for bools, strings, complex, None);
    an integer or fraction beyond the float range is the signed infinity it rounds to (so
    that the range checks refuse it with ``ValueError``, not ``OverflowError``)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {_show(value)}")
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


#: Largest public scale (a row-norm bound, a bound on the targets) the losses accept: their
#: Lipschitz and smoothness constants square it, and 1e150 squared is still a finite float64
#: (1.8e308 is the largest).
MAX_SCALE = 1e150


def check_scale(name: str, value: Any) -> float:
    """A real number in ``(0, MAX_SCALE]`` (:data:`MAX_SCALE`; ``ValueError`` otherwise)."""
    v = check_positive(name, value)
    if v > MAX_SCALE:
        raise ValueError(f"{name} must be at most {MAX_SCALE:g} (the loss squares it; rescale "
                         f"the units), got {_show(value)}")
    return v


def check_positive(name: str, value: Any) -> float:
    """A real number ``> 0`` and finite (``ValueError`` otherwise)."""
    v = check_real(name, value)
    if not (v > 0.0) or not math.isfinite(v):
        raise ValueError(f"{name} must be positive and finite, got {_show(value)}")
    return v


def check_nonnegative(name: str, value: Any) -> float:
    """A real number ``>= 0`` and finite."""
    v = check_real(name, value)
    if not (v >= 0.0) or not math.isfinite(v):
        raise ValueError(f"{name} must be finite and >= 0, got {_show(value)}")
    return v


def check_probability(name: str, value: Any) -> float:
    """A real number in the open interval (0, 1) (a delta, a failure probability)."""
    v = check_real(name, value)
    if not (0.0 < v < 1.0):
        raise ValueError(f"{name} must be in the open interval (0, 1), got {_show(value)}")
    return v


def check_fraction(name: str, value: Any, *, closed_right: bool = True) -> float:
    """A real number in (0, 1] (or (0, 1) with ``closed_right=False``): a sampling rate."""
    v = check_real(name, value)
    ok = 0.0 < v <= 1.0 if closed_right else 0.0 < v < 1.0
    if not ok:
        interval = "(0, 1]" if closed_right else "(0, 1)"
        raise ValueError(f"{name} must be in {interval}, got {_show(value)}")
    return v


def check_positive_int(name: str, value: Any, *, minimum: int = 1) -> int:
    """An integer ``>= minimum`` (``TypeError`` for floats such as 400.7 or 400.0, and bools)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {_show(value)}")
    v = int(value)
    if v < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {_show(value)}")
    return v


def check_bool(name: str, value: Any) -> bool:
    """A bool (Python or NumPy); ``TypeError`` for anything else, 0 and 1 included."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False, got {_show(value)}")
    return bool(value)


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    """One of ``choices`` (``TypeError`` for a non-string, ``ValueError`` listing the choices)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, one of {choices}, got {_show(value)}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {_show(value)}")
    return value


def check_generator(name: str, value: Any, *, secure: bool = True) -> Any:
    """A :class:`numpy.random.Generator`, or (with ``secure=True``) a secure-mode source.

    The secure source is :class:`noisygd.mechanisms.secure.SecureRandom` (OS entropy, exact
    samplers, discrete Gaussian noise). It is recognised without importing it: an instance
    can exist only once its module is loaded, so it is looked up in ``sys.modules``.
    ``secure=False`` is for functions whose privacy analysis needs continuous noise; they
    refuse the secure source with ``TypeError`` naming the reason.
    """
    if isinstance(value, np.random.Generator):
        return value
    module = sys.modules.get("noisygd.mechanisms.secure")
    if module is not None and isinstance(value, module.SecureRandom):
        if secure:
            return value
        raise TypeError(
            f"{name} must be a numpy.random.Generator here: secure mode (SecureRandom) is not "
            "available for this function, whose privacy analysis assumes continuous Gaussian "
            "noise"
        )
    kinds = "a numpy.random.Generator or a noisygd SecureRandom" if secure \
        else "a numpy.random.Generator"
    raise TypeError(f"{name} must be {kinds}, got {type(value).__name__}")


class DataTypeError(TypeError, ValueError):
    """Data of the wrong type (text, complex numbers, objects that are not numbers).

    A :class:`TypeError` by the policy above, and also a :class:`ValueError`, which is what
    scikit-learn's estimator checks expect for data they cannot convert
    (``check_complex_data``, ``check_dtype_object``).
    """


def _kind_text(kind: str) -> str:
    return {"c": "complex numbers", "U": "text", "S": "bytes", "M": "datetimes",
            "m": "time differences", "V": "structured records"}.get(kind, "non-numbers")


def _refuse_kind(name: str, kind: str) -> None:
    """``DataTypeError`` for a NumPy dtype kind that is not a real number or a bool."""
    if kind == "c":
        raise DataTypeError(f"Complex data not supported: {name} must hold real numbers, "
                            "got a complex dtype")
    if kind in "USMmV":
        raise DataTypeError(
            f"{name} must hold real numbers, got {_kind_text(kind)}: encode such columns as "
            "numbers first, from public constants (noisygd.schema.SchemaTransformer, "
            "docs/schema.md)")


def _object_to_float(name: str, values: Any, where: str = "") -> None:
    try:
        np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        # the value is not shown: it is a cell of the (private) data
        raise DataTypeError(
            f"{name}{where} must hold real numbers, but an entry is not one (every argument "
            "must be a string or a real number that reads as a number); encode text as numbers "
            "first, from public constants (noisygd.schema.SchemaTransformer)") from None


def _check_frame(name: str, frame: Any) -> None:
    """Columns of a pandas DataFrame: categorical with text levels, text, complex."""
    import pandas as pd

    bad_categorical, complex_cols = [], []
    for col, dtype in frame.dtypes.items():
        if isinstance(dtype, pd.CategoricalDtype):
            if not (pd.api.types.is_numeric_dtype(dtype.categories.dtype)
                    or pd.api.types.is_bool_dtype(dtype.categories.dtype)):
                bad_categorical.append(str(col))
        elif pd.api.types.is_complex_dtype(dtype):
            complex_cols.append(str(col))
        elif not (pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)):
            _object_to_float(name, frame[col].to_numpy(dtype=object), f" column {str(col)!r}")
    if complex_cols:
        raise DataTypeError(f"Complex data not supported: {name} columns "
                            f"{', '.join(map(repr, complex_cols))} must hold real numbers")
    if bad_categorical:
        raise DataTypeError(
            f"{name} columns {', '.join(map(repr, bad_categorical))} are categorical with text "
            "levels: encode them as numbers first, e.g. one-hot on a public list of levels "
            "(noisygd.schema.SchemaTransformer, docs/schema.md)")


def _n_rows(value: Any) -> int | None:
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple) and shape:
        return int(shape[0])
    try:
        return len(value)
    except TypeError:
        return None


def check_data(X: Any, y: Any = None, *, x_name: str = "X", y_name: str = "y",
               y_numeric: bool = False) -> None:
    """Refuse data that scikit-learn would refuse with a message quoting it.

    Checks the types (metadata, plus a conversion test for object arrays) and the shapes;
    finiteness is left to ``validate_data`` (its messages, "Input X contains NaN", quote
    nothing). Nothing is returned and nothing is copied except to test an object array.

    Raises
    ------
    DataTypeError
        ``X`` (or ``y``) is None, holds complex numbers, text, datetimes or objects that are
        not numbers, or is a DataFrame with a categorical column of text levels (the columns
        are named: column names are public). ``y`` may hold labels of any type unless
        ``y_numeric``.
    ValueError
        ``X`` is not 2-dimensional, or ``X`` and ``y`` differ in their number of rows (the
        numbers are not shown: under add/remove neighbours they are private).
    """
    for name, value in ((x_name, X), (y_name, y)):
        if value is None and (name == x_name or y is not None):
            raise DataTypeError(f"{name} must be an array of real numbers, got None")
    if hasattr(X, "dtypes") and hasattr(X, "columns"):  # a pandas DataFrame
        _check_frame(x_name, X)
    else:
        dtype = getattr(X, "dtype", None)
        if dtype is None:  # a list or another sequence: as NumPy would read it
            try:
                X = np.asarray(X)
            except ValueError:  # ragged nested lists
                raise ValueError(f"{x_name} must be a rectangular 2-dimensional array "
                                 "(n_samples, n_features): its rows differ in length") from None
            dtype = X.dtype
        kind = np.dtype(dtype).kind if not hasattr(dtype, "categories") else "O"
        _refuse_kind(x_name, kind)
        if kind == "O" and not hasattr(X, "tocsr"):
            _object_to_float(x_name, X)
    ndim = getattr(X, "ndim", None)
    if ndim is not None and ndim != 2:
        raise ValueError(
            f"Expected 2D array, got {ndim}D array instead: {x_name} must be 2-dimensional "
            "(n_samples, n_features). Reshape your data with X.reshape(-1, 1) for a single "
            "feature or X.reshape(1, -1) for a single sample")
    if y is None:
        return
    y_dtype = getattr(y, "dtype", None)
    if y_dtype is None:
        try:
            y_dtype = np.asarray(y).dtype
        except ValueError:
            y_dtype = np.dtype(object)
    y_kind = np.dtype(y_dtype).kind if not hasattr(y_dtype, "categories") else "O"
    if y_kind == "c":
        _refuse_kind(y_name, "c")
    if y_numeric:
        _refuse_kind(y_name, y_kind)
        if y_kind == "O":
            _object_to_float(y_name, y)
    n_x, n_y = _n_rows(X), _n_rows(y)
    if n_x is not None and n_y is not None and n_x != n_y:
        raise ValueError(f"{x_name} and {y_name} must have the same number of rows (found "
                         "inconsistent numbers of samples; the counts are not shown)")
