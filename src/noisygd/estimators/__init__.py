"""Scikit-learn estimators for differentially private linear models.

``DPLogisticRegression``, ``DPHuberRegressor`` and ``DPLinearRegression`` follow
the scikit-learn contract (parameters only in ``__init__``, ``fit`` returns
``self``, learned attributes end in ``_``) and add ``privacy_``: the event the
fit performed and its epsilon under every accountant consulted, the tightest named.

The per-row maps inside ``fit`` (each row scaled to norm <= ``row_norm_bound`` by a
per-row factor inside the gradient oracle, never by a copy of ``X``) cost no privacy. ``X``
may be a NumPy array or a SciPy sparse matrix (CSR, CSC or COO; used as CSR); float64 input
is not copied. Statistics of the data that condition the fit are either declared public
(``feature_bounds``, :mod:`noisygd.data`) or, by default without them, released privately
from the same budget before the run (the private feature range, centre and per-feature
scale, and ``DPLinearRegression``'s residual scale: ``fit_info_["pre_releases"]``). Under
add/remove neighbours the number of rows is estimated privately unless declared public
(``n_samples_public``); see :mod:`noisygd.training`. ``method`` is a name in
:data:`noisygd.solvers.SOLVERS` or a :class:`~noisygd.solvers.Solver` instance.

With ``ledger=`` (an SQLite file path, an SQLAlchemy URL or a
:class:`noisygd.ledger.Ledger`) and ``dataset=`` (a name), every fit is recorded as one
release of ``dataset`` in the privacy ledger *before* any data is read (each private release
made before the run is recorded first as a release of its own), and a fit the
dataset's budget cannot admit raises :class:`noisygd.exceptions.BudgetExceededError`
before ``X`` is even validated (see :mod:`noisygd.training` and docs/ledger.md). The
parameters are plain values, so ``clone``, ``cross_val_score`` and ``GridSearchCV`` spend
against the same ledger: each fit is a release.

Every check of ``sklearn.utils.estimator_checks.check_estimator`` passes:
:data:`EXPECTED_FAILED_CHECKS` (the checks a private estimator cannot pass, with the
reason) is empty, and the ``poor_score`` tag relaxes the accuracy thresholds.

``tune=True`` selects among public candidate settings privately (random stopping,
:mod:`noisygd.tuning`); the whole search is the reported event and one ledger release.
"""

from noisygd.estimators._common import (
    CONDITIONING_RELEASES,
    CONDITIONING_ROUNDS,
    CONDITIONING_SHARE,
    DEFAULT_CONDITIONING_SHARE,
    DEFAULT_FEATURE_RANGE_SHARE,
    DEFAULT_FEATURE_SCALE_SHARE,
    DEFAULT_SCALE_SHARE,
    DEFAULT_TARGET_RANGE_SHARE,
    EXPECTED_FAILED_CHECKS,
    FALLBACK_TARGET_BOUND,
    FEATURE_RANGE_RELEASES,
    FEATURE_SCALE_SHARE,
    MIN_BUDGET_MU,
    SCALE_RANGE,
    TARGET_RANGE_RELEASES,
    EstimatorPrivacy,
    box_feature_scale,
)
from noisygd.estimators._conditioning import (
    FEATURE_SCALE_CAP,
    FEATURE_SCALE_Z,
    PrivateConditioning,
    PrivateFeatureScale,
    base_rate_from_release,
    conditioning_from_release,
    feature_scale_from_release,
    private_conditioning,
    shrunk_centre,
)
from noisygd.estimators._logistic import DPLogisticRegression
from noisygd.estimators._regression import DPHuberRegressor, DPLinearRegression
from noisygd.estimators._residual_scales import (
    HUBER_K,
    RESOLVED_SCALE_RATIO,
    SCALE_SUM_NAMES,
    SCALE_SUMS,
    ResidualScales,
    huber_clip,
    private_residual_scales,
    residual_bound,
    residual_scales_from_release,
    target_scale_noise,
)

__all__ = [
    "CONDITIONING_RELEASES",
    "CONDITIONING_ROUNDS",
    "CONDITIONING_SHARE",
    "DEFAULT_CONDITIONING_SHARE",
    "DEFAULT_FEATURE_RANGE_SHARE",
    "DEFAULT_FEATURE_SCALE_SHARE",
    "DEFAULT_SCALE_SHARE",
    "DEFAULT_TARGET_RANGE_SHARE",
    "EXPECTED_FAILED_CHECKS",
    "FALLBACK_TARGET_BOUND",
    "FEATURE_RANGE_RELEASES",
    "FEATURE_SCALE_CAP",
    "FEATURE_SCALE_SHARE",
    "FEATURE_SCALE_Z",
    "HUBER_K",
    "MIN_BUDGET_MU",
    "RESOLVED_SCALE_RATIO",
    "SCALE_RANGE",
    "SCALE_SUMS",
    "SCALE_SUM_NAMES",
    "TARGET_RANGE_RELEASES",
    "DPHuberRegressor",
    "DPLinearRegression",
    "DPLogisticRegression",
    "EstimatorPrivacy",
    "PrivateConditioning",
    "PrivateFeatureScale",
    "ResidualScales",
    "base_rate_from_release",
    "box_feature_scale",
    "conditioning_from_release",
    "feature_scale_from_release",
    "huber_clip",
    "private_conditioning",
    "private_residual_scales",
    "residual_bound",
    "residual_scales_from_release",
    "shrunk_centre",
    "target_scale_noise",
]
