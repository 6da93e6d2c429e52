"""The estimators' common base, :class:`_DPLinearModel`: validation, the conditioning,
the fit through :func:`noisygd.training.fit_private` (after the private pre-releases of
:mod:`noisygd.estimators._prereleases`; tuned by :mod:`noisygd.estimators._tuned`),
``privacy_`` and the ledger."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted, validate_data

from noisygd._checks import (
    check_bool,
    check_choice,
    check_data,
    check_nonnegative,
    check_positive,
    check_positive_int,
    check_probability,
)
from noisygd.accounting.events import Neighbouring
from noisygd.estimators._common import (
    _ACCEPT_SPARSE,
    MIN_BUDGET_MU,
    SCALE_RANGE,
    EstimatorPrivacy,
    _box_centre,
    _check_scale,
    _delta_warning,
    box_feature_scale,
)
from noisygd.estimators._prereleases import _PrivatePreReleases
from noisygd.estimators._tuned import _PrivateTuning
from noisygd.objectives.base import Objective
from noisygd.solvers import PublicFacts
from noisygd.solvers.auto import CHOOSING_OPTIONS
from noisygd.training import (
    PreviewedFit,
    PrivateFit,
    check_secure_method,
    fit_private,
    preview_private_fit,
)


class _DPLinearModel(_PrivatePreReleases, _PrivateTuning, BaseEstimator):
    """Shared fit logic; subclasses provide the objective and the targets."""

    def _make_objective(self) -> Objective:  # pragma: no cover - abstract
        raise NotImplementedError

    #: ``l2`` when ``l2=None`` and the method has no planned choice (a public constant).
    _L2_DEFAULT = 1e-4
    #: Whether ``l2=None`` with NoisyGD, Newton or NoisySGD (``Solver.plans_ridge``) asks the
    #: solver for the planned ridge (:func:`noisygd.planning.ridge_strength`;
    #: ``DPLogisticRegression``, ``DPLinearRegression``).
    _PLANS_RIDGE: ClassVar[bool] = False
    #: Whether a fit with the planned ridge runs to the ridge's horizon
    #: (``method_options["horizon"] = "ridge"`` unless given; ``DPLinearRegression``).
    _RUNS_TO_RIDGE_HORIZON: ClassVar[bool] = False

    def _plans_ridge(self) -> bool:
        """Whether this fit's ridge is the planned one (``l2=None``, a method that plans it,
        ``Solver.plans_ridge``: NoisyGD, Newton, NoisySGD, no projection ball, no
        ``method_options["l2"]``): the solver chooses it after the
        private count, from public quantities only (docs/estimators.md, "Default l2")."""
        return (self._PLANS_RIDGE and self.l2 is None
                and getattr(self._solver, "plans_ridge", False)
                and getattr(self, "radius", None) is None
                and "l2" not in (self.method_options or {}))

    #: Whether ``method="auto"`` chooses between NoisyGD and Newton by the public rule of
    #: :func:`noisygd.solvers.auto.choose_method` (binary and one-vs-rest
    #: ``DPLogisticRegression``).
    _CHOOSES_METHOD: ClassVar[bool] = False

    def _chooses_method(self) -> bool:
        """``method="auto"`` (the default), a class that chooses, no ``max_iter``, no tuning, no
        ``method_options`` (which are NoisyGD's) but the distance's (``optimum_norm_bound``,
        ``distance_pilot``: :mod:`noisygd.solvers.distance`) and the sharp clip's
        (``sharp_clip``): the solver then picks NoisyGD or Newton by public facts
        (``fit_info_["method_choice"]``)."""
        return (isinstance(self.method, str) and self.method == "auto"
                and self._settings_choose_method(self.max_iter, self.method_options)
                and not self.tune and getattr(self, "_l2_factor", None) is None)

    @classmethod
    def _settings_choose_method(cls, max_iter: int | None,
                                method_options: dict | None) -> bool:
        """The public settings part of :meth:`_chooses_method` (also read by ``noisygd
        plan``): a class that chooses, no ``max_iter``, ``method_options`` within
        :data:`noisygd.solvers.auto.CHOOSING_OPTIONS`."""
        return (cls._CHOOSES_METHOD and max_iter is None
                and set(method_options or {}) <= CHOOSING_OPTIONS)

    def _method_options(self) -> dict | None:
        """``method_options``, plus ``{"l2": "auto"}`` when :meth:`_plans_ridge` (and a
        tuning run's ``l2_factor``, a multiple of the planned ridge; and ``"horizon":
        "ridge"`` unless given, for the classes that run to the ridge's horizon, with a solver
        that takes it: NoisyGD, Newton, which ignores it)."""
        factor = getattr(self, "_l2_factor", None)
        if not self._plans_ridge():
            if factor is not None:
                raise ValueError("l2_factor scales NoisyGD's planned ridge: it needs l2=None, "
                                 "method='noisy_gd' and no method_options['l2']")
            return self._sharp_clip_option(self.method_options)
        opts = {**(self.method_options or {}), "l2": "auto"}
        if factor is not None:
            opts["l2_factor"] = float(factor)
        names = getattr(self._solver, "option_names", None)
        if self._RUNS_TO_RIDGE_HORIZON and (names is None or "horizon" in names):
            opts.setdefault("horizon", "ridge")  # a solver with a horizon of its own
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
        elif centre is None:
            s = self._uncentred_intercept_scale(bound, n_features)
        else:
            s = self._default_intercept_scale(bound, n_features)
        return centre, bound, s

    @staticmethod
    def _default_intercept_scale(bound: float, n_features: int) -> float:
        r"""The intercept scale without a declared one: the row bound ``R`` (docs/estimators.md,
        "Intercept scale": the accelerated plan's bound :math:`DC` with :math:`|b^*| \le
        R\lVert w^*\rVert`)."""
        return bound

    @classmethod
    def _uncentred_intercept_scale(cls, bound: float, n_features: int) -> float:
        """The intercept scale of uncentred rows without a declared one:
        :meth:`_default_intercept_scale` unless a model says otherwise."""
        return cls._default_intercept_scale(bound, n_features)

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
        per-feature scale), else the declared box's (:func:`box_feature_scale`), else None;
        times the released feature range's :math:`g` when that was released."""
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
        _check_random_state(self.random_state)
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
        from noisygd.oracles._parallel import compute_context

        # the whole fit in one compute context (its thread pool, BLAS at one thread): a
        # multi-threaded BLAS call anywhere in it (a pre-release's statistic, a release's
        # post-processing) leaves OpenBLAS's workers spinning for a while after it, on the
        # cores the oracle's threads then need
        with compute_context(), self._unfitted_on_failure(), \
                self._prior_releases(prior_events):
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


    @staticmethod
    def _release_rng(random_state: Any, child: int = 0) -> np.random.Generator:
        """A generator independent of the fit's own ``default_rng(random_state)`` stream, so
        the same ``random_state`` still gives the same model.

        For every seed that is not a generator (None, an int, a
        :class:`~numpy.random.SeedSequence`, a list or array of ints) the fit's own stream is
        that of the root :class:`~numpy.random.SeedSequence` ``S`` (``default_rng`` builds
        it from the seed; a given ``SeedSequence`` is ``S`` itself), and a release's stream is
        ``S``'s spawned child number ``child`` (0: the regressor's residual scale or the
        classifier's conditioning, 1: the regressor's centre, 2 and 3: their per-feature
        scales, 4 and 5: their feature ranges), from a copy of ``S`` so that the caller's
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
        private = ("_private_conditioning", "_private_feature_scale", "_private_feature_range",
                   "_private_base_rate")
        for name in private:
            self.__dict__.pop(name, None)
        try:
            fit = self._fit_staged(X, targets, previewed, rng)
            cond = self.__dict__.get("_private_conditioning")
            fscale = self.__dict__.get("_private_feature_scale")
            base_rate = self.__dict__.get("_private_base_rate")
            frange = self.__dict__.get("_private_feature_range")
        finally:
            for name in private:
                self.__dict__.pop(name, None)
        self._report_conditioning(fit, cond, fscale, base_rate)
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
        Training algorithm: a name in :data:`noisygd.solvers.SOLVERS` ("auto": NoisyGD with
        exact Gaussian-DP accounting; a ``DPLogisticRegression`` fit (binary, one-vs-rest
        or multinomial) without ``max_iter`` or tuning chooses NoisyGD or private Newton by
        a public rule,
        :mod:`noisygd.solvers.auto`, ``fit_info_["method_choice"]``), or a
        :class:`noisygd.solvers.Solver` instance.
    l2 : float or None, default=None
        L2 regularisation ``l2/2 ||v||^2`` of the coordinates optimised (intercept
        included; see "Conditioning" below): a declared ``l2 > 0`` acts on the coefficients
        in the units of the declared box's widths or of the released feature range (as a
        ridge after a scaler), and keeps the private per-feature scale, a preconditioner,
        off (docs/estimators.md, "Conditioning, target range and clip"). ``None``: with
        NoisyGD (the default method), Newton or NoisySGD, for ``DPLogisticRegression`` and
        ``DPLinearRegression``, the planned ridge
        :func:`noisygd.planning.ridge_strength`,
        :math:`\\sqrt d\\,C\\Delta/(\\mu n^{3/2}\\sqrt{2F_0})`, chosen after the private count
        (the ridge's bias against a comparator of norm :math:`\\sqrt{2nF_0}` balanced with
        NoisyGD's stationary noise; a heuristic balance, docs/estimators.md); with
        ``output_perturbation``, the strength minimising Theorems 2-3's bound on the
        unregularised excess risk (:func:`noisygd.solvers.output_perturbation.choose_l2`;
        a theorem's choice); with the other methods (``DPHuberRegressor``: every method but
        ``output_perturbation``) the public constant ``1e-4`` (``1e-3`` for
        ``DPLinearRegression``, 0 with its ``ssp``; ``dp_ftrl`` keeps it and takes the
        planned ridge's radius as its regret bound's comparator radius,
        :func:`noisygd.solvers.dp_ftrl.ridge_distance`). The value used is ``l2_``.
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
        clip. A binary logistic or a linear regression run of a method that takes the sharp
        clip (``Solver.sharp_clip_losses``: NoisyGD, NoisySGD and private Newton, which reads
        its regime after its first step; for the logistic loss also DP-FTRL and the dynamic
        schedules) scales its default clip by its public noise regime, from 1
        (optimisation-limited) to the loss's sharp ratio (noise-limited: 1/2, the logistic
        residual's bound on a correctly classified row; 0.6745/1.345 for least squares, the
        median residual over Huber's threshold),
        ``fit_info_["plans"][k]["plan"]["clip_rule"]`` (docs/noisygd.md, "The sharp clip of
        a noise-limited run").
    max_iter : int, optional
        Number of noisy steps: NoisyGD (``"noisy_gd"``) and ``output_perturbation`` run
        exactly ``max_iter`` steps (``rrpsgd``: its horizon ``T``); ``ssp`` takes no steps
        and ``dp_ftrl`` plans its own from ``batch_size`` and ``epochs``: both refuse it;
        the other methods take it as a cap. Default: the planner's choice
        (for NoisyGD the minimiser of the accelerated bound, docs/noisygd.md).
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
        ``dataset`` before any data is read (each private release made before the run,
        ``fit_info_["pre_releases"]``, is recorded first as a release of its own), and a fit
        the dataset's budget cannot admit raises
        :class:`noisygd.exceptions.BudgetExceededError` before reading the data.
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
        The constant column ``s`` of the conditioned rows ``[x - c, s]`` (default
        ``R/sqrt(d)`` for rows centred at a declared box (``DPLogisticRegression``: ``R``
        beyond 1000 parameters or with a declared ``l2 > 0``), the row bound ``R`` for
        uncentred rows
        (``DPLinearRegression``: ``R/sqrt(d)``), a ``PublicCentring``'s own
        ``intercept_scale``, or with the private conditioning its released scale:
        docs/estimators.md, "Intercept scale").
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
        ``noisy_gd``, ``noisy_sgd``, ``dp_ftrl``, ``newton``, ``output_perturbation`` and
        ``ssp`` (Gaussian noise); ``langevin`` is planned and accounted by composition of its
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
    objective ``mean loss + l2/2 ||v||^2`` (the penalty is on ``v``). Without
    ``feature_bounds`` the default fit first releases a private centre and scales
    (``conditioning_share``) and runs in those coordinates. The default
    ``s = R`` (``DPLinearRegression``: ``R/sqrt(d)``, its class doc) minimises the
    accelerated plan's error factor ``D C`` for the largest
    intercept the margins allow (``|b*| <= R ||w*||``; docs/estimators.md), and with
    ``feature_bounds`` the row bound ``R`` is the box's radius around its centre, so the
    intercept column no longer dominates the clipping norm ``sqrt(R^2 + s^2)`` nor the
    smoothness that sets the step. ``coef_`` and ``intercept_`` are reported for the
    original features.
    ``intercept_scale=1.0`` without ``feature_bounds`` is the unconditioned model.
"""




def _check_random_state(random_state: Any) -> None:
    """Refuse a ``random_state`` that is not None, a non-negative integer (or a sequence of
    them), a :class:`~numpy.random.Generator`, ``BitGenerator`` or ``SeedSequence``, naming
    the parameter (NumPy's own message named neither it nor the fix). scikit-learn's
    :class:`~numpy.random.RandomState` is refused with the reason: the noise and every
    release stream are drawn through NumPy's Generator API (spawned, independent streams)."""
    if random_state is None or isinstance(
            random_state, np.random.Generator | np.random.BitGenerator | np.random.SeedSequence):
        return
    if isinstance(random_state, np.random.RandomState):
        raise TypeError("random_state must be an int, a numpy.random.Generator or None; a "
                        "numpy.random.RandomState is not accepted (the noise is drawn through "
                        "NumPy's Generator API): pass an int seed or np.random.default_rng(seed)")
    if (isinstance(random_state, int | np.integer) and not isinstance(random_state, bool)
            and int(random_state) < 0):
        raise ValueError(f"random_state must be a non-negative int seed, got {random_state}")
    if isinstance(random_state, bool | np.bool_) or not _seed_like(random_state):
        raise TypeError("random_state must be None, a non-negative int (or a sequence of "
                        "them), a numpy.random.Generator or a SeedSequence; got "
                        f"{type(random_state).__name__}")


def _seed_like(value: Any) -> bool:
    """Whether ``value`` is a seed ``np.random.SeedSequence`` takes: a non-negative integer
    or a non-empty sequence of them."""
    if isinstance(value, int | np.integer):
        return int(value) >= 0
    if isinstance(value, str | bytes):
        return False
    try:
        items = list(value)
    except TypeError:
        return False
    return bool(items) and all(isinstance(v, int | np.integer) and not isinstance(v, bool)
                               and int(v) >= 0 for v in items)


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
