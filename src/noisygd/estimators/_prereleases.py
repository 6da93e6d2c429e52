"""The private releases a fit makes before its run, as a mixin of the estimators' base:
the budget shares, the private centre and row scale, the per-feature scale and the feature
range, each a :class:`~noisygd.training.PreRelease` stage of
:func:`~noisygd.training.fit_private` (docs/estimators.md, "Private conditioning")."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import numpy as np

from noisygd._checks import check_choice, check_real, user_stacklevel
from noisygd.accounting.events import Neighbouring
from noisygd.estimators._common import (
    CONDITIONING_RELEASES,
    CONDITIONING_ROUNDS,
    CONDITIONING_SHARE,
    FEATURE_RANGE_RELEASES,
    FEATURE_SCALE_SHARE,
    MIN_BUDGET_MU,
)
from noisygd.estimators._conditioning import (
    FEATURE_SCALE_Z,
    ConditioningRound,
    conditioning_from_release,
    distance_histogram,
    feature_scale_from_release,
    radius_from_release,
    refined_conditioning,
    round_sums,
)
from noisygd.training import PreparedFit, PreRelease


class _PrivatePreReleases:
    """Methods of :class:`~noisygd.estimators._base._DPLinearModel` that plan and make the
    releases before the run (public facts decide whether each is made; module doc)."""

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

    #: Whether the private conditioning is refined by later releases about its first centre
    #: (:func:`~noisygd.estimators._conditioning.refined_conditioning`), its share split as
    #: :data:`~noisygd.estimators._common.CONDITIONING_ROUNDS` says.
    _REFINES_CONDITIONING: ClassVar[bool] = True

    def _conditioning_rounds(self) -> tuple[float, ...]:
        """The fractions of ``conditioning_share`` of the conditioning's releases, in order
        (centres at even positions, distance histograms at odd ones): ``(1.0,)`` where the
        conditioning is not refined."""
        return CONDITIONING_ROUNDS if self._REFINES_CONDITIONING else (1.0,)

    def _conditioning_mu(self, k: int) -> float:
        """The Gaussian-DP mu of the conditioning's release ``k`` (public facts only)."""
        from noisygd.accounting.calibration import calibrate_mu

        return math.sqrt(self._share_of_conditioning() * self._conditioning_rounds()[k]) * (
            calibrate_mu(float(self.epsilon), float(self.delta)))

    def _conditioning_event(self, k: int = 0) -> tuple[float, Any]:
        """``(mu_k, event)`` of the conditioning's centre release ``k`` (an even position of
        :meth:`_conditioning_rounds`; 0 the first), from public facts only."""
        from noisygd.accounting.events import Gaussian

        rel = Neighbouring(self.neighbouring)
        mu_c = self._conditioning_mu(k)
        sens = rel.clipped_sum_sensitivity
        return mu_c, Gaussian(sens / mu_c, sens, rel)

    def _radius_event(self, k: int = 1) -> tuple[float, Any]:
        r"""``(sigma, event)`` of the conditioning's distance histogram ``k`` (an odd
        position of :meth:`_conditioning_rounds`), from public facts only: :math:`\sigma =
        \Delta_h/\mu_k` on every count, :math:`\Delta_h` the histogram's exact sensitivity
        (1 under add/remove, :math:`\sqrt2` under replace-one:
        :func:`~noisygd.mechanisms.target_range.target_range_sensitivity`)."""
        from noisygd.accounting.events import Gaussian
        from noisygd.mechanisms.target_range import target_range_sensitivity

        rel = Neighbouring(self.neighbouring)
        mu_h = self._conditioning_mu(k)
        exact = target_range_sensitivity(rel is Neighbouring.REPLACE_ONE)
        sens = rel.clipped_sum_sensitivity
        return exact / mu_h, Gaussian(sens / mu_h, sens, rel)

    def _conditioning_release_events(self) -> tuple[Any, ...]:
        """The events of the conditioning's releases, in order (:meth:`_conditioning_rounds`:
        the centres and, between them, the distance histograms)."""
        return tuple((self._radius_event(k) if k % 2 else self._conditioning_event(k))[1]
                     for k in range(len(self._conditioning_rounds())))

    #: What the conditioning release sums (:class:`~noisygd.oracles.base.RowSums`), in order.
    _CONDITIONING_SUMS = ("rows", "squared_norms", "count")
    #: Whether the released centre is shrunk toward its grand mean
    #: (:func:`~noisygd.estimators._conditioning.shrunk_centre`; the classifier's choice,
    #: docs/estimators.md, "The released centre, shrunk").
    _SHRINK_CENTRE = False

    def _conditioning_sums(self, n_problems: int) -> tuple[str, ...]:
        """The sums the conditioning release makes for a fit of ``n_problems`` problems:
        :data:`_CONDITIONING_SUMS` (the classifier adds the label sum for one binary
        problem)."""
        return self._CONDITIONING_SUMS

    def _released_labels(self, noisy: np.ndarray) -> None:
        """Post-process the sums the release made after :data:`_CONDITIONING_SUMS` (none
        here)."""

    def _start(self, n_features: int) -> np.ndarray | None:
        """Where the run starts after the releases (:attr:`~noisygd.training.PreparedFit.
        start`), in the fit's coordinates; None: the method's own start."""
        return None

    def _conditioning_raw_oracles(self, X: Any, targets: list[Any],
                                  range_scale: np.ndarray | None,
                                  range_offset: np.ndarray | None = None) -> list[Any]:
        r"""The oracles the private conditioning reads: the rows uncentred (in the released
        feature range's coordinates :math:`g\odot(x - o)` when ``range_scale`` is :math:`g`,
        ``range_offset`` the released column offsets :math:`o`, zeros when None),
        projected onto the ball of radius ``R``, their row sums taken by the scan."""
        from noisygd.oracles import make_oracle

        objective = self._conditioning_read_objective(X.shape[1], range_scale, range_offset)
        first = make_oracle(objective, X, targets[0], row_norm_bound=float(self.row_norm_bound),
                            row_sums=("rows",))
        return [first, *(first.with_targets(y_k) for y_k in targets[1:])]

    def _conditioning_read_objective(self, n_features: int, range_scale: np.ndarray | None,
                                     range_offset: np.ndarray | None) -> Any:
        r"""The objective of the oracles the private conditioning reads (their rows' sums
        only, never a loss): the model's own, about the column offsets :math:`o` (zeros when
        None) and rescaled by :math:`g` when the feature range was released
        (:meth:`_conditioning_raw_oracles`)."""
        from noisygd.objectives.centred import CentredGLM

        objective = self._make_objective()
        if range_scale is None:
            return objective
        offset = np.zeros(n_features) if range_offset is None else range_offset
        return CentredGLM(objective, offset, 1.0,  # type: ignore[arg-type]
                          feature_scale=range_scale)

    def _conditioning_stage(self, X: Any, targets: list[Any], rng: Any,
                            next_sums: tuple[str, ...] = (), deferred: bool = False,
                            child: int = 0) -> tuple[list[PreRelease], list[Any], list[Any]]:
        """The private conditioning's releases as :class:`~noisygd.training.PreRelease`
        stages (:func:`private_conditioning`'s release, and where it is refined
        (:data:`_REFINES_CONDITIONING`) the later rounds, :meth:`_refining_stages`): the
        first's sums from the oracle of the uncentred rows (projected onto the ball of
        radius ``R``; the row sums taken by its construction's scan), the later ones'
        statistics of ``X``, then the fit's oracles in the released coordinates
        (``_private_conditioning`` set for :meth:`_conditioning`; ``next_sums``: the row sums
        a later stage reads from them, taken by their scan). The oracles read are closed
        (their ``O(n)`` arrays freed) by the first release's post-processing. Returns the
        stages, the oracles the first reads (an empty list with ``deferred``, for the
        feature range's post-processing to fill), and a list the last one's post-processing
        fills with the oracles it builds (for a later stage's post-processing). ``rng``: the
        first release's stream (the later ones': :meth:`_refining_stages`)."""
        R = float(self.row_norm_bound)
        mu_c, event = self._conditioning_event(0)
        sums = self._conditioning_sums(len(targets))
        sens = Neighbouring(self.neighbouring).clipped_sum_sensitivity
        sigma = math.sqrt(len(sums)) * sens / mu_c
        raw = [] if deferred else self._conditioning_raw_oracles(X, targets, None)
        built: list[Any] = []
        extra = len(sums) - len(self._CONDITIONING_SUMS)  # the label sum, after the others
        refines = self._REFINES_CONDITIONING

        def build_fit_oracles(previous: list[Any]) -> PreparedFit:
            for oracle in previous:  # a DaskOracle's partitions, an ArrayOracle's O(n) arrays
                getattr(oracle, "close", lambda: None)()
            built[:] = self._oracles(X, targets, row_sums=next_sums)
            return PreparedFit(list(built), self._clip_for_method(X.shape[1]),
                               start=self._start(X.shape[1]))

        rounds: list[ConditioningRound] = []

        def then(noisy: np.ndarray) -> PreparedFit:
            main = noisy[:noisy.size - extra]
            about = self._range_about(main.size - 2)  # g o: the rows were read about it
            released = conditioning_from_release(
                main, R, sigma, n_sums=len(sums), shrink_centre=self._SHRINK_CENTRE)
            self._private_conditioning = dataclasses.replace(
                released, centre=released.centre + about)
            self._released_labels(noisy[noisy.size - extra:])
            if not refines:
                return build_fit_oracles(raw)
            rounds.append(ConditioningRound(main, about, R, sigma))
            for oracle in raw:  # the histogram reads X, not these: freed before it runs
                getattr(oracle, "close", lambda: None)()
            return PreparedFit(list(raw), None)

        labels = ", t" if extra else ""
        stage = PreRelease("conditioning", event, sums, sigma, rng, then,
                           target_half_range=1.0 if extra else None,
                           description=f"(x~/R, ||x~||^2/R^2, 1{labels}), x~ = x min(1, "
                                       f"R/||x||){', t the label in {-1, +1}' if extra else ''}")
        if not refines:
            return [stage], raw, built
        return [stage, *self._refining_stages(X, targets, raw, rounds, build_fit_oracles,
                                              child)], raw, built

    def _refining_stages(self, X: Any, targets: list[Any], raw: list[Any],
                         rounds: list[ConditioningRound], build_fit_oracles: Any,
                         child: int) -> list[PreRelease]:
        r"""The refined conditioning's stages after the first release (whose round its
        post-processing put in ``rounds``), in pairs (:meth:`_conditioning_rounds`): the
        histogram of the rows' distances to the centre so far
        (:func:`~noisygd.estimators._conditioning.distance_histogram`; its
        post-processing the radius :math:`\rho`,
        :func:`~noisygd.estimators._conditioning.radius_from_release`), then the sums of
        the rows about that centre projected onto the ball of radius :math:`\rho`, over
        :math:`\rho` (:func:`~noisygd.estimators._conditioning.round_sums`; its
        post-processing :func:`~noisygd.estimators._conditioning.refined_conditioning` over
        the rounds so far, and after the last the fit's oracles, ``build_fit_oracles``). Both
        are statistics of ``X`` (summed on the cluster for a Dask collection), so no oracle
        is built for them; they hand on the first release's closed oracles, ``raw``, for
        :func:`~noisygd.training.fit_private`'s checks. Release stream of position ``k``:
        ``child + 6 + 2k``."""
        from noisygd.mechanisms.target_range import (
            target_histogram_size,
            target_range_sensitivity,
        )

        R = float(self.row_norm_bound)
        sums = self._CONDITIONING_SUMS
        sens = Neighbouring(self.neighbouring).clipped_sum_sensitivity
        replace_one = Neighbouring(self.neighbouring) is Neighbouring.REPLACE_ONE
        # the first release's oracles (``raw``, filled in place by the feature range's
        # post-processing, closed by the first release's): what the later stages hand on for
        # fit_private's checks; their statistics read X
        state: dict[str, Any] = {"rho": R, "released": None}
        last = len(self._conditioning_rounds()) - 1

        def histogram() -> np.ndarray:
            return self._row_statistic(X, distance_histogram, target_histogram_size(),
                                       centre=self._private_conditioning.centre,
                                       feature_scale=self._range_scale(), unit=R)

        def centre_sums() -> np.ndarray:
            return self._row_statistic(X, round_sums, X.shape[1] + 2,
                                       centre=self._private_conditioning.centre,
                                       feature_scale=self._range_scale(), radius=state["rho"])

        def then_radius(sigma_h: float) -> Any:
            def then(noisy: np.ndarray) -> PreparedFit:
                state["rho"], state["released"] = radius_from_release(
                    noisy, sigma_h, R, previous=state["rho"])
                return PreparedFit(list(raw), None)
            return then

        def then_centre(k: int, sigma: float) -> Any:
            def then(noisy: np.ndarray) -> PreparedFit:
                rounds.append(ConditioningRound(noisy, self._private_conditioning.centre,
                                                state["rho"], sigma))
                self._private_conditioning = refined_conditioning(
                    rounds, n_sums=len(sums), shrink_centre=self._SHRINK_CENTRE,
                    released_radius=state["released"])
                if k == last:
                    return build_fit_oracles([])
                return PreparedFit(list(raw), None)
            return then

        stages = []
        for k in range(1, last + 1):
            rng = self._release_rng(self.random_state, child=child + 6 + 2 * k)
            if k % 2:
                sigma_h, event = self._radius_event(k)
                stages.append(PreRelease(
                    CONDITIONING_RELEASES[k], event, (), sigma_h, rng, then_radius(sigma_h),
                    description="counts of the rows' distances to the centre so far in a zero "
                                "bin and by binary exponent (a row adds 1)",
                    statistic=histogram, statistic_terms=1,
                    statistic_sensitivity=target_range_sensitivity(replace_one)))
            else:
                mu_k, event = self._conditioning_event(k)
                sigma = math.sqrt(len(sums)) * sens / mu_k
                stages.append(PreRelease(
                    CONDITIONING_RELEASES[k], event, (), sigma, rng, then_centre(k, sigma),
                    description="(b, ||b||^2, 1), b = (x - a) min(1, rho/||x - a||)/rho, a the "
                                "centre so far, rho the released radius",
                    statistic=centre_sums, statistic_terms=len(sums)))
        return stages

    def _report_conditioning(self, fit: Any, cond: Any, scale: Any = None,
                             base_rate: Any = None) -> None:
        """``conditioning_["release"]``: the private conditioning's share, scales, event and
        ledger release (``cond``: its post-processing, None if not released), and with the
        classifier's label sum its released ``base_rate`` and the rule of the run's start;
        with the private per-feature scale (``scale``),
        ``conditioning_["feature_scale_release"]`` and ``fit_info_["feature_scale"]`` the
        same for it."""
        if cond is None:
            return
        release = fit.info.get("conditioning_release")
        self.conditioning_["release"] = {
            "share": self._share_of_conditioning(), "row_scale": cond.row_scale,
            "clip": cond.clip, "centre_shrinkage": cond.centre_shrinkage,
            "event": self._conditioning_event()[1].describe(),
            **({"ledger_release": release} if release is not None else {})}
        if cond.radius is not None:  # refined: the radius and the two later releases
            self.conditioning_["release"].update(
                rounds=list(CONDITIONING_ROUNDS), radius=cond.row_bound,
                radius_rule=("the upper edge 2^(k+1) of the occupied bins of the rows' "
                             "distances to the first centre, the bins above joining while each "
                             "passes the edge test (level 0.05, a quarter of the occupied "
                             "count; at most R; R where none is "
                             "occupied), the second centre and row scale within it, the "
                             "centres averaged by inverse variance "
                             "(noisygd.estimators._conditioning.refined_conditioning)"),
                distances_resolved=bool(cond.radius.high > 0.0),
                events=[e.describe() for e in self._conditioning_release_events()],
                **{f"{name}_release": fit.info[f"{name}_release"]
                   for name in CONDITIONING_RELEASES[1:] if f"{name}_release" in fit.info})
        if base_rate is not None:
            self.conditioning_["release"].update(
                base_rate=base_rate[0],
                start=("the run starts at the constant predictor of the released base rate "
                       "(intercept coordinate logit(base_rate) / intercept_scale), with the "
                       "intercept scale R sqrt(U_c / d) (R sqrt(U_c) beyond 1000 parameters "
                       "or with a declared l2 > 0)"))
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
        from noisygd.mechanisms.feature_range import FALSE_OCCUPANCY, HOMOGENEITY_LEVEL

        release = fit.info.get("feature_range_release")
        report = {
            "share": self._share_of_feature_range(),
            "rule": ("per feature, the upper edge 2^(k+1) of the highest binary-exponent bin "
                     f"whose noisy count reaches z sigma (z: at most {FALSE_OCCUPANCY:g} chance "
                     "that any empty bin does); rows rescaled to g x, g_j = R/(m_j sqrt(k)), k "
                     "the released mean number of nonzero features per row; columns whose "
                     "counts pass a chi-square homogeneity test at level "
                     f"{HOMOGENEITY_LEVEL:g} take one magnitude, the widest any column "
                     "resolves (noisygd.mechanisms.feature_range.pooled_top_bin)"),
            "event": self._feature_range_event()[1].describe(),
            "rounds": list(self._feature_range_rounds()),
            "round_events": [e.describe() for e in self._feature_range_events()[1:]],
            "offset_columns": ([] if released.offset_columns is None
                               else released.offset_columns.tolist()),
            "offset": None if released.offset is None else released.offset.tolist(),
            "deviation": None if released.deviation is None else released.deviation.tolist(),
            "threshold": released.threshold, "noise_std": released.noise_std,
            "occupied": released.occupied, "row_features": released.row_features,
            "magnitude": released.magnitude.tolist(), "pooled": released.pooled,
            "separated_columns": [  # a few values far beyond the rest (the warning's columns)
                {"column": j, "rest": list(rest), "top": list(top), "empty_octaves": empty}
                for j, rest, top, empty in released.separated],
            "homogeneity": {  # the test's statistic, None where not tested (JSON null)
                "statistic": (None if math.isnan(released.homogeneity[0])
                              else released.homogeneity[0]),
                "df": released.homogeneity[1]},
            **({"ledger_release": release} if release is not None else {}),
            **{f"{name}_ledger_release": fit.info[f"{name}_release"]
               for name in FEATURE_RANGE_RELEASES[1:]
               if fit.info.get(f"{name}_release") is not None}}
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
                "columns, no positive ridge l2 is declared (it would act on w/f) and the "
                "budget pays for it with the rest of the fit "
                "(feature_scale_share='auto'); post-processed toward equal scales where its "
                f"resolution (z = {FEATURE_SCALE_Z:g} noise sds) cannot tell the features "
                "apart")

    def _uses_feature_scale(self) -> bool:
        """Whether this fit releases the private per-feature scale after its private
        conditioning (public facts only: the conditioning released, ``feature_scale_share >
        0``, at least 2 columns (the shape, metadata of ``X``) and with
        ``"auto"`` a budget that pays for it, the conditioning, the later releases and the
        fit together)."""
        n_columns = self.__dict__.get("_n_columns")
        if (self._share_of_feature_scale() <= 0.0 or n_columns is None or n_columns < 2
                or not self._uses_private_conditioning()
                or (isinstance(self.feature_scale_share, str) and self._ridge_declared())):
            return False
        return self._budget_pays("feature_scale_share", (
            *self._conditioning_release_events(), self._feature_scale_event()[1],
            *self._releases_after_conditioning()))

    def _uses_private_conditioning(self) -> bool:
        """Whether this fit releases the private conditioning; none by default (the
        classifier and the least-squares regressor say when)."""
        return False

    def _ridge_declared(self) -> bool:
        r"""Whether a positive ridge ``l2`` is declared. The ridge :math:`\frac\lambda2
        \lVert v\rVert^2` acts in the coordinates the fit runs in, and the per-feature scale
        :math:`f` (a preconditioner: :math:`w = f\odot v_w`) would turn a declared ridge on
        the coefficients into one on :math:`w_j/f_j`, a different model for every draw of the
        release; so ``feature_scale_share="auto"`` releases no per-feature scale then
        (docs/estimators.md, "Private per-feature scale"). ``l2=0`` leaves every change of
        coordinates the same problem, and ``l2=None`` plans its ridge in the fit's own
        coordinates."""
        l2 = getattr(self, "l2", None)
        return l2 is not None and float(l2) > 0.0

    def _conditioning_events(self) -> list[Any]:
        """The events of the private feature range (when released), the private
        conditioning and, when released, the per-feature scale, in order (empty when the
        conditioning is not released)."""
        if not self._uses_private_conditioning():
            return []
        events = self._feature_range_events() if self._uses_feature_range() else []
        events.extend(self._conditioning_release_events())
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

    def _feature_range_rounds(self) -> tuple[float, ...]:
        """The split of ``feature_range_share`` between the histogram and the column
        offsets' two rounds (:data:`~noisygd.mechanisms.feature_range.FEATURE_RANGE_ROUNDS`,
        read when asked)."""
        from noisygd.mechanisms import feature_range

        return tuple(feature_range.FEATURE_RANGE_ROUNDS)

    def _feature_range_event(self, k: int = 0) -> tuple[float, Any]:
        r"""``(sigma, event)`` of the feature range's round ``k`` (public facts only: the
        budget, the relation and the number of columns), :math:`\mu_k = \sqrt{f_r
        s_k}\,\mu` (:meth:`_feature_range_rounds`' :math:`s_k`), :math:`\sigma =
        \Delta_k/\mu_k` on every entry. Round 0, the histogram: :math:`\Delta_0` its exact
        sensitivity (:func:`~noisygd.mechanisms.feature_range.range_sensitivity`:
        :math:`\sqrt{p + 1}` under add/remove, :math:`\sqrt{2p}` under replace-one). Rounds
        1 and 2, the column offsets' (:mod:`noisygd.mechanisms.column_offsets`), release
        statistics divided by :math:`\sqrt{S+1}`
        (:func:`~noisygd.mechanisms.column_offsets.round_sensitivity`)."""
        from noisygd.accounting.calibration import calibrate_mu
        from noisygd.accounting.events import Gaussian

        rel = Neighbouring(self.neighbouring)
        mu_r = math.sqrt(self._share_of_feature_range() * self._feature_range_rounds()[k]) \
            * calibrate_mu(float(self.epsilon), float(self.delta))
        sens = rel.clipped_sum_sensitivity
        return self._feature_range_sensitivity(k) / mu_r, Gaussian(sens / mu_r, sens, rel)

    def _feature_range_events(self) -> list[Any]:
        """The events of the feature range's rounds, in order."""
        return [self._feature_range_event(k)[1]
                for k in range(len(self._feature_range_rounds()))]

    def _feature_range_sensitivity(self, k: int = 0) -> float:
        """The L2 sensitivity of the feature range's round ``k`` under this fit's relation
        (:meth:`_feature_range_event`)."""
        from noisygd.mechanisms.column_offsets import round_sensitivity
        from noisygd.mechanisms.feature_range import range_sensitivity

        replace_one = Neighbouring(self.neighbouring) is Neighbouring.REPLACE_ONE
        if k:
            return round_sensitivity(k, replace_one)
        return range_sensitivity(int(self.__dict__["_n_columns"]), replace_one)

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
            *self._feature_range_events(), *self._conditioning_release_events(), *later,
            *self._releases_after_conditioning()))

    def _feature_range_stages(self, X: Any, child: int, then: Any, hand_on: list[Any]
                              ) -> list[PreRelease]:
        r"""The private feature range as :class:`~noisygd.training.PreRelease` stages: the
        histogram (:func:`~noisygd.mechanisms.feature_range.range_statistic` of the raw rows,
        stream ``child + 4``) and, where :meth:`_feature_range_rounds` splits the share, the
        column offsets' two rounds (:mod:`noisygd.mechanisms.column_offsets`: the offsets of
        the columns the histogram shows far from the origin, stream ``child + 40``, then their
        distances to them, stream ``child + 42``), each a statistic of ``X``.
        ``then(range)`` builds the next stage's oracles from the released
        :class:`~noisygd.mechanisms.feature_range.PrivateFeatureRange` (with its offsets);
        the stages before it hand on ``hand_on`` for
        :func:`~noisygd.training.fit_private`'s checks."""
        from noisygd.mechanisms.column_offsets import (
            deviation_statistic,
            deviation_statistic_size,
            offset_box,
            offset_statistic,
            offsets_from_release,
            refined_feature_range,
        )
        from noisygd.mechanisms.feature_range import feature_range_from_release

        R = float(self.row_norm_bound)
        sigma, event = self._feature_range_event(0)
        rounds = len(self._feature_range_rounds())
        state: dict[str, Any] = {}

        def reduce(noisy: np.ndarray) -> Any:
            released = feature_range_from_release(noisy, sigma, R)
            return released, (offset_box(noisy, sigma, pooled=released.pooled)
                              if rounds > 1 else None)

        def post(reduced: Any) -> PreparedFit:
            released, state["box"] = reduced
            self._private_feature_range = released
            self._warn_grid_ends(released)
            self._warn_separated_columns(released)
            if rounds == 1:
                return then(released)
            return PreparedFit(list(hand_on), None)

        # the histogram (2 p K + 1 counts) is condensed to the range before the next stage
        # builds its oracles: never held beside them
        stages = [PreRelease(FEATURE_RANGE_RELEASES[0], event, (), sigma,
                             self._release_rng(self.random_state, child=child + 4), post,
                             description="per feature and sign, counts of the nonzero values "
                                         "by binary exponent (a row adds <= 1 per feature)",
                             statistic=lambda: self._range_statistic(X),
                             statistic_terms=int(X.shape[1]) + 1,
                             statistic_sensitivity=self._feature_range_sensitivity(),
                             reduce=reduce)]
        if rounds == 1:
            return stages
        sigma_o, event_o = self._feature_range_event(1)
        sigma_d, event_d = self._feature_range_event(2)

        def post_offsets(noisy: np.ndarray) -> PreparedFit:
            state["offset"], _ = offsets_from_release(noisy, state["box"], sigma_o)
            return PreparedFit(list(hand_on), None)

        def post_deviations(noisy: np.ndarray) -> PreparedFit:
            released = refined_feature_range(self._private_feature_range, state["box"],
                                             state["offset"], noisy, sigma_d, R)
            self._private_feature_range = released
            return then(released)

        stages.append(PreRelease(
            FEATURE_RANGE_RELEASES[1], event_o, (), sigma_o,
            self._release_rng(self.random_state, child=child + 40), post_offsets,
            description="per column far from the origin (one sign, nonzero in every row), "
                        "sum_i clip((x_ij - b_j)/h_j, -1, 1) over its released box, and the "
                        "row count, over sqrt(S + 1)",
            statistic=lambda: self._row_statistic(X, offset_statistic, state["box"].size + 1,
                                                  box=state["box"]),
            statistic_terms=1, statistic_sensitivity=self._feature_range_sensitivity(1)))
        stages.append(PreRelease(
            FEATURE_RANGE_RELEASES[2], event_d, (), sigma_d,
            self._release_rng(self.random_state, child=child + 42), post_deviations,
            description="per such column, counts of |x_ij - o_j| by binary exponent, and the "
                        "row count, over sqrt(S + 1)",
            statistic=lambda: self._row_statistic(
                X, deviation_statistic, deviation_statistic_size(state["box"].size),
                box=state["box"],
                offset=state["offset"]),
            statistic_terms=1, statistic_sensitivity=self._feature_range_sensitivity(2)))
        return stages

    def _warn_grid_ends(self, released: Any) -> None:
        """Warn where a column's released magnitude sits at an end of the feature range's
        grid (:func:`~noisygd.mechanisms.feature_range.columns_at_the_grid_ends`; public)."""
        import warnings

        from noisygd.mechanisms.feature_range import EXPONENTS, columns_at_the_grid_ends

        top, bottom = columns_at_the_grid_ends(released)
        for columns, words in (
                (top, f"reached the top of its grid (|x| up to 2^{EXPONENTS[1] + 1}): larger "
                      "values are projected onto the row bound"),
                (bottom, f"lie at the bottom of its grid (|x| below 2^{EXPONENTS[0] + 1}): "
                         "smaller values are scaled as if they were that large and the fit "
                         "sees them shrunk")):
            if columns:
                shown = ", ".join(str(j) for j in columns[:10])
                warnings.warn(
                    f"{type(self).__name__}: the private feature range of column(s) {shown}"
                    f"{' ...' if len(columns) > 10 else ''} {words}; declare feature_bounds "
                    "(public bounds of the columns) or rescale them", UserWarning,
                    stacklevel=user_stacklevel())

    def _warn_separated_columns(self, released: Any) -> None:
        """Warn where a column's occupied bins have a long empty stretch between them
        (:attr:`~noisygd.mechanisms.feature_range.PrivateFeatureRange.separated`; public):
        a few values far from the rest set the column's scale, and the fit sees the rest
        shrunk by the ratio."""
        import warnings

        found = released.separated
        if not found:
            return
        shown = "; ".join(
            f"column {j}: [{a[0]:.4g}, {a[1]:.4g}] and [{b[0]:.4g}, {b[1]:.4g}], {empty} empty "
            "binary octaves between" for j, a, b, empty in found[:5])
        warnings.warn(
            f"{type(self).__name__}: the private feature range found values far apart in "
            f"{len(found)} column(s) ({shown}{'; ...' if len(found) > 5 else ''}): a few "
            "values far from the rest (sentinel codes such as 999 or -1 for missing, a unit "
            "mixed up) set the column's scale, and the fit sees its other values shrunk; "
            "drop or impute them, or declare feature_bounds (public bounds of the columns)",
            UserWarning, stacklevel=user_stacklevel())

    def _row_statistic(self, X: Any, statistic: Any, size: int, **kwargs: Any) -> np.ndarray:
        """``statistic(X, **kwargs)``, a vector of ``size`` sums over the rows: in memory, or
        summed over a Dask collection's partitions on the cluster
        (:func:`~noisygd.oracles.dask.partition_sum`: the same sums, integer counts
        exactly). **Not private**: the stage adds the noise."""
        if self.__dict__.get("_rows_in_memory", True):
            return statistic(X, **kwargs)
        import functools

        from noisygd.oracles.dask import partition_sum

        return partition_sum(X, functools.partial(statistic, **kwargs) if kwargs else statistic,
                             size)

    def _range_statistic(self, X: Any) -> np.ndarray:
        """:func:`~noisygd.mechanisms.feature_range.range_statistic` of the rows
        (:meth:`_row_statistic`)."""
        from noisygd.mechanisms.feature_range import range_statistic, range_statistic_size

        return self._row_statistic(X, range_statistic, range_statistic_size(X.shape[1]))

    def _range_scale(self) -> np.ndarray | None:
        """The released feature range's scale :math:`g` (None when not released)."""
        released = self.__dict__.get("_private_feature_range")
        return None if released is None else released.scale

    def _range_about(self, n_features: int) -> np.ndarray:
        r""":math:`g\odot o`, the released column offsets in the coordinates
        :math:`g\odot x` the conditioning releases its centre in (zeros without offsets):
        the centre its first round reads the rows about."""
        released = self.__dict__.get("_private_feature_range")
        if released is None or released.offset is None:
            return np.zeros(n_features)
        return released.scale * released.offset

    def _released_centre(self, private: Any) -> np.ndarray:
        r"""The private conditioning's centre in the coordinates of ``X``: released in those
        of :math:`g\odot x` when the feature range was released (:math:`c'/g`)."""
        g = self._range_scale()
        return private.centre if g is None else private.centre / g

    def _conditioning_stages(self, X: Any, targets: list[Any], child: int
                             ) -> tuple[list[PreRelease], list[Any], list[Any]]:
        """The private conditioning's stage (:meth:`_conditioning_stage`, on the release
        stream ``child``) and, when released, the private feature range's before it
        (:meth:`_feature_range_stages`, on streams ``child + 4``, ``+ 40``, ``+ 42``) and the
        per-feature scale's after it (:meth:`_feature_scale_stage`, on stream ``child + 2``),
        with the oracles the first reads and the list the last one's post-processing
        fills."""
        scaled = self._uses_feature_scale()
        ranged = self._uses_feature_range()
        stages, conditioning_reads, built = self._conditioning_stage(
            X, targets, self._release_rng(self.random_state, child=child),
            next_sums=("rows", "absolute_rows") if scaled else (), deferred=ranged,
            child=child)
        raw = conditioning_reads
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
                conditioning_reads[:] = self._conditioning_raw_oracles(
                    X, targets, released.scale, released.offset)
                return PreparedFit(list(conditioning_reads), None)

            stages[0:0] = self._feature_range_stages(X, child, then, unranged)
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
            return PreparedFit(list(built), self._clip_for_method(X.shape[1]),
                               start=self._start(X.shape[1]))

        stage = PreRelease("feature_scale", event, ("absolute_rows",), sigma, rng, then,
                           description="sum_i |a_i|, a_i = (x~_i - c)/R, ||a_i|| <= 1 "
                                       "(c the released centre)")
        return stage, built

    def _affords_conditioning(self) -> bool:
        """With ``conditioning_share="auto"``: whether the budget pays for the conditioning
        release and the fit (public facts only: epsilon, delta, the method, earlier prior
        events; no data is read)."""
        return self._budget_pays("conditioning_share", (
            *self._conditioning_release_events(), *self._releases_after_conditioning()))

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
