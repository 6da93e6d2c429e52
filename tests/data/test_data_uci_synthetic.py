"""Tests of load_uci on small hand-written files in the UCI formats (no real data needed).

They check the encoding of known rows against the closed form of docs/data.md, that every
preprocessing step is row-local (changing one row changes only that row's features, and never
the split), and the errors for bad names, arguments, directories and files.
"""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import numpy as np
import pytest

from noisygd.data import UCI_DATASETS, DataFileError, dataset_info, load_uci

ADULT_ROWS = [
    "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, "
    "Male, 2174, 0, 40, United-States, <=50K",
    "52, Self-emp-inc, 287927, HS-grad, 9, Married-civ-spouse, Exec-managerial, Wife, White, "
    "Female, 15024, 0, 40, United-States, >50K",
    "23, ?, 122272, Bachelors, 13, Never-married, ?, Own-child, White, Female, 0, 0, 30, ?, "
    "<=50K",
]
ADULT_TEST_ROWS = [
    "25, Private, 226802, 11th, 7, Never-married, Machine-op-inspct, Own-child, Black, Male, 0, "
    "0, 40, United-States, <=50K.",
    "44, Private, 160323, Some-college, 10, Married-civ-spouse, Machine-op-inspct, Husband, "
    "Black, Male, 7688, 0, 40, United-States, >50K.",
]
WINE_HEADER = (
    '"fixed acidity";"volatile acidity";"citric acid";"residual sugar";"chlorides";'
    '"free sulfur dioxide";"total sulfur dioxide";"density";"pH";"sulphates";"alcohol";"quality"'
)


def _write_adult(root: Path, rows=ADULT_ROWS, test_rows=ADULT_TEST_ROWS, gz: bool = True) -> Path:
    d = root / "adult"
    d.mkdir(parents=True, exist_ok=True)
    data = ("\n".join(rows) + "\n\n").encode()
    test = ("|1x3 Cross validator\n" + "\n".join(test_rows) + "\n\n").encode()
    if gz:
        (d / "adult.data.gz").write_bytes(gzip.compress(data))
        (d / "adult.test.gz").write_bytes(gzip.compress(test))
    else:
        (d / "adult.data").write_bytes(data)
        (d / "adult.test").write_bytes(test)
    return root


def _write_wine(root: Path, n_red: int = 6, n_white: int = 9, seed: int = 0) -> Path:
    d = root / "wine_quality"
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for colour, n in (("red", n_red), ("white", n_white)):
        lines = [WINE_HEADER]
        for _ in range(n):
            vals = [rng.uniform(4, 12), rng.uniform(0.1, 1), rng.uniform(0, 1), rng.uniform(1, 20),
                    rng.uniform(0.01, 0.2), rng.uniform(5, 60), rng.uniform(20, 200),
                    rng.uniform(0.99, 1.0), rng.uniform(3, 3.8), rng.uniform(0.3, 1),
                    rng.uniform(9, 14)]
            lines.append(";".join(f"{v:.4f}" for v in vals) + f";{rng.integers(3, 9)}")
        (d / f"winequality-{colour}.csv").write_text("\n".join(lines) + "\n")
    return root


def _col(name: str, feature: str) -> int:
    return dataset_info(name).feature_names.index(feature)


