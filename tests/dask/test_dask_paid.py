"""Paid statistics on Dask (noisygd.schema.partitionwise.resolve_paid_partitionwise): exact
per-partition counts added on the client, noise drawn there from the in-memory generator, so
that the resolved schema, the release, the fit and the ledger records equal the in-memory ones
for 1, 2 and 7 partitions."""

from __future__ import annotations

import dataclasses
import json
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed")
pytest.importorskip("dask.dataframe")

from noisygd.cli import main
from noisygd.data.io import read_raw_table
from noisygd.ledger import Ledger
from noisygd.oracles.dask import oracle_defaults
from noisygd.schema import SchemaError, parse_schema
from noisygd.schema.paid import (
    CLIP_COUNTS,
    paid_clip_counts,
    paid_histogram_counts,
    paid_rng,
    plan_paid,
    resolve_paid,
)
from noisygd.schema.partitionwise import (
    paid_counts_partitionwise,
    read_raw_collection,
    resolve_paid_partitionwise,
)

N = 500
#: Every kind of paid statistic: a target's bounds, a column's bounds and its clipped-value
#: counts, a declared column's clipped-value counts, a categorical column's levels (one of
#: them, "rare", absent from the data).
PAID = """
row_norm_bound = 1.0

[privacy]
preprocessing_share = 0.3

[target]
name = "value"
bounds = "private"
range = [-20.0, 20.0]

[columns.age]
kind = "numeric"
bounds = "private"
range = [0, 200]
missing = "indicator"
count_clipped = true

[columns.income]
kind = "numeric"
bounds = [0, 50]
count_clipped = true

[columns.job]
kind = "categorical"
levels = "private"
vocabulary = ["admin", "tech", "other", "rare"]
unknown = "other"

[columns.label]
kind = "ignore"
"""
#: The same columns, for a classifier (the CLI's fit).
PAID_CLASSIFIER = PAID.replace('name = "value"\nbounds = "private"\nrange = [-20.0, 20.0]',
                               'name = "label"\nlabels = ["no", "yes"]').replace(
    '[columns.label]', '[columns.value]')


def _table() -> pd.DataFrame:
    """Raw cells: missing ages, incomes outside their declared bounds, undeclared jobs."""
    rng = np.random.default_rng(0)
    age = rng.integers(10, 100, size=N).astype(np.float64)
    age[rng.random(N) < 0.05] = np.nan
    income = np.round(rng.normal(30.0, 15.0, size=N), 2)
    job = rng.choice(["admin", "tech", "other", "clerk"], size=N)
    value = np.round(np.where(job == "tech", 1.0, -0.5) + income / 20.0
                     + rng.logistic(size=N), 3)
    return pd.DataFrame({"age": age, "income": income, "job": job, "value": value,
                         "label": np.where(value > 1.0, "yes", "no")})


def _files(tmp_path: Path, parts: int) -> tuple[Path, str]:
    """The table as one CSV file, and as a glob of ``parts`` CSV files (in row order)."""
    table = _table()
    whole = tmp_path / "all.csv"
    table.to_csv(whole, index=False)
    folder = tmp_path / "parts"
    folder.mkdir()
    for k, chunk in enumerate(np.array_split(np.arange(N), parts)):
        table.iloc[chunk].to_csv(folder / f"part-{k}.csv", index=False)
    return whole, str(folder / "part-*.csv")


@pytest.mark.parametrize("parts", [1, 2, 7])
def test_a_paid_schema_resolves_on_dask_as_in_memory(client, tmp_path, parts) -> None:
    whole, glob = _files(tmp_path, parts)
    schema = parse_schema(tomllib.loads(PAID))
    plan = plan_paid(schema, epsilon=1.0, delta=1e-5, relation="replace_one")
    frame = read_raw_collection(glob)
    assert frame.npartitions == parts
    in_memory = read_raw_table(whole)
    with oracle_defaults(client=client):
        counts = paid_counts_partitionwise(schema, frame, plan)
        resolved, release = resolve_paid_partitionwise(schema, frame, plan,
                                                       rng=paid_rng(3, False))
    # the exact counts are those of all the rows (the release's only data-dependent input)
    expected = paid_histogram_counts(schema, in_memory, plan)
    assert len(counts) == len(expected) == 3
    assert all(np.array_equal(a, b) for a, b in zip(counts, expected, strict=True))
    (job,) = [c for c, p in zip(counts, [c for c in plan.columns
                                          if c.statistic != CLIP_COUNTS], strict=True)
              if p.name == "job"]
    assert job.tolist() == [int(np.sum(in_memory["job"] == v))
                                  for v in ("admin", "tech", "other", "rare")]
    mem_resolved, mem_release = resolve_paid(schema, in_memory, plan, rng=paid_rng(3, False))
    assert resolved.to_dict() == mem_resolved.to_dict()
    assert release == mem_release
    assert release.to_dict(schema) == mem_release.to_dict(schema)
    assert [c.event for c in release.columns] == plan.events
    clipped = [c for c in release.columns if c.statistic == CLIP_COUNTS]
    assert [c.name for c in clipped] == ["age", "income"]
    # the income counts are against its declared bounds: compare with the exact ones
    exact = paid_clip_counts(schema, in_memory, plan, [(0.0, 50.0)] * 2)[1]
    income = _table()["income"].to_numpy()
    assert exact.tolist() == [int(np.sum(income < 0)), int(np.sum(income > 50))]


