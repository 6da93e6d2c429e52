"""The UCI loaders are bundled schema files encoded by noisygd.schema.

- every bundled schema file parses, is final (no draft value), and is what ``dataset_info``
  describes (feature names, bounds, category lists, target);
- on the real files (``data`` marker): ``load_uci``'s rows equal
  :class:`~noisygd.schema.SchemaTransformer`'s on the raw cells, read by the CLI's reader
  (``read_raw_table`` with the schema's ``[file]`` table) plus the documented pre-encoding step,
  bit for bit, and so do the targets and the public centring (credit's file has two header
  lines: its cells are read by the loader's own reader, so for credit only the encoding, not
  the reading, is checked independently);
- ``examples/schemas/{adult,bank}.toml`` (written by hand from the UCI descriptions) declare the
  same bounds, transforms and vocabularies as the bundled files.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from noisygd.data import dataset_info, load_uci, public_centring, uci_data_dir
from noisygd.data.io import read_raw_table
from noisygd.data.uci import UCI_DATASETS, read_parts, schema_file, uci_schema
from noisygd.data.uci._common import seeded_split
from noisygd.data.uci.bank import derive_pdays
from noisygd.schema import (
    SchemaTransformer,
    encode_labels,
    encode_target_values,
    feature_names,
    load_schema,
)
from noisygd.schema import public_centring as schema_centring

ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = uci_data_dir()


@pytest.mark.parametrize("name", UCI_DATASETS)
def test_bundled_schema_parses_and_is_final(name: str) -> None:
    path = schema_file(name)
    assert path.is_file() and path.suffix == ".toml"
    assert path.parent.name == "schemas" and path.parent.parent.name == "uci"
    schema = load_schema(path)
    schema.check_final(str(path))
    assert schema.row_norm_bound == 1.0
    for key, col in schema.columns.items():
        assert col.source, f"[columns.{key}] of {path.name} says where its values come from"
    assert schema.target is not None and schema.target.source


@pytest.mark.parametrize("name", UCI_DATASETS)
def test_dataset_info_is_read_from_the_schema_file(name: str) -> None:
    schema = load_schema(schema_file(name))
    info = dataset_info(name)
    assert info.schema_file == str(schema_file(name))
    assert info.feature_names == tuple(feature_names(schema))
    assert info.n_features == len(info.feature_names)
    assert info.task == schema.target.task
    assert info.target_bounds == schema.target.bounds
    numeric = {k: c for k, c in schema.features.items() if c.kind == "numeric"}
    assert info.public_bounds == {k: c.bounds for k, c in numeric.items()}
    assert [f.transform for f in info.numeric_features] == [c.transform for c in numeric.values()]
    categorical = {k: c for k, c in schema.features.items() if c.kind == "categorical"}
    assert [(f.name, list(f.categories)) for f in info.categorical_features] == [
        (k, list(c.levels)) for k, c in categorical.items()]


@pytest.mark.parametrize("name", UCI_DATASETS)
@pytest.mark.parametrize("bound", [1.0, 2.5])
def test_public_centring_is_the_schema_s(name: str, bound: float) -> None:
    a = public_centring(name, bound)
    b = schema_centring(uci_schema(name, bound))
    assert a.centre.tobytes() == b.centre.tobytes()
    assert (a.radius, a.intercept_scale) == (b.radius, b.intercept_scale)
    assert uci_schema(name, bound).row_norm_bound == bound
    # the only declaration that changes with the bound
    assert uci_schema(name, bound).model_dump(exclude={"row_norm_bound"}) == \
        uci_schema(name).model_dump(exclude={"row_norm_bound"})


def _targets(name: str, frame: pd.DataFrame) -> np.ndarray:
    schema = uci_schema(name)
    col = frame[schema.target.name]
    if schema.target.bounds is None:
        return encode_labels(schema, col).astype(np.float64)
    lo, hi = schema.target.bounds
    return (np.clip(encode_target_values(schema, col), lo, hi) - lo) / (hi - lo)


def _raw(name: str) -> list[pd.DataFrame]:
    """The raw cells, read here as a user would: the CLI's reader with the schema's [file]
    options, then the documented pre-encoding step (none for bike)."""
    file = uci_schema(name).file.model_dump()
    d = DATA_DIR
    if name == "adult":
        out = []
        for f in ("adult/adult.data.gz", "adult/adult.test.gz"):
            frame = read_raw_table(d / f, **file)
            out.append(frame.assign(income=frame["income"].str.rstrip(".")))
        return out
    if name == "bank":
        return [derive_pdays(read_raw_table(d / "bank_marketing/bank-full.csv.gz", **file))]
    if name == "wine":
        return [read_raw_table(d / f"wine_quality/winequality-{c}.csv", **file).assign(is_red=r)
                for c, r in (("red", 1.0), ("white", 0.0))]
    if name == "bike":
        return [read_raw_table(d / "bike_sharing/hour.csv", **file)]
    assert name == "credit"  # two header lines: the loader's reader (read_parts)
    return [p.frame for p in read_parts("credit", d)]


@pytest.mark.data
@pytest.mark.parametrize("name", UCI_DATASETS)
@pytest.mark.parametrize("bound", [1.0, 2.5])
def test_loader_equals_the_schema_transformer_on_the_raw_file(name: str, bound: float) -> None:
    frames = _raw(name)
    for frame, part in zip(frames, read_parts(name, DATA_DIR), strict=True):
        pd.testing.assert_frame_equal(frame, part.frame)  # the loader reads the same cells
    schema = uci_schema(name, bound)
    transformer = SchemaTransformer(schema)
    X = [transformer.fit_transform(f) for f in frames]
    y = [_targets(name, f) for f in frames]
    X_tr, y_tr, X_te, y_te = load_uci(name, DATA_DIR, split_seed=3, row_norm_bound=bound)
    if name == "adult":
        expected = X
        got, got_y = [X_tr, X_te], [y_tr, y_te]
    else:
        Z, t = np.vstack(X), np.concatenate(y)
        tr, te = seeded_split(Z.shape[0], 0.2, 3)
        expected, y = [Z[tr], Z[te]], [t[tr], t[te]]
        got, got_y = [X_tr, X_te], [y_tr, y_te]
    for a, b in zip(expected, got, strict=True):
        assert a.shape == b.shape and a.tobytes() == b.tobytes()
    for a, b in zip(y, got_y, strict=True):
        assert a.tobytes() == b.tobytes()
    assert list(transformer.get_feature_names_out()) == list(dataset_info(name).feature_names)
    centring = transformer.public_centring()
    for M in got:
        assert np.all(np.linalg.norm(M, axis=1) <= bound)
        dist = np.linalg.norm(M - centring.centre, axis=1)
        assert dist.max() <= centring.radius * (1 + 1e-12)


@pytest.mark.data
def test_undeclared_codes_encode_as_zero_blocks() -> None:
    """adult's '?' and credit's undocumented codes: all-zero blocks (missing/unknown = zeros)."""
    info = dataset_info("credit")
    X, _, Xt, _ = load_uci("credit", DATA_DIR)
    M = np.vstack([X, Xt])
    raw = read_parts("credit", DATA_DIR)[0].frame
    tr, te = seeded_split(len(raw), 0.2, 0)
    raw = raw.iloc[np.concatenate([tr, te])]
    for col, declared in (("EDUCATION", {"1", "2", "3", "4"}), ("MARRIAGE", {"1", "2", "3"})):
        idx = [info.feature_names.index(f"{col}={v}") for v in sorted(declared)]
        zero = M[:, idx].sum(axis=1) == 0
        np.testing.assert_array_equal(zero, ~raw[col].str.strip().isin(declared).to_numpy())
        assert zero.any()


EXAMPLES = ROOT / "examples" / "schemas"


@pytest.mark.parametrize(("name", "skip"), [
    ("adult", set()),
    # the loader splits pdays = -1 into an indicator first; the example declares pdays in
    # [-1, 1000] on the raw column
    ("bank", {"pdays", "previously_contacted"}),
])
def test_examples_declare_what_the_bundled_schemas_declare(name: str, skip: set[str]) -> None:
    """The examples are written by hand (as a user would, from the UCI description); they agree
    with the bundled files on every bound, transform and vocabulary. They may differ in what a
    missing value becomes (the adult example uses an indicator column, the loader zeros)."""
    example = load_schema(EXAMPLES / f"{name}.toml")
    bundled = uci_schema(name)
    assert example.target.name == bundled.target.name
    assert sorted(map(str, example.target.labels)) == sorted(map(str, bundled.target.labels))
    assert set(example.features) - skip == set(bundled.features) - skip
    for key, col in bundled.features.items():
        if key in skip:
            continue
        other = example.columns[key]
        assert other.kind == col.kind, key
        if col.kind == "numeric":
            assert (other.bounds, other.transform) == (col.bounds, col.transform), key
        else:
            assert sorted(map(str, other.levels)) == sorted(map(str, col.levels)), key


def test_bundled_schema_files_ship_with_the_package() -> None:
    """Package data: the files sit next to the loaders (setuptools package-data lists them)."""
    import noisygd.data.uci as uci

    folder = Path(uci.__file__).parent / "schemas"
    assert sorted(p.stem for p in folder.glob("*.toml")) == sorted(UCI_DATASETS)
    # setuptools ships them only if [tool.setuptools.package-data] lists them
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "data/uci/schemas/*.toml" in project["tool"]["setuptools"]["package-data"]["noisygd"]
