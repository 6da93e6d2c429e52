"""Layout of the accounting package: what each import loads, and what accounting imports."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import noisygd.accounting as accounting
from noisygd import exceptions
from noisygd.accounting import base, events

SRC = Path(accounting.__file__).parent


def _loaded_after(code: str) -> list[str]:
    """Module names in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    script = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def _noisygd(mods: list[str]) -> set[str]:
    return {m for m in mods if m == "noisygd" or m.startswith("noisygd.")}


def test_events_module_loads_no_accountant_and_no_dp_accounting():
    mods = _loaded_after("import noisygd.accounting.events")
    assert _noisygd(mods) == {
        "noisygd", "noisygd._checks", "noisygd.exceptions", "noisygd.accounting",
        "noisygd.accounting.events",
    }
    assert not any(m.startswith("dp_accounting") for m in mods)
    assert not any(m.startswith("scipy") for m in mods)


def test_exceptions_module_loads_nothing_of_noisygd():
    mods = _loaded_after("import noisygd.exceptions")
    assert _noisygd(mods) == {"noisygd", "noisygd.exceptions"}


def test_gaussian_accounting_and_calibration_do_not_load_dp_accounting():
    code = (
        "import noisygd\n"
        "from noisygd.accounting import Gaussian, SelfComposed, best, "
        "calibrate_noise_multiplier\n"
        "r = best(SelfComposed(Gaussian(4.0), 500), 1e-5)\n"
        "assert r.accountant == 'gdp' and r.exact\n"
        "calibrate_noise_multiplier(lambda z: SelfComposed(Gaussian(z), 500), 1.0, 1e-5)\n"
    )
    mods = _loaded_after(code)
    assert "noisygd.accounting.registry" in mods  # every accountant was available
    assert not any(m.startswith("dp_accounting") for m in mods)


def test_pld_loads_dp_accounting_when_it_computes():
    # The check above is not vacuous: computing a PLD does load it.
    code = (
        "from noisygd.accounting import Gaussian, PoissonSampled, SelfComposed, best\n"
        "best(SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 10), 1e-5)\n"
    )
    assert "dp_accounting" in _loaded_after(code)


def _noisygd_imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return {n for n in names if n == "noisygd" or n.startswith("noisygd.")}


@pytest.mark.parametrize("path", sorted(SRC.glob("*.py")), ids=lambda p: p.name)
def test_accounting_imports_nothing_from_layers_above(path: Path):
    allowed = ("noisygd._checks", "noisygd.exceptions", "noisygd.accounting")
    for name in _noisygd_imports(path):
        assert name.startswith(allowed), f"{path.name} imports {name}"


def test_events_module_imports_only_stdlib_numpy_and_checks():
    tree = ast.parse((SRC / "events.py").read_text())
    top = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            top.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            top.add(node.module)
    third_party = {m for m in top if m.split(".")[0] not in sys.stdlib_module_names}
    assert third_party == {"numpy", "noisygd._checks", "noisygd.exceptions"}


def test_every_event_class_is_defined_in_events_and_reexported_where_it_was():
    from noisygd.accounting import langevin, output_perturbation, tree

    for cls in (events.TreeAggregation, events.LastIterateLangevin, events.OutputPerturbation,
                events.OutputNoise, events.RRPSGDPaperArgument):
        assert cls.__module__ == "noisygd.accounting.events"
    assert tree.TreeAggregation is events.TreeAggregation
    assert tree.max_squared_node_count is events.max_squared_node_count
    assert langevin.LastIterateLangevin is events.LastIterateLangevin
    assert output_perturbation.OutputPerturbation is events.OutputPerturbation
    assert output_perturbation.OutputNoise is events.OutputNoise
    assert output_perturbation.RRPSGDPaperArgument is events.RRPSGDPaperArgument
    subclasses = {c for c in vars(events).values()
                  if isinstance(c, type) and issubclass(c, events.DpEvent)}
    for cls in subclasses:
        assert getattr(accounting, cls.__name__) is cls  # the package re-exports them all


def test_package_reexports_resolve():
    for name in accounting.__all__:
        assert getattr(accounting, name) is not None
    assert "best" in dir(accounting)
    with pytest.raises(AttributeError):
        accounting.no_such_name  # noqa: B018


def test_exceptions_live_below_accounting():
    assert base.UnsupportedEventError is exceptions.UnsupportedEventError
    assert accounting.UnsupportedEventError is exceptions.UnsupportedEventError
    assert issubclass(exceptions.UnsupportedEventError, ValueError)
    assert issubclass(exceptions.BudgetExceededError, ValueError)
    assert not issubclass(exceptions.BudgetExceededError, exceptions.UnsupportedEventError)
