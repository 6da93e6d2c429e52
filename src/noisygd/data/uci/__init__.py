"""Loaders for the five UCI datasets of Zhang et al. (IJCAI 2017), private by construction.

Every preprocessing constant (category lists, numeric bounds, target bounds) is written in the
dataset modules with its source; the encoding of a row depends on that row alone, and the
train/test split on the row count and ``split_seed`` alone. No statistic of the data is computed.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from noisygd._checks import check_fraction, check_positive, check_positive_int
from noisygd.data.schema import CategoricalFeature, DatasetInfo, NumericFeature, PublicCentring
from noisygd.data.uci import adult, bank, bike, credit, wine
from noisygd.data.uci._common import UciDataset, check_data_dir, seeded_split

__all__ = ["UCI_DATASETS", "dataset_info", "load_uci", "public_centring", "uci_data_dir"]

_REGISTRY: dict[str, UciDataset] = {
    m.DATASET.name: m.DATASET for m in (adult, bank, credit, wine, bike)
}
UCI_DATASETS: tuple[str, ...] = tuple(_REGISTRY)


def _dataset(name: str) -> UciDataset:
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ValueError(f"unknown UCI dataset {name!r}; valid names: {', '.join(UCI_DATASETS)}")
    return _REGISTRY[name]


def dataset_info(name: str) -> DatasetInfo:
    """Public description of what :func:`load_uci` does for ``name``.

    Returns a :class:`~noisygd.data.schema.DatasetInfo`: task, number and names of features,
    numeric bounds and category lists with their sources, target encoding, citation, files, and
    split rule. Reads no data.
    """
    ds = _dataset(name)
    feats = ds.schema.features
    return DatasetInfo(
        name=ds.name,
        task=ds.task,
        n_features=ds.schema.n_features,
        feature_names=ds.schema.feature_names,
        numeric_features=tuple(f for f in feats if isinstance(f, NumericFeature)),
        categorical_features=tuple(f for f in feats if isinstance(f, CategoricalFeature)),
        target=ds.target,
        target_bounds=ds.target_bounds,
        source=ds.citation,
        files=ds.files,
        split_rule=ds.split_rule,
        n_rows=dict(ds.n_rows),
        missing_values=ds.missing_values,
    )


def uci_data_dir(path: str | Path | None = None) -> Path:
    """The UCI data folder: ``path`` if given, else ``$NOISYGD_DATA_DIR``, else
    ``<repository>/../shared/data/uci`` (the layout of a source checkout). Not checked."""
    if path:
        return Path(path)
    env = os.environ.get("NOISYGD_DATA_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[4] / ".." / "shared" / "data" / "uci"


def public_centring(name: str, row_norm_bound: float = 1.0) -> PublicCentring:
    """The public centre of ``load_uci(name, ..., row_norm_bound=B)``'s feature domain.

    Reads no data: see :meth:`noisygd.data.schema.Schema.public_centring`.

    Examples
    --------
    >>> from noisygd.data import public_centring
    >>> c = public_centring("wine")
    >>> c.centre.shape, round(c.radius, 4), round(c.intercept_scale, 4)
    ((12,), 0.5, 0.2887)
    """
    return _dataset(name).schema.public_centring(row_norm_bound)


def _check_args(split_seed: int, row_norm_bound: float, test_size: float) -> None:
    check_positive_int("split_seed", split_seed, minimum=0)
    check_positive("row_norm_bound", row_norm_bound)
    check_fraction("test_size", test_size, closed_right=False)


def load_uci(
    name: str,
    data_dir: str | Path,
    split_seed: int = 0,
    *,
    row_norm_bound: float = 1.0,
    test_size: float = 0.2,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Load a UCI dataset as ``(X_train, y_train, X_test, y_test)``, private by construction.

    Preprocessing (per row, constants public; see ``dataset_info(name)`` and ``docs/data.md``):

    1. categorical features one-hot against the category list of the dataset's description file
       (an unknown or missing value gives an all-zero block);
    2. numeric features clipped to public bounds ``[l, u]``, optionally ``log1p`` or signed
       ``log1p`` transformed, and mapped onto ``[0, 1]``;
    3. each row multiplied by ``row_norm_bound / sqrt(n_blocks)`` (``n_blocks`` = number of raw
       features, a schema constant) so that ``||x_i||_2 <= row_norm_bound``.

    Targets: ``adult``, ``bank``, ``credit`` are binary classification with labels in
    ``{0.0, 1.0}`` (adult: income ``>50K``; bank: ``y == "yes"``; credit: default payment next
    month). ``wine`` regresses ``y = quality / 10`` (map back: ``quality = 10 * y``); ``bike``
    regresses ``y = min(cnt, 2000) / 2000`` (map back: ``cnt = 2000 * y``); both in ``[0, 1]``.

    Split: ``adult`` uses the UCI files ``adult.data`` (train) and ``adult.test`` (test), and
    ignores ``split_seed`` and ``test_size``. The other four use a seeded permutation of the row
    order, ``numpy.random.default_rng(split_seed).permutation(n)``, whose first
    ``ceil(test_size * n)`` rows are the test set; it depends on ``n`` (documented in the UCI
    description) and the seed only, never on the data values.

    Parameters
    ----------
    name : {"adult", "bank", "credit", "wine", "bike"}
    data_dir : str or Path
        The ``uci`` directory (with subfolders ``adult/``, ``bank_marketing/``,
        ``credit_default/``, ``wine_quality/``, ``bike_sharing/``); files may be gzipped or not.
    split_seed : int, default 0
    row_norm_bound : float, default 1.0
        ``B`` in ``||x_i|| <= B``.
    test_size : float, default 0.2
        Fraction of rows in the test set (not used for ``adult``).

    Returns
    -------
    X_train, y_train, X_test, y_test : numpy.ndarray
        Float64, C-contiguous.

    Raises
    ------
    TypeError
        An argument of the wrong type (``split_seed`` not an integer, a bound or size not a
        real number; :mod:`noisygd._checks`).
    ValueError
        Unknown ``name`` (the message lists the valid ones) or a bad argument value.
    noisygd.data.DataFileError
        Missing ``data_dir`` or file (naming the file expected), unreadable or corrupt file,
        unexpected columns, labels, or non-numeric values (naming file, column and row).
    """
    ds = _dataset(name)
    _check_args(split_seed, row_norm_bound, test_size)
    parts = ds.read(check_data_dir(data_dir))
    B = float(row_norm_bound)
    if ds.fixed_split:
        train, test = parts
        X_tr = ds.schema.encode(train.frame, B, train.source)
        X_te = ds.schema.encode(test.frame, B, test.source)
        return X_tr, _c(train.y), X_te, _c(test.y)
    blocks = [ds.schema.encode(p.frame, B, p.source) for p in parts]
    X = np.vstack(blocks) if len(blocks) > 1 else blocks[0]
    y = np.concatenate([p.y for p in parts])
    tr, te = seeded_split(X.shape[0], float(test_size), int(split_seed))
    return _c(X[tr]), _c(y[tr]), _c(X[te]), _c(y[te])


def _c(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64)


