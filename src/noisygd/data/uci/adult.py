"""Adult (Census Income), UCI dataset 2: schema, public bounds, and reader.

Category lists are copied from ``adult/adult.names`` (section after the label line). Numeric
bounds: see the ``source`` of each feature.
"""

from __future__ import annotations

from pathlib import Path

from noisygd.data.io import read_csv_file
from noisygd.data.schema import CategoricalFeature, NumericFeature, Schema
from noisygd.data.uci._common import Part, UciDataset, binary_labels, locate

COLUMNS = (
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country", "income",
)  # fmt: skip  # column order from adult.names

_NAMES = "adult/adult.names"
_CPS = "CPS coding (public-use Current Population Survey files)"

SCHEMA = Schema((
    NumericFeature("age", 17, 90, f"adult.names extraction rule AAGE>16; 90 is the {_CPS} top code",
                   unit="years"),
    CategoricalFeature("workclass", (
        "Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov", "State-gov",
        "Without-pay", "Never-worked"), _NAMES),
    NumericFeature("fnlwgt", 1, 1e7,
                   "adult.names extraction rule AFNLWGT>1; 1e7 is a loose order-of-magnitude bound "
                   "on a CPS person weight (two implied decimals: <= 100,000 people per record); "
                   "log1p because weights are heavy-tailed", transform="log1p"),
    CategoricalFeature("education", (
        "Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Assoc-acdm", "Assoc-voc",
        "9th", "7th-8th", "12th", "Masters", "1st-4th", "10th", "Doctorate", "5th-6th",
        "Preschool"), _NAMES),
    NumericFeature("education-num", 1, 16,
                   "ordinal code of the 16 education levels listed in adult.names"),
    CategoricalFeature("marital-status", (
        "Married-civ-spouse", "Divorced", "Never-married", "Separated", "Widowed",
        "Married-spouse-absent", "Married-AF-spouse"), _NAMES),
    CategoricalFeature("occupation", (
        "Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial",
        "Prof-specialty", "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical",
        "Farming-fishing", "Transport-moving", "Priv-house-serv", "Protective-serv",
        "Armed-Forces"), _NAMES),
    CategoricalFeature("relationship", (
        "Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried"), _NAMES),
    CategoricalFeature("race", (
        "White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"), _NAMES),
    CategoricalFeature("sex", ("Female", "Male"), _NAMES),
    NumericFeature("capital-gain", 0, 99999,
                   f"5-digit income field of the {_CPS}: 99999 is its top code; log1p",
                   transform="log1p", unit="USD"),
    NumericFeature("capital-loss", 0, 99999,
                   f"5-digit income field of the {_CPS}; log1p", transform="log1p", unit="USD"),
    NumericFeature("hours-per-week", 1, 99,
                   f"adult.names extraction rule HRSWK>0; 2-digit field of the {_CPS}",
                   unit="hours"),
    CategoricalFeature("native-country", (
        "United-States", "Cambodia", "England", "Puerto-Rico", "Canada", "Germany",
        "Outlying-US(Guam-USVI-etc)", "India", "Japan", "Greece", "South", "China", "Cuba",
        "Iran", "Honduras", "Philippines", "Italy", "Poland", "Jamaica", "Vietnam", "Mexico",
        "Portugal", "Ireland", "France", "Dominican-Republic", "Laos", "Ecuador", "Taiwan",
        "Haiti", "Columbia", "Hungary", "Guatemala", "Nicaragua", "Scotland", "Thailand",
        "Yugoslavia", "El-Salvador", "Trinadad&Tobago", "Peru", "Hong", "Holand-Netherlands"),
        _NAMES),
))  # fmt: skip


def _read_file(path: Path, skiprows: int) -> Part:
    frame = read_csv_file(
        path, header=None, names=list(COLUMNS), skiprows=skiprows, skipinitialspace=True,
        na_values=["?"], keep_default_na=False, dtype=str, engine="c",
    )
    label = frame["income"].str.strip().str.rstrip(".")
    y = binary_labels(label, [">50K"], ["<=50K"], path, "income")
    return Part(frame, y, path)


def read(data_dir: Path) -> list[Part]:
    """Train part (``adult.data``) and test part (``adult.test``, first banner line skipped)."""
    return [
        _read_file(locate(data_dir, "adult/adult.data.gz"), skiprows=0),
        _read_file(locate(data_dir, "adult/adult.test.gz"), skiprows=1),
    ]


DATASET = UciDataset(
    name="adult",
    task="classification",
    schema=SCHEMA,
    target="income: 1.0 if '>50K' (test file: '>50K.'), 0.0 if '<=50K'",
    target_bounds=None,
    citation="Becker, B. & Kohavi, R. (1996). Adult [Dataset]. UCI Machine Learning Repository. "
    "https://doi.org/10.24432/C5XW20",
    files=("adult/adult.data.gz", "adult/adult.test.gz"),
    split_rule="fixed: the UCI split, adult.data is train and adult.test is test (split_seed and "
    "test_size are ignored)",
    read=read,
    fixed_split=True,
    n_rows={"train": 32561, "test": 16281},
    missing_values="'?' in workclass, occupation, native-country encodes as an all-zero one-hot "
    "block (no row is dropped); a missing numeric value is an error",
)
