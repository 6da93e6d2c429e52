"""What the estimators' modules share: ``privacy_``'s class (:class:`EstimatorPrivacy`),
the budget and scale constants, and the public box's helpers."""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any

import numpy as np

from noisygd._checks import check_positive
from noisygd.accounting.base import AccountingResult


class EstimatorPrivacy(AccountingResult):
    """``privacy_`` of a fitted estimator: its :class:`~noisygd.accounting.base.AccountingResult`
    (same fields, equality and :meth:`to_dict`) plus :meth:`to_html`.

    It keeps a reference to the estimator that made it (not a field: not compared, printed
    or serialised), so that the page carries the fit's data-handling statements, parameters
    and coefficients; once that estimator is refitted (its ``privacy_`` is another object)
    the page shows this accounting result alone.
    """

    @classmethod
    def of(cls, result: AccountingResult, estimator: Any) -> EstimatorPrivacy:
        """``result`` as an :class:`EstimatorPrivacy` of ``estimator``."""
        out = cls(**{f.name: getattr(result, f.name) for f in dataclasses.fields(result)})
        object.__setattr__(out, "_estimator", estimator)
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AccountingResult):
            return NotImplemented
        return all(getattr(self, f.name) == getattr(other, f.name)
                   for f in dataclasses.fields(AccountingResult))

    __hash__ = AccountingResult.__hash__

    def to_html(self, **kwargs: Any) -> str:
        """The self-contained HTML report (:func:`noisygd.report.to_html`): of the fitted
        estimator when this is still its ``privacy_``, else of this result alone.
        ``kwargs`` go to :func:`noisygd.report.build_report` (``training_curve``,
        ``title``, ...)."""
        from noisygd.report import to_html

        est = self.__dict__.get("_estimator")
        if est is not None and getattr(est, "privacy_", None) is self:
            return to_html(est, **kwargs)
        return to_html(AccountingResult(**{f.name: getattr(self, f.name)
                                           for f in dataclasses.fields(AccountingResult)}),
                       **kwargs)


#: check_estimator checks that a differentially private estimator cannot pass, with the
#: reason: none (every check passes; docs/estimators.md, "scikit-learn's check_estimator").
EXPECTED_FAILED_CHECKS: dict[str, dict[str, str]] = {}

#: The share of the Gaussian-DP budget ``mu^2`` the private conditioning is measured with
#: (a declared budget split, like ``scale_share``'s 0.1).
CONDITIONING_SHARE = 0.1
#: The private conditioning's releases, as fractions of ``conditioning_share``: three centres
#: (and row scales), the first at the row bound ``R``, each later one about the centre
#: before it within a radius read off a histogram of the rows' distances to that centre,
#: released between them (docs/estimators.md, "Private conditioning": a declared split;
#: the centres are averaged by inverse variance, so the rows near the origin lose only the
#: histograms' shares, and each round divides the radius of rows far from it).
CONDITIONING_ROUNDS = (0.3, 0.05, 0.3, 0.05, 0.3)
#: The names of those releases, in order (``fit_info_["pre_releases"]``; the ledger records
#: each as ``"<estimator>/<name>"``).
CONDITIONING_RELEASES = ("conditioning", "conditioning_radius", "conditioning_2",
                         "conditioning_radius_2", "conditioning_3")
#: The private feature range's releases in order (``fit_info_["pre_releases"]``): the
#: histogram, then the column offsets' two rounds
#: (:data:`~noisygd.mechanisms.feature_range.FEATURE_RANGE_ROUNDS`,
#: :mod:`noisygd.mechanisms.column_offsets`).
FEATURE_RANGE_RELEASES = ("feature_range", "column_offsets", "column_deviations")
#: The regressors' private target range's releases in order (``fit_info_["pre_releases"]``),
#: one per round of :data:`~noisygd.mechanisms.target_range.TARGET_RANGE_ROUNDS` (a fit
#: without an intercept makes the first only).
TARGET_RANGE_RELEASES = ("target_range", "target_centre", "target_range_2",
                         "target_centre_2", "target_range_3")
