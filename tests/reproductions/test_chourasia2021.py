"""Figures 1 and 2 of seed 004: CSV values equal the closed forms; lower <= exact <= upper."""

from __future__ import annotations

import csv
import math

import pytest

from noisygd.reproductions.chourasia2021 import main


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    out = tmp_path_factory.mktemp("chourasia")
    assert main(["--out-dir", str(out)]) == 0
    return out


def _read(path):
    with path.open() as fh:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(fh)]


def test_files_written(outputs):
    for name in ("figure1.csv", "figure1.png", "figure2.csv", "figure2.png"):
        assert (outputs / f"chourasia2021_{name}").stat().st_size > 1000


def test_figure1_equals_closed_forms_at_every_point(outputs):
    rows = _read(outputs / "chourasia2021_figure1.csv")
    curves = {(r["alpha"], r["lam"]) for r in rows}
    assert curves == {(10, 1), (20, 1), (30, 1), (10, 2), (10, 4)}
    assert len(rows) == 5 * 501
    S, n, eta, sigma = 4.0, 5000, 0.02, 0.02  # Figure 1 caption (beta = 4 only enters eta < 1/beta)
    for r in rows:
        a, lam, K = r["alpha"], r["lam"], r["K"]
        ours = a * S**2 / (lam * sigma**2 * n**2) * (1 - math.exp(-lam * eta * K / 2))
        comp = a * S**2 / (4 * n**2 * sigma**2) * eta * K
        assert r["ours"] == pytest.approx(ours, rel=1e-12, abs=1e-300)
        assert r["composition"] == pytest.approx(comp, rel=1e-12, abs=1e-300)


def test_figure2_lower_exact_upper_for_all_k(outputs):
    rows = _read(outputs / "chourasia2021_figure2.csv")
    assert len(rows) == 3 * 301
    S, n, eta, sigma = 4.0, 5000, 0.02, 0.02
    for r in rows:
        a, K = r["alpha"], r["K"]
        upper = a * S**2 / ((2 - eta) * sigma**2 * n**2) * (1 - math.exp(-(2 - eta) * eta * K / 2))
        lower = a * S**2 / (4 * sigma**2 * n**2) * (1 - math.exp(-eta * K))
        q = (1 - eta) ** K
        exact = a * S**2 / (4 * sigma**2 * n**2) * (2 - eta) / (1 + q) * (1 - q)  # Appendix E
        assert r["upper"] == pytest.approx(upper, rel=1e-12, abs=1e-300)
        assert r["lower"] == pytest.approx(lower, rel=1e-12, abs=1e-300)
        assert r["exact"] == pytest.approx(exact, rel=1e-8, abs=1e-300)
        assert r["lower"] <= r["exact"] * (1 + 1e-9) <= r["upper"] * (1 + 2e-9)
