r"""Privacy-loss-distribution (PLD) accounting through Google's ``dp-accounting``.

Theorem: the (epsilon, delta) curve of a composition is the hockey-stick
divergence of the composed privacy-loss distributions (Meiser and Mohammadi
2018; Koskela, Jälkö and Honkela 2020); dp_accounting discretises each PLD
with *pessimistic* rounding (privacy losses rounded up, truncated mass moved
to infinite loss), so the epsilon it reports is an upper bound on the true
one (Doroshenko, Ghazi, Kamath, Kumar and Manurangsi 2022, "Connect the dots",
Theorem 3.6). The events it reads and their translation into
dp_accounting's are in :mod:`~noisygd.accounting.dp_accounting_bridge` (its
table ``TRANSLATIONS`` is this accountant's dispatch table); dp_accounting is
imported only when a PLD is computed. It is the independent cross-check of the
closed forms in :mod:`~noisygd.accounting.gdp`, :mod:`~noisygd.accounting.zcdp`
and :mod:`~noisygd.accounting.rdp`, and the tightest accountant for sampled
Gaussians (Poisson sampling through dp_accounting's own PLD; sampling without replacement
through the symmetric dominating PLD of :mod:`~noisygd.accounting.wor_pld`). It is the
one *expensive* accountant: :func:`~noisygd.accounting.best`
asks it last (and not at all once an exact accountant has answered), and
calibration refines with it only inside a bracket found by the cheap ones.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from noisygd._checks import check_positive
from noisygd.accounting.base import (
    GENERAL,
    Accountant,
    UnsupportedEventError,
    check_delta,
    check_epsilon,
)
from noisygd.accounting.dp_accounting_bridge import (
    TRANSLATIONS,
    contains_without_replacement,
    dp_accounting_relation,
    pld_delta,
    pld_epsilon,
    pld_supports,
    to_dp_accounting,
)
from noisygd.accounting.events import Composed, DpEvent, SelfComposed
from noisygd.accounting.rdp import RDPAccountant

__all__ = [
    "MAX_COMPOSITIONS",
    "MAX_EPSILON_SCALE",
    "MAX_GRID_POINTS",
    "PLDAccountant",
    "adaptive_discretization",
    "dp_accounting_relation",
    "loss_grid_points",
    "to_dp_accounting",
]


# ------------------------------------------------------------------ resolution
def adaptive_discretization(epsilon_scale: float) -> float:
    """Value discretisation interval for an epsilon of about ``epsilon_scale``.

    ``max(min(5e-4, 1e-3 s), 1e-5 s)`` (floored at 1e-7): at most 0.1% of
    epsilon below ``s = 0.5``, 5e-4 up to ``s = 50`` and 0.001% of epsilon for
    large ones (where a fixed interval would need millions of points), capped
    at 10 (dp_accounting overflows beyond). The interval affects accuracy only:
    pessimistic rounding keeps the estimate an upper bound at any resolution.
    Measured on the NoisySGD event of Adult (q = 512/45222, 883 steps, epsilon
    1 at delta 1e-5): 5e-4 reports 0.02% above dp_accounting's default 1e-4 in
    a fifth of the time (30 ms against 130 ms; ``benchmarks/bench_scale.py``).
    """
    s = float(epsilon_scale)
    if not math.isfinite(s) or s <= 0:
        return _DEFAULT_INTERVAL
    return min(max(min(_DEFAULT_INTERVAL, 1e-3 * s), 1e-5 * s, 1e-7), _MAX_INTERVAL)


#: Interval for moderate epsilons (dp_accounting's own default is 1e-4).
_DEFAULT_INTERVAL = 5e-4


#: Largest discretisation interval used (``expm1`` of it must not overflow in dp_accounting).
_MAX_INTERVAL = 10.0
#: Events whose RDP epsilon exceeds this are refused: their PLD would not fit in memory
#: at any useful resolution (and such epsilons carry no meaningful privacy anyway).
MAX_EPSILON_SCALE = 1e6
#: Events composing more mechanisms than this are refused: dp_accounting's self-composition
#: grows with the count (1e8 Poisson-sampled Gaussians: 1.5 s; 3e8: over 100 s), and the
#: closed-form accountants bound such events in microseconds.
MAX_COMPOSITIONS = 10**8
#: Largest loss grid built for one Gaussian part (:func:`loss_grid_points`). A Gaussian
#: whose noise is a small fraction of its sensitivity has a privacy loss spread over
#: :math:`\pm(r^2/2 + 10r)`, :math:`r = 1/z`: on the fine grid a calibration searches with,
#: 5 Poisson-sampled steps at rate 2e-11 (a ``PrivateTrainer`` told ``n_samples_public=1e12``
#: for 200 rows) reached noise 0.005, about 1.3e7 points, and took over 20 GB. Measured (5
#: steps, interval 0.002): 1e6 points 5.5 s and 0.3 GB, 3.4e6 points 19 s and 0.75 GB.
MAX_GRID_POINTS = 10**6


def loss_grid_points(event: DpEvent, interval: float) -> float:
    r"""An estimate of the largest loss grid the PLD of ``event`` builds for one Gaussian
    part at ``interval``: :math:`(r^2/2 + 10r)/\Delta_L` with :math:`r` the part's
    sensitivity over its noise (its privacy loss spans about :math:`\pm(r^2/2 + t r)`, the
    tail :math:`t = 10` sds where dp_accounting truncates the mass :math:`e^{-50}`). Parts
    without a noise multiplier count 0."""
    parts = [event]
    worst = 0.0
    while parts:
        e = parts.pop()
        if isinstance(e, Composed):
            parts.extend(e.events)
            continue
        inner = getattr(e, "event", None)
        if isinstance(inner, DpEvent):
            parts.append(inner)
        z = getattr(e, "noise_multiplier", None)
        if isinstance(z, int | float) and z > 0 and math.isfinite(z):
            r = 1.0 / z  # the loss depends on the sensitivity over the noise sd, z
            worst = max(worst, (0.5 * r * r + 10.0 * r) / interval)
        elif isinstance(z, int | float) and z == 0:
            worst = math.inf
    return worst


def compositions(event: DpEvent) -> int:
    """Number of mechanisms ``event`` composes (``SelfComposed`` counts multiply)."""
    if isinstance(event, SelfComposed):
        return event.count * compositions(event.event)
    if isinstance(event, Composed):
        return sum(compositions(e) for e in event.events)
    return 1


def _epsilon_scale(event: DpEvent, delta: float) -> float:
    # Resolution heuristic only (never the reported value): our RDP bound if it exists.
    try:
        return RDPAccountant().epsilon(event, delta)
    except UnsupportedEventError:
        return math.nan


# -------------------------------------------------------------------- accountant
class PLDAccountant(Accountant):
    """dp_accounting's PLD accountant with pessimistic estimates (a sound upper bound).

    Parameters
    ----------
    value_discretization_interval : float, optional
        Loss discretisation interval passed to dp_accounting. ``None`` (the
        default) picks it per call with :func:`adaptive_discretization` from a
        rough epsilon scale (the RDP bound of the event at the requested delta,
        or at delta = 1e-6 for :meth:`delta`), so that tiny and huge epsilons are
        both resolved to about 0.1% in well under a second.
    coarsening : float, default=1.0
        Factor (>= 1) multiplying the interval, adaptive or fixed. Calibration
        searches with a coarser copy (:meth:`coarse`) before it verifies with
        this one.
    """

    name = "pld"
    theorem = (
        "privacy loss distributions, pessimistic (dp_accounting; Doroshenko et al. 2022); "
        "sampling without replacement by the symmetric dominating pair of Zhu-Dong-Wang 2022 "
        "Prop. 30"
    )
    #: :attr:`theorem` for an event without sampling without replacement.
    theorem_without_sampling_wor = (
        "privacy loss distributions, pessimistic (dp_accounting; Doroshenko et al. 2022)")
    kind = GENERAL
    expensive = True
    DISPATCH = TRANSLATIONS

    def __init__(
        self, value_discretization_interval: float | None = None, coarsening: float = 1.0
    ) -> None:
        if value_discretization_interval is not None:
            value_discretization_interval = check_positive(
                "value_discretization_interval", value_discretization_interval
            )
        self.value_discretization_interval = value_discretization_interval
        self.coarsening = check_positive("coarsening", coarsening)
        if self.coarsening < 1.0:
            raise ValueError(f"coarsening must be >= 1, got {coarsening!r}")

    def theorem_for(self, event: DpEvent) -> str:
        """:attr:`theorem`; the Zhu-Dong-Wang dominating pair is named only for an event
        that samples without replacement (a Poisson-sampled or unsampled event does not
        rest on it)."""
        return (self.theorem if contains_without_replacement(event)
                else self.theorem_without_sampling_wor)

    def coarse(self, factor: float = 10.0, epsilon_scale: float | None = None) -> PLDAccountant:
        """The same accountant on a ``factor`` times coarser loss grid (faster, looser).

        With ``epsilon_scale`` (and an adaptive interval), the interval is fixed at
        ``adaptive_discretization(epsilon_scale) * factor`` instead of following each
        event's RDP bound: a calibration searching near a target epsilon passes the
        target, and saves one RDP curve per evaluation.
        """
        vdi = self.value_discretization_interval
        if vdi is None and epsilon_scale is not None:
            vdi = adaptive_discretization(epsilon_scale)
        return PLDAccountant(vdi, self.coarsening * factor)

    def _interval(self, event: DpEvent, scale_from: Callable[[], float]) -> float:
        if not isinstance(event, DpEvent):
            raise TypeError(f"event must be a DpEvent, got {type(event).__name__}")
        to_dp_accounting(event)  # refuse early, before any work
        if compositions(event) > MAX_COMPOSITIONS:
            raise UnsupportedEventError(
                f"the event composes more than {MAX_COMPOSITIONS:.0e} mechanisms; its PLD is "
                "not computed (the closed-form accountants bound it)"
            )
        interval = self.value_discretization_interval
        if interval is None:
            scale = scale_from()
            if scale > MAX_EPSILON_SCALE:
                raise UnsupportedEventError(
                    f"epsilon of about {scale:.3g} is beyond the PLD accountant's range "
                    f"(> {MAX_EPSILON_SCALE:g}); the closed-form accountants bound it"
                )
            interval = adaptive_discretization(scale)
        interval = min(interval * self.coarsening, _MAX_INTERVAL)
        points = loss_grid_points(event, interval)
        if points > MAX_GRID_POINTS:
            raise UnsupportedEventError(
                f"its PLD would need a loss grid of about {points:.3g} points at "
                f"value_discretization_interval={interval:g} (noise far below the "
                f"sensitivity; more than {MAX_GRID_POINTS:.0e}); the closed-form accountants "
                "bound it")
        return interval

    def epsilon(self, event: DpEvent, delta: float) -> float:
        delta = check_delta(delta)
        interval = self._interval(event, lambda: _epsilon_scale(event, delta))
        return pld_epsilon(event, delta, interval)

    def delta(self, event: DpEvent, epsilon: float) -> float:
        eps = check_epsilon(epsilon)

        def scale() -> float:
            # The resolution follows the event's epsilon at a typical delta, not the
            # query point (a small query epsilon must not force a needlessly fine grid).
            s = _epsilon_scale(event, 1e-6)
            return s if math.isfinite(s) and s > 0 else eps

        return pld_delta(event, eps, self._interval(event, scale))

    def supports(self, event: DpEvent) -> bool:
        """Whether the event translates, dp_accounting can compose it and it composes at most
        :data:`MAX_COMPOSITIONS` mechanisms (no PLD is built)."""
        return pld_supports(event) and compositions(event) <= MAX_COMPOSITIONS

    def __repr__(self) -> str:
        vdi = self.value_discretization_interval
        extra = "" if self.coarsening == 1.0 else f", coarsening={self.coarsening:g}"
        return f"PLDAccountant(value_discretization_interval={vdi!r}{extra})"
