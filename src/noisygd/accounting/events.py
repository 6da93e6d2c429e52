"""Privacy events: small immutable descriptions of what a private algorithm did.

An algorithm *runs* and then *says what it did* as an event; accountants read
events and answer "epsilon at this delta" or refuse. Nothing else computes
privacy. The shape follows ``dp_accounting.DpEvent``: frozen dataclasses,
composed by nesting. **Every event class of noisygd is defined in this module**
(the generic ones and those of particular algorithms: :class:`TreeAggregation`
for DP-FTRL, :class:`LastIterateLangevin` for projected noisy GD,
:class:`OutputPerturbation` and :class:`RRPSGDPaperArgument` for Zhang et al.
2017). Which accountant reads which event is declared by each accountant's
dispatch table (see :data:`noisygd.accounting.registry.SUPPORT`).

This module imports no accountant and no dp_accounting: only the standard
library, NumPy (for the node count of :class:`TreeAggregation`),
:mod:`noisygd._checks` and :mod:`noisygd.exceptions`.

Every event carries its neighbouring relation:

* ``Neighbouring.ADD_REMOVE``: datasets differ by adding or removing one row;
* ``Neighbouring.REPLACE_ONE``: datasets of equal size differ in one row.

Composing events of different relations is refused (:class:`Composed` raises),
because no accountant can bound such a mixture without extra assumptions.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from enum import Enum, StrEnum
from typing import Any

import numpy as np

from noisygd._checks import (
    check_choice,
    check_nonnegative,
    check_positive,
    check_positive_int,
    check_real,
)
from noisygd.exceptions import UnsupportedEventError

__all__ = [
    "LANGEVIN_THEOREMS",
    "Composed",
    "DiscreteGaussianNoise",
    "DpEvent",
    "EpsilonDelta",
    "Gaussian",
    "LastIterateLangevin",
    "Neighbouring",
    "NonPrivate",
    "OutputNoise",
    "OutputPerturbation",
    "PoissonSampled",
    "RRPSGDPaperArgument",
    "RandomStoppingSelection",
    "SampledWithoutReplacement",
    "SelfComposed",
    "TreeAggregation",
    "contains",
    "max_squared_node_count",
]


class Neighbouring(StrEnum):
    """Neighbouring relation under which an event's guarantee holds."""

    ADD_REMOVE = "add_remove"
    REPLACE_ONE = "replace_one"

    @property
    def clipped_sum_sensitivity(self) -> float:
        r"""L2 sensitivity of a sum of per-example terms each of norm <= 1.

        :math:`\Delta = 1` under add/remove (one term appears or disappears) and
        :math:`\Delta = 2` under replace-one (one term leaves, another arrives). Multiply by
        the clipping norm ``C`` (or a per-example bound) for the sensitivity of a clipped
        gradient sum. This property is the one place the rule is written.
        """
        return 1.0 if self is Neighbouring.ADD_REMOVE else 2.0


# ----------------------------------------------------------------- argument checks
def _check_noise(name: str, value: object) -> float:
    """A noise multiplier: a real number > 0, where ``+inf`` (no release) is allowed."""
    v = check_real(name, value)
    if v == math.inf:
        return v
    return check_positive(name, v)


def _check_unit_interval(name: str, value: object, *, closed_right: bool) -> float:
    """A real number in [0, 1] (or [0, 1) with ``closed_right=False``)."""
    v = check_real(name, value)
    ok = 0.0 <= v <= 1.0 if closed_right else 0.0 <= v < 1.0
    if not ok:
        interval = "[0, 1]" if closed_right else "[0, 1)"
        raise ValueError(f"{name} must be in {interval}, got {value!r}")
    return v


def _check_event(name: str, value: object) -> DpEvent:
    if not isinstance(value, DpEvent):
        raise TypeError(f"{name} must be a DpEvent, got {type(value).__name__}")
    return value


def _short(value: object) -> str:
    if isinstance(value, DpEvent):
        return value.describe()
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, tuple):
        return "(" + ", ".join(_short(v) for v in value) + ")"
    return repr(value)


# ---------------------------------------------------------------------- base class
@dataclass(frozen=True)
class DpEvent:
    """Base class of all privacy events."""

    @property
    def neighbouring(self) -> Neighbouring:  # pragma: no cover - overridden
        raise NotImplementedError

    def describe(self) -> str:
        """Compact one-line description: fields with short number formats.

        The neighbouring relation is left out (reports print it once).
        """
        parts = []
        for f in fields(self):
            if f.name == "relation":
                continue
            parts.append(f"{f.name}={_short(getattr(self, f.name))}")
        return f"{type(self).__name__}({', '.join(parts)})"


