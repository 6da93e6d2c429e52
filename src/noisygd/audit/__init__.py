r"""Empirical privacy audits: lower bounds on epsilon beside the accountants' upper bounds.

An audit runs one of the library's algorithms many times on two neighbouring datasets that
differ in a worst-case **canary** (:mod:`noisygd.audit.problems`), records a distinguishing
statistic of the released parameters, and turns the two samples into a lower bound on
epsilon that holds with a stated confidence (:mod:`noisygd.audit.bounds`: Clopper-Pearson
rates in the DP test inequality, or the Gaussian-DP trade-off curve). Beside it,
:func:`run_audit` (:mod:`noisygd.audit.runner`) reports the epsilon the accountants certify
for the same run's event. An accountant is refuted when the lower bound exceeds it.

``noisygd audit --method noisy_gd --epsilon 1 --runs 2000`` (:mod:`noisygd.audit.cli`) does
the same from the command line, for every entry of :data:`noisygd.audit.registry.AUDITS`
(every method of :data:`noisygd.solvers.SOLVERS`, and the estimators' defaults, audited
white-box by :mod:`noisygd.audit.estimator_problems`, and their private target and feature
ranges, by :mod:`noisygd.audit.prerelease_problems`); ``python -m noisygd.audit.table``
prints the table of docs/audit.md and ``python -m noisygd.audit.power`` an audit's power
before it is run. Method, statistic, bounds and measured results:
``docs/audit.md``.

Names are loaded on first use, so ``import noisygd.audit.cli`` (to build the parser) loads
neither SciPy nor the algorithms.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Name -> submodule of every public name.
_LAZY: dict[str, str] = {
    "AuditProblem": "problems",
    "METHODS": "problems",
    "make_problem": "problems",
    "noisy_gd_problem": "problems",
    "noisy_sgd_problem": "problems",
    "dp_ftrl_problem": "problems",
    "output_perturbation_problem": "problems",
    "langevin_problem": "problems",
    "rrpsgd_problem": "problems",
    "ssp_centred_problem": "problems",
    "ssp_problem": "problems",
    "linear_regression_problem": "estimator_problems",
    "multinomial_problem": "estimator_problems",
    "WhiteBoxNoisyGD": "estimator_problems",
    "target_range_problem": "prerelease_problems",
    "feature_range_problem": "prerelease_problems",
    "AUDITS": "registry",
    "AuditEntry": "registry",
    "ShiftFamily": "bounds",
    "simulate_lower_bounds": "power",
    "AuditResult": "runner",
    "run_audit": "runner",
    "EpsilonLowerBound": "bounds",
    "clopper_pearson_lower": "bounds",
    "clopper_pearson_upper": "bounds",
    "empirical_epsilon": "bounds",
    "epsilon_from_rates": "bounds",
    "gdp_mu_from_rates": "bounds",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
