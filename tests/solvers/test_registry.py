"""The one place a method is named (SOLVERS) and its validation (get_solver)."""

from __future__ import annotations

import importlib
import sys

import pytest

from noisygd.accounting.events import Neighbouring
from noisygd.solvers import (
    DEFAULT_SOLVER,
    SOLVERS,
    DPFTRLSolver,
    DynamicSolver,
    LangevinSolver,
    NewtonSolver,
    NoisyGDSolver,
    NoisySGDSolver,
    OutputPerturbationSolver,
    RRPSGDSolver,
    Solver,
    SSPSolver,
    get_solver,
)


def test_every_method_is_one_class_named_once():
    assert SOLVERS == {
        "noisy_gd": NoisyGDSolver, "noisy_sgd": NoisySGDSolver, "dp_ftrl": DPFTRLSolver,
        "langevin": LangevinSolver, "output_perturbation": OutputPerturbationSolver,
        "rrpsgd": RRPSGDSolver, "ssp": SSPSolver, "dynamic": DynamicSolver,
        "newton": NewtonSolver,
    }
    for name, cls in SOLVERS.items():
        assert issubclass(cls, Solver) and cls.name == name and cls.description
    assert DEFAULT_SOLVER == "noisy_gd"


def test_the_class_attributes_state_accounting_facts():
    assert NoisyGDSolver.gaussian and DPFTRLSolver.gaussian
    assert not NoisySGDSolver.gaussian and NoisySGDSolver.accepts_prior_event
    assert NoisySGDSolver.relations == (Neighbouring.ADD_REMOVE,)
    # DP-FTRL also under add/remove (rows assigned to leaves at random)
    assert DPFTRLSolver.relations == (Neighbouring.REPLACE_ONE, Neighbouring.ADD_REMOVE)
    for cls in (LangevinSolver, OutputPerturbationSolver, RRPSGDSolver):
        assert cls.relations == (Neighbouring.REPLACE_ONE,)


def test_get_solver_accepts_names_auto_and_instances():
    assert isinstance(get_solver("auto"), NoisyGDSolver)
    assert isinstance(get_solver("dp_ftrl"), DPFTRLSolver)
    inst = LangevinSolver()
    assert get_solver(inst) is inst


def test_get_solver_errors_list_the_valid_names():
    with pytest.raises(ValueError, match="unknown method 'magic'") as info:
        get_solver("magic")
    for name in SOLVERS:
        assert name in str(info.value)
    with pytest.raises(TypeError, match="NoisyGDSolver\\(\\)"):
        get_solver(NoisyGDSolver)
    with pytest.raises(TypeError, match="method"):
        get_solver(3)


def test_cli_help_names_match_the_solvers():
    from noisygd.cli import DEFAULT_METHOD, METHOD_NAMES

    assert tuple(sorted(SOLVERS)) == METHOD_NAMES and DEFAULT_METHOD == DEFAULT_SOLVER


def test_no_registration_module_and_no_cycle():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("noisygd.methods")
    import noisygd.training

    assert not hasattr(noisygd.training, "METHODS")
    assert not hasattr(noisygd.training, "register_method")


def test_import_noisygd_does_not_load_dp_accounting():
    import subprocess

    code = ("import sys, noisygd, noisygd.cli, noisygd.estimators; "
            "sys.exit(1 if 'dp_accounting' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
