"""``DPHuberRegressor`` and ``DPLinearRegression``: private regression on a declared target
range."""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any, ClassVar

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils.validation import validate_data

from noisygd._checks import (
    check_bool,
    check_choice,
    check_data,
    check_fraction,
    check_positive,
    check_real,
    user_stacklevel,
)
from noisygd.accounting.events import Neighbouring
from noisygd.estimators._base import _COMMON_DOC, _DPLinearModel
from noisygd.estimators._common import (
    _ACCEPT_SPARSE,
    DEFAULT_CONDITIONING_SHARE,
    DEFAULT_FEATURE_RANGE_SHARE,
    DEFAULT_FEATURE_SCALE_SHARE,
    DEFAULT_SCALE_SHARE,
    DEFAULT_TARGET_RANGE_SHARE,
    FALLBACK_TARGET_BOUND,
    TARGET_RANGE_RELEASES,
    _check_scale,
)
from noisygd.estimators._residual_scales import (
    HUBER_K,
    RESOLVED_SCALE_RATIO,
    SCALE_SUM_NAMES,
    SCALE_SUMS,
    huber_clip,
    residual_bound,
    residual_scales_from_release,
    target_scale_noise,
)
from noisygd.mechanisms.noise import is_secure, secure_event
from noisygd.objectives.base import Objective
from noisygd.oracles.rows import canonical_rows
from noisygd.solvers.base import ReleasedFacts
from noisygd.training import PreparedFit, PreRelease

#: The regressors' target parameters in their class docs (numpydoc).
_TARGET_DOC = """    target_bound : float, optional
        Declares the targets public-bounded by ``B``: they are clipped to ``[-B, B]``
        (per-row, free), and to the private target range within it where that is released
        (``target_range_share``).
    target_range : (low, high), optional
        Public range of the targets, declared by you (e.g. a documented range; never
        computed from the data). Overrides ``target_bound``: targets are clipped to
        ``[low, high]`` and fitted centred at ``(low + high)/2``, which halves the
        residual bound of ``[0, 1]`` targets against ``target_bound=1``. Where the private
        target range is released (``target_range_share``), it narrows the declared range:
        a proportion declared on ``[0, 1]`` whose values lie in ``(0.5, 1]`` is fitted on
        ``[0.5, 1]``, with half the noise. ``target_range_share=0`` keeps the declared range
        as it is.
    target_range_share : float in [0, 0.5] or "auto", default="auto"
        **Private target range** (:mod:`noisygd.mechanisms.target_range`), declared range or
        not (within a declared one, intersected with it: a declared range is a bound the
        targets lie in, often far wider than they spread): the fit first releases, with this share
        of its Gaussian-DP budget :math:`\\mu^2`, the histogram of the targets by sign and binary
        exponent, with a bin for zero (a row adds one count: sensitivity 1 under add/remove,
        :math:`\\sqrt2` under replace-one), and clips the targets to the released range: the hull of
        the bins whose noisy counts pass the occupancy threshold (within a factor 2 of the targets'
        extremes); with an intercept, refined by a mean of the clipped targets and a histogram about
        it, twice (:data:`~noisygd.mechanisms.target_range.TARGET_RANGE_ROUNDS`: targets far from 0
        against their spread, a year or a temperature in kelvin, get a range of about their spread,
        not of their offset). ``"auto"`` is 0.08
        (:data:`~noisygd.mechanisms.target_range.TARGET_RANGE_SHARE`) where the method is a Gaussian
        composition (``ssp`` included: its sensitivity is the released half-range) or clips and
        composes with a prior release, the fit is neither tuned nor secure and the budget pays for
        it (rows in memory, or a Dask collection: the histogram is summed on the cluster); recorded
        first in the ledger (``<Estimator>/target_range``, then ``target_centre``,
        ``target_range_2``, ``target_centre_2`` and ``target_range_3``:
        :data:`TARGET_RANGE_RELEASES`), reported in ``fit_info_["target_range"]`` and used as
        ``target_range_``. Where it is not released, or resolves no bin (few rows against its
        noise), the targets are clipped to the declared range, or without one to ``[-1, 1]``
        with a ``UserWarning``: declare a range.
        Without it, targets in their own units (bike rentals, a bill in dollars, wine quality) were
        clipped to ``[-1, 1]`` silently and the test :math:`R^2` fell far below the constant
        predictor's (docs/estimators.md, "Private target range").
    clip_predictions : bool, default=True
        :meth:`predict` projects the linear scores onto the range the targets were clipped
        to (``target_range_``: the declared ``target_range``, else ``[-target_bound,
        target_bound]``, else the released range): for a target inside that range the
        projection never increases the squared error, and it is post-processing of the
        fitted model (free). ``False`` returns the linear scores ``X coef_ + intercept_``
        (rows outside the training domain mapped into it, as for every model).
"""


#: The release stream of the private target range (:meth:`_DPLinearModel._release_rng`);
#: its refined round ``k`` draws from ``TARGET_RANGE_CHILD + 2k`` (even streams: the
#: conditioning's rounds, from child 1, are odd).
TARGET_RANGE_CHILD = 6


