"""Scikit-learn estimators for differentially private linear models.

``DPLogisticRegression``, ``DPHuberRegressor`` and ``DPLinearRegression`` follow
the scikit-learn contract (parameters only in ``__init__``, ``fit`` returns
``self``, learned attributes end in ``_``) and add ``privacy_``: the event the
fit performed and its epsilon under every accountant, the tightest named.

Preprocessing inside ``fit`` is per-row only (each row is scaled to norm <=
``row_norm_bound``, by a per-row factor inside the gradient oracle, never by a copy of
``X``), so it costs no privacy. ``X`` may be a NumPy array or a SciPy sparse matrix
(CSR, CSC or COO; used as CSR); float64 input is not copied. Feature scaling by statistics of
the data is *not* done here: scale by public bounds first (see
:mod:`noisygd.data`). Under add/remove neighbours the number of rows is
estimated privately unless declared public (``n_samples_public``); see
:mod:`noisygd.training`. ``method`` is a name in :data:`noisygd.solvers.SOLVERS` or a
:class:`~noisygd.solvers.Solver` instance.

With ``ledger=`` (an SQLite file path, an SQLAlchemy URL or a
:class:`noisygd.ledger.Ledger`) and ``dataset=`` (a name), every fit is recorded as one
release of ``dataset`` in the privacy ledger *before* any data is read, and a fit the
dataset's budget cannot admit raises :class:`noisygd.exceptions.BudgetExceededError`
before ``X`` is even validated (see :mod:`noisygd.training` and docs/ledger.md). The
parameters are plain values, so ``clone``, ``cross_val_score`` and ``GridSearchCV`` spend
against the same ledger: each fit is a release.

Checks of ``sklearn.utils.estimator_checks.check_estimator`` that contradict
differential privacy are listed in :data:`EXPECTED_FAILED_CHECKS` with the
reason; all other checks pass.

``tune=True`` selects among public candidate settings privately (random stopping,
:mod:`noisygd.tuning`); the whole search is the reported event and one ledger release.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import warnings
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone, is_classifier
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from noisygd._checks import (
    check_bool,
    check_choice,
    check_data,
    check_fraction,
    check_nonnegative,
    check_positive,
    check_positive_int,
    check_probability,
    check_real,
)
from noisygd.accounting.base import AccountingResult
from noisygd.accounting.events import Neighbouring
from noisygd.exceptions import PrivacyLeakWarning
from noisygd.mechanisms.noise import (
    add_gaussian_noise,
    is_secure,
    secure_event,
    secure_noise_scale,
)
from noisygd.objectives.base import Objective
from noisygd.solvers import PublicFacts
from noisygd.solvers.base import ReleasedFacts
from noisygd.training import (
    PreparedFit,
    PreRelease,
    PreviewedFit,
    PrivateFit,
    check_secure_method,
    fit_private,
    preview_private_fit,
)


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


#: check_estimator checks that a differentially private estimator cannot pass,
#: with the reason (also in docs/estimators.md).
EXPECTED_FAILED_CHECKS: dict[str, dict[str, str]] = {}

#: Huber's tuning constant for 95% asymptotic efficiency at the normal model (Huber 1964):
#: ``DPLinearRegression``'s default clip is ``HUBER_K * h * sqrt(R^2 + s^2)``, the Huber
#: threshold ``HUBER_K`` times the public Popoviciu bound ``sd(y) <= h`` (class doc).
HUBER_K = 1.345
#: The share of the Gaussian-DP budget ``mu^2`` the private conditioning is measured with
#: (a declared budget split, like ``scale_share``'s 0.1).
CONDITIONING_SHARE = 0.1
#: :class:`DPLogisticRegression`'s default ``conditioning_share``: ``"auto"``, the declared
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
#: conditioning is released on rows in memory and the budget pays for it with the rest of the fit.
DEFAULT_FEATURE_RANGE_SHARE = "auto"
#: The per-feature scale's resolution floor, in standard deviations of its release
#: (:func:`feature_scale_from_release`).
FEATURE_SCALE_Z = 2.0
#: The largest weight the per-feature scale gives a column against the root-mean-square
#: column (:func:`feature_scale_from_release`): a declared cap (docs/estimators.md).
FEATURE_SCALE_CAP = 10.0
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


class _DPLinearModel(BaseEstimator):
    """Shared fit logic; subclasses provide the objective and the targets."""

    def _make_objective(self) -> Objective:  # pragma: no cover - abstract
        raise NotImplementedError

    #: ``l2`` when ``l2=None`` and the method has no planned choice (a public constant).
    _L2_DEFAULT = 1e-4
    #: Whether ``l2=None`` with NoisyGD asks the solver for the planned ridge
    #: (:func:`noisygd.planning.ridge_strength`; ``DPLogisticRegression``).
    _PLANS_RIDGE: ClassVar[bool] = False
    #: Whether a fit with the planned ridge runs to the ridge's horizon
    #: (``method_options["horizon"] = "ridge"`` unless given; ``DPLinearRegression``).
    _RUNS_TO_RIDGE_HORIZON: ClassVar[bool] = False

    def _plans_ridge(self) -> bool:
        """Whether this fit's ridge is NoisyGD's planned one (``l2=None``, ``method`` NoisyGD,
        no projection ball, no ``method_options["l2"]``): the solver chooses it after the
        private count, from public quantities only (docs/estimators.md, "Default l2")."""
        return (self._PLANS_RIDGE and self.l2 is None
                and getattr(self._solver, "plans_ridge", False)
                and getattr(self, "radius", None) is None
                and "l2" not in (self.method_options or {}))

    #: Whether ``method="auto"`` chooses between NoisyGD and Newton by the public rule of
    #: :func:`noisygd.solvers.auto.choose_method` (binary ``DPLogisticRegression``).
    _CHOOSES_METHOD: ClassVar[bool] = False

    def _chooses_method(self) -> bool:
        """``method="auto"`` (the default), a class that chooses, one problem of one margin,
        no ``max_iter``, no tuning, no ``method_options`` (which are NoisyGD's) but the
        distance's (``optimum_norm_bound``, ``distance_pilot``:
        :mod:`noisygd.solvers.distance`) and the sharp clip's (``sharp_clip``): the solver
        then picks NoisyGD or Newton by public facts (``fit_info_["method_choice"]``)."""
        return (self._CHOOSES_METHOD and isinstance(self.method, str) and self.method == "auto"
                and self.max_iter is None and not self.tune
                and set(self.method_options or {}) <= {"optimum_norm_bound", "distance_pilot",
                                                       "sharp_clip"}
                and getattr(self, "_l2_factor", None) is None
                and not getattr(self, "_multinomial", lambda: False)())

    def _method_options(self) -> dict | None:
        """``method_options``, plus ``{"l2": "auto"}`` when :meth:`_plans_ridge` (and a
        tuning run's ``l2_factor``, a multiple of the planned ridge; and ``"horizon":
        "ridge"`` unless given, for the classes that run to the ridge's horizon)."""
        factor = getattr(self, "_l2_factor", None)
        if not self._plans_ridge():
            if factor is not None:
                raise ValueError("l2_factor scales NoisyGD's planned ridge: it needs l2=None, "
                                 "method='noisy_gd' and no method_options['l2']")
            return self._sharp_clip_option(self.method_options)
        opts = {**(self.method_options or {}), "l2": "auto"}
        if factor is not None:
            opts["l2_factor"] = float(factor)
        if self._RUNS_TO_RIDGE_HORIZON:
            opts.setdefault("horizon", "ridge")
        return self._sharp_clip_option(opts)

    @classmethod
    def _sharp_clip_ratio(cls) -> float | None:
        """The sharp clip's ratio :math:`s` of this estimator's loss, or None (no rule:
        the default). ``noisygd plan`` plans with the same option."""
        return None

    #: The loss whose sharp clip a solver must take (``Solver.sharp_clip_losses``) for this
    #: estimator to pass it; None: no rule.
    _SHARP_CLIP_LOSS: ClassVar[str | None] = None

    def _sharp_clip_option(self, opts: dict | None) -> dict | None:
        """``opts`` plus ``"sharp_clip"``: :meth:`_sharp_clip_ratio`, for a solver that takes
        it for this estimator's loss (``Solver.sharp_clip_losses``: :data:`_SHARP_CLIP_LOSS`),
        where the clip is the estimator's own (no ``clip=``, no tuning ``clip_factor``) and
        the user's ``method_options`` do not set it. The solver scales its base clip by
        :func:`noisygd.planning.sharp_clip_factor` of the run's public noise regime
        (docs/noisygd.md, "The sharp clip of a noise-limited run")."""
        ratio = self._sharp_clip_ratio()
        if (ratio is None or self.clip is not None or "_clip_factor" in self.__dict__
                or getattr(self, "_multinomial", lambda: False)()
                or self._SHARP_CLIP_LOSS not in getattr(self._solver, "sharp_clip_losses", ())
                or "sharp_clip" in (self.method_options or {})):
            return opts
        return {**(opts or {}), "sharp_clip": ratio}

    def _l2(self) -> float:
        """The ridge strength of this fit: ``l2`` if given, else the one chosen in this fit
        (``_resolve_l2`` must have run when it is planned), else ``_L2_DEFAULT``."""
        if self.l2 is not None:
            return float(self.l2)
        l2 = getattr(self, "_l2_used", None)
        return self._L2_DEFAULT if l2 is None else float(l2)

    def _resolve_l2(self, n_rows: int, n_features: int) -> None:
        """``l2=None`` with ``output_perturbation``: Theorems 2-3's choice
        (:func:`noisygd.solvers.output_perturbation.choose_l2`) for the public ``n``, the
        declared constants, the budget and a reference norm ``D0`` (the ``radius``, else
        ``method_options["optimum_norm_bound"]``, else the planner's nominal 1.0)."""
        if self._plans_ridge():
            self._l2_used = 0.0  # the objective's own; NoisyGD adds the planned ridge
            return
        if (self.l2 is not None or not self._solver.chooses_l2
                or getattr(self, "_l2_used", None) is not None):  # given, or chosen in this fit
            return
        n = self._public_n(n_rows)
        if n is None:
            return  # the method refuses a private n (fit_private says so)
        from noisygd.planning import DEFAULT_INIT_DISTANCE
        from noisygd.solvers.output_perturbation import choose_l2

        self._l2_used = 0.0
        base = self._make_objective()
        d0 = getattr(self, "radius", None) or (self.method_options or {}).get(
            "optimum_norm_bound") or DEFAULT_INIT_DISTANCE
        self._l2_used, _ = choose_l2(
            base.constants(float(self.row_norm_bound)), n=int(n),
            dim=base.n_params(n_features), epsilon=float(self.epsilon),
            delta=float(self.delta), reference_norm=float(d0),
            **{k: v for k, v in (self.method_options or {}).items()
               if k in ("noise", "sensitivity_bound")})

    def _conditioned(self) -> bool:
        """Whether the fit runs in public conditioned coordinates (module doc): an intercept,
        a method that clips (its sensitivity is the clip's, whatever the coordinates) and no
        projection ball (not invariant under the change of coordinates)."""
        return (bool(self.fit_intercept) and self._solver.clips_gradients
                and getattr(self, "radius", None) is None)

    def _conditioning(self, n_features: int) -> tuple[np.ndarray | None, float, float | None]:
        r"""``(centre, row bound, intercept scale)`` of the fit (public; module doc).

        ``centre`` is None and the row bound ``row_norm_bound`` without ``feature_bounds``;
        with them, the box's centre and its exact radius :math:`\lVert(u - l)/2\rVert_2`.
        The intercept scale is ``intercept_scale``, else a ``PublicCentring``'s own, else
        :meth:`_default_intercept_scale` (None without an intercept, 1.0 when the problem is
        not conditioned).
        """
        if not self.fit_intercept:
            return None, float(self.row_norm_bound), None
        if not self._conditioned():
            return None, float(self.row_norm_bound), 1.0
        centre, bound = None, float(self.row_norm_bound)
        if self.feature_bounds is not None:
            centre, bound = _box_centre(self.feature_bounds, n_features)
        if self.intercept_scale is not None:
            s = float(self.intercept_scale)
        elif getattr(self.feature_bounds, "intercept_scale", None) is not None:
            s = check_positive("feature_bounds.intercept_scale",
                               self.feature_bounds.intercept_scale)  # the schema's argument
        else:
            s = self._default_intercept_scale(bound, n_features)
        return centre, bound, s

    @staticmethod
    def _default_intercept_scale(bound: float, n_features: int) -> float:
        r"""The intercept scale without a declared one: the row bound ``R`` (docs/estimators.md,
        "Intercept scale": the accelerated plan's bound :math:`DC` with :math:`|b^*| \le
        R\lVert w^*\rVert`)."""
        return bound

    def _fit_objective(self, n_features: int) -> Objective:
        """The objective optimised: :meth:`_make_objective`, in the conditioned coordinates
        of :class:`~noisygd.objectives.centred.CentredGLM` when :meth:`_conditioned`."""
        from noisygd.objectives.centred import CentredGLM

        base = self._make_objective()
        if not self._conditioned():
            return base
        centre, _, s = self._conditioning(n_features)
        c = np.zeros(n_features) if centre is None else centre
        return CentredGLM(base, c, s,  # type: ignore[arg-type]
                          feature_scale=self._feature_scale_used(n_features))

    def _feature_scale_used(self, n_features: int) -> np.ndarray | None:
        """The per-feature scale :math:`f` of this fit: the released one (the private
        per-feature scale), else the declared box's (:func:`box_feature_scale`), else None."""
        private = self.__dict__.get("_private_feature_scale")
        g = self._range_scale()
        if private is not None:
            return private.scale if g is None else private.scale * g
        if g is not None:
            return g
        if self.feature_bounds is None:
            return None
        return box_feature_scale(self.feature_bounds, n_features)

    @property
    def _solver(self) -> Any:
        """The solver of ``method`` (:func:`noisygd.training.check_secure_method`: a secure
        fit refuses a method without a secure mode), derived from the parameters."""
        return check_secure_method(self.method, self.secure)

    def _start_fit(self) -> None:
        """The start of every fit: the parameters validated (:meth:`_check_common_params`)
        and the ridge chosen by an earlier fit forgotten (:meth:`_resolve_l2` chooses again)."""
        self._check_common_params()
        self.__dict__.pop("_l2_used", None)

    def _check_common_params(self) -> None:
        """Validate the parameters (``noisygd._checks``: TypeError for a wrong type,
        ValueError for a bad value); nothing here reads the data or changes the estimator."""
        check_positive("epsilon", self.epsilon)
        check_probability("delta", self.delta)
        if float(self.delta) > 0.0:
            from noisygd.accounting.calibration import calibrate_mu

            mu = calibrate_mu(float(self.epsilon), float(self.delta))
            if 0.0 < mu < MIN_BUDGET_MU:
                raise ValueError(
                    f"epsilon={self.epsilon!r} at delta={self.delta!r} is too small to pay "
                    f"for any Gaussian release: its Gaussian-DP mu ({mu:.3g}) is below "
                    f"{MIN_BUDGET_MU:g}, where the noise's variance and the budget's shares "
                    "leave floating-point range; raise epsilon or delta")
        check_positive("row_norm_bound", self.row_norm_bound)
        _check_scale("row_norm_bound", self.row_norm_bound)
        if self.l2 is not None and check_nonnegative("l2", self.l2) > 0.0:
            lo, hi = SCALE_RANGE
            if not lo <= float(self.l2) <= hi:
                raise ValueError(f"l2={self.l2!r} must be 0 or within {lo:g} .. {hi:g}, where "
                                 "the planners' bounds (their distance sqrt(2 F0 / l2)) stay in "
                                 "floating-point range")
        if self.clip is not None:
            check_positive("clip", self.clip)
            _check_scale("clip", self.clip)
        if self.max_iter is not None:
            check_positive_int("max_iter", self.max_iter)
        if self.n_samples_public is not None:
            check_positive_int("n_samples_public", self.n_samples_public)
        check_choice("neighbouring", self.neighbouring, ("add_remove", "replace_one"))
        if self.intercept_scale is not None:
            check_positive("intercept_scale", self.intercept_scale)
            _check_scale("intercept_scale", self.intercept_scale)
        if self.ledger is not None or self.dataset is not None:
            from noisygd.ledger import check_ledger_arguments

            check_ledger_arguments(self.ledger, self.dataset)
        if check_bool("secure", self.secure):
            if self.random_state is not None:
                raise ValueError("random_state cannot seed secure mode (OS entropy); leave it "
                                 "None with secure=True")
        # an option the method does not take: refused before the data is read or recorded
        check_secure_method(self.method, self.secure).check_options(self.method_options)
        check_bool("tune", self.tune)
        if not self.tune and (self.tune_candidates is not None or self.tune_options is not None):
            raise ValueError("tune_candidates and tune_options need tune=True")

    def _public_n(self, n_rows: int) -> float | None:
        """The number of rows if it is public (declared, or replace-one); else None."""
        if self.n_samples_public is not None:
            return float(self.n_samples_public)
        if self.neighbouring == "replace_one":
            return float(n_rows)
        return None

    def fit(self, X: Any, y: Any, *, prior_events: Any = None) -> Any:
        """Fit the model privately; returns ``self``.

        ``prior_events``: releases already made on these rows (e.g. bounds and levels paid
        for by :mod:`noisygd.schema.paid`), composed first into the budget and the event.

        A fit that raises leaves the estimator not fitted (:meth:`_unfitted_on_failure`);
        what stays in the ledger is docs/ledger.md's "A fit that fails".
        """
        with self._unfitted_on_failure(), self._prior_releases(prior_events):
            return self._fit(X, y)

    #: Values a fit holds on the estimator while it runs, besides the fitted attributes
    #: (a released target shift or scales, the private conditioning, the number of classes).
    _FIT_STATE: ClassVar[tuple[str, ...]] = ("_target_shift", "_scales",
                                             "_private_conditioning", "_n_classes",
                                             "_private_feature_scale", "_n_columns")

    @contextlib.contextmanager
    def _unfitted_on_failure(self) -> Iterator[None]:
        """On any exception, remove every fitted attribute (the names ending in ``_``,
        ``coef_``, ``conditioning_``, ``classes_`` ...; this fit's or an earlier one's) and
        :data:`_FIT_STATE`, then re-raise: a fit that fails leaves the estimator not fitted,
        and a fit whose ledger records were withdrawn (it failed before its first noise
        draw: :mod:`noisygd.training`, module doc 9) leaves no value of the data on it."""
        try:
            yield
        except BaseException:
            for name in [k for k in vars(self) if k in self._FIT_STATE
                         or (k.endswith("_") and not k.startswith("_"))]:
                del self.__dict__[name]
            raise

    def _fit(self, X: Any, y: Any) -> Any:
        """:meth:`fit` of the subclass (the prior events held by :meth:`_prior_releases`)."""
        raise NotImplementedError

    @contextlib.contextmanager
    def _prior_releases(self, prior_events: Any) -> Iterator[None]:
        """Hold ``fit``'s ``prior_events`` (checked to be events) for the fit's duration
        only, so that a later refit on other rows never composes them again."""
        if prior_events is None:
            yield
            return
        from noisygd.accounting.events import DpEvent

        events = tuple(prior_events)
        if not all(isinstance(e, DpEvent) for e in events):
            raise TypeError("prior_events must be privacy events (noisygd.accounting.DpEvent)")
        self._prior_events = events
        try:
            yield
        finally:
            del self._prior_events
    # ---------------------------------------- a release made before the run (paid for)
    def _declared_share(self, name: str, auto: float) -> float:
        """The budget share parameter ``name`` as a number: ``"auto"`` is ``auto``, a
        number must lie in [0, 0.5] (a share of the budget spent before training); a model
        without the parameter spends 0."""
        value = getattr(self, name, 0.0)
        if isinstance(value, str):
            check_choice(name, value, ("auto",))
            return auto
        share = check_real(name, value)
        if not 0.0 <= share <= 0.5:
            raise ValueError(f"{name} must be in [0, 0.5] (a share of the budget "
                             f"spent before training) or 'auto', got {share!r}")
        self._check_share_pays(name, share)
        return share

    def _check_share_pays(self, name: str, share: float) -> None:
        r"""Refuse a positive share whose release's Gaussian-DP mu,
        :math:`\sqrt{s}\,\mu`, is below :data:`MIN_BUDGET_MU` (as the whole budget's check
        in :meth:`_check_common_params`: ``conditioning_share=5e-324`` raised an
        OverflowError)."""
        if not (share > 0.0 and float(self.delta) > 0.0):
            return
        from noisygd.accounting.calibration import calibrate_mu

        mu = math.sqrt(share) * calibrate_mu(float(self.epsilon), float(self.delta))
        if mu < MIN_BUDGET_MU:
            raise ValueError(
                f"{name}={share!r} is too small to pay for a release: its Gaussian-DP mu "
                f"({mu:.3g}) is below {MIN_BUDGET_MU:g}, where the noise's variance leaves "
                "floating-point range; pass 0 (no release) or a larger share")

    def _budget_pays(self, share_name: str, events: tuple[Any, ...]) -> bool:
        """With ``share_name`` ``"auto"``: whether the budget pays for ``events`` (the
        releases made before the run, in order) and the fit together (public facts only:
        epsilon, delta, the method, earlier prior events; no data is read); a declared
        share always (a fit it cannot pay for is refused)."""
        if not isinstance(getattr(self, share_name, 0.0), str):
            return True
        from noisygd.accounting.events import Composed

        try:  # every release and the fit, together (review U3)
            self._release_rest(events[0] if len(events) == 1 else Composed(events))
        except ValueError:  # an epsilon too small for the releases and the fit: none
            return False
        return True

    def _share_of_conditioning(self) -> float:
        """``conditioning_share`` as a number (``"auto"``: :data:`CONDITIONING_SHARE`)."""
        return self._declared_share("conditioning_share", CONDITIONING_SHARE)

    def _conditioning_event(self) -> tuple[float, Any]:
        """``(mu_c, event)`` of the conditioning release (public facts only)."""
        from noisygd.accounting.calibration import calibrate_mu
        from noisygd.accounting.events import Gaussian

        rel = Neighbouring(self.neighbouring)
        mu_c = math.sqrt(self._share_of_conditioning()) * calibrate_mu(
            float(self.epsilon), float(self.delta))
        sens = rel.clipped_sum_sensitivity
        return mu_c, Gaussian(sens / mu_c, sens, rel)

    #: What the conditioning release sums (:class:`~noisygd.oracles.base.RowSums`), in order.
    _CONDITIONING_SUMS = ("rows", "squared_norms", "count")

    def _conditioning_raw_oracles(self, X: Any, targets: list[Any],
                                  range_scale: np.ndarray | None) -> list[Any]:
        r"""The oracles the private conditioning reads: the rows uncentred (in the released
        feature range's coordinates :math:`g\odot x` when ``range_scale`` is :math:`g`),
        projected onto the ball of radius ``R``, their row sums taken by the scan."""
        from noisygd.objectives.centred import CentredGLM
        from noisygd.oracles import make_oracle

        objective = self._make_objective()
        if range_scale is not None:  # uncentred, rescaled: centre 0, feature scale g
            objective = CentredGLM(objective, np.zeros(X.shape[1]), 1.0,  # type: ignore
                                   feature_scale=range_scale)
        first = make_oracle(objective, X, targets[0], row_norm_bound=float(self.row_norm_bound),
                            row_sums=("rows",))
        return [first, *(first.with_targets(y_k) for y_k in targets[1:])]

    def _conditioning_stage(self, X: Any, targets: list[Any], rng: Any,
                            next_sums: tuple[str, ...] = (), deferred: bool = False
                            ) -> tuple[PreRelease, list[Any], list[Any]]:
        """The private conditioning (:func:`private_conditioning`'s release) as a
        :class:`~noisygd.training.PreRelease`: its sums from the oracle of the uncentred rows
        (projected onto the ball of radius ``R``; the row sums taken by its construction's
        scan), then the fit's oracles in the released coordinates (``_private_conditioning``
        set for :meth:`_conditioning`; ``next_sums``: the row sums a later stage reads from
        them, taken by their scan). The oracles read are closed (their ``O(n)`` arrays freed)
        before the next ones are built. Returns the stage, the oracles it reads (an empty
        list with ``deferred``, for the feature range's post-processing to fill), and a list
        its post-processing fills with the oracles it builds (for a later stage's
        post-processing). ``rng``: a stream of its own."""
        R = float(self.row_norm_bound)
        mu_c, event = self._conditioning_event()
        sigma = math.sqrt(len(self._CONDITIONING_SUMS)) * Neighbouring(
            self.neighbouring).clipped_sum_sensitivity / mu_c
        raw = [] if deferred else self._conditioning_raw_oracles(X, targets, None)
        built: list[Any] = []

        def then(noisy: np.ndarray) -> PreparedFit:
            self._private_conditioning = conditioning_from_release(noisy, R, sigma)
            for oracle in raw:  # a DaskOracle's partitions, an ArrayOracle's O(n) arrays
                getattr(oracle, "close", lambda: None)()
            built[:] = self._oracles(X, targets, row_sums=next_sums)
            return PreparedFit(list(built), self._clip_for_method(X.shape[1]))

        stage = PreRelease("conditioning", event, self._CONDITIONING_SUMS, sigma, rng, then,
                           description="(x~/R, ||x~||^2/R^2, 1), x~ = x min(1, R/||x||)")
        return stage, raw, built

    def _report_conditioning(self, fit: Any, cond: Any, scale: Any = None) -> None:
        """``conditioning_["release"]``: the private conditioning's share, scales, event and
        ledger release (``cond``: its post-processing, None if not released); with the
        private per-feature scale (``scale``), ``conditioning_["feature_scale_release"]``
        and ``fit_info_["feature_scale"]`` the same for it."""
        if cond is None:
            return
        release = fit.info.get("conditioning_release")
        self.conditioning_["release"] = {
            "share": self._share_of_conditioning(), "row_scale": cond.row_scale,
            "clip": cond.clip, "event": self._conditioning_event()[1].describe(),
            **({"ledger_release": release} if release is not None else {})}
        if scale is None:
            return
        release = fit.info.get("feature_scale_release")
        report = {
            "share": self._share_of_feature_scale(), "rule": self._feature_scale_rule(),
            "event": self._feature_scale_event()[1].describe(),
            "resolution": scale.resolution, "spread": scale.spread,
            "shrinkage": scale.shrinkage,
            "noise_std": scale.noise_std,
            **({"ledger_release": release} if release is not None else {})}
        self.conditioning_["feature_scale_release"] = report
        fit.info["feature_scale"] = report

    def _report_feature_range(self, fit: Any, released: Any) -> None:
        """``conditioning_["feature_range_release"]`` and ``fit_info_["feature_range"]``:
        the private feature range's share, rule, event, threshold, occupied features and
        released magnitudes (None: not released)."""
        if released is None:
            return
        release = fit.info.get("feature_range_release")
        report = {
            "share": self._share_of_feature_range(),
            "rule": ("per feature, the upper edge 2^(k+1) of the highest binary-exponent bin "
                     "whose noisy count reaches z sigma (z: at most 0.05 chance that any "
                     "empty bin does); rows rescaled to g x, g_j = R/(m_j sqrt(k)), k the released "
                     "mean number of nonzero features per row"),
            "event": self._feature_range_event()[1].describe(),
            "threshold": released.threshold, "noise_std": released.noise_std,
            "occupied": released.occupied, "row_features": released.row_features,
            "magnitude": released.magnitude.tolist(),
            **({"ledger_release": release} if release is not None else {})}
        self.conditioning_["feature_range_release"] = report
        fit.info["feature_range"] = report

    # ------------------------------------------ the private per-feature scale (issue 19)
    def _share_of_feature_scale(self) -> float:
        """``feature_scale_share`` as a number (``"auto"``: :data:`FEATURE_SCALE_SHARE`)."""
        return self._declared_share("feature_scale_share", FEATURE_SCALE_SHARE)

    def _feature_scale_event(self) -> tuple[float, Any]:
        r"""``(mu_f, event)`` of the per-feature scale's release (public facts only):
        :math:`\mu_f = \sqrt{f_s}\,\mu`, one sum of sensitivity :math:`\Delta`."""
        from noisygd.accounting.calibration import calibrate_mu
        from noisygd.accounting.events import Gaussian

        rel = Neighbouring(self.neighbouring)
        mu_f = math.sqrt(self._share_of_feature_scale()) * calibrate_mu(
            float(self.epsilon), float(self.delta))
        sens = rel.clipped_sum_sensitivity
        return mu_f, Gaussian(sens / mu_f, sens, rel)

    def _feature_scale_rule(self) -> str:
        """The public rule that released (or not) the per-feature scale, in words."""
        return ("released with the private conditioning when the rows have at least 2 "
                "columns and the budget pays for it with the rest of the fit "
                "(feature_scale_share='auto'); post-processed toward equal scales where its "
                f"resolution (z = {FEATURE_SCALE_Z:g} noise sds) cannot tell the features "
                "apart")

    def _uses_feature_scale(self) -> bool:
        """Whether this fit releases the private per-feature scale after its private
        conditioning (public facts only: the conditioning released, ``feature_scale_share >
        0``, at least 2 columns (the shape, metadata of ``X``), one margin, and with
        ``"auto"`` a budget that pays for it, the conditioning, the later releases and the
        fit together)."""
        n_columns = self.__dict__.get("_n_columns")
        if (self._share_of_feature_scale() <= 0.0 or n_columns is None or n_columns < 2
                or getattr(self, "_multinomial", lambda: False)()
                or not self._uses_private_conditioning()):
            return False
        return self._budget_pays("feature_scale_share", (
            self._conditioning_event()[1], self._feature_scale_event()[1],
            *self._releases_after_conditioning()))

    def _uses_private_conditioning(self) -> bool:
        """Whether this fit releases the private conditioning; none by default (the
        classifier and the least-squares regressor say when)."""
        return False

    def _conditioning_events(self) -> list[Any]:
        """The events of the private feature range (when released), the private
        conditioning and, when released, the per-feature scale, in order (empty when the
        conditioning is not released)."""
        if not self._uses_private_conditioning():
            return []
        events = [self._feature_range_event()[1]] if self._uses_feature_range() else []
        events.append(self._conditioning_event()[1])
        if self._uses_feature_scale():
            events.append(self._feature_scale_event()[1])
        return events

    # ------------------------------------------ the private feature range (issue 19)
    #: Whether this model releases the private feature range
    #: (:mod:`noisygd.mechanisms.feature_range`) before its private conditioning.
    _RELEASES_FEATURE_RANGE: ClassVar[bool] = False

    def _share_of_feature_range(self) -> float:
        """``feature_range_share`` as a number (``"auto"``: the module's
        :data:`~noisygd.mechanisms.feature_range.FEATURE_RANGE_SHARE`)."""
        from noisygd.mechanisms.feature_range import FEATURE_RANGE_SHARE

        return self._declared_share("feature_range_share", FEATURE_RANGE_SHARE)

    def _feature_range_event(self) -> tuple[float, Any]:
        r"""``(sigma, event)`` of the feature range's release (public facts only: the
        budget, the relation and the number of columns): :math:`\mu_r = \sqrt{f_r}\,\mu`,
        :math:`\sigma = \Delta_r/\mu_r` on every count, :math:`\Delta_r` the histogram's
        exact sensitivity (:func:`~noisygd.mechanisms.feature_range.range_sensitivity`:
        :math:`\sqrt{p + 1}` under add/remove, :math:`\sqrt{2p}` under replace-one)."""
        from noisygd.accounting.calibration import calibrate_mu
        from noisygd.accounting.events import Gaussian

        rel = Neighbouring(self.neighbouring)
        mu_r = math.sqrt(self._share_of_feature_range()) * calibrate_mu(
            float(self.epsilon), float(self.delta))
        sens = rel.clipped_sum_sensitivity
        return self._feature_range_sensitivity() / mu_r, Gaussian(sens / mu_r, sens, rel)

    def _feature_range_sensitivity(self) -> float:
        """The feature range's exact L2 sensitivity under this fit's relation."""
        from noisygd.mechanisms.feature_range import range_sensitivity

        return range_sensitivity(int(self.__dict__["_n_columns"]),
                                 Neighbouring(self.neighbouring) is Neighbouring.REPLACE_ONE)

    def _uses_feature_range(self) -> bool:
        """Whether this fit releases the private feature range first (public facts only):
        a model that releases it, ``feature_range_share > 0``, the private conditioning
        released (rows in memory or a Dask collection) with a known number of columns
        and, with ``"auto"``, a budget that pays for it with the
        conditioning, the per-feature scale, the later releases and the fit."""
        if (not self._RELEASES_FEATURE_RANGE or self._share_of_feature_range() <= 0.0
                or self.__dict__.get("_n_columns") is None
                or not self._uses_private_conditioning()):
            return False
        later = (self._feature_scale_event()[1],) if self._uses_feature_scale() else ()
        return self._budget_pays("feature_range_share", (
            self._feature_range_event()[1], self._conditioning_event()[1], *later,
            *self._releases_after_conditioning()))

    def _feature_range_stage(self, X: Any, rng: Any, then: Any) -> PreRelease:
        """The private feature range as a :class:`~noisygd.training.PreRelease` whose
        statistic is :func:`~noisygd.mechanisms.feature_range.range_statistic` of the raw
        rows;
        ``then(range)`` builds the next stage's oracles from the released
        :class:`~noisygd.mechanisms.feature_range.PrivateFeatureRange`."""
        from noisygd.mechanisms.feature_range import feature_range_from_release

        sigma, event = self._feature_range_event()

        def post(released: Any) -> PreparedFit:
            self._private_feature_range = released
            return then(released)

        # the histogram (2 p K + 1 counts) is condensed to the range before the next stage
        # builds its oracles: never held beside them
        return PreRelease("feature_range", event, (), sigma, rng, post,
                          description="per feature and sign, counts of the nonzero values "
                                      "by binary exponent (a row adds <= 1 per feature)",
                          statistic=lambda: self._range_statistic(X),
                          statistic_terms=int(X.shape[1]) + 1,
                          statistic_sensitivity=self._feature_range_sensitivity(),
                          reduce=lambda noisy: feature_range_from_release(
                              noisy, sigma, float(self.row_norm_bound)))

    def _range_statistic(self, X: Any) -> np.ndarray:
        """:func:`~noisygd.mechanisms.feature_range.range_statistic` of the rows: in memory,
        or summed over a Dask collection's partitions on the cluster
        (:func:`~noisygd.oracles.dask.partition_sum`: the same counts)."""
        from noisygd.mechanisms.feature_range import range_statistic

        if self.__dict__.get("_rows_in_memory", True):
            return range_statistic(X)
        from noisygd.mechanisms.feature_range import range_statistic_size
        from noisygd.oracles.dask import partition_sum

        return partition_sum(X, range_statistic, range_statistic_size(X.shape[1]))

    def _range_scale(self) -> np.ndarray | None:
        """The released feature range's scale :math:`g` (None when not released)."""
        released = self.__dict__.get("_private_feature_range")
        return None if released is None else released.scale

    def _released_centre(self, private: Any) -> np.ndarray:
        r"""The private conditioning's centre in the coordinates of ``X``: released in those
        of :math:`g\odot x` when the feature range was released (:math:`c'/g`)."""
        g = self._range_scale()
        return private.centre if g is None else private.centre / g

    def _conditioning_stages(self, X: Any, targets: list[Any], child: int
                             ) -> tuple[list[PreRelease], list[Any], list[Any]]:
        """The private conditioning's stage (:meth:`_conditioning_stage`, on the release
        stream ``child``) and, when released, the per-feature scale's
        (:meth:`_feature_scale_stage`, on stream ``child + 2``), with the oracles the first
        reads and the list the last one's post-processing fills."""
        scaled = self._uses_feature_scale()
        ranged = self._uses_feature_range()
        stage, conditioning_reads, built = self._conditioning_stage(
            X, targets, self._release_rng(self.random_state, child=child),
            next_sums=("rows", "absolute_rows") if scaled else (), deferred=ranged)
        stages, raw = [stage], conditioning_reads
        if ranged:  # first, on stream child + 4; its post-processing builds what the
            # conditioning reads, in the released coordinates g * x
            # the oracles fit_private checks before the first stage (their type, objective
            # and problems; the range's statistic reads X itself and the stage's
            # post-processing builds what the conditioning reads): on the first row only,
            # so that no pass over X and no O(n) array is spent on them
            raw = (self._conditioning_raw_oracles(X[:1], [y_k[:1] for y_k in targets], None)
                   if self.__dict__.get("_rows_in_memory", True)
                   else self._conditioning_raw_oracles(X, targets, None))  # Dask: as built
            unranged = list(raw)

            def then(released: Any) -> PreparedFit:
                for oracle in unranged:
                    getattr(oracle, "close", lambda: None)()
                conditioning_reads[:] = self._conditioning_raw_oracles(X, targets,
                                                                       released.scale)
                return PreparedFit(list(conditioning_reads), None)

            stages.insert(0, self._feature_range_stage(
                X, self._release_rng(self.random_state, child=child + 4), then))
        if scaled:
            fs_stage, built = self._feature_scale_stage(
                X, targets, built, self._release_rng(self.random_state, child=child + 2))
            stages.append(fs_stage)
        return stages, raw, built

    def _feature_scale_stage(self, X: Any, targets: list[Any], previous: list[Any], rng: Any
                             ) -> tuple[PreRelease, list[Any]]:
        r"""The private per-feature scale as a :class:`~noisygd.training.PreRelease`
        (docs/estimators.md, "Private per-feature scale"): in the coordinates of the
        released centre, on the oracle the conditioning's post-processing built (its rows
        :math:`a_i = \tilde x_i - c` over :math:`R`, :math:`\lVert a_i\rVert \le 1`), the
        per-feature sums of absolute values :math:`\sum_i |a_i| + \mathcal N(0,
        \sigma^2 I_d)`, :math:`\sigma = \Delta/\mu_f` (a row adds the vector
        :math:`|a_i|` of norm :math:`\lVert a_i\rVert \le 1`: exactly
        :math:`\mu_f`-GDP). Its post-processing (:func:`feature_scale_from_release`, with the
        conditioning's noisy count) sets ``_private_feature_scale`` and builds the fit's
        oracles in the rescaled coordinates. Returns the stage and the list it fills."""
        mu_f, event = self._feature_scale_event()
        sigma = Neighbouring(self.neighbouring).clipped_sum_sensitivity / mu_f
        built: list[Any] = []

        def then(noisy: np.ndarray) -> PreparedFit:
            cond = self._private_conditioning
            self._private_feature_scale = feature_scale_from_release(
                noisy, cond.count, sigma, FEATURE_SCALE_Z)
            for oracle in previous:  # a DaskOracle's partitions, an ArrayOracle's arrays
                getattr(oracle, "close", lambda: None)()
            built[:] = self._oracles(X, targets)
            return PreparedFit(list(built), self._clip_for_method(X.shape[1]))

        stage = PreRelease("feature_scale", event, ("absolute_rows",), sigma, rng, then,
                           description="sum_i |a_i|, a_i = (x~_i - c)/R, ||a_i|| <= 1 "
                                       "(c the released centre)")
        return stage, built

    def _affords_conditioning(self) -> bool:
        """With ``conditioning_share="auto"``: whether the budget pays for the conditioning
        release and the fit (public facts only: epsilon, delta, the method, earlier prior
        events; no data is read)."""
        return self._budget_pays("conditioning_share", (
            self._conditioning_event()[1], *self._releases_after_conditioning()))

    def _releases_after_conditioning(self) -> tuple[Any, ...]:
        """The events of the releases this fit makes after the private conditioning and
        before its run (public facts only); none here."""
        return ()

    def _pre_release(self) -> Any:
        """The event of the private release this fit makes before its run (the regressor's
        residual scale, the classifier's conditioning), from public facts only; None if
        none."""
        return None

    def _pre_release_stage(self, X: Any, targets: list[Any]
                           ) -> tuple[tuple[PreRelease, ...], list[Any]] | None:
        """Those releases as :class:`~noisygd.training.PreRelease` stages of
        :func:`~noisygd.training.fit_private`, in order (made on the oracle, recorded and
        composed by the fit), with the oracles the first reads (one per problem), or
        None."""
        return None

    @staticmethod
    def _release_rng(random_state: Any, child: int = 0) -> np.random.Generator:
        """A generator independent of the fit's own ``default_rng(random_state)`` stream, so
        the same ``random_state`` still gives the same model.

        For every seed that is not a generator (None, an int, a
        :class:`~numpy.random.SeedSequence`, a list or array of ints) the fit's own stream is
        that of the root :class:`~numpy.random.SeedSequence` ``S`` (``default_rng`` builds
        it from the seed; a given ``SeedSequence`` is ``S`` itself), and a release's stream is
        ``S``'s spawned child number ``child`` (0: the scale or the classifier's
        conditioning, 1: the regressor's centre), from a copy of ``S`` so that the caller's
        sequence is not advanced: distinct spawn keys, hence streams independent of the
        fit's and of each other (NumPy's SeedSequence design). A
        :class:`~numpy.random.Generator` or ``BitGenerator`` gives a new spawned child on
        each call."""
        if isinstance(random_state, np.random.Generator | np.random.BitGenerator):
            return np.random.default_rng(random_state.spawn(1)[0])  # each call a new child
        root = _seed_sequence(random_state)
        return np.random.default_rng(root.spawn(child + 1)[child])

    def _release_rest(self, release_event: Any) -> Any:
        """The first event the rest of the fit (count and run) records after a release made
        before the run (:func:`noisygd.training.preview_private_fit`, no ledger); raises
        ``ValueError`` if the budget cannot pay for both (public facts only, nothing read)."""
        return preview_private_fit(
            None, None, method=self._solver, epsilon=float(self.epsilon),
            delta=float(self.delta), relation=self.neighbouring,
            n_samples_public=self.n_samples_public, secure=bool(self.secure),
            prior_events=getattr(self, "_prior_events", None),
            pre_releases=(release_event,)).event

    def _preview_ledger(self, X: Any, n_problems: int = 1) -> PreviewedFit | None:
        """:meth:`_preview_fit`, with the release made before the run (:meth:`_pre_release`)
        composed first in the event checked (before ``X`` is validated or read). Notes the
        number of columns of ``X`` first (its shape: metadata, public; the per-feature
        scale's rule reads it, :meth:`_uses_feature_scale`)."""
        self._n_columns = _n_columns(X)
        return self._preview_fit(X, n_problems)

    def _preview_fit(self, X: Any, n_problems: int = 1) -> PreviewedFit | None:
        """Refuse a fit the ledger's budget cannot admit, before ``X`` is validated or read.

        Only public facts are used: the budget, the method and, for a method that is not a
        Gaussian composition with a public ``n``, the shape of ``X`` (metadata of an array,
        sparse matrix or data frame; without one the check happens when the fit is
        recorded, still before the algorithm reads the data).
        """
        if self.ledger is None:
            return None
        facts = None
        shape = getattr(X, "shape", None)
        if (not self._solver.gaussian and isinstance(shape, tuple) and len(shape) == 2
                and all(isinstance(k, int | np.integer) and k >= 1 for k in shape)):
            n = self._public_n(int(shape[0]))
            self._resolve_l2(int(shape[0]), int(shape[1]))
            if n is not None:
                _, bound, _ = self._conditioning(int(shape[1]))
                facts = PublicFacts.from_objective(
                    self._fit_objective(int(shape[1])), int(shape[1]),
                    row_norm_bound=bound, n_samples=n,
                    relation=self.neighbouring, clip=self._clip_for_method(int(shape[1])),
                    max_iter=self.max_iter, options=self.method_options)
        return preview_private_fit(
            self.ledger, self.dataset, method=self._solver, epsilon=float(self.epsilon),
            delta=float(self.delta), relation=self.neighbouring,
            n_samples_public=self.n_samples_public, n_problems=n_problems, facts=facts,
            secure=bool(self.secure), prior_events=getattr(self, "_prior_events", None),
            pre_releases=() if (event := self._pre_release()) is None else (event,))

    def _ledger_parameters(self) -> dict[str, Any]:
        """The estimator's public parameters, recorded with the release."""
        params = self.get_params(deep=False)
        params.pop("ledger", None)
        params.pop("dataset", None)
        return {"estimator": type(self).__name__, **params}

    def _oracles(self, X: Any, targets: list[Any], row_sums: tuple[str, ...] = ()
                 ) -> list[Any]:
        """One oracle per problem in the fit's public conditioning (recorded as
        ``conditioning_``): one pass over ``X`` (scan, partition; with the ``row_sums`` a
        pre-release stage reads), the other problems share it (``with_targets``)."""
        from noisygd.oracles import make_oracle  # ArrayOracle, or DaskOracle for Dask data

        objective = self._fit_objective(X.shape[1])
        centre, bound, scale = self._conditioning(X.shape[1])
        self.conditioning_ = {"centre": centre, "row_norm_bound": bound,
                              "intercept_scale": scale,
                              "feature_scale": self._feature_scale_used(X.shape[1])}
        first = make_oracle(objective, X, targets[0], row_norm_bound=bound,
                            **({"row_sums": row_sums} if row_sums else {}))
        return [first, *(first.with_targets(y_k) for y_k in targets[1:])]

    def _fit_targets(self, X: Any, targets: list[Any],
                     previewed: PreviewedFit | None = None) -> PrivateFit:
        """The private fit of ``targets`` (one per problem) through
        :func:`~noisygd.training.fit_private`, with the release made before the run
        (:meth:`_pre_release_stage`) as its pre-release stage."""
        public_n = self._public_n(X.shape[0])
        if public_n is not None:
            _delta_warning(float(self.delta), public_n)
        if self.secure:
            from noisygd.mechanisms.secure import SecureRandom

            rng: Any = SecureRandom()
        else:
            rng = np.random.default_rng(self.random_state)
        self._resolve_l2(X.shape[0], X.shape[1])
        self.l2_ = self._l2()
        private = ("_private_conditioning", "_private_feature_scale", "_private_feature_range")
        for name in private:
            self.__dict__.pop(name, None)
        try:
            fit = self._fit_staged(X, targets, previewed, rng)
            cond = self.__dict__.get("_private_conditioning")
            fscale = self.__dict__.get("_private_feature_scale")
            frange = self.__dict__.get("_private_feature_range")
        finally:
            for name in private:
                self.__dict__.pop(name, None)
        self._report_conditioning(fit, cond, fscale)
        self._report_feature_range(fit, frange)
        if public_n is None:  # the noisy count is released, hence public
            _delta_warning(float(self.delta), fit.n_samples)
        run_l2 = (fit.results[0].info.get("plan") or {}).get("l2") if fit.results else None
        if run_l2 is not None:  # NoisyGD added a ridge (public: planned from public facts)
            self.l2_ = float(run_l2)
        return fit

    def _fit_staged(self, X: Any, targets: list[Any], previewed: PreviewedFit | None,
                    rng: Any) -> PrivateFit:
        """:func:`~noisygd.training.fit_private` with the releases made before the run
        (:meth:`_pre_release_stage`, in order) as its pre-release stages."""
        staged = self._pre_release_stage(X, targets)
        stages = () if staged is None else staged[0]
        if staged is None:
            oracles, clip = self._oracles(X, targets), self._clip_for_method(X.shape[1])
        else:  # the stage's oracles; the runs' come from its post-processing (stage.then)
            oracles, clip = staged[1], None
        if self._chooses_method():  # NoisyGD or Newton by public facts (solvers.auto)
            from noisygd.solvers.auto import ChoosingSolver

            solver: Any = ChoosingSolver()
        else:
            solver = self._solver
        return fit_private(
            oracles,
            method=solver,
            epsilon=float(self.epsilon),
            delta=float(self.delta),
            relation=Neighbouring(self.neighbouring),
            n_samples_public=self.n_samples_public,
            clip=clip,
            max_iter=self.max_iter,
            rng=rng,
            options=self._method_options(),
            ledger=self.ledger,
            dataset=self.dataset,
            algorithm=f"{type(self).__name__}/{solver.name}",  # "auto": the chosen one
            parameters=self._ledger_parameters() if self.ledger is not None else None,
            preplanned=previewed,
            secure=bool(self.secure),
            # releases already made on these rows (noisygd.schema.paid sets it: bounds and
            # levels paid for privately); composed first into the budget and the event
            prior_events=getattr(self, "_prior_events", None),
            pre_release=stages,
        )

    def _effective_clip(self, n_features: int) -> float | None:
        """Clipping norm: the user's, else None (the method uses the objective's L)."""
        return self.clip

    # ------------------------------------------------------------ private tuning
    #: Keys a tuning candidate may set: public hyperparameters of one run.
    _TUNABLE: ClassVar[tuple[str, ...]] = ("max_iter", "l2", "l2_factor", "clip",
                                          "clip_factor", "intercept_scale", "method_options")
    #: Defaults of ``tune_options`` (docs/tuning.md, "Estimators").
    _TUNE_DEFAULTS: ClassVar[dict[str, Any]] = {"validation_fraction": 0.2, "score_share": 0.1,
                                      "mean_runs": None, "eta": 0.0}

    def _default_candidates(self) -> list[dict[str, Any]]:
        """The public default grid (public constants, read from no data). With NoisyGD's
        planned ridge (:meth:`_plans_ridge`): the planned ridge and a decade either side
        (``l2_factor`` 0.1 and 10: the heuristic balance rests on the comparator radius
        :math:`D_0 = \\sqrt{2nF_0}`, which the data may exceed or fall short of). Otherwise
        the estimator's own settings and a ridge 10 and 100 times weaker. Regressors: see
        :meth:`_DPRegressor._default_candidates`."""
        if self._plans_ridge():
            return [{}, {"l2_factor": 0.1}, {"l2_factor": 10.0}]
        l2 = self._L2_DEFAULT if self.l2 is None else float(self.l2)
        return [{}, {"l2": l2 / 10.0}, {"l2": l2 / 100.0}]

    def _tune_plan(self) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Checked candidates and options (no data read)."""
        if not self._solver.gaussian:
            raise ValueError(
                f"tune=True needs a Gaussian-composition method (such as 'noisy_gd'): "
                f"{self._solver.name!r} is not one, so a run's event cannot be planned as "
                "mu-GDP")
        if self.tune_candidates is None:
            cands = self._default_candidates()
        else:
            if isinstance(self.tune_candidates, dict | str | bytes) or not hasattr(
                    self.tune_candidates, "__iter__"):
                raise TypeError("tune_candidates must be a sequence of dicts of parameters")
            cands = list(self.tune_candidates)
            if not cands:
                raise ValueError("tune_candidates must not be empty")
        for c in cands:
            if not isinstance(c, dict):
                raise TypeError("each tuning candidate must be a dict of parameters, got "
                                f"{type(c).__name__}")
            bad = sorted(set(c) - set(self._TUNABLE))
            if bad:
                raise ValueError(f"tuning candidates may set only {list(self._TUNABLE)}; got "
                                 f"{bad}")
            params = dict(c)
            if "clip_factor" in params:
                check_positive("clip_factor", params.pop("clip_factor"))
                if "clip" in params:
                    raise ValueError("a tuning candidate sets clip or clip_factor, not both")
            scales_ridge = "l2_factor" in params
            if scales_ridge:
                check_positive("l2_factor", params.pop("l2_factor"))
                if "l2" in params:
                    raise ValueError("a tuning candidate sets l2 or l2_factor, not both")
            run = clone(self).set_params(tune=False, tune_candidates=None, tune_options=None,
                                         **params)
            run._check_common_params()  # each value checked
            if scales_ridge and not run._plans_ridge():
                raise ValueError("l2_factor scales NoisyGD's planned ridge: it needs l2=None, "
                                 "method='noisy_gd' and no method_options['l2']")
        opts = self.tune_options if self.tune_options is not None else {}
        if not isinstance(opts, dict):
            raise TypeError("tune_options must be a dict")
        bad = sorted(set(opts) - set(self._TUNE_DEFAULTS))
        if bad:
            raise ValueError(f"tune_options may set only {list(self._TUNE_DEFAULTS)}; got {bad}")
        o = {**self._TUNE_DEFAULTS, **opts}
        o["validation_fraction"] = check_fraction("validation_fraction",
                                                  o["validation_fraction"], closed_right=False)
        o["score_share"] = check_fraction("score_share", o["score_share"], closed_right=False)
        if o["mean_runs"] is not None:
            o["mean_runs"] = check_positive("mean_runs", o["mean_runs"])
        o["eta"] = check_real("eta", o["eta"])
        if not o["eta"] > -1.0:
            raise ValueError(f"eta must be > -1, got {o['eta']!r}")
        if getattr(self, "classes", False) is None:
            raise ValueError("tune=True needs the label set declared public (classes=[...]): "
                             "reading it from y is not part of the accounted selection")
        return cands, o

    def _score_bound(self) -> float:
        """Sensitivity ``b`` of the validation score (public): 1 for the number of correct
        predictions, :math:`h^2` for the clipped squared residuals of a regressor."""
        if is_classifier(self):
            return 1.0
        _, half = self._target_centre_half()
        return half * half

    def _score_run(self, est: Any, X: Any, y: np.ndarray, mu: float, rng: Any) -> float:
        """Private validation score of one run: a noisy sum over the validation rows
        (:func:`noisygd.tuning.private_sum`, sensitivity ``bound``)."""
        from noisygd.tuning import private_sum

        if is_classifier(self):
            return private_sum(est.predict(X) == y, bound=1.0, mu=mu, rng=rng)
        mid, half = self._target_centre_half()
        pred = np.clip(est.predict(X), mid - half, mid + half)
        loss = (pred - np.clip(y, mid - half, mid + half)) ** 2
        bound = self._score_bound()  # squared residuals above h^2 all count as h^2
        return private_sum(bound - np.minimum(loss, bound), bound=bound, mu=mu, rng=rng)

    def _fit_tuned(self, X: Any, y: Any) -> Any:
        r"""``tune=True``: private selection by random stopping (docs/tuning.md).

        The whole selection is one event, planned and (with ``ledger=``) recorded before
        ``X`` is read; each run is a clone fitted on the training part of a seeded random
        split at the per-run Gaussian-DP budget, scored privately on the validation part.

        Secure mode: the split, ``K``, the candidates and every noise come from one
        :class:`~noisygd.mechanisms.secure.SecureRandom`; each run is a secure fit at the
        epsilon of :math:`(1-f)\mu^2/2`-zCDP, so its discrete event (at most that zCDP
        :math:`\rho`, RDP curve :math:`\alpha\rho`) is within the planned
        ``Gaussian(1/(sqrt(1-f) mu))`` (RDP :math:`\alpha(1-f)\mu^2/2`), as
        :func:`~noisygd.tuning.private_select` checks; each score is the discrete
        Gaussian sum, planned as :func:`~noisygd.tuning.secure_private_sum_event`.
        """
        from noisygd.accounting.gdp import gdp_epsilon
        from noisygd.tuning import (
            gaussian_run_event,
            plan_selection,
            private_select,
            private_sum_event,
            secure_private_sum_event,
        )

        cands, o = self._tune_plan()
        rel = Neighbouring(self.neighbouring)
        f = float(o["score_share"])
        run_event = gaussian_run_event(rel, share=1.0 - f)
        secure = bool(self.secure)
        score_bound = self._score_bound()

        def score_event(mu: float) -> Any:
            if secure:
                return secure_private_sum_event(math.sqrt(f) * mu, score_bound, rel)
            return private_sum_event(math.sqrt(f) * mu, rel)

        def run_epsilon(mu: float) -> float:
            if secure:  # the inner fit meets (1 - f) mu^2 / 2 in zCDP (its split)
                from noisygd.accounting.zcdp import zcdp_epsilon

                return zcdp_epsilon(0.5 * (1.0 - f) * mu * mu, float(self.delta))
            return gdp_epsilon(math.sqrt(1.0 - f) * mu, float(self.delta))

        plan = plan_selection(cands, run_event, epsilon=float(self.epsilon),
                              delta=float(self.delta), score_event=score_event,
                              mean=o["mean_runs"] if o["mean_runs"] is not None
                              else max(2.0, float(len(cands))), eta=o["eta"])
        release = None
        if self.ledger is not None:  # one release, before any data is read
            from noisygd.ledger import record_release

            release = record_release(
                self.ledger, self.dataset, plan.event,  # type: ignore[arg-type]
                algorithm=f"{type(self).__name__}/{self._solver.name}/tuned",
                parameters=self._ledger_parameters())
        check_data(X, y, y_numeric=not is_classifier(self))  # messages quote no data
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=not is_classifier(self),
                             accept_sparse=_ACCEPT_SPARSE)
        if is_classifier(self):
            check_classification_targets(y)
            classes = np.unique(np.asarray(self.classes))
            if not np.all(np.isin(y, classes)):
                raise ValueError(f"y holds labels that are not in classes={classes.tolist()}")
        if secure:
            from noisygd.mechanisms.secure import SecureRandom

            rng: Any = SecureRandom()
        else:
            rng = np.random.default_rng(self.random_state)
        # Per-row coins from the seed, independent of the data: each row lands in one part.
        val = rng.random(X.shape[0]) < float(o["validation_fraction"])
        if val.all() or not val.any():
            raise ValueError("tune=True: the random split left a part empty; give more rows "
                             "or another validation_fraction")
        train = np.flatnonzero(~val)
        Xa, ya, Xb, yb = X[train], y[train], X[np.flatnonzero(val)], y[np.flatnonzero(val)]
        inner: dict[str, Any] = {"tune": False, "tune_candidates": None, "tune_options": None,
                                 "ledger": None, "dataset": None}
        if self.n_samples_public is not None:  # the split's sizes: public n and public coins
            inner["n_samples_public"] = int(train.size)

        def fit_one(cand: dict[str, Any], mu: float, r: np.random.Generator) -> Any:
            params = dict(cand)
            factor = params.pop("clip_factor", None)
            l2_factor = params.pop("l2_factor", None)
            est = clone(self).set_params(
                **inner, **params, epsilon=run_epsilon(mu),
                random_state=None if secure else np.random.default_rng(int(r.integers(2**63))))
            est._clip_factor = factor
            est._l2_factor = l2_factor
            with warnings.catch_warnings():  # a run that is not released says nothing
                warnings.simplefilter("ignore")
                est.fit(Xa, ya)
            return est, est.privacy_.event

        def score_one(est: Any, mu: float, r: np.random.Generator) -> float:
            return self._score_run(est, Xb, yb, math.sqrt(f) * mu, r)

        best_est, _, report = private_select(
            cands, fit_one, score_one, epsilon=float(self.epsilon), delta=float(self.delta),
            rng=rng, run_event=run_event, score_event=score_event, plan=plan)
        keep = ("n_features_in_", "feature_names_in_")
        for k, v in vars(best_est).items():
            if k.endswith("_") and not k.startswith("__") and k not in keep:
                setattr(self, k, v)
        for k in ("_n_classes", "_l2_used"):
            if hasattr(best_est, k):
                setattr(self, k, getattr(best_est, k))
        self.privacy_ = EstimatorPrivacy.of(report.privacy, self)
        self.ledger_release_ = release
        self.tuning_ = {
            "candidate": report.candidate, "chosen": report.chosen, "score": report.score,
            "n_runs": report.n_runs, "runs_per_candidate": report.runs_per_candidate,
            "run_mu": report.knob, "candidates": cands, **o,
        }
        public_n = self._public_n(X.shape[0])  # else the released run's noisy count
        _delta_warning(float(self.delta), float(
            public_n if public_n is not None else self.n_samples_used_))
        return self

    def _clip_for_method(self, n_features: int) -> float | None:
        """The clip passed to the method: the user's, or the estimator's default only for
        methods that clip (``Solver.clips_gradients``); the others use the declared
        constants, and a clip the user did not give must not be forced on them."""
        if self.clip is None and not self._solver.clips_gradients:
            return None
        clip = self._effective_clip(n_features)
        factor = getattr(self, "_clip_factor", None)  # a tuning run's "clip_factor"
        if factor is None:
            return clip
        if clip is None:  # the clip the run would use: the objective's Lipschitz constant
            _, bound, _ = self._conditioning(n_features)
            clip = self._fit_objective(n_features).constants(bound).lipschitz
            if clip is None:
                raise ValueError("clip_factor needs a clip to scale: give clip=")
        return float(factor) * float(clip)

    def _store(self, fit: PrivateFit) -> None:
        thetas = np.vstack(fit.thetas)
        if self._conditioned():  # v -> theta = [w, s v_b - <c, w>] (CentredGLM.to_base)
            # the coordinates the fit ran in, as _fit_targets recorded them
            centre, s = self.conditioning_["centre"], self.conditioning_["intercept_scale"]
            f = self.conditioning_.get("feature_scale")
            w = thetas[:, :-1] if f is None else thetas[:, :-1] * f  # w = f v_w
            b = s * thetas[:, -1] - (0.0 if centre is None else w @ centre)
            thetas = np.column_stack([w, b])
        if self.fit_intercept:
            coef, intercept = thetas[:, :-1], thetas[:, -1]
        else:
            coef, intercept = thetas, np.zeros(thetas.shape[0])
        self.coef_ = coef if coef.shape[0] > 1 else coef[0]
        self.intercept_ = intercept if intercept.shape[0] > 1 else float(intercept[0])
        self._store_fit(fit)

    def _store_fit(self, fit: PrivateFit) -> None:
        """The fitted attributes besides the coefficients (all public: module doc)."""
        self.__dict__.pop("tuning_", None)  # from an earlier fit with tune=True
        self.privacy_ = EstimatorPrivacy.of(fit.privacy, self)
        self.n_iter_ = np.array([r.n_iter for r in fit.results])
        self.fit_info_ = fit.info
        self.n_samples_used_ = fit.n_samples
        self.ledger_release_ = fit.release

    def _linear(self, X: Any) -> np.ndarray:
        """Scores on rows mapped into the training domain by the same per-row factors
        (:func:`noisygd.oracles.rows.row_scale`), with no scaled copy of ``X``."""
        from noisygd.oracles.rows import row_scale

        check_is_fitted(self, "coef_")
        check_data(X)
        X = validate_data(self, X, reset=False, dtype=np.float64, accept_sparse=_ACCEPT_SPARSE)
        centre = self.conditioning_["centre"]
        scale = row_scale(X, float(self.conditioning_["row_norm_bound"]), centre=centre,
                          feature_scale=self.conditioning_.get("feature_scale"))
        coef = np.atleast_2d(self.coef_)
        # rows scaled down: their product is taken again on the scaled row s_i x_i (finite,
        # norm <= the bound) rather than s_i (x_i @ coef), which overflows for a huge row
        long = np.flatnonzero(scale < 1.0)
        with np.errstate(over="ignore", invalid="ignore"):  # such rows are replaced below
            raw = np.asarray(X @ coef.T)
        out = raw * scale[:, None]
        if long.size:
            Xl = X[long]
            Xl = (Xl.multiply(scale[long][:, None]).tocsr() if sp.issparse(Xl)
                  else Xl * scale[long][:, None])
            out[long] = np.asarray(Xl @ coef.T)
        out = out + np.atleast_1d(self.intercept_)
        if centre is not None:  # the row map is x -> c + s_i (x - c)
            out += (1.0 - scale)[:, None] * (coef @ centre)[None, :]
        return out

    def __sklearn_tags__(self):  # public tag API (scikit-learn >= 1.6)
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # CSR/CSC/COO accepted (used as CSR)
        return tags

    def privacy_report(self) -> dict[str, Any]:
        """The ``privacy_`` report as a JSON-ready dict."""
        check_is_fitted(self, "privacy_")
        return self.privacy_.to_dict()

    def to_html(self, **kwargs: Any) -> str:
        """The fit's self-contained HTML report (:func:`noisygd.report.to_html`): privacy
        curves under every accountant that bounds ``privacy_.event``, parameters, the
        planner's choices, assumptions and data-handling statements (docs/report.md).
        ``kwargs`` go to :func:`noisygd.report.build_report` (``training_curve``,
        ``title``, ``payload``, ``curves``)."""
        from noisygd.report import to_html

        check_is_fitted(self, "privacy_")
        return to_html(self, **kwargs)


_COMMON_DOC = """
    epsilon : float, default=1.0
        Total privacy budget (everything the fit releases, a private count of
        rows included). With ``delta``, its Gaussian-DP mu must be at least
        :data:`MIN_BUDGET_MU` (1e-100; ``epsilon = delta = 1e-99`` is refused).
    delta : float, default=1e-5
        Must be in (0, 1); should be well below 1/n (a warning says so, comparing with
        a public n only: the declared one, or the released noisy count).
    method : str or Solver, default="auto"
        Training algorithm: a name in :data:`noisygd.solvers.SOLVERS` ("auto" is
        "noisy_gd": NoisyGD with exact Gaussian-DP accounting), or a
        :class:`noisygd.solvers.Solver` instance.
    l2 : float or None, default=None
        L2 regularisation ``l2/2 ||v||^2`` of the coordinates optimised (intercept
        included; see "Conditioning" below). ``None``: with NoisyGD (the default method)
        the planned ridge :func:`noisygd.planning.ridge_strength`,
        :math:`\\sqrt d\\,C\\Delta/(\\mu n^{3/2}\\sqrt{2F_0})`, chosen after the private count
        (the ridge's bias against a comparator of norm :math:`\\sqrt{2nF_0}` balanced with
        NoisyGD's stationary noise; a theorem's choice, docs/estimators.md); with
        ``output_perturbation``, the strength minimising Theorems 2-3's bound on the
        unregularised excess risk (:func:`noisygd.solvers.output_perturbation.choose_l2`;
        a theorem's choice); with the other methods the public constant ``1e-4``
        (``1e-3`` for ``DPLinearRegression``). The value used is ``l2_``.
    fit_intercept : bool, default=True
    row_norm_bound : float, default=1.0
        Each row is scaled to norm <= this bound (a per-row factor applied inside
        the gradient oracle and again at prediction; free under DP). Scale features
        by public bounds beforehand.
    clip : float, optional
        Per-example gradient clipping norm; default: the objective's Lipschitz
        constant, so clipping never changes a gradient (``DPLinearRegression``: Huber's
        clip ``1.345 h sqrt(R^2 + s^2)``, see its "Default clip"). ``DPLogisticRegression``:
        with the private conditioning its released scale (below); a multinomial fit's sharp
        clip. A binary logistic or a linear regression NoisyGD run scales its default clip
        by its public noise regime, from 1 (optimisation-limited) to the loss's sharp ratio
        (noise-limited: 1/2, the logistic residual's bound on a correctly classified row;
        0.6745/1.345 for least squares, the median residual over Huber's threshold),
        ``fit_info_["plans"][k]["plan"]["clip_rule"]`` (docs/noisygd.md, "The sharp clip of
        a noise-limited run").
    max_iter : int, optional
        Number of noisy steps: NoisyGD (``"noisy_gd"``) runs exactly ``max_iter`` steps;
        the other methods take it as a cap. Default: the planner's choice (for NoisyGD the
        minimiser of the accelerated bound, docs/noisygd.md).
    neighbouring : {"add_remove", "replace_one"}, default="add_remove"
    n_samples_public : int, optional
        Declare the number of training rows public. Otherwise, under
        add/remove, it is estimated by a Gaussian count paid for with 1% of
        the budget.
    method_options : dict, optional
        Extra keyword arguments for the method.
    random_state : int, Generator or None
        Seed of all noise; the same seed gives the same model. Must be None with
        ``secure=True``.
    ledger : str, path-like or Ledger, optional
        Privacy ledger: an SQLite file path, an SQLAlchemy URL (PostgreSQL) or an open
        :class:`noisygd.ledger.Ledger`. Each fit is recorded there as one release of
        ``dataset`` before any data is read (DPLinearRegression's private target scale,
        when used, is a second release recorded first), and a fit the dataset's budget cannot admit
        raises :class:`noisygd.exceptions.BudgetExceededError` before reading the data.
        Give a path or URL (not a ``Ledger`` object) to ``clone``, pickle or run the
        estimator in other processes.
    dataset : str, optional
        The name the ledger's budget was set for (``noisygd ledger set-budget``). Give
        both ``ledger`` and ``dataset`` or neither.
    feature_bounds : (low, high) or PublicCentring, optional
        Public bounds of the features (scalars or one value per column), declared by you,
        never computed from the data. With an intercept and a method that clips, the fit
        centres the rows at ``c = (low + high)/2`` (each row is projected onto the ball of
        radius ``R_c = ||(high - low)/2||`` around ``c``, which leaves rows in the box
        unchanged; ``row_norm_bound`` is then not used). A
        :class:`noisygd.data.PublicCentring` gives ``c`` and a tighter ``R_c`` from a schema.
    intercept_scale : float, optional
        The constant column ``s`` of the conditioned rows ``[x - c, s]`` (default ``R``,
        the row bound, or a ``PublicCentring``'s own ``intercept_scale``).
    tune : bool, default=False
        Private hyperparameter selection (docs/tuning.md, "Estimators"): random stopping
        (Papernot and Steinke 2022) over ``tune_candidates``, each run a fit of this
        estimator with one candidate's parameters on the training part of a seeded random
        split of the rows, scored privately on the other part; only the best run is
        released. The whole search is one event,
        :class:`~noisygd.accounting.events.RandomStoppingSelection`, whose epsilon (the
        ``rdp`` accountant) is ``privacy_`` and at most ``epsilon``; with ``ledger=`` it is
        one release, recorded before the data is read. Needs a Gaussian-composition method
        (the default) and, for classifiers, ``classes``. Sets ``tuning_``.
    tune_candidates : list of dict, optional
        Public settings of ``max_iter``, ``l2``, ``l2_factor`` (a multiple of NoisyGD's
        planned ridge), ``clip``, ``clip_factor`` (a multiple of the clip the run would use),
        ``intercept_scale`` or ``method_options``. Default: ``[{}, {"l2_factor": 0.1},
        {"l2_factor": 10.0}]`` for ``DPLogisticRegression`` with the planned ridge, else,
        with ``l2`` the estimator's ridge strength, ``[{}, {"l2": l2/10}, {"l2": l2/100}]``;
        ``[{}, {"clip_factor": 0.5}, {"clip_factor": 0.25}, {"l2": l2/10}]`` for the
        regressors.
    tune_options : dict, optional
        ``validation_fraction`` (0.2: each row is a validation row with this probability,
        drawn from ``random_state``), ``score_share`` (0.1: share of a run's Gaussian-DP
        ``mu^2`` spent on its score), ``mean_runs`` (E[K] > 1; default the number of
        candidates, at least 2), ``eta`` (0.0: the logarithmic law of K; 1.0: geometric).
    secure : bool, default=False
        Secure mode (docs/secure_noise.md): draw all noise from OS entropy through OpenDP's
        discrete Gaussian, on a rounding grid whose effect is accounted; not seedable
        (``random_state`` must be None); accounted by zCDP/RDP (``privacy_.event`` is a
        :class:`~noisygd.accounting.events.DiscreteGaussianNoise` composition). Methods
        ``noisy_gd``, ``noisy_sgd``, ``dp_ftrl``, ``output_perturbation`` and ``ssp``
        (Gaussian noise); ``langevin`` is planned and accounted by composition of its
        discrete Gaussian steps (docs/secure_noise.md); ``rrpsgd`` calibrates its noise by RDP
        for the secure worst-case event (docs/rrpsgd.md). With
        ``tune=True`` the whole selection is secure (split, runs, scores). Needs the
        ``secure`` extra (OpenDP).

    Conditioning (public, on by default)
    ------------------------------------
    With an intercept and a method that clips per-example gradients, the model is fitted
    in the coordinates ``v`` of :class:`noisygd.objectives.centred.CentredGLM`:
    rows ``[x - c, s]`` (``c = 0`` without ``feature_bounds``), margin
    ``<v_w, x - c> + s v_b`` (the same model: ``w = v_w``, ``b = s v_b - <c, w>``), and
    objective ``mean loss + l2/2 ||v||^2`` (the penalty is on ``v``). The default
    ``s = R`` minimises the accelerated plan's error factor ``D C`` for the largest
    intercept the margins allow (``|b*| <= R ||w*||``; docs/estimators.md), and with
    ``feature_bounds`` the row bound ``R`` is the box's radius around its centre, so the
    intercept column no longer dominates the clipping norm ``sqrt(R^2 + s^2)`` nor the
    smoothness that sets the step. ``coef_`` and ``intercept_`` are reported for the
    original features.
    ``intercept_scale=1.0`` without ``feature_bounds`` is the unconditioned model.
"""


class DPLogisticRegression(ClassifierMixin, _DPLinearModel):
    __doc__ = (
        """Differentially private logistic regression.

    Binary problems are fitted directly. ``K > 2`` classes: multinomial (softmax) logistic
    regression (:class:`noisygd.objectives.multinomial.MultinomialLogisticLoss`) with one
    clipped per-example gradient of the ``K x (d+1)`` parameter matrix, the whole budget on
    one problem (default, ``multiclass="multinomial"``); ``multiclass="ovr"`` fits ``K``
    one-vs-rest problems with the budget split evenly in Gaussian-DP terms.

    Parameters
    ----------"""
        + _COMMON_DOC
        + """    multiclass : {"multinomial", "ovr"}, default="multinomial"
        How ``K > 2`` classes are fitted (above). A multinomial fit's default ``clip`` is
        :math:`\\sqrt{1 - 1/K}\\,\\tilde B` (:math:`\\tilde B` the augmented row bound),
        not the Lipschitz constant :math:`\\sqrt2\\tilde B`: the sharp bound on the
        per-example gradient of every correctly classified row (attained at the start
        :math:`\\Theta = 0`), so clipping only rescales misclassified rows' gradients,
        by at least 1/2, along their own direction (a theorem's choice:
        :mod:`noisygd.objectives.multinomial`, "The default clipping norm").
    classes : array-like, optional
        The label set, declared public. If omitted it is read from ``y`` (a
        data-dependent step: a ``PrivacyLeakWarning`` says so).
    conditioning_share : float in [0, 0.5] or "auto", default="auto"
        Without ``feature_bounds`` (no public centre or scale declared): the share of the
        Gaussian-DP :math:`\\mu^2` spent on the private conditioning ("Private conditioning"
        below). ``"auto"`` (the default) is 0.1 (:data:`CONDITIONING_SHARE`, the measured
        declared split, a public constant like ``DPLinearRegression``'s ``scale_share``)
        wherever the budget pays for that release and the fit (``epsilon``, ``delta`` and the
        method: public facts), else 0; 0 spends nothing and keeps the rows uncentred; a
        number is used as given (a fit it cannot pay for is refused before any read).
    feature_scale_share : float in [0, 0.5] or "auto", default="auto"
        With the private conditioning released and at least two columns: the share of
        :math:`\\mu^2` spent on the **private per-feature scale** released after it, in the
        coordinates of the released centre (:math:`\\sum_i |a_i| + \\mathcal N(0,
        \\sigma^2 I_d)`, :math:`a_i = (\\tilde x_i - c)/R`, sensitivity :math:`\\Delta`;
        :func:`feature_scale_from_release`). The fit then runs on the rows
        :math:`[f\\odot(x - c), s]` (a diagonal preconditioner; ``coef_`` and ``intercept_``
        stay in your coordinates), with :math:`f_j` the inverse of feature ``j``'s released
        mean absolute deviation, gated toward 1 where the release cannot tell the features
        apart. ``"auto"`` is :data:`FEATURE_SCALE_SHARE` (0.05) where the budget pays for it
        with the rest of the fit, else 0; 0 turns it off. ``conditioning_["feature_scale"]``
        is :math:`f` and ``conditioning_["feature_scale_release"]`` (also
        ``fit_info_["feature_scale"]``) its share, rule, event, resolution, spread and
        shrinkage (docs/estimators.md, "Private per-feature scale", with the measurements).
    feature_range_share : float in [0, 0.5] or "auto", default="auto"
        With the private conditioning released (rows in memory or a Dask collection):
        the share of :math:`\\mu^2` spent, before everything else, on the **private feature
        range** (:mod:`noisygd.mechanisms.feature_range`): per feature and sign, the noisy counts of
        the nonzero values by binary exponent, and the row count (a row adds at most one
        count per feature and one to the count: sensitivity :math:`\\sqrt{p+1}`; under
        replace-one :math:`\\sqrt{2p}`).
        Each feature's released robust maximum
        :math:`m_j` sets the coordinates :math:`g\\odot x`, :math:`g_j = R/(m_j\\sqrt{k})`,
        in which the conditioning, the per-feature scale and the fit run, so raw columns
        of any scale (a census weight near :math:`10^5` beside one-hot levels) are not
        crushed by the row bound. ``"auto"`` is 0.05 where the budget pays for it with
        the rest of the fit, else 0; 0 turns it off (declare ``feature_bounds`` instead
        when you know them). ``conditioning_["feature_range_release"]`` (also
        ``fit_info_["feature_range"]``) reports it (docs/estimators.md, "Private feature
        range", with the measurements).

    **Private conditioning** (issue 19). Without ``feature_bounds``, ``intercept_scale`` and
    ``clip``, with an intercept, a method that clips and composes with a prior release
    (NoisyGD, Newton through ``"auto"``, NoisySGD, DP-FTRL), not tuned, not secure and not
    multinomial, the fit first releases, with a share :math:`f` of its budget
    (:math:`\\mu_c = \\sqrt f\\,\\mu`), :math:`\\sum_i(\\tilde x_i/R,\\ u_i,\\ 1) +
    \\mathcal N(0, \\sigma^2 I_{p+2})`, :math:`\\tilde x_i` the row projected onto the ball of
    radius :math:`R` (``row_norm_bound``), :math:`u_i = \\lVert\\tilde x_i\\rVert^2/R^2`,
    :math:`\\sigma = \\sqrt3\\,\\Delta/\\mu_c` (each row adds a vector of norm at most
    :math:`\\sqrt3`: exactly :math:`\\mu_c`-GDP; :func:`private_conditioning`). From it (post-
    processing) the centre :math:`c = R\\hat c`, :math:`\\hat c = \\tilde S_x/\\tilde N`, and the
    rows' mean squared distance to it :math:`\\hat U_c` (units of :math:`R^2`). The fit runs in
    the coordinates centred at :math:`c` (rows beyond :math:`R` from :math:`c` shrunk onto that
    ball, a per-row map), with intercept scale :math:`s = R\\sqrt{\\hat U_c}` (the intercept
    weighs as a typical row) and the clip :math:`R\\sqrt{2\\hat U_c}`, the root-mean-square
    norm of the augmented rows :math:`[x - c, s]` (a Schweppe-type clip as
    ``DPLinearRegression``'s). The release composes exactly with the count and the run (a
    pre-release stage of :func:`noisygd.training.fit_private`, summed on the oracle:
    :meth:`~noisygd.oracles.base.GradientOracle.bounded_row_sums`) and, with ``ledger=``, is
    recorded as its own release before the rows are read. ``conditioning_`` reports it
    (``"release"``).
    Measured with ``conditioning_share=0.1`` against 0 (epsilon 1, 3 seeds, share of the
    non-private AUC gain on ``benchmarks/bench_conditioning.py``'s generated tables):
    imbalanced 500 x 5 0.32 -> 0.93, 2000 x 20 0.71 -> 0.96; one-hot 2000 x 20 0.93 -> 0.98,
    10000 x 100 0.90 -> 0.95; scales over 100x 0.69 -> 0.73; the declared box gives 0.61,
    0.88, 0.97, 0.96, 0.69 there. Adult without bounds: accuracy 0.8475 -> 0.8474, AUC
    0.8958 -> 0.8973. On the 32 binary problems of ``bench_conditioning`` (generated
    families, n 500-10 000, and the bench_utility sets; 2 seeds) the default method's mean
    share rose by 0.17, 0.13, 0.09, 0.05 at epsilon 0.5, 1, 2, 8 and fell by more than 0.02
    in no cell: hence on by default (``"auto"``) wherever no public centre is declared.

    Attributes
    ----------
    coef_, intercept_, classes_, n_features_in_
    privacy_ : AccountingResult
        Event and epsilon at ``delta`` under each accountant; tightest named.
    n_iter_ : ndarray
        Noisy steps per problem.
    ledger_release_ : noisygd.ledger.Release or None
        The ledger's record of the fit (with ``ledger=``), else None.
    conditioning_ : dict
        The public conditioning used: ``centre`` (None: not centred), ``row_norm_bound``,
        ``intercept_scale``, ``feature_scale`` (None: not rescaled), and with the private
        conditioning ``release`` (its share, ``row_scale`` = :math:`\\sqrt{\\hat U_c}`, the
        clip and the event); with the private per-feature scale ``feature_scale_release``.
    tuning_ : dict
        With ``tune=True``: the released run's ``candidate`` (and index ``chosen``), its
        noisy ``score``, ``n_runs`` and ``runs_per_candidate`` (drawn independently of the
        data), the per-run Gaussian-DP ``run_mu`` and the options. No other run's score
        or model is kept.
    """
    )

    _PLANS_RIDGE: ClassVar[bool] = True  # l2=None with NoisyGD: the planned ridge
    _SHARP_CLIP_LOSS: ClassVar[str | None] = "logistic"  # the sharp clip's (_sharp_clip_ratio)
    _CHOOSES_METHOD: ClassVar[bool] = True  # method="auto": NoisyGD or Newton (binary, OvR)

    _RELEASES_FEATURE_RANGE: ClassVar[bool] = True

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        *,
        method: Any = "auto",
        l2: float | None = None,
        fit_intercept: bool = True,
        row_norm_bound: float = 1.0,
        clip: float | None = None,
        max_iter: int | None = None,
        neighbouring: str = "add_remove",
        n_samples_public: int | None = None,
        classes: Any = None,
        multiclass: str = "multinomial",
        method_options: dict | None = None,
        random_state: Any = None,
        ledger: Any = None,
        dataset: str | None = None,
        feature_bounds: Any = None,
        intercept_scale: float | None = None,
        tune: bool = False,
        tune_candidates: Any = None,
        tune_options: dict | None = None,
        secure: bool = False,
        conditioning_share: float | str = DEFAULT_CONDITIONING_SHARE,
        feature_scale_share: float | str = DEFAULT_FEATURE_SCALE_SHARE,
        feature_range_share: float | str = DEFAULT_FEATURE_RANGE_SHARE,
    ) -> None:
        self.conditioning_share = conditioning_share
        self.feature_scale_share = feature_scale_share
        self.feature_range_share = feature_range_share
        self.epsilon = epsilon
        self.delta = delta
        self.method = method
        self.l2 = l2
        self.fit_intercept = fit_intercept
        self.row_norm_bound = row_norm_bound
        self.clip = clip
        self.max_iter = max_iter
        self.neighbouring = neighbouring
        self.n_samples_public = n_samples_public
        self.classes = classes
        self.multiclass = multiclass
        self.method_options = method_options
        self.random_state = random_state
        self.ledger = ledger
        self.dataset = dataset
        self.feature_bounds = feature_bounds
        self.intercept_scale = intercept_scale
        self.tune = tune
        self.tune_candidates = tune_candidates
        self.tune_options = tune_options
        self.secure = secure

    def _uses_private_conditioning(self) -> bool:
        """Whether this fit releases the private conditioning (class doc); with ``"auto"``
        only where the budget pays for it and the fit (public facts: no data is read)."""
        solver = self._solver
        applies = (self._share_of_conditioning() > 0.0 and self.feature_bounds is None
                   and self.intercept_scale is None and self.clip is None
                   and bool(self.fit_intercept) and self._conditioned() and not self.secure
                   and not self.tune and "_clip_factor" not in self.__dict__
                   and solver.clips_gradients
                   and (solver.gaussian or solver.accepts_prior_event)
                   and not self._multinomial())
        return applies and self._affords_conditioning()

    def _pre_release(self) -> Any:
        from noisygd.accounting.events import Composed

        events = self._conditioning_events()
        return None if not events else events[0] if len(events) == 1 else Composed(
            tuple(events))

    def _conditioning(self, n_features: int) -> tuple[np.ndarray | None, float, float | None]:
        """As for every model; with the private conditioning released (class doc), its
        centre, the row bound ``R`` and its intercept scale."""
        private = self.__dict__.get("_private_conditioning")
        if private is None or not self.fit_intercept or not self._conditioned():
            return super()._conditioning(n_features)
        return (self._released_centre(private), float(self.row_norm_bound),
                private.intercept_scale)

    def _pre_release_stage(self, X: Any, targets: list[Any]
                           ) -> tuple[tuple[PreRelease, ...], list[Any]] | None:
        """The private conditioning (class doc) as the fit's pre-release stage
        (:meth:`_conditioning_stage`)."""
        if not self._uses_private_conditioning():
            return None
        stages, raw, _ = self._conditioning_stages(X, targets, child=0)
        return tuple(stages), raw

    def _make_objective(self) -> Objective:
        from noisygd.objectives.glm import LogisticLoss

        return LogisticLoss(l2=self._l2(), fit_intercept=self.fit_intercept)

    def _multinomial(self) -> bool:
        """Whether this fit is one multinomial problem (``K > 2``, ``multiclass="multinomial"``)."""
        k = getattr(self, "_n_classes", None)
        return k is not None and k > 2 and self.multiclass == "multinomial"

    def _fit_objective(self, n_features: int) -> Objective:
        """The multinomial objective in the same public conditioning (centre, intercept
        scale) as the binary one; else :meth:`_DPLinearModel._fit_objective`."""
        if not self._multinomial():
            return super()._fit_objective(n_features)
        from noisygd.objectives.multinomial import MultinomialLogisticLoss

        centre, _, s = self._conditioning(n_features)
        kwargs: dict[str, Any] = {}
        if self.fit_intercept:
            kwargs["intercept_scale"] = s
            kwargs["centre"] = centre
        return MultinomialLogisticLoss(int(self._n_classes), l2=self._l2(),
                                       fit_intercept=self.fit_intercept, **kwargs)

    def _method_options(self) -> dict | None:
        """:meth:`_DPLinearModel._method_options`, plus, for a multinomial NoisyGD fit, the
        public ``noise_dimension`` ``(K - 1) p`` of the objective (the loss is constant
        along the other ``p`` directions: :meth:`~noisygd.objectives.multinomial.
        MultinomialLogisticLoss.noise_dimension`), unless the user gave one, and with the
        planned ridge ``"horizon": "ridge"`` (the run reaches the horizon the ridge was
        planned for: :mod:`noisygd.solvers.noisy_gd`, "The ridge's horizon")."""
        opts = super()._method_options()
        if (not self._multinomial() or not getattr(self._solver, "takes_noise_dimension", False)
                or getattr(self, "n_features_in_", None) is None):
            return opts
        extra: dict[str, Any] = {}
        if "noise_dimension" not in (opts or {}):
            objective: Any = self._fit_objective(self.n_features_in_)
            extra["noise_dimension"] = objective.noise_dimension(self.n_features_in_)
        if self._plans_ridge() and "horizon" not in (opts or {}):
            extra["horizon"] = "ridge"  # run to the planned ridge's horizon (solver doc)
        return {**(opts or {}), **extra}

    @classmethod
    def _sharp_clip_ratio(cls) -> float | None:
        """:math:`s = 1/2`: the logistic residual's bound on a correctly classified row over
        its bound on every row (:meth:`~noisygd.objectives.glm.LogisticLoss.
        correct_class_residual_bound`); a binary or one-vs-rest fit only (a multinomial
        fit's clip is already the sharp one)."""
        from noisygd.objectives.glm import LogisticLoss

        loss = LogisticLoss()
        return loss.correct_class_residual_bound() / loss.residual_bound()

    def _effective_clip(self, n_features: int) -> float | None:
        r"""The user's ``clip``; with the private conditioning its clip
        :math:`R\sqrt{2\hat U_c}` (class doc); for a multinomial fit without one, the sharp
        clip :math:`\sqrt{1 - 1/K}\,\tilde B`
        (:meth:`~noisygd.objectives.multinomial.MultinomialLogisticLoss.default_clip`: it
        never changes the gradient of a correctly classified row, nor any gradient at
        :math:`\Theta = 0`); else None (the method uses the Lipschitz constant)."""
        private = self.__dict__.get("_private_conditioning")
        if self.clip is None and private is not None:
            return private.clip
        if self.clip is not None or not self._multinomial():
            return self.clip
        _, bound, _ = self._conditioning(n_features)
        return self._fit_objective(n_features).default_clip(bound)  # type: ignore[attr-defined]

    def _store(self, fit: PrivateFit) -> None:
        if not self._multinomial():
            super()._store(fit)
            return
        objective = self._fit_objective(self.n_features_in_)
        # release P_S Theta (class-mean-zero rows): the same softmax, hence the same
        # predictions, and no larger ridge penalty (MultinomialLogisticLoss.noise_dimension)
        theta = np.asarray(fit.thetas[0], dtype=np.float64).reshape(int(self._n_classes), -1)
        theta = (theta - theta.mean(axis=0)).ravel()
        coef, intercept = objective.coefficients(theta, self.n_features_in_)
        self.coef_ = coef
        self.intercept_ = intercept
        self._store_fit(fit)

    def _fit(self, X: Any, y: Any) -> DPLogisticRegression:
        """:meth:`fit` (the prior events held by :meth:`_prior_releases`).

        Raises
        ------
        BudgetExceededError
            With ``ledger=``: the dataset's budget cannot admit the fit (raised before
            ``X`` and ``y`` are read).
        """
        from noisygd.dask import fit_estimator, is_dask_collection  # docs/dask.md
        self._rows_in_memory = not is_dask_collection(X)  # metadata: where the range is counted
        if not self._rows_in_memory:  # the same fit over a DaskOracle
            return fit_estimator(self, X, y)
        self._start_fit()
        check_choice("multiclass", self.multiclass, ("multinomial", "ovr"))
        if self.tune:
            return self._fit_tuned(X, y)
        declared = None if self.classes is None else np.unique(np.asarray(self.classes))
        self._n_classes = None if declared is None else int(declared.size)
        previewed = self._preview_ledger(
            X, 1 if declared is None or declared.size <= 2 or self._multinomial()
            else int(declared.size))
        check_data(X, y)  # refuse what validate_data would refuse quoting the data
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=False,
                             accept_sparse=_ACCEPT_SPARSE)
        if self.classes is None:
            # a declared label set needs no such check: np.isin below refuses every y that
            # is not a labelling by it (continuous targets included), without the copies of
            # y that type_of_target makes (18 MB at a million rows)
            check_classification_targets(y)
            warnings.warn(
                "the label set is read from y, which is data-dependent; pass classes=[...] to "
                "declare it public",
                PrivacyLeakWarning,
                stacklevel=2,
            )
            classes = np.unique(y)
        else:
            classes = np.unique(np.asarray(self.classes))
            if not np.all(np.isin(y, classes)):
                # the public label set is named, never a label read from the data
                raise ValueError(f"y holds labels that are not in classes={classes.tolist()}")
        if classes.size < 2:
            if self.classes is None:  # the label was read from y: never quote it
                raise ValueError(
                    "DPLogisticRegression needs at least 2 classes: y holds one class; "
                    "declare the label set with classes=[...]")
            raise ValueError(
                f"DPLogisticRegression needs at least 2 classes; got {classes.size} class: "
                f"{classes.tolist()}"
            )
        self.classes_ = classes
        self._n_classes = int(classes.size)
        if classes.size == 2:
            targets = [_signed_labels(y, classes[1])]
        elif self._multinomial():
            targets = [np.searchsorted(classes, y).astype(np.float64)]
        else:
            targets = [_signed_labels(y, c) for c in classes]
        self._store(self._fit_targets(X, targets, previewed))
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Linear scores; shape (n,) for binary, (n, K) otherwise."""
        scores = self._linear(X)
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities: sigmoid (binary), softmax (multinomial), or one-vs-rest
        sigmoids normalised (``multiclass="ovr"``)."""
        scores = self._linear(X)
        if scores.shape[1] > 1 and self.multiclass == "multinomial":
            from noisygd.objectives.multinomial import softmax

            return softmax(scores)
        p = 0.5 * (1.0 + np.tanh(0.5 * scores))  # stable sigmoid
        if p.shape[1] == 1:
            return np.hstack([1.0 - p, p])
        total = p.sum(axis=1, keepdims=True)
        return np.divide(p, total, out=np.full_like(p, 1.0 / p.shape[1]), where=total > 0)

    def predict_log_proba(self, X: Any) -> np.ndarray:
        """Logarithm of :meth:`predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X: Any) -> np.ndarray:
        """Most probable class."""
        scores = self._linear(X)
        if scores.shape[1] == 1:
            return self.classes_[(scores[:, 0] > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

    def __sklearn_tags__(self):  # public tag API (scikit-learn >= 1.6)
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True
        tags.non_deterministic = False
        return tags


class _DPRegressor(RegressorMixin, _DPLinearModel):
    target_bound: float

    def _fit(self, X: Any, y: Any) -> _DPRegressor:
        """:meth:`fit` (the prior events held by :meth:`_prior_releases`).

        Raises
        ------
        BudgetExceededError
            With ``ledger=``: the dataset's budget cannot admit the fit (raised before
            ``X`` and ``y`` are read).
        """
        from noisygd.dask import fit_estimator, is_dask_collection  # docs/dask.md
        self._rows_in_memory = not is_dask_collection(X)  # metadata: where the range is counted
        if not self._rows_in_memory:  # the same fit over a DaskOracle
            return fit_estimator(self, X, y)
        self._start_fit()
        mid, half = self._target_centre_half()
        if self.tune:
            return self._fit_tuned(X, y)
        previewed = self._preview_ledger(X)
        check_data(X, y, y_numeric=True)  # messages quote no data
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True,
                             accept_sparse=_ACCEPT_SPARSE)
        # Centring each target at the declared public range's midpoint and clipping it to
        # the half-range are per-row maps (clipped after the shift, so that rounding can never
        # put a target outside [-h, h]).
        y = np.clip(np.asarray(y, dtype=np.float64) - mid, -half, half)
        self.__dict__.pop("_target_shift", None)
        self._store(self._fit_targets(X, [y], previewed))
        self._add_target_centre(mid)
        return self

    def _add_target_centre(self, mid: float) -> None:
        """Map the fitted intercept back to the targets' scale: ``b + m + s``, with ``m`` the
        declared range's public midpoint and ``s`` the released target shift ``h t̄`` the fit
        was centred at (``DPLinearRegression``, public once released; 0 otherwise). Sets
        ``target_centre_ = m + s``. The one home of this map (in memory and on Dask)."""
        mid += self.__dict__.pop("_target_shift", 0.0)
        self.target_centre_ = mid
        if mid:
            if not self.fit_intercept:  # pragma: no cover - refused in _target_centre_half
                raise AssertionError("a target centre needs an intercept")
            self.intercept_ = float(self.intercept_) + mid

    def _default_candidates(self) -> list[dict[str, Any]]:
        """The public default grid of a regressor (public constants, read from no data):
        the estimator's own settings, the clip halved and quartered (for
        ``DPLinearRegression`` the default is already Huber's clip, below the residual
        bound; a smaller clip lowers the Huber loss's per-row threshold further:
        a change of the loss, not of the privacy; how far to go depends on the residuals,
        hence a selection), and a ridge 10 times weaker."""
        l2 = self._L2_DEFAULT if self.l2 is None else float(self.l2)
        return [{}, {"clip_factor": 0.5}, {"clip_factor": 0.25}, {"l2": l2 / 10.0}]

    def _target_centre_half(self) -> tuple[float, float]:
        """``(m, h)``: targets are clipped to ``[m - h, m + h]`` and fitted as ``y - m``.

        ``target_range=(low, high)`` gives ``m = (low + high)/2``, ``h = (high - low)/2``;
        else ``m = 0`` and ``h = target_bound``. Public by declaration.
        """
        t = check_positive("target_bound", self.target_bound)
        if getattr(self, "target_range", None) is None:
            return 0.0, t
        try:
            low, high = (float(v) for v in self.target_range)
        except (TypeError, ValueError):
            raise TypeError("target_range must be a pair (low, high) of real numbers") from None
        if not (np.isfinite(low) and np.isfinite(high) and low < high):
            raise ValueError("target_range must be finite with low < high")
        mid = (low + high) / 2.0
        if mid and not self.fit_intercept:
            raise ValueError("target_range not centred at 0 needs fit_intercept=True")
        return mid, (high - low) / 2.0

    def _pre_release(self) -> Any:
        """The events of the releases this fit makes before its run, in order (public facts
        only): the private feature range, centre and per-feature scale when the centre is
        released (:meth:`_uses_private_conditioning`), then the model's later releases
        (:meth:`_releases_after_conditioning`: ``DPLinearRegression``'s residual scale)."""
        from noisygd.accounting.events import Composed

        events = self._conditioning_events()
        events.extend(self._releases_after_conditioning())
        return None if not events else events[0] if len(events) == 1 else Composed(
            tuple(events))

    def _uses_private_conditioning(self) -> bool:
        """Whether this fit first releases the private centre (``DPLinearRegression``'s
        class doc, "Private centre"; ``conditioning_share``): no ``feature_bounds``, an
        intercept, conditioned coordinates, a method that clips and composes with a prior
        release, not tuned, not secure; with ``"auto"`` only where the budget pays for it,
        the later releases and the fit (public facts)."""
        solver = self._solver
        return (self._share_of_conditioning() > 0.0 and self.feature_bounds is None
                and bool(self.fit_intercept) and self._conditioned() and not self.secure
                and not self.tune and "_clip_factor" not in self.__dict__
                and solver.clips_gradients and (solver.gaussian or solver.accepts_prior_event)
                and self._affords_conditioning())

    def _conditioning(self, n_features: int) -> tuple[np.ndarray | None, float, float | None]:
        r"""As for every model; with the private centre released, centred there, and without
        a declared ``intercept_scale`` the scale :math:`s = R\sqrt{\hat U_c}/\sqrt d`: the
        rule of :meth:`_default_intercept_scale` with the released trace
        :math:`\mathrm{tr}\,\Sigma = R^2\hat U_c` of the centred rows in place of its bound
        :math:`R^2` (post-processing of the release)."""
        centre, bound, scale = super()._conditioning(n_features)
        private = self.__dict__.get("_private_conditioning")
        if private is not None and self.fit_intercept and self._conditioned():
            centre = self._released_centre(private)
            if self.intercept_scale is None:
                scale = private.intercept_scale / math.sqrt(n_features)
        return centre, bound, scale

    def _pre_release_stage(self, X: Any, targets: list[Any]
                           ) -> tuple[tuple[PreRelease, ...], list[Any]] | None:
        """The private feature range, centre and per-feature scale as the fit's pre-release
        stages when the centre is released (:meth:`_conditioning_stages`, release streams
        from child 1), else None; ``DPLinearRegression`` adds its residual scale."""
        if not self._uses_private_conditioning():
            return None
        stages, raw, _ = self._conditioning_stages(X, targets, child=1)
        return tuple(stages), raw

    def predict(self, X: Any) -> np.ndarray:
        """Predicted targets."""
        return self._linear(X)[:, 0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        return tags


class DPHuberRegressor(_DPRegressor):
    __doc__ = (
        """Differentially private Huber regression (convex, Lipschitz and smooth).

    Parameters
    ----------"""
        + _COMMON_DOC
        + r"""    threshold : float or "auto", default="auto"
        Huber threshold: quadratic for residuals below it, linear above. ``"auto"`` is the
        targets' declared half-range :math:`h` (half of ``target_range``'s width, else
        ``target_bound``; 1.0 when nothing is declared): public, and scale-equivariant (the
        fit of :math:`cy` with the range :math:`c` times as wide is :math:`c` times the fit
        of :math:`y`), where a fixed 1.0 ties the loss to the targets' units. Measured on
        ``benchmarks/bench_raw_tables.py``'s raw regression tables at epsilon 1 (share of the
        non-private :math:`R^2`, 2 seeds; hourly bike rentals in [0, 1000], a credit bill in
        [0, 200 000], wine quality in [0, 10]): threshold 1 -0.42 / -0.98 / 0.07 (a median
        regression whose bounded steps cannot move the intercept to the targets' mean),
        ``"auto"`` with the private releases below 0.974 / 0.991 / 0.537.
    target_bound : float, default=1.0
        Targets are clipped to [-target_bound, target_bound] (per-row, free).
    target_range : (low, high), optional
        Public range of the targets, declared by you (e.g. a documented range; never
        computed from the data). Overrides ``target_bound``: targets are clipped to
        ``[low, high]`` and fitted centred at ``(low + high)/2``, which halves the
        residual bound of ``[0, 1]`` targets against ``target_bound=1``.
    conditioning_share : float in [0, 0.5] or "auto", default="auto"
        **Private centre**, as :class:`DPLinearRegression`'s: without ``feature_bounds``,
        with an intercept and a method that clips and composes with a prior release, not
        tuned and not secure, the fit first releases the rows' mean and mean squared norm
        (:func:`private_conditioning`, share 0.1 of :math:`\mu^2` with ``"auto"`` where
        the budget pays for it) and fits centred at the released mean. Recorded first in
        the ledger (``DPHuberRegressor/conditioning``); ``conditioning_["release"]``
        reports it; 0 turns it off (and the two releases below with it).
    feature_scale_share : float in [0, 0.5] or "auto", default="auto"
        The private per-feature scale released after the private centre, as
        :class:`DPLogisticRegression`'s (share 0.05 with ``"auto"``; 0 turns it off).
    feature_range_share : float in [0, 0.5] or "auto", default="auto"
        With the private centre released: the share of :math:`\mu^2` spent first on the
        **private feature range** (:mod:`noisygd.mechanisms.feature_range`, as for
        :class:`DPLogisticRegression`: the fit runs on :math:`g\odot x`), so raw columns
        of any scale are not crushed by the row bound; ``"auto"`` is 0.05 where the budget
        pays for it, 0 turns it off. Without these three (as before issue 19's item 4) a
        default fit on raw columns (wine quality, hourly bike rentals, a credit bill in
        their units, ``benchmarks/bench_raw_tables.py``) fell below the constant predictor.

    Attributes
    ----------
    coef_, intercept_, n_features_in_, privacy_, n_iter_, ledger_release_, conditioning_
    tuning_ : dict
        With ``tune=True`` (see ``DPLogisticRegression``).
    """
    )

    _RELEASES_FEATURE_RANGE: ClassVar[bool] = True

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        *,
        method: Any = "auto",
        threshold: float | str = "auto",
        l2: float | None = None,
        fit_intercept: bool = True,
        row_norm_bound: float = 1.0,
        target_bound: float = 1.0,
        target_range: Any = None,
        clip: float | None = None,
        max_iter: int | None = None,
        neighbouring: str = "add_remove",
        n_samples_public: int | None = None,
        method_options: dict | None = None,
        random_state: Any = None,
        ledger: Any = None,
        dataset: str | None = None,
        feature_bounds: Any = None,
        intercept_scale: float | None = None,
        tune: bool = False,
        tune_candidates: Any = None,
        tune_options: dict | None = None,
        secure: bool = False,
        conditioning_share: float | str = DEFAULT_CONDITIONING_SHARE,
        feature_scale_share: float | str = DEFAULT_FEATURE_SCALE_SHARE,
        feature_range_share: float | str = DEFAULT_FEATURE_RANGE_SHARE,
    ) -> None:
        self.conditioning_share = conditioning_share
        self.feature_scale_share = feature_scale_share
        self.feature_range_share = feature_range_share
        self.epsilon = epsilon
        self.delta = delta
        self.method = method
        self.threshold = threshold
        self.l2 = l2
        self.fit_intercept = fit_intercept
        self.row_norm_bound = row_norm_bound
        self.target_bound = target_bound
        self.target_range = target_range
        self.clip = clip
        self.max_iter = max_iter
        self.neighbouring = neighbouring
        self.n_samples_public = n_samples_public
        self.method_options = method_options
        self.random_state = random_state
        self.ledger = ledger
        self.dataset = dataset
        self.feature_bounds = feature_bounds
        self.intercept_scale = intercept_scale
        self.tune = tune
        self.tune_candidates = tune_candidates
        self.tune_options = tune_options
        self.secure = secure

    def _make_objective(self) -> Objective:
        from noisygd.objectives.glm import HuberLoss

        return HuberLoss(threshold=self._threshold(), l2=self._l2(),
                         fit_intercept=self.fit_intercept)


    def _threshold(self) -> float:
        """The Huber threshold: ``threshold``, or with ``"auto"`` the declared half-range
        :math:`h` (class doc)."""
        if isinstance(self.threshold, str):
            check_choice("threshold", self.threshold, ("auto",))
            return self._target_centre_half()[1]
        threshold = check_positive("threshold", self.threshold)
        _check_scale("threshold", threshold)
        return threshold

    def _check_common_params(self) -> None:
        """As every model's, and the Huber threshold (before any data is read)."""
        super()._check_common_params()
        if not isinstance(self.threshold, str):
            self._threshold()


class DPLinearRegression(_DPRegressor):
    __doc__ = (
        r"""Differentially private ridge regression (squared loss, L2 penalty).

    The squared loss is not Lipschitz on an unbounded domain, so privacy comes
    from clipping per-example gradients at ``clip`` for the methods that clip (the
    sensitivity is the clip's, whatever the loss).

    **Default clip (Huber's constant).** Targets lie in a declared range of half-width
    ``h`` (``target_bound``, or half of ``target_range``), rows ``x' = [x - c, s]`` have
    norm at most :math:`\sqrt{R^2 + s^2}` (see "Conditioning"). The squared loss's exact
    gradient bound for predictions in the target range is :math:`|\langle v, x'\rangle -
    y|\,\lVert x'\rVert \le 2h\sqrt{R^2 + s^2}`. The default clips below it, at

    .. math:: C = k\,h\,\sqrt{R^2 + s^2}, \qquad k = 1.345,

    where 1.345 is Huber's constant for 95% asymptotic efficiency at the normal model
    (Huber 1964; Holland and Welsch 1977), applied to the public Popoviciu bound on the
    targets' standard deviation, :math:`\operatorname{sd}(y) \le h` for any
    :math:`y \in [m - h, m + h]`. Both factors are public constants; nothing is read from
    the data. Clipping :math:`r_i x'_i` at :math:`C` is exactly the gradient of the convex
    Huber objective

    .. math:: \frac1n\sum_i \rho_{\tau_i}(\langle v, x'_i\rangle - y_i)
        + \frac{\lambda}{2}\lVert v\rVert^2, \qquad
        \rho_\tau(r) = \begin{cases} r^2/2 & |r| \le \tau\\
        \tau|r| - \tau^2/2 & |r| > \tau\end{cases}, \qquad
        \tau_i = C/\lVert x'_i\rVert \ge k h,

    so the estimator fits a Huber regression whose threshold is at least :math:`1.345 h`
    (residuals up to 1.345 times the largest possible target standard deviation are fitted
    by least squares), and NoisyGD's privacy is unchanged. A noise-limited NoisyGD run then
    lowers :math:`k` toward :math:`z_{3/4} = 0.6745`, the median of :math:`|e|/\sigma` for
    Gaussian residuals (``_sharp_clip_ratio``; the factor follows the run's public noise
    regime: docs/noisygd.md, "The sharp clip of a noise-limited run"), recorded in
    ``fit_info_["plans"][0]["plan"]["clip_rule"]``.

    **Private residual scale** (``scale_share=f``, default 0.1; the factors used are
    ``target_scale_`` and ``row_scale_``). Huber's constant is in units of the residuals'
    scale, and :math:`h` is only its worst case; :math:`R` is only the largest row norm. With
    NoisyGD and the default clip the fit first releases, with a share :math:`f` of its
    Gaussian-DP budget (:math:`\mu_s = \sqrt f\,\mu`), the noisy sums
    :math:`\sum_i (1, t_i, t_i^2, u_i) + \mathcal N(0, \sigma^2 I_4)`, :math:`t_i = (y_i - m)/h
    \in [-1, 1]` (targets clipped to the range), :math:`u_i = \min(\lVert x_i - c\rVert, R)^2/R^2
    \in [0, 1]` (the served rows' squared norms), :math:`\sigma = 2\Delta/\mu_s`: each row adds
    a vector of norm at most 2, so this is :math:`\mu_s`-GDP (Dong, Roth and Su 2022,
    Thm. 2.7), and it composes exactly with the count and the run (a pre-release stage of
    :func:`noisygd.training.fit_private`, summed on the oracle: :math:`\mu^2 = \mu_s^2 + \mu_c^2 +
    \mu_{\rm run}^2`; secure mode, the same split of the zCDP budget :math:`\rho = \mu^2/2`,
    the release being the discrete Gaussian of :func:`target_scale_noise`, at most
    :math:`\mu_s^2/2`-zCDP). From it, :func:`private_residual_scales` computes an upper
    confidence bound :math:`\hat V \le 1` of the variance :math:`V` of the :math:`t_i`
    (:math:`\hat V \ge V` with probability at least :math:`1 - 4\Phi(-2) = 0.909`) and the
    plug-in estimate :math:`\hat U \le 1` of the rows' mean squared norm :math:`U =
    \frac1n\sum_i u_i`. :math:`h\sqrt V` bounds the residual scale of the best linear fit:
    with an intercept, :math:`\frac1n\sum_i(y_i - \hat y_i)^2 \le \frac1n\sum_i(y_i - \bar
    y)^2 = h^2V` (least squares beats the constant :math:`\bar y`), and Popoviciu's :math:`h`
    is the worst case :math:`V = 1`. The default clip uses both:

    .. math:: C = k\,h\sqrt{\hat V}\,\sqrt{R^2\hat U + s^2},

    a function of the release only, so the run's sensitivity is still :math:`C`. The second
    factor is the root-mean-square norm of the rows :math:`x'` in place of their largest: a row
    of that norm is fitted by least squares up to residuals :math:`k h \sqrt{\hat V}`, and a
    row of larger norm up to a proportionally smaller residual (clipping :math:`r_i x'_i` at
    :math:`C` is a Schweppe-type GM estimator, :math:`\psi_C(r_i/w_i)\,w_i x'_i` with Huber's
    :math:`\psi_C` and weights :math:`w_i = 1/\lVert x'_i\rVert`: Hampel, Ronchetti,
    Rousseeuw and Stahel 1986, ch. 6). :math:`\hat U` is an estimate, not a bound: a row above it is
    not assumed away, it is clipped. The share :math:`f = 0.1` is a declared budget split,
    like the count's 0.01 share and the schema's ``preprocessing_share``: a public
    declaration, not a theorem's value (on the utility benchmark, shares 0.05, 0.1 and 0.2
    give mean test :math:`R^2` within 0.006 of each other in 11 of 12 cells and the same
    checks; docs/estimators.md). At :math:`f = 0.1` the run's noise grows by
    :math:`1/\sqrt{1 - f} = 1.054`; where the statistic is too noisy (small ``n`` or
    ``epsilon``) :math:`\hat V` nears 1 and the fit is the public-bound one at that cost. With
    ``ledger=`` the release is recorded as its own release of ``dataset`` before the rows and
    targets are read, once the ledger admits it composed with the rest of the fit (checked
    before ``X`` is validated, so a refused fit spends nothing); the fit's own release follows,
    and the ledger composes the two to ``privacy_.epsilon``. The model does not depend on
    whether a ledger is attached. It is skipped (``target_scale_ = row_scale_ = 1``, nothing
    spent) with ``scale_share=0``, a given ``clip``, a method other than NoisyGD, and
    ``tune=True``: a tuned fit is another procedure, a private selection whose default grid
    scales the clip itself (``clip_factor``), and its runs use the public-bound clip.

    **Intercept scale and horizon** (least squares' own choices, docs/estimators.md). Without a
    declared ``intercept_scale`` (or a ``PublicCentring``'s own), :math:`s = R/\sqrt d`, not the
    classifiers' :math:`s = R`. The planned ridge's run is noise-limited, and its stationary
    noise costs :math:`(\mathrm{tr}\,\Sigma + s^2)(\mathrm{tr}\,\Sigma^{-1} + s^{-2})` in the
    clip's and the curvature's terms (:math:`\Sigma` the rows' second moments about ``c``):
    its minimiser :math:`s^4 = \mathrm{tr}\,\Sigma/\mathrm{tr}\,\Sigma^{-1}` is at most
    :math:`(\mathrm{tr}\,\Sigma/d)^2 \le (R^2/d)^2` (Cauchy-Schwarz, :math:`\mathrm{tr}\,
    \Sigma\,\mathrm{tr}\,\Sigma^{-1} \ge d^2`), with equality for rows that fill their ball
    isotropically: the intercept weighs as one more feature. (The data's
    :math:`\mathrm{tr}\,\Sigma = R^2\hat U` would give a smaller :math:`s`, but the ridge
    penalises the centred intercept as :math:`\lambda(b'/s)^2/2`, which then biases off-centre
    targets; the public :math:`R/\sqrt d` keeps that bias small.) With the planned ridge,
    NoisyGD runs to the ridge's horizon (``method_options={"horizon": "ridge"}``,
    :mod:`noisygd.solvers.noisy_gd`) and releases the suffix average: the run
    :func:`noisygd.planning.ridge_strength` balanced its ridge for.
    ``method_options={"horizon": None}`` keeps the accelerated ``T``.

    **Released smoothness and comparator** (issue 19; :class:`~noisygd.solvers.base.
    ReleasedFacts`, ``fit_info_["released_facts"]``). With the private scales released, the
    planner reads three facts of the release (post-processing: no budget, the event
    unchanged) in place of the declared worst case: the smoothness :math:`\beta = R^2\hat U_+
    + s^2`, with :math:`\hat U_+` the release's upper confidence bound of the rows' mean
    squared norm (the data term's Hessian :math:`\frac1n\sum_i x'_ix_i'^\top` has largest
    eigenvalue at most its trace :math:`\frac1n\sum_i\lVert x'_i\rVert^2`, and clipping a
    residual only flattens the loss), where the declared :math:`\beta = R^2 + s^2` assumes
    every row on the bound; the comparator radius :math:`D_0 = h\sqrt{\hat V}\sqrt d/(R
    \sqrt{\hat U})` (the least-squares fit whose predictions have the targets' released
    spread, on rows that fill their released second moment isotropically: a heuristic, like
    the intercept scale's); and the mean curvature :math:`\bar h = (R^2\hat U + s^2)/(d+1)`,
    with which the ridge is :func:`noisygd.planning.released_ridge_strength`'s Bayes balance
    :math:`2dC^2\Delta^2/(\mu^2n^2D_0^2\bar h)`. Where the release does not resolve the scale
    (:math:`\hat U_+ > 2\hat U`, :data:`RESOLVED_SCALE_RATIO`: small ``n`` or ``epsilon``) the
    declared facts are kept. Measured (``experiments/released_facts_regression.py``, 12
    problems x 4 epsilons, 2 seeds): the plain default's mean share of the non-private
    :math:`R^2` 0.785 -> 0.841, better by more than 0.02 in 15 of 48 cells and worse in 2;
    with the declared box 0.831 -> 0.853, 9 better and 5 worse (docs/estimators.md).

    ``clip=2*h*sqrt(R**2 + s**2)`` restores the plain squared loss for residuals inside the
    range (the default before issue 10); any ``clip=`` you give is used as is. The methods
    that do not clip (``output_perturbation``, ``rrpsgd``, ``langevin``) use the
    objective's declared constants instead, and receive a clip only if you give one:
    on a ball of public ``radius`` the squared loss is Lipschitz,
    :math:`L = (\tilde B R + Y)\tilde B` with :math:`\tilde B` the augmented row bound
    and :math:`Y` = ``target_bound`` (:class:`noisygd.objectives.glm.SquaredLoss`), so
    these methods need ``radius``.

    **Default l2** (``l2=None``; the value used is ``l2_``). With NoisyGD, the planned ridge
    :func:`noisygd.planning.ridge_strength` for the squared loss's :math:`F_0 = h^2/2`
    (a heuristic balance of the ridge's bias against NoisyGD's stationary noise, from public
    quantities and the count's lower bound). With ``method="ssp"`` (AdaSSP, Wang 2018,
    docs/ssp.md) 0: the algorithm's own adaptive ridge, chosen from a private
    :math:`\lambda_{\min}`, is the regulariser. Other methods: ``1e-3``.

    Parameters
    ----------"""
        + _COMMON_DOC
        + """    target_bound : float, default=1.0
        Targets are clipped to [-target_bound, target_bound] (per-row, free).
    target_range : (low, high), optional
        Public range of the targets, declared by you (e.g. a documented range; never
        computed from the data). Overrides ``target_bound``: targets are clipped to
        ``[low, high]`` and fitted centred at ``(low + high)/2``, which halves the
        residual bound of ``[0, 1]`` targets against ``target_bound=1``.
    radius : float, optional
        Public radius of a ball the parameters are projected onto (intercept
        included). Needed by the methods that do not clip gradients.
    scale_share : float, default=0.1
        Share of the Gaussian-DP mu^2 (secure mode: of the zCDP rho; at most 0.5) spent on
        the private residual scale that sets the default clip ("Private residual scale"
        above). 0.1 is a declared budget split, a public constant like the count's 0.01
        share, not a theorem's value (0.05, 0.1 and 0.2 measured alike on the utility
        benchmark, docs/estimators.md); 0 spends nothing and keeps the public bound h.
    conditioning_share : float in [0, 0.5] or "auto", default="auto"
        **Private centre** (issue 19). Without ``feature_bounds`` (no public centre), with
        an intercept and a method that clips and composes with a prior release, not tuned
        and not secure, the fit first releases :class:`DPLogisticRegression`'s private
        conditioning (:func:`private_conditioning`: the rows' mean and mean squared norm,
        one Gaussian release at :math:`\\sqrt f\\,\\mu`) and fits centred at the released
        mean :math:`c`, with intercept scale :math:`R\\sqrt{\\hat U_c}/\\sqrt d` (the public
        rule with the released trace); the residual scale is then released in those
        coordinates. Recorded first in the ledger (``DPLinearRegression/conditioning``),
        composed first into ``privacy_``; ``conditioning_["release"]`` reports it. ``"auto"``
        is :data:`CONDITIONING_SHARE` (0.1) where the budget pays for it, the residual scale's
        release and the fit together, else 0; 0 turns it off. Why: uncentred rows make the intercept
        and the mean row nearly collinear, so a noisy run with few steps leaves the prediction's
        mean where the coefficients' noise puts it; on seven of ``bench_conditioning``'s off-centre
        problems (500 x 5, 500 x 20, 2000 x 5/20/100, 10 000 x 5/100; epsilon 0.5, 1, 8; 2 seeds)
        the centre raised DP-FTRL's mean share of the non-private R^2 from -10.6..0.88 to
        -0.12..0.998, and the default's at epsilon 1 from 0.02..1.00 to 0.45..1.00 (no cell lower by
        more than 0.01; 2000 x 100 at epsilon 8: 0.798 -> 0.789).
    feature_scale_share : float in [0, 0.5] or "auto", default="auto"
        The private per-feature scale released after the private centre, as
        :class:`DPLogisticRegression`'s (share 0.05 of :math:`\\mu^2` with ``"auto"``; 0
        turns it off); the residual scale is then released in the rescaled coordinates.
    feature_range_share : float in [0, 0.5] or "auto", default="auto"
        With the private centre released (rows in memory or Dask): the share of
        :math:`\\mu^2` spent first on the **private feature range**, as for
        :class:`DPLogisticRegression` (:mod:`noisygd.mechanisms.feature_range`: the fit runs
        on :math:`g\\odot x`, :math:`g_j = R/(m_j\\sqrt{\bar k})` from each feature's released
        robust maximum); ``"auto"`` is 0.05 where the budget pays for it, 0 turns it off.

    Attributes
    ----------
    coef_, intercept_, n_features_in_, privacy_, n_iter_, ledger_release_, conditioning_
    target_scale_ : float
        sqrt(V_hat) in (0, 1], the released factor of the default clip (1.0 when the
        private scales were not used).
    row_scale_ : float
        sqrt(U_hat) in (0, 1], the released root-mean-square row norm in units of the row
        bound (1.0 when the private scales were not used).
    tuning_ : dict
        With ``tune=True`` (see ``DPLogisticRegression``).
    """
    )

    _L2_DEFAULT = 1e-3
    #: Confidence multiplier ``z`` of the private scale's upper bound (class doc).
    _SCALE_Z = 2.0
    #: ``l2=None`` with NoisyGD: the planned ridge :func:`noisygd.planning.ridge_strength`
    #: (bias against a comparator of norm :math:`\sqrt{2nF_0}`, :math:`F_0 = h^2/2`, balanced
    #: with NoisyGD's stationary noise), as for ``DPLogisticRegression``; with ``"ssp"``
    #: none (AdaSSP's own adaptive ridge, :meth:`_l2`); other methods: ``_L2_DEFAULT``.
    _PLANS_RIDGE: ClassVar[bool] = True

    _RELEASES_FEATURE_RANGE: ClassVar[bool] = True

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        *,
        method: Any = "auto",
        l2: float | None = None,
        fit_intercept: bool = True,
        row_norm_bound: float = 1.0,
        target_bound: float = 1.0,
        target_range: Any = None,
        radius: float | None = None,
        clip: float | None = None,
        max_iter: int | None = None,
        neighbouring: str = "add_remove",
        n_samples_public: int | None = None,
        method_options: dict | None = None,
        random_state: Any = None,
        ledger: Any = None,
        dataset: str | None = None,
        feature_bounds: Any = None,
        intercept_scale: float | None = None,
        tune: bool = False,
        tune_candidates: Any = None,
        tune_options: dict | None = None,
        secure: bool = False,
        scale_share: float = DEFAULT_SCALE_SHARE,
        conditioning_share: float | str = DEFAULT_CONDITIONING_SHARE,
        feature_scale_share: float | str = DEFAULT_FEATURE_SCALE_SHARE,
        feature_range_share: float | str = DEFAULT_FEATURE_RANGE_SHARE,
    ) -> None:
        self.conditioning_share = conditioning_share
        self.feature_scale_share = feature_scale_share
        self.feature_range_share = feature_range_share
        self.epsilon = epsilon
        self.delta = delta
        self.method = method
        self.l2 = l2
        self.fit_intercept = fit_intercept
        self.row_norm_bound = row_norm_bound
        self.target_bound = target_bound
        self.target_range = target_range
        self.scale_share = scale_share
        self.radius = radius
        self.clip = clip
        self.max_iter = max_iter
        self.neighbouring = neighbouring
        self.n_samples_public = n_samples_public
        self.method_options = method_options
        self.random_state = random_state
        self.ledger = ledger
        self.dataset = dataset
        self.feature_bounds = feature_bounds
        self.intercept_scale = intercept_scale
        self.tune = tune
        self.tune_candidates = tune_candidates
        self.tune_options = tune_options
        self.secure = secure

    def _make_objective(self) -> Objective:
        from noisygd.objectives.glm import SquaredLoss

        return SquaredLoss(l2=self._l2(), fit_intercept=self.fit_intercept, radius=self.radius,
                           target_bound=self._target_centre_half()[1])

    def _check_common_params(self) -> None:
        super()._check_common_params()
        if check_real("scale_share", self.scale_share) != 0.0:  # 0 spends nothing
            if check_fraction("scale_share", self.scale_share) > 0.5:
                raise ValueError("scale_share must be in [0, 0.5] (a share of the budget "
                                 f"spent before training), got {self.scale_share!r}")
            self._check_share_pays("scale_share", float(self.scale_share))
        if self.radius is not None:
            check_positive("radius", self.radius)
            _check_scale("radius", self.radius)
        elif not self._solver.clips_gradients and not self._uses_ssp():
            relation = ("" if Neighbouring(self.neighbouring) in self._solver.relations else
                        f" and neighbouring={self._solver.relations[0].value!r} (its "
                        "theorem's relation)")
            raise ValueError(
                f"method {self._solver.name!r} does not clip gradients, so it needs the "
                "squared loss's Lipschitz constant, which exists only on a ball: pass "
                f"radius=R (a public bound on the parameters' norm){relation}, or use a "
                "method that clips")

    #: With the planned ridge, run to its horizon (class doc, "Intercept scale and horizon";
    #: :mod:`noisygd.solvers.noisy_gd`, "The ridge's horizon").
    _RUNS_TO_RIDGE_HORIZON: ClassVar[bool] = True

    @classmethod
    def _sharp_clip_ratio(cls) -> float | None:
        r""":math:`s = z_{3/4}/k` = 0.6745 / 1.345 = 0.5015: the sharp clip of a noise-limited
        run takes the default clip :math:`k\,\hat\sigma_e\,\tilde B` (Huber's threshold
        :math:`k` = :data:`HUBER_K` times the residual scale) to
        :math:`z_{3/4}\hat\sigma_e\tilde B`, :math:`z_{3/4}` the median of :math:`|e|/\sigma`
        for Gaussian residuals: the clip at the median residual, adaptive clipping's default
        target quantile (Andrew, Thakkar, McMahan and Ramaswamy, NeurIPS 2021), where the
        run's noise outweighs the bias (docs/noisygd.md, "The sharp clip of a noise-limited
        run")."""
        from statistics import NormalDist

        return NormalDist().inv_cdf(0.75) / HUBER_K

    #: Passed to NoisyGD (and "auto") and NoisySGD only: with DP-FTRL the rule was mixed on
    #: least squares (``experiments/results/sharp_clip_dp_ftrl.md``: diabetes fell below the
    #: constant predictor), and the dynamic schedules were measured on classifiers only.
    _SHARP_CLIP_LOSS: ClassVar[str | None] = "squared"

    @staticmethod
    def _default_intercept_scale(bound: float, n_features: int) -> float:
        r""":math:`s = R/\sqrt d` (class doc, "Intercept scale and horizon"): the minimiser of the
        stationary noise bound :math:`(\mathrm{tr}\,\Sigma + s^2)(\mathrm{tr}\,\Sigma^{-1} +
        s^{-2})` for rows that fill their ball isotropically (:math:`\mathrm{tr}\,\Sigma =
        R^2`), an upper bound of the minimiser for any other rows: the intercept as one more
        feature of the box (as a ``PublicCentring`` makes it one more block). Public: it does
        not depend on the private scales."""
        return bound / math.sqrt(n_features)

    def _uses_ssp(self) -> bool:
        """Whether the fit runs AdaSSP (:mod:`noisygd.solvers.ssp`)."""
        from noisygd.solvers.ssp import SSPSolver

        return isinstance(getattr(self, "_solver", None), SSPSolver)

    def _l2(self) -> float:
        """The ridge of this fit; ``l2=None`` with ``method="ssp"`` is 0: AdaSSP is Wang's
        (2018) algorithm for least squares, whose adaptive ridge is the regulariser."""
        if self.l2 is None and self._uses_ssp():
            return 0.0
        return super()._l2()

    def _conditioned(self) -> bool:
        r"""As for every linear model, and also with ``method="ssp"``: its sensitivity is the
        declared bounds of the rows *served*, which the oracle maps into the conditioned
        domain :math:`\lVert x - c\rVert \le R` with the intercept column ``s``."""
        return super()._conditioned() or (
            bool(self.fit_intercept) and self._uses_ssp() and self.radius is None)

    def _residual_bound(self, n_features: int) -> float:
        r"""The squared loss's exact per-example gradient bound for predictions inside the
        declared target range: :math:`2h\,\sqrt{R^2 + s^2}` (class doc). ``clip=`` set to
        this value fits the plain squared loss (the default before the Huber clip)."""
        _, bound, scale = self._conditioning(n_features)
        return residual_bound(self._target_centre_half()[1], bound, scale)

    def _effective_clip(self, n_features: int) -> float | None:
        r"""The user's clip, else Huber's clip (class doc, "Default clip"):
        :math:`k\,h\,\sqrt{R^2 + s^2}` with :math:`k` = :data:`HUBER_K` = 1.345; with the
        private scales released, :math:`k\,h\sqrt{\hat V}\,\sqrt{R^2\hat U + s^2}`."""
        if self.clip is not None:
            return self.clip
        _, bound, scale = self._conditioning(n_features)
        scales = self.__dict__.get("_scales")
        if scales is None:
            return huber_clip(self._target_centre_half()[1], bound, scale)
        return scales.target_scale * huber_clip(self._target_centre_half()[1],
                                                bound * scales.row_scale, scale)

    def _uses_private_scale(self) -> bool:
        """Whether this fit releases the private residual scale (class doc): a method that
        clips and composes with a prior release (NoisyGD, DP-FTRL, NoisySGD), the default
        clip, ``scale_share > 0``, not tuned (a run of a private selection carries
        ``_clip_factor``). With or without a ledger, secure or not: the model does not
        depend on whether a ledger is attached."""
        solver = self._solver
        return (float(self.scale_share) > 0.0 and self.clip is None
                and solver.clips_gradients and (solver.gaussian or solver.accepts_prior_event)
                and not self.tune and "_clip_factor" not in self.__dict__)

    def _scale_event(self, rng: Any) -> tuple[float, Any]:
        r"""``(sigma, event)`` of the private scale's release, from public facts only
        (:math:`\sigma` the noise of each released sum, :func:`target_scale_noise`).

        :math:`\mu_s = \sqrt f\,\mu` with :math:`\mu` the fit's whole Gaussian-DP budget,
        :func:`~noisygd.accounting.calibration.calibrate_mu` ``(epsilon, delta)``; secure mode
        (``rng`` a :class:`~noisygd.mechanisms.secure.SecureRandom`): :math:`\sqrt{2\rho}`
        with :math:`\rho` = :func:`~noisygd.mechanisms.noise.zcdp_rho_for` ``(epsilon,
        delta)``, the zCDP budget that :func:`noisygd.training.fit_private` splits. The event
        is ``Gaussian(sigma/2, Delta)`` (secure: its
        :class:`~noisygd.accounting.events.DiscreteGaussianNoise`, at most
        :math:`\mu_s^2/2`-zCDP; :func:`target_scale_noise`), so ``fit_private``'s split
        :math:`\mu^2 \ge \mu_s^2 + \mu_c^2 + \mu_{\rm run}^2` still meets the budget.
        """
        from noisygd.accounting.events import Gaussian

        rel = Neighbouring(self.neighbouring)
        if is_secure(rng):
            from noisygd.mechanisms.noise import zcdp_rho_for

            mu = math.sqrt(2.0 * zcdp_rho_for(float(self.epsilon), float(self.delta)))
        else:
            from noisygd.accounting.calibration import calibrate_mu

            mu = calibrate_mu(float(self.epsilon), float(self.delta))
        mu_s = math.sqrt(float(self.scale_share)) * mu
        sens = rel.clipped_sum_sensitivity
        sigma, inflation = target_scale_noise(mu=mu_s, sensitivity=sens, rng=rng)
        event = secure_event(Gaussian(sigma / SCALE_SUMS ** 0.5, sens, rel), rng, inflation)
        return sigma, event

    def _releases_after_conditioning(self) -> tuple[Any, ...]:
        """The private scale's event when it is released (after the centre's)."""
        if not self._uses_private_scale():
            return ()
        from noisygd.mechanisms.secure import SecureRandom

        return (self._scale_event(SecureRandom() if self.secure else None)[1],)

    def _pre_release_stage(self, X: Any, targets: list[Any]
                           ) -> tuple[tuple[PreRelease, ...], list[Any]] | None:
        r"""The releases made before the run as pre-release stages of the fit, in order:
        the private centre when it applies (:meth:`_uses_private_conditioning`,
        :meth:`_conditioning_stage`), then the private residual scale (class doc) with its
        sums :math:`\sum_i(1, t_i, t_i^2, u_i)` from the oracle the fit's runs would read
        (the served rows, centred at the released centre when there is one, and the clipped
        targets), then that oracle with the targets shifted to the released mean and the
        clip at the released scales. Each stage reads the first oracle of the previous
        one's post-processing (:func:`~noisygd.training.fit_private`)."""
        stages: list[PreRelease] = []
        if self._uses_private_conditioning():  # its own streams, apart from the scale's
            stages, raw, built = self._conditioning_stages(X, targets, child=1)
        if not self._uses_private_scale():
            return (tuple(stages), raw) if stages else None
        if self.secure:
            from noisygd.mechanisms.secure import SecureRandom

            rng: Any = SecureRandom()
        else:
            rng = self._release_rng(self.random_state)
        sigma, event = self._scale_event(rng)
        if not stages:  # the scale reads the fit's own oracles
            built = raw = self._oracles(X, targets)
        h = self._target_centre_half()[1]

        def then(noisy: np.ndarray) -> PreparedFit:
            self._scales = residual_scales_from_release(noisy, sigma, self._SCALE_Z)
            runs = list(built)  # the oracles this stage read (the centre's, if released)
            if self.fit_intercept:  # start at the released mean (class doc, "Target centre")
                self._target_shift = h * self._scales.target_mean
                runs = [built[0].with_targets(np.clip(t - self._target_shift, -h, h))
                        for t in targets]
            return PreparedFit(runs, self._clip_for_method(X.shape[1]),
                               self._released_facts(X.shape[1]))

        stages.append(PreRelease("target_scale", event, SCALE_SUM_NAMES, sigma, rng, then,
                                 target_half_range=h,
                                 description="(1, t, t^2, u), t = clip((y - m)/h, -1, 1), "
                                             "u = min(||x - c||^2/R^2, 1)"))
        return tuple(stages), raw

    def _released_facts(self, n_features: int) -> ReleasedFacts | None:
        r"""What the private scales tell the planner (class doc, "Released smoothness and
        comparator"; post-processing of the release): the squared loss's smoothness at the
        rows' released mean squared norm, :math:`\beta = R^2\hat U_+ + s^2`, the comparator
        radius :math:`D_0 = h\sqrt{\hat V}\sqrt d/(R\sqrt{\hat U})` and the mean curvature
        :math:`(R^2\hat U + s^2)/d'`; None (the declared facts) where the release does not
        resolve the rows' scale, :math:`\hat U_+ > 2\hat U` (:data:`RESOLVED_SCALE_RATIO`)."""
        scales = self._scales
        if scales.row_scale_high ** 2 > RESOLVED_SCALE_RATIO * scales.row_scale ** 2:
            return None
        _, bound, s = self._conditioning(n_features)
        root, scale = bound * scales.row_scale, s or 0.0
        mean_sq = root * root + scale * scale  # float products: inf, never an exception
        if not (math.isfinite(mean_sq) and mean_sq > 0.0 and root > 0.0):
            return None  # extreme declared bounds (1e300, 1e-300): the declared facts
        _, beta = self._make_objective().data_constants(
            math.hypot(bound * scales.row_scale_high, scale))
        d0 = self._target_centre_half()[1] * scales.target_scale * math.sqrt(n_features) / root
        return ReleasedFacts(
            smoothness=beta, comparator_radius=d0,
            mean_curvature=mean_sq / (n_features + int(bool(self.fit_intercept))),
            source="DPLinearRegression's private scales: smoothness R^2 U_high + s^2 (trace "
                   "bound at the rows' released mean squared norm, upper confidence), "
                   "comparator radius h sqrt(V) sqrt(d) / (R sqrt(U)) (a heuristic: the "
                   "least-squares fit of the targets' spread on isotropic rows)")

    def _fit_targets(self, X: Any, targets: list[Any], previewed: Any = None) -> Any:
        """The fit, with the private residual scale (class doc) released first when it
        applies (:meth:`_pre_release_stage`); sets ``target_scale_`` and ``row_scale_``."""
        self.__dict__.pop("_scales", None)
        self.target_scale_, self.row_scale_ = 1.0, 1.0
        try:
            fit = super()._fit_targets(X, targets, previewed)
            scales = self.__dict__.get("_scales")
        finally:
            self.__dict__.pop("_scales", None)
        if scales is not None:
            self.target_scale_, self.row_scale_ = scales.target_scale, scales.row_scale
        return fit


def _seed_sequence(random_state: Any) -> np.random.SeedSequence:
    """The root :class:`~numpy.random.SeedSequence` of ``default_rng(random_state)`` for a
    seed that is not a generator (None: fresh entropy), as a new object (a given
    ``SeedSequence`` is copied, so spawning from the result never changes it)."""
    if isinstance(random_state, np.random.SeedSequence):
        return np.random.SeedSequence(random_state.entropy, spawn_key=random_state.spawn_key,
                                      pool_size=random_state.pool_size)
    if random_state is None or isinstance(random_state, int | np.integer):
        return np.random.SeedSequence(None if random_state is None else int(random_state))
    return np.random.SeedSequence(random_state)  # a list or array of ints, as default_rng


@dataclasses.dataclass(frozen=True)
class PrivateConditioning:
    r"""What :func:`private_conditioning` computes from its release (post-processing).

    Attributes
    ----------
    centre : ndarray
        :math:`c = R\hat c`, the rows' released mean (feature units).
    row_scale : float
        :math:`\sqrt{\hat U_c} \in (0, 1]`: the rows' root-mean-square distance to
        :math:`c`, in units of ``R``.
    intercept_scale : float
        :math:`s = R\sqrt{\hat U_c}`.
    clip : float
        :math:`R\sqrt{2\hat U_c}`, the root-mean-square norm of the rows :math:`[x - c, s]`.
    noise_multiplier : float
        :math:`\sigma/\sqrt3 = \Delta/\mu`: the release is ``Gaussian(noise_multiplier,
        Delta)``.
    count : float
        :math:`N = \max(\tilde N, 1)`, the released count (the per-feature scale's
        post-processing divides by it).
    """

    centre: np.ndarray
    row_scale: float
    intercept_scale: float
    clip: float
    noise_multiplier: float
    count: float = 1.0


def private_conditioning(X: Any, row_norm_bound: float, *, mu: float, sensitivity: float,
                         rng: np.random.Generator) -> PrivateConditioning:
    r""":class:`DPLogisticRegression`'s private conditioning (class doc): a centre and a row
    scale from one Gaussian release.

    With :math:`\tilde x_i = x_i\min(1, R/\lVert x_i\rVert)` and :math:`u_i = \lVert\tilde
    x_i\rVert^2/R^2`, releases

    .. math:: (\tilde S_x, \tilde S_u, \tilde N) = \sum_i (\tilde x_i/R,\ u_i,\ 1)
        + \mathcal N(0, \sigma^2 I_{p+2}), \qquad \sigma = \sqrt3\,\Delta/\mu:

    each row adds a vector of norm at most :math:`\sqrt3`, so it is exactly
    :math:`\mu`-GDP (Dong, Roth and Su 2022, Thm. 2.7). With :math:`N = \max(\tilde N, 1)`,
    :math:`\hat c = \tilde S_x/N` and

    .. math:: \hat U_c = \min\Big(1,\ \max\Big(\frac{\tilde S_u}N - \lVert\hat c\rVert^2
        + \frac{2p\sigma^2}{N^2},\ \frac\sigma N\Big)\Big),

    the plug-in estimate of :math:`\frac1n\sum_i\lVert\tilde x_i/R - \hat c\rVert^2 =
    (\overline{u} - \lVert\bar x\rVert^2) + \lVert\bar x - \hat c\rVert^2` (``\lVert\hat
    c\rVert^2`` overestimates :math:`\lVert\bar x\rVert^2` by :math:`p\sigma^2/N^2` in
    expectation, and :math:`\hat c` misses :math:`\bar x` by as much), floored at the
    release's resolution. Both are post-processing of the release.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n, p)
    row_norm_bound : float
        :math:`R`.
    mu, sensitivity : float
        Gaussian-DP share of the release and the relation's :math:`\Delta`.
    rng : numpy.random.Generator

    Returns
    -------
    PrivateConditioning
    """
    from noisygd.oracles.rows import row_norms

    R = check_positive("row_norm_bound", row_norm_bound)
    sigma = math.sqrt(3.0) * check_positive("sensitivity", sensitivity) / check_positive(
        "mu", mu)
    norms = row_norms(X)
    factor = np.minimum(1.0, R / np.maximum(norms, np.finfo(float).tiny))
    weights = factor / R
    s_x = np.asarray(X.T @ weights if sp.issparse(X) else weights @ X, dtype=np.float64)
    s_x = np.ravel(s_x)
    u = np.minimum(norms / R, 1.0) ** 2  # ||x~||^2/R^2 (1 for a row whose norm overflows)
    noisy = add_gaussian_noise(np.concatenate([s_x, [float(u.sum()), float(X.shape[0])]]),
                               sigma, rng)
    return conditioning_from_release(noisy, R, sigma)


def conditioning_from_release(noisy: np.ndarray, row_norm_bound: float, sigma: float
                              ) -> PrivateConditioning:
    r"""The post-processing of :func:`private_conditioning`: from the released
    :math:`(\tilde S_x, \tilde S_u, \tilde N)` (``noisy``, length :math:`p + 2`) and its
    noise :math:`\sigma`, the centre :math:`R\hat c` and the row scale
    :math:`\sqrt{\hat U_c}` (formulas there). Public: a function of the release only.

    Raises
    ------
    ValueError
        If ``noisy`` is not a one-dimensional array of at least two finite numbers (a
        release of :math:`p \ge 0` features), or ``row_norm_bound`` or ``sigma`` is not
        positive and finite.
    """
    R = check_positive("row_norm_bound", row_norm_bound)
    sigma = check_positive("sigma", sigma)
    noisy = np.asarray(noisy, dtype=np.float64)
    if noisy.ndim != 1 or noisy.size < 2 or not np.all(np.isfinite(noisy)):
        raise ValueError("the release must be p + 2 >= 2 finite numbers (S_x, S_u, N), got "
                         f"{noisy.size} of shape {noisy.shape}, or not all finite")
    p = noisy.size - 2
    n_t = max(float(noisy[-1]), 1.0)
    c_hat = noisy[:p] / n_t
    u_hat = float(noisy[p]) / n_t - float(c_hat @ c_hat) + 2.0 * p * sigma * sigma / n_t**2
    u_hat = min(1.0, max(u_hat, sigma / n_t))
    root = math.sqrt(u_hat)
    return PrivateConditioning(R * c_hat, root, R * root, R * math.sqrt(2.0 * u_hat),
                               sigma / math.sqrt(3.0), n_t)


@dataclasses.dataclass(frozen=True)
class PrivateFeatureScale:
    r"""What :func:`feature_scale_from_release` computes (post-processing of the release).

    Attributes
    ----------
    scale : ndarray of shape (d,)
        :math:`f_j = \bar m/m_j`: the column weights of the fit's rows
        :math:`[f\odot(x - c), s]` (:class:`~noisygd.objectives.centred.CentredGLM`).
    resolution : float
        :math:`\lambda = z\sigma/N`, the floor added to every :math:`m_j` (units of
        :math:`R`).
    spread : float
        :math:`\max_j f_j/\min_j f_j` (1: the release could not tell the features apart).
    noise_std : float
        :math:`\sigma`, the noise of each released sum (:math:`\Delta/\mu_f`).
    shrinkage : float
        :math:`B \in [0, 1]`, how far the release's per-feature spreads were pulled to their
        mean (1: all the way, ``scale`` all ones).
    """

    scale: np.ndarray
    resolution: float
    spread: float
    noise_std: float
    shrinkage: float = 0.0


def feature_scale_from_release(noisy: np.ndarray, count: float, sigma: float,
                               z: float = FEATURE_SCALE_Z,
                               cap: float = FEATURE_SCALE_CAP) -> PrivateFeatureScale:
    r"""The private per-feature scale from its release (post-processing; docs/estimators.md,
    "Private per-feature scale").

    ``noisy`` is :math:`\tilde Q = \sum_i |a_i| + \mathcal N(0, \sigma^2 I_d)`
    (:math:`a_i` the served rows about the released centre, in units of ``R``; entrywise
    absolute values) and ``count`` the conditioning's released :math:`N`. The per-feature
    means :math:`q_j = \tilde Q_j/N` carry noise of sd :math:`\tau = \sigma/N`. They are
    shrunk toward their mean :math:`\bar q` by the positive-part James-Stein factor with a
    doubled constant (a significance gate: noise alone, :math:`E\,S = (d - 1)\tau^2`,
    shrinks them all the way),

    .. math:: q'_j = \bar q + (1 - B)(q_j - \bar q), \qquad
        B = \min\Big(1, \frac{2d\tau^2}{S}\Big), \quad S = \sum_j(q_j - \bar q)^2,

    floored at the resolution :math:`\lambda = z\tau`, raised to at least :math:`1/\kappa`
    of their root-mean-square (``cap`` :math:`\kappa`, :data:`FEATURE_SCALE_CAP`: no column
    is scaled up more than :math:`\kappa` times, so a rare one-hot level does not become a
    row's whole norm), and turned into weights that give every rescaled feature the same
    spread :math:`\bar m`:

    .. math:: m_j = \max\big(\max(q'_j, 0) + \lambda,\ \bar m_0/\kappa\big), \qquad
        f_j = \bar m/m_j, \quad \bar m = \Big(\frac1d\sum_j m_j^2\Big)^{1/2}

    (:math:`\bar m_0` the root-mean-square before the cap; the rescaled rows'
    :math:`\sum_j (f_jm_j)^2 = \sum_j m_j^2`, that of the rows). Where the release cannot
    tell the features apart, :math:`f = 1` exactly (:math:`B = 1`) or nearly: the fit is the
    unscaled one. Always :math:`f_j \le \min(\bar m/\lambda, \kappa\bar m/\bar m_0)`.
    """
    noisy = np.asarray(noisy, dtype=np.float64)
    n = max(float(count), 1.0)
    tau = check_positive("sigma", sigma) / n
    lam = check_positive("z", z) * tau
    q = noisy / n
    spread = float(np.sum((q - q.mean()) ** 2))
    shrink = 1.0 if spread <= 0.0 else min(1.0, 2.0 * q.size * tau * tau / spread)
    q = q.mean() + (1.0 - shrink) * (q - q.mean())
    m = np.maximum(q, 0.0) + lam
    m = np.maximum(m, math.sqrt(float(np.mean(m * m))) / check_positive("cap", cap))
    f = math.sqrt(float(np.mean(m * m))) / m
    return PrivateFeatureScale(f, lam, float(f.max() / f.min()), float(sigma), shrink)


def _n_columns(X: Any) -> int | None:
    """The number of columns of ``X`` from its shape (metadata, public), else None."""
    shape = getattr(X, "shape", None)
    if shape is None:  # a list or an array-like: its shape as validate_data will see it
        try:
            shape = np.asarray(X).shape
        except Exception:  # a ragged or odd input: validate_data refuses it later
            return None
    if len(shape) != 2:
        return None
    try:
        return int(shape[1])
    except (TypeError, ValueError):
        return None


def residual_bound(half_range: float, row_norm_bound: float, intercept_scale: float | None
                   ) -> float:
    r""":math:`2h\sqrt{R^2 + s^2}`: the squared loss's exact per-example gradient bound for
    predictions and targets inside a range of half-width :math:`h` (rows of norm :math:`\le R`,
    intercept column :math:`s`, none when None)."""
    return 2.0 * half_range * float(np.hypot(row_norm_bound, intercept_scale or 0.0))


#: ``DPLinearRegression`` plans with its private scales' facts (smoothness, comparator,
#: curvature: :class:`~noisygd.solvers.base.ReleasedFacts`) only where the upper confidence
#: bound of the rows' mean squared norm is within this factor of the plug-in estimate (the
#: release resolves the scale to a factor of 2); else with the declared worst case.
RESOLVED_SCALE_RATIO = 2.0


#: Number of sums :func:`private_residual_scales` releases, :math:`\sum_i(1, t_i, t_i^2, u_i)`.
SCALE_SUMS = 4


@dataclasses.dataclass(frozen=True)
class ResidualScales:
    r"""What :func:`private_residual_scales` computes from its release (post-processing).

    Attributes
    ----------
    target_scale : float
        :math:`\sqrt{\hat V} \in (0, 1]`, the upper confidence bound of the targets' standard
        deviation in units of the half-range ``h``.
    row_scale : float
        :math:`\sqrt{\hat U} \in (0, 1]`, the estimate of the rows' root-mean-square norm
        :math:`\sqrt{\frac1n\sum_i\lVert x_i - c\rVert^2}` in units of the row bound ``R``.
    noise_multiplier : float
        :math:`\sigma/2 = \Delta/\mu`: the release is the event
        ``Gaussian(noise_multiplier, Delta)``.
    """

    target_scale: float
    row_scale: float
    noise_multiplier: float
    #: :math:`\bar t = \mathrm{clip}(\tilde S_1/\max(\tilde N, 1), -1, 1)`, the plug-in mean
    #: of the targets in units of ``h`` (the fit's intercept start; class doc).
    target_mean: float = 0.0
    #: :math:`\sqrt{\hat U_+} \in (0, 1]`, the upper confidence bound of the rows'
    #: root-mean-square norm (units of ``R``): :math:`\hat U_+ = \min(1, (\max(\tilde S_u,
    #: 0) + z\sigma)/\max(\tilde N - z\sigma, 1))`, at least :math:`U` with probability at
    #: least :math:`1 - 2\Phi(-z)` (0.954 at :math:`z = 2`): the released smoothness'
    #: factor (class doc, "Released smoothness and comparator").
    row_scale_high: float = 1.0


def private_residual_scales(targets: np.ndarray, row_fractions: np.ndarray, half_range: float,
                            *, mu: float, sensitivity: float, rng: Any, z: float = 2.0
                            ) -> ResidualScales:
    r""":class:`DPLinearRegression`'s private scales of its default clip (class doc, "Private
    residual scale"): a bound on the targets' standard deviation and an estimate of the rows'
    root-mean-square norm, from one Gaussian release.

    With :math:`t_i = \mathrm{clip}(y_i/h, -1, 1)` (``targets`` centred at the range's
    midpoint, :math:`h` = ``half_range``) and :math:`u_i = \mathrm{clip}(\lVert x_i - c
    \rVert^2/R^2, 0, 1)` (``row_fractions``: the squared norms of the centred rows the fit
    serves, in units of the row bound), releases

    .. math:: (\tilde N, \tilde S_1, \tilde S_2, \tilde S_u) = \sum_i (1, t_i, t_i^2, u_i)
        + \mathcal N(0, \sigma^2 I_4), \qquad \sigma = 2\Delta/\mu:

    each row adds a vector of norm at most :math:`\sqrt{1 + 1 + 1 + 1} = 2`
    (:math:`\Delta` = ``sensitivity``, the relation's ``clipped_sum_sensitivity``), so it is
    exactly :math:`\mu`-GDP (Dong, Roth and Su 2022, Thm. 2.7), the event
    ``Gaussian(noise_multiplier, sensitivity)`` with ``noise_multiplier`` = :math:`\sigma/2`.
    With :math:`N_\pm = \max(\tilde N \pm z\sigma, 1)`,

    .. math:: \hat V = \min\Big(1,\ \max\Big(\frac{(\tilde S_2)_+ + z\sigma}{N_-}
        - \Big(\frac{(|\tilde S_1| - z\sigma)_+}{N_+}\Big)^2,\ \frac{z\sigma}{N_-}\Big)\Big),
        \qquad
        \hat U = \min\Big(1,\ \frac{\max(\tilde S_u, \sigma)}{\max(\tilde N, 1)}\Big).

    :math:`\hat V` is an upper confidence bound of the variance :math:`V = \frac1n\sum_i
    t_i^2 - (\frac1n\sum_i t_i)^2 \le 1` (Popoviciu): when the four one-sided bounds
    :math:`\tilde N - z\sigma \le n \le \tilde N + z\sigma`, :math:`\tilde S_2 + z\sigma \ge
    S_2`, :math:`|\tilde S_1| - z\sigma \le |S_1|` hold (probability :math:`\ge 1 - 4\Phi(-z)
    = 0.909` for :math:`z = 2`), :math:`\hat V \ge V`. :math:`\hat U` is the plug-in (ratio)
    estimate of :math:`U = \frac1n\sum_i u_i`, floored at the release's resolution
    :math:`\sigma/\tilde N`: a scale, not a bound (class doc: the clip treats it as the
    typical row's norm, and a row above it is clipped at a lower residual). Both are
    post-processing of the release.

    The noise goes through :func:`noisygd.mechanisms.noise.add_gaussian_noise`: with a
    :class:`numpy.random.Generator` the four draws ``sigma * rng.standard_normal(4)``; with a
    :class:`~noisygd.mechanisms.secure.SecureRandom` (secure mode) the sums rounded to the grid
    :math:`\gamma` plus discrete Gaussian noise, with :math:`\sigma` from
    :func:`target_scale_noise` (its event is
    :class:`~noisygd.accounting.events.DiscreteGaussianNoise`, at most :math:`\mu^2/2`-zCDP).
    The confidence statement then holds up to the grid: the rounding moves each sum by at
    most :math:`\gamma/2 \le 2^{-b-1}\sigma/2` (``b`` = ``grid_bits``), and the discrete
    Gaussian's tails on a grid that fine are the continuous ones to that precision (utility
    only; the privacy is the event's).

    Parameters
    ----------
    targets : ndarray of shape (n,)
        Targets centred at the declared range's midpoint.
    row_fractions : ndarray of shape (n,)
        :math:`\lVert x_i - c\rVert^2/R^2` (clipped to [0, 1] here).
    half_range : float
        :math:`h > 0`.
    mu, sensitivity : float
        Gaussian-DP share of the release and the relation's :math:`\Delta`.
    rng : numpy.random.Generator or SecureRandom
    z : float, default=2.0
        Confidence multiplier of :math:`\hat V`.

    Returns
    -------
    ResidualScales
    """
    h = check_positive("half_range", half_range)
    sigma, _ = target_scale_noise(mu=mu, sensitivity=sensitivity, rng=rng)
    t = np.clip(np.asarray(targets, dtype=np.float64) / h, -1.0, 1.0)
    u = np.clip(np.asarray(row_fractions, dtype=np.float64), 0.0, 1.0)
    if u.shape != t.shape:
        raise ValueError(f"row_fractions must have the targets' shape {t.shape}, got {u.shape}")
    noisy = add_gaussian_noise(
        np.array([float(t.size), float(t.sum()), float(np.dot(t, t)), float(u.sum())]),
        sigma, rng)
    return residual_scales_from_release(noisy, sigma, z)


#: What the residual-scale release sums (:class:`~noisygd.oracles.base.RowSums`), in order:
#: :math:`\sum_i(1, t_i, t_i^2, u_i)`.
SCALE_SUM_NAMES = ("count", "targets", "squared_targets", "squared_norms")


def residual_scales_from_release(noisy: np.ndarray, sigma: float, z: float = 2.0
                                 ) -> ResidualScales:
    r"""The post-processing of :func:`private_residual_scales`: :math:`\hat V`,
    :math:`\hat U` and :math:`\bar t` from the released :math:`(\tilde N, \tilde S_1,
    \tilde S_2, \tilde S_u)` (``noisy``) and its noise :math:`\sigma` (formulas there).
    Public: a function of the release only."""
    sigma = check_positive("sigma", sigma)
    zz = check_positive("z", z)
    n_t, s1, s2, s_u = (float(v) for v in np.asarray(noisy, dtype=np.float64))
    n_lo, n_hi = max(n_t - zz * sigma, 1.0), max(n_t + zz * sigma, 1.0)
    second = (max(s2, 0.0) + zz * sigma) / n_lo
    first = max(abs(s1) - zz * sigma, 0.0) / n_hi
    v_hat = min(1.0, max(second - first * first, zz * sigma / n_lo))
    u_hat = min(1.0, max(s_u, sigma) / max(n_t, 1.0))
    u_high = min(1.0, (max(s_u, 0.0) + zz * sigma) / n_lo)
    t_bar = min(1.0, max(-1.0, s1 / max(n_t, 1.0)))
    return ResidualScales(math.sqrt(v_hat), math.sqrt(u_hat), sigma / SCALE_SUMS ** 0.5,
                          t_bar, math.sqrt(max(u_high, u_hat)))


def target_scale_noise(*, mu: float, sensitivity: float, rng: Any) -> tuple[float, float]:
    r"""``(sigma, inflation)`` of :func:`private_residual_scales`'s release at Gaussian-DP
    ``mu``, known before any data is read (``mu``, the sensitivity and the grid are public).

    The released vector :math:`\sum_i (1, t_i, t_i^2, u_i)` has L2 sensitivity
    :math:`2\Delta` (each row adds a vector of norm at most 2; :math:`\Delta` =
    ``sensitivity``, the relation's ``clipped_sum_sensitivity``), so
    :math:`\sigma = 2\Delta/\mu` and ``inflation`` = 1: the event
    ``Gaussian(sigma/2, Delta)`` is exactly :math:`\mu`-GDP. Secure mode (``rng`` a
    :class:`~noisygd.mechanisms.secure.SecureRandom`): rounding to the grid :math:`\gamma`
    enlarges the sensitivity to :math:`2\kappa\Delta` with :math:`\kappa` =
    :func:`~noisygd.mechanisms.noise.sensitivity_inflation` ``(rng, sigma, 4, 2 Delta)``,
    and the discrete Gaussian is :math:`(2\kappa\Delta/\sigma)^2/2`-zCDP (Canonne,
    Kamath and Steinke 2020); ``sigma`` is then the smallest (to :math:`10^{-12}` relative)
    with :math:`2\kappa\Delta/\sigma \le \mu`, so the event
    ``DiscreteGaussianNoise(Gaussian(sigma/2, Delta), kappa)`` is at most
    :math:`\mu^2/2`-zCDP, the share it was given.
    """
    sens = SCALE_SUMS ** 0.5 * check_positive("sensitivity", sensitivity)
    mu = check_positive("mu", mu)
    sigma = sens / mu
    if not is_secure(rng):
        return sigma, 1.0
    return secure_noise_scale(rng, sigma, SCALE_SUMS, sens, mu)


def huber_clip(half_range: float, row_norm_bound: float, intercept_scale: float | None
               ) -> float:
    r""":class:`DPLinearRegression`'s default clip :math:`k\,h\sqrt{R^2 + s^2}`,
    :math:`k` = :data:`HUBER_K` (``HUBER_K / 2`` of :func:`residual_bound`)."""
    return HUBER_K / 2.0 * residual_bound(half_range, row_norm_bound, intercept_scale)


__all__ = [
    "CONDITIONING_SHARE",
    "DEFAULT_CONDITIONING_SHARE",
    "DEFAULT_FEATURE_SCALE_SHARE",
    "DEFAULT_SCALE_SHARE",
    "EXPECTED_FAILED_CHECKS",
    "FEATURE_SCALE_CAP",
    "FEATURE_SCALE_SHARE",
    "FEATURE_SCALE_Z",
    "HUBER_K",
    "RESOLVED_SCALE_RATIO",
    "SCALE_SUMS",
    "SCALE_SUM_NAMES",
    "DPHuberRegressor",
    "DPLinearRegression",
    "DPLogisticRegression",
    "EstimatorPrivacy",
    "PrivateConditioning",
    "PrivateFeatureScale",
    "ResidualScales",
    "box_feature_scale",
    "conditioning_from_release",
    "feature_scale_from_release",
    "huber_clip",
    "private_conditioning",
    "private_residual_scales",
    "residual_bound",
    "residual_scales_from_release",
    "target_scale_noise",
]
