"""A schema's encoding on Dask (noisygd.schema.partitionwise): partition-wise, the same model as in
memory within 1e-10 on the same rows, from a CSV glob and a Parquet directory, through
``noisygd fit --schema --scheduler`` and ``fit_table``; undeclared levels as in memory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed")
dd = pytest.importorskip("dask.dataframe")

from noisygd.cli import main  # noqa: E402
from noisygd.data.io import DataFileError, read_raw_table  # noqa: E402
from noisygd.ledger import Ledger  # noqa: E402
from noisygd.oracles.dask import oracle_defaults  # noqa: E402
from noisygd.schema import SchemaError, encode_features, parse_schema  # noqa: E402
from noisygd.schema.fitting import fit_table  # noqa: E402
from noisygd.schema.partitionwise import (  # noqa: E402
    collection_files,
    encode_features_partitionwise,
    read_raw_collection,
)

RTOL = 1e-10
N = 600
SCHEMA = """
row_norm_bound = 1.0

[target]
name = "{target}"
{target_decl}

[columns.age]
kind = "numeric"
bounds = [18, 90]
missing = "indicator"

[columns.job]
kind = "categorical"
levels = ["admin", "tech", "other"]
unknown = "other"

[columns.colour]
kind = "categorical"
levels = ["red", "green"]
unknown = "zeros"
missing = "indicator"

