"""Privacy accounting: events, accountants and calibration.

Importing this package registers every accountant, in this order: ``gdp``
(exact Gaussian DP), ``zcdp``, ``rdp``, ``pld`` (dp_accounting), then those of
the modules listed in the block below. :func:`best` consults them all.
"""

from __future__ import annotations

# Accountant modules: importing one registers its accountant and its event hooks.
# Add one line per module below the first four (gdp, zcdp, rdp, pld stay first:
# registration order is the order of `available_accountants()`).
# isort: off
from noisygd.accounting import gdp  # noqa: F401
from noisygd.accounting import zcdp  # noqa: F401
from noisygd.accounting import rdp  # noqa: F401
from noisygd.accounting import pld  # noqa: F401
from noisygd.accounting import calibration  # noqa: F401
from noisygd.accounting import output_perturbation  # noqa: F401
from noisygd.accounting import langevin  # noqa: F401
from noisygd.accounting import subsampling  # noqa: F401
from noisygd.accounting import tree  # noqa: F401
# isort: on

from noisygd.accounting.base import (
    Accountant,
    AccountingResult,
    UnsupportedEventError,
    available_accountants,
    best,
    check_delta,
    check_epsilon,
    get_accountant,
    register_accountant,
)
from noisygd.accounting.calibration import (
    calibrate_gaussian_composition,
    calibrate_mu,
    calibrate_noise_multiplier,
)
from noisygd.accounting.events import (
    Composed,
    DpEvent,
    EpsilonDelta,
    Gaussian,
    Neighbouring,
    NonPrivate,
    PoissonSampled,
    SampledWithoutReplacement,
    SelfComposed,
)
from noisygd.accounting.gdp import GaussianAccountant, gaussian_mu
from noisygd.accounting.pld import PLDAccountant, to_dp_accounting
from noisygd.accounting.rdp import RDPAccountant, rdp_curve
from noisygd.accounting.zcdp import ZCDPAccountant, zcdp_rho

__all__ = [
    "Accountant",
    "AccountingResult",
    "Composed",
    "DpEvent",
    "EpsilonDelta",
    "Gaussian",
    "GaussianAccountant",
    "Neighbouring",
    "NonPrivate",
    "PLDAccountant",
    "PoissonSampled",
    "RDPAccountant",
    "SampledWithoutReplacement",
    "SelfComposed",
    "UnsupportedEventError",
    "ZCDPAccountant",
    "available_accountants",
    "best",
    "calibrate_gaussian_composition",
    "calibrate_mu",
    "calibrate_noise_multiplier",
    "check_delta",
    "check_epsilon",
    "gaussian_mu",
    "get_accountant",
    "rdp_curve",
    "register_accountant",
    "to_dp_accounting",
    "zcdp_rho",
]