def _ledger_rows(path: Path) -> list[dict[str, Any]]:
    with Ledger(path) as ledger:
        return [{k: v for k, v in dataclasses.asdict(r).items()
                 if k not in ("id", "time", "settled_at")} for r in ledger.releases("d")]


def test_cli_fit_with_a_paid_schema_on_a_csv_glob_equals_the_in_memory_fit(client,
                                                                           tmp_path) -> None:
    whole, glob = _files(tmp_path, 3)
    schema = tmp_path / "paid.toml"
    schema.write_text(PAID_CLASSIFIER)
    assert "private" in PAID_CLASSIFIER and 'name = "label"' in PAID_CLASSIFIER
    ledgers = {k: tmp_path / f"{k}.db" for k in ("mem", "dask")}
    for path in ledgers.values():
        with Ledger(path) as ledger:
            ledger.set_budget("d", 5.0, 1e-5)
    common = ["--schema", str(schema), "--epsilon", "1", "--seed", "4", "--max-iter", "8",
              "--dataset", "d"]
    assert main(["fit", str(whole), *common, "--ledger", str(ledgers["mem"]), "--out",
                 str(tmp_path / "mem.json")]) == 0
    assert main(["fit", glob, *common, "--ledger", str(ledgers["dask"]), "--scheduler",
                 client.scheduler.address, "--out", str(tmp_path / "dask.json")]) == 0
    mem, dk = (json.loads((tmp_path / f).read_text()) for f in ("mem.json", "dask.json"))
    scale = max(float(np.max(np.abs(mem["coef"]))), float(np.max(np.abs(mem["intercept"]))))
    assert np.max(np.abs(np.subtract(dk["coef"], mem["coef"]))) <= 1e-10 * scale
    assert np.max(np.abs(np.subtract(dk["intercept"], mem["intercept"]))) <= 1e-10 * scale
    for key in ("schema", "schema_declared", "clipped_counts", "event", "privacy"):
        assert dk[key] == mem[key], key
    strip = ("ledger_release",)
    assert ({k: v for k, v in dk["paid"].items() if k not in strip}
            == {k: v for k, v in mem["paid"].items() if k not in strip})
    rows = _ledger_rows(ledgers["dask"])
    assert rows == _ledger_rows(ledgers["mem"])
    assert rows[0]["algorithm"] == "schema/private_statistics"


def test_a_refused_cell_records_nothing_on_dask(client, tmp_path) -> None:
    """A refused cell raises in the counting pass, before any noise is drawn: the paid
    release recorded before it is withdrawn, leaving the ledger as in memory (where the
    cells are checked before the record)."""
    _, glob = _files(tmp_path, 2)
    bad = read_raw_table(Path(glob).parent / "part-1.csv")
    bad.loc[bad.index[3], "age"] = "young"
    bad.to_csv(Path(glob).parent / "part-1.csv", index=False)
    ledger = tmp_path / "l.db"
    with Ledger(ledger) as opened:
        opened.set_budget("d", 5.0, 1e-5)
    from noisygd.schema.fitting import fit_table

    with pytest.raises(SchemaError, match="age"), oracle_defaults(client=client):
        fit_table(parse_schema(tomllib.loads(PAID)), read_raw_collection(glob),
                  params={"epsilon": 1.0, "ledger": str(ledger), "dataset": "d"})
    assert _ledger_rows(ledger) == []


def test_the_paid_release_is_recorded_before_the_counting_pass_on_dask(client, tmp_path,
                                                                       monkeypatch) -> None:
    """docs/ledger.md: a release is recorded before the data it pays for is read."""
    from noisygd.schema import partitionwise
    from noisygd.schema.fitting import fit_table

    _, glob = _files(tmp_path, 2)
    ledger = tmp_path / "l.db"
    with Ledger(ledger) as opened:
        opened.set_budget("d", 5.0, 1e-5)
    seen: list[list[str]] = []
    counting = partitionwise.paid_counts_partitionwise

    def count(*args: Any, **kwargs: Any) -> Any:
        seen.append([r["algorithm"] for r in _ledger_rows(ledger)])
        return counting(*args, **kwargs)

    monkeypatch.setattr(partitionwise, "paid_counts_partitionwise", count)
    with oracle_defaults(client=client):
        # 8 steps: the order asserted is settled before the first step (each Dask step is a
        # round trip to the cluster; the default's 1000 of them took 23 s here)
        fit_table(parse_schema(tomllib.loads(PAID)), read_raw_collection(glob),
                  params={"epsilon": 1.0, "ledger": str(ledger), "dataset": "d",
                          "max_iter": 8})
    assert seen == [["schema/private_statistics"]]