class _DPRegressor(RegressorMixin, _DPLinearModel):
    target_bound: float | None
    _FIT_STATE: ClassVar[tuple[str, ...]] = (*_DPLinearModel._FIT_STATE,
                                             "_released_target_range", "_raw_targets",
                                             "_clip_targets", "_held_target_range")

    def _fit(self, X: Any, y: Any) -> _DPRegressor:
        """:meth:`fit` (the prior events held by :meth:`_prior_releases`).

        Raises
        ------
        BudgetExceededError
            With ``ledger=``: the dataset's budget cannot admit the fit (raised before
            ``X`` and ``y`` are read).
        """
        from noisygd.dask import fit_estimator, is_dask_collection  # docs/dask.md
        check_bool("clip_predictions", self.clip_predictions)
        self._rows_in_memory = not is_dask_collection(X)  # metadata: where the range is counted
        self.__dict__.pop("target_range_", None)  # an earlier fit's (this one sets its own)
        self._start_fit()
        if not self._rows_in_memory:  # the same fit over a DaskOracle
            return fit_estimator(self, X, y)
        if self.tune:  # a private selection: the declared range, or the fallback
            self._warn_fallback_target_range()
            out = self._fit_tuned(X, y)
            mid, half = self._target_centre_half()
            self.target_range_ = (mid - half, mid + half)
            return out
        previewed = self._preview_ledger(X)  # notes X's shape, which the releases' rules read
        check_data(X, y, y_numeric=True)  # messages quote no data
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True,
                             accept_sparse=_ACCEPT_SPARSE)
        X = canonical_rows(X, check_columns=True)  # once, before any row is read
        return self._fit_clipped_targets(X, np.asarray(y, dtype=np.float64), previewed, np.clip)

    def _fit_clipped_targets(self, X: Any, y: Any, previewed: Any, clip: Any) -> _DPRegressor:
        """The fit of the validated targets ``y`` (float64; in memory or a Dask array, with
        ``clip`` NumPy's or Dask's): clipped to the declared range, or to the private target
        range once released (:meth:`_with_target_range`, which reads ``y`` itself), centred at
        its midpoint; then ``target_range_``, ``fit_info_["target_range"]`` and the centre
        added back to the intercept. The one home of this map, in memory and on Dask."""
        # the decision (public facts, each check a preview of the budget) made once and held
        # for the fit: the warning, the stages and their events read it
        self.__dict__.pop("_held_target_range", None)
        self._held_target_range = self._uses_private_target_range()
        self._warn_fallback_target_range()
        mid, half = self._target_centre_half()
        if self._held_target_range:  # its release reads them, then clips them
            self._raw_targets = y
            self._clip_targets = clip
        # Centring each target at the range's midpoint and clipping it to the half-range are
        # per-row maps (clipped after the shift, so that rounding can never put a target
        # outside [-h, h]); with the private target range, again at the released one once it
        # is released (:meth:`_with_target_range`).
        y = clip(y - mid, -half, half)
        self.__dict__.pop("_target_shift", None)
        try:
            fit = self._fit_targets(X, [y], previewed)
            mid, half = self._target_centre_half()
            released = self.__dict__.get("_released_target_range")
        finally:
            for name in ("_released_target_range", "_raw_targets", "_clip_targets",
                         "_held_target_range"):
                self.__dict__.pop(name, None)
        self._store(fit)
        self._report_target_range(mid, half, released)
        self._add_target_centre(mid)
        return self

    def _check_common_params(self) -> None:
        """As every model's, and ``target_range_share`` (declared or not: a bad value is
        refused by name, before any data is read)."""
        super()._check_common_params()
        self._share_of_target_range()

    def _report_target_range(self, mid: float, half: float, released: Any) -> None:
        """``target_range_`` (the range the targets were clipped to and predictions are
        projected onto) and, with the private target range, ``fit_info_["target_range"]``
        (its share, rule, event, threshold, noise, whether it resolved a bin and the declared
        range it narrowed, if any); warns, without a declared range, where it resolved none
        (the targets were clipped to the fallback ``[-1, 1]``) or reached its grid's end."""
        self.target_range_ = (mid - half, mid + half)
        if released is None:
            return
        from noisygd.mechanisms.target_range import TARGET_RANGE_SHARE

        within = self._declared_target_range()
        self.fit_info_["target_range"] = {
            "share": self._declared_share("target_range_share", TARGET_RANGE_SHARE),
            "rule": "the hull of the occupied bins (a zero bin, and by sign the binary "
                    "exponents (2^k, 2^(k+1)]), or where no sign bin is, of the narrowest "
                    "occupied windows of 2 to 8 adjacent bins, on the grid 2^-497 to 2^498; "
                    "occupied: the noisy count reaches z sigma (at most 0.001 chance that "
                    "any empty bin or window of the core grid 2^-30 to 2^41 does, 0.0001 "
                    "beyond it), and outwards from each end the next bins while their noisy "
                    "counts reach z_e sigma (level 0.05); [-1, 1] where none spans a range; "
                    "within a declared range, intersected with it (the declared range where "
                    "none spans a range); with an intercept narrowed twice by a mean of the "
                    "clipped targets and the hull of a histogram about it, intersected with "
                    "the range before (noisygd.mechanisms.target_range, 'Refined rounds', "
                    "'Edges')",
            "event": " + ".join(e.describe() for _, e in self._target_range_events()),
            "released": ((released.low, released.high)
                         if released.resolved or within is not None else None),
            "declared": within,
            "threshold": released.threshold, "noise_std": released.noise_std,
            "window": released.window, "resolved": released.resolved,
            "zero_only": released.zero_only,
            "rounds": [dict(r) for r in released.rounds]}
        if within is not None:  # the declared range bounds the targets: nothing to warn of
            self._warn_separated_targets(released)  # but codes inside it
            return
        if not released.resolved:
            why = released.unresolved_reason(released.zero_only)
            warnings.warn(
                f"{type(self).__name__}: the private target range resolved no bin ({why}), "
                "so the targets were clipped to "
                f"[-{FALLBACK_TARGET_BOUND:g}, {FALLBACK_TARGET_BOUND:g}]; declare "
                "target_range=(low, high) (a public range of the targets)", UserWarning,
                stacklevel=user_stacklevel())
            return
        from noisygd.mechanisms.target_range import (
            TARGET_EXPONENTS,
            TARGET_GRID_BOTTOM_EDGE,
            TARGET_GRID_TOP_EDGE,
        )

        edge = TARGET_GRID_TOP_EDGE
        if max(-released.low, released.high) >= edge:
            warnings.warn(
                f"{type(self).__name__}: the private target range reached the end of its "
                f"grid (|y| up to 2^{TARGET_EXPONENTS[1] + 1} = {edge:.3g}): larger targets were "
                "clipped to it; declare target_range=(low, high) (a public range of the "
                "targets) or rescale them", UserWarning, stacklevel=user_stacklevel())
        floor = TARGET_GRID_BOTTOM_EDGE
        if max(-released.low, released.high) <= floor:
            warnings.warn(
                f"{type(self).__name__}: the private target range sits at the bottom of its "
                f"grid (|y| below 2^{TARGET_EXPONENTS[0] + 1} = {floor:.3g}): the fit's units are "
                "set as if the targets were that large, so it resolves them coarsely; "
                "declare target_range=(low, high) (a public range of the targets) or "
                "rescale them", UserWarning, stacklevel=user_stacklevel())
        self._warn_separated_targets(released)

    def _warn_separated_targets(self, released: Any) -> None:
        """Warn where the private target range's first histogram has occupied bins of one
        sign with :data:`~noisygd.mechanisms.target_range.SEPARATED_OCTAVES` or more empty
        octaves between them and the final range still spans both (post-processing of the
        release: :func:`~noisygd.mechanisms.target_range.separated_spans`)."""
        from noisygd.mechanisms.target_range import separated_spans

        found = separated_spans(released.occupied)
        if found is None:
            return
        inner, outer, empty = found
        if not all(lo < released.high and hi > released.low for lo, hi in (inner, outer)):
            return  # the refined rounds left one of them out: its targets are clipped
        warnings.warn(
            f"{type(self).__name__}: the private target range spans targets in "
            f"[{inner[0]:.4g}, {inner[1]:.4g}] and in [{outer[0]:.4g}, {outer[1]:.4g}], with "
            f"{empty} empty binary octaves between them: a few targets far from the rest "
            "(sentinel codes such as 99999 or -1 for missing, a unit mixed up) set the "
            "range, and the fit's noise and clip scale with it; drop or impute them, or "
            "declare target_range=(low, high) (a public range of the targets)", UserWarning,
            stacklevel=user_stacklevel())

    def _warn_fallback_target_range(self) -> None:
        """Warn, before any data is read, where no target range is declared and none will be
        released (public facts only): the targets are clipped to ``[-1, 1]``."""
        if self._declared_target_centre_half() is not None or self._uses_private_target_range():
            return
        warnings.warn(
            f"{type(self).__name__}: no target_range or target_bound is declared and this fit "
            "does not release a private target range (target_range_share=0, tune=True, "
            "secure=True, a method that does not compose with a "
            "prior release, or a budget too small for it), so the targets are clipped to "
            f"[-{FALLBACK_TARGET_BOUND:g}, {FALLBACK_TARGET_BOUND:g}]; declare "
            "target_range=(low, high) (a public range of the targets)", UserWarning,
            stacklevel=user_stacklevel())

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

        During a fit, the released private target range once released (public:
        post-processing of its release; within a declared range, the part of it the release
        narrowed it to); else ``target_range=(low, high)`` gives ``m = (low + high)/2``,
        ``h = (high - low)/2``; else ``target_bound`` gives ``m = 0`` and ``h =
        target_bound`` (public by declaration); else, after a fit, ``target_range_``; else
        :data:`FALLBACK_TARGET_BOUND`.
        """
        declared = self._declared_target_centre_half()
        released = self.__dict__.get("_released_target_range")
        if released is not None and (released.resolved or declared is not None):
            return released.centre_half(symmetric=not self.fit_intercept)
        if declared is not None:
            return declared
        fitted = self.__dict__.get("target_range_")
        if fitted is not None and released is None:
            low, high = fitted
            return (low + high) / 2.0, (high - low) / 2.0
        return 0.0, FALLBACK_TARGET_BOUND

    def _declared_target_centre_half(self) -> tuple[float, float] | None:
        """``(m, h)`` of the declared ``target_range`` or ``target_bound``; None where
        neither is declared."""
        if getattr(self, "target_range", None) is None:
            if self.target_bound is None:
                return None
            t = check_positive("target_bound", self.target_bound)
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

    def _declared_target_range(self) -> tuple[float, float] | None:
        """The declared range ``(m - h, m + h)`` of :meth:`_declared_target_centre_half`;
        None where none is declared."""
        declared = self._declared_target_centre_half()
        return None if declared is None else (declared[0] - declared[1],
                                              declared[0] + declared[1])

    def _pre_release(self) -> Any:
        """The events of the releases this fit makes before its run, in order (public facts
        only): the private target range (:meth:`_uses_private_target_range`), the private
        feature range, centre and per-feature scale when the centre is released
        (:meth:`_uses_private_conditioning`), then the model's later releases
        (:meth:`_releases_after_conditioning`: ``DPLinearRegression``'s residual scale)."""
        from noisygd.accounting.events import Composed

        events = self._events_after_target_range()
        if self._uses_private_target_range():
            events[:0] = [event for _, event in self._target_range_events()]
        return None if not events else events[0] if len(events) == 1 else Composed(
            tuple(events))

    def _events_after_target_range(self) -> list[Any]:
        """The events of the releases made after the private target range (public facts
        only): the private conditioning's, then the model's later releases."""
        events = self._conditioning_events()
        events.extend(self._releases_after_conditioning())
        return events

    def _share_of_target_range(self) -> float:
        """``target_range_share`` as a number (``"auto"``: the module's
        :data:`~noisygd.mechanisms.target_range.TARGET_RANGE_SHARE`)."""
        from noisygd.mechanisms.target_range import TARGET_RANGE_SHARE

        return self._declared_share("target_range_share", TARGET_RANGE_SHARE)

    def _target_range_rounds(self) -> tuple[float, ...]:
        """The rounds' fractions of ``target_range_share`` (public facts only):
        :data:`~noisygd.mechanisms.target_range.TARGET_RANGE_ROUNDS` with an intercept, else
        one round at the whole share (the range is symmetric about 0 then)."""
        from noisygd.mechanisms.target_range import TARGET_RANGE_ROUNDS

        return TARGET_RANGE_ROUNDS if self.fit_intercept else (1.0,)

    def _target_range_events(self) -> list[tuple[float, Any]]:
        r"""``(sigma, event)`` of each round of the private target range (public facts
        only): round ``k`` with the fraction :math:`r_k` of the share :math:`f_t` gets
        :math:`\mu_k = \sqrt{r_k f_t}\,\mu`, :math:`\sigma_k = \Delta_k/\mu_k`,
        :math:`\Delta_k` its statistic's exact sensitivity (the histograms':
        :func:`~noisygd.mechanisms.target_range.target_range_sensitivity`, 1 or
        :math:`\sqrt2`; the means': :func:`~noisygd.mechanisms.target_range.
        target_mean_sensitivity`, :math:`\sqrt2` or 2); the :math:`\mu_k^2` add up to
        :math:`f_t\mu^2`."""
        from noisygd.accounting.calibration import calibrate_mu
        from noisygd.accounting.events import Gaussian
        from noisygd.mechanisms.target_range import (
            target_mean_sensitivity,
            target_range_sensitivity,
        )

        rel = Neighbouring(self.neighbouring)
        replace = rel is Neighbouring.REPLACE_ONE
        mu = calibrate_mu(float(self.epsilon), float(self.delta))
        share = self._share_of_target_range()
        sens = rel.clipped_sum_sensitivity
        out = []
        for k, fraction in enumerate(self._target_range_rounds()):
            mu_k = math.sqrt(share * fraction) * mu
            exact = (target_mean_sensitivity(replace) if k % 2
                     else target_range_sensitivity(replace))
            out.append((exact / mu_k, Gaussian(sens / mu_k, sens, rel)))
        return out

    def releases_target_range(self) -> bool:
        """Whether a fit with these parameters releases the private target range before its
        run (docs/estimators.md, "Private target range"; within a declared ``target_range``
        or ``target_bound``, which it narrows, or alone): a positive
        ``target_range_share``, not tuned and not secure, a method that composes with the
        release, and with ``"auto"`` a budget that pays for it. Public facts only: no data
        is read, and the answer is the fit's."""
        return bool(self._uses_private_target_range())

    def _uses_private_target_range(self) -> bool:
        """Whether this fit first releases the private target range (class doc,
        ``target_range_share``; public facts only; a declared range is checked, then
        narrowed by the release): a positive share, not tuned and not secure, a method that
        is a Gaussian composition (``Solver.gaussian``: the release composes exactly with it,
        and a method whose sensitivity is the target bound, SSP, reads the released one) or
        clips and composes with a prior release and, with ``"auto"``, a budget that pays for
        it with the later releases and the fit (rows in memory or a Dask collection). During
        a fit, the decision :meth:`_fit_clipped_targets` made and holds."""
        held = self.__dict__.get("_held_target_range")
        if held is not None:
            return bool(held)
        self._declared_target_centre_half()  # a malformed declaration is refused by name
        if (self._share_of_target_range() <= 0.0
                or self.tune or self.secure or "_clip_factor" in self.__dict__):
            return False
        solver = self._solver
        if not (solver.gaussian or (solver.clips_gradients and solver.accepts_prior_event)):
            return False
        return self._budget_pays("target_range_share", (
            *(event for _, event in self._target_range_events()),
            *self._events_after_target_range()))

    def _with_target_range(self, X: Any, targets: list[Any], stages: list[PreRelease],
                           reads: list[Any] | None, built: list[Any]
                           ) -> tuple[tuple[PreRelease, ...], list[Any]] | None:
        r"""The pre-release ``stages`` with the private target range's stages first where it
        is released (:meth:`_uses_private_target_range`; release streams
        :data:`TARGET_RANGE_CHILD` ``+ 2k``, names :data:`TARGET_RANGE_RELEASES`), and the
        oracles the first stage reads.

        Round 0's statistic is :func:`~noisygd.mechanisms.target_range.target_histogram` of
        the raw targets; with an intercept, the refined rounds follow (a mean of the targets
        clipped to the current range, :func:`~noisygd.mechanisms.target_range.
        target_mean_statistic`, then the histogram of the targets less that mean; module doc
        of :mod:`noisygd.mechanisms.target_range`, "Refined rounds"). The last round's
        post-processing sets the released range, clips the targets to it (``targets`` is
        changed in place: the later stages' post-processing builds its oracles from it) and
        hands the next stage what it reads: ``reads``, the private conditioning's oracles
        (row sums of ``X`` only, so the targets they were built with do not matter), or
        where ``reads`` is None the fit's oracles, built here and put in ``built`` (for the
        residual scale's post-processing)."""
        if not self._uses_private_target_range():
            return (tuple(stages), reads if reads is not None else built) if stages else None
        from noisygd.mechanisms.target_range import (
            EDGE_LEVEL,
            PrivateTargetRange,
            centre_from_release,
            range_within_declared,
            refined_range,
            target_histogram,
            target_histogram_size,
            target_mean_sensitivity,
            target_mean_statistic,
            target_range_from_release,
            target_range_sensitivity,
        )

        raw_targets, clip = self.__dict__["_raw_targets"], self.__dict__["_clip_targets"]
        replace = Neighbouring(self.neighbouring) is Neighbouring.REPLACE_ONE
        rounds = self._target_range_events()
        initial: list[Any] = []
        # what fit_private checks before the first stage (its statistic reads the targets):
        # on rows in memory the first row only, so that no pass over X is spent on them; on
        # Dask the conditioning's (or, without it, the fit's) oracles, as built
        if self.__dict__.get("_rows_in_memory", True):
            first = self._oracles(X[:1], [t[:1] for t in targets])
        elif reads is not None:
            first = list(reads)
        else:
            first = initial[:] = self._oracles(X, targets)
        state: dict[str, Any] = {}  # the rounds' public state: range, centre, records
        declared = self._declared_target_range()
        if declared is not None:
            state["declared"] = declared

        def finish() -> PreparedFit:
            first_range = state["first"]
            low, high = state.get("range", (first_range.low, first_range.high))
            self._released_target_range = dataclasses.replace(
                first_range, low=low, high=high, rounds=tuple(state.get("rounds", ())))
            mid, half = self._target_centre_half()
            targets[:] = [clip(raw_targets - mid, -half, half)]
            if reads is not None:
                return PreparedFit(list(reads), None)
            for oracle in initial:  # a DaskOracle's partitions, built for the checks only
                getattr(oracle, "close", lambda: None)()
            built[:] = self._oracles(X, targets)
            return PreparedFit(list(built), self._clip_for_method(X.shape[1]))

        def centre_half() -> tuple[float, float]:
            """The current range's centre and half-width (the fallback's before round 0
            resolves one, so that every round's statistic is defined)."""
            low, high = state.get("range", state.get(
                "declared", (-FALLBACK_TARGET_BOUND, FALLBACK_TARGET_BOUND)))
            return (low + high) / 2.0, (high - low) / 2.0

        def histogram_stage(k: int, sigma: float, event: Any) -> PreRelease:
            def statistic() -> np.ndarray:  # the targets (later: their distances to the
                # released centre) as a column (a Dask one: its partitions)
                column = (raw_targets[:, None] if k == 0
                          else abs(raw_targets[:, None] - state.get("centre", centre_half()[0])))
                return self._row_statistic(column, target_histogram, target_histogram_size())

            def then(released: PrivateTargetRange) -> PreparedFit:
                if k == 0:
                    state["first"] = released
                    if "declared" in state:
                        state["range"] = range_within_declared(state["declared"], released)
                    elif released.resolved:
                        state["range"] = (released.low, released.high)
                elif "range" in state:
                    centre = state.get("centre", centre_half()[0])
                    before = state["range"]
                    state["range"] = refined_range(before, centre, released)
                    state.setdefault("rounds", []).append({
                        "kind": "histogram", "noise_std": sigma,
                        "range": state["range"] if state["range"] != before else None})
                return finish() if k == len(rounds) - 1 else PreparedFit(list(first), None)

            return PreRelease(
                TARGET_RANGE_RELEASES[k], event, (), sigma,
                self._release_rng(self.random_state, child=TARGET_RANGE_CHILD + 2 * k), then,
                description=("counts of the targets" if k == 0 else
                             "counts of the targets' distances to the released centre")
                + " in a zero bin and by sign and binary exponent (a row adds 1)",
                statistic=statistic, statistic_terms=1,
                statistic_sensitivity=target_range_sensitivity(replace),
                reduce=lambda noisy: target_range_from_release(
                    noisy, sigma, edge_level=EDGE_LEVEL if k == 0 else None))

        def mean_stage(k: int, sigma: float, event: Any) -> PreRelease:
            def statistic() -> np.ndarray:
                m, h = centre_half()
                return self._row_statistic(raw_targets[:, None], target_mean_statistic, 2,
                                           centre=m, half=h)

            def then(noisy: np.ndarray) -> PreparedFit:
                if "range" in state:
                    m, h = centre_half()
                    centre = centre_from_release(noisy, m, h, sigma)
                    if centre is not None:
                        state["centre"] = centre
                    state.setdefault("rounds", []).append(
                        {"kind": "mean", "noise_std": sigma, "centre": centre})
                return finish() if k == len(rounds) - 1 else PreparedFit(list(first), None)

            return PreRelease(
                TARGET_RANGE_RELEASES[k], event, (), sigma,
                self._release_rng(self.random_state, child=TARGET_RANGE_CHILD + 2 * k), then,
                description="(sum_i 1, sum_i clip((y_i - m)/h, -1, 1)), [m - h, m + h] the "
                            "range released before",
                statistic=statistic, statistic_terms=2,
                statistic_sensitivity=target_mean_sensitivity(replace))

        own = [mean_stage(k, sigma, event) if k % 2 else histogram_stage(k, sigma, event)
               for k, (sigma, event) in enumerate(rounds)]
        return (*own, *stages), first

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
            if private.row_bound is not None:  # the rows' radius about the released centre
                bound = float(private.row_bound)
            if self.intercept_scale is None:
                scale = private.intercept_scale / math.sqrt(n_features)
        return centre, bound, scale

    def _pre_release_stage(self, X: Any, targets: list[Any]
                           ) -> tuple[tuple[PreRelease, ...], list[Any]] | None:
        """The private target range (:meth:`_with_target_range`), then the private feature
        range, centre and per-feature scale when the centre is released
        (:meth:`_conditioning_stages`, release streams from child 1) as the fit's
        pre-release stages, else None; ``DPLinearRegression`` adds its residual scale."""
        stages: list[PreRelease] = []
        raw = None
        if self._uses_private_conditioning():
            stages, raw, _ = self._conditioning_stages(X, targets, child=1)
        return self._with_target_range(X, targets, stages, raw, [])

    def predict(self, X: Any) -> np.ndarray:
        r"""Predicted targets: the linear scores projected onto the declared target range
        :math:`[m - h, m + h]` (``clip_predictions``, the class doc),

        .. math:: \hat y = \min(\max(x^\top w + b,\; m - h),\; m + h),

        for a target :math:`y \in [m - h, m + h]`, :math:`|\hat y - y| \le |x^\top w + b - y|`.
        """
        scores = self._linear(X)[:, 0]
        if not check_bool("clip_predictions", getattr(self, "clip_predictions", True)):
            return scores
        mid, half = self._target_centre_half()
        return np.clip(scores, mid - half, mid + half)

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
        targets' half-range :math:`h` (half of ``target_range``'s width, else
        ``target_bound``, else the private target range's; 1.0 in its fallback): public, and
        scale-equivariant (the fit of :math:`cy` with the range :math:`c` times as wide is
        :math:`c` times the fit of :math:`y`), where a fixed 1.0 ties the loss to the
        targets' units. Measured on
        ``benchmarks/bench_raw_tables.py``'s raw regression tables at epsilon 1 (share of the
        non-private :math:`R^2`, 2 seeds; hourly bike rentals in [0, 1000], a credit bill in
        [0, 200 000], wine quality in [0, 10]): threshold 1 -0.42 / -0.98 / 0.07 (a median
        regression whose bounded steps cannot move the intercept to the targets' mean),
        ``"auto"`` with the private releases below 0.974 / 0.991 / 0.537.
"""
        + _TARGET_DOC
        + r"""    conditioning_share : float in [0, 0.5] or "auto", default="auto"
        **Private centre**, as :class:`DPLinearRegression`'s: without ``feature_bounds``,
        with an intercept and a method that clips and composes with a prior release, not
        tuned and not secure, the fit first releases the rows' mean and mean squared norm
        (:func:`private_conditioning`, share 0.1 of :math:`\mu^2` with ``"auto"`` where
        the budget pays for it) and fits centred at the released mean. Recorded in the
        ledger before the fit's own release (``DPHuberRegressor/conditioning``, after the
        feature range's when that is released); ``conditioning_["release"]``
        reports it; 0 turns it off (and the two releases below with it).
    feature_scale_share : float in [0, 0.5] or "auto", default="auto"
        The private per-feature scale released after the private centre, as
        :class:`DPLogisticRegression`'s (share 0.05 with ``"auto"`` unless a positive
        ``l2`` is declared; 0 turns it off).
    feature_range_share : float in [0, 0.5] or "auto", default="auto"
        With the private centre released: the share of :math:`\mu^2` spent first on the
        **private feature range** (:mod:`noisygd.mechanisms.feature_range`, as for
        :class:`DPLogisticRegression`: the fit runs on :math:`g\odot x`), so raw columns
        of any scale are not crushed by the row bound, and the columns far from the origin
        are centred and rescaled (:mod:`noisygd.mechanisms.column_offsets`); ``"auto"`` is
        0.0625 where the budget pays for it, 0 turns it off. Without these three (as before
        issue 19's item 4) a
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
        target_bound: float | None = None,
        target_range: Any = None,
        clip_predictions: bool = True,
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
        target_range_share: float | str = DEFAULT_TARGET_RANGE_SHARE,
    ) -> None:
        self.conditioning_share = conditioning_share
        self.feature_scale_share = feature_scale_share
        self.feature_range_share = feature_range_share
        self.target_range_share = target_range_share
        self.epsilon = epsilon
        self.delta = delta
        self.method = method
        self.threshold = threshold
        self.l2 = l2
        self.fit_intercept = fit_intercept
        self.row_norm_bound = row_norm_bound
        self.target_bound = target_bound
        self.target_range = target_range
        self.clip_predictions = clip_predictions
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
    a method that clips and composes with a prior release (NoisyGD, Newton, NoisySGD,
    DP-FTRL, the dynamic schedules) and the default clip the fit releases before its run
    (after the private centre, when that is released), with a share :math:`f` of its
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
    and the ledger composes the releases to ``privacy_.epsilon``. The model does not depend on
    whether a ledger is attached. It is skipped (``target_scale_ = row_scale_ = 1``, nothing
    spent) with ``scale_share=0``, a given ``clip``, a method that does not clip
    (``output_perturbation``, ``rrpsgd``, ``langevin``, ``ssp``), and
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
    :math:`\lambda_{\min}`, is the regulariser. With ``method="newton"`` the same planned
    ridge (at the :math:`\mu` of its tail's gradients); with ``output_perturbation``
    Theorems 2-3's choice (``l2`` below). Other methods: ``1e-3``.

    Parameters
    ----------"""
        + _COMMON_DOC
        + _TARGET_DOC
        + """    radius : float, optional
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
        coordinates. Recorded in the ledger before the residual scale and the fit's own
        release (``DPLinearRegression/conditioning``, after the feature range's when that is
        released), composed in that order into ``privacy_``; ``conditioning_["release"]``
        reports it. ``"auto"`` is :data:`CONDITIONING_SHARE` (0.1) where the budget pays for
        it, the residual scale's release and the fit together, else 0; 0 turns it off. Why:
        uncentred rows make the intercept and the mean row nearly collinear, so a noisy run
        with few steps leaves the prediction's
        mean where the coefficients' noise puts it; on seven of ``bench_conditioning``'s off-centre
        problems (500 x 5, 500 x 20, 2000 x 5/20/100, 10 000 x 5/100; epsilon 0.5, 1, 8; 2 seeds)
        the centre raised DP-FTRL's mean share of the non-private R^2 from -10.6..0.88 to
        -0.12..0.998, and the default's at epsilon 1 from 0.02..1.00 to 0.45..1.00 (no cell lower by
        more than 0.01; 2000 x 100 at epsilon 8: 0.798 -> 0.789).
    feature_scale_share : float in [0, 0.5] or "auto", default="auto"
        The private per-feature scale released after the private centre, as
        :class:`DPLogisticRegression`'s (share 0.05 of :math:`\\mu^2` with ``"auto"`` unless
        a positive ``l2`` is declared; 0 turns it off); the residual scale is then released
        in the rescaled coordinates.
    feature_range_share : float in [0, 0.5] or "auto", default="auto"
        With the private centre released (rows in memory or Dask): the share of
        :math:`\\mu^2` spent first on the **private feature range**, as for
        :class:`DPLogisticRegression` (:mod:`noisygd.mechanisms.feature_range`: the fit runs
        on :math:`g\\odot x`, :math:`g_j = R/(m_j\\sqrt{\\bar k})` from each feature's released
        robust maximum, :math:`x - o` on the columns far from the origin,
        :mod:`noisygd.mechanisms.column_offsets`); ``"auto"`` is 0.0625 where the budget pays
        for it, 0 turns it off.

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
        target_bound: float | None = None,
        target_range: Any = None,
        clip_predictions: bool = True,
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
        target_range_share: float | str = DEFAULT_TARGET_RANGE_SHARE,
    ) -> None:
        self.conditioning_share = conditioning_share
        self.feature_scale_share = feature_scale_share
        self.feature_range_share = feature_range_share
        self.target_range_share = target_range_share
        self.epsilon = epsilon
        self.delta = delta
        self.method = method
        self.l2 = l2
        self.fit_intercept = fit_intercept
        self.row_norm_bound = row_norm_bound
        self.target_bound = target_bound
        self.target_range = target_range
        self.clip_predictions = clip_predictions
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
        clips and composes with a prior release (NoisyGD, Newton, NoisySGD, DP-FTRL, the
        dynamic schedules), the default clip, ``scale_share > 0``, not tuned (a run of a
        private selection carries ``_clip_factor``). With or without a ledger, secure or
        not: the model does not depend on whether a ledger is attached."""
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
        one's post-processing (:func:`~noisygd.training.fit_private`). The private target
        range comes first where it is released (:meth:`_with_target_range`): the half-range
        ``h`` is read when the scale's stage runs."""
        stages: list[PreRelease] = []
        raw: list[Any] | None = None
        built: list[Any] = []
        if self._uses_private_conditioning():  # its own streams, apart from the scale's
            stages, raw, built = self._conditioning_stages(X, targets, child=1)
        if not self._uses_private_scale():
            return self._with_target_range(X, targets, stages, raw, built)
        if self.secure:
            from noisygd.mechanisms.secure import SecureRandom

            rng: Any = SecureRandom()
        else:
            rng = self._release_rng(self.random_state)
        sigma, event = self._scale_event(rng)
        ranged = self._uses_private_target_range()
        if raw is None and not ranged:  # the scale reads the fit's own oracles
            built = self._oracles(X, targets)  # (with the target range: built after it)

        def half() -> float:
            return self._target_centre_half()[1]

        def then(noisy: np.ndarray) -> PreparedFit:
            h = half()
            self._scales = residual_scales_from_release(noisy, sigma, self._SCALE_Z)
            runs = list(built)  # the oracles this stage read (the centre's, if released)
            if self.fit_intercept:  # start at the released mean (class doc, "Target centre")
                self._target_shift = h * self._scales.target_mean
                runs = [built[0].with_targets(np.clip(t - self._target_shift, -h, h))
                        for t in targets]
            return PreparedFit(runs, self._clip_for_method(X.shape[1]),
                               self._released_facts(X.shape[1]))

        stages.append(PreRelease("target_scale", event, SCALE_SUM_NAMES, sigma, rng, then,
                                 target_half_range=half,
                                 description="(1, t, t^2, u), t = clip((y - m)/h, -1, 1), "
                                             "u = min(||x - c||^2/R^2, 1)"))
        return self._with_target_range(X, targets, stages, raw, built)

    def _released_facts(self, n_features: int) -> ReleasedFacts | None:
        r"""What the private scales tell the planner (class doc, "Released smoothness and
        comparator"; post-processing of the release): the squared loss's smoothness at the
        rows' released mean squared norm, :math:`\beta = R^2\hat U_+ + s^2`, the comparator
        radius :math:`D_0 = h\sqrt{\hat V}\sqrt d/(R\sqrt{\hat U})` and the mean curvature
        :math:`(R^2\hat U + s^2)/d'`. Where the release does not resolve the rows' scale,
        :math:`\hat U_+ > 2\hat U` (:data:`RESOLVED_SCALE_RATIO`), the smoothness alone (an
        upper confidence bound whatever the resolution: the rows' mean squared norm is
        below :math:`R^2\hat U_+`), the comparator and the ridge's balance from the declared
        facts; None (all declared) where the bounds leave floating-point range."""
        scales = self._scales
        _, bound, s = self._conditioning(n_features)
        if scales.row_scale_high ** 2 > RESOLVED_SCALE_RATIO * scales.row_scale ** 2:
            high = math.hypot(bound * scales.row_scale_high, s or 0.0)
            if not (math.isfinite(high) and high > 0.0):
                return None
            return ReleasedFacts(
                smoothness=self._make_objective().data_constants(high)[1],
                source="DPLinearRegression's private scales, unresolved (U_high > 2 U): "
                       "smoothness R^2 U_high + s^2 (trace bound at the rows' released mean "
                       "squared norm, upper confidence); the comparator declared")
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
