"""Hostile *arguments* (issue 20): hypothesis over the options of ``noisygd fit``,
``predict``, ``plan`` and ``account`` and over the keys of a schema file.

Property, for any argument list: ``noisygd.cli.main`` returns 0 or 2 (argparse's own refusal,
``SystemExit(2)``, counts as 2) and never lets an exception escape (that would be a
traceback); a refusal is one ``noisygd <command>: error: ...`` line (or argparse's usage and
error line); and an input that the documentation refuses (:func:`_refused_fit`,
:func:`_refused_plan`, :func:`_refused_account`: a non-positive or non-finite epsilon, a delta
outside [0, 1), a negative seed, a non-positive step count, a count that is not the rows held,
a size past the documented limits, ...) never exits 0.

The default suite runs a small bounded profile (:data:`SMOKE`); ``make test-slow`` the long
one (:data:`LONG_ARGS`, marked ``slow``). Both are derandomised and have no deadline.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hostile_helpers import hostile_warnings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from noisygd.cli import MAX_AUDIT_RUNS, MAX_FEATURES, MAX_N_SAMPLES, METHOD_NAMES, main

N_ROWS = 40
SMOKE = {"max_examples": 8, "deadline": None, "derandomize": True}
LONG_ARGS = {"max_examples": 300, "deadline": None, "derandomize": True}
SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

#: Numbers as a user may type them: ordinary, zero, negative, tiny, huge, non-finite, junk.
NUMBERS = st.one_of(
    st.sampled_from(["1", "0.5", "2", "0", "-1", "1e-300", "5e-324", "1e300", "1.7e308",
                     "nan", "inf", "-inf", "1e-5", "0.999", "1", "3"]),
    st.floats(-10, 10, allow_nan=False).map(repr),
)
COUNTS = st.one_of(st.sampled_from(["1", "2", "0", "-1", "5", "40", "1000000000",
                                    "1000000000000000000", "3.5", "x"]),
                   st.integers(-5, 100).map(str))
METHODS = st.sampled_from([*METHOD_NAMES, "auto", "bogus"])
OPTIONS = st.sampled_from(['{}', '{"step_rule": "theorem4"}', '[1]', '{bad', '{"x": 1}',
                           '{"clip": -1}', '{"noise": "z"}'])


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _count(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _cli(argv: list[str]) -> tuple[int, str]:
    """``(status, stderr)``; an exception other than argparse's SystemExit propagates."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err), \
            hostile_warnings():
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse: usage and one error line, status 2
            code = int(exc.code or 0)
    return code, err.getvalue()


def _check(argv: list[str], refused: bool) -> tuple[int, str]:
    code, err = _cli(argv)
    assert code in (0, 2), (argv, code, err)
    if code == 2:
        lines = [line for line in err.splitlines() if ": error: " in line]
        assert len(lines) == 1, (argv, err)
        assert "Traceback" not in err, err
    if refused:
        assert code == 2, f"{argv} should be refused, exited 0"
    return code, err


