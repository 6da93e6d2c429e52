"""Shared pieces of the UCI loaders: locating files, labels, and the data-independent split."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from noisygd.data.io import DataFileError, check_file
from noisygd.data.schema import Schema, numeric_column

__all__ = ["Part", "UciDataset", "binary_labels", "check_data_dir", "locate", "seeded_split"]


@dataclass(frozen=True)
class Part:
    """Raw rows of one file (features as named by the schema) and their encoded target."""

    frame: pd.DataFrame
    y: np.ndarray
    source: Path


@dataclass(frozen=True)
class UciDataset:
    """Everything a UCI loader needs: schema, target rule, files, split rule, citation."""

    name: str
    task: Literal["classification", "regression"]
    schema: Schema
    target: str
    target_bounds: tuple[float, float] | None
    citation: str
    files: tuple[str, ...]
    split_rule: str
    read: Callable[[Path], list[Part]]
    fixed_split: bool = False
    n_rows: Mapping[str, int] = field(default_factory=dict)
    missing_values: str = "none documented; a value outside a category list encodes as zeros"


def check_data_dir(data_dir: str | Path) -> Path:
    """``data_dir`` as a Path, or :class:`DataFileError` if it is not an existing directory."""
    d = Path(data_dir)
    if not d.exists():
        raise DataFileError(f"data directory not found: {d}")
    if not d.is_dir():
        raise DataFileError(f"data directory {d} is not a directory")
    return d


def locate(data_dir: Path, relative: str) -> Path:
    """The file ``data_dir/relative``, accepting it with or without a ``.gz`` suffix.

    Raises :class:`DataFileError` naming the expected file if neither is present.
    """
    primary = data_dir / relative
    alt = primary.with_name(primary.name[:-3]) if primary.name.endswith(".gz") else (
        primary.with_name(primary.name + ".gz")
    )
    for candidate in (primary, alt):
        if candidate.exists():
            return check_file(candidate)
    raise DataFileError(f"expected data file {primary} (or {alt.name}) is missing")


def binary_labels(
    col: pd.Series, positive: Sequence[object], negative: Sequence[object], source: Path, name: str
) -> np.ndarray:
    """Map documented label values to 1.0 (positive) and 0.0 (negative); others are an error."""
    pos = col.isin(list(positive)).to_numpy()
    neg = col.isin(list(negative)).to_numpy()
    bad = ~(pos | neg)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataFileError(
            f"label column {name!r} of {source} has the value {col.iloc[i]!r} (data row {i + 1}); "
            f"expected one of {list(positive) + list(negative)}"
        )
    return pos.astype(np.float64)


def bounded_target(
    col: pd.Series, lower: float, upper: float, source: Path, name: str
) -> np.ndarray:
    """``(clip(t, lower, upper) - lower) / (upper - lower)`` with public bounds, in ``[0, 1]``."""
    t = numeric_column(col, name, source)
    return (np.clip(t, lower, upper) - lower) / (upper - lower)


def seeded_split(n: int, test_size: float, split_seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Train and test row indices from a seeded permutation of ``range(n)``.

    ``perm = numpy.random.default_rng(split_seed).permutation(n)``; the first
    ``ceil(test_size * n)`` entries of ``perm`` are the test rows and the rest the training rows
    (both in permuted order). The split depends on ``n`` and the seed only, never on the values
    in the rows.
    """
    perm = np.random.default_rng(split_seed).permutation(n)
    n_test = min(n - 1, max(1, math.ceil(test_size * n)))
    return perm[n_test:], perm[:n_test]
