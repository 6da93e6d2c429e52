"""Default of Credit Card Clients (Taiwan), UCI dataset 350: schema, public bounds, reader.

There is no ``.names`` file next to the data. The codings below are those of the UCI page's
"Attribute Information" (mirrored verbatim by OpenML dataset 42477): X2 gender (1 = male;
2 = female), X3 education (1 = graduate school; 2 = university; 3 = high school; 4 = others),
X4 marital status (1 = married; 2 = single; 3 = others), X6-X11 repayment status (-1 = pay duly;
1..8 = payment delay of that many months; 9 = nine months and above). The file also uses
education 0, 5, 6 and marriage 0, which the description does not define: they encode as all-zero
blocks. Repayment status also takes -2 and 0 in the file, which later public data dictionaries
describe as "no consumption" and "revolving credit"; the numeric bound [-2, 9] keeps them.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from noisygd.data.io import DataFileError, read_csv_file
from noisygd.data.schema import CategoricalFeature, NumericFeature, Schema
from noisygd.data.uci._common import Part, UciDataset, binary_labels, locate

_UCI = "UCI dataset 350 attribute information"
_NT = "NT dollars (UCI); 1e7 (about 300,000 USD) a round domain bound for a personal credit card"
_PAY = [f"PAY_{k}" for k in (0, 2, 3, 4, 5, 6)]  # the original's naming: there is no PAY_1
_BILL = [f"BILL_AMT{k}" for k in range(1, 7)]
_PAID = [f"PAY_AMT{k}" for k in range(1, 7)]
TARGET = "default payment next month"

SCHEMA = Schema((
    NumericFeature("LIMIT_BAL", 0, 1e7, f"amount of given credit in {_NT}; log1p",
                   transform="log1p", unit="NTD"),
    CategoricalFeature("SEX", (1, 2), _UCI),
    CategoricalFeature("EDUCATION", (1, 2, 3, 4), _UCI),
    CategoricalFeature("MARRIAGE", (1, 2, 3), _UCI),
    NumericFeature("AGE", 18, 100, "domain: card holders are adults; 100 a round upper bound",
                   unit="years"),
    *(NumericFeature(c, -2, 9, "repayment-status coding: -1 pay duly, 1..9 months of delay "
                     "(UCI), -2 and 0 from public data dictionaries") for c in _PAY),
    *(NumericFeature(c, -1e7, 1e7, f"bill statement in {_NT}; signed log1p (credit balances "
                     "can be negative)", transform="signed_log1p", unit="NTD") for c in _BILL),
    *(NumericFeature(c, 0, 1e7, f"amount paid in {_NT}; log1p", transform="log1p", unit="NTD")
      for c in _PAID),
))  # fmt: skip


def read(data_dir: Path) -> list[Part]:
    """The 30,000 rows; the first of the file's two header rows (X1..Y) is skipped."""
    path = locate(data_dir, "credit_default/default of credit card clients.csv.gz")
    frame = read_csv_file(path, header=1, encoding="utf-8-sig", dtype=str, keep_default_na=False)
    frame.columns = [str(c).strip() for c in frame.columns]
    if TARGET not in frame.columns:
        raise DataFileError(f"{path} lacks the target column {TARGET!r}")
    # Integer codes; a non-numeric code becomes NaN and so an all-zero block.
    frame = frame.assign(**{
        c: pd.to_numeric(frame[c], errors="coerce")
        for c in ("SEX", "EDUCATION", "MARRIAGE") if c in frame.columns
    })
    y = binary_labels(frame[TARGET].str.strip(), ["1"], ["0"], path, TARGET)
    return [Part(frame, y, path)]


DATASET = UciDataset(
    name="credit",
    task="classification",
    schema=SCHEMA,
    target=f"{TARGET!r}: 1.0 = default, 0.0 = no default",
    target_bounds=None,
    citation="Yeh, I. (2009). Default of Credit Card Clients [Dataset]. UCI Machine Learning "
    "Repository. https://doi.org/10.24432/C55S3H",
    files=("credit_default/default of credit card clients.csv.gz",),
    split_rule="seeded permutation of the 30,000 rows: numpy.random.default_rng(split_seed)"
    ".permutation(n); the first ceil(test_size * n) are the test rows",
    read=read,
    n_rows={"all": 30000},
    missing_values="EDUCATION 0/5/6 and MARRIAGE 0 (undocumented codes) encode as all-zero blocks",
)
