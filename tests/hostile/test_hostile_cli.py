"""Hostile files given to ``noisygd fit`` and ``noisygd predict`` (docs/hostile_input.md).

Property, for any file: the command exits 0 and writes a valid output file with finite
coefficients, or exits 2 with one line on stderr (``noisygd <command>: error: ...``) that
quotes no cell of the file, and leaves no output and no temporary file behind. An exception
escaping ``noisygd.cli.main`` fails the test (the CLI turns only documented errors into exit
status 2). The commands run in-process (``noisygd.cli.main``) on files in a fresh folder.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hostile_helpers import FAST, LONG, hostile_warnings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from noisygd.cli import main

SECRET = "S3CRET"
#: Cells a hostile table may hold: ordinary and extreme numbers, NaN/inf spellings, empty,
#: text (the secret), quotes, delimiters inside cells, non-ASCII.
CELLS = st.one_of(
    st.floats(-5, 5).map(lambda v: f"{v:.3f}"),
    st.sampled_from(["0", "1", "1e308", "-1.7976931348623157e308", "1.5e308", "5e-324",
                     "2.2250738585072014e-308", "nan", "NaN", "inf", "-inf", "", " ", "?",
                     SECRET, f'"{SECRET},x"', '"', "1,5", "é", "\u00a0", "0x10", "1_000",
                     "True", "None", "-0"]),
)
NAMES = st.sampled_from(["a", "b", "label", "a ", " b", "", "é", "label"])

SCHEMA = textwrap.dedent("""
    row_norm_bound = 1.0

    [target]
    name = "label"
    labels = ["0", "1"]

    [columns.a]
    kind = "numeric"
    bounds = [-1, 1]
    missing = 0

    [columns.b]
    kind = "numeric"
    bounds = [-1, 1]
    missing = "indicator"