# ----------------------------------------------------------------- generic events
@dataclass(frozen=True)
class Gaussian(DpEvent):
    r"""The Gaussian mechanism :math:`f(D) + \mathcal N(0, \sigma^2 I)`.

    Parameters
    ----------
    noise_multiplier : float
        Standard deviation of the noise, in units of the clipping norm ``C``
        (so the noise is :math:`\mathcal N(0, (zC)^2 I)`); ``inf`` releases nothing.
    sensitivity : float, default=1.0
        L2 sensitivity of ``f`` in the same units:
        ``relation.clipped_sum_sensitivity`` (1 for adding or removing one
        clipped example, 2 for replacing one).
    relation : Neighbouring, default=ADD_REMOVE

    Notes
    -----
    It is :math:`\mu`-GDP with :math:`\mu = \Delta / \sigma`
    = ``sensitivity / noise_multiplier`` and :math:`\rho`-zCDP with
    :math:`\rho = \mu^2 / 2`.
    """

    noise_multiplier: float
    sensitivity: float = 1.0
    relation: Neighbouring = Neighbouring.ADD_REMOVE

    def __post_init__(self) -> None:
        _check_noise("noise_multiplier", self.noise_multiplier)
        check_positive("sensitivity", self.sensitivity)
        object.__setattr__(self, "relation", Neighbouring(self.relation))

    @property
    def neighbouring(self) -> Neighbouring:
        return self.relation

    @property
    def mu(self) -> float:
        """Gaussian-DP parameter ``sensitivity / noise_multiplier``."""
        return self.sensitivity / self.noise_multiplier


@dataclass(frozen=True)
class SelfComposed(DpEvent):
    """``count`` adaptive repetitions of ``event``."""

    event: DpEvent
    count: int

    def __post_init__(self) -> None:
        _check_event("event", self.event)
        object.__setattr__(self, "count", check_positive_int("count", self.count, minimum=0))

    @property
    def neighbouring(self) -> Neighbouring:
        return self.event.neighbouring

    def describe(self) -> str:
        return f"{self.count} x {self.event.describe()}"


@dataclass(frozen=True)
class Composed(DpEvent):
    """Adaptive composition of heterogeneous events (all of one relation)."""

    events: tuple[DpEvent, ...]

    def __post_init__(self) -> None:
        events = tuple(self.events)
        object.__setattr__(self, "events", events)
        if not events:
            raise ValueError("Composed needs at least one event")
        for e in events:
            _check_event("every event", e)
        relations = {e.neighbouring for e in events}
        if len(relations) > 1:
            raise ValueError(
                "cannot compose events under different neighbouring relations: "
                + ", ".join(sorted(r.value for r in relations))
            )

    @property
    def neighbouring(self) -> Neighbouring:
        return self.events[0].neighbouring

    def describe(self) -> str:
        return " + ".join(
            f"[{e.describe()}]" if isinstance(e, Composed | SelfComposed) else e.describe()
            for e in self.events
        )


@dataclass(frozen=True)
class PoissonSampled(DpEvent):
    """``event`` run on a Poisson subsample: each row kept independently w.p. ``rate``.

    Amplification by Poisson sampling holds for add/remove neighbours, so the
    inner event must be an add/remove event.
    """

    rate: float
    event: DpEvent

    def __post_init__(self) -> None:
        _check_unit_interval("rate", self.rate, closed_right=True)
        _check_event("event", self.event)
        if self.event.neighbouring is not Neighbouring.ADD_REMOVE:
            raise ValueError("Poisson subsampling is accounted under add/remove neighbours")

    @property
    def neighbouring(self) -> Neighbouring:
        return Neighbouring.ADD_REMOVE


@dataclass(frozen=True)
class SampledWithoutReplacement(DpEvent):
    """``event`` run on a uniformly random subset of ``sample_size`` of ``population_size`` rows.

    Accounted under replace-one neighbours (the population size is public).
    """

    sample_size: int
    population_size: int
    event: DpEvent

    def __post_init__(self) -> None:
        m = check_positive_int("sample_size", self.sample_size)
        n = check_positive_int("population_size", self.population_size)
        if m > n:
            raise ValueError(
                f"need 0 < sample_size <= population_size, got {self.sample_size} and "
                f"{self.population_size}"
            )
        object.__setattr__(self, "sample_size", m)
        object.__setattr__(self, "population_size", n)
        _check_event("event", self.event)
        if self.event.neighbouring is not Neighbouring.REPLACE_ONE:
            raise ValueError("sampling without replacement is accounted under replace-one")

    @property
    def rate(self) -> float:
        return self.sample_size / self.population_size

    @property
    def neighbouring(self) -> Neighbouring:
        return Neighbouring.REPLACE_ONE


@dataclass(frozen=True)
class EpsilonDelta(DpEvent):
    """A mechanism known only to satisfy (epsilon, delta)-DP (delta may be 0)."""

    epsilon: float
    delta: float = 0.0
    relation: Neighbouring = Neighbouring.ADD_REMOVE

    def __post_init__(self) -> None:
        check_nonnegative("epsilon", self.epsilon)
        _check_unit_interval("delta", self.delta, closed_right=False)
        object.__setattr__(self, "relation", Neighbouring(self.relation))

    @property
    def neighbouring(self) -> Neighbouring:
        return self.relation


@dataclass(frozen=True)
class NonPrivate(DpEvent):
    """A release with no privacy guarantee. Every accountant refuses it."""

    reason: str = "non-private release"
    relation: Neighbouring = Neighbouring.ADD_REMOVE

    def __post_init__(self) -> None:
        object.__setattr__(self, "relation", Neighbouring(self.relation))

    @property
    def neighbouring(self) -> Neighbouring:
        return self.relation


