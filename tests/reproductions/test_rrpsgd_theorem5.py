"""RRPSGD vs Theorem 5 reproduction: the subsample rule and a tiny real run."""

import json

import numpy as np
import pytest

from noisygd.data import uci_data_dir
from noisygd.reproductions.rrpsgd_theorem5 import main, subsample

DATA = uci_data_dir()  # $NOISYGD_DATA_DIR or ../shared/data/uci; `data` tests skip without it


def test_subsample_depends_on_n_and_seed_only():
    X = np.arange(40.0).reshape(20, 2)
    y = np.arange(20.0)
    a, ya = subsample(X, y, 5, 0)
    b, _ = subsample(X + 100.0, y, 5, 0)  # other values, same positions
    np.testing.assert_array_equal(a + 100.0, b)
    assert len(set(ya)) == 5
    with pytest.raises(ValueError, match="n must be"):
        subsample(X, y, 21, 0)


@pytest.mark.data
def test_quick_run_measures_below_theorem5_and_names_accountants(tmp_path):
    rc = main(["--data-dir", str(DATA), "--datasets", "credit", "--sizes", "40",
               "--epsilons", "1", "--runs", "5", "--out-dir", str(tmp_path)])
    assert rc == 0
    res = json.loads((tmp_path / "rrpsgd_theorem5.json").read_text())
    (row,) = res["rows"]
    assert row["n"] == 40 and row["horizon"] == 1600
    assert row["measured_sq_grad"] < row["theorem5_bound"]
    assert row["paper_accountant"] == "zhang2017_thm4"
    # the tight accountant certifies the target on the worst case; the paper's chain does not
    assert row["epsilon_tight_worst_case"] <= 1.0 < row["epsilon_paper_argument"]
    md = (tmp_path / "rrpsgd_theorem5.md").read_text()
    assert "Theorem 5 bound" in md and "zhang2017_thm4" in md


def test_rejects_bad_arguments(tmp_path):
    with pytest.raises(SystemExit):
        main(["--runs", "1", "--out-dir", str(tmp_path)])
    with pytest.raises(SystemExit):
        main(["--epsilons", "0", "--out-dir", str(tmp_path)])