""")


@st.composite
def csv_files(draw) -> bytes:
    """A CSV file: a header (possibly with duplicates), rows of hostile cells, a delimiter,
    an encoding (UTF-8, Latin-1, random bytes) and maybe gzip."""
    shape = draw(st.sampled_from(["clean"] * 4 + ["table"] * 4 + ["empty", "header only",
                                                                  "bytes"]))
    if shape == "empty":
        return b""
    if shape == "bytes":
        return draw(st.binary(min_size=1, max_size=64))
    if shape == "clean":  # well-formed, with extreme numbers: the fit must succeed
        n = draw(st.integers(2, 10))
        numbers = st.one_of(st.floats(-5, 5), st.sampled_from(
            [1e308, -1.7976931348623157e308, 1.5e308, 5e-324, -5e-324, 0.0, 1.3e154]))
        rows = [f"{draw(numbers)!r},{draw(numbers)!r},{i % 2}" for i in range(n)]
        return ("a,b,label\n" + "\n".join(rows) + "\n").encode()
    sep = draw(st.sampled_from([",", ";", "\t"]))
    header = draw(st.sampled_from([["a", "b", "label"], ["a", "b", "label"],
                                   ["a", "b", "label", "label"], ["b", "a", "label"]])
                  | st.lists(NAMES, min_size=1, max_size=4))
    lines = [sep.join(header)]
    if shape == "table":
        n = draw(st.integers(1, 8))
        for _ in range(n):
            width = draw(st.sampled_from([len(header), len(header), len(header) + 1,
                                          max(len(header) - 1, 1)]))
            cells = draw(st.lists(CELLS, min_size=width, max_size=width))
            if header[-1:] == ["label"] and draw(st.booleans()):
                cells[-1] = draw(st.sampled_from(["0", "1", "0", "1", "2", SECRET, ""]))
            lines.append(sep.join(cells))
    text = "\n".join(lines) + draw(st.sampled_from(["\n", "", "\r\n"]))
    encoding = draw(st.sampled_from(["utf-8", "utf-8", "latin-1", "utf-8-sig"]))
    data = text.encode(encoding, errors="replace")
    if draw(st.booleans()) and draw(st.booleans()):
        data = gzip.compress(data, mtime=0)
    return data


def _cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), hostile_warnings():
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _check_outcome(folder: Path, out: Path, command: str, code: int, err: str) -> None:
    leftovers = [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]
    assert not leftovers, f"temporary files left behind: {leftovers}"
    if code == 0:
        return
    assert code == 2, (code, err)
    lines = [line for line in err.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(f"noisygd {command}: error: ")]
    assert len(errors) == 1, err
    message = errors[0]
    assert SECRET not in message, message
    assert "0xe9" not in message and "\\x" not in message, message  # no byte of the file
    assert not out.exists(), "a failed command left its output file"


def _fit_outcome(content: bytes, *, schema: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = folder / "data.csv"
        data.write_bytes(content)
        out = folder / "model.json"
        argv = ["fit", str(data), "--seed", "0", "--out", str(out)]
        if schema:
            (folder / "s.toml").write_text(SCHEMA)
            argv += ["--schema", str(folder / "s.toml"), "--n-samples-public", "8"]
        else:
            argv += ["--target", "label", "--classes", "0,1", "--n-samples-public", "8"]
        code, _, err = _cli(argv)
        _check_outcome(folder, out, "fit", code, err)
        if code == 0:
            payload = json.loads(out.read_text())
            assert np.all(np.isfinite(np.asarray(payload["coef"], dtype=float)))
            assert np.all(np.isfinite(np.asarray(payload["intercept"], dtype=float)))
            assert payload["privacy"]["epsilon"] <= 1.0 * (1 + 1e-9)


def _model(folder: Path) -> Path:
    data = folder / "train.csv"
    rng = np.random.default_rng(0)
    rows = ["a,b,label", *(f"{a:.3f},{b:.3f},{int(a + b > 0)}"
                           for a, b in rng.uniform(-1, 1, size=(40, 2)))]
    data.write_text("\n".join(rows) + "\n")
    (folder / "s.toml").write_text(SCHEMA)
    model = folder / "model.json"
    code, _, err = _cli(["fit", str(data), "--schema", str(folder / "s.toml"), "--seed", "0",
                         "--out", str(model)])
    assert code == 0, err
    return model


def _predict_outcome(model_text: bytes, content: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        model = folder / "m.json"
        model.write_bytes(model_text)
        data = folder / "data.csv"
        data.write_bytes(content)
        out = folder / "pred.csv"
        code, _, err = _cli(["predict", str(model), str(data), "--out", str(out)])
        _check_outcome(folder, out, "predict", code, err)
        if code == 0:
            text = out.read_text(encoding="utf-8")
            assert text.splitlines()[0] == "prediction,proba_0,proba_1"
            for line in text.splitlines()[1:]:
                label, p0, p1 = line.split(",")
                assert label in ("0", "1")
                assert abs(float(p0) + float(p1) - 1.0) < 1e-9


SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]


def _fit_fuzz(profile, schema: bool):
    @settings(**profile, suppress_health_check=SUPPRESS)
    @given(content=csv_files())
    def run(content):
        _fit_outcome(content, schema=schema)
    return run


@pytest.mark.parametrize("schema", [False, True], ids=["numeric-table", "schema"])
def test_fuzz_fit_hostile_files(schema):
    _fit_fuzz(FAST, schema)()


@pytest.mark.slow
@pytest.mark.parametrize("schema", [False, True], ids=["numeric-table", "schema"])
def test_fuzz_fit_hostile_files_long(schema):
    _fit_fuzz({**LONG, "max_examples": 600}, schema)()


def _predict_fuzz(profile):
    with tempfile.TemporaryDirectory() as tmp:
        good_model = _model(Path(tmp)).read_bytes()
    payload = json.loads(good_model)
    wide = dict(payload, coef=[[0.1, 0.2]])  # one coefficient missing: a damaged file
    models = st.sampled_from([good_model, good_model, good_model,
                              json.dumps(wide).encode(), b"{}", b"[1, 2]", b"not json",
                              b"\xff\xfe", json.dumps(dict(payload, schema=None)).encode()])

    @settings(**profile, suppress_health_check=SUPPRESS)
    @given(model=models, content=csv_files())
    def run(model, content):
        _predict_outcome(model, content)
    return run


def test_fuzz_predict_hostile_files_and_models():
    _predict_fuzz(FAST)()


@pytest.mark.slow
def test_fuzz_predict_hostile_files_and_models_long():
    _predict_fuzz({**LONG, "max_examples": 600})()


# ------------------------------------------------------------- named cases (deterministic)

@pytest.mark.parametrize("content, expected", [
    (b"", "empty"),
    (b"a,b,label\n", "empty"),
    (b"a,b,label\r\n", "empty"),
    ("a,b,label\n0.1,\xe9,1\n".encode("latin-1"), "UTF-8"),
    (b"a,b,label\n0.1,0.2\n0.1,0.2,1,4\n", "malformed"),
    (b"a,a,label\n0.1,0.2,1\n", "more than once"),
    (b"\x1f\x8bnot-gzip-at-all", "cannot read"),
    (f"a,b,label\n0.1,{SECRET},1\n".encode(), "non-numeric feature columns"),
    (b"a,b,label\n0.1,nan,1\n", "non-finite"),
    (b"a,b,label\n0.1,inf,1\n", "non-finite"),
], ids=["empty", "header only", "header only crlf", "latin-1", "ragged", "duplicate names",
        "bad gzip", "text cell", "nan cell", "inf cell"])
def test_numeric_table_named_failures(content, expected):
    """The numeric-table path (``--target``): each failure is exit 2 naming the problem."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = folder / "d.csv"
        data.write_bytes(content)
        out = folder / "m.json"
        code, _, err = _cli(["fit", str(data), "--target", "label", "--classes", "0,1",
                             "--n-samples-public", "8", "--out", str(out)])
        assert code == 2, err
        assert expected in err, err
        _check_outcome(folder, out, "fit", code, err)