# ------------------------------------------- secure mode: discrete Gaussian on a grid
@dataclass(frozen=True)
class DiscreteGaussianNoise(DpEvent):
    r"""``event`` with every Gaussian noise drawn as a discrete Gaussian on a rounding grid.

    Secure mode (:mod:`noisygd.mechanisms.secure`) releases, wherever ``event`` says
    :math:`f(D) + \mathcal N(0, \sigma^2 I_d)`, instead
    :math:`\gamma(\lfloor f(D)/\gamma\rceil + Y)` with
    :math:`Y \sim \mathcal N_{\mathbb Z}(0, (\sigma/\gamma)^2)^{\otimes d}` (Canonne, Kamath
    and Steinke 2020). Rounding moves each coordinate by at most :math:`\gamma/2`, so two
    answers at L2 distance :math:`\le \Delta` round to grid points at distance
    :math:`\le \Delta + \gamma\sqrt d` (Minkowski). The multivariate discrete Gaussian with
    that integer-lattice sensitivity is :math:`(\Delta + \gamma\sqrt d)^2/(2\sigma^2)`-zCDP,
    i.e. :math:`D_\alpha \le \alpha(\Delta + \gamma\sqrt d)^2/(2\sigma^2)` for every
    :math:`\alpha > 1` (CKS20, Rényi divergence of shifted discrete Gaussians and its
    multivariate form), the bound of the continuous Gaussian at sensitivity
    :math:`\Delta + \gamma\sqrt d`.

    ``sensitivity_inflation`` is a factor :math:`\kappa \ge \max(1 + \gamma\sqrt d/\Delta)` over
    the noised queries of ``event``; then the zCDP :math:`\rho` of this event is at most
    :math:`\kappa^2` times the :math:`\rho` of ``event`` (each query's :math:`\Delta^2` becomes
    :math:`(\kappa\Delta)^2`; for :class:`TreeAggregation` a node holding :math:`m_u \ge 1`
    leaves of an example moves by :math:`m_u\Delta + \gamma\sqrt d \le m_u\kappa\Delta`).
    Only the ``zcdp`` and ``rdp`` accountants read it: ``zcdp`` when ``event`` itself has a
    zCDP bound (:math:`\kappa^2\rho`), ``rdp`` also for Poisson-subsampled parts, by the
    general bound of Zhu and Wang (2019, Theorem 6) applied to the discrete Gaussian's curve
    :math:`\alpha\kappa^2\Delta^2/(2\sigma^2)` (the subsampled-Gaussian computations of
    :mod:`noisygd.accounting.subsampling` are specific to the continuous Gaussian and are not
    used). Parts sampled without replacement are read by ``rdp`` too, by the general bound of
    Wang, Balle and Kasiviswanathan (2019, Theorem 9) on the same curve. Exact GDP and PLD
    refuse it: the discrete Gaussian's privacy profile is not claimed to be the continuous
    Gaussian's.

    Parameters
    ----------
    event : DpEvent
        The event of the same run with continuous Gaussian noise.
    sensitivity_inflation : float
        :math:`\kappa \ge 1`.
    """

    event: DpEvent
    sensitivity_inflation: float

    def __post_init__(self) -> None:
        _check_event("event", self.event)
        k = check_positive("sensitivity_inflation", self.sensitivity_inflation)
        if k < 1.0:
            raise ValueError(
                f"sensitivity_inflation must be >= 1, got {self.sensitivity_inflation!r}")
        object.__setattr__(self, "sensitivity_inflation", k)

    @property
    def neighbouring(self) -> Neighbouring:
        return self.event.neighbouring

    def describe(self) -> str:
        return (f"DiscreteGaussianNoise([{self.event.describe()}], "
                f"sensitivity_inflation={self.sensitivity_inflation:.12g})")


# ------------------------------------- private selection: Papernot and Steinke (2022)
#: Distributions of the number of runs a :class:`RandomStoppingSelection` may draw.
SELECTION_DISTRIBUTIONS: tuple[str, ...] = ("poisson", "truncated_negative_binomial")


def truncated_negative_binomial_mean(eta: float, gamma: float) -> float:
    r""":math:`\mathbb E[K]` of :math:`K \sim \mathcal D_{\eta,\gamma}` (Papernot, Steinke 2022).

    :math:`\eta(1-\gamma)/(\gamma(1-\gamma^\eta))` for :math:`\eta \ne 0` and
    :math:`(1/\gamma - 1)/\log(1/\gamma)` for :math:`\eta = 0` (the logarithmic distribution).
    """
    if eta == 0.0:
        return (1.0 / gamma - 1.0) / -math.log(gamma)
    # 1 - gamma**eta = -expm1(eta log gamma), accurate for small eta
    return eta * (1.0 - gamma) / (gamma * -math.expm1(eta * math.log(gamma)))


def _gamma_for_mean(eta: float, mean: float) -> float:
    """The ``gamma`` in (0, 1) with ``E[K] = mean`` (bisection; the mean decreases in gamma)."""
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if truncated_negative_binomial_mean(eta, mid) > mean:
            lo = mid
        else:
            hi = mid
    # lo has mean >= target (more runs, a larger bound): the conservative side
    return lo if lo > 0.0 else hi


