"""Scikit-learn estimators for differentially private linear models.

``DPLogisticRegression``, ``DPHuberRegressor`` and ``DPLinearRegression`` follow
the scikit-learn contract (parameters only in ``__init__``, ``fit`` returns
``self``, learned attributes end in ``_``) and add ``privacy_``: the event the
fit performed and its epsilon under every accountant, the tightest named.

Preprocessing inside ``fit`` is per-row only (each row is scaled to norm <=
``row_norm_bound``), so it costs no privacy. Feature scaling by statistics of
the data is *not* done here: scale by public bounds first (see
:mod:`noisygd.data`). Under add/remove neighbours the number of rows is
estimated privately unless declared public (``n_samples_public``); see
:mod:`noisygd.training`.

Checks of ``sklearn.utils.estimator_checks.check_estimator`` that contradict
differential privacy are listed in :data:`EXPECTED_FAILED_CHECKS` with the
reason; all other checks pass.
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from noisygd.accounting.events import Neighbouring
from noisygd.exceptions import PrivacyLeakWarning
from noisygd.objectives.base import Objective
from noisygd.training import PrivateFit, available_methods, fit_private

#: check_estimator checks that a differentially private estimator cannot pass,
#: with the reason (also in docs/estimators.md).
EXPECTED_FAILED_CHECKS: dict[str, dict[str, str]] = {}

DEFAULT_METHOD = "noisy_gd"


def _clip_rows(X: np.ndarray, bound: float) -> np.ndarray:
    """Scale each row to L2 norm <= ``bound`` (a per-row map: free under DP)."""
    norms = np.linalg.norm(X, axis=1)
    scale = np.minimum(1.0, bound / np.maximum(norms, np.finfo(float).tiny))
    return X * scale[:, None]


class _DPLinearModel(BaseEstimator):
    """Shared fit logic; subclasses provide the objective and the targets."""

    def _make_objective(self) -> Objective:  # pragma: no cover - abstract
        raise NotImplementedError

    def _check_common_params(self, n_rows: int) -> None:
        if isinstance(self.epsilon, bool) or not isinstance(self.epsilon, numbers.Real):
            raise TypeError(f"epsilon must be a real number, got {self.epsilon!r}")
        if not (self.epsilon > 0) or not np.isfinite(self.epsilon):
            raise ValueError(f"epsilon must be positive and finite, got {self.epsilon!r}")
        if isinstance(self.delta, bool) or not isinstance(self.delta, numbers.Real):
            raise TypeError(f"delta must be a real number, got {self.delta!r}")
        if not (0 < self.delta < 1):
            raise ValueError(f"delta must be in the open interval (0, 1), got {self.delta!r}")
        if self.delta >= 1.0 / max(n_rows, 1):
            warnings.warn(
                f"delta = {self.delta:g} >= 1/n = {1.0 / n_rows:.3g}: a mechanism that publishes "
                "one random row in full would meet this guarantee; use delta << 1/n",
                UserWarning,
                stacklevel=3,
            )
        if not (self.row_norm_bound > 0) or not np.isfinite(self.row_norm_bound):
            raise ValueError(f"row_norm_bound must be positive, got {self.row_norm_bound!r}")
        if self.l2 < 0 or not np.isfinite(self.l2):
            raise ValueError(f"l2 must be >= 0, got {self.l2!r}")
        method = DEFAULT_METHOD if self.method == "auto" else self.method
        if method not in available_methods():
            raise ValueError(
                f"unknown method {self.method!r}; choose 'auto' or one of: "
                + ", ".join(available_methods())
            )
        self._method = method

    def _fit_targets(self, X: np.ndarray, targets: list[np.ndarray]) -> PrivateFit:
        rng = np.random.default_rng(self.random_state)
        Xc = _clip_rows(X, self.row_norm_bound)
        return fit_private(
            self._make_objective(),
            Xc,
            targets,
            method=self._method,
            epsilon=float(self.epsilon),
            delta=float(self.delta),
            relation=Neighbouring(self.neighbouring),
            n_samples_public=self.n_samples_public,
            row_norm_bound=float(self.row_norm_bound),
            clip=self._effective_clip(),
            max_iter=self.max_iter,
            rng=rng,
            options=self.method_options,
        )

    def _effective_clip(self) -> float | None:
        """Clipping norm: the user's, else None (the method uses the objective's L)."""
        return self.clip

    def _store(self, fit: PrivateFit) -> None:
        thetas = np.vstack(fit.thetas)
        if self.fit_intercept:
            coef, intercept = thetas[:, :-1], thetas[:, -1]
        else:
            coef, intercept = thetas, np.zeros(thetas.shape[0])
        self.coef_ = coef if coef.shape[0] > 1 else coef[0]
        self.intercept_ = intercept if intercept.shape[0] > 1 else float(intercept[0])
        self.privacy_ = fit.privacy
        self.n_iter_ = np.array([r.n_iter for r in fit.results])
        self.fit_info_ = fit.info
        self.n_samples_used_ = fit.n_samples

    def _linear(self, X: np.ndarray) -> np.ndarray:
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        X = _clip_rows(X, self.row_norm_bound)
        coef = np.atleast_2d(self.coef_)
        return X @ coef.T + np.atleast_1d(self.intercept_)

    def privacy_report(self) -> dict[str, Any]:
        """The ``privacy_`` report as a JSON-ready dict."""
        check_is_fitted(self, "privacy_")
        return self.privacy_.to_dict()


_COMMON_DOC = """
    epsilon : float, default=1.0
        Total privacy budget (everything the fit releases, a private count of
        rows included).
    delta : float, default=1e-5
        Must be in (0, 1); should be well below 1/n (a warning says so).
    method : str, default="auto"
        Training algorithm; "auto" is the best available ("noisy_gd": NoisyGD
        with exact Gaussian-DP accounting). See
        :func:`noisygd.training.available_methods`.
    l2 : float
        L2 regularisation ``l2/2 ||theta||^2`` (intercept included).
    fit_intercept : bool, default=True
    row_norm_bound : float, default=1.0
        Each row is scaled to norm <= this bound before training (per-row,
        free). Scale features by public bounds beforehand.
    clip : float, optional
        Per-example gradient clipping norm; default: the objective's Lipschitz
        constant, so clipping never changes a gradient.
    max_iter : int, optional
        Cap on the number of noisy steps (the planner's choice otherwise).
    neighbouring : {"add_remove", "replace_one"}, default="add_remove"
    n_samples_public : int, optional
        Declare the number of training rows public. Otherwise, under
        add/remove, it is estimated by a Gaussian count paid for with 1% of
        the budget.
    method_options : dict, optional
        Extra keyword arguments for the method.
    random_state : int, Generator or None
        Seed of all noise; the same seed gives the same model.
"""


class DPLogisticRegression(ClassifierMixin, _DPLinearModel):
    __doc__ = (
        """Differentially private logistic regression.

    Binary problems are fitted directly; ``K > 2`` classes one-vs-rest, the
    budget split evenly in Gaussian-DP terms between the ``K`` problems.

    Parameters
    ----------"""
        + _COMMON_DOC
        + """    classes : array-like, optional
        The label set, declared public. If omitted it is read from ``y`` (a
        data-dependent step: a ``PrivacyLeakWarning`` says so).

    Attributes
    ----------
    coef_, intercept_, classes_, n_features_in_
    privacy_ : AccountingResult
        Event and epsilon at ``delta`` under each accountant; tightest named.
    n_iter_ : ndarray
        Noisy steps per problem.
    """
    )

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        *,
        method: str = "auto",
        l2: float = 1e-4,
        fit_intercept: bool = True,
        row_norm_bound: float = 1.0,
        clip: float | None = None,
        max_iter: int | None = None,
        neighbouring: str = "add_remove",
        n_samples_public: int | None = None,
        classes: Any = None,
        method_options: dict | None = None,
        random_state: Any = None,
    ) -> None:
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
        self.method_options = method_options
        self.random_state = random_state

    def _make_objective(self) -> Objective:
        from noisygd.objectives.glm import LogisticLoss

        return LogisticLoss(l2=self.l2, fit_intercept=self.fit_intercept)

    def fit(self, X: Any, y: Any) -> DPLogisticRegression:
        """Fit the model privately; returns ``self``."""
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=False)
        check_classification_targets(y)
        self._check_common_params(X.shape[0])
        if self.classes is None:
            warnings.warn(
                "the label set is read from y, which is data-dependent; pass classes=[...] to "
                "declare it public",
                PrivacyLeakWarning,
                stacklevel=2,
            )
            classes = np.unique(y)
        else:
            classes = np.unique(np.asarray(self.classes))
            unknown = np.setdiff1d(np.unique(y), classes)
            if unknown.size:
                raise ValueError(f"labels {unknown.tolist()} are not in classes={classes.tolist()}")
        if classes.size < 2:
            raise ValueError(
                f"DPLogisticRegression needs at least 2 classes; got {classes.size} class: "
                f"{classes.tolist()}"
            )
        self.classes_ = classes
        if classes.size == 2:
            targets = [np.where(y == classes[1], 1.0, -1.0)]
        else:
            targets = [np.where(y == c, 1.0, -1.0) for c in classes]
        self._store(self._fit_targets(X, targets))
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Linear scores; shape (n,) for binary, (n, K) otherwise."""
        scores = self._linear(X)
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities (sigmoid; one-vs-rest scores normalised for K > 2)."""
        scores = self._linear(X)
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

    def fit(self, X: Any, y: Any) -> _DPRegressor:
        """Fit the model privately; returns ``self``."""
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        self._check_common_params(X.shape[0])
        if not (self.target_bound > 0) or not np.isfinite(self.target_bound):
            raise ValueError(f"target_bound must be positive, got {self.target_bound!r}")
        # Clipping each target to the declared public bound is a per-row map.
        y = np.clip(np.asarray(y, dtype=np.float64), -self.target_bound, self.target_bound)
        self._store(self._fit_targets(X, [y]))
        return self

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
        + """    threshold : float, default=1.0
        Huber threshold: quadratic for residuals below it, linear above.
    target_bound : float, default=1.0
        Targets are clipped to [-target_bound, target_bound] (per-row, free).

    Attributes
    ----------
    coef_, intercept_, n_features_in_, privacy_, n_iter_
    """
    )

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        *,
        method: str = "auto",
        threshold: float = 1.0,
        l2: float = 1e-4,
        fit_intercept: bool = True,
        row_norm_bound: float = 1.0,
        target_bound: float = 1.0,
        clip: float | None = None,
        max_iter: int | None = None,
        neighbouring: str = "add_remove",
        n_samples_public: int | None = None,
        method_options: dict | None = None,
        random_state: Any = None,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.method = method
        self.threshold = threshold
        self.l2 = l2
        self.fit_intercept = fit_intercept
        self.row_norm_bound = row_norm_bound
        self.target_bound = target_bound
        self.clip = clip
        self.max_iter = max_iter
        self.neighbouring = neighbouring
        self.n_samples_public = n_samples_public
        self.method_options = method_options
        self.random_state = random_state

    def _make_objective(self) -> Objective:
        from noisygd.objectives.glm import HuberLoss

        return HuberLoss(threshold=self.threshold, l2=self.l2, fit_intercept=self.fit_intercept)


class DPLinearRegression(_DPRegressor):
    __doc__ = (
        """Differentially private ridge regression (squared loss, L2 penalty).

    The squared loss is not Lipschitz on an unbounded domain, so privacy comes
    from clipping per-example gradients at ``clip`` (default
    ``2 * target_bound * sqrt(row_norm_bound^2 + 1)``).

    Parameters
    ----------"""
        + _COMMON_DOC
        + """    target_bound : float, default=1.0
        Targets are clipped to [-target_bound, target_bound] (per-row, free).

    Attributes
    ----------
    coef_, intercept_, n_features_in_, privacy_, n_iter_
    """
    )

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        *,
        method: str = "auto",
        l2: float = 1e-3,
        fit_intercept: bool = True,
        row_norm_bound: float = 1.0,
        target_bound: float = 1.0,
        clip: float | None = None,
        max_iter: int | None = None,
        neighbouring: str = "add_remove",
        n_samples_public: int | None = None,
        method_options: dict | None = None,
        random_state: Any = None,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.method = method
        self.l2 = l2
        self.fit_intercept = fit_intercept
        self.row_norm_bound = row_norm_bound
        self.target_bound = target_bound
        self.clip = clip
        self.max_iter = max_iter
        self.neighbouring = neighbouring
        self.n_samples_public = n_samples_public
        self.method_options = method_options
        self.random_state = random_state

    def _make_objective(self) -> Objective:
        from noisygd.objectives.glm import SquaredLoss

        return SquaredLoss(
            l2=self.l2, fit_intercept=self.fit_intercept, target_bound=self.target_bound
        )

    def _effective_clip(self) -> float | None:
        if self.clip is not None:
            return self.clip
        b = float(np.hypot(self.row_norm_bound, 1.0 if self.fit_intercept else 0.0))
        return 2.0 * self.target_bound * b


__all__ = [
    "EXPECTED_FAILED_CHECKS",
    "DPHuberRegressor",
    "DPLinearRegression",
    "DPLogisticRegression",
]
