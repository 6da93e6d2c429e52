r"""Private training under a total (epsilon, delta) budget: :func:`fit_private`.

The one fit path. The estimators and the CLI call :func:`fit_private` with one
:class:`~noisygd.oracles.base.GradientOracle` per problem and a method (a name in
:data:`noisygd.solvers.SOLVERS` or a :class:`~noisygd.solvers.Solver` instance). It owns
what every private fit needs besides the algorithm:

1. **The dataset size.** Under add/remove neighbours the number of rows ``n`` is private.
   Unless the user declares it public (``n_samples_public=n``), it is estimated by the
   Gaussian mechanism on the count (sensitivity 1) and that release is paid for from the
   budget: a fraction ``count_budget_fraction`` (default 1%) of the Gaussian-DP budget
   :math:`\mu^2`. Under replace-one neighbours ``n`` is public by definition. The planners
   never use the noisy count itself: they get its one-sided :math:`1-\beta` confidence
   bounds (:func:`count_confidence_bounds`, :math:`\beta` = :data:`COUNT_CONFIDENCE_BETA`
   = 1e-3), :math:`n_{\rm lo} = \max(1, \hat n - z_{1-\beta}\sigma)` as
   ``PublicFacts.n_samples`` (where ``n`` measures the signal: noise-to-signal ratios,
   sampling rates, utility bounds) and :math:`n_{\rm hi} = \hat n + z_{1-\beta}\sigma` as
   ``PublicFacts.n_samples_high`` (where ``n`` sets the curvature a step must respect: the
   sum-form step :math:`1/(n\beta)` and the normalisation of a gradient sum). A step
   planned with :math:`n_{\rm hi}` is stable for the true ``n`` with probability at least
   :math:`1-\beta`, whatever the draw of the count (an unlucky count can no longer give a
   step hundreds of times too large).
2. **The budget split.** A total budget (epsilon, delta) is the exact Gaussian-DP budget
   :math:`\mu(\varepsilon, \delta)`, computed once; Gaussian-DP composes as
   :math:`\mu^2 = \sum_k \mu_k^2`, so a count and ``K`` one-vs-rest problems receive
   :math:`\mu_c^2 = f\mu^2` and :math:`\mu_k^2 = (1 - f)\mu^2 / K`
   (:func:`noisygd.accounting.gdp.split_gaussian_budget`). A Gaussian solver plans from
   :math:`\mu_k` directly (``Budget.mu``). A solver that is not a Gaussian composition needs
   a single problem, and either a public ``n`` or ``accepts_prior_event`` (it then
   calibrates jointly with the count's event).
3. **Plan, then run.** :class:`~noisygd.solvers.PublicFacts` are built once from the oracle's
   declared constants and the public ``n``; the solver plans once (every problem has the
   same facts and budget) and runs once per problem.
4. **The final account.** The released model's event is the composition of everything that
   touched the data; :func:`noisygd.accounting.best` accounts it once, and a fit whose event
   exceeds the budget (beyond :data:`noisygd.accounting.base.BUDGET_RTOL`) is withheld. The
   event is known before the run: it is the composition of the count's event and the
   solver's :meth:`~noisygd.solvers.Solver.planned_event`, and a run whose event differs is
   an internal error (the model is withheld).
5. **The privacy ledger** (``ledger=``, ``dataset=``; :mod:`noisygd.ledger`). The fit is
   recorded as one release of ``dataset`` *before* any data is read, in a committed
   transaction, and refused with :class:`~noisygd.exceptions.BudgetExceededError` (having
   read nothing) if the dataset's budget cannot admit it:

   * ``n`` public (declared, or replace-one): plan, then ``spend`` the planned event, then
     run;
   * ``n`` private, Gaussian solver: ``spend`` the covering event
     ``Gaussian(1/mu_total)`` (the count and the runs compose to exactly
     :math:`\mu_{\rm total}`-GDP, Dong, Roth and Su 2022, Cor. 3.3), take the count, plan,
     ``settle`` the release to the exact composed event, then run;
   * ``n`` private, solver calibrated with the count (NoisySGD): ``spend`` the count's own
     event (no event in the accountants' language dominates a Poisson-subsampled run whose
     rate depends on the count), take the count, plan, ``settle`` to the composed event
     (a refusal then comes after the count, which stays recorded as it was released).

   :func:`preview_private_fit` runs the same check without recording, for an estimator
   to refuse a fit before it even validates its input. The records of one fit are held by
   one context manager (:class:`_LedgerRecords`; item 9 says what happens on a failure).
6. **Secure mode** (``secure=True``, ``rng`` a :class:`~noisygd.mechanisms.secure.SecureRandom`;
   docs/secure_noise.md). Every noise draw, the count's included, is a discrete Gaussian on a
   rounding grid (:func:`noisygd.mechanisms.noise.add_gaussian_noise`) and every event is
   wrapped in :class:`~noisygd.accounting.events.DiscreteGaussianNoise`, which only the
   ``zcdp`` and ``rdp`` accountants bound. The budget is split in zCDP instead of
   Gaussian-DP: :math:`\rho` = :func:`~noisygd.mechanisms.noise.zcdp_rho_for` ``(epsilon,
   delta)``, :math:`\rho = \rho_c + \sum_k\rho_k` (zCDP composes additively; with
   :math:`\rho = \mu^2/2` the shares are those of item 2), each part planned so that its
   discrete event, rounding included, is at most its share (the solvers' ``Budget.secure``).
   The ledger's reservation for a Gaussian solver is then
   ``DiscreteGaussianNoise(Gaussian(1/mu_total), 1)``, i.e. exactly :math:`\rho`-zCDP, which
   dominates the fit under both accountants that read it. Methods without a secure form
   (``Solver.secure_mode`` false: of the built-in ones, the dynamic schedules) are refused
   before any data is read.
7. **Prior releases** (``prior_events``): releases already made on the same rows before the
   call, e.g. schema bounds and levels paid for privately
   (:mod:`noisygd.mechanisms.private_statistics`). They are the first parts of the fit's
   event, ``Composed((*prior_events, count, *runs))``, accounted once as in item 4. A
   Gaussian solver gets what remains of the Gaussian-DP budget:
   :math:`\mu^2 = \mu_{\rm prior}^2 + \mu_c^2 + \sum_k \mu_k^2` with
   :math:`\mu_c^2 = f\mu^2` as before, :math:`\mu_{\rm prior}` the exact GDP of the prior
   events (:func:`noisygd.accounting.gdp.gaussian_mu`, which refuses a non-Gaussian event;
   secure mode: :math:`\sqrt{2\rho}` of their zCDP), hence
   :math:`\mu_k^2 = ((1 - f)\mu^2 - \mu_{\rm prior}^2)/K`; a solver calibrated with the count
   calibrates with ``Composed((*prior_events, count))``. The ledger records only this call's
   own part (the covering event becomes :math:`\mathrm{Gaussian}(1/\sqrt{\mu^2 -
   \mu_{\rm prior}^2})`): the prior events were performed before the call, and their
   performer recorded them before reading the data; the ledger composes the two releases.
8. **Pre-release stages** (``pre_release``, a :class:`PreRelease` or a sequence of them, run
   in order; each later stage reads the first oracle of the previous stage's
   post-processing, so it may be built in the coordinates an earlier release chose, e.g.
   ``DPLinearRegression``'s residual scale in those of its released centre): a release
   the fit makes before the count, on the oracle: the Gaussian mechanism on ``k`` of the
   oracle's bounded row sums
   (:meth:`~noisygd.oracles.base.GradientOracle.bounded_row_sums`; each row adds at most
   1 in norm to each, so the stacked sums have sensitivity :math:`\sqrt k\,\Delta`), or on
   a statistic of the rows (``PreRelease.statistic``, e.g. the feature range's histogram).
   Its event enters the budget split as a prior event does (the runs get what remains) and
   the fit's event after them, ``Composed((*prior_events, *pres, count, *runs))``; with a
   ledger each is recorded as its own release (``"<estimator>/<name>"``), after checking
   that the ledger admits it composed with every later stage and the first record of the
   rest of the fit, before its sums are read. Its post-processing (``then``, public)
   gives the oracles and the clip of the next stage or of the runs.
   The estimators' private feature range, conditioning (centre) and per-feature scale and
   ``DPLinearRegression``'s residual scale are such stages, so every release an estimator
   makes before its run takes this one path.
   ``info["pre_releases"]`` names them in order (``name``, ``event``: its description, and
   ``statistic``: the sums released), so that a report or the command line can say what was
   paid for before the run. The empirical audit (:mod:`noisygd.audit`) observes a stage's
   noisy vector white-box through :func:`observe_pre_releases`: a copy, handed over after
   the noise is drawn and before the post-processing, which the fit never reads back.
9. **Failures** (docs/ledger.md, "A fit that fails"). If the fit raises before returning its
   model, its ledger records are withdrawn *only* when it failed before its first noise draw
   on the data (the pre-release's, the count's, or the runs', which start right after the
   fit's own release is committed, whether ``n`` is public or not): no output of any recorded
   mechanism exists, whatever the exception. From the first noise draw on, the records stay,
   whatever the exception (an interruption, a lost worker, ``MemoryError`` included): noisy
   values exist in the process (on an estimator, in a warning, in the traceback's frames)
   and may have left it. The fit's own release is then settled to the events performed: the
   count alone if the fit failed before its plan was committed; once committed, the planned
   event stays, because a run stopped after ``t`` of its steps released a prefix of the
   whole run's outputs, a post-processing (a projection) of them, so it is dominated by the
   planned event (likewise a Poisson-subsampled run, whose steps compose adaptively, and
   one-vs-rest problems not all run: a problem never run is recorded all the same, erring
   toward spent). A pre-release's record is its whole event from its draw on. An exception
   raised before the first noise draw carries no output of a recorded mechanism; what it
   says by itself (a store's error, the time it took) is outside the privacy model, as for
   the checks that refuse a fit before the ledger is reached.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from noisygd._checks import (
    check_bool,
    check_fraction,
    check_generator,
    check_positive,
    check_positive_int,
)
from noisygd.accounting.base import AccountingResult, check_delta, check_epsilon
from noisygd.accounting.events import (
    Composed,
    DiscreteGaussianNoise,
    DpEvent,
    Gaussian,
    Neighbouring,
)
from noisygd.algorithms.base import FitResult
from noisygd.mechanisms.noise import (
    add_gaussian_noise,
    add_gaussian_noise_in_place,
    is_secure,
    secure_event,
    secure_noise_scale,
    sensitivity_inflation,
)
from noisygd.mechanisms.secure import DEFAULT_GRID_BITS, SecureRandom
from noisygd.oracles._parallel import compute_context
from noisygd.oracles.base import ROW_SUMS, GradientOracle
from noisygd.solvers import SOLVERS, Budget, PublicFacts, Solver, get_solver
from noisygd.solvers.base import ReleasedFacts

if TYPE_CHECKING:
    from noisygd.ledger import Ledger, Release

__all__ = ["COUNT_CONFIDENCE_BETA", "PreRelease", "PreparedFit", "PrivateFit",
           "check_secure_method",
           "count_confidence_bounds", "fit_private", "observe_pre_releases",
           "preview_private_fit"]

#: One-sided error probability of each confidence bound on a private row count.
COUNT_CONFIDENCE_BETA = 1e-3


def count_confidence_bounds(noisy_count: float, noise_std: float,
                            beta: float = COUNT_CONFIDENCE_BETA, *,
                            grid: float = 0.0) -> tuple[float, float]:
    r"""One-sided :math:`1-\beta` confidence bounds on ``n`` from a Gaussian noisy count.

    For :math:`\hat n = n + \sigma Z`, :math:`Z \sim N(0, 1)` (``grid`` :math:`\gamma = 0`),
    and :math:`z_{1-\beta} = \Phi^{-1}(1-\beta)`,

    .. math::

        n_{\rm lo} = \max(1, \hat n - h), \qquad
        n_{\rm hi} = \max(n_{\rm lo}, \hat n + h), \qquad
        h = z_{1-\beta}\sigma + \tfrac32\gamma,

    so :math:`P(n_{\rm lo} \le n) \ge 1 - \beta` and :math:`P(n_{\rm hi} \ge n) \ge
    1 - \beta` for every ``n >= 1`` (the floor at 1 only raises the probability). Both are
    public: functions of the released count and public constants (post-processing).

    ``grid`` :math:`\gamma > 0` is for the secure count
    :math:`\hat n = \gamma(\lfloor n/\gamma\rceil + Y)`,
    :math:`Y \sim \mathcal N_{\mathbb Z}(0, (\sigma/\gamma)^2)`
    (:meth:`~noisygd.mechanisms.secure.SecureRandom.gaussian_on_grid`): the rounding moves
    :math:`n` by at most :math:`\gamma/2`, and for every integer :math:`m \ge 1`,
    :math:`P(Y \ge m) \le P(G \ge m - 1)` with :math:`G \sim N(0, (\sigma/\gamma)^2)`
    (the discrete Gaussian's normaliser is at least :math:`\sqrt{2\pi}\sigma/\gamma` and its
    tail sum at most the integral from :math:`m - 1`; Canonne, Kamath and Steinke 2020,
    Prop. 25). Hence :math:`P(\hat n - n > z_{1-\beta}\sigma + \tfrac32\gamma) \le
    P(\gamma G \ge z_{1-\beta}\sigma) = \beta`, and the same on the other side.

    Parameters
    ----------
    noisy_count : float
        The released count :math:`\hat n`.
    noise_std : float
        Its noise standard deviation :math:`\sigma` (the count's noise multiplier; the
        count has sensitivity 1).
    beta : float, default=:data:`COUNT_CONFIDENCE_BETA` (1e-3)
        One-sided error probability of each bound.
    grid : float, default=0.0
        :math:`\gamma`, the rounding grid of a secure (discrete Gaussian) count
        (``SecureRandom.grid(noise_std, 1)``); 0 for a continuous Gaussian count.

    Returns
    -------
    (n_lo, n_hi) : tuple of float
    """
    from scipy.stats import norm

    from noisygd._checks import check_nonnegative, check_probability, check_real

    noisy = check_real("noisy_count", noisy_count)
    sigma = check_positive("noise_std", noise_std)
    beta = check_probability("beta", beta)
    gamma = check_nonnegative("grid", grid)
    half = float(norm.isf(beta)) * sigma + 1.5 * gamma
    lo = max(1.0, noisy - half)
    return lo, max(lo, noisy + half)

LedgerLike = Union[str, "os.PathLike[str]", "Ledger"]


@dataclass
class PrivateFit:
    """What :func:`fit_private` returns.

    Attributes
    ----------
    thetas : list of ndarray
        One parameter vector per problem (one for binary or regression, one per class for
        one-vs-rest).
    event : DpEvent
        The composition of every release that touched the data.
    privacy : AccountingResult
        ``best(event, delta)``: epsilon under the accountants consulted, tightest named.
    n_samples : float
        The public number of rows, or the lower confidence bound :math:`n_{\rm lo}` of the
        paid-for noisy count (:func:`count_confidence_bounds`).
    results : list of FitResult
    info : dict
        Public facts of the fit only (method, relation, source of ``n``, each run's plan).
    release : Release or None
        The ledger's record of this fit (``ledger=`` given), else None.
    """

    thetas: list[np.ndarray]
    event: DpEvent
    privacy: AccountingResult
    n_samples: float
    results: list[FitResult] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    release: Release | None = None


@dataclass(frozen=True)
class _Setup:
    """The checked request and its budget split (public; no data)."""

    solver: Solver
    epsilon: float
    delta: float
    relation: Neighbouring
    need_count: bool
    n_samples_public: int | None
    mu_total: float
    mu_count: float
    mu_k: float
    secure: bool = False
    #: Events already performed on the same rows (``prior_events``, then the pre-release
    #: stages' events; module doc, 7 and 8).
    prior: tuple[DpEvent, ...] = ()
    #: Their share of the budget in Gaussian-DP units, :math:`\mu_{\rm prior}` (secure mode:
    #: :math:`\sqrt{2\rho_{\rm prior}}`); 0 without prior events.
    mu_prior: float = 0.0

    @property
    def count_noise(self) -> float:
        r"""The count's noise multiplier: ``1/mu_count``; secure mode: the smallest (to
        :math:`10^{-12}` relative) ``z`` with :math:`\kappa(z)/z \le` ``mu_count``, so that
        the discrete count, :math:`\kappa^2/(2z^2)`-zCDP, spends at most its share
        :math:`\mu_c^2/2` (:func:`~noisygd.mechanisms.noise.sensitivity_inflation`)."""
        z = 1.0 / self.mu_count
        if not self.secure:
            return z
        return secure_noise_scale(SecureRandom(), z, 1, 1.0, self.mu_count)[0]

    @property
    def count_event(self) -> DpEvent:
        """The noisy row count: Gaussian mechanism of sensitivity 1 at ``mu_count`` (secure
        mode: its discrete form, :class:`DiscreteGaussianNoise`)."""
        z = self.count_noise
        event = Gaussian(noise_multiplier=z, sensitivity=1.0)
        if not self.secure:
            return event
        return DiscreteGaussianNoise(event, sensitivity_inflation(SecureRandom(), z, 1, 1.0))

    def first_record(self) -> DpEvent | None:
        """The first event the fit's own release records, known before any data is read:
        the reservation when ``n`` is private, the covering event of a Gaussian solver,
        else None (it needs the plan)."""
        if self.need_count:
            return self.reservation()
        return self.covering_event() if self.solver.gaussian else None

    def reservation(self) -> DpEvent:
        """What is recorded before any data is read when ``n`` is private (module doc, 5)."""
        if self.solver.gaussian:
            return self.covering_event()
        return self.count_event

    def covering_event(self) -> DpEvent:
        r"""``Gaussian(1/mu_total)``: exactly the whole fit's Gaussian-DP budget; secure mode:
        ``DiscreteGaussianNoise(Gaussian(1/mu_total), 1)``, exactly its zCDP budget
        :math:`\mu^2/2` (module doc, 6). With prior events (module doc, 7) ``mu_total`` is
        replaced by :math:`\sqrt{\mu_{\rm total}^2 - \mu_{\rm prior}^2}`: the count and the
        runs, which is what this fit records (the prior events are their performer's)."""
        mu_own = float(np.sqrt(self.mu_total**2 - self.mu_prior**2))
        if not mu_own > 0.0:  # the budget's mu underflows (e.g. epsilon = delta = 1e-300)
            what = "the prior releases (paid preprocessing) and the fit" if self.prior \
                else "the fit"
            raise ValueError(f"epsilon={self.epsilon!r} at delta={self.delta!r} is too small "
                             f"to pay for {what}: its Gaussian-DP mu rounds to 0; raise "
                             "epsilon or delta")
        event = Gaussian(noise_multiplier=1.0 / mu_own, sensitivity=1.0,
                         relation=self.relation)
        return DiscreteGaussianNoise(event, 1.0) if self.secure else event

    def epsilon_k(self) -> float:
        """A Gaussian solver's per-problem epsilon: of ``mu_k``-GDP (secure mode: of
        ``mu_k^2/2``-zCDP) at ``delta``.

        Raises
        ------
        ValueError
            If it rounds to 0 (an epsilon too small for its shares), naming the epsilon the
            user gave, never the per-problem share.
        """
        if self.secure:
            from noisygd.accounting.zcdp import zcdp_epsilon

            epsilon = zcdp_epsilon(0.5 * self.mu_k * self.mu_k, self.delta)
        else:
            from noisygd.accounting.gdp import gdp_epsilon

            epsilon = gdp_epsilon(self.mu_k, self.delta)
        if not epsilon > 0.0:
            what = ("the noisy row count and the fit: raise epsilon, or declare "
                    "n_samples_public") if self.need_count else "the fit: raise epsilon"
            if self.prior:
                what = "the prior releases (paid preprocessing), " + what
            raise ValueError(f"epsilon={self.epsilon!r} is too small to pay for {what}")
        return epsilon

    def budget(self, prior: DpEvent | None) -> Budget:
        """The solver's per-problem budget (``prior``: the count, for solvers that take it;
        the prior events, module doc 7, come first in the solver's ``prior_event``)."""
        if self.solver.gaussian:
            return Budget(self.epsilon_k(), self.delta, mu=self.mu_k, secure=self.secure)
        before = [*self.prior, *([prior] if prior is not None else [])]
        return Budget(self.epsilon, self.delta,
                      prior_event=(_compose(before) if before and
                                   self.solver.accepts_prior_event else None),
                      secure=self.secure)


def _composing_methods() -> list[str]:
    """The built-in methods that calibrate their noise jointly with prior releases (Gaussian
    compositions, and those that accept a prior event), sorted."""
    return sorted(name for name, cls in SOLVERS.items()
                  if cls.gaussian or cls.accepts_prior_event)


def check_secure_method(method: str | Solver, secure: bool) -> Solver:
    """The solver for ``method``; with ``secure=True`` refuse one without a secure mode.

    Raises
    ------
    ValueError
        ``secure=True`` and ``Solver.secure_mode`` is false (a user-defined solver that does
        not plan for the discrete Gaussian's event). Nothing is read.
    """
    solver = get_solver(method)
    if check_bool("secure", secure) and not solver.secure_mode:
        raise ValueError(
            f"method={solver.name!r} has no secure mode (secure=True): its accounting assumes "
            "continuous Gaussian noise; use one with a secure mode ("
            f"{', '.join(sorted(n for n, c in SOLVERS.items() if c.secure_mode))}), or "
            "secure=False")
    return solver


def _prior_mu(prior: Sequence[DpEvent], secure: bool) -> float:
    r"""The prior events' Gaussian-DP :math:`\mu` (secure mode: :math:`\sqrt{2\rho}` of
    their zCDP :math:`\rho`; a Gaussian event has :math:`\rho = \mu^2/2`, Bun and Steinke
    2016). Raises :class:`~noisygd.exceptions.UnsupportedEventError` for an event that is
    not a composition of Gaussian mechanisms (non-secure) or has no zCDP bound (secure)."""
    if not prior:
        return 0.0
    if secure:
        from noisygd.accounting.zcdp import zcdp_rho

        return float(np.sqrt(2.0 * zcdp_rho(_compose(prior))))
    from noisygd.accounting.gdp import gaussian_mu

    return float(gaussian_mu(_compose(prior)))


def _check_prior_events(prior_events: Sequence[DpEvent] | None) -> tuple[DpEvent, ...]:
    if prior_events is None:
        return ()
    if isinstance(prior_events, DpEvent):
        raise TypeError("prior_events must be a sequence of DpEvent (wrap one event in a "
                        "list)")
    out = tuple(prior_events)
    if not all(isinstance(e, DpEvent) for e in out):
        raise TypeError("prior_events must be a sequence of DpEvent")
    return out


def _relation_refusal(solver: Solver, relation: Neighbouring) -> str:
    """The refusal of a method accounted under another relation, naming the argument to pass
    (an estimator's ``neighbouring=``, :func:`fit_private`'s ``relation=``) and what it means."""
    allowed = solver.relations
    names = " or ".join(repr(r.value) for r in allowed)
    message = (f"method {solver.name!r} is accounted under {names} neighbours only, not "
               f"{relation.value}: pass neighbouring={allowed[0].value!r} (fit_private: "
               f"relation={allowed[0].value!r})")
    if allowed == (Neighbouring.REPLACE_ONE,):
        message += (", which makes the number of rows public (the neighbouring data sets have "
                    "the same size); its theorem bounds the change of one row, not the "
                    "addition or removal of one")
    elif allowed == (Neighbouring.ADD_REMOVE,):
        message += " (its Poisson subsampling is accounted for an added or removed row)"
    return message


def _setup(method: str | Solver, epsilon: float, delta: float, relation: Neighbouring | str,
           n_samples_public: int | None, count_budget_fraction: float,
           n_problems: int, secure: bool = False,
           prior_events: Sequence[DpEvent] | None = None) -> _Setup:
    from noisygd.accounting.gdp import split_gaussian_budget

    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    relation = Neighbouring(relation)
    solver = check_secure_method(method, secure)
    if relation not in solver.relations:
        raise ValueError(_relation_refusal(solver, relation))
    count_budget_fraction = check_fraction("count_budget_fraction", count_budget_fraction,
                                           closed_right=False)
    if n_samples_public is not None:
        n_samples_public = check_positive_int("n_samples_public", n_samples_public)
    need_count = relation is Neighbouring.ADD_REMOVE and n_samples_public is None
    prior = _check_prior_events(prior_events)
    if any(e.neighbouring is not relation for e in prior):
        raise ValueError(f"every prior event must hold under {relation.value} neighbours, the "
                         "fit's relation")
    if not solver.gaussian and (n_problems > 1
                                or (need_count and not solver.accepts_prior_event)):
        raise ValueError(
            f"method {solver.name!r} is not a Gaussian composition: it needs a public number "
            "of rows (pass n_samples_public, or use relation='replace_one') and a single "
            "binary or regression problem")
    if prior and not solver.gaussian and not solver.accepts_prior_event:
        raise ValueError(
            f"method {solver.name!r} cannot calibrate its noise jointly with prior releases "
            f"(prior_events): use one that can ({', '.join(_composing_methods())})")
    k = n_problems if solver.gaussian else 1
    f = count_budget_fraction if need_count else 0.0
    if secure:
        # One zCDP budget rho = mu^2/2, split once: rho = rho_count + sum_k rho_k.
        import math

        from noisygd.mechanisms.noise import zcdp_rho_for

        mu = math.sqrt(2.0 * zcdp_rho_for(epsilon, delta))
        mu_count, mu_k = math.sqrt(f) * mu, mu * math.sqrt((1.0 - f) / k)
    else:
        # One Gaussian-DP budget, split once: mu^2 = mu_count^2 + sum_k mu_k^2.
        mu, mu_count, mu_k = split_gaussian_budget(epsilon, delta, k, f)
    mu_prior = 0.0
    if prior and solver.gaussian:
        # mu^2 = mu_prior^2 + mu_count^2 + sum_k mu_k^2: the runs get what remains
        mu_prior = _prior_mu(prior, bool(secure))
        rest = mu * mu * (1.0 - f) - mu_prior * mu_prior
        if not rest > 0.0:
            raise ValueError(f"epsilon={epsilon!r} is too small to pay for the prior releases "
                             "(paid preprocessing) and the fit: raise epsilon, or lower the "
                             "prior releases' share")
        mu_k = float(np.sqrt(rest / k))
    setup = _Setup(solver, epsilon, delta, relation, need_count, n_samples_public, mu,
                   mu_count, mu_k, bool(secure), prior, mu_prior)
    if solver.gaussian:
        setup.epsilon_k()  # refuses an epsilon too small for its shares, before any read
    return setup


def _compose(events: Sequence[DpEvent]) -> DpEvent:
    return events[0] if len(events) == 1 else Composed(tuple(events))


@contextlib.contextmanager
def _open_ledger(ledger: LedgerLike | None, dataset: str | None) -> Iterator[Ledger | None]:
    """The ledger as an open :class:`~noisygd.ledger.Ledger` (closed on exit if opened here)."""
    if ledger is None and dataset is None:
        yield None
        return
    from noisygd.ledger import check_ledger_arguments, opened_ledger

    check_ledger_arguments(ledger, dataset)
    with opened_ledger(ledger) as opened:  # type: ignore[arg-type]
        yield opened


@dataclass(frozen=True)
class PreviewedFit:
    """What :func:`preview_private_fit` checked, for :func:`fit_private` (``preplanned=``).

    Attributes
    ----------
    event : DpEvent or None
        The event previewed against the ledger (None: none could be formed before the data).
    facts, budget, plan
        The plan made from public facts (a solver that is not a Gaussian composition with a
        public ``n``), reused by :func:`fit_private` when its facts and budget are equal;
        else None.
    """

    event: DpEvent | None
    facts: PublicFacts | None = None
    budget: Budget | None = None
    plan: Any = None


def preview_private_fit(
    ledger: LedgerLike | None,
    dataset: str | None,
    *,
    method: str | Solver,
    epsilon: float,
    delta: float,
    relation: Neighbouring | str = Neighbouring.ADD_REMOVE,
    n_samples_public: int | None = None,
    count_budget_fraction: float = 0.01,
    n_problems: int = 1,
    facts: PublicFacts | None = None,
    secure: bool = False,
    prior_events: Sequence[DpEvent] | None = None,
    pre_releases: Sequence[DpEvent] = (),
) -> PreviewedFit:
    """Check, before any data is read, that the ledger's budget admits the fit.

    The event checked (:meth:`noisygd.ledger.Ledger.preview` with ``check=True``; nothing
    is recorded) is the one :func:`fit_private` would record first: the covering
    ``Gaussian(1/mu_total)`` for a Gaussian solver (exactly the whole fit's Gaussian-DP
    cost, whatever the number of problems), the count's event for a solver calibrated with
    the count, and otherwise the planned event from ``facts`` (the public facts of the
    problem, e.g. :meth:`PublicFacts.from_objective`; without them nothing is checked and
    :func:`fit_private` checks when it records). ``n_problems`` is the number of problems
    if known (one-vs-rest classes), else 1. ``secure=True`` prices the secure-mode events
    (module doc, 6). ``prior_events`` (module doc, 7) enter the budget split; the event
    checked is this fit's own part (the caller previews and records the prior events).
    ``pre_releases``: the events of the fit's :class:`PreRelease` (module doc, 8), composed
    before its own part in the event checked. Advisory: :func:`fit_private` re-checks under
    the ledger's lock.

    Returns
    -------
    PreviewedFit
        Pass it to :func:`fit_private` as ``preplanned=`` to reuse the plan made here.

    Raises
    ------
    BudgetExceededError
        If the ledger would refuse the fit now.
    ValueError, TypeError
        On a bad argument (as :func:`fit_private`).
    """
    pre = tuple(pre_releases)
    setup = _setup(method, epsilon, delta, relation, n_samples_public, count_budget_fraction,
                   check_positive_int("n_problems", n_problems), secure,
                   (*_check_prior_events(prior_events), *pre))
    if facts is not None:
        setup.solver.check_options(facts.options)
    previewed = PreviewedFit(setup.first_record())
    if previewed.event is None and facts is not None:
        budget = setup.budget(None)
        plan = setup.solver.plan(facts, budget)
        previewed = PreviewedFit(setup.solver.planned_event(plan), facts, budget, plan)
    checked = [*pre, *([previewed.event] if previewed.event is not None else [])]
    with _open_ledger(ledger, dataset) as opened:
        if opened is not None and checked:
            opened.preview(dataset, _compose(checked), check=True)  # type: ignore[arg-type]
    return previewed


@dataclass(frozen=True)
class PreparedFit:
    """What a :class:`PreRelease`'s post-processing gives the rest of the fit.

    Attributes
    ----------
    oracles : sequence of GradientOracle
        The problems the count and the runs read (e.g. the pre-release's oracle with shifted
        targets, or one built in coordinates the release chose).
    clip : float or None
        The runs' clipping norm (a function of the release and public facts).
    released : ReleasedFacts or None
        Facts of the rows the release gives the planner (a smoothness, a comparator radius:
        :class:`~noisygd.solvers.base.ReleasedFacts`), or None. A later stage's replace an
        earlier one's.
    start : ndarray or None
        Where the runs start, in the oracles' coordinates (e.g. the classifier's intercept
        at the released base rate), or None (the method's own start). Passed to the method
        as its ``theta0`` option where it takes one and ``options`` holds none; a later
        stage's replaces an earlier one's.
    """

    oracles: Sequence[GradientOracle]
    clip: float | None
    released: ReleasedFacts | None = None
    start: np.ndarray | None = None


@dataclass(frozen=True)
class PreRelease:
    r"""A release of noisy bounded row sums made on the oracle before the count and the run
    (module doc, 8).

    Attributes
    ----------
    name : str
        The release's name (recorded as ``"<estimator>/<name>"``; ``info["<name>_release"]``
        holds its ledger id).
    event : DpEvent
        Its event, from public facts only: the Gaussian mechanism on the stacked sums,
        sensitivity :math:`\sqrt k\,\Delta` for ``k`` sums (:class:`~noisygd.oracles.base.
        RowSums`).
    sums : tuple of str
        The :class:`~noisygd.oracles.base.RowSums` released, in order.
    noise_std : float
        :math:`\sigma` of the Gaussian noise added to every released sum.
    rng : numpy.random.Generator or SecureRandom
        The generator of that noise (the release's own stream).
    then : callable
        ``then(noisy_sums) -> PreparedFit``: post-processing of the release (public); with
        ``reduce``, ``then(reduce(noisy_sums))``.
    target_half_range : float or callable, optional
        :math:`h` of the target sums (``RowSums.targets``); a callable is asked when the
        stage runs (a half-range an earlier stage released: the private target range).
    description : str
        What is summed, recorded with the release.
    statistic : callable, optional
        ``statistic() -> ndarray``: a statistic of the rows released instead of row sums
        (``sums`` is then empty), each row moving it by a vector of at most
        ``statistic_terms`` entries of at most :math:`\Delta` each (a histogram in which
        a row adds at most one count per group: L2 sensitivity
        :math:`\sqrt{k}\,\Delta`, ``k = statistic_terms``). Called once, after the stage
        is recorded. **Not private** (the noise is added here, in place when the answer is a
        float64 array that owns its data: the stage hands it over).
    statistic_terms : int
        ``k`` above (ignored without ``statistic``).
    statistic_sensitivity : float, optional
        The statistic's exact L2 sensitivity under the fit's relation, where the stage knows
        one tighter than :math:`\sqrt{k}\,\Delta` (the feature range's histogram under
        replace-one: :func:`~noisygd.mechanisms.feature_range.range_sensitivity`); at most
        that bound (checked). None: :math:`\sqrt{k}\,\Delta`.
    reduce : callable, optional
        ``reduce(noisy_sums) -> object``: post-processing that condenses a large release
        (public); ``then`` then receives ``reduce(noisy_sums)``, and the noisy vector is
        freed before ``then`` builds the next stage (the feature range's histogram: a
        vector of :math:`2 p K + 1` counts condensed to :math:`2p` values). None: ``then``
        receives the noisy sums.
    """

    name: str
    event: DpEvent
    sums: tuple[str, ...]
    noise_std: float
    rng: Any
    then: Callable[[np.ndarray], PreparedFit]
    target_half_range: float | Callable[[], float] | None = None
    description: str = ""
    statistic: Callable[[], np.ndarray] | None = None
    statistic_terms: int = 0
    statistic_sensitivity: float | None = None
    reduce: Callable[[np.ndarray], Any] | None = None


#: The observer :func:`observe_pre_releases` installs (None: none, the default).
_PRE_RELEASE_OBSERVER: contextvars.ContextVar[
    Callable[[PreRelease, np.ndarray], None] | None] = contextvars.ContextVar(
        "noisygd_pre_release_observer", default=None)


@contextlib.contextmanager
def observe_pre_releases(observer: Callable[[PreRelease, np.ndarray], None]
                         ) -> Iterator[None]:
    """Within the block, call ``observer(stage, noisy)`` after each :class:`PreRelease`'s
    noise is drawn and before its post-processing (module doc, 8): ``stage`` the stage
    (its ``name``, ``event`` and ``noise_std``), ``noisy`` a copy of its noisy vector.

    The white-box view of a pre-release for the empirical audit
    (:mod:`noisygd.audit.prerelease_problems`; its only use): the fit draws the same noise,
    post-processes the same vector and releases the same outputs with or without an
    observer (the copy is never read back; the observer is not asked anything), so an
    audited fit is the fit. Set per context (:mod:`contextvars`), so it observes the fits
    made in the block by this thread only."""
    if not callable(observer):
        raise TypeError("observer must be callable")
    token = _PRE_RELEASE_OBSERVER.set(observer)
    try:
        yield
    finally:
        _PRE_RELEASE_OBSERVER.reset(token)


class _LedgerRecords:
    """This fit's records in the ledger, as a context manager (module doc, 5 and 9).

    Each record is spent before the data it pays for is read. On an exception, the records
    are withdrawn only if no noisy value of the data was computed yet (:meth:`draw` never
    called): the fit failed before its first noise draw, so no output of any recorded
    mechanism exists. Otherwise, whatever the exception, they stay: the fit's own release,
    if still the reservation, is settled to the events performed so far (the count); once
    committed (:meth:`commit`) it stays at the planned event, which dominates a run stopped
    part-way (module doc, 9).
    """

    def __init__(self, opened: Ledger | None, dataset: str | None, algorithm: str,
                 parameters: dict[str, Any]) -> None:
        self.ledger, self.dataset = opened, dataset
        self.algorithm, self.parameters = algorithm, parameters
        self.made: list[Release] = []  # this fit's records, in order
        self.main: Release | None = None  # the fit's own release (reserved, then settled)
        self.performed: list[DpEvent] = []  # parts of the own release performed so far
        self.settled = False
        self.noisy = False  # a noise draw on the data has begun in this process

    def __enter__(self) -> _LedgerRecords:
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is None or self.ledger is None or not self.made:
            return
        if not self.noisy:  # failed before the first noise draw: no release exists
            for release in reversed(self.made):
                with contextlib.suppress(Exception):
                    self.ledger.withdraw(release)
        elif self.main is not None and not self.settled and self.performed:
            performed = _compose(self.performed)  # only the count touched the data
            if self.main.event != performed:
                with contextlib.suppress(Exception):
                    self.ledger.settle(self.main, performed)

    def check(self, events: Sequence[DpEvent]) -> None:
        """Refuse now if the ledger cannot admit ``events`` composed (nothing recorded)."""
        if self.ledger is not None and events:
            self.ledger.preview(self.dataset, _compose(events), check=True)  # type: ignore

    def spend(self, event: DpEvent, *, name: str | None = None,
              extra: Mapping[str, Any] | None = None) -> Release | None:
        """Record ``event`` (a pre-release named ``name``, else the fit's own release)."""
        if self.ledger is None:
            return None
        algorithm = (self.algorithm if name is None
                     else f"{self.algorithm.split('/')[0]}/{name}")
        release = self.ledger.spend(self.dataset, event,  # type: ignore[arg-type]
                                    algorithm=algorithm,
                                    parameters={**self.parameters, **dict(extra or {})})
        self.made.append(release)
        if name is None:
            self.main = release
        return release

    def draw(self, part: DpEvent | None = None) -> None:
        """A noise draw on the data begins now (``part``: the event of the fit's own release
        it performs, e.g. the count's): from here on a failure keeps the records."""
        self.noisy = True
        if part is not None:
            self.performed.append(part)

    def commit(self, own: DpEvent) -> None:
        """The fit's own planned event, recorded before the runs read the data (spent, or the
        reservation settled to it); the runs start next, so the fit is noisy from here on
        (module doc, 9), whether ``n`` is public or not."""
        if self.ledger is not None:
            if self.main is None:
                self.spend(own)
            else:
                settled = self.ledger.settle(self.main, own, algorithm=self.algorithm)
                self.made = [settled if r.id == settled.id else r for r in self.made]
                self.main = settled
            self.settled = True
        self.draw()


@dataclass
class _Count:
    """The public size of the data: ``n_samples`` (lower) and ``n_high`` (upper), the
    count's events (none when ``n`` is public) and where ``n`` came from."""

    n_samples: float
    n_high: float
    events: list[DpEvent]
    source: str


def _release_count(setup: _Setup, oracle: GradientOracle, rng: Any,
                   records: _LedgerRecords) -> _Count:
    """The noisy row count (module doc, 1), after its reservation; or the public ``n``."""
    if not setup.need_count:
        if setup.n_samples_public is None:  # replace-one: n is public by definition
            n = float(oracle.n_rows)
            return _Count(n, n, [], "replace-one: public by definition")
        _check_declared_count(setup.n_samples_public, oracle.n_rows)
        n = float(setup.n_samples_public)
        return _Count(n, n, [], "declared public by the user")
    records.spend(setup.reservation())  # before the first read of the data (the count)
    z_count = setup.count_noise
    event = secure_event(Gaussian(noise_multiplier=z_count, sensitivity=1.0), rng,
                         sensitivity_inflation(rng, z_count, 1, 1.0))
    n_rows = oracle.n_rows  # private: read only by the noisy count
    records.draw(event)  # a failure from here on keeps the count's record
    noisy = float(add_gaussian_noise(float(n_rows), z_count, rng))
    # secure: the count is rounded to this rng's grid gamma and its noise is a discrete
    # Gaussian; the bounds widen by 3 gamma / 2 (count_confidence_bounds)
    grid = rng.grid(z_count, 1) if isinstance(rng, SecureRandom) else 0.0
    n_lo, n_hi = count_confidence_bounds(noisy, z_count, grid=grid)
    return _Count(n_lo, n_hi, [event], (
        f"Gaussian count (paid for); lower/upper {1 - COUNT_CONFIDENCE_BETA:g} "
        "confidence bounds"))


def _check_stages(pre_release: PreRelease | Sequence[PreRelease] | None
                  ) -> tuple[PreRelease, ...]:
    """``pre_release`` as a tuple of stages, in order (checked before anything is read)."""
    if pre_release is None:
        return ()
    stages = (pre_release,) if isinstance(pre_release, PreRelease) else tuple(pre_release)
    if not all(isinstance(stage, PreRelease) for stage in stages):
        raise TypeError("pre_release must be a PreRelease or a sequence of PreRelease")
    names = [stage.name for stage in stages]
    if len(set(names)) != len(names):
        raise ValueError(f"pre-release stages need distinct names, got {names}")
    return stages


def _check_stage_event(stage: PreRelease, relation: Neighbouring, secure: bool) -> None:
    r"""Refuse a stage whose declared event does not cover the mechanism run for it (before
    anything is recorded or read; review C4): the Gaussian noise of standard deviation
    :math:`\sigma` (``noise_std``) on :math:`k` stacked :class:`~noisygd.oracles.base.
    RowSums` (``sums``), each moved by at most :math:`\Delta` (``relation``'s
    ``clipped_sum_sensitivity``) by one row, is :math:`\sqrt k\,\Delta/\sigma`-GDP
    (Dong, Roth and Su 2022, Thm 2.7); secure mode: the discrete Gaussian on the grid,
    :math:`(\kappa\sqrt k\,\Delta/\sigma)^2/2`-zCDP with :math:`\kappa` =
    :func:`~noisygd.mechanisms.noise.sensitivity_inflation` ``(rng, sigma, k, sqrt(k)
    Delta)``. The event must be ``Gaussian`` under ``relation`` (secure:
    ``DiscreteGaussianNoise`` of one, drawn by a ``SecureRandom``) with
    :math:`\kappa_{\rm declared}\,\Delta_{\rm declared}/z_{\rm declared}` at least that
    (to :math:`10^{-12}` relative, the rounding of :math:`\sqrt k`)."""
    sums = tuple(stage.sums)
    unknown = sorted(set(sums) - set(ROW_SUMS))
    if stage.statistic is not None:
        terms = int(stage.statistic_terms)
        if sums or terms < 1 or not callable(stage.statistic):
            raise ValueError(f"pre-release {stage.name!r}: a statistic needs no sums and "
                             f"statistic_terms >= 1, got {list(sums)}, {terms}")
    elif not sums or unknown:
        raise ValueError(f"pre-release {stage.name!r}: sums must be a non-empty tuple of "
                         f"{list(ROW_SUMS)}, got {list(sums)}")
    else:
        terms = len(sums)
    sigma = check_positive("noise_std", stage.noise_std)
    if is_secure(stage.rng) != secure:
        raise TypeError(f"pre-release {stage.name!r}: a secure fit's stages draw their noise "
                        "with a SecureRandom, and only a secure fit's")
    if secure and stage.rng.grid_bits != DEFAULT_GRID_BITS:
        raise ValueError(f"pre-release {stage.name!r}: secure stages are planned for "
                         f"SecureRandom(grid_bits={DEFAULT_GRID_BITS})")
    if not secure:
        check_generator("rng", stage.rng)
    sensitivity = float(np.sqrt(terms)) * relation.clipped_sum_sensitivity
    if stage.statistic is not None and stage.statistic_sensitivity is not None:
        exact = check_positive("statistic_sensitivity", stage.statistic_sensitivity)
        if exact > sensitivity * (1.0 + 1e-12):
            raise ValueError(f"pre-release {stage.name!r}: statistic_sensitivity {exact:.6g} "
                             f"exceeds sqrt(k) Delta = {sensitivity:.6g}: a row moves at most "
                             f"{terms} terms by at most Delta each")
        sensitivity = exact
    performed = sensitivity_inflation(stage.rng, sigma, terms, sensitivity) \
        * sensitivity / sigma
    event, declared_inflation = stage.event, 1.0
    if secure and isinstance(event, DiscreteGaussianNoise):
        event, declared_inflation = event.event, float(event.sensitivity_inflation)
    if not isinstance(event, Gaussian) or event.relation is not relation:
        raise ValueError(f"pre-release {stage.name!r}: its event must be the Gaussian "
                         f"mechanism under {relation.value} neighbours"
                         f"{' (DiscreteGaussianNoise in secure mode)' if secure else ''}, "
                         f"got {stage.event.describe()}")
    declared = declared_inflation * event.sensitivity / event.noise_multiplier
    if not declared >= performed * (1.0 - 1e-12):
        raise ValueError(
            f"pre-release {stage.name!r}: its event ({stage.event.describe()}) is "
            f"{declared:.6g}-GDP but the noise it draws ({terms} sums, noise_std "
            f"{sigma:.6g}) is {performed:.6g}-GDP: the event must cover the mechanism")


def _run_pre_release(stage: PreRelease, oracle: GradientOracle, setup: _Setup,
                     records: _LedgerRecords, info: dict[str, Any],
                     later: Sequence[DpEvent] = ()) -> PreparedFit:
    """Record ``stage`` (once the ledger admits it with the ``later`` stages' events and the
    rest of the fit), then release its noisy sums from ``oracle`` and post-process them
    (module doc, 8)."""
    if not isinstance(stage, PreRelease):
        raise TypeError("pre_release must be a PreRelease")
    rest = setup.first_record()
    records.check([stage.event, *later, *([rest] if rest is not None else [])])
    release = records.spend(stage.event, name=stage.name,
                            extra={"release": stage.name, "sums": stage.description})
    if release is not None:
        info[f"{stage.name}_release"] = release.id
    if stage.statistic is not None:
        sums = np.asarray(stage.statistic(), dtype=np.float64)
        if not (sums.flags.owndata and sums.flags.writeable and sums.flags.c_contiguous):
            sums = sums.copy()  # a view or a read-only answer is not the stage's to overwrite
        records.draw()  # a failure from here on keeps the stage's record
        # noised in place: one vector of the statistic's size in memory, not three
        noisy = add_gaussian_noise_in_place(sums, stage.noise_std, stage.rng).reshape(-1)
    else:
        half = stage.target_half_range
        sums = oracle.bounded_row_sums(half() if callable(half) else half,
                                       absolute="absolute_rows" in stage.sums
                                       ).vector(stage.sums)
        records.draw()  # a failure from here on keeps the stage's record
        noisy = np.asarray(add_gaussian_noise(sums, stage.noise_std, stage.rng),
                           dtype=np.float64)
    del sums
    observer = _PRE_RELEASE_OBSERVER.get()
    if observer is not None:  # the audit's white-box view (observe_pre_releases): a copy
        observer(stage, noisy.copy())
    if stage.reduce is not None:  # condensed first: the noisy vector is freed here
        reduced = stage.reduce(noisy)
        del noisy
        prepared = stage.then(reduced)
    else:
        prepared = stage.then(noisy)
    if not isinstance(prepared, PreparedFit):
        raise TypeError("PreRelease.then must return a PreparedFit")
    return prepared


def _check_fit_inputs(oracles: Sequence[GradientOracle], rng: Any, secure: bool
                      ) -> tuple[list[GradientOracle], Any]:
    """The oracles (same rows) and the generator, checked before anything is read."""
    rng = check_generator("rng", rng)
    if check_bool("secure", secure) != is_secure(rng):
        raise TypeError("secure=True needs rng=SecureRandom() and a SecureRandom needs "
                        "secure=True (the plan must be made for the noise drawn)")
    if secure and rng.grid_bits != DEFAULT_GRID_BITS:
        # the secure plans (count, solvers) are priced on the default grid: refuse before
        # any row is read rather than run noise the plan did not price
        raise ValueError(f"secure fits are planned for SecureRandom(grid_bits="
                         f"{DEFAULT_GRID_BITS}) (the default); got grid_bits={rng.grid_bits}")
    return _check_oracles(oracles), rng


def _check_oracles(oracles: Sequence[GradientOracle], n_problems: int | None = None
                   ) -> list[GradientOracle]:
    oracles = list(oracles)
    if not oracles or not all(isinstance(o, GradientOracle) for o in oracles):
        raise TypeError("oracles must be a non-empty sequence of GradientOracle")
    if n_problems is not None and len(oracles) != n_problems:
        raise ValueError(f"the pre-release gave {len(oracles)} problems, not {n_problems}")
    if any(o.n_rows != oracles[0].n_rows for o in oracles):
        raise ValueError("every problem's oracle must hold the same rows")
    return oracles


def _plan(setup: _Setup, oracle: GradientOracle, count: _Count, run: dict[str, Any],
          preplanned: PreviewedFit | None, n_problems: int) -> tuple[Any, list[DpEvent]]:
    """The solver's plan from public facts and the fit's own events (count, then runs)."""
    budget = setup.budget(count.events[0] if count.events else None)
    facts = PublicFacts.from_oracle(oracle, n_samples=count.n_samples,
                                    relation=setup.relation, n_samples_high=count.n_high,
                                    **run)
    plan = _reuse(preplanned, facts, budget)
    if plan is None:
        try:
            plan = setup.solver.plan(facts, budget)
        except (OverflowError, ZeroDivisionError) as exc:  # public facts only: safe to say
            raise ValueError(
                f"the public constants are out of floating-point range for method "
                f"{setup.solver.name!r}'s planner ({type(exc).__name__} with "
                f"{_public_constants(facts)}); choose a smaller row_norm_bound or clip "
                "(rescale the features), or another method") from exc
    return plan, [*count.events, *[setup.solver.planned_event(plan)] * n_problems]


def _public_constants(facts: PublicFacts) -> str:
    """The public constants a planner computes with, for an error message."""
    c = facts.constants
    clip = facts.clip if facts.clip is not None else c.lipschitz
    return (f"clip or Lipschitz constant {clip!r}, smoothness {c.smoothness!r}, "
            f"l2 {c.strong_convexity!r}")


def _fit_record(setup: _Setup, count_budget_fraction: float, run: dict[str, Any],
                n_problems: int, parameters: Mapping[str, Any] | None) -> dict[str, Any]:
    """The public parameters recorded with the fit's releases."""
    return {
        "method": setup.solver.name, "epsilon": setup.epsilon, "delta": setup.delta,
        "relation": setup.relation.value, "n_samples_public": setup.n_samples_public,
        "count_budget_fraction": count_budget_fraction if setup.need_count else None,
        **run, "n_problems": n_problems,
        **({"secure": True} if setup.secure else {}),
        **({"prior_events": [e.describe() for e in setup.prior]} if setup.prior else {}),
        **dict(parameters or {}),
    }


def _released(setup: _Setup, planned: DpEvent, events: list[DpEvent]) -> tuple[DpEvent,
                                                                               AccountingResult]:
    """The fit's event, checked against the planned (and recorded) one and the budget."""
    from noisygd.accounting.base import within_budget
    from noisygd.accounting.registry import best

    event = _compose([*setup.prior, *events])
    if event != planned:
        raise RuntimeError(
            f"internal error: method {setup.solver.name!r} performed {event.describe()}, not "
            f"the planned (and recorded) {planned.describe()}; the model is withheld")
    privacy = best(event, setup.delta)
    if not within_budget(privacy.epsilon, setup.epsilon):
        raise ValueError(
            f"internal error: the fitted event spends epsilon = {privacy.epsilon:.6g} "
            f"> budget {setup.epsilon:.6g} ({privacy.accountant}); the model is withheld")
    return event, privacy


def fit_private(
    oracles: Sequence[GradientOracle],
    *,
    method: str | Solver,
    epsilon: float,
    delta: float,
    relation: Neighbouring | str = Neighbouring.ADD_REMOVE,
    n_samples_public: int | None = None,
    count_budget_fraction: float = 0.01,
    clip: float | None = None,
    max_iter: int | None = None,
    rng: Any,
    options: dict[str, Any] | None = None,
    ledger: LedgerLike | None = None,
    dataset: str | None = None,
    algorithm: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    preplanned: PreviewedFit | None = None,
    secure: bool = False,
    prior_events: Sequence[DpEvent] | None = None,
    pre_release: PreRelease | Sequence[PreRelease] | None = None,
) -> PrivateFit:
    """Fit one model per oracle under a total (epsilon, delta) budget.

    Parameters
    ----------
    oracles : sequence of GradientOracle
        One per problem (one-vs-rest passes one per class), all over the same rows. With
        ``pre_release``, the oracles the first release reads (its first); the count and the
        runs read those the last one's post-processing returns.
    method : str or Solver
        A name in :data:`noisygd.solvers.SOLVERS` (or ``"auto"``), or a solver instance.
    epsilon, delta : float
        The total budget.
    relation : {"add_remove", "replace_one"}
    n_samples_public : int, optional
        Declares the number of rows public. Under add/remove, without it, a noisy count is
        released and paid for.
    count_budget_fraction : float
        Fraction of the Gaussian-DP budget ``mu^2`` spent on the count, in (0, 1).
    clip, max_iter, options
        Passed to the solver through :class:`~noisygd.solvers.PublicFacts` (with
        ``pre_release``, the clip is the one its post-processing returns).
    rng : numpy.random.Generator or SecureRandom
        A :class:`~noisygd.mechanisms.secure.SecureRandom` exactly when ``secure=True``.
    ledger : str, path-like or Ledger, optional
        A privacy ledger (SQLite file path, SQLAlchemy URL or open
        :class:`~noisygd.ledger.Ledger`): the fit is recorded as one release of ``dataset``
        before any data is read (module doc, 5), and withdrawn only if the fit fails before
        its first noise draw (module doc, 9). Give both ``ledger`` and ``dataset`` or neither.
    dataset : str, optional
        The name the ledger's budget was set for.
    algorithm : str, optional
        Name recorded with the release (default ``"fit_private/<method>"``).
    parameters : mapping, optional
        Public parameters recorded with the release, added to the fit's own (method,
        budget, relation, clip, ...).
    preplanned : PreviewedFit, optional
        From :func:`preview_private_fit`: its plan is reused when made from equal facts and
        budget.
    secure : bool, default=False
        Secure mode (module doc, 6): ``rng`` must be a
        :class:`~noisygd.mechanisms.secure.SecureRandom`, every event is a
        :class:`~noisygd.accounting.events.DiscreteGaussianNoise` and the budget is split
        and met in zCDP. Refused (before any data is read) for a method without a secure
        mode.
    prior_events : sequence of DpEvent, optional
        Releases already made on the same rows (e.g. schema bounds and levels paid for
        privately, :mod:`noisygd.mechanisms.private_statistics`); module doc, 7. They are
        composed first into the budget split and into the returned event; the training
        noise is calibrated for what remains. With ``ledger=`` they are *not* recorded
        here: they were performed before this call, so their performer records them (before
        reading the data; :func:`noisygd.schema.paid.record_prior_events` does).
    pre_release : PreRelease or sequence of PreRelease, optional
        Releases of noisy row sums made before the count, in order (module doc, 8): the
        first on the first oracle, each later one on the first oracle of the previous one's
        post-processing (so it may be built in the coordinates an earlier release chose);
        composed after ``prior_events`` in that order, paid from the same budget and, with
        ``ledger=``, each recorded as its own release before its sums are read, once the
        ledger admits it with every later stage and the rest of the fit.

    Returns
    -------
    PrivateFit

    Raises
    ------
    BudgetExceededError
        If the ledger's budget for ``dataset`` cannot admit the fit (before any data is
        read; for a solver calibrated with the count, after the count, which stays
        recorded).
    ValueError
        If the method cannot honour the request, or the final event exceeds the budget
        (nothing is returned in that case).
    RuntimeError
        If a run performed another event than the one planned and recorded (an internal
        error; the model is withheld, the recorded spend stays).
    """
    oracles, rng = _check_fit_inputs(oracles, rng, secure)
    n_problems = len(oracles)
    stages = _check_stages(pre_release)
    pre_events = tuple(stage.event for stage in stages)
    setup = _setup(method, epsilon, delta, relation, n_samples_public, count_budget_fraction,
                   n_problems, secure, (*_check_prior_events(prior_events), *pre_events))
    for stage in stages:  # each event covers the noise it draws (before anything is read)
        _check_stage_event(stage, setup.relation, setup.secure)
    run = {"clip": None if clip is None else check_positive("clip", clip),
           "max_iter": None if max_iter is None else check_positive_int("max_iter", max_iter),
           "options": options}
    setup.solver.check_options(options)  # an unknown or plan-set key: before any record
    for oracle in oracles:  # a method that cannot run on it: refused before any record
        setup.solver.check_oracle(oracle)
    record = _fit_record(setup, count_budget_fraction, run, n_problems, parameters)
    algorithm = f"fit_private/{setup.solver.name}" if algorithm is None else algorithm
    info: dict[str, Any] = {"method": setup.solver.name, "relation": setup.relation.value}
    with _open_ledger(ledger, dataset) as opened, _LedgerRecords(
            opened, dataset, algorithm, record) as records:
        start = None  # where the runs start: the last stage's (PreparedFit.start)
        for k, stage in enumerate(stages):  # each reads the previous one's first oracle
            prepared = _run_pre_release(stage, oracles[0], setup, records, info,
                                        pre_events[k + 1:])
            oracles = _check_oracles(prepared.oracles, n_problems)
            run["clip"] = prepared.clip
            record["clip"] = prepared.clip
            run["released"] = prepared.released
            if prepared.released is not None:  # public: post-processing of the release
                info["released_facts"] = record["released_facts"] = asdict(prepared.released)
            start = prepared.start
        run["options"] = _with_start(setup.solver, options, start)
        count = _release_count(setup, oracles[0], rng, records)
        plan, own_parts = _plan(setup, oracles[0], count, run, preplanned, n_problems)
        # the method that runs ("auto" chose one): the ledger's label and parameters name it
        records.algorithm = setup.solver.release_label(plan, records.algorithm)
        record["method_run"] = setup.solver.method_name(plan)
        records.commit(_compose(own_parts))  # before the runs read any data (own part only)
        with compute_context():  # the fit's threads and BLAS limit, entered once
            results = [setup.solver.run(plan, oracle, rng) for oracle in oracles]
    event, privacy = _released(setup, _compose([*setup.prior, *own_parts]),
                               [*count.events, *[r.event for r in results]])
    info["n_samples_source"] = count.source
    if stages:
        info["pre_releases"] = [{"name": stage.name, "event": stage.event.describe(),
                                 "statistic": stage.description} for stage in stages]
    if setup.prior:
        info["prior_events"] = [e.describe() for e in setup.prior]
    info["plans"] = [r.info for r in results]
    if "method_choice" in results[0].info:  # method="auto": which method ran, and why
        info["method_choice"] = results[0].info["method_choice"]
        info["method"] = results[0].info["method_choice"]["method"]
    if records.main is not None:
        info["ledger_release"] = records.main.id
    return PrivateFit([r.theta for r in results], event, privacy, count.n_samples, results,
                      info, records.main)


def _with_start(solver: Any, options: dict[str, Any] | None, start: np.ndarray | None
                ) -> dict[str, Any] | None:
    """``options`` with ``theta0 = start`` (a pre-release's post-processing: public) where
    the method takes ``theta0`` and the caller gave none; else ``options`` as given."""
    names = solver.option_names
    if (start is None or (options is not None and "theta0" in options)
            or (names is not None and "theta0" not in names)):
        return options
    return {**(options or {}), "theta0": np.asarray(start, dtype=np.float64).copy()}


def _check_declared_count(n_samples_public: int, n_rows: int) -> None:
    """Refuse a declared public count that is not the number of rows held.

    Declaring ``n_samples_public`` makes the count public, so comparing it with the rows
    reveals nothing more; a wrong one would scale every gradient by the wrong ``1/n`` (a
    zero model for ``n`` far too large) with no sign of it. The message names no count.
    """
    if n_samples_public != n_rows:
        raise ValueError(
            f"n_samples_public={n_samples_public} is not the number of rows of the data: "
            "declare the true (public) number of rows, or leave n_samples_public=None to "
            "pay for a noisy count")


def _reuse(preplanned: PreviewedFit | None, facts: PublicFacts, budget: Budget) -> Any:
    """The preview's plan if it was made from equal facts and budget, else None."""
    if preplanned is None or preplanned.plan is None:
        return None
    try:
        same = bool(preplanned.facts == facts and preplanned.budget == budget)
    except (ValueError, TypeError):  # options holding arrays do not compare
        same = False
    return preplanned.plan if same else None
