"""Wine Quality (red + white), UCI dataset 186: schema, public bounds, reader.

Feature units are those of Cortez et al. (2009), the reference in ``winequality.names``. The
bounds are round physical/oenological ranges for table wine, chosen without the data (values
outside are clipped). The red and white files are concatenated (red first) with a public
``is_red`` indicator: which file a row comes from is a property of that row.
"""

from __future__ import annotations

from pathlib import Path

from noisygd.data.io import DataFileError, read_csv_file
from noisygd.data.schema import NumericFeature, Schema
from noisygd.data.uci._common import Part, UciDataset, bounded_target, locate

_D = "domain: oenological range for table wine"
QUALITY_BOUNDS = (0.0, 10.0)  # winequality.names: "quality (score between 0 and 10)"

SCHEMA = Schema((
    NumericFeature("fixed acidity", 0, 20, _D, unit="g(tartaric acid)/dm3"),
    NumericFeature("volatile acidity", 0, 2, f"{_D} (legal limits are near 1.2)",
                   unit="g(acetic acid)/dm3"),
    NumericFeature("citric acid", 0, 2, _D, unit="g/dm3"),
    NumericFeature("residual sugar", 0, 100, f"{_D}: dry < 4, sweet > 45; log1p",
                   transform="log1p", unit="g/dm3"),
    NumericFeature("chlorides", 0, 1, _D, unit="g(sodium chloride)/dm3"),
    NumericFeature("free sulfur dioxide", 0, 300, _D, unit="mg/dm3"),
    NumericFeature("total sulfur dioxide", 0, 500, f"{_D} (EU limits 150-400 mg/dm3)",
                   unit="mg/dm3"),
    NumericFeature("density", 0.98, 1.05, "physics: close to water's 1 g/cm3, lowered by "
                   "alcohol and raised by sugar", unit="g/cm3"),
    NumericFeature("pH", 2.5, 4.5, f"{_D} (about 2.9-4)"),
    NumericFeature("sulphates", 0, 2.5, _D, unit="g(potassium sulphate)/dm3"),
    NumericFeature("alcohol", 5, 16, f"{_D}: about 8-15 % vol; fortified wines are not "
                   "vinho verde", unit="% vol"),
    NumericFeature("is_red", 0, 1, "1 for rows of winequality-red.csv, 0 for "
                   "winequality-white.csv"),
))  # fmt: skip


def read(data_dir: Path) -> list[Part]:
    """Red rows then white rows; target ``quality / 10``."""
    frames = []
    sources = []
    for colour, is_red in (("red", 1.0), ("white", 0.0)):
        path = locate(data_dir, f"wine_quality/winequality-{colour}.csv")
        frame = read_csv_file(path, sep=";", dtype=str, keep_default_na=False)
        frame.columns = [str(c).strip() for c in frame.columns]
        frames.append(frame.assign(is_red=is_red))
        sources.append(path)
    parts = []
    for frame, path in zip(frames, sources, strict=True):
        if "quality" not in frame.columns:
            raise DataFileError(f"{path} lacks the target column 'quality'")
        y = bounded_target(frame["quality"], *QUALITY_BOUNDS, path, "quality")
        parts.append(Part(frame, y, path))
    return parts


DATASET = UciDataset(
    name="wine",
    task="regression",
    schema=SCHEMA,
    target="quality / 10 in [0, 1] (winequality.names: quality is a score between 0 and 10); "
    "map back with quality = 10 * y",
    target_bounds=QUALITY_BOUNDS,
    citation="Cortez, P., Cerdeira, A., Almeida, F., Matos, T., & Reis, J. (2009). Wine Quality "
    "[Dataset]. UCI Machine Learning Repository. https://doi.org/10.24432/C56S3T",
    files=("wine_quality/winequality-red.csv", "wine_quality/winequality-white.csv"),
    split_rule="red rows then white rows (6,497), then a seeded permutation: "
    "numpy.random.default_rng(split_seed).permutation(n); the first ceil(test_size * n) are the "
    "test rows",
    read=read,
    n_rows={"red": 1599, "white": 4898, "all": 6497},
    missing_values="none (winequality.names); a missing value is an error",
)
