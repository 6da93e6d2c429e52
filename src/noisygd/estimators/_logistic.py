"""``DPLogisticRegression``: private logistic regression (binary and multinomial)."""

from __future__ import annotations

import math
import warnings
from typing import Any, ClassVar

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from noisygd._checks import check_choice, check_data
from noisygd.estimators._base import _COMMON_DOC, _DPLinearModel
from noisygd.estimators._common import (
    _ACCEPT_SPARSE,
    DEFAULT_CONDITIONING_SHARE,
    DEFAULT_FEATURE_RANGE_SHARE,
    DEFAULT_FEATURE_SCALE_SHARE,
    SCALE_RANGE,
    _signed_labels,
)
from noisygd.estimators._conditioning import base_rate_from_release
from noisygd.exceptions import PrivacyLeakWarning
from noisygd.objectives.base import Objective
from noisygd.oracles.rows import canonical_rows
from noisygd.training import PreRelease, PrivateFit


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
        with the rest of the fit and no positive ``l2`` is declared (a ridge on ``v`` would act
        on :math:`w_j/f_j`: a declared ridge stays on the coefficients), else 0; 0 turns it
        off. ``conditioning_["feature_scale"]``
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
        crushed by the row bound. Two more releases from the same share centre and rescale
        the columns it shows far from the origin (one sign, within a factor 4 of themselves:
        a year, a latitude; :mod:`noisygd.mechanisms.column_offsets`), so the fit runs on
        :math:`g\\odot(x - o)`. ``"auto"`` is 0.0625 (0.05 on the histogram) where the
        budget pays for it with the rest of the fit, else 0; 0 turns it off (declare
        ``feature_bounds`` instead when you know them).
        ``conditioning_["feature_range_release"]`` (also ``fit_info_["feature_range"]``)
        reports it (docs/estimators.md, "Private feature range", with the measurements).

    **Private conditioning** (issue 19). Without ``feature_bounds``, ``intercept_scale`` and
    ``clip``, with an intercept, a method that clips and composes with a prior release
    (NoisyGD and ``"auto"``, Newton, NoisySGD, DP-FTRL, the dynamic schedules), not tuned,
    not secure (binary, one-vs-rest or multinomial), the fit first releases, with a share
    :math:`f` of its budget (:math:`\\mu_c = \\sqrt f\\,\\mu`),
    :math:`\\sum_i(\\tilde x_i/R,\\ u_i,\\ 1) + \\mathcal N(0, \\sigma^2 I_{p+2})`,
    :math:`\\tilde x_i` the row projected onto the ball of
    radius :math:`R` (``row_norm_bound``), :math:`u_i = \\lVert\\tilde x_i\\rVert^2/R^2`,
    :math:`\\sigma = \\sqrt3\\,\\Delta/\\mu_c` (each row adds a vector of norm at most
    :math:`\\sqrt3`: exactly :math:`\\mu_c`-GDP; :func:`private_conditioning`). From it (post-
    processing) the centre :math:`c = R\\hat c`, :math:`\\hat c` the released mean
    :math:`\\tilde S_x/\\tilde N` shrunk toward its grand mean by the positive-part
    James-Stein rule (:func:`shrunk_centre`, smaller expected error for every mean when
    :math:`p \\ge 4`; docs/estimators.md, "The released centre, shrunk"), and the
    rows' mean squared distance to it :math:`\\hat U_c` (units of :math:`R^2`). The fit runs in
    the coordinates centred at :math:`c` (rows beyond :math:`R` from :math:`c` shrunk onto that
    ball, a per-row map), with the clip :math:`R\\sqrt{2\\hat U_c}`, the root-mean-square
    norm of the rows augmented by one coordinate of their scale (a Schweppe-type clip as
    ``DPLinearRegression``'s; a multinomial fit's is that times :math:`\\sqrt{1 - 1/K}`, the
    bound on :math:`\\lVert\\pi - e_y\\rVert` of a correctly classified row where the
    binary residual's is 1), and intercept scale :math:`s = R\\sqrt{\\hat U_c}`. With one
    binary problem the release also sums the labels :math:`t_i \\in \\{-1, +1\\}` (four sums,
    :math:`\\sigma = 2\\Delta/\\mu_c`, the same :math:`\\mu_c`): the run starts at the constant
    predictor of the released base rate (:func:`base_rate_from_release`) and the intercept
    scale is :math:`R\\sqrt{\\hat U_c/d}` (up to 1000 parameters and without a declared
    ``l2 > 0``: docs/estimators.md,
    "Intercept scale", where with a declared box :math:`s = R/\\sqrt d`; measured: the
    default's mean share of the non-private AUC gain +0.022 plain, +0.053 with the box, on
    ``bench_conditioning``'s 128 binary cells each, none lower by more than 0.02). The
    release composes exactly with the count and the run (a
    pre-release stage of :func:`noisygd.training.fit_private`, summed on the oracle:
    :meth:`~noisygd.oracles.base.GradientOracle.bounded_row_sums`) and, with ``ledger=``, is
    recorded as its own release before the rows are read. ``conditioning_`` reports it
    (``"release"``, with ``"base_rate"`` when the labels were summed).
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
    privacy_ : EstimatorPrivacy
        Event and epsilon at ``delta`` under each accountant consulted (an
        :class:`~noisygd.accounting.base.AccountingResult`); tightest named.
    n_iter_ : ndarray
        Noisy steps per problem.
    ledger_release_ : noisygd.ledger.Release or None
        The ledger's record of the fit (with ``ledger=``), else None.
    conditioning_ : dict
        The public conditioning used: ``centre`` (None: not centred), ``row_norm_bound``,
        ``intercept_scale``, ``feature_scale`` (None: not rescaled), and with the private
        conditioning ``release`` (its share, ``row_scale`` = :math:`\\sqrt{\\hat U_c}`, the
        clip and the event); with the private per-feature scale ``feature_scale_release``;
        with the private feature range ``feature_range_release``.
    tuning_ : dict
        With ``tune=True``: the released run's ``candidate`` (and index ``chosen``), its
        noisy ``score``, ``n_runs`` and ``runs_per_candidate`` (drawn independently of the
        data), the per-run Gaussian-DP ``run_mu`` and the options. No other run's score
        or model is kept.
    """
    )

    _PLANS_RIDGE: ClassVar[bool] = True  # l2=None with NoisyGD: the planned ridge
    _SHARP_CLIP_LOSS: ClassVar[str | None] = "logistic"  # the sharp clip's (_sharp_clip_ratio)
    _CHOOSES_METHOD: ClassVar[bool] = True  # method="auto": NoisyGD or Newton
    # the released centre shrunk toward its grand mean (docs/estimators.md, "The released
    # centre, shrunk"; measured there: the regressors keep the released mean)
    _SHRINK_CENTRE: ClassVar[bool] = True

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
                   and (solver.gaussian or solver.accepts_prior_event))
        return applies and self._affords_conditioning()

    def _pre_release(self) -> Any:
        from noisygd.accounting.events import Composed

        events = self._conditioning_events()
        return None if not events else events[0] if len(events) == 1 else Composed(
            tuple(events))

    def _conditioning(self, n_features: int) -> tuple[np.ndarray | None, float, float | None]:
        r"""As for every model; with the private conditioning released (class doc), its
        centre, the row bound ``R`` and the intercept scale :math:`s = R\sqrt{\hat U_c/d}`
        where the intercept starts at the released base rate (one binary problem), else
        :math:`R\sqrt{\hat U_c}`."""
        private = self.__dict__.get("_private_conditioning")
        if private is None or not self.fit_intercept or not self._conditioned():
            return super()._conditioning(n_features)
        scale = private.intercept_scale
        if self.__dict__.get("_private_base_rate") is not None:
            scale = self._default_intercept_scale(scale, n_features)
        bound = float(self.row_norm_bound if private.row_bound is None else private.row_bound)
        return self._released_centre(private), bound, scale

    def _default_intercept_scale(self, bound: float, n_features: int) -> float:
        r""":math:`s = R/\sqrt d` for rows centred at a public centre (docs/estimators.md,
        "Intercept scale"): the intercept as one more feature of rows that fill their ball
        isotropically about it, the minimiser of the stationary noise's bound that
        ``DPLinearRegression`` uses. ``R`` with a declared ridge (its term
        :math:`\frac{l_2}2(b + \langle c, w\rangle)^2/s^2` on the centred intercept would
        grow :math:`d`-fold: a declared ridge keeps its meaning, as for the per-feature scale)
        and beyond :data:`~noisygd.solvers.newton.MAX_FULL_PARAMS` parameters, where the
        default may run Newton's diagonal preconditioner, whose per-coordinate eigenvalue floor
        would hold a small-scale intercept back (measured)."""
        from noisygd.solvers.newton import MAX_FULL_PARAMS

        if n_features + 1 > MAX_FULL_PARAMS or self._ridge_declared():
            return bound
        return bound / math.sqrt(n_features)

    @classmethod
    def _uncentred_intercept_scale(cls, bound: float, n_features: int) -> float:
        r"""Uncentred rows keep the row bound ``R`` (docs/estimators.md, "Intercept scale":
        the isotropy about a centre behind :math:`R/\sqrt d` does not hold there;
        measured)."""
        return bound

    def _conditioning_sums(self, n_problems: int) -> tuple[str, ...]:
        """With one binary problem, the label sum rides along with the conditioning's sums
        (class doc, "Private conditioning"): the released base rate."""
        base = self._CONDITIONING_SUMS
        return (*base, "targets") if n_problems == 1 and not self._multinomial() else base

    def _released_labels(self, noisy: np.ndarray) -> None:
        """The released base rate (:func:`base_rate_from_release`) from the noisy label sum
        and the release's count (post-processing)."""
        if noisy.size:
            self._private_base_rate = base_rate_from_release(
                float(noisy[0]), self._private_conditioning.count)

    def _start(self, n_features: int) -> np.ndarray | None:
        r"""The run's start with the released base rate :math:`\hat p`: the coefficients 0
        and the intercept's coordinate :math:`\operatorname{logit}(\hat p)/s`, so the fit
        starts at the constant predictor of the released base rate (class doc); None where
        that coordinate exceeds :math:`\sqrt{h}` (:data:`SCALE_RANGE` ``= (l, h)``: a row
        scale near ``l``), whose square the methods' arithmetic could not hold."""
        released = self.__dict__.get("_private_base_rate")
        if released is None:
            return None
        _, _, s = self._conditioning(n_features)
        coordinate = released[1] / float(s)
        if not abs(coordinate) <= math.sqrt(SCALE_RANGE[1]):
            return None
        start = np.zeros(n_features + 1)
        start[-1] = coordinate
        return start

    def _pre_release_stage(self, X: Any, targets: list[Any]
                           ) -> tuple[tuple[PreRelease, ...], list[Any]] | None:
        """The private conditioning (class doc) as the fit's pre-release stages, with the
        feature range and per-feature scale when released (:meth:`_conditioning_stages`)."""
        if not self._uses_private_conditioning():
            return None
        stages, raw, _ = self._conditioning_stages(X, targets, child=0)
        return tuple(stages), raw

    def _make_objective(self) -> Objective:
        from noisygd.objectives.glm import LogisticLoss

        return LogisticLoss(l2=self._l2(), fit_intercept=self.fit_intercept)

    def _conditioning_read_objective(self, n_features: int, range_scale: np.ndarray | None,
                                     range_offset: np.ndarray | None) -> Any:
        """As for every model; for a multinomial fit the multinomial loss (its labels are
        ``0..K-1``), about the offsets and rescaled in the same way."""
        if not self._multinomial():
            return super()._conditioning_read_objective(n_features, range_scale, range_offset)
        from noisygd.objectives.multinomial import MultinomialLogisticLoss

        return MultinomialLogisticLoss(int(self._n_classes), centre=range_offset,
                                       feature_scale=range_scale)

    def _multinomial(self) -> bool:
        """Whether this fit is one multinomial problem (``K > 2``, ``multiclass="multinomial"``)."""
        k = getattr(self, "_n_classes", None)
        return k is not None and k > 2 and self.multiclass == "multinomial"

    def _fit_objective(self, n_features: int) -> Objective:
        """The multinomial objective in the same public conditioning (centre, intercept
        scale and, in conditioned coordinates, per-feature scale) as the binary one; else
        :meth:`_DPLinearModel._fit_objective`."""
        if not self._multinomial():
            return super()._fit_objective(n_features)
        centre, _, s = self._conditioning(n_features)
        return self._multinomial_loss(
            centre, s, self._feature_scale_used(n_features) if self._conditioned() else None,
            l2=self._l2())

    def _multinomial_loss(self, centre: np.ndarray | None, intercept_scale: float | None,
                          feature_scale: np.ndarray | None, l2: float = 0.0) -> Any:
        """:class:`~noisygd.objectives.multinomial.MultinomialLogisticLoss` of this fit's
        ``K`` classes in the coordinates given (the centre and intercept scale apply with an
        intercept only)."""
        from noisygd.objectives.multinomial import MultinomialLogisticLoss

        kwargs: dict[str, Any] = {}
        if self.fit_intercept:
            kwargs["intercept_scale"] = intercept_scale
            kwargs["centre"] = centre
        return MultinomialLogisticLoss(int(self._n_classes), l2=l2,
                                       fit_intercept=self.fit_intercept,
                                       feature_scale=feature_scale, **kwargs)

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
        :math:`R\sqrt{2\hat U_c}` (class doc), times :math:`\sqrt{1 - 1/K}` for a
        multinomial fit (the bound on :math:`\lVert\pi - e_y\rVert` of every correctly
        classified row, :func:`~noisygd.objectives.multinomial.correct_class_residual_bound`,
        where the binary residual's bound is 1); for a multinomial fit without either, the
        sharp clip :math:`\sqrt{1 - 1/K}\,\tilde B`
        (:meth:`~noisygd.objectives.multinomial.MultinomialLogisticLoss.default_clip`: it
        never changes the gradient of a correctly classified row, nor any gradient at
        :math:`\Theta = 0`); else None (the method uses the Lipschitz constant)."""
        from noisygd.objectives.multinomial import correct_class_residual_bound

        private = self.__dict__.get("_private_conditioning")
        if self.clip is None and private is not None:
            if self._multinomial():
                return correct_class_residual_bound(int(self._n_classes)) * private.clip
            return private.clip
        if self.clip is not None or not self._multinomial():
            return self.clip
        _, bound, _ = self._conditioning(n_features)
        return self._fit_objective(n_features).default_clip(bound)  # type: ignore[attr-defined]

    def _store(self, fit: PrivateFit) -> None:
        if not self._multinomial():
            super()._store(fit)
            return
        # the coordinates the fit ran in, as _fit_targets recorded them (the private
        # releases behind them are gone by now)
        recorded = self.conditioning_
        objective = self._multinomial_loss(recorded["centre"], recorded["intercept_scale"],
                                           recorded.get("feature_scale"))
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
        X = canonical_rows(X, check_columns=True)  # once, before any row is read
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