#: The estimators' default ``conditioning_share``: ``"auto"``, the declared
#: split :data:`CONDITIONING_SHARE` wherever the budget pays for it and the fit (class doc,
#: "Private conditioning", with the measurements the default was decided on).
DEFAULT_CONDITIONING_SHARE = "auto"
#: The share of the Gaussian-DP budget ``mu^2`` the private per-feature scale is released with
#: (a declared budget split; docs/estimators.md, "Private per-feature scale", with the
#: measurements it was decided on).
FEATURE_SCALE_SHARE = 0.05
#: The default ``feature_scale_share``: ``"auto"``, :data:`FEATURE_SCALE_SHARE` wherever the
#: private conditioning is released, the rows have at least two columns and the budget pays
#: for the release with the rest of the fit (public facts only).
DEFAULT_FEATURE_SCALE_SHARE = "auto"
#: The default ``feature_range_share``: ``"auto"``, the private feature range's declared share
#: (:data:`noisygd.mechanisms.feature_range.FEATURE_RANGE_SHARE`) wherever the private
#: conditioning is released (rows in memory or a Dask collection) and the budget pays for it
#: with the rest of the fit.
DEFAULT_FEATURE_RANGE_SHARE = "auto"
#: The regressors' default ``target_range_share``: ``"auto"``, the private target range's
#: declared share (:data:`noisygd.mechanisms.target_range.TARGET_RANGE_SHARE`) wherever no
#: ``target_range`` or ``target_bound`` is declared, the method can compose with it and the
#: budget pays for it with the rest of the fit.
DEFAULT_TARGET_RANGE_SHARE = "auto"
#: The regressors' target half-range where none is declared and none released (``target_bound``
#: before the private target range existed): targets clipped to [-1, 1], with a warning.
FALLBACK_TARGET_BOUND = 1.0
#: :class:`DPLinearRegression`'s default ``scale_share``: the declared share of the Gaussian-DP
#: budget ``mu^2`` spent on the private target scale (a budget split, like the count's 0.01).
DEFAULT_SCALE_SHARE = 0.1


#: What ``validate_data`` accepts: dense arrays (float64 used in place) or SciPy sparse
#: matrices, converted to CSR (CSR input is used in place).
_ACCEPT_SPARSE = "csr"


#: Smallest Gaussian-DP :math:`\mu` of a budget the estimators accept (delta > 0). Below it
#: a release's noise standard deviation exceeds :math:`10^{100}` sensitivities: its variance
#: (and a shares' :math:`\mu^2`) nears the ends of floating-point range, and the planners'
#: arithmetic overflows or underflows (epsilon = delta = 1e-160 raised ``OverflowError`` in
#: NoisySGD's plan and a misleading ``feature_scale`` error in the default fit). A budget
#: this small releases nothing usable; refusing it up front names the cause.
MIN_BUDGET_MU = 1e-100


#: The range of a public scale (``row_norm_bound``, ``clip``) the estimators accept: the
#: planners' bounds take its square and fourth power against ``n`` and ``d``, which leave
#: floating-point range outside it (``row_norm_bound=1e-165`` with ``method="dp_ftrl"`` or
#: ``"noisy_sgd"`` raised ZeroDivisionError in the regret and utility bounds). NoisyGD's
#: planner gives the same advice when its bounds are not finite.
SCALE_RANGE = (1e-100, 1e100)


def _check_scale(name: str, value: float) -> None:
    """Refuse a public scale outside :data:`SCALE_RANGE`, naming the parameter."""
    lo, hi = SCALE_RANGE
    if not lo <= float(value) <= hi:
        raise ValueError(f"{name}={value!r} is outside {lo:g} .. {hi:g}, where the planners' "
                         "bounds stay in floating-point range; rescale the features")


def _signed_labels(y: Any, positive: Any) -> Any:
    r"""One-vs-rest labels :math:`y'_i = 2[y_i = \text{positive}] - 1 \in \{-1, +1\}` as int8:
    one byte a row, the form the oracles' compiled logistic kernel reads (float64 labels
    would hold 8 bytes a row for the whole fit). NumPy or Dask ``y``."""
    labels = (y == positive).astype(np.int8)
    labels *= 2
    labels -= 1
    return labels


