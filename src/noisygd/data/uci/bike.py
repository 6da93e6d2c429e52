"""Bike Sharing (hourly), UCI dataset 275: schema, public bounds, reader.

Codings from ``bike_sharing/Readme.txt``. ``casual`` and ``registered`` are dropped because
``cnt = casual + registered`` would leak the target; ``instant`` (a record index) and ``dteday``
(the date, already coded by ``yr``/``mnth``/``weekday``) are dropped too.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from noisygd.data.io import DataFileError, read_csv_file
from noisygd.data.schema import CategoricalFeature, NumericFeature, Schema
from noisygd.data.uci._common import Part, UciDataset, bounded_target, locate

_README = "bike_sharing/Readme.txt"
# Public bound on hourly rentals: Capital Bikeshare's fleet was of the order of 1,100-1,800 bikes
# in 2011-2012 (system's public figures), and hourly rentals above the fleet size would need
# every bike to be rented more than once within the hour. Counts above it are clipped.
CNT_BOUNDS = (0.0, 2000.0)

SCHEMA = Schema((
    CategoricalFeature("season", (1, 2, 3, 4), f"{_README}: 1 spring, 2 summer, 3 fall, 4 winter"),
    CategoricalFeature("yr", (0, 1), f"{_README}: 0 = 2011, 1 = 2012"),
    CategoricalFeature("mnth", tuple(range(1, 13)), f"{_README}: month 1 to 12"),
    CategoricalFeature("hr", tuple(range(24)), f"{_README}: hour 0 to 23"),
    CategoricalFeature("holiday", (0, 1), f"{_README}: holiday or not"),
    CategoricalFeature("weekday", tuple(range(7)), f"{_README}: day of the week"),
    CategoricalFeature("workingday", (0, 1), f"{_README}: 1 if neither weekend nor holiday"),
    CategoricalFeature("weathersit", (1, 2, 3, 4), f"{_README}: weather situation 1 to 4"),
    NumericFeature("temp", 0, 1, f"{_README}: normalized temperature (divided by 41)"),
    NumericFeature("atemp", 0, 1, f"{_README}: normalized feeling temperature (divided by 50)"),
    NumericFeature("hum", 0, 1, f"{_README}: normalized humidity (divided by 100)"),
    NumericFeature("windspeed", 0, 1, f"{_README}: normalized wind speed (divided by 67)"),
))  # fmt: skip

_CATEGORICAL = ("season", "yr", "mnth", "hr", "holiday", "weekday", "workingday", "weathersit")


def read(data_dir: Path) -> list[Part]:
    """The 17,379 rows of ``hour.csv``; target ``cnt / 2000`` (clipped at 1)."""
    path = locate(data_dir, "bike_sharing/hour.csv")
    frame = read_csv_file(path, dtype=str, keep_default_na=False)
    frame.columns = [str(c).strip() for c in frame.columns]
    if "cnt" not in frame.columns:
        raise DataFileError(f"{path} lacks the target column 'cnt'")
    frame = frame.assign(**{
        c: pd.to_numeric(frame[c], errors="coerce") for c in _CATEGORICAL if c in frame.columns
    })
    y = bounded_target(frame["cnt"], *CNT_BOUNDS, path, "cnt")
    return [Part(frame, y, path)]


DATASET = UciDataset(
    name="bike",
    task="regression",
    schema=SCHEMA,
    target="cnt / 2000 in [0, 1] (hourly rental count over a public fleet-size bound, clipped "
    "at 1); map back with cnt = 2000 * y",
    target_bounds=CNT_BOUNDS,
    citation="Fanaee-T, H. (2013). Bike Sharing [Dataset]. UCI Machine Learning Repository. "
    "https://doi.org/10.24432/C5W894",
    files=("bike_sharing/hour.csv",),
    split_rule="seeded permutation of the 17,379 rows: numpy.random.default_rng(split_seed)"
    ".permutation(n); the first ceil(test_size * n) are the test rows",
    read=read,
    n_rows={"all": 17379},
    missing_values="none documented; a code outside the Readme's coding encodes as zeros",
)
