"""Suite-wide test configuration.

Tests that read the real UCI files carry ``@pytest.mark.data``. The folder they read is
:func:`noisygd.data.uci_data_dir` (``$NOISYGD_DATA_DIR``, else ``<repo>/../shared/data/uci``);
when it is absent, or holds no dataset subfolder, every ``data`` test is skipped with the
reason printed (``-ra``), so the suite passes in a clone with no ``../shared`` beside it.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

# Hypothesis keeps an example database and a cache of the constants it reads from source files
# (which quote test data paths); both go to a temporary folder, never into the checkout.
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY",
                      os.path.join(tempfile.gettempdir(), "noisygd-hypothesis"))

from noisygd.data import UCI_DATASETS, dataset_info, uci_data_dir

#: The dataset subfolders of the UCI folder (``adult``, ``bank_marketing``, ...).
DATASET_FOLDERS = sorted({f.split("/")[0] for name in UCI_DATASETS
                          for f in dataset_info(name).files})


def data_skip_reason() -> str | None:
    """The skip reason for ``data`` tests, or ``None`` when the UCI folder holds a dataset."""
    folder = uci_data_dir()
    if folder.is_dir() and any((folder / sub).is_dir() for sub in DATASET_FOLDERS):
        return None
    return (f"UCI data folder {folder} not found or holds none of {', '.join(DATASET_FOLDERS)} "
            "(set NOISYGD_DATA_DIR)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip every ``data``-marked test when the UCI data folder is absent."""
    reason = data_skip_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if item.get_closest_marker("data") is not None:
            item.add_marker(skip)


def _uci_file(relative: str) -> Path:
    """``relative`` (or its ``.gz``) under the UCI folder; the test is skipped when absent."""
    root = uci_data_dir()
    for p in (root / relative, root / (relative + ".gz")):
        if p.exists():
            return p
    pytest.skip(f"{relative} not found under {root}")


@pytest.fixture
def uci_file() -> Callable[[str], Path]:
    """A raw UCI file by its path under the data folder (e.g. ``"adult/adult.data"``)."""
    return _uci_file