[columns.size]
kind = "ordinal"
levels = ["S", "M", "L"]
"""


def _table(seed: int = 0) -> pd.DataFrame:
    """Raw cells: missing values, levels the schema does not declare (``clerk``, ``blue``:
    mapped by ``unknown``), out-of-bounds ages (clipped), string labels."""
    rng = np.random.default_rng(seed)
    age = rng.integers(10, 100, size=N).astype(np.float64)
    age[rng.random(N) < 0.05] = np.nan
    job = rng.choice(["admin", "tech", "other", "clerk"], size=N)
    colour = rng.choice(["red", "green", "blue", ""], size=N)
    size = rng.choice(["S", "M", "L"], size=N)
    score = (np.where(job == "tech", 1.0, -0.5) + np.where(size == "L", 1.0, 0.0)
             + rng.logistic(size=N))
    return pd.DataFrame({"age": age, "job": job, "colour": colour, "size": size,
                         "label": np.where(score > 0.3, "yes", "no"),
                         "value": np.round(score * 3.0, 3)})


def _schema(path: Path, regression: bool = False) -> Path:
    decl = ('bounds = [-6.0, 6.0]' if regression else 'labels = ["no", "yes"]')
    target = "value" if regression else "label"
    path.write_text(SCHEMA.format(target=target, target_decl=decl)
                    + ('\n[columns.label]\nkind = "ignore"\n' if regression else
                       '\n[columns.value]\nkind = "ignore"\n'))
    return path


def _write_csv_parts(table: pd.DataFrame, folder: Path, parts: int) -> str:
    folder.mkdir()
    for k, chunk in enumerate(np.array_split(np.arange(len(table)), parts)):
        table.iloc[chunk].to_csv(folder / f"part-{k}.csv", index=False)
    return str(folder / "part-*.csv")


def _close(a: Any, b: Any) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b))) <= RTOL * max(float(np.max(np.abs(b))), 1e-300)


@pytest.mark.parametrize("regression", [False, True], ids=["labels", "bounds"])
def test_cli_fit_with_schema_on_a_csv_glob_equals_the_in_memory_fit(client, tmp_path,
                                                                    regression) -> None:
    table = _table()
    table.to_csv(tmp_path / "all.csv", index=False)
    glob = _write_csv_parts(table, tmp_path / "parts", 3)
    schema = _schema(tmp_path / "s.toml", regression)
    common = ["--schema", str(schema), "--epsilon", "1", "--seed", "4", "--max-iter", "8"]
    assert main(["fit", str(tmp_path / "all.csv"), *common, "--out",
                 str(tmp_path / "mem.json")]) == 0
    assert main(["fit", glob, *common, "--scheduler", client.scheduler.address, "--out",
                 str(tmp_path / "dask.json")]) == 0
    mem, dk = (json.loads((tmp_path / f).read_text()) for f in ("mem.json", "dask.json"))
    assert _close(dk["coef"], mem["coef"]) and _close(dk["intercept"], mem["intercept"])
    assert dk["privacy"] == mem["privacy"] and dk["event"] == mem["event"]
    assert dk["feature_names"] == mem["feature_names"] and dk["schema"] == mem["schema"]


def test_fit_table_on_a_parquet_directory_equals_the_in_memory_fit(client, tmp_path) -> None:
    table = _table(1)
    table.to_parquet(tmp_path / "all.parquet")
    folder = tmp_path / "pq"
    folder.mkdir()
    for k, chunk in enumerate(np.array_split(np.arange(N), 7)):  # natural order: 2 < 10
        table.iloc[chunk].to_parquet(folder / f"part.{k * 5}.parquet")
    assert [f.name for f in collection_files(folder)][:3] == ["part.0.parquet",
                                                              "part.5.parquet",
                                                              "part.10.parquet"]
    schema = parse_schema(_schema_dict(tmp_path))
    params = {"epsilon": 1.0, "random_state": 2, "max_iter": 8}
    mem, mem_file = fit_table(schema, read_raw_table(tmp_path / "all.parquet"), params=params)
    frame = read_raw_collection(folder)
    assert frame.npartitions == 7
    with oracle_defaults(client=client):
        dk, dk_file = fit_table(schema, frame, params=params)
    assert _close(dk.coef_, mem.coef_) and _close(dk.intercept_, mem.intercept_)
    assert dk_file["privacy"] == mem_file["privacy"]
    # the encoded rows themselves: the in-memory encoder's, partition by partition
    encoded = encode_features_partitionwise(schema, frame).compute()
    assert list(encoded.columns) == dk_file["feature_names"]
    assert np.array_equal(encoded.to_numpy(), encode_features(schema, read_raw_table(
        tmp_path / "all.parquet")))


def _schema_dict(tmp_path: Path) -> dict[str, Any]:
    import tomllib

    return tomllib.loads(_schema(tmp_path / "d.toml").read_text())


def test_undeclared_levels_are_refused_as_in_memory(client, tmp_path) -> None:
    table = _table(2)
    glob = _write_csv_parts(table, tmp_path / "parts", 2)
    strict = _schema_dict(tmp_path)
    strict["columns"]["job"].pop("unknown")  # "clerk" is then an error, as in memory
    schema = parse_schema(strict)
    with pytest.raises(SchemaError, match="not one of the levels") as in_memory:
        encode_features(schema, read_raw_table(tmp_path / "parts" / "part-0.csv"))
    ledger = tmp_path / "ledger.sqlite"
    with Ledger(ledger) as opened:
        opened.set_budget("d", 5.0, 1e-5)
    with pytest.raises(SchemaError, match="not one of the levels") as on_dask, \
            oracle_defaults(client=client):
        fit_table(schema, read_raw_collection(glob),
                  params={"epsilon": 1.0, "ledger": str(ledger), "dataset": "d"})
    assert str(on_dask.value) == str(in_memory.value)  # raised on a worker, names no cell
    with Ledger(ledger) as opened:  # refused while encoding: before the ledger's record
        assert opened.releases("d") == []
    with pytest.raises(DataFileError, match="no file matches"):
        read_raw_collection(str(tmp_path / "none-*.csv"))


def test_a_pipeline_with_a_schema_transformer_fits_a_dask_dataframe(client, tmp_path) -> None:
    """SchemaTransformer encodes a Dask DataFrame partition-wise; the estimator after it
    fits on the cluster: the in-memory pipeline's model."""
    from sklearn.pipeline import make_pipeline

    from noisygd.estimators import DPLogisticRegression
    from noisygd.schema import SchemaTransformer, public_centring

    table = _table(3)
    raw = read_raw_table(_write_csv(table, tmp_path / "t.csv"))
    schema = parse_schema(_schema_dict(tmp_path))
    features = raw.drop(columns=["label", "value"])

    def pipeline() -> Any:
        return make_pipeline(SchemaTransformer(schema), DPLogisticRegression(
            epsilon=1.0, classes=["no", "yes"], max_iter=8, random_state=5,
            row_norm_bound=1.0, feature_bounds=public_centring(schema)))

    mem = pipeline().fit(features, raw["label"].to_numpy(dtype=object))
    frame = dd.from_pandas(raw, npartitions=4)
    with oracle_defaults(client=client):
        dk = pipeline().fit(frame.drop(columns=["label", "value"]), frame["label"])
    est_mem, est_dk = mem[-1], dk[-1]
    assert _close(est_dk.coef_, est_mem.coef_) and _close(est_dk.intercept_,
                                                          est_mem.intercept_)
    assert est_dk.privacy_.event == est_mem.privacy_.event


def _write_csv(table: pd.DataFrame, path: Path) -> Path:
    table.to_csv(path, index=False)
    return path
