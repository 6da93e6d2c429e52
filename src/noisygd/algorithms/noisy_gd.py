r"""NoisyGD: full-batch gradient descent on clipped gradients plus Gaussian noise.

Lecture 12, equation (12.1), in the sum form with per-example clipping, the
(noise-free) regulariser gradient and an optional projection:

.. math::

    \theta_{t+1} = \Pi_C\Big(\theta_t - \eta_t\Big[\sum_{i=1}^n
        \mathrm{clip}_C(\nabla\ell_i(\theta_t)) + n\mu\,\theta_t
        + \mathcal N(0, (zC)^2 I_p)\Big]\Big), \qquad t = 1, \dots, T,

where ``n`` is the *public* number of rows ``n_samples`` (never read from the
private data: under add/remove neighbours the row count is itself private), ``C``
the clipping norm and ``z`` the noise multiplier.

Privacy (section 12.1.2): adding or removing one row changes the clipped sum
by at most ``C`` (replacing one: ``2C``); the regulariser term and the
projection are data-independent. Each step is therefore a Gaussian mechanism
with sensitivity 1 (or 2) in units of ``C``, and the run is the adaptive
composition of ``T`` of them. The returned event is
``SelfComposed(Gaussian(z, sensitivity), T)``, which is exactly
:math:`\sqrt T\,\Delta/z`-GDP (``rho = T Delta^2 / (2 z^2)``-zCDP, matching
:math:`\rho = TL^2/(2\sigma^2)` of 12.1.2 with :math:`\sigma = zC`, ``L = C``).

Everything released (every iterate and any average of them) is a function of the
noisy gradients and public values only, so averaging is free post-processing.

Step-size schedules and averaging (section 12.2):

* ``schedule="constant"``: :math:`\eta_t = \eta` (12.2.1-12.2.3);
* ``schedule="inverse_t"``: :math:`\eta_t = 1/(\lambda_{\rm sum}(t+1))` with
  :math:`\lambda_{\rm sum} = n\,\lambda` the strong convexity of the sum
  objective (12.2.4, to be used with ``averaging="weighted"``);
* ``averaging="last"``: :math:`\theta_{T+1}`;
  ``"uniform"``: :math:`\frac1T\sum_{t=1}^T\theta_t` (12.2.2, 12.2.3);
  ``"weighted"``: :math:`\frac{2}{T(T+1)}\sum_{t=1}^T t\,\theta_t` (12.2.4).
  As in the theorems, the averages run over the iterates :math:`\theta_1, \dots,
  \theta_T` (:math:`\theta_1` is the starting point).
  ``"suffix"``: :math:`\frac1k\sum_{t=T-k+2}^{T+1}\theta_t` with :math:`k = \lceil T/2\rceil`,
  the mean of the last half of the iterates (Rakhlin, Shamir & Sridharan, ICML 2012,
  "alpha-suffix averaging" with alpha = 1/2). No section-12.2 bound covers it; it forgets
  the early, optimisation-dominated iterates like ``"last"`` and averages out part of the
  noise of the stationary phase like ``"uniform"``.

Optional Nesterov momentum ``m`` (not covered by the section-12.2 bounds; used by
the planner's ``accelerate=True`` mode): the noisy gradient :math:`g_t` is taken
at the look-ahead point :math:`q_t = \theta_t + m v_t` and
:math:`v_{t+1} = m v_t - \eta_t g_t`, :math:`\theta_{t+1} = \Pi_C(\theta_t + v_{t+1})`
(then :math:`v_{t+1} \leftarrow \theta_{t+1} - \theta_t`). The iterates are
still post-processing of the noisy gradients, so the event is unchanged.
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

from noisygd._checks import check_real_positive as _positive
from noisygd.accounting.events import Gaussian, Neighbouring, SelfComposed
from noisygd.algorithms.base import FitResult
from noisygd.objectives.base import Objective

__all__ = ["AVERAGINGS", "SCHEDULES", "noisy_gd", "sensitivity_for"]

SCHEDULES = ("constant", "inverse_t")
SPARSE_MODES = ("auto", "always", "never")
SPARSE_DENSITY = 0.25  # "auto" stores X as CSR when at most this fraction is nonzero
AVERAGINGS = ("last", "uniform", "weighted", "suffix")


def sensitivity_for(relation: Neighbouring | str) -> float:
    """L2 sensitivity of a clipped gradient sum, in units of the clipping norm.

    1 for add/remove neighbours, 2 for replace-one (one clipped term leaves,
    another arrives).
    """
    rel = Neighbouring(relation)
    return 1.0 if rel is Neighbouring.ADD_REMOVE else 2.0


def uses_sparse_storage(X: np.ndarray, sparse: str) -> bool:
    """Whether :func:`noisy_gd` stores a dense ``X`` as CSR.

    The "auto" rule reads the density of ``X``, so its answer is a statistic
    of the data: it changes running time and summation order only, and it is
    deliberately *not* part of the returned ``info`` (nothing released says
    which storage was used).
    """
    return sparse == "always" or (
        sparse == "auto" and np.count_nonzero(X) <= SPARSE_DENSITY * X.size
    )


def _validate_data(
    objective: Objective, X: np.ndarray, y: np.ndarray, sparse: str = "never"
) -> tuple[np.ndarray, np.ndarray]:
    if sp.issparse(X):
        if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
            raise ValueError(f"X must be a non-empty 2-D matrix, got shape {X.shape}")
        X = sp.csr_array(X, dtype=np.float64)
        if not np.all(np.isfinite(X.data)):
            raise ValueError("X contains NaN or infinite values")
        if sparse == "never":
            X = X.toarray()
        y = objective.check_targets(y)
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} entries")
        return X, y
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array, got shape {X.shape}")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"X must have at least one row and one column, got shape {X.shape}")
    if not np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.complexfloating):
        raise ValueError(f"X must hold real numbers, got dtype {X.dtype}")
    X = np.asarray(X, dtype=np.float64)  # no copy for float64 input, any memory order
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or infinite values")
    if uses_sparse_storage(X, sparse):
        X = sp.csr_array(X)
    y = objective.check_targets(y)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} entries")
    return X, y


def noisy_gd(
    objective: Objective,
    X: np.ndarray,
    y: np.ndarray,
    *,
    noise_multiplier: float,
    clip: float,
    steps: int,
    learning_rate: float | None,
    n_samples: float,
    schedule: str = "constant",
    averaging: str = "last",
    strong_convexity: float | None = None,
    theta0: np.ndarray | None = None,
    relation: Neighbouring | str = Neighbouring.ADD_REMOVE,
    momentum: float = 0.0,
    sparse: str = "auto",
    rng: np.random.Generator,
) -> FitResult:
    r"""Run NoisyGD (Lecture 12, eq. 12.1) and return its parameters and privacy event.

    Parameters
    ----------
    objective : Objective
        Loss, regulariser ``l2`` and optional projection radius.
    X : ndarray of shape (n, d)
        Private features; rows should already be scaled to the norm bound the
        caller declared (clipping bounds the sensitivity regardless).
    y : ndarray of shape (n,)
        Private targets (checked by ``objective.check_targets``).
    noise_multiplier : float
        ``z``: per-step noise standard deviation is ``z * clip``.
    clip : float
        Per-example clipping norm ``C``.
    steps : int
        Number of noisy gradient steps ``T``.
    learning_rate : float or None
        :math:`\eta` for the *sum* objective (a natural scale is ``1/(n beta)``).
        Required for ``schedule="constant"``; must be None for ``"inverse_t"``.
    n_samples : float
        Public (or privately estimated) number of rows ``n``, used to scale
        the regulariser gradient ``n l2 theta`` and the ``inverse_t`` schedule.
    schedule : {"constant", "inverse_t"}
    averaging : {"last", "uniform", "weighted", "suffix"}
    strong_convexity : float or None
        ``lambda`` of the *mean* objective for ``"inverse_t"``; defaults to
        ``objective.l2``.
    theta0 : ndarray or None
        Starting point :math:`\theta_1` (default zeros); projected first.
    relation : Neighbouring, default=ADD_REMOVE
        Sets the sensitivity: 1 (add/remove) or 2 (replace-one) clipping norms.
    momentum : float, default=0.0
        Nesterov momentum ``m`` in [0, 1) (0: plain NoisyGD, eq. 12.1).
    sparse : {"auto", "always", "never"}, default="auto"
        Storage of ``X`` for the iterations: "auto" converts a dense ``X`` with at
        most 25% nonzeros (one-hot data) to CSR once, which makes each iteration
        several times cheaper; the arithmetic is the same up to summation order.
        Only the running time depends on the number of nonzeros (as it depends on
        ``n``); timing side channels are outside the privacy model. Sparse input
        is accepted and kept sparse unless "never".
    rng : numpy.random.Generator
        Source of the Gaussian noise.

    Returns
    -------
    FitResult
        ``theta`` (the chosen average), ``event = SelfComposed(Gaussian(z,
        sensitivity, relation), T)``, ``n_iter = T`` and ``info`` with the step
        sizes, schedule and averaging.
    """
    if not isinstance(objective, Objective):
        raise TypeError(f"objective must be an Objective, got {type(objective).__name__}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    z = _positive("noise_multiplier", noise_multiplier)
    C = _positive("clip", clip)
    n = _positive("n_samples", n_samples)
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    T = int(steps)
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    if averaging not in AVERAGINGS:
        raise ValueError(f"averaging must be one of {AVERAGINGS}, got {averaging!r}")
    rel = Neighbouring(relation)
    sens = sensitivity_for(rel)
    if isinstance(momentum, bool) or not isinstance(momentum, numbers.Real):
        raise TypeError(f"momentum must be a real number, got {momentum!r}")
    m = float(momentum)
    if not (0.0 <= m < 1.0):
        raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")

    if schedule == "constant":
        if learning_rate is None:
            raise ValueError("learning_rate is required for schedule='constant'")
        eta = _positive("learning_rate", learning_rate)
        etas = np.full(T, eta)
    else:
        if learning_rate is not None:
            raise ValueError("learning_rate must be None for schedule='inverse_t' "
                             "(eta_t = 1/(n * strong_convexity * (t+1)))")
        lam = objective.l2 if strong_convexity is None else strong_convexity
        lam = _positive("strong_convexity", lam)
        if lam > objective.l2 * (1 + 1e-12):
            raise ValueError(f"strong_convexity={lam} exceeds what the objective guarantees "
                             f"(l2={objective.l2}); the 12.2.4 schedule would be invalid")
        etas = 1.0 / (n * lam * (np.arange(1, T + 1) + 1.0))

    if sparse not in SPARSE_MODES:
        raise ValueError(f"sparse must be one of {SPARSE_MODES}, got {sparse!r}")
    if not getattr(objective, "supports_sparse", False):
        if sparse == "always" or sp.issparse(X):
            raise TypeError(f"{type(objective).__name__} does not support sparse X")
        sparse = "never"
    X, y = _validate_data(objective, X, y, sparse)
    p = objective.n_params(X.shape[1])
    if theta0 is None:
        theta = np.zeros(p)
    else:
        theta = np.array(theta0, dtype=float)
        if theta.shape != (p,) or not np.all(np.isfinite(theta)):
            raise ValueError(f"theta0 must be a finite vector of shape ({p},), "
                             f"got shape {theta.shape}")
    theta = objective.project(theta)

    if hasattr(objective, "row_norms"):
        norms = objective.row_norms(X)
    else:
        norms = np.linalg.norm(X, axis=1)
    reg = n * objective.l2
    sd = z * C
    acc = np.zeros(p)
    velocity = np.zeros(p)
    n_suffix = (T + 1) // 2  # k = ceil(T/2) iterates theta_{T-k+2..T+1} for "suffix"
    for t in range(1, T + 1):
        if averaging == "uniform":
            acc += theta
        elif averaging == "weighted":
            acc += t * theta
        point = theta + m * velocity if m else theta
        g = objective.clipped_gradient_sum(point, X, y, C, row_norms=norms)
        if reg:
            g += reg * point
        g += sd * rng.standard_normal(p)
        if m:
            new = objective.project(point - etas[t - 1] * g)
            velocity = new - theta
            theta = new
        else:
            theta = objective.project(theta - etas[t - 1] * g)
        if averaging == "suffix" and t > T - n_suffix:
            acc += theta

    if averaging == "uniform":
        out = acc / T
    elif averaging == "weighted":
        out = acc * (2.0 / (T * (T + 1)))
    elif averaging == "suffix":
        out = acc / n_suffix
    else:
        out = theta
    event = SelfComposed(Gaussian(z, sensitivity=sens, relation=rel), T)
    info = {
        "algorithm": "noisy_gd",
        "schedule": schedule,
        "averaging": averaging,
        "learning_rates": etas,
        "noise_multiplier": z,
        "clip": C,
        "n_samples": n,
        "relation": rel.value,
        "momentum": m,
        "last_iterate": theta,
    }
    return FitResult(theta=out, event=event, n_iter=T, info=info)
