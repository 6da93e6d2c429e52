"""Privacy accounting: events, accountants and calibration.

Layout (shaped like dp_accounting):

* :mod:`~noisygd.accounting.events`: every event class (imports no accountant);
* one module per accountant, each with its explicit dispatch table
  ``{EventType: handler}``: :mod:`~noisygd.accounting.gdp`,
  :mod:`~noisygd.accounting.zcdp`, :mod:`~noisygd.accounting.rdp`,
  :mod:`~noisygd.accounting.pld` (translation in
  :mod:`~noisygd.accounting.dp_accounting_bridge`, dp_accounting imported lazily),
  :mod:`~noisygd.accounting.subsampling`, :mod:`~noisygd.accounting.langevin`,
  :mod:`~noisygd.accounting.output_perturbation`;
* :mod:`~noisygd.accounting.registry`: the explicit list of accountants, :func:`best` and
  the ``SUPPORT`` view (accountant name -> event types);
* :mod:`~noisygd.accounting.base`: the interface, the dispatch helper, the budget
  tolerance; :mod:`~noisygd.accounting.calibration`: noise calibration.

Only the events are imported with the package; every other name below is
loaded on first use (so ``import noisygd.accounting.events`` loads no
accountant, and nothing here loads dp_accounting until a PLD is computed).
Accounting imports nothing from the layers above it: only
:mod:`noisygd._checks`, :mod:`noisygd.exceptions` and itself.
"""

from __future__ import annotations

import importlib
from typing import Any

from noisygd.accounting.events import (
    Composed,
    DiscreteGaussianNoise,
    DpEvent,
    EpsilonDelta,
    Gaussian,
    LastIterateLangevin,
    Neighbouring,
    NonPrivate,
    OutputNoise,
    OutputPerturbation,
    PoissonSampled,
    RandomStoppingSelection,
    RRPSGDPaperArgument,
    SampledWithoutReplacement,
    SelfComposed,
    TreeAggregation,
)

#: Name -> module of every lazily loaded public name.
_LAZY: dict[str, str] = {
    "Accountant": "base",
    "AccountingResult": "base",
    "BUDGET_RTOL": "base",
    "UnsupportedEventError": "base",
    "available_accountants": "registry",
    "best": "registry",
    "check_delta": "base",
    "check_epsilon": "base",
    "get_accountant": "registry",
    "register_accountant": "registry",
    "within_budget": "base",
    "calibrate_gaussian_composition": "calibration",
    "calibrate_mu": "calibration",
    "calibrate_noise_multiplier": "calibration",
    "GaussianAccountant": "gdp",
    "gaussian_mu": "gdp",
    "split_gaussian_budget": "gdp",
    "ZCDPAccountant": "zcdp",
    "budget_for_zcdp": "zcdp",
    "zcdp_rho": "zcdp",
    "RDPAccountant": "rdp",
    "rdp_curve": "rdp",
    "PLDAccountant": "pld",
    "to_dp_accounting": "dp_accounting_bridge",
    "SUPPORT": "registry",
}

__all__ = [
    "BUDGET_RTOL",
    "SUPPORT",
    "Accountant",
    "AccountingResult",
    "Composed",
    "DiscreteGaussianNoise",
    "DpEvent",
    "EpsilonDelta",
    "Gaussian",
    "GaussianAccountant",
    "LastIterateLangevin",
    "Neighbouring",
    "NonPrivate",
    "OutputNoise",
    "OutputPerturbation",
    "PLDAccountant",
    "PoissonSampled",
    "RDPAccountant",
    "RRPSGDPaperArgument",
    "RandomStoppingSelection",
    "SampledWithoutReplacement",
    "SelfComposed",
    "TreeAggregation",
    "UnsupportedEventError",
    "ZCDPAccountant",
    "available_accountants",
    "best",
    "budget_for_zcdp",
    "calibrate_gaussian_composition",
    "calibrate_mu",
    "calibrate_noise_multiplier",
    "check_delta",
    "check_epsilon",
    "gaussian_mu",
    "get_accountant",
    "rdp_curve",
    "register_accountant",
    "split_gaussian_budget",
    "to_dp_accounting",
    "within_budget",
    "zcdp_rho",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