def test_adult_rows_match_the_documented_closed_form(tmp_path: Path) -> None:
    root = _write_adult(tmp_path)
    X, y, Xt, yt = load_uci("adult", root)
    info = dataset_info("adult")
    assert X.shape == (3, info.n_features) and Xt.shape == (2, info.n_features)
    np.testing.assert_array_equal(y, [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(yt, [0.0, 1.0])
    # Row 0, by hand: z = (t(clip(x)) - t(l)) / (t(u) - t(l)), then times B / sqrt(14).
    s = 1.0 / math.sqrt(14)
    log_scale = lambda x, lo, hi: (math.log1p(x) - math.log1p(lo)) / (  # noqa: E731
        math.log1p(hi) - math.log1p(lo)
    )
    expected = {
        "age": (39 - 17) / (90 - 17),
        "fnlwgt": log_scale(77516, 1, 1e7),
        "education-num": (13 - 1) / 15,
        "capital-gain": log_scale(2174, 0, 99999),
        "capital-loss": 0.0,
        "hours-per-week": (40 - 1) / 98,
        "workclass=State-gov": 1.0,
        "education=Bachelors": 1.0,
        "marital-status=Never-married": 1.0,
        "occupation=Adm-clerical": 1.0,
        "relationship=Not-in-family": 1.0,
        "race=White": 1.0,
        "sex=Male": 1.0,
        "native-country=United-States": 1.0,
    }
    row = np.zeros(info.n_features)
    for feature, value in expected.items():
        row[_col("adult", feature)] = value * s
    np.testing.assert_allclose(X[0], row, rtol=1e-13, atol=1e-15)
    # '?' gives all-zero blocks in workclass, occupation and native-country, and nothing else.
    for feature in ("workclass", "occupation", "native-country"):
        block = [i for i, f in enumerate(info.feature_names) if f.startswith(feature + "=")]
        assert X[2, block].sum() == 0.0
    # Of 14 features: 3 unknown blocks, and capital-gain = capital-loss = 0 at their lower bound.
    assert np.count_nonzero(X[2]) == 14 - 3 - 2


def test_row_norm_bound_scales_linearly(tmp_path: Path) -> None:
    root = _write_adult(tmp_path)
    X1 = load_uci("adult", root)[0]
    X3 = load_uci("adult", root, row_norm_bound=3.0)[0]
    np.testing.assert_allclose(X3, 3.0 * X1, rtol=1e-14)
    assert np.all(np.linalg.norm(X3, axis=1) <= 3.0)


def test_uncompressed_files_are_accepted(tmp_path: Path) -> None:
    a = load_uci("adult", _write_adult(tmp_path / "gz"))
    b = load_uci("adult", _write_adult(tmp_path / "plain", gz=False))
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(u, v)


def test_encoding_is_row_local(tmp_path: Path) -> None:
    """Changing one row (to extreme values) changes that row's features and nobody else's."""
    base = load_uci("adult", _write_adult(tmp_path / "a"))[0]
    rows = list(ADULT_ROWS)
    rows[1] = ("90, Never-worked, 1484705, Doctorate, 16, Widowed, Armed-Forces, Husband, "
               "Other, Male, 99999, 4356, 99, Holand-Netherlands, >50K")
    changed = load_uci("adult", _write_adult(tmp_path / "b", rows=rows))[0]
    np.testing.assert_array_equal(np.delete(base, 1, axis=0), np.delete(changed, 1, axis=0))
    assert not np.array_equal(base[1], changed[1])


def _positions(root: Path, split: tuple[np.ndarray, ...]) -> list[list[int]]:
    """The file position (red rows, then white) of every row of each array of ``split``,
    found by matching it against the encoding of all rows in file order."""
    from noisygd.data.uci import read_parts, uci_schema
    from noisygd.schema import SchemaTransformer

    encoder = SchemaTransformer(uci_schema("wine"))
    every = np.vstack([encoder.fit_transform(p.frame) for p in read_parts("wine", root)])
    return [[int(np.flatnonzero(np.all(every == row, axis=1))[0]) for row in part]
            for part in split]


def test_split_does_not_depend_on_values(tmp_path: Path) -> None:
    """Same n and seed, different values: the same positions go to train and to test."""
    root_a, root_b = _write_wine(tmp_path / "a", seed=0), _write_wine(tmp_path / "b", seed=1)
    a = load_uci("wine", root_a, split_seed=5)
    b = load_uci("wine", root_b, split_seed=5)
    assert not np.array_equal(a[0], b[0])
    n = 15
    assert a[0].shape[0] == n - math.ceil(0.2 * n) and a[2].shape[0] == math.ceil(0.2 * n)
    train_a, test_a = _positions(root_a, (a[0], a[2]))
    train_b, test_b = _positions(root_b, (b[0], b[2]))
    assert sorted(train_a + test_a) == list(range(n))  # every row once: a split
    assert (train_a, test_a) == (train_b, test_b)
    # is_red, the last feature, follows the position (rows 0-5 are the red file's)
    np.testing.assert_array_equal(a[0][:, -1] > 0, np.array(train_a) < 6)


def test_wine_target_is_quality_over_ten(tmp_path: Path) -> None:
    root = _write_wine(tmp_path)
    _, y, _, yt = load_uci("wine", root, test_size=0.4)
    q = np.concatenate([y, yt]) * 10
    np.testing.assert_allclose(q, np.round(q), atol=1e-12)
    assert set(np.round(q).astype(int)) <= set(range(3, 9))


def test_unknown_name_lists_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown UCI dataset 'iris'") as err:
        load_uci("iris", tmp_path)
    for name in UCI_DATASETS:
        assert name in str(err.value)
    with pytest.raises(ValueError, match="valid names"):
        dataset_info("iris")
    assert set(UCI_DATASETS) == {"adult", "bank", "credit", "wine", "bike"}


def test_missing_data_dir_and_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match="data directory not found"):
        load_uci("adult", tmp_path / "nowhere")
    expected = {
        "adult": "adult.data.gz",
        "bank": "bank-full.csv.gz",
        "credit": "default of credit card clients.csv.gz",
        "wine": "winequality-red.csv",
        "bike": "hour.csv",
    }
    for name, fname in expected.items():
        with pytest.raises(DataFileError, match="expected data file") as err:
            load_uci(name, tmp_path)
        assert fname in str(err.value)
    # A file instead of a directory.
    f = tmp_path / "file.txt"
    f.write_text("x")
    with pytest.raises(DataFileError, match="not a directory"):
        load_uci("adult", f)


def test_corrupt_gzip_is_reported_with_its_path(tmp_path: Path) -> None:
    root = _write_adult(tmp_path)
    bad = root / "adult" / "adult.data.gz"
    data = bad.read_bytes()
    bad.write_bytes(data[: len(data) // 2])  # truncated stream
    with pytest.raises(DataFileError, match=r"adult\.data\.gz"):
        load_uci("adult", root)
    bad.write_bytes(b"this is not gzip at all")
    with pytest.raises(DataFileError, match="corrupt"):
        load_uci("adult", root)


def test_bad_content_is_reported(tmp_path: Path) -> None:
    """Errors come from noisygd.schema (the CLI's messages): they name the file, the column and
    the fix, and never quote a cell of the data."""
    rows = list(ADULT_ROWS)
    rows[1] = rows[1].replace(">50K", "rich")
    with pytest.raises(DataFileError, match=r"target column 'income' of .*adult\.data.*not "
                       r"in \[target\] labels") as err:
        load_uci("adult", _write_adult(tmp_path / "a", rows=rows))
    assert "rich" not in str(err.value)
    rows = list(ADULT_ROWS)
    rows[0] = rows[0].replace("39,", "thirty-nine,", 1)
    with pytest.raises(DataFileError, match=r"column 'age' of .*adult\.data.*not a finite "
                       r"number") as err:
        load_uci("adult", _write_adult(tmp_path / "b", rows=rows))
    assert "thirty-nine" not in str(err.value)
    # A file with the wrong columns: wine's header with 'score' for 'quality'.
    root = _write_wine(tmp_path / "c")
    red = root / "wine_quality" / "winequality-red.csv"
    red.write_text(red.read_text().replace('"quality"', '"score"'))
    with pytest.raises(DataFileError, match=r"winequality-red.csv has columns the schema does "
                       r"not declare: 'score'"):
        load_uci("wine", root)
    # A column the schema does not declare (the schema's columns are the whole header).
    red.write_text(red.read_text().replace('"score"', '"quality"').replace('"pH"', '"acidity"'))
    with pytest.raises(DataFileError, match="does not declare: 'acidity'"):
        load_uci("wine", root)
    # A declared feature column missing from the file.
    lines = [r.split(";") for r in red.read_text().splitlines()]
    red.write_text("\n".join(";".join(r[:8] + r[9:]) for r in lines) + "\n")  # drop column 9
    with pytest.raises(DataFileError, match=r"lacks the column\(s\) 'pH'"):
        load_uci("wine", root)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"split_seed": -1}, ValueError, "split_seed"),
        ({"split_seed": 1.5}, TypeError, "split_seed"),
        ({"split_seed": True}, TypeError, "split_seed"),
        ({"test_size": 0.0}, ValueError, "test_size"),
        ({"test_size": 1.0}, ValueError, "test_size"),
        ({"test_size": "0.2"}, TypeError, "test_size"),
        ({"row_norm_bound": 0.0}, ValueError, "row_norm_bound"),
        ({"row_norm_bound": float("inf")}, ValueError, "row_norm_bound"),
        ({"row_norm_bound": None}, TypeError, "row_norm_bound"),
    ],
)
def test_bad_arguments(tmp_path: Path, kwargs: dict, error: type, message: str) -> None:
    """One policy (noisygd._checks): wrong type -> TypeError, bad value -> ValueError."""
    root = _write_wine(tmp_path)
    with pytest.raises(error, match=message):
        load_uci("wine", root, **kwargs)


