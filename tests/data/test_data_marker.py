"""The ``data`` marker: tests that need the UCI folder skip, with the reason, when it is absent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"

_TESTS = '''
import pytest

@pytest.mark.data
def test_needs_data():
    raise AssertionError("ran although the data folder is absent")

def test_plain():
    pass
'''


def _run(tmp_path: Path, data_dir: Path) -> subprocess.CompletedProcess[str]:
    (tmp_path / "conftest.py").write_text(CONFTEST.read_text())
    (tmp_path / "test_marked.py").write_text(_TESTS)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    data: needs the UCI data\n")
    env = dict(os.environ, NOISYGD_DATA_DIR=str(data_dir))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-ra", "-p", "no:randomly", "-p", "no:xdist",
         "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )


@pytest.mark.parametrize("make", [False, True], ids=["absent", "empty"])
def test_data_tests_skip_with_the_reason_without_the_data(tmp_path: Path, make: bool) -> None:
    folder = tmp_path / "uci"
    if make:
        folder.mkdir()
    res = _run(tmp_path, folder)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "1 passed, 1 skipped" in res.stdout
    assert f"UCI data folder {folder} not found" in res.stdout
    assert "(set NOISYGD_DATA_DIR)" in res.stdout


def test_data_tests_run_when_a_dataset_folder_exists(tmp_path: Path) -> None:
    present = tmp_path / "uci"
    (present / "wine_quality").mkdir(parents=True)
    res = _run(tmp_path, present)
    assert res.returncode == 1  # the marked test ran and raised
    assert "ran although the data folder is absent" in res.stdout