def _options(draw, table: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    """A random subset of ``table`` (flag -> strategy), drawn; ``(argv, {flag: text})``."""
    chosen = draw(st.lists(st.sampled_from(sorted(table)), unique=True, max_size=len(table)))
    given_: dict[str, str] = {}
    argv: list[str] = []
    for flag in chosen:
        value = draw(table[flag])
        given_[flag] = value
        argv += [flag, value] if not value.startswith("-") else [f"{flag}={value}"]
    return argv, given_


def _bad_budget(given_: dict[str, str]) -> bool:
    eps = _number(given_.get("--epsilon", "1"))
    delta = _number(given_.get("--delta", "1e-5"))
    return (eps is not None and not (math.isfinite(eps) and eps > 0)) or (
        delta is not None and not 0.0 <= delta < 1.0)


def _bad_scale(given_: dict[str, str], flags: tuple[str, ...]) -> bool:
    for flag in flags:
        v = _number(given_.get(flag, "1"))
        if v is not None and not 0.0 <= v <= 1e150:
            return True
    return False


# --------------------------------------------------------------------------- fit

FIT_OPTIONS = {
    "--epsilon": NUMBERS, "--delta": NUMBERS, "--seed": COUNTS, "--l2": NUMBERS,
    "--max-iter": st.sampled_from(["1", "3", "20", "0", "-2", "2.5"]),
    "--method": METHODS, "--relation": st.sampled_from(["add_remove", "replace_one", "x"]),
    "--n-samples-public": COUNTS, "--row-norm-bound": NUMBERS, "--radius": NUMBERS,
    "--classes": st.sampled_from(["0,1", "0", "1,0", "a,b", "0,1,2", ""]),
    "--method-options": OPTIONS,
}


def _refused_fit(given_: dict[str, str]) -> bool:
    seed = _count(given_.get("--seed", "0"))
    max_iter = _count(given_.get("--max-iter", "1"))
    n_public = _count(given_.get("--n-samples-public", str(N_ROWS)))
    # --classes: the public label set, required without a schema; one label, none, or one
    # that leaves out a label of the data (labels 0 and 1) is refused
    return (_bad_budget(given_) or (seed is not None and seed < 0)
            or (max_iter is not None and max_iter < 1)
            or (n_public is not None and n_public != N_ROWS)
            or given_.get("--method") == "bogus"
            or given_.get("--classes", "0,1") in ("", "0", "a,b")
            or _bad_scale(given_, ("--l2", "--row-norm-bound", "--radius")))


def _table(folder: Path) -> Path:
    rng = np.random.default_rng(0)
    rows = ["a,b,label"] + [f"{a:.3f},{b:.3f},{i % 2}"
                            for i, (a, b) in enumerate(rng.uniform(-1, 1, (N_ROWS, 2)))]
    path = folder / "d.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


@st.composite
def fit_arguments(draw) -> tuple[list[str], dict[str, str]]:
    return _options(draw, FIT_OPTIONS)


def _fit_property(args: tuple[list[str], dict[str, str]]) -> None:
    argv, given_ = args
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data, out = _table(folder), folder / "m.json"
        full = ["fit", str(data), "--target", "label", "--out", str(out), "--quiet", *argv]
        if "--classes" not in given_:  # required without a schema: the fit path runs
            full += ["--classes", "0,1"]
        if "--method" not in given_:  # a short default run
            full += ["--max-iter", "5"] if "--max-iter" not in given_ else []
        code, _ = _check(full, _refused_fit(given_))
        if code == 0:
            payload = json.loads(out.read_text())
            assert np.isfinite(np.asarray(payload["coef"], dtype=float)).all()
        else:
            assert not out.exists()


# --------------------------------------------------------------------------- plan

PLAN_OPTIONS = {
    "--epsilon": NUMBERS, "--delta": NUMBERS, "--l2": NUMBERS, "--radius": NUMBERS,
    "--row-norm-bound": NUMBERS, "--max-iter": COUNTS,
    "--model": st.sampled_from(["logistic", "linear", "huber", "x"]),
    "--relation": st.sampled_from(["add_remove", "replace_one"]),
    "--target-range": st.sampled_from(["-1,1", "1,-1", "0,0", "nan,1", "a", "-1e300,1e300"]),
    "--method-options": OPTIONS,
}


@st.composite
def plan_arguments(draw) -> tuple[list[str], dict[str, str]]:
    argv, given_ = _options(draw, PLAN_OPTIONS)
    n = draw(st.sampled_from(["300", "0", "-3", "1", str(MAX_N_SAMPLES + 1), "1e3"]))
    d = draw(st.sampled_from(["5", "0", "1", str(MAX_FEATURES + 1), "x"]))
    given_.update({"--n-samples": n, "--features": d})
    return ["--n-samples", n, "--features", d, *argv], given_


def _refused_plan(given_: dict[str, str]) -> bool:
    n = _count(given_["--n-samples"])
    d = _count(given_["--features"])
    return (_bad_budget(given_) or (n is not None and not 1 <= n <= MAX_N_SAMPLES)
            or (d is not None and not 1 <= d <= MAX_FEATURES)
            or _bad_scale(given_, ("--l2", "--row-norm-bound", "--radius")))


# --------------------------------------------------------------------------- account

ACCOUNT_OPTIONS = {
    "--sensitivity": NUMBERS, "--relation": st.sampled_from(["add_remove", "replace_one"]),
    "--sampling-rate": NUMBERS, "--batch-size": COUNTS, "--population": COUNTS,
    "--mechanism": st.sampled_from(["gaussian", "tree"]), "--epochs": COUNTS,
}


@st.composite
def account_arguments(draw) -> tuple[list[str], dict[str, str]]:
    argv, given_ = _options(draw, ACCOUNT_OPTIONS)
    z, steps, delta = draw(NUMBERS), draw(COUNTS), draw(NUMBERS)
    given_.update({"--noise-multiplier": z, "--steps": steps, "--delta": delta})
    return [f"--noise-multiplier={z}", f"--steps={steps}", f"--delta={delta}", *argv], given_


def _refused_account(given_: dict[str, str]) -> bool:
    z = _number(given_["--noise-multiplier"])
    steps = _count(given_["--steps"])
    # +inf is admitted: Gaussian(inf) is the accounting library's "no release" (epsilon 0,
    # noisygd.accounting.events._check_noise); nan, 0 and negatives are refused
    return ((z is not None and not z > 0)
            or (steps is not None and steps < 1) or _bad_budget(given_))


# --------------------------------------------------------------------------- predict

SCHEMA = """\
row_norm_bound = 1.0
[target]
name = "label"
labels = ["0", "1"]
[columns.a]
kind = "numeric"
bounds = [-1, 1]
[columns.b]
kind = "categorical"
levels = ["x", "y"]
unknown = "zeros"
"""

JUNK = st.recursive(
    st.one_of(st.none(), st.booleans(), st.floats(allow_nan=True), st.integers(-10, 10),
              st.text(max_size=4)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                               max_size=3),
    max_leaves=6)


def _schema_table(folder: Path) -> Path:
    rng = np.random.default_rng(1)
    rows = ["a,b,label"] + [f"{rng.uniform(-1, 1):.3f},{'xy'[i % 2]},{i % 2}"
                            for i in range(N_ROWS)]
    path = folder / "t.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


_MODEL_CACHE: dict[str, str] = {}


def _model_text(folder: Path, data: Path) -> str:
    if "model" not in _MODEL_CACHE:
        schema = folder / "s.toml"
        schema.write_text(SCHEMA)
        model = folder / "model.json"
        code, err = _cli(["fit", str(data), "--schema", str(schema), "--seed", "0",
                          "--max-iter", "5", "--out", str(model), "--quiet"])
        assert code == 0, err
        _MODEL_CACHE["model"] = model.read_text()
    return _MODEL_CACHE["model"]


def _predict_property(key: str, value: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = _schema_table(folder)
        payload = json.loads(_model_text(folder, data))
        if key.startswith("coef"):
            payload["coef"] = value
        else:
            payload[key] = value
        model = folder / "damaged.json"
        model.write_text(json.dumps(payload))
        out = folder / "p.csv"
        refused = key == "coef" and not _finite_numbers(value)
        code, _ = _check(["predict", str(model), str(data), "--out", str(out)], refused)
        if code == 0:
            assert out.exists()


def _finite_numbers(value: Any) -> bool:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        return True  # not numbers at all: refused for another reason, not checked here
    return bool(np.isfinite(arr).all())


# --------------------------------------------------------------------------- schema TOML

SCHEMA_VALUES = {
    "row_norm_bound": st.sampled_from(["1.0", "0", "-1", "1e300", "nan", "inf", '"x"', "true",
                                       "1e-300", "[1]"]),
    "bounds": st.sampled_from(["[-1, 1]", "[1, -1]", "[0, 0]", "[nan, 1]", "[-1e300, 1e300]",
                               '"private"', "[1]", '"x"', "[-inf, 1]", "[5e-324, 1e-300]"]),
    "range": st.sampled_from(["[-1, 1]", "[-1e300, 1e300]", "[1, -1]", "[0, 1e308]", "[]"]),
    "resolution": st.sampled_from(["1e-300", "5e-324", "0", "-1", "nan", "1e300", "1"]),
    "transform": st.sampled_from(['"log1p"', '"identity"', '"signed_log1p"', '"exp"']),
    "missing": st.sampled_from(['"indicator"', '"error"', "0", "5", "nan", '"zeros"']),
    "levels": st.sampled_from(['["x", "y"]', '["x"]', "[]", '["x", "x"]', '"private"',
                               '["<other>"]', "[1, \"1\"]"]),
    "unknown": st.sampled_from(['"zeros"', '"error"', '"x"', '"w"', "1"]),
    "count_clipped": st.sampled_from(["true", "false", "1"]),
    "preprocessing_share": st.sampled_from(["0.1", "0", "1", "-1", "nan", "0.999"]),
}


@st.composite
def schema_texts(draw) -> str:
    a = {"kind": '"numeric"', "bounds": "[-1, 1]"}
    b = {"kind": '"categorical"', "levels": '["x", "y"]', "unknown": '"zeros"'}
    top = {"row_norm_bound": "1.0"}
    privacy: dict[str, str] = {}
    for key in draw(st.lists(st.sampled_from(sorted(SCHEMA_VALUES)), max_size=4)):
        value = draw(SCHEMA_VALUES[key])
        if key == "row_norm_bound":
            top[key] = value
        elif key == "preprocessing_share":
            privacy[key] = value
        elif key in ("levels", "unknown"):
            b[key] = value
        else:
            a[key] = value
    lines = [f"{k} = {v}" for k, v in top.items()]
    lines += ["[target]", 'name = "label"', 'labels = ["0", "1"]']
    if privacy:
        lines += ["[privacy]", *(f"{k} = {v}" for k, v in privacy.items())]
    lines += ["[columns.a]", *(f"{k} = {v}" for k, v in a.items())]
    lines += ["[columns.b]", *(f"{k} = {v}" for k, v in b.items())]
    return "\n".join(lines) + "\n"


def _schema_property(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = _schema_table(folder)
        schema = folder / "s.toml"
        schema.write_text(text)
        out = folder / "m.json"
        code, _ = _check(["fit", str(data), "--schema", str(schema), "--seed", "0",
                          "--max-iter", "5", "--out", str(out), "--quiet"], refused=False)
        assert (code == 0) == out.exists()
        _check(["plan", "--schema", str(schema), "--n-samples", str(N_ROWS)], refused=False)


# --------------------------------------------------------------------------- the tests

def _fuzz(profile: dict[str, Any], strategy: Any, prop: Any):
    @settings(**profile, suppress_health_check=SUPPRESS)
    @given(args=strategy)
    def run(args):
        prop(args)
    return run


PROPERTIES = {
    "fit": (fit_arguments(), _fit_property),
    "plan": (plan_arguments(), lambda a: _check(["plan", *a[0]], _refused_plan(a[1]))),
    "account": (account_arguments(),
                lambda a: _check(["account", *a[0]], _refused_account(a[1]))),
    "predict": (st.tuples(st.sampled_from(["coef", "intercept", "labels", "task", "schema",
                                           "multiclass", "format"]), JUNK),
                lambda a: _predict_property(*a)),
    "schema": (schema_texts(), _schema_property),
}


@pytest.mark.parametrize("command", sorted(PROPERTIES))
def test_fuzz_arguments_smoke(command):
    """A few examples per command in the default suite (bounded, derandomised)."""
    strategy, prop = PROPERTIES[command]
    _fuzz(SMOKE, strategy, prop)()


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(PROPERTIES))
def test_fuzz_arguments(command):
    """The long profile (``make test-slow``)."""
    strategy, prop = PROPERTIES[command]
    _fuzz(LONG_ARGS, strategy, prop)()


def test_the_refusal_oracles_see_what_they_refuse():
    """Guard against an oracle that never refuses (the property would then hold vacuously)."""
    assert _refused_fit({"--epsilon": "0"}) and _refused_fit({"--seed": "-1"})
    assert _refused_fit({"--n-samples-public": "5"}) and not _refused_fit({"--l2": "1"})
    assert _refused_plan({"--n-samples": "0", "--features": "5"})
    assert _refused_plan({"--n-samples": "5", "--features": str(MAX_FEATURES + 1)})
    assert _refused_account({"--noise-multiplier": "nan", "--steps": "1", "--delta": "1e-5"})
    assert MAX_AUDIT_RUNS >= 2000  # the audit's default runs are admitted
