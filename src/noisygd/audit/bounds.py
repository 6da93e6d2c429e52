r"""Lower bounds on epsilon from two samples of a distinguishing statistic.

A mechanism ``M`` is :math:`(\varepsilon, \delta)`-DP for a pair of neighbouring datasets
``D, D'`` only if every test of ``H0: the output came from M(D)`` against
``H1: it came from M(D')`` has errors on the region
(Kairouz, Oh & Viswanath 2015, Theorem 2.1; Dong, Roth & Su 2022, Proposition 2.5)

.. math::

    \mathrm{FPR} + e^{\varepsilon}\,\mathrm{FNR} \ge 1 - \delta, \qquad
    e^{\varepsilon}\,\mathrm{FPR} + \mathrm{FNR} \ge 1 - \delta,

hence :math:`\varepsilon \ge \max\{\log\frac{1 - \delta - \mathrm{FNR}}{\mathrm{FPR}},
\log\frac{1 - \delta - \mathrm{FPR}}{\mathrm{FNR}}\}`. The test used here thresholds a
scalar statistic ``s`` of the released parameters: "canary present" when
:math:`\sigma s > \tau`, with an orientation :math:`\sigma = \pm 1` and a threshold
:math:`\tau`. From ``m`` runs on each dataset the false positives and false negatives are
binomial counts; their one-sided **Clopper-Pearson** upper bounds (Clopper & Pearson 1934)

.. math::

    \overline{p}(k, m; \alpha) = \mathrm{Beta}^{-1}(1 - \alpha;\ k + 1,\ m - k)
    \quad (= 1 \text{ when } k = m)

at level :math:`\alpha/2` hold each with probability :math:`\ge 1 - \alpha/2`, so plugging
them in gives a bound that holds with probability :math:`\ge 1 - \alpha` = ``confidence``
(union bound).

Choosing the test. :math:`\sigma` and :math:`\tau` are chosen on a **selection split** (the
first ``split`` fraction of each sample, maximising the same bound there at a fixed strict
level, ``selection_level``) and the bound is
evaluated on the remaining **evaluation split**, which the choice never saw (Jagielski,
Ullman & Oprea 2020; Nasr et al. 2021). With ``candidates = k > 1`` the ``k`` best tests of
the selection split are all evaluated and the largest bound is reported, each at level
:math:`\alpha/(2k)` per rate (Bonferroni), so that the reported bound holds with
probability at least ``confidence`` :math:`= 1 - \alpha` over the runs.

Gaussian-DP bound. A :math:`\mu`-GDP mechanism has every test above its trade-off curve
:math:`G_\mu(\mathrm{FPR}) = \Phi(\Phi^{-1}(1 - \mathrm{FPR}) - \mu)` (Dong, Roth & Su 2022,
Definition 2.7), so a test with errors ``(FPR, FNR)`` shows

.. math::

    \mu \ge \Phi^{-1}(1 - \mathrm{FPR}) - \Phi^{-1}(\mathrm{FNR})

(Nasr et al. 2023, "Tight auditing of differentially private machine learning", section
4). With the Clopper-Pearson upper bounds on both rates this is a lower bound
:math:`\underline\mu` on the GDP parameter at the same confidence: the mechanism is not
:math:`\mu'`-GDP for any :math:`\mu' < \underline\mu`. When the statistic is exactly
Gaussian with a common variance on both datasets (true of the linear statistics of the
Gaussian-output audits, :mod:`noisygd.audit.problems`), its trade-off curve is
:math:`G_{\mu_s}` with :math:`\mu_s \ge \underline\mu`, and by post-processing the
mechanism's epsilon at delta is at least the :math:`\mu`-GDP epsilon (DRS22 Corollary
2.13) at :math:`\underline\mu`. Without that Gaussianity this conversion is not a
lower bound on epsilon (only the statement about :math:`\mu` stands).

Shift-family bound (``bound="family"``). Where the statistic is not one Gaussian but a
known mixture of unit-variance Gaussians whose means are fixed multiples of one unknown
signal-to-noise ratio :math:`\nu` (a subsampled mechanism's summed iterate:
:class:`ShiftFamily`, e.g. ``D``: :math:`\mathcal N(0, 1)`, ``D'``:
:math:`\sum_k \mathrm{Bin}(k; T, \gamma)\,\mathcal N(k\nu, 1)`), the same argument as the
GDP bound holds with the family's own trade-off curve in place of :math:`G_\mu`. Both
mixtures are likelihood-ratio ordered (their mixing laws are, and the Gaussian location
family is totally positive: Karlin 1968), so a threshold test is most powerful and the
threshold curve :math:`f_\nu` is the pair's trade-off curve; it is non-increasing in
:math:`\nu` (the pair at :math:`\nu` is a garbling of the pair at :math:`\nu' > \nu`:
scale by :math:`\nu/\nu'` and add independent noise). With the Clopper-Pearson upper
bounds :math:`(\overline\alpha, \overline\beta)` of the test's rates,
:math:`\underline\nu = \inf\{\nu : f_\nu(\overline\alpha) \le \overline\beta\}` is a
lower bound on the true :math:`\nu` at the stated confidence, and, by post-processing, the
mechanism's epsilon at delta is at least that of the statistic's pair at
:math:`\underline\nu` (:meth:`ShiftFamily.epsilon`, computed from the two mixtures alone,
never from an accountant). Assumption, as for the GDP bound: the statistic's law belongs to
the family (true by construction of the audit problems that declare one).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats

from noisygd._checks import check_positive_int, check_probability, check_real

__all__ = [
    "EpsilonLowerBound",
    "ShiftFamily",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "empirical_epsilon",
    "epsilon_from_rates",
    "gdp_mu_from_rates",
]

BOUNDS = ("clopper_pearson", "gdp", "family")


def _counts(k: Any, m: Any) -> tuple[np.ndarray, np.ndarray]:
    k = np.asarray(k)
    m = np.asarray(m)
    if not (np.issubdtype(k.dtype, np.integer) and np.issubdtype(m.dtype, np.integer)):
        raise TypeError("k and m must be integer counts")
    if np.any(m < 1) or np.any(k < 0) or np.any(k > m):
        raise ValueError("counts must satisfy 0 <= k <= m and m >= 1")
    return k.astype(float), m.astype(float)


def clopper_pearson_upper(k: Any, m: Any, alpha: float) -> np.ndarray:
    r"""One-sided Clopper-Pearson upper bound on a binomial proportion.

    :math:`\overline p = \mathrm{Beta}^{-1}(1 - \alpha; k + 1, m - k)` (1 when ``k = m``):
    :math:`P(p \le \overline p) \ge 1 - \alpha` for :math:`k \sim \mathrm{Bin}(m, p)`
    (Clopper & Pearson 1934). For ``k = 0`` it is :math:`1 - \alpha^{1/m}`.

    Parameters
    ----------
    k, m : int or array of int
        Successes and trials (broadcast).
    alpha : float
        In (0, 1).
    """
    alpha = check_probability("alpha", alpha)
    kf, mf = _counts(k, m)
    with np.errstate(invalid="ignore"):
        out = stats.beta.ppf(1.0 - alpha, kf + 1.0, np.maximum(mf - kf, 1.0))
    return np.where(kf >= mf, 1.0, out)


def clopper_pearson_lower(k: Any, m: Any, alpha: float) -> np.ndarray:
    r"""One-sided Clopper-Pearson lower bound :math:`\mathrm{Beta}^{-1}(\alpha; k, m - k + 1)`.

    0 when ``k = 0``; :math:`\alpha^{1/m}` when ``k = m``. Equals
    ``1 - clopper_pearson_upper(m - k, m, alpha)``.
    """
    alpha = check_probability("alpha", alpha)
    kf, mf = _counts(k, m)
    with np.errstate(invalid="ignore"):
        out = stats.beta.ppf(alpha, np.maximum(kf, 1.0), mf - kf + 1.0)
    return np.where(kf <= 0, 0.0, out)


def epsilon_from_rates(fpr: Any, fnr: Any, delta: float) -> np.ndarray:
    r""":math:`\max\{0, \log\frac{1-\delta-\mathrm{FNR}}{\mathrm{FPR}},
    \log\frac{1-\delta-\mathrm{FPR}}{\mathrm{FNR}}\}` (the two directions of the DP test
    inequality), elementwise; ``inf`` where a rate is 0 and the other side is positive.
    """
    delta = check_real("delta", delta)
    if not (0.0 <= delta < 1.0):
        raise ValueError(f"delta must be in [0, 1), got {delta!r}")
    fpr = np.asarray(fpr, dtype=float)
    fnr = np.asarray(fnr, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.log(np.maximum(1.0 - delta - fnr, 0.0)) - np.log(fpr)
        b = np.log(np.maximum(1.0 - delta - fpr, 0.0)) - np.log(fnr)
    out = np.fmax(a, b)
    return np.where(np.isnan(out), 0.0, np.maximum(out, 0.0))


def gdp_mu_from_rates(fpr: Any, fnr: Any) -> np.ndarray:
    r""":math:`\max\{0, \Phi^{-1}(1 - \mathrm{FPR}) - \Phi^{-1}(\mathrm{FNR})\}`, elementwise.

    The smallest :math:`\mu` whose trade-off curve :math:`G_\mu` lies on or below the point
    ``(FPR, FNR)`` (DRS22 Definition 2.7): a test with these errors rules out every smaller
    :math:`\mu`.
    """
    fpr = np.asarray(fpr, dtype=float)
    fnr = np.asarray(fnr, dtype=float)
    mu = stats.norm.isf(fpr) - stats.norm.ppf(fnr)
    return np.where(np.isnan(mu), 0.0, np.maximum(mu, 0.0))


def _gdp_epsilon_lower(mu: float, delta: float) -> float:
    """The mu-GDP epsilon at delta, rounded down (gdp_epsilon never returns below the root)."""
    if mu <= 0.0 or delta <= 0.0:
        return 0.0 if mu <= 0.0 else math.inf
    from noisygd.accounting.gdp import gdp_epsilon

    return gdp_epsilon(mu, delta) * (1.0 - 1e-9)


@dataclass(frozen=True)
class ShiftFamily:
    r"""A family of statistic laws indexed by a signal-to-noise ratio :math:`\nu \ge 0`.

    On ``D`` the statistic is :math:`\sum_k w_k\,\mathcal N(a_k\nu, 1)`, on ``D'``
    :math:`\sum_k w'_k\,\mathcal N(b_k\nu, 1)` (weights and offsets public and fixed by
    the audit problem; the unit is the statistic's noise). Used by the ``"family"`` bound
    (module doc); :meth:`gaussian` is the GDP family :math:`\nu = \mu`.

    Attributes
    ----------
    weights_d, offsets_d : tuple of float
        :math:`(w_k)` (summing to 1) and :math:`(a_k)`.
    weights_d_prime, offsets_d_prime : tuple of float
        :math:`(w'_k)` and :math:`(b_k)`.
    name : str
        For reports.
    nu_max : float
        Largest :math:`\nu` searched (a lower bound above it is reported as ``nu_max``).
    """

    weights_d: tuple[float, ...]
    offsets_d: tuple[float, ...]
    weights_d_prime: tuple[float, ...]
    offsets_d_prime: tuple[float, ...]
    name: str = "shift"
    nu_max: float = 12.0

    def __post_init__(self) -> None:
        for w, o in ((self.weights_d, self.offsets_d),
                     (self.weights_d_prime, self.offsets_d_prime)):
            w_arr = np.asarray(w, dtype=float)
            if (len(w) != len(o) or len(w) == 0 or np.any(w_arr < 0)
                    or not math.isclose(float(w_arr.sum()), 1.0, abs_tol=1e-9)):
                raise ValueError("each mixture needs non-negative weights summing to 1, one "
                                 "per offset")

    @classmethod
    def gaussian(cls) -> ShiftFamily:
        r""":math:`\mathcal N(0, 1)` against :math:`\mathcal N(\nu, 1)` (GDP, :math:`\nu = \mu`)."""
        return cls((1.0,), (0.0,), (1.0,), (1.0,), name="gaussian")

    @classmethod
    def poisson_sum(cls, steps: int, rate: float) -> ShiftFamily:
        r"""The sum over ``steps`` Poisson-sampled steps (add/remove): ``D`` without the
        canary :math:`\mathcal N(0, 1)`; ``D'`` with it, present in a
        :math:`\mathrm{Bin}(T, \gamma)` number of steps, each adding :math:`\nu`."""
        T = check_positive_int("steps", steps)
        w = stats.binom.pmf(np.arange(T + 1), T, check_probability("rate", rate))
        k = tuple(float(i) for i in range(T + 1))
        return cls((1.0,), (0.0,), tuple(map(float, w)), k, name=f"poisson_sum(T={T})")

    @classmethod
    def symmetric_sum(cls, steps: int, rate: float) -> ShiftFamily:
        r"""The sum over ``steps`` steps that each include the canary's row independently with
        probability :math:`\gamma` (sampling without replacement, replace-one): its clipped
        gradient is :math:`-C u` in ``D`` and :math:`+C u` in ``D'``, so the laws are
        :math:`\sum_k \mathrm{Bin}(k; T, \gamma)\,\mathcal N(\mp k\nu, 1)`."""
        T = check_positive_int("steps", steps)
        w = tuple(map(float, stats.binom.pmf(np.arange(T + 1), T,
                                             check_probability("rate", rate))))
        k = tuple(float(i) for i in range(T + 1))
        return cls(w, tuple(-x for x in k), w, k, name=f"symmetric_sum(T={T})")

    def _arrays(self, which: int) -> tuple[np.ndarray, np.ndarray]:
        if which:
            return np.asarray(self.weights_d_prime), np.asarray(self.offsets_d_prime)
        return np.asarray(self.weights_d), np.asarray(self.offsets_d)

    def survival(self, which: int, x: Any, nu: float, orientation: int = 1) -> np.ndarray:
        r""":math:`P(o\,s > x)` on ``D`` (``which = 0``) or ``D'`` (1), elementwise in ``x``."""
        w, a = self._arrays(which)
        x = np.asarray(x, dtype=float)
        return np.asarray(stats.norm.sf(x[..., None] - orientation * a * nu) @ w)

    def _threshold(self, alpha: np.ndarray, nu: float, orientation: int) -> np.ndarray:
        """``tau`` with ``P_D(o s > tau) = alpha`` (vectorised bisection)."""
        _, a = self._arrays(0)
        lo = np.full(alpha.shape, float(np.min(orientation * a * nu)) - 40.0)
        hi = np.full(alpha.shape, float(np.max(orientation * a * nu)) + 40.0)
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            above = self.survival(0, mid, nu, orientation) > alpha
            lo = np.where(above, mid, lo)
            hi = np.where(above, hi, mid)
        return 0.5 * (lo + hi)

    def tradeoff(self, alpha: Any, nu: float, orientation: int = 1) -> np.ndarray:
        r""":math:`f_\nu(\alpha)`: the false-negative rate of the threshold test
        "``D'`` when :math:`o\,s > \tau`" whose false-positive rate is ``alpha``."""
        alpha = np.clip(np.asarray(alpha, dtype=float), 0.0, 1.0)
        tau = self._threshold(alpha, nu, orientation)
        beta = 1.0 - self.survival(1, tau, nu, orientation)
        return np.where(alpha >= 1.0, 0.0, np.where(alpha <= 0.0, 1.0, beta))

    def nu_lower(self, fpr: Any, fnr: Any, orientation: int = 1, *,
                 iterations: int = 50) -> np.ndarray:
        r""":math:`\inf\{\nu \in [0, \nu_{\max}] : f_\nu(\overline\alpha) \le
        \overline\beta\}` for each pair of rate bounds, by bisection (the curve is
        non-increasing in :math:`\nu`, module doc); 0 when even ``nu_max`` does not qualify
        (no evidence in this orientation). The lower end of the last bracket is returned,
        so the value never exceeds the infimum."""
        fpr = np.atleast_1d(np.asarray(fpr, dtype=float))
        fnr = np.atleast_1d(np.asarray(fnr, dtype=float))
        lo = np.zeros(fpr.shape)
        hi = np.full(fpr.shape, self.nu_max)
        possible = self.tradeoff(fpr, self.nu_max, orientation) <= fnr
        for _ in range(iterations):
            mid = 0.5 * (lo + hi)
            ok = self._tradeoff_each(fpr, mid, orientation) <= fnr
            hi = np.where(ok, mid, hi)
            lo = np.where(ok, lo, mid)
        return np.where(possible, lo, 0.0)

    def _tradeoff_each(self, alpha: np.ndarray, nu: np.ndarray, orientation: int
                       ) -> np.ndarray:
        """:meth:`tradeoff` with one ``nu`` per ``alpha`` (vectorised)."""
        w0, a0 = self._arrays(0)
        w1, a1 = self._arrays(1)
        shift0 = orientation * a0[None, :] * nu[:, None]
        lo = shift0.min(axis=1) - 40.0
        hi = shift0.max(axis=1) + 40.0
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            above = stats.norm.sf(mid[:, None] - shift0) @ w0 > alpha
            lo = np.where(above, mid, lo)
            hi = np.where(above, hi, mid)
        tau = 0.5 * (lo + hi)
        beta = 1.0 - stats.norm.sf(tau[:, None] - orientation * a1[None, :] * nu[:, None]) @ w1
        return np.where(alpha >= 1.0, 0.0, np.where(alpha <= 0.0, 1.0, beta))

    def hockey_stick(self, epsilon: float, nu: float) -> float:
        r""":math:`\max` over both orders of :math:`\sup_\tau P_1(o s > \tau) -
        e^\varepsilon P_0(o s > \tau)` (threshold sets: exact for these likelihood-ratio
        ordered pairs, and a lower bound on the divergence in any case)."""
        lo = min(min(self.offsets_d), min(self.offsets_d_prime)) * nu - 12.0
        hi = max(max(self.offsets_d), max(self.offsets_d_prime)) * nu + 12.0
        taus = np.linspace(min(lo, -hi), max(hi, -lo), 6001)
        e = math.exp(epsilon)
        best = 0.0
        for o in (1, -1):
            p0 = self.survival(0, taus, nu, o)
            p1 = self.survival(1, taus, nu, o)
            best = max(best, float(np.max(p1 - e * p0)), float(np.max(p0 - e * p1)))
        return best

    def epsilon(self, nu: float, delta: float) -> float:
        """The statistic pair's epsilon at ``delta`` (the root of :meth:`hockey_stick`), a
        lower bound on every mechanism whose statistic has this law."""
        from scipy.optimize import brentq

        if nu <= 0.0 or self.hockey_stick(0.0, nu) <= delta:
            return 0.0
        top = 1.0
        while self.hockey_stick(top, nu) > delta:
            top *= 2.0
            if top > 1e3:  # pragma: no cover - unreachable for nu <= nu_max
                return math.inf
        root = brentq(lambda e: self.hockey_stick(e, nu) - delta, 0.0, top, xtol=1e-8,
                      rtol=1e-12)
        return max(0.0, float(root) - 1e-7)  # below the root: brentq's answer is within xtol

    def describe(self) -> str:
        """One line for reports."""
        return self.name


@dataclass(frozen=True)
class EpsilonLowerBound:
    """One lower bound from two samples (see the module doc).

    Attributes
    ----------
    epsilon : float
        The lower bound on epsilon at ``delta``: Clopper-Pearson (``bound =
        "clopper_pearson"``, no assumption) or the GDP conversion of ``mu`` (``"gdp"``,
        valid when the statistic is Gaussian with a common variance).
    mu : float or None
        The lower bound on the GDP parameter (``bound="gdp"``), or on the family's
        :math:`\nu` (``bound="family"``).
    bound : str
    confidence : float
        Probability over the runs that the bound holds.
    delta : float
    threshold, orientation : float, int
        The test chosen on the selection split: "canary" when ``orientation * s >
        threshold``.
    false_positives, false_negatives : int
        Counts on the evaluation split.
    fpr_upper, fnr_upper : float
        Their Clopper-Pearson upper bounds (each at level ``alpha / (2 candidates)``).
    n_selection, n_evaluation : int
        Runs per dataset in each split.
    candidates : int
        Tests evaluated (Bonferroni factor).
    """

    epsilon: float
    mu: float | None
    bound: str
    confidence: float
    delta: float
    threshold: float
    orientation: int
    false_positives: int
    false_negatives: int
    fpr_upper: float
    fnr_upper: float
    n_selection: int
    n_evaluation: int
    candidates: int

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values."""
        return asdict(self)


def _bound_at(bound: str, fp: np.ndarray, fn: np.ndarray, m: int, alpha: float,
              delta: float, family: ShiftFamily | None = None, sign: int = 1,
              coarse: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(value, fpr_ub, fnr_ub) of the bound for counts ``fp, fn`` out of ``m`` each (the
    value is epsilon, mu or the family's nu; ``coarse``: a short bisection, for selection)."""
    fpr = clopper_pearson_upper(fp, m, alpha)
    fnr = clopper_pearson_upper(fn, m, alpha)
    if bound == "clopper_pearson":
        return epsilon_from_rates(fpr, fnr, delta), fpr, fnr
    if bound == "family":
        assert family is not None
        return family.nu_lower(fpr, fnr, sign, iterations=16 if coarse else 50), fpr, fnr
    return gdp_mu_from_rates(fpr, fnr), fpr, fnr


def _errors(s0: np.ndarray, s1: np.ndarray, taus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """False positives ``#{s0 > tau}`` and false negatives ``#{s1 <= tau}`` per threshold."""
    s0 = np.sort(s0)
    s1 = np.sort(s1)
    fp = s0.size - np.searchsorted(s0, taus, side="right")
    fn = np.searchsorted(s1, taus, side="right")
    return fp.astype(np.int64), fn.astype(np.int64)


def empirical_epsilon(
    scores_d: Any,
    scores_d_prime: Any,
    *,
    delta: float,
    confidence: float = 0.95,
    bound: str = "clopper_pearson",
    split: float = 0.5,
    candidates: int = 1,
    selection_level: float = 5e-4,
    family: ShiftFamily | None = None,
) -> EpsilonLowerBound:
    r"""A lower bound on epsilon (or on the GDP ``mu``) from two samples of a statistic.

    Parameters
    ----------
    scores_d, scores_d_prime : array_like of float, 1-D
        The statistic on independent runs of the mechanism on ``D`` and on ``D'``, in run
        order (the first ``split`` fraction of each is the selection split). Equal lengths.
    delta : float
        The delta of the epsilon bounded, in [0, 1).
    confidence : float, default=0.95
        :math:`1 - \alpha`, the probability over the runs that the bound holds.
    bound : {"clopper_pearson", "gdp", "family"}
        The DP test inequality with Clopper-Pearson rates, the Gaussian-DP trade-off
        curve, or the trade-off curve of ``family`` (module doc).
    split : float, default=0.5
        Fraction of the runs used to choose the test, in (0, 1).
    candidates : int, default=1
        Number of tests taken from the selection split to the evaluation split
        (Bonferroni over them).
    selection_level : float in (0, 1), default=5e-4
        On the selection split each test is scored by the same bound with its two rates
        at level ``selection_level / 2`` each (a strict level: a test resting on a
        handful of lucky counts scores low there, and would not hold up on the evaluation
        split). It decides which test is evaluated, never the level of the bound
        reported; being fixed, it makes the chosen test, hence the bound, independent of
        ``confidence``, so the bound is non-increasing in ``confidence``. When no test
        scores above 0 there (too few selection runs), the test is the pooled selection
        median, oriented by the difference of the selection means (a choice that still
        never sees the evaluation split).
    family : ShiftFamily, optional
        The statistic's family, for ``bound="family"`` (required there, refused otherwise).
        Its selection scores 256 thresholds (order statistics of the pooled selection
        scores) on the family's coarse grid.

    Returns
    -------
    EpsilonLowerBound
    """
    s0 = np.asarray(scores_d, dtype=float).ravel()
    s1 = np.asarray(scores_d_prime, dtype=float).ravel()
    if s0.size != s1.size:
        raise ValueError("scores_d and scores_d_prime must have the same number of runs")
    if not (np.all(np.isfinite(s0)) and np.all(np.isfinite(s1))):
        raise ValueError("scores must be finite")
    delta = check_real("delta", delta)
    if not (0.0 <= delta < 1.0):
        raise ValueError(f"delta must be in [0, 1), got {delta!r}")
    confidence = check_probability("confidence", confidence)
    if bound not in BOUNDS:
        raise ValueError(f"bound must be one of {BOUNDS}, got {bound!r}")
    if (bound == "family") != (family is not None):
        raise ValueError('give family exactly when bound="family"')
    split = check_probability("split", split)
    k = check_positive_int("candidates", candidates)
    sel = check_probability("selection_level", selection_level) / 2.0
    n_sel = math.floor(split * s0.size)
    n_eval = s0.size - n_sel
    if n_sel < 1 or n_eval < 1:
        raise ValueError(f"need at least one run in each split; got {s0.size} runs per dataset "
                         f"and split={split}")
    alpha = (1.0 - confidence) / (2.0 * k)

    # selection: every threshold at a pooled selection score, both orientations
    tests: list[tuple[float, float, int]] = []  # (selection value, threshold, orientation)
    for sign in (1, -1):
        a, b = sign * s0[:n_sel], sign * s1[:n_sel]
        taus = np.unique(np.concatenate([a, b]))
        if family is not None and taus.size > 256:  # each family score costs a search
            taus = taus[np.unique(np.linspace(0, taus.size - 1, 256).round().astype(int))]
        fp, fn = _errors(a, b, taus)
        value, _, _ = _bound_at(bound, fp, fn, n_sel, sel, delta, family, sign, coarse=True)
        order = np.argsort(-value, kind="stable")[:k]
        tests.extend((float(value[i]), float(taus[i]), sign) for i in order)
    tests.sort(key=lambda t: -t[0])
    tests = tests[:k]
    if tests[0][0] <= 0.0:
        # no test scores above 0 at the strict level (too few selection runs): the median
        # threshold of the pooled selection scores, oriented by the difference of the means
        sign = 1 if np.mean(s1[:n_sel]) >= np.mean(s0[:n_sel]) else -1
        tests = [(0.0, float(np.median(sign * np.concatenate([s0[:n_sel], s1[:n_sel]]))),
                  sign)]

    best: tuple[float, float, int, int, int, float, float] | None = None
    for _, tau, sign in tests:
        fp, fn = _errors(sign * s0[n_sel:], sign * s1[n_sel:], np.array([tau]))
        value, fpr, fnr = _bound_at(bound, fp, fn, n_eval, alpha, delta, family, sign)
        cand = (float(value[0]), tau, sign, int(fp[0]), int(fn[0]), float(fpr[0]),
                float(fnr[0]))
        if best is None or cand[0] > best[0]:
            best = cand
    assert best is not None
    value, tau, sign, fp_c, fn_c, fpr_u, fnr_u = best
    if bound == "gdp":
        mu: float | None = value
        eps = _gdp_epsilon_lower(value, delta)
    elif bound == "family":
        assert family is not None
        mu = value  # the family's nu
        eps = family.epsilon(value, delta)
    else:
        mu, eps = None, value
    return EpsilonLowerBound(
        epsilon=eps, mu=mu, bound=bound, confidence=confidence, delta=delta, threshold=tau,
        orientation=sign, false_positives=fp_c, false_negatives=fn_c, fpr_upper=fpr_u,
        fnr_upper=fnr_u, n_selection=n_sel, n_evaluation=n_eval, candidates=k,
    )