@pytest.mark.parametrize("name", ["adult", "bank", "credit", "wine", "bike"])
def test_dataset_info_is_consistent(name: str) -> None:
    info = dataset_info(name)
    assert info.n_features == len(info.feature_names) == len(set(info.feature_names))
    n_onehot = sum(len(c.categories) for c in info.categorical_features)
    assert info.n_features == len(info.numeric_features) + n_onehot
    assert "UCI Machine Learning Repository" in info.source and "doi.org" in info.source
    for f in info.numeric_features:
        assert f.lower < f.upper and f.source
        assert info.public_bounds[f.name] == (f.lower, f.upper)
    assert (info.task == "regression") == (info.target_bounds is not None)
    assert info.split_rule and info.files and info.n_rows


def test_uci_data_dir_argument_then_environment_then_checkout_layout(monkeypatch, tmp_path):
    """Where the data folder is looked for; resolves paths only, so it needs no data (no
    ``data`` marker: it passes, and must pass, in a clone with no shared data folder)."""
    from noisygd.data import uci_data_dir

    monkeypatch.setenv("NOISYGD_DATA_DIR", str(tmp_path / "env"))
    assert uci_data_dir(tmp_path / "arg") == tmp_path / "arg"
    assert uci_data_dir() == tmp_path / "env"
    monkeypatch.delenv("NOISYGD_DATA_DIR")
    repo = Path(__file__).resolve().parents[2]
    assert uci_data_dir().resolve() == (repo / ".." / "shared" / "data" / "uci").resolve()