@dataclass(frozen=True)
class RandomStoppingSelection(DpEvent):
    r"""Run a private algorithm a random number :math:`K` of times and release only the best run.

    Papernot and Steinke, "Hyperparameter tuning with Rényi differential privacy"
    (ICLR 2022, arXiv:2110.03620). One run :math:`Q` draws a candidate from a public
    distribution, trains it privately and scores it privately (or on public data); the
    selection draws :math:`K`, runs :math:`Q` :math:`K` times independently and releases the
    run with the highest score (its model, candidate and score), nothing of the other runs.
    :math:`K` and the candidates tried are independent of the data. The
    ``rdp`` accountant bounds it (:mod:`noisygd.accounting.selection`) from the RDP curve of
    :math:`Q`; every other accountant refuses it.

    Parameters
    ----------
    event : DpEvent or tuple of DpEvent
        One run :math:`Q`. A tuple lists the runs of the candidates (the event each
        candidate's run performs, score included); :math:`Q` picks one of them at random,
        and its RDP curve is at most their pointwise maximum (quasi-convexity of Rényi
        divergence). A one-element tuple is stored as its element.
    distribution : {"truncated_negative_binomial", "poisson"}
        Law of :math:`K`: :math:`\mathcal D_{\eta,\gamma}`,
        :math:`\Pr[K=k] = \frac{(1-\gamma)^k}{\gamma^{-\eta}-1}\prod_{\ell=0}^{k-1}
        \frac{\ell+\eta}{\ell+1}` for :math:`k \ge 1` (:math:`\eta = 1`: geometric;
        :math:`\eta = 0`: logarithmic, :math:`\Pr[K=k] = (1-\gamma)^k/(k\log(1/\gamma))`),
        or :math:`\mathrm{Poisson}(\mu)` (then :math:`K = 0`, releasing nothing, has
        probability :math:`e^{-\mu}`).
    mean : float
        :math:`\mathbb E[K]`: > 1 for the truncated negative binomial (``gamma`` is solved
        from it), >= 1 for Poisson (:math:`\mu`).
    eta : float or None
        :math:`\eta > -1` of the truncated negative binomial; ``None`` for Poisson.

    Attributes
    ----------
    gamma : float or None
        :math:`\gamma \in (0, 1)` with :math:`\mathbb E[K] = ` ``mean`` (to rounding, on the
        side of more runs); the sampler and the bound both use it. ``None`` for Poisson.
    """

    event: DpEvent | tuple[DpEvent, ...]
    distribution: str
    mean: float
    eta: float | None = None
    gamma: float | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        ev = self.event
        if isinstance(ev, list | tuple):
            runs = tuple(ev)
            if not runs:
                raise ValueError("RandomStoppingSelection needs at least one run event")
            for e in runs:
                _check_event("every run event", e)
            if len({e.neighbouring for e in runs}) > 1:
                raise ValueError("the run events must share one neighbouring relation")
            object.__setattr__(self, "event", runs[0] if len(runs) == 1 else runs)
        else:
            _check_event("event", ev)
        check_choice("distribution", self.distribution, SELECTION_DISTRIBUTIONS)
        mean = check_positive("mean", self.mean)
        object.__setattr__(self, "mean", mean)
        if self.distribution == "poisson":
            if self.eta is not None:
                raise ValueError("eta is a parameter of the truncated negative binomial; "
                                 "leave it None for distribution='poisson'")
            if mean < 1.0:
                raise ValueError(f"mean must be >= 1 for the Poisson distribution, got {mean!r}")
            return
        if self.eta is None:
            raise ValueError("distribution='truncated_negative_binomial' needs eta > -1 "
                             "(eta=1: geometric, eta=0: logarithmic)")
        eta = check_real("eta", self.eta)
        if not (eta > -1.0 and math.isfinite(eta)):
            raise ValueError(f"eta must be finite and > -1, got {self.eta!r}")
        if not mean > 1.0:
            raise ValueError(
                f"mean must be > 1 for the truncated negative binomial, got {mean!r}")
        object.__setattr__(self, "eta", eta)
        object.__setattr__(self, "gamma", _gamma_for_mean(eta, mean))

    @property
    def runs(self) -> tuple[DpEvent, ...]:
        """The run events as a tuple (one element for a single run event)."""
        return self.event if isinstance(self.event, tuple) else (self.event,)

    @property
    def neighbouring(self) -> Neighbouring:
        return self.runs[0].neighbouring

    @property
    def expected_runs(self) -> float:
        r""":math:`\mathbb E[K]` of the law actually used (computed from ``gamma``)."""
        if self.gamma is None:
            return self.mean
        return truncated_negative_binomial_mean(float(self.eta), self.gamma)


# ------------------------------------------------------- DP-FTRL: the binary tree
#: Most leaves :func:`max_squared_node_count` counts (its arrays hold one entry per leaf:
#: 2**24 leaves take 128 MiB each); one epoch of one tree is counted in closed form at any size.
MAX_COUNTED_LEAVES = 2**24


