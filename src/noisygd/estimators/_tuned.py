"""Private tuning (``tune=True``) as a mixin of the estimators' base: the public candidate
grid, the plan of the private selection and the tuned fit (:mod:`noisygd.tuning`;
docs/tuning.md, "Estimators")."""

from __future__ import annotations

import math
import warnings
from typing import Any, ClassVar

import numpy as np
from sklearn.base import clone, is_classifier
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from noisygd._checks import check_data, check_fraction, check_positive, check_real
from noisygd.accounting.events import Neighbouring
from noisygd.estimators._common import _ACCEPT_SPARSE, EstimatorPrivacy, _delta_warning
from noisygd.oracles.rows import canonical_rows


class _PrivateTuning:
    """Methods of :class:`~noisygd.estimators._base._DPLinearModel` for ``tune=True``: the whole
    search is one release (module doc)."""

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
        X = canonical_rows(X, check_columns=True)  # once, before any row is read
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
