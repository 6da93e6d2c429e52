r"""The audit registry: one entry per ``noisygd audit --method`` name.

Adding an audit is one entry in :data:`AUDITS`: the name, the builder of its
:class:`~noisygd.audit.problems.AuditProblem` (named ``"module:function"`` inside
:mod:`noisygd.audit`, loaded on first use, so the command-line parser imports nothing heavy),
the library method it audits (a name of :data:`noisygd.solvers.SOLVERS`, or an estimator
setting; None for an estimator's pre-release, made before any run) and fixed builder
options. ``tests/audit/test_audit_registry.py`` checks that
every name of :data:`noisygd.solvers.SOLVERS` is audited by at least one entry.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["AUDITS", "AuditEntry", "audited_solvers"]


@dataclass(frozen=True)
class AuditEntry:
    """One audit: how to build its problem and what it audits.

    Attributes
    ----------
    builder : str
        ``"module:function"`` in :mod:`noisygd.audit` returning an ``AuditProblem``; called
        with ``epsilon``, ``delta``, :attr:`options` and the caller's options.
    solver : str or None
        The :data:`noisygd.solvers.SOLVERS` name whose run is audited; None for an audit of
        a release an estimator makes before any run (:mod:`noisygd.audit.prerelease_problems`).
    summary : str
        One line: the run, the canary and the statistic (``noisygd audit --help``, docs).
    options : mapping
        Fixed keyword arguments of the builder (e.g. ``sampling``).
    steps_option : str or None
        The builder's keyword that ``--steps`` sets (None: ``--steps`` is refused).
    """

    builder: str
    solver: str | None
    summary: str
    options: Mapping[str, Any] = field(default_factory=dict)
    steps_option: str | None = "steps"

    def load(self) -> Callable[..., Any]:
        """The builder function (imports its module)."""
        module, name = self.builder.split(":")
        return getattr(importlib.import_module(f"noisygd.audit.{module}"), name)


#: Name -> entry, in the order ``noisygd audit --help`` and docs/audit.md list them.
AUDITS: dict[str, AuditEntry] = {
    "noisy_gd": AuditEntry(
        "problems:noisy_gd_problem", "noisy_gd",
        "NoisyGD, full batch; row canary at the clip every step; last iterate (exactly "
        "Gaussian)"),
    "noisy_sgd": AuditEntry(
        "problems:noisy_sgd_problem", "noisy_sgd",
        "NoisySGD, Poisson sampling; row canary at the clip whenever sampled; last iterate "
        "(binomial mixture of Gaussians)", options={"sampling": "poisson"}),
    "noisy_sgd_wor": AuditEntry(
        "problems:noisy_sgd_problem", "noisy_sgd",
        "NoisySGD, fresh uniform batches without replacement (replace-one); canary +-C when "
        "sampled; last iterate (symmetric binomial mixture)",
        options={"sampling": "without_replacement"}),
    "noisy_sgd_shuffle": AuditEntry(
        "problems:noisy_sgd_problem", "noisy_sgd",
        "NoisySGD, shuffled fixed batches (replace-one, no amplification claimed); white-box: "
        "the canary's own steps, the permutation known (exactly Gaussian)",
        options={"sampling": "shuffle_fixed"}, steps_option="epochs"),
    "dp_ftrl": AuditEntry(
        "problems:dp_ftrl_problem", "dp_ftrl",
        "DP-FTRL, Honaker tree, full batch; canary +-C in every leaf; last iterate (exactly "
        "Gaussian)", steps_option="epochs"),
    "output_perturbation": AuditEntry(
        "problems:output_perturbation_problem", "output_perturbation",
        "Output perturbation (Zhang et al. 2017, Alg. 1); canary targets +-Y; released "
        "parameters (exactly Gaussian)"),
    "langevin": AuditEntry(
        "problems:langevin_problem", "langevin",
        "Projected noisy GD (Chourasia et al. 2021); canary +-e_0; last iterate (exactly "
        "Gaussian on R^2)"),
    "rrpsgd": AuditEntry(
        "problems:rrpsgd_problem", "rrpsgd",
        "RRPSGD (Zhang et al. 2017, Alg. 2), one round; linear-loss canary with gradient "
        "+-L (a Dirac gradient canary); released iterate (symmetric mixture)",
        steps_option=None),
    "ssp": AuditEntry(
        "problems:ssp_problem", "ssp",
        "AdaSSP (Wang 2018); canary B e_0 with target Y moves lambda_min, A_00 and b_0 by "
        "their sensitivities; white-box: the three releases (exactly Gaussian)",
        steps_option=None),
    "ssp_centred": AuditEntry(
        "problems:ssp_centred_problem", "ssp",
        "AdaSSP, centred form (an intercept: DPLinearRegression's); canary x = R, target Y "
        "over rows x = -R moves lambda_min(C), S_xx, S_x, n, S_y, S_xy by their "
        "sensitivities; white-box: the six releases (exactly Gaussian)",
        steps_option=None),
    "newton": AuditEntry(
        "problems:newton_problem", "newton",
        "private damped Newton, least squares (one curvature release); canary B e_0 at the "
        "curvature clip C_H = B^2 and the gradient clip every step; released parameters "
        "(not Gaussian: Clopper-Pearson)"),
    "newton_sharp": AuditEntry(
        "problems:newton_problem", "newton",
        "private damped Newton with the sharp clip after the first step (the logistic "
        "default's, sharp 1/2; on the canary problem the rule sets clip C/2 for steps 1..); "
        "canary B e_0 at whatever clip a step uses; released parameters (Clopper-Pearson)",
        options={"sharp": 0.5}),
    "newton_multinomial": AuditEntry(
        "problems:newton_multinomial_problem", "newton",
        "private damped Newton on the softmax loss (K = 3, the multinomial curvature sums); "
        "canary B e_0 of class 0 on a coordinate no other row touches, its gradient and "
        "curvature term above their clips at the start; released parameters "
        "(Clopper-Pearson; a soundness check)"),
    "dynamic": AuditEntry(
        "problems:dynamic_problem", "dynamic",
        "dynamic budget allocation (Hong, Wang and Zhou, Alg. 1), T = 10 steps of decreasing "
        "noise; row canary at the clip every step; white-box: every noisy step (exactly "
        "Gaussian)"),
    "linear_regression": AuditEntry(
        "estimator_problems:linear_regression_problem", "noisy_gd",
        "DPLinearRegression() default (count, residual-scale release, planned NoisyGD); "
        "white-box: every step of the run, canary at the clip (exactly Gaussian); the count "
        "and scale releases are not observed", steps_option=None),
    "multinomial": AuditEntry(
        "estimator_problems:multinomial_problem", "noisy_gd",
        "DPLogisticRegression(multiclass='multinomial') default, K = 3, private "
        "conditioning released (rows of D at -R, canary at +R); white-box: every step, the "
        "canary's K x p clipped gradient at the clip (exactly Gaussian); the feature range, "
        "conditioning and count releases are not observed", steps_option=None),
    "logistic": AuditEntry(
        "estimator_problems:logistic_problem", "noisy_gd",
        "DPLogisticRegression() binary default, private conditioning released (rows of D at "
        "-R, canary at +R); white-box: every step, canary at the clip (exactly Gaussian); "
        "the conditioning and count releases are not observed", steps_option=None),
    "linear_regression_centre": AuditEntry(
        "estimator_problems:centred_linear_regression_problem", "noisy_gd",
        "DPLinearRegression() default with its private centre released (rows of D at -R, "
        "canary at +R); white-box: every step, canary at the clip (exactly Gaussian); the "
        "centre, count and scale releases are not observed", steps_option=None),
    "target_range": AuditEntry(
        "prerelease_problems:target_range_problem", None,
        "DPLinearRegression() default's private target range, its first histogram (a "
        "pre-release: no solver's run); canary target 1000 in a bin no row of D occupies; "
        "white-box: that bin's noisy count over sigma (exactly Gaussian); claim: that "
        "release's own event; the refined rounds are not observed", steps_option=None),
    "feature_range": AuditEntry(
        "prerelease_problems:feature_range_problem", None,
        "DPLogisticRegression() default's private feature range, its histogram and row "
        "count (a pre-release: no solver's run); canary x = 2^20 in a bin no row of D "
        "occupies; white-box: that bin's and the row count's noisy counts (exactly "
        "Gaussian); claim: that release's own event; the column-offset rounds are not "
        "observed", steps_option=None),
}


def audited_solvers() -> set[str]:
    """The :data:`noisygd.solvers.SOLVERS` names some entry audits."""
    return {entry.solver for entry in AUDITS.values() if entry.solver is not None}