def max_squared_node_count(steps: int, epochs: int = 1, restart_every: int | None = None) -> int:
    r""":math:`\max_p \sum_u m_u(p)^2` over the complete nodes of the released trees.

    ``m_u(p)`` is the number of leaves of an example at stream position ``p``
    under node ``u`` (see :class:`TreeAggregation`).

    Parameters
    ----------
    steps : int
        Total number of leaves ``T`` (all epochs); must be a multiple of ``epochs``.
    epochs : int
        Passes over the data; an example at position ``p`` of an epoch of
        ``s = T / epochs`` steps is in leaves ``p + k s``, ``k < epochs``.
    restart_every : int or None
        A new tree is started every ``restart_every`` leaves (``None``: one tree).

    Returns
    -------
    int
        The squared sensitivity in units of the per-leaf sensitivity.

    Notes
    -----
    Vectorised over ``p``; ``O(T log T)`` time. Leaves are 0-indexed here; the
    node of height ``h`` containing local leaf ``l`` of a tree of ``L`` leaves
    is ``l >> h``, complete iff ``((l >> h) + 1) << h <= L``.
    """
    T = check_positive_int("steps", steps)
    E = check_positive_int("epochs", epochs)
    if T % E:
        raise ValueError(f"steps={T} must be a multiple of epochs={E} (s steps per epoch)")
    R = T if restart_every is None else check_positive_int("restart_every", restart_every)
    if T > MAX_COUNTED_LEAVES:
        raise UnsupportedEventError(
            f"the node count of a tree over {T} leaves in {E} epochs is computed leaf by leaf "
            f"(O(T) memory); at most {MAX_COUNTED_LEAVES} leaves are counted: use fewer steps "
            "or a larger batch, or one epoch of one tree (counted in closed form)")
    s = T // E
    p = np.arange(s, dtype=np.int64)
    leaves = p[:, None] + s * np.arange(E, dtype=np.int64)[None, :]  # (s, E), increasing in k
    tree = leaves // R
    local = leaves % R
    tree_len = np.minimum(R, T - tree * R)
    total = np.zeros(s, dtype=np.int64)
    for h in range(min(R, T).bit_length() + 1):
        node = local >> h
        complete = ((node + 1) << h) <= tree_len
        # run-length counting along k: node ids are non-decreasing within a tree
        run = np.ones(s, dtype=np.int64)
        for k in range(E):
            if k > 0:
                same = (tree[:, k] == tree[:, k - 1]) & (node[:, k] == node[:, k - 1])
                run = np.where(same, run + 1, 1)
            # sum over a run of length m of (2c - 1), c = 1..m, is m^2
            total += np.where(complete[:, k], 2 * run - 1, 0)
    return int(total.max())


_COUNT_CACHE: dict[tuple[int, int, int | None], int] = {}


def _cached_count(steps: int, epochs: int, restart_every: int | None) -> int:
    key = (steps, epochs, restart_every)
    if key not in _COUNT_CACHE:
        if epochs == 1 and (restart_every is None or restart_every >= steps):
            _COUNT_CACHE[key] = int(steps).bit_length()  # floor(log2 T) + 1, leaf 0
        else:
            _COUNT_CACHE[key] = max_squared_node_count(steps, epochs, restart_every)
    return _COUNT_CACHE[key]


