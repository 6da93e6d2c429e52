r"""Run an audit: many runs on ``D`` and ``D'``, two lower bounds, the accountant's epsilon.

:func:`run_audit` runs :attr:`AuditProblem.run <noisygd.audit.problems.AuditProblem>`
``runs`` times on each dataset, each run with its own generator spawned from
``numpy.random.SeedSequence(seed)`` (run ``i`` on ``D`` gets child ``2i``, on ``D'`` child
``2i + 1``), so an audit is reproducible from its seed and independent of the order the
runs are made in. It then computes, from the two samples of the statistic
(:mod:`noisygd.audit.bounds`):

* the Clopper-Pearson lower bound on epsilon (no assumption),
* the Gaussian-DP lower bound on ``mu`` and its epsilon, and
* for problems whose statistic is a known mixture of Gaussians (``problem.family``), the
  family's lower bound on its signal-to-noise ratio and the epsilon of the statistic's pair
  there,

each holding with probability ``confidence`` over the runs, and puts beside them the
epsilon the library's accountants certify for the very event the runs returned
(:func:`noisygd.accounting.best` at the same ``delta``; the event must be the same on
every run, as it must not depend on the data). The headline ``epsilon_lower`` is decided
by the problem before any run: the family bound when it declares a family, the GDP bound
when the statistic is exactly Gaussian with a common variance (``problem.gaussian_output``),
else the Clopper-Pearson bound.

Soundness of the accountant means ``epsilon_lower <= accountant_epsilon``; a violation at
confidence ``c`` happens with probability at most ``1 - c`` when the accountant is right.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from noisygd._checks import check_bool, check_positive_int, check_probability
from noisygd.audit.bounds import EpsilonLowerBound, empirical_epsilon
from noisygd.audit.problems import AuditProblem

__all__ = ["AuditResult", "run_audit"]


@dataclass(frozen=True)
class AuditResult:
    """What an audit measured, beside what the accountant certifies.

    Attributes
    ----------
    method : str
    runs : int
        Runs on each of ``D`` and ``D'``.
    confidence : float
    delta : float
    seed : int
    epsilon_lower : float
        The headline lower bound (``bound``).
    bound : str
        ``"family"`` for problems with a statistic family, ``"gdp"`` for Gaussian-output
        problems, else ``"clopper_pearson"``.
    accountant_epsilon : float
        :func:`noisygd.accounting.best` on the run's event at ``delta``.
    accountant : str
        Its name; ``accountant_theorem`` the theorem behind it.
    accountant_theorem : str
    event : str
        ``event.describe()``.
    clopper_pearson, gdp : EpsilonLowerBound
        Both bounds, each at ``confidence``.
    n_events : int
        Distinct events the runs returned (more than 1 only for ``problem.event_varies``;
        ``accountant_epsilon`` is then the largest of their epsilons).
    family : EpsilonLowerBound or None
        The family bound (``mu`` is the family's :math:`\nu`), for problems with one.
    statistic : dict
        Mean and standard deviation of the statistic on ``D`` and ``D'`` and the plug-in
        ``mu_hat`` = difference of means / pooled deviation (a point estimate, no bound).
    seconds : float
    canary : str
    settings : dict
    """

    method: str
    runs: int
    confidence: float
    delta: float
    seed: int
    epsilon_lower: float
    bound: str
    accountant_epsilon: float
    accountant: str
    accountant_theorem: str
    event: str
    clopper_pearson: EpsilonLowerBound
    gdp: EpsilonLowerBound
    statistic: dict[str, float]
    seconds: float
    canary: str
    settings: dict[str, Any] = field(default_factory=dict)
    family: EpsilonLowerBound | None = None
    observed: str = ""
    n_events: int = 1

    @property
    def sound(self) -> bool:
        """``epsilon_lower <= accountant_epsilon``: no evidence against the accountant."""
        return self.epsilon_lower <= self.accountant_epsilon

    @property
    def ratio(self) -> float:
        """``epsilon_lower / accountant_epsilon`` (1 is a tight audit)."""
        return self.epsilon_lower / self.accountant_epsilon if self.accountant_epsilon else math.inf

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready values (both bounds as dicts, ``sound`` and ``ratio`` included)."""
        return {
            "method": self.method, "runs": self.runs, "confidence": self.confidence,
            "delta": self.delta, "seed": self.seed, "epsilon_lower": self.epsilon_lower,
            "bound": self.bound, "accountant_epsilon": self.accountant_epsilon,
            "accountant": self.accountant, "accountant_theorem": self.accountant_theorem,
            "sound": self.sound, "ratio": self.ratio, "event": self.event,
            "clopper_pearson": self.clopper_pearson.to_dict(), "gdp": self.gdp.to_dict(),
            "statistic": dict(self.statistic), "seconds": self.seconds,
            "canary": self.canary, "settings": _plain(self.settings),
            "family": None if self.family is None else self.family.to_dict(),
            "observed": self.observed, "n_events": self.n_events,
        }


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return value


def _progress_bar(total: int, enabled: bool, desc: str) -> Any:
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return None
    return tqdm(total=total, desc=desc, unit="run", file=sys.stderr, leave=False)


def run_audit(
    problem: AuditProblem,
    *,
    runs: int,
    delta: float = 1e-5,
    confidence: float = 0.95,
    seed: int = 0,
    split: float = 0.5,
    candidates: int = 1,
    progress: bool = False,
) -> AuditResult:
    """Audit ``problem``: ``runs`` runs on each dataset, both lower bounds, the accountant.

    Parameters
    ----------
    problem : AuditProblem
        E.g. from :func:`noisygd.audit.make_problem`.
    runs : int
        Runs per dataset (>= 2; the bound's power grows with it, module doc of
        :mod:`noisygd.audit.bounds`).
    delta : float
        The delta of both the lower bounds and the accountant's epsilon, in (0, 1).
    confidence : float, default=0.95
    seed : int, default=0
        Root of the ``SeedSequence`` the runs' generators are spawned from.
    split, candidates
        See :func:`noisygd.audit.bounds.empirical_epsilon`.
    progress : bool, default=False
        Show a tqdm progress bar on standard error.

    Returns
    -------
    AuditResult

    Raises
    ------
    ValueError
        If two runs return different events (an event must not depend on the data), unless
        ``problem.event_varies`` (the event depends on an earlier release of the run).
    """
    if not isinstance(problem, AuditProblem):
        raise TypeError(f"problem must be an AuditProblem, got {type(problem).__name__}")
    m = check_positive_int("runs", runs, minimum=2)
    delta = check_probability("delta", delta)
    confidence = check_probability("confidence", confidence)
    seed = check_positive_int("seed", seed, minimum=0)
    progress = check_bool("progress", progress)
    check_probability("split", split)  # checked again by empirical_epsilon; here before any run
    check_positive_int("candidates", candidates)
    if min(math.floor(split * m), m - math.floor(split * m)) < 1:
        raise ValueError(f"split={split} leaves no run in one of the splits of {m} runs")

    children = np.random.SeedSequence(seed).spawn(2 * m)
    scores = np.empty((2, m))
    events: list[Any] = []
    bar = _progress_bar(m, progress, f"audit {problem.name}")
    t0 = time.perf_counter()
    try:
        for i in range(m):
            for which in (0, 1):
                res = problem.run(which, np.random.default_rng(children[2 * i + which]))
                if not events:
                    events.append(res.event)
                elif res.event not in events:
                    if not problem.event_varies:
                        raise ValueError(
                            f"run {i} on {'D_prime' if which else 'D'} returned a different "
                            "event: the event of a run must not depend on the data or the "
                            "noise")
                    events.append(res.event)
                scores[which, i] = problem.observe(res)
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    seconds = time.perf_counter() - t0

    from noisygd.accounting import best

    # the claim: the run's event, or the largest epsilon of the events runs returned
    acc = max((best(e, delta) for e in events), key=lambda r: r.epsilon)
    event = acc.event
    common = {"delta": delta, "confidence": confidence, "split": split,
              "candidates": candidates}
    cp = empirical_epsilon(scores[0], scores[1], bound="clopper_pearson", **common)
    gdp = empirical_epsilon(scores[0], scores[1], bound="gdp", **common)
    fam = None if problem.family is None else empirical_epsilon(
        scores[0], scores[1], bound="family", family=problem.family, **common)
    headline = fam if fam is not None else gdp if problem.gaussian_output else cp
    sd0, sd1 = float(scores[0].std(ddof=1)), float(scores[1].std(ddof=1))
    pooled = math.sqrt((sd0**2 + sd1**2) / 2.0)
    stat = {
        "mean_d": float(scores[0].mean()), "mean_d_prime": float(scores[1].mean()),
        "sd_d": sd0, "sd_d_prime": sd1,
        "mu_hat": abs(float(scores[1].mean() - scores[0].mean())) / pooled if pooled else
        math.inf,
    }
    return AuditResult(
        method=problem.name, runs=m, confidence=confidence, delta=delta, seed=seed,
        epsilon_lower=headline.epsilon, bound=headline.bound,
        accountant_epsilon=float(acc.epsilon), accountant=acc.accountant,
        accountant_theorem=acc.theorems.get(acc.accountant, ""), event=event.describe(),
        clopper_pearson=cp, gdp=gdp, statistic=stat, seconds=seconds,
        canary=problem.canary, settings=dict(problem.settings), family=fam,
        observed=problem.observed, n_events=len(events),
    )