@pytest.mark.parametrize("schema", [False, True], ids=["numeric-table", "schema"])
def test_huge_and_subnormal_cells_fit_finite(schema):
    """Documented: cells of 1e308, -1.8e308 and 5e-324 are read as numbers and each row is
    mapped to norm <= row_norm_bound; the fit succeeds (exit 0) and is finite. (The row count
    declared public is the true one, 4: any other is refused, which would assert nothing.)"""
    rows = ["a,b,label", "1e308,-1.7976931348623157e308,1", "5e-324,0,0", "0.5,-0.5,1",
            "-0.25,0.75,0"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = folder / "data.csv"
        data.write_text("\n".join(rows) + "\n")
        out = folder / "model.json"
        argv = ["fit", str(data), "--seed", "0", "--out", str(out), "--n-samples-public", "4"]
        if schema:
            (folder / "s.toml").write_text(SCHEMA)
            argv += ["--schema", str(folder / "s.toml")]
        else:
            argv += ["--target", "label", "--classes", "0,1"]
        code, _, err = _cli(argv)
        assert code == 0, err
        _check_outcome(folder, out, "fit", code, err)
        payload = json.loads(out.read_text())
        assert np.all(np.isfinite(np.asarray(payload["coef"], dtype=float)))
        assert np.all(np.isfinite(np.asarray(payload["intercept"], dtype=float)))
        assert payload["privacy"]["epsilon"] <= 1.0 * (1 + 1e-9)


# ------------------------------------------------------------------------- noisygd account

@st.composite
def account_argv(draw) -> list[str]:
    """``noisygd account`` arguments over wide public ranges (noise 1e-3..1e3, up to 1e12
    steps, Poisson rates down to 1e-6, delta down to 1e-300) and some invalid ones."""
    noise = draw(st.one_of(st.floats(-3, 3).map(lambda e: f"{10 ** e:.6g}"),
                           st.sampled_from(["0", "-1", "nan", "inf", "1e-320"])))
    steps = draw(st.one_of(st.integers(1, 10**12), st.sampled_from([0, -5])))
    delta = draw(st.one_of(st.floats(-300, -0.31).map(lambda e: f"{10 ** e:.6g}"),
                           st.sampled_from(["0", "1", "nan", "5e-324", "0.5"])))
    argv = ["account", "--noise-multiplier", noise, "--steps", str(steps), "--delta", delta,
            "--json"]
    kind = draw(st.sampled_from(["plain", "poisson", "wor", "tree"]))
    if kind == "poisson":
        rate = draw(st.one_of(st.floats(-6, 0).map(lambda e: f"{10 ** e:.6g}"),
                              st.sampled_from(["0", "1.5", "nan"])))
        argv += ["--sampling-rate", rate, "--accountant", "rdp"]
    elif kind == "wor":
        population = draw(st.integers(1, 10**6))
        argv += ["--batch-size", str(draw(st.integers(0, population + 1))), "--population",
                 str(population), "--accountant", "rdp"]
    elif kind == "tree":
        argv += ["--mechanism", "tree", "--epochs", str(draw(st.integers(0, 3)))]
    else:
        argv += ["--accountant", draw(st.sampled_from(["gdp", "zcdp", "rdp"]))]
    return argv


def _account_outcome(argv: list[str]) -> None:
    code, out, err = _cli(argv)
    if code == 0:
        payload = json.loads(out)
        assert payload["epsilon"] >= 0 and not np.isnan(payload["epsilon"]), payload
        assert payload["accountant"]
    else:
        assert code == 2, (code, err)
        assert err.startswith("noisygd account: error: "), err


@settings(**FAST, suppress_health_check=SUPPRESS)
@given(argv=account_argv())
def test_fuzz_account(argv):
    """Every ``noisygd account`` call answers (an epsilon and its accountant) or exits 2 with
    a one-line reason; nothing escapes as a traceback. Steps are bounded by 1e12 (1e6 for
    the tree mechanism, whose event lists its levels); PLD is not consulted (slow)."""
    if "--mechanism" in argv and int(argv[argv.index("--steps") + 1]) > 10**6:
        argv[argv.index("--steps") + 1] = "1000"
    _account_outcome(argv)


@pytest.mark.parametrize("noise, batch, population", [("0.1", "1", "2"), ("0.2", "10", "1000"),
                                                      ("0.15", "500", "1000"), ("0.01", "1", "2")])
def test_account_without_replacement_low_noise(noise, batch, population):
    """Without-replacement RDP raised decimal.Overflow at noise below ~0.21 (the built-in
    ``abs`` rounded in the default decimal context; requests-fuzz.md R9; found by
    hypothesis). These valid events are answered (exit 0 with an epsilon), not refused."""
    argv = ["account", "--noise-multiplier", noise, "--steps", "3", "--delta", "0.1",
            "--batch-size", batch, "--population", population, "--accountant", "rdp", "--json"]
    code, out, err = _cli(argv)
    assert code == 0, err
    payload = json.loads(out)
    assert payload["accountant"] == "rdp"
    assert payload["epsilon"] >= 0 and not np.isnan(payload["epsilon"]), payload


@pytest.mark.parametrize("argv", [
    ["--noise-multiplier", "1e-300", "--steps", "10", "--delta", "1e-5"],
    ["--noise-multiplier", "1", "--steps", "100000000000000000000", "--delta", "1e-5"],
], ids=["noise 1e-300", "steps 1e20"])
def test_account_extreme_events_answer_or_refuse(argv):
    _account_outcome(["account", *argv, "--json"])


@pytest.mark.slow
def test_fuzz_account_long():
    @settings(**{**LONG, "max_examples": 1000}, suppress_health_check=SUPPRESS)
    @given(argv=account_argv())
    def run(argv):
        if "--mechanism" in argv and int(argv[argv.index("--steps") + 1]) > 10**6:
            argv[argv.index("--steps") + 1] = "1000"
        _account_outcome(argv)
    run()


def test_predict_before_fit_missing_model_file():
    """The CLI's "predict before fit": no model file; exit 2 saying how to make one."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = folder / "d.csv"
        data.write_text("a,b\n0.1,0.2\n")
        out = folder / "p.csv"
        code, _, err = _cli(["predict", str(folder / "absent.json"), str(data), "--out",
                             str(out)])
        assert code == 2
        assert "model file not found" in err and "noisygd fit" in err
        _check_outcome(folder, out, "predict", code, err)


def test_predict_with_the_wrong_columns_names_them():
    """The CLI's "wrong width": the file lacks a column of the model's schema."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        model = _model(folder)
        data = folder / "d.csv"
        data.write_text(f"a,c\n0.1,{SECRET}\n")
        out = folder / "p.csv"
        code, _, err = _cli(["predict", str(model), str(data), "--out", str(out)])
        assert code == 2
        assert "'c'" in err or "'b'" in err  # a column is named (names are public)
        _check_outcome(folder, out, "predict", code, err)


def _draft_outcome(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = folder / "data.csv"
        data.write_bytes(content)
        out = folder / "draft.toml"
        code, _, err = _cli(["schema", "draft", str(data), "--target", "label", "--out",
                             str(out)])
        leftovers = [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]
        assert not leftovers, leftovers
        if code == 0:  # a draft (its values are data-derived and marked as such)
            text = out.read_text(encoding="utf-8")
            assert "draft = true" in text
            return
        assert code == 2, (code, err)
        assert err.startswith("noisygd schema draft: error: "), err
        assert not out.exists()


@settings(**FAST, suppress_health_check=SUPPRESS)
@given(content=csv_files())
def test_fuzz_schema_draft(content):
    """``noisygd schema draft`` on hostile files: a marked draft, or exit 2 and no file. (A
    draft quotes the data by design: it is marked DATA-DERIVED and refused by fit.)"""
    _draft_outcome(content)