@dataclass(frozen=True)
class TreeAggregation(DpEvent):
    r"""Release of every complete node of binary trees over a stream of clipped sums.

    Lecture 14 (seed 001): each node of the binary tree over the ``T`` time
    steps releases the sum of its leaves plus :math:`\mathcal N(0, (zC)^2 I)`;
    a leaf is the (batch-summed) clipped gradient of one step. Conditioned on
    the earlier releases a node changes by at most :math:`m_u \Delta` when one
    example changes, so by adaptive composition of Gaussian mechanisms (Dong,
    Roth and Su 2022, Corollary 3.3) the whole tree, and any post-processing of
    it, is :math:`\mu`-GDP with

    .. math:: \mu = \frac{\Delta}{z}\sqrt{\max_p \sum_{u\ \mathrm{complete}} m_u(p)^2}

    (:func:`max_squared_node_count`; for one pass and one tree
    :math:`\lfloor\log_2 T\rfloor + 1` nodes, Kairouz et al. 2021, Appendix D).
    With ``leaves="position"`` the stream is processed in the order given, so adding or
    removing a row would shift every later leaf: only replace-one neighbours are accepted
    (``n``, hence ``T``, public), with :math:`\Delta = 2` per leaf.

    With ``leaves="random"`` every row is assigned to a leaf of each epoch's tree
    independently and uniformly at random (the number of leaves a public constant), so the
    other rows' leaves do not depend on an added row: conditioned on them, adding or removing
    one row changes one leaf per epoch by at most ``clip`` (:math:`\Delta = 1`), and the
    tree is :math:`\mu`-GDP by the argument above (the adaptive tree mechanism, Kairouz et
    al. 2021, Appendix D; Denisov et al. 2022, Thm. 2.1). The release with the row is the
    mixture over that row's leaf of releases each :math:`\mu`-GDP against the release
    without it, which does not depend on the leaf; the hockey-stick divergence is jointly
    convex, so the mixture is :math:`\mu`-GDP too, in both directions. Add/remove is then
    accepted for a single epoch or a tree restarted every epoch (``restart_every``), where an
    example's leaves lie in disjoint trees and its node count is the same for every leaf.

    Parameters
    ----------
    noise_multiplier : float
        ``z``: each node gets :math:`\mathcal N(0, (z C)^2 I)`, ``C`` the clip norm.
    steps : int
        Total number of leaves ``T`` (time steps, all epochs together).
    epochs : int, default=1
        Passes over the data in the same order; each example is in ``epochs``
        leaves, ``T / epochs`` apart.
    restart_every : int or None, default=None
        Leaves per tree when the tree is restarted (``T / epochs`` restarts at
        every epoch); ``None`` for a single tree.
    relation : Neighbouring, default=REPLACE_ONE
        Add/remove only with ``leaves="random"`` (one epoch or a restart every epoch).
    leaves : {"position", "random"}, default="position"
        How rows are assigned to leaves: by their position in the stream, or independently
        and uniformly at random in each epoch.
    """

    noise_multiplier: float
    steps: int
    epochs: int = 1
    restart_every: int | None = None
    relation: Neighbouring = Neighbouring.REPLACE_ONE
    leaves: str = "position"

    def __post_init__(self) -> None:
        _check_noise("noise_multiplier", self.noise_multiplier)
        steps = check_positive_int("steps", self.steps)
        epochs = check_positive_int("epochs", self.epochs)
        if steps % epochs:
            raise ValueError(
                f"steps={self.steps} must be a multiple of epochs={self.epochs}: every epoch "
                "streams the same rows in the same order"
            )
        object.__setattr__(self, "steps", steps)
        object.__setattr__(self, "epochs", epochs)
        if self.restart_every is not None:
            object.__setattr__(
                self, "restart_every", check_positive_int("restart_every", self.restart_every)
            )
        rel = Neighbouring(self.relation)
        if self.leaves not in ("position", "random"):
            raise ValueError(f"leaves must be 'position' or 'random', got {self.leaves!r}")
        if rel is not Neighbouring.REPLACE_ONE and self.leaves != "random":
            raise ValueError(
                "TreeAggregation with leaves='position' is accounted under replace-one "
                "neighbours only: the stream is processed in order, so adding or removing a "
                "row shifts every later leaf (assign rows to leaves at random: leaves='random')"
            )
        if (rel is not Neighbouring.REPLACE_ONE and epochs > 1
                and self.restart_every != steps // epochs):
            raise ValueError(
                "TreeAggregation under add/remove neighbours needs one epoch or a tree "
                "restarted every epoch (restart_every = steps / epochs): with random leaves in "
                "one tree over several epochs the node count depends on the leaves drawn")
        object.__setattr__(self, "relation", rel)

    @property
    def neighbouring(self) -> Neighbouring:
        return self.relation

    @property
    def squared_node_count(self) -> int:
        r""":math:`\max_p \sum_u m_u(p)^2` (see :func:`max_squared_node_count`)."""
        return _cached_count(self.steps, self.epochs, self.restart_every)

    @property
    def mu(self) -> float:
        """Gaussian-DP parameter of the release (class docstring): exact with
        ``leaves="position"``, an upper bound on the mixture with ``leaves="random"``."""
        if math.isinf(self.noise_multiplier):
            return 0.0
        per_leaf = self.relation.clipped_sum_sensitivity
        return per_leaf * math.sqrt(self.squared_node_count) / self.noise_multiplier


# --------------------------------------------- projected noisy GD: the last iterate
#: Theorem names a :class:`LastIterateLangevin` event may claim (seed 004).
LANGEVIN_THEOREMS: tuple[str, ...] = ("corollary1", "corollary2", "theorem2")
_CONSTRAINTS = ("ball", "none")
_STARTS = ("projected_gaussian", "fixed")


@dataclass(frozen=True)
class LastIterateLangevin(DpEvent):
    r"""Algorithm 1 of seed 004 (projected noisy GD, only :math:`\theta_K` released).

    Chourasia, Ye and Shokri (NeurIPS 2021). The event records the run's
    parameters and the facts about the objective and the run that the theorems
    assume; the accountants of :mod:`noisygd.accounting.langevin` check them.
    Neighbours are replace-one (datasets of equal size ``n`` differing in one
    record).

    Parameters
    ----------
    strong_convexity : float
        :math:`\lambda \ge 0`: strong convexity of every per-example loss
        (data term plus L2 regulariser), as the objective declared it.
    smoothness : float or None
        :math:`\beta`: smoothness of every per-example loss (data term plus
        regulariser); None if the objective cannot state it.
    step_size : float
        :math:`\eta > 0`.
    sigma : float
        :math:`\sigma > 0` of Algorithm 1 (noise :math:`\sqrt{2\eta}\mathcal N(0,\sigma^2 I)`).
    steps : int
        :math:`K \ge 0`.
    n_samples : int
        :math:`n`, public (replace-one neighbours).
    sensitivity : float
        :math:`S_g`, total-gradient sensitivity (Definition B.10); ``inf`` if
        unbounded (then both accountants refuse).
    theorem : {"corollary1", "corollary2", "theorem2"}
        Which result the run claims.
    lsi_constant : float or None
        The LSI constant :math:`c` claimed with ``theorem="theorem2"``; it is
        accepted only if it does not exceed the constant the recorded facts
        prove (:func:`noisygd.accounting.langevin.verified_lsi_constant`).
    constraint : {"ball", "none"}
        The closed convex set :math:`\mathcal C`: an L2 ball of ``radius`` or
        :math:`\mathbb R^d`.
    radius : float or None
    start : {"projected_gaussian", "fixed"}
        :math:`\theta_0 \sim \Pi_{\mathcal C}(\mathcal N(0, v I))` or a fixed,
        data-independent :math:`\theta_0`.
    start_variance : float or None
        ``v`` for the Gaussian start (Corollary 1 needs :math:`2\sigma^2/\lambda`).
    hidden_trajectory : bool
        True iff only :math:`\theta_K` is released (no iterate logged or returned).
    clipped_gradients : bool
        True if per-example gradients were clipped (breaks the gradient-field
        assumptions of Lemma 5; the last-iterate accountant refuses).
    quadratic_constant_hessian : bool
        True iff every per-example loss is quadratic with one data-independent
        Hessian (needed by Corollary 2).
    objective : str
        Description of the objective the facts were checked against.
    """

    strong_convexity: float
    smoothness: float | None
    step_size: float
    sigma: float
    steps: int
    n_samples: int
    sensitivity: float
    theorem: str = "corollary1"
    lsi_constant: float | None = None
    constraint: str = "ball"
    radius: float | None = None
    start: str = "projected_gaussian"
    start_variance: float | None = None
    hidden_trajectory: bool = True
    clipped_gradients: bool = False
    quadratic_constant_hessian: bool = False
    objective: str = ""

    def __post_init__(self) -> None:
        check_nonnegative("strong_convexity", self.strong_convexity)
        if self.smoothness is not None:
            check_positive("smoothness", self.smoothness)
        check_positive("step_size", self.step_size)
        check_positive("sigma", self.sigma)
        object.__setattr__(self, "steps", check_positive_int("steps", self.steps, minimum=0))
        object.__setattr__(self, "n_samples", check_positive_int("n_samples", self.n_samples))
        _check_noise("sensitivity", self.sensitivity)  # > 0, inf if unbounded
        check_choice("theorem", self.theorem, LANGEVIN_THEOREMS)
        if self.lsi_constant is not None:
            check_positive("lsi_constant", self.lsi_constant)
        check_choice("constraint", self.constraint, _CONSTRAINTS)
        if self.constraint == "ball":
            if self.radius is None:
                raise ValueError("constraint='ball' needs a radius")
            check_positive("radius", self.radius)
        elif self.radius is not None:
            raise ValueError("radius must be None when constraint='none'")
        check_choice("start", self.start, _STARTS)
        if self.start_variance is not None:
            check_positive("start_variance", self.start_variance)

    @property
    def neighbouring(self) -> Neighbouring:
        return Neighbouring.REPLACE_ONE

    def as_composition(self) -> SelfComposed:
        r"""The same run seen as ``K`` Gaussian mechanisms (every iterate released).

        Step ``k`` releases :math:`\theta_k - \frac{\eta}{n}g(\theta_k; D)` (replace-one
        sensitivity :math:`\eta S_g/n`) plus :math:`\mathcal N(0, 2\eta\sigma^2 I)`:
        ``Gaussian(noise_multiplier = sqrt(2 eta) sigma n / eta, sensitivity = S_g)``.
        """
        if not math.isfinite(self.sensitivity):
            raise UnsupportedEventError("total-gradient sensitivity S_g is unbounded")
        z = math.sqrt(2.0 * self.step_size) * self.sigma * self.n_samples / self.step_size
        step = Gaussian(noise_multiplier=z, sensitivity=float(self.sensitivity),
                        relation=Neighbouring.REPLACE_ONE)
        return SelfComposed(step, self.steps)


# ------------------------------------------------- Zhang, Zheng, Mou & Wang (2017)
class OutputNoise(str, Enum):  # noqa: UP042 - matches Neighbouring
    """Which noise Algorithm 1 of Zhang et al. (2017) added to :math:`w_T`."""

    L2_LAPLACE = "l2_laplace"
    GAUSSIAN_PAPER = "gaussian_paper"
    GAUSSIAN_ANALYTIC = "gaussian_analytic"


@dataclass(frozen=True)
class OutputPerturbation(DpEvent):
    r"""One release :math:`w_T + z` of a vector with replace-one L2 sensitivity ``sensitivity``.

    Algorithm 1 of Zhang, Zheng, Mou and Wang (IJCAI 2017, seed 002). With
    ``L2_LAPLACE`` noise (density :math:`\propto\exp(-\lVert z\rVert/b)`) the
    release is :math:`(\Delta/b)`-DP (pure); with either Gaussian noise it is the
    Gaussian mechanism with :math:`\mu = \Delta/\sigma`.

    Parameters
    ----------
    noise : OutputNoise
    sensitivity : float
        :math:`\Delta` (Lemma 2: :math:`3LT\eta/n`; Lemma 3:
        :math:`5L(\mu+\beta)/(n\mu\beta)`; or the contraction bound).
    scale : float
        :math:`b` of :math:`\exp(-\lVert z\rVert/b)` for ``L2_LAPLACE``, the
        standard deviation :math:`\sigma` for the Gaussian noises.
    target_epsilon, target_delta : float
        What the noise was calibrated for (informational, and the value the
        ``paper_thm`` accountant certifies for ``GAUSSIAN_PAPER``).
        ``target_delta`` is 0 for ``L2_LAPLACE``.
    sensitivity_theorem : str
        Which lemma gave :math:`\Delta` (for reports).
    relation : Neighbouring
        Must be ``REPLACE_ONE``: the sensitivity lemmas compare datasets of the
        same public size ``n`` differing in one row.
    """

    noise: OutputNoise
    sensitivity: float
    scale: float
    target_epsilon: float
    target_delta: float = 0.0
    sensitivity_theorem: str = ""
    relation: Neighbouring = Neighbouring.REPLACE_ONE

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise", OutputNoise(self.noise))
        check_positive("sensitivity", self.sensitivity)
        check_positive("scale", self.scale)
        check_positive("target_epsilon", self.target_epsilon)
        _check_unit_interval("target_delta", self.target_delta, closed_right=False)
        if self.noise is OutputNoise.L2_LAPLACE and self.target_delta != 0.0:
            raise ValueError("L2-Laplace output perturbation is pure DP: target_delta must be 0")
        if self.noise is not OutputNoise.L2_LAPLACE and not self.target_delta > 0.0:
            raise ValueError("Gaussian output perturbation needs target_delta > 0")
        object.__setattr__(self, "relation", Neighbouring(self.relation))
        if self.relation is not Neighbouring.REPLACE_ONE:
            raise ValueError(
                "output perturbation sensitivities (Lemmas 2-3 of Zhang et al. 2017) are "
                "for replace-one neighbours with public n"
            )

    @property
    def neighbouring(self) -> Neighbouring:
        return self.relation

    @property
    def is_gaussian(self) -> bool:
        return self.noise is not OutputNoise.L2_LAPLACE

    @property
    def pure_epsilon(self) -> float:
        r""":math:`\Delta/b` for the L2-Laplace noise (refused for Gaussian noise)."""
        if self.is_gaussian:
            raise UnsupportedEventError("Gaussian output perturbation is not pure DP")
        return self.sensitivity / self.scale

    def as_gaussian(self) -> Gaussian:
        """The equivalent :class:`Gaussian` event (shift ``sensitivity``, std ``scale``)."""
        if not self.is_gaussian:
            raise UnsupportedEventError(
                "L2-Laplace output perturbation is not a Gaussian mechanism"
            )
        return Gaussian(noise_multiplier=float(self.scale), sensitivity=float(self.sensitivity),
                        relation=Neighbouring.REPLACE_ONE)

    def as_pure(self) -> EpsilonDelta:
        """The equivalent pure-DP :class:`EpsilonDelta` event (L2-Laplace noise only)."""
        return EpsilonDelta(self.pure_epsilon, 0.0, Neighbouring.REPLACE_ONE)


@dataclass(frozen=True)
class RRPSGDPaperArgument(DpEvent):
    r"""Algorithm 2 of Zhang et al. 2017 (RRPSGD), described the way Theorem 4 proves it private.

    Per-step Gaussian mechanism, amplification by sampling one example of ``n``
    (Lemma 9), strong composition over the horizon (Lemma 10). Only the paper
    accountant ``zhang2017_thm4`` reads it; the tight description of the same
    run, ``SelfComposed(SampledWithoutReplacement(1, n, Gaussian(...)), R)``, is
    read by the general accountants.

    Parameters
    ----------
    step_mu : float
        Per-step Gaussian-DP parameter :math:`2L/\sigma_z`: the noisy gradient
        :math:`\nabla f(w_t,\xi) + z_t` of one example with
        :math:`\lVert\nabla f\rVert \le L` has replace-one sensitivity
        :math:`2L`, and :math:`z_t \sim \mathcal N(0, \sigma_z^2 I)`.
    population_size : int
        ``n`` (public, at least 2); one example sampled uniformly per step.
    horizon : int
        ``T``: the composition is taken over ``T`` steps (the paper:
        :math:`T = n^2 \ge R`).
    """

    step_mu: float
    population_size: int
    horizon: int

    def __post_init__(self) -> None:
        check_positive("step_mu", self.step_mu)
        object.__setattr__(
            self, "population_size",
            check_positive_int("population_size", self.population_size, minimum=2),
        )
        object.__setattr__(self, "horizon", check_positive_int("horizon", self.horizon))

    @property
    def neighbouring(self) -> Neighbouring:
        return Neighbouring.REPLACE_ONE


def contains(event: DpEvent, kind: type | tuple[type, ...],
             where: Callable[[Any], bool] | None = None) -> bool:
    """Whether ``event`` is, or composes (``SelfComposed``, ``Composed``), an event of
    ``kind`` (for which ``where``, if given, holds): what an accountant's printed theorem
    names only when it applies, or what makes its answer a bound rather than exact."""
    if isinstance(event, kind):
        return where is None or bool(where(event))
    if isinstance(event, SelfComposed):
        return contains(event.event, kind, where)
    if isinstance(event, Composed):
        return any(contains(e, kind, where) for e in event.events)
    return False
