"""``Solver.check_options``: every method declares the ``method_options`` it takes, and a key it
does not take (above all one its plan sets and its privacy rests on) is refused by name, before
anything is recorded or read."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from noisygd.exceptions import UnknownOptionError
from noisygd.objectives.glm import LogisticLoss
from noisygd.oracles.array import ArrayOracle
from noisygd.planning import plan_noisy_gd
from noisygd.solvers import SOLVERS
from noisygd.solvers.auto import ChoosingSolver
from noisygd.solvers.base import PLANNED_SETTINGS
from noisygd.training import fit_private

ALL = [*SOLVERS.values(), ChoosingSolver]


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.name)
def test_every_method_declares_its_options_and_the_estimators_keys(cls) -> None:
    names = cls.option_names
    assert names is not None and all(isinstance(k, str) for k in names)
    # the keys the estimators pass by the solver's own attributes are among them
    if cls.plans_ridge:
        assert {"l2", "l2_factor"} <= names  # "horizon" only where the solver takes it
    if cls.takes_noise_dimension:
        assert "noise_dimension" in names
    if cls.sharp_clip_losses:
        assert "sharp_clip" in names
    assert ("plan" in names) == bool(cls.plan_option_names)


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.name)
def test_a_key_the_plan_sets_is_refused_with_the_argument_that_sets_it(cls) -> None:
    solver = cls()
    refused = [k for k in PLANNED_SETTINGS if k not in cls.option_names]
    assert "noise_multiplier" in refused and "clip" in refused and "n_samples" in refused
    for key in refused:
        with pytest.raises(UnknownOptionError, match="the plan sets it") as exc:
            solver.check_options({key: 1})
        assert PLANNED_SETTINGS[key] in str(exc.value)
        assert isinstance(exc.value, TypeError) and isinstance(exc.value, ValueError)
    with pytest.raises(UnknownOptionError, match=f"unknown method_options for method='{cls.name}'"
                       ": 'no_such_option'; valid: "):
        solver.check_options({"no_such_option": 1, **dict.fromkeys(cls.option_names)})
    solver.check_options({})
    solver.check_options(None)


def test_the_message_names_the_key_never_the_value() -> None:
    with pytest.raises(UnknownOptionError) as exc:
        SOLVERS["noisy_gd"]().check_options({"bogus": 12345.678})
    assert "bogus" in str(exc.value) and "12345" not in str(exc.value)


def test_noisy_gd_plan_options_are_the_planner_arguments_a_user_may_set() -> None:
    cls = SOLVERS["noisy_gd"]
    params = set(inspect.signature(plan_noisy_gd).parameters)
    passed_by_the_solver = {"epsilon", "delta", "n_samples", "n_params", "constants", "clip",
                            "relation", "mu", "n_step", "quadratic"}
    assert cls.plan_option_names == params - passed_by_the_solver
    solver = cls()
    solver.check_options({"plan": {"step_budget": 10, "init_distance": 1.0}})
    solver.check_options({"plan": None})
    with pytest.raises(UnknownOptionError, match=r"method_options\['plan'\]\['steps'\] is not"):
        solver.check_options({"plan": {"steps": 3}})
    with pytest.raises(UnknownOptionError, match=r"unknown method_options\['plan'\] .*'stepz'"):
        solver.check_options({"plan": {"stepz": 3}})
    with pytest.raises(UnknownOptionError, match=r"method_options\['plan'\] must be a dict"):
        solver.check_options({"plan": 5})
    with pytest.raises(UnknownOptionError, match="method_options must be a dict"):
        solver.check_options([("plan", 5)])  # type: ignore[arg-type]
    with pytest.raises(UnknownOptionError, match="keys must be strings"):
        solver.check_options({3: 1})  # type: ignore[dict-item]


def test_fit_private_refuses_before_reading_a_row() -> None:
    class Untouchable(ArrayOracle):
        def _read(self, *args, **kwargs):
            raise AssertionError("a row was read")

        # every method that reads rows (the count, the runs, the curvature, the supports)
        clipped_gradient_sum = bounded_row_sums = per_example_loss = _read
        clipped_curvature_sum = clipped_curvature_diagonal = row_nonzero_histogram = _read

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (50, 3)) / 2
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    oracle = Untouchable(LogisticLoss(l2=1e-3), X, y, row_norm_bound=1.0)
    for method, options in [("noisy_gd", {"steps": 10}), ("noisy_sgd", {"sampling": "shuffle"}),
                            ("dp_ftrl", {"leaves": "position"}), ("newton", {"plan": {}})]:
        with pytest.raises(UnknownOptionError):
            fit_private([oracle], method=method, epsilon=1.0, delta=1e-5, rng=rng,
                        options=options)
    with pytest.raises(AssertionError, match="a row was read"):  # the oracle is a real trap
        fit_private([oracle], method="noisy_gd", epsilon=1.0, delta=1e-5, rng=rng)


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.name)
def test_value_checks_cover_only_declared_keys_and_name_the_option(cls) -> None:
    assert set(cls.option_checks) <= cls.option_names
    assert set(cls.plan_option_checks) <= cls.plan_option_names
    solver = cls()
    for key, check in cls.option_checks.items():
        if key == "distance_pilot":  # its own messages (noisygd.solvers.distance)
            continue
        for bad in ("not a value", [object()], float("nan")):
            try:
                check(f"method_options[{key!r}]", bad)
            except (TypeError, ValueError) as exc:
                assert f"method_options[{key!r}]" in str(exc)
                with pytest.raises(type(exc)):
                    solver.check_options({key: bad})
            else:  # pragma: no cover - a check that accepts all three is no check
                pytest.fail(f"{cls.name}: {key} accepted {bad!r}")


@pytest.mark.parametrize(("method", "options", "message"), [
    ("noisy_gd", {"strong_convexity": "x"}, r"method_options\['strong_convexity'\] must be a real"),
    ("noisy_gd", {"theta0": "x"}, r"method_options\['theta0'\] must be a one-dimensional"),
    ("noisy_gd", {"plan": {"step_budget": 2.5}}, r"\['plan'\]\['step_budget'\] must be an int"),
    ("dp_ftrl", {"optimum_norm_bound": -1}, r"method_options\['optimum_norm_bound'\] must be pos"),
    ("output_perturbation", {"noise": [1, 2]}, r"method_options\['noise'\] must be a string"),
    ("rrpsgd", {"loss_gap_bound": -1}, r"method_options\['loss_gap_bound'\] must be positive"),
    ("ssp", {"shares": 0.5}, r"method_options\['shares'\] must be three or six positive numbers"),
    ("ssp", {"shares": (0.5, 0.5, 0.5)}, r"method_options\['shares'\] must sum to 1"),
    ("newton", {"curvature_clip": 1e308}, r"method_options\['curvature_clip'\] must be at most"),
    ("newton", {"steps": "x"}, r"method_options\['steps'\] must be an integer"),
    ("newton", {"l2": 1e308}, r"method_options\['l2'\] must be at most"),
    ("newton", {"row_nonzeros": "x"}, r"method_options\['row_nonzeros'\] must be an integer"),
    ("langevin", {"step_rule": "fast"}, r"method_options\['step_rule'\] must be one of"),
])
def test_bad_values_found_by_probing_are_refused_by_name(method, options, message) -> None:
    # each of these failed after the count with an internal name ("could not convert string
    # to float", "distance", "reference_norm", "math domain error", "unhashable type",
    # numpy's "Eigenvalues did not converge"), or was accepted silently (NoisyGD's
    # strong_convexity, Newton's row_nonzeros on a dense problem)
    with pytest.raises((TypeError, ValueError), match=message):
        SOLVERS[method]().check_options(options)


def test_none_is_the_default_where_the_method_takes_one() -> None:
    SOLVERS["noisy_gd"]().check_options({"theta0": None, "learning_rate": None,
                                         "horizon": None, "plan": {"step_budget": None}})
    SOLVERS["newton"]().check_options({"curvature_clip": None, "row_nonzeros": None})
    SOLVERS["noisy_gd"]().check_options({"l2": "auto", "l2_factor": 0.1, "theta0": [0.0, 1.0]})
