"""Bank Marketing (bank-full), UCI dataset 222: schema, public bounds, and reader.

Category lists are copied from ``bank_marketing/bank-names.txt`` section 7 (the month list is
written there as "jan", "feb", ..., "dec"). ``pdays = -1`` ("client was not previously
contacted", bank-names.txt) is split per row into an indicator and a day count.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from noisygd.data.io import DataFileError, read_csv_file
from noisygd.data.schema import CategoricalFeature, NumericFeature, Schema, numeric_column
from noisygd.data.uci._common import Part, UciDataset, binary_labels, locate

_NAMES = "bank_marketing/bank-names.txt"
_YES_NO = ("no", "yes")
_MONEY = "round domain bound for a retail client's average yearly balance; signed log1p"

SCHEMA = Schema((
    NumericFeature("age", 18, 100, "domain: bank clients are adults; 100 a round upper bound",
                   unit="years"),
    CategoricalFeature("job", (
        "admin.", "unknown", "unemployed", "management", "housemaid", "entrepreneur", "student",
        "blue-collar", "self-employed", "retired", "technician", "services"), _NAMES),
    CategoricalFeature("marital", ("married", "divorced", "single"), _NAMES),
    CategoricalFeature("education", ("unknown", "secondary", "primary", "tertiary"), _NAMES),
    CategoricalFeature("default", _YES_NO, _NAMES),
    NumericFeature("balance", -1e6, 1e6, _MONEY, transform="signed_log1p", unit="EUR"),
    CategoricalFeature("housing", _YES_NO, _NAMES),
    CategoricalFeature("loan", _YES_NO, _NAMES),
    CategoricalFeature("contact", ("unknown", "telephone", "cellular"), _NAMES),
    NumericFeature("day", 1, 31, "day of the month (bank-names.txt: last contact day of month)"),
    CategoricalFeature("month", (
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
        _NAMES),
    NumericFeature("duration", 0, 1e4, "call length in seconds (bank-names.txt); 10,000 s "
                   "(2.8 h) a round bound on a phone call; log1p", transform="log1p", unit="s"),
    NumericFeature("campaign", 1, 100, "contacts in this campaign, >= 1 as it includes the last "
                   "contact (bank-names.txt); 100 a round bound; log1p", transform="log1p"),
    NumericFeature("previously_contacted", 0, 1,
                   "indicator pdays != -1 (bank-names.txt: -1 means not previously contacted)"),
    NumericFeature("pdays", 0, 1000, "days since a previous campaign's contact, 0 when never "
                   "contacted; the data span May 2008 - Nov 2010 (bank-names.txt), about 900 "
                   "days, so 1000 is a round bound; log1p", transform="log1p", unit="days"),
    NumericFeature("previous", 0, 100, "contacts before this campaign; 100 a round bound; log1p",
                   transform="log1p"),
    CategoricalFeature("poutcome", ("unknown", "other", "failure", "success"), _NAMES),
))  # fmt: skip

_COLUMNS = (
    "age", "job", "marital", "education", "default", "balance", "housing", "loan", "contact",
    "day", "month", "duration", "campaign", "pdays", "previous", "poutcome", "y",
)  # fmt: skip


def read(data_dir: Path) -> list[Part]:
    """All 45,211 rows of ``bank-full.csv`` (semicolon separated, header row)."""
    path = locate(data_dir, "bank_marketing/bank-full.csv.gz")
    frame = read_csv_file(path, sep=";", dtype=str, keep_default_na=False)
    frame.columns = [str(c).strip() for c in frame.columns]
    absent = [c for c in _COLUMNS if c not in frame.columns]
    if absent:
        raise DataFileError(f"{path} lacks the columns {', '.join(absent)}")
    pdays = numeric_column(frame["pdays"], "pdays", path)
    frame = frame.assign(
        previously_contacted=(pdays != -1).astype(np.float64),
        pdays=np.where(pdays == -1, 0.0, pdays),
    )
    y = binary_labels(frame["y"], ["yes"], ["no"], path, "y")
    return [Part(frame, y, path)]


DATASET = UciDataset(
    name="bank",
    task="classification",
    schema=SCHEMA,
    target="y (has the client subscribed a term deposit?): 1.0 if 'yes', 0.0 if 'no'",
    target_bounds=None,
    citation="Moro, S., Rita, P., & Cortez, P. (2014). Bank Marketing [Dataset]. UCI Machine "
    "Learning Repository. https://doi.org/10.24432/C5K306",
    files=("bank_marketing/bank-full.csv.gz",),
    split_rule="seeded permutation of the 45,211 rows: numpy.random.default_rng(split_seed)"
    ".permutation(n); the first ceil(test_size * n) are the test rows",
    read=read,
    n_rows={"all": 45211},
    missing_values="none (bank-names.txt); 'unknown' is a documented category with its own column",
)
