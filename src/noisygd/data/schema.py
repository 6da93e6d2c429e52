"""Public feature schemas: numeric features with public bounds, categoricals with public lists.

A :class:`Schema` turns a table into a feature matrix one row at a time: every constant it uses
(bounds, category lists, transforms) is written in the code with its source, so the encoding of
row ``i`` depends on row ``i`` only. This is what makes the UCI loaders private by construction.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from noisygd.data.io import DataFileError
from noisygd.data.preprocessing import clip_rows, one_hot, signed_log1p

__all__ = ["CategoricalFeature", "DatasetInfo", "NumericFeature", "PublicCentring", "Schema"]

Transform = Literal["identity", "log1p", "signed_log1p"]


def _transform(x: np.ndarray, kind: Transform) -> np.ndarray:
    if kind == "identity":
        return x
    if kind == "log1p":
        return np.log1p(x)
    return signed_log1p(x)


@dataclass(frozen=True)
class NumericFeature:
    """A numeric column clipped to public bounds, transformed, and mapped onto ``[0, 1]``.

    Encoding: ``z = (t(clip(x, lower, upper)) - t(lower)) / (t(upper) - t(lower))`` with ``t``
    the transform (``identity``, ``log1p``, or ``signed_log1p(x) = sign(x) log(1 + |x|)``).
    ``lower``/``upper`` are in the column's raw units; ``source`` says where they come from.
    """

    name: str
    lower: float
    upper: float
    source: str
    transform: Transform = "identity"
    unit: str = ""

    def __post_init__(self) -> None:
        if not self.lower < self.upper:
            raise ValueError(f"feature {self.name!r}: lower must be below upper")
        if self.transform == "log1p" and self.lower <= -1.0:
            raise ValueError(f"feature {self.name!r}: log1p needs lower > -1")

    def encode(self, values: np.ndarray) -> np.ndarray:
        """Map raw values (1-D, finite) onto ``[0, 1]``."""
        t_lo, t_hi = _transform(np.array([self.lower, self.upper]), self.transform)
        z = (_transform(np.clip(values, self.lower, self.upper), self.transform) - t_lo) / (
            t_hi - t_lo
        )
        return np.clip(z, 0.0, 1.0)


@dataclass(frozen=True)
class CategoricalFeature:
    """A categorical column one-hot encoded against a public category list.

    A value not in ``categories`` (including a missing value) encodes as an all-zero block.
    """

    name: str
    categories: tuple[str | int, ...]
    source: str

    def __post_init__(self) -> None:
        if len(set(self.categories)) != len(self.categories) or not self.categories:
            raise ValueError(f"feature {self.name!r}: categories must be distinct and non-empty")

    @property
    def feature_names(self) -> tuple[str, ...]:
        return tuple(f"{self.name}={c}" for c in self.categories)

    def codes(self, values: pd.Series) -> np.ndarray:
        """Index of each value in ``categories``; ``-1`` for unknown or missing."""
        return pd.Index(list(self.categories)).get_indexer(values).astype(np.int64)

    def encode(self, values: pd.Series) -> np.ndarray:
        return one_hot(self.codes(values), len(self.categories))


Feature = NumericFeature | CategoricalFeature


@dataclass(frozen=True)
class Schema:
    """An ordered list of features; :meth:`encode` builds the matrix block by block.

    After encoding, every numeric feature lies in ``[0, 1]`` and every one-hot block has norm at
    most 1, so a row has norm at most ``sqrt(n_blocks)`` with ``n_blocks`` the number of features
    in the schema (a constant of the schema, not of the data). :meth:`encode` multiplies by the
    public constant ``row_norm_bound / sqrt(n_blocks)`` so that ``||x_i|| <= row_norm_bound`` by
    construction, then applies :func:`~noisygd.data.preprocessing.clip_rows` as a floating-point
    guard. A common scale (rather than normalising each row) keeps features comparable across
    rows; both are per-row maps and free.
    """

    features: tuple[Feature, ...]

    @property
    def n_blocks(self) -> int:
        return len(self.features)

    @property
    def feature_names(self) -> tuple[str, ...]:
        names: list[str] = []
        for f in self.features:
            names.extend(f.feature_names if isinstance(f, CategoricalFeature) else (f.name,))
        return tuple(names)

    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    def encode(self, frame: pd.DataFrame, row_norm_bound: float, source: Path) -> np.ndarray:
        """Encode ``frame`` (one column per feature, raw values) into a float64 matrix.

        Raises :class:`~noisygd.data.io.DataFileError` naming ``source`` if a column is absent
        or a numeric column has a non-numeric or missing value.
        """
        missing = [f.name for f in self.features if f.name not in frame.columns]
        if missing:
            raise DataFileError(f"{source} lacks the columns {', '.join(missing)}")
        blocks = []
        for f in self.features:
            col = frame[f.name]
            if isinstance(f, CategoricalFeature):
                blocks.append(f.encode(col))
            else:
                blocks.append(f.encode(numeric_column(col, f.name, source))[:, None])
        X = np.hstack(blocks) if blocks else np.zeros((len(frame), 0))
        X *= row_norm_bound / np.sqrt(self.n_blocks)
        return clip_rows(X, row_norm_bound)

    def public_centring(self, row_norm_bound: float) -> PublicCentring:
        r"""A centre of the encoded feature domain, read from the schema alone (no data).

        With :math:`b = B/\sqrt{n_{blocks}}` the per-block scale of :meth:`encode`, a numeric
        column takes values in :math:`[0, b]` and is centred at :math:`b/2`; a one-hot block
        with :math:`m` categories is one of :math:`\{b e_1, \dots, b e_m, 0\}` (0 for an unknown
        value) and is centred at its vertices' centroid :math:`(b/m)\mathbf 1`. The radius is
        the exact maximum of :math:`\lVert x - c\rVert` over the encoded domain, block by block:

        .. math::  R_c^2 = \sum_{\text{numeric}} \frac{b^2}{4}
                   + \sum_{\text{one-hot}} b^2 \max\Big(1 - \frac1m, \frac1m\Big).

        The intercept scale is :math:`b`: the intercept is treated as one more block whose
        value is always 1. See :class:`~noisygd.objectives.centred.CentredGLM` for why.
        """
        B = float(row_norm_bound)
        if not (np.isfinite(B) and B > 0):
            raise ValueError(f"row_norm_bound must be positive and finite; got {row_norm_bound!r}")
        b = B / np.sqrt(self.n_blocks)
        centre: list[np.ndarray] = []
        r2 = 0.0
        for f in self.features:
            if isinstance(f, CategoricalFeature):
                m = len(f.categories)
                centre.append(np.full(m, b / m))
                r2 += b * b * max(1.0 - 1.0 / m, 1.0 / m)
            else:
                centre.append(np.array([b / 2.0]))
                r2 += b * b / 4.0
        return PublicCentring(centre=np.concatenate(centre), radius=float(np.sqrt(r2)),
                              intercept_scale=float(b))


@dataclass(frozen=True)
class PublicCentring:
    r"""A public centre ``c`` of the feature domain, the radius ``R_c`` and an intercept scale.

    Every encoded row satisfies :math:`\lVert x - c\rVert \le R_c` by construction. Used with
    :class:`~noisygd.objectives.centred.CentredGLM` (centred coordinates for NoisyGD).

    Attributes
    ----------
    centre : numpy.ndarray of shape (n_features,)
    radius : float
        :math:`R_c \ge \max_x \lVert x - c\rVert` over the public domain.
    intercept_scale : float
        ``s``: the constant column of the centred features.
    """

    centre: np.ndarray
    radius: float
    intercept_scale: float


def numeric_column(col: pd.Series, name: str, source: Path) -> np.ndarray:
    """A column as finite float64 values, or :class:`DataFileError` naming the first bad row."""
    values = pd.to_numeric(col, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataFileError(
            f"column {name!r} of {source} has a missing or non-numeric value "
            f"{col.iloc[i]!r} (data row {i + 1}); {int(bad.sum())} such value(s) in all"
        )
    return values


@dataclass(frozen=True)
class DatasetInfo:
    """What a UCI loader does, all of it public: features, bounds, target encoding, split.

    Attributes
    ----------
    name, task : str
        Dataset key for :func:`~noisygd.data.load_uci`; ``"classification"`` or
        ``"regression"``.
    n_features : int
        Columns of ``X``.
    feature_names : tuple of str
        One name per column (``"feature=category"`` for one-hot columns).
    numeric_features, categorical_features : tuple
        The :class:`NumericFeature` (bounds, transform, source) and :class:`CategoricalFeature`
        (category list, source) specs.
    target : str
        The raw target column and its encoding (how to map predictions back).
    target_bounds : tuple of float or None
        Public bounds of a regression target in raw units (``y = (t - lo) / (hi - lo)``).
    source : str
        The UCI citation (from ``shared/data/uci/README.md``).
    files : tuple of str
        Files read, relative to the data directory.
    split_rule : str
        How train and test are formed.
    n_rows : Mapping[str, int]
        Row counts documented in the README (informational; never read from the data).
    missing_values : str
        How missing or unknown values are encoded.
    """

    name: str
    task: Literal["classification", "regression"]
    n_features: int
    feature_names: tuple[str, ...]
    numeric_features: tuple[NumericFeature, ...]
    categorical_features: tuple[CategoricalFeature, ...]
    target: str
    target_bounds: tuple[float, float] | None
    source: str
    files: tuple[str, ...]
    split_rule: str
    n_rows: Mapping[str, int] = field(default_factory=dict)
    missing_values: str = ""
    row_scaling: str = (
        "numeric features mapped onto [0, 1] by public bounds, one-hot blocks of norm <= 1, then "
        "every row multiplied by row_norm_bound / sqrt(n_blocks) (n_blocks = number of raw "
        "features), so that ||x|| <= row_norm_bound"
    )

    @property
    def public_bounds(self) -> dict[str, tuple[float, float]]:
        """``{feature: (lower, upper)}`` for every numeric feature, in raw units."""
        return {f.name: (f.lower, f.upper) for f in self.numeric_features}
