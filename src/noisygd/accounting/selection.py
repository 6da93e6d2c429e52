r"""RDP of private selection by random stopping (Papernot and Steinke, ICLR 2022).

Papernot and Steinke, "Hyperparameter tuning with Rényi differential privacy" (ICLR 2022,
arXiv:2110.03620; theorem numbers of arXiv v2). Let :math:`Q` be one run (a candidate drawn
from a public distribution, trained privately, scored privately) and let :math:`A` run
:math:`Q` independently :math:`K` times and output the run with the highest score. With
:math:`\varepsilon(\lambda)` the RDP curve of :math:`Q`:

* **Theorem 2** (truncated negative binomial). For :math:`\eta \in (-1, \infty)`,
  :math:`\gamma \in (0, 1)` and :math:`K \sim \mathcal D_{\eta,\gamma}`, if :math:`Q` is
  :math:`(\lambda, \varepsilon)`-RDP and :math:`(\hat\lambda, \hat\varepsilon)`-RDP with
  :math:`\lambda \in (1, \infty)`, :math:`\hat\lambda \in [1, \infty)`, then :math:`A` is
  :math:`(\lambda, \varepsilon')`-RDP with

  .. math::

     \varepsilon' = \varepsilon + (1+\eta)\Big(1 - \frac{1}{\hat\lambda}\Big)\hat\varepsilon
       + \frac{(1+\eta)\log(1/\gamma)}{\hat\lambda} + \frac{\log \mathbb E[K]}{\lambda - 1},
     \qquad
     \mathbb E[K] = \begin{cases} \frac{\eta(1-\gamma)}{\gamma(1-\gamma^\eta)} & \eta \ne 0 \\
       \frac{1/\gamma - 1}{\log(1/\gamma)} & \eta = 0. \end{cases}

  :math:`\hat\lambda` is free: the bound takes the minimum over :math:`\hat\lambda \in \{1\}
  \cup` the orders (at :math:`\hat\lambda = 1` the middle terms are
  :math:`(1+\eta)\log(1/\gamma)`, whatever :math:`\hat\varepsilon`). The geometric case
  :math:`\eta = 1` (:math:`\mathbb E[K] = 1/\gamma`) is the paper's Corollary 4 form
  :math:`\varepsilon' = \varepsilon + 2(1 - 1/\hat\lambda)\hat\varepsilon
  + 2\log(1/\gamma)/\hat\lambda + \log(1/\gamma)/(\lambda-1)`.

* **Theorem 6** (Poisson). If :math:`Q` is :math:`(\lambda, \varepsilon)`-RDP and
  :math:`(\hat\varepsilon, \hat\delta)`-DP with :math:`e^{\hat\varepsilon} \le 1 +
  1/(\lambda-1)`, and :math:`K \sim \mathrm{Poisson}(\mu)`, then :math:`A` is
  :math:`(\lambda, \varepsilon')`-RDP with

  .. math:: \varepsilon' = \varepsilon + \mu\hat\delta + \frac{\log\mu}{\lambda - 1}.

  Here :math:`\hat\varepsilon = \log(1 + 1/(\lambda-1))` (the largest allowed;
  :math:`\hat\delta` decreases in it) and :math:`\hat\delta` is the delta of :math:`Q`'s RDP
  curve at :math:`\hat\varepsilon` (:func:`noisygd.accounting.rdp.rdp_to_delta`, CKS20
  Proposition 12 and the Bretagnolle-Huber bound: a valid
  :math:`(\hat\varepsilon,\hat\delta)`-DP guarantee of :math:`Q`).

Both results hold at every order, so the bound at :math:`\lambda` is then lowered to the
smallest bound at any order :math:`\lambda' \ge \lambda` (Rényi divergence does not decrease
with its order). These are the formulas of dp_accounting's ``RepeatAndSelectDpEvent`` (written
with the paper's authors), which the tests compare against, with the :math:`\hat\lambda = 1`
term added. The auxiliary quantities (:math:`\hat\varepsilon` over :math:`\hat\lambda`,
:math:`\hat\delta`) are computed on the union of the accountant's orders and
:data:`~noisygd.accounting.rdp.DEFAULT_ORDERS`.

:func:`selection_curve` is what the ``rdp`` accountant's dispatch table
(:data:`noisygd.accounting.rdp.CURVE`) calls for the event, with the ``rdp`` module's own curve
function passed in (so this module imports no accountant and there is no import cycle). No other
accountant reads :class:`~noisygd.accounting.events.RandomStoppingSelection`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from noisygd._checks import check_choice, check_positive, check_real
from noisygd.accounting.events import (
    SELECTION_DISTRIBUTIONS,
    DpEvent,
    RandomStoppingSelection,
    truncated_negative_binomial_mean,
)

__all__ = [
    "rdp_random_stopping",
    "run_curve",
    "selection_curve",
]

#: An RDP curve of an event at orders (the ``rdp`` accountant's :func:`rdp_curve`).
CurveFn = Callable[[DpEvent, np.ndarray], np.ndarray]
#: ``(orders, rdp, epsilon) -> (delta, order)``: the RDP-to-DP conversion of the ``rdp`` module.
ToDeltaFn = Callable[[np.ndarray, np.ndarray, float], tuple[float, float]]


def run_curve(event: RandomStoppingSelection, orders: np.ndarray, curve: CurveFn) -> np.ndarray:
    r"""RDP curve of one run :math:`Q`: the pointwise maximum over the run events.

    :math:`Q` picks run :math:`i` with a public probability :math:`p_i` and releases which
    one it ran, so :math:`e^{(\alpha-1)D_\alpha(Q(D)\|Q(D'))} = \sum_i p_i
    e^{(\alpha-1)D_\alpha(Q_i(D)\|Q_i(D'))}`, at most the largest term.
    """
    curves = [np.asarray(curve(e, orders), dtype=float) for e in event.runs]
    return np.max(np.vstack(curves), axis=0)


def rdp_random_stopping(
    orders: Sequence[float],
    rdp: Sequence[float],
    distribution: str,
    *,
    mean: float,
    eta: float | None = None,
    gamma: float | None = None,
    aux_orders: Sequence[float] | None = None,
    aux_rdp: Sequence[float] | None = None,
    to_delta: ToDeltaFn | None = None,
) -> np.ndarray:
    r"""RDP curve of the selection from the RDP curve of one run (module docstring).

    Parameters
    ----------
    orders, rdp : sequences of float
        One run's RDP :math:`\varepsilon(\lambda)` at the orders (all > 1), where the
        selection's curve is wanted.
    distribution : {"truncated_negative_binomial", "poisson"}
    mean : float
        :math:`\mu` for Poisson; ignored for the truncated negative binomial when ``gamma``
        is given (:math:`\mathbb E[K]` is then computed from ``gamma``).
    eta, gamma : float
        The truncated negative binomial's parameters (``gamma`` required for it).
    aux_orders, aux_rdp : sequences of float, optional
        One run's curve on a grid used for :math:`\hat\lambda` (Theorem 2) and
        :math:`\hat\delta` (Theorem 6); default: ``orders``, ``rdp``.

    Returns
    -------
    ndarray
        :math:`\varepsilon'(\lambda)` at ``orders`` (``inf`` where no bound holds).
    """
    check_choice("distribution", distribution, SELECTION_DISTRIBUTIONS)
    a = np.asarray(orders, dtype=float)
    r = np.asarray(rdp, dtype=float)
    if a.ndim != 1 or a.shape != r.shape or a.size == 0 or np.any(~(a > 1.0)):
        raise ValueError("orders and rdp must be 1-d, of equal length, with orders > 1")
    if np.any(np.isnan(r)) or np.any(r < 0):
        raise ValueError("RDP values must be >= 0")
    a_hat = a if aux_orders is None else np.asarray(aux_orders, dtype=float)
    r_hat = r if aux_rdp is None else np.asarray(aux_rdp, dtype=float)
    out = np.full_like(a, math.inf)
    if distribution == "poisson":
        mu = check_positive("mean", mean)
        if mu < 1.0:
            raise ValueError(f"mean must be >= 1, got {mean!r}")
        finite = np.isfinite(r_hat)
        for i, lam in enumerate(a.tolist()):
            if not math.isfinite(r[i]):
                continue
            eps_hat = math.log1p(1.0 / (lam - 1.0))  # e^eps_hat = 1 + 1/(lambda - 1)
            if to_delta is None:
                raise ValueError("the Poisson bound needs to_delta (the RDP-to-DP conversion)")
            if finite.any():
                delta_hat = to_delta(a_hat[finite], r_hat[finite], eps_hat)[0]
            else:
                delta_hat = 1.0
            out[i] = r[i] + mu * delta_hat + math.log(mu) / (lam - 1.0)
    else:
        if eta is None or gamma is None:
            raise ValueError("the truncated negative binomial needs eta and gamma")
        e = check_real("eta", eta)
        g = check_real("gamma", gamma)
        if not (e > -1.0 and 0.0 < g < 1.0):
            raise ValueError(f"need eta > -1 and 0 < gamma < 1, got {eta!r}, {gamma!r}")
        log_inv_gamma = -math.log(g)
        with np.errstate(invalid="ignore"):
            terms = (1.0 - 1.0 / a_hat) * r_hat + log_inv_gamma / a_hat
        terms = np.where(np.isnan(terms), math.inf, terms)
        # lambda-hat = 1: (1 - 1/1) eps-hat = 0, leaving log(1/gamma)
        c = (1.0 + e) * min(float(np.min(terms)), log_inv_gamma)
        log_mean = math.log(truncated_negative_binomial_mean(e, g))
        out = r + c + log_mean / (a - 1.0)
    # Monotonicity of Renyi divergence in the order: the bound at lambda' >= lambda holds.
    order = np.argsort(a)
    suffix_min = np.minimum.accumulate(out[order][::-1])[::-1]
    result = np.empty_like(out)
    result[order] = suffix_min
    return result


def selection_curve(
    event: RandomStoppingSelection,
    orders: np.ndarray,
    *,
    curve: CurveFn,
    default_orders: Sequence[float],
    to_delta: ToDeltaFn,
) -> np.ndarray:
    """The RDP curve of ``event`` at ``orders`` (the ``rdp`` accountant's entry for it).

    ``curve``, ``default_orders`` and ``to_delta`` are the ``rdp`` module's own (passed in, so
    that this module does not import the accountant that reads it).
    """
    a = np.asarray(orders, dtype=float)
    aux = np.union1d(a, np.asarray(default_orders, dtype=float))
    aux_curve = run_curve(event, aux, curve)
    one = aux_curve[np.searchsorted(aux, a)]
    return rdp_random_stopping(
        a, one, event.distribution, mean=event.mean, eta=event.eta, gamma=event.gamma,
        aux_orders=aux, aux_rdp=aux_curve, to_delta=to_delta,
    )