def _delta_warning(delta: float, n_public: float) -> None:
    """Warn when delta >= 1/n for a *public* n (a declared size or a released noisy count)."""
    if delta >= 1.0 / max(n_public, 1.0):
        warnings.warn(
            f"delta = {delta:g} >= 1/n for the public n = {n_public:g}: a mechanism that "
            "publishes one random row in full would meet this guarantee; use delta << 1/n",
            UserWarning,
            stacklevel=4,
        )


def _box_limits(feature_bounds: Any, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)`` of a declared box as arrays of length ``n_features``, checked: finite,
    ``low <= high`` in every column and ``low < high`` in some."""
    try:
        low, high = feature_bounds
    except (TypeError, ValueError):
        raise TypeError("feature_bounds must be a pair (low, high) of scalars or arrays, "
                        "or a PublicCentring") from None
    try:
        low = np.broadcast_to(np.asarray(low, dtype=float), (n_features,))
        high = np.broadcast_to(np.asarray(high, dtype=float), (n_features,))
    except (TypeError, ValueError):
        raise ValueError(f"feature_bounds must be real scalars or arrays of length "
                         f"{n_features} (one per feature)") from None
    if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high)) and np.all(high >= low)):
        raise ValueError("feature_bounds must be finite with low <= high in every column")
    if not np.any(high > low):
        raise ValueError("feature_bounds must have low < high in some column")
    return low, high


def box_feature_scale(feature_bounds: Any, n_features: int) -> np.ndarray | None:
    r"""The public per-feature scale of a declared box ``(low, high)``: the weights that give
    every feature the same half-width, keeping the box's radius,

    .. math:: f_j = \bar w/w_j, \qquad w_j = (u_j - l_j)/2, \qquad
              \bar w = \Big(\frac1{d_+}\sum_{j: w_j > 0} w_j^2\Big)^{1/2}

    (:math:`d_+` the features of positive width; a feature of width 0 is constant inside
    the box and keeps :math:`f_j = 1`), so the rescaled box :math:`\prod_j[-\bar w, \bar w]`
    has the radius :math:`\lVert w\rVert_2` of the declared one and the fit's row bound,
    clip and sensitivity are unchanged: the map is public (a function of the declaration
    only), as scikit-learn's ``MinMaxScaler`` fitted on the declared range would be. None
    (no rescaling) where every width is equal, where the box is a
    :class:`~noisygd.data.PublicCentring` (a centre and a radius, no widths), or where no
    width is positive. Measured on ``bench_conditioning``'s ``scales`` family (feature
    ranges over 100x, declared box; docs/estimators.md, "Per-feature scale of a declared
    box")."""
    if hasattr(feature_bounds, "centre") and hasattr(feature_bounds, "radius"):
        return None
    low, high = _box_limits(feature_bounds, n_features)
    half = (high - low) / 2.0
    positive = half > 0.0
    if not positive.any() or np.all(half == half[0]):
        return None
    w_bar = math.sqrt(float(np.mean(half[positive] ** 2)))
    return np.where(positive, w_bar / np.where(positive, half, 1.0), 1.0)


def _box_centre(feature_bounds: Any, n_features: int) -> tuple[np.ndarray, float]:
    r"""Centre ``(l + u)/2`` and exact radius :math:`\lVert(u - l)/2\rVert_2` of a declared box.

    ``feature_bounds`` is ``(low, high)`` (scalars or arrays of length ``n_features``, public
    by declaration) or an object with ``centre`` and ``radius`` attributes
    (:class:`noisygd.data.PublicCentring`, whose radius may be tighter than the box's).
    """
    if hasattr(feature_bounds, "centre") and hasattr(feature_bounds, "radius"):
        c = np.asarray(feature_bounds.centre, dtype=float)
        radius = check_positive("feature_bounds.radius", feature_bounds.radius)
    else:
        low, high = _box_limits(feature_bounds, n_features)
        c = (low + high) / 2.0
        radius = float(np.linalg.norm((high - low) / 2.0))
    if c.shape != (n_features,) or not np.all(np.isfinite(c)):
        raise ValueError(f"feature_bounds must describe {n_features} columns, got a centre of "
                         f"shape {c.shape}")
    _check_scale("feature_bounds' radius", radius)  # the fit's row bound (a 1e200 box: inf)
    return c, radius
