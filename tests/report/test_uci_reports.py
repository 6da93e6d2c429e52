"""Reports of fits of the raw UCI files (examples/schemas), rendered by headless Chromium.

The getting-started path on real data: ``noisygd fit RAW --schema examples/schemas/X.toml
--report r.html`` on the raw Adult and Bank Marketing files; the page states every declaration
of the schema and the paid-for row count, and (with Chromium) every plot renders.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

import pytest
from _chromium import chromium, rendered_images

from noisygd.cli import main

SCHEMAS = Path(__file__).resolve().parents[2] / "examples" / "schemas"

pytest.importorskip("matplotlib")


@pytest.mark.data
@pytest.mark.parametrize(("name", "relative"), [("adult", "adult/adult.data"),
                                                ("bank", "bank_marketing/bank-full.csv")])
def test_report_of_a_raw_uci_fit(name, relative, tmp_path, capsys, uci_file):
    data = uci_file(relative)
    model, page = tmp_path / f"{name}.json", tmp_path / f"{name}.html"
    # --max-iter 50: the page is what is checked (the default fit of these files runs in
    # tests/schema/test_paid_uci.py); 1000 steps over Bank's 45 211 rows took 22 s on CI's cores
    code = main(["fit", str(data), "--schema", str(SCHEMAS / f"{name}.toml"), "--epsilon", "1",
                 "--delta", "1e-6", "--seed", "0", "--max-iter", "50", "--out", str(model),
                 "--report", str(page)])
    capsys.readouterr()
    assert code == 0
    payload = json.loads(model.read_text())
    html = page.read_text(encoding="utf-8")
    report = payload["report"]
    assert report["paid_for"]  # the noisy row count
    for statement in report["declared_public"] + report["paid_for"]:
        assert escape(statement) in html
    assert f"{payload['privacy']['epsilon']:.6g}" in html
    for plot in ("epsilon_delta", "epsilon_steps"):
        assert (tmp_path / f"{name}.{plot}.png").is_file()
    if chromium() is None:
        pytest.skip("headless Chromium is not installed (make chromium): page not rendered")
    images = rendered_images(page)
    assert set(images) == {"plot-epsilon_delta", "plot-epsilon_steps"}
    assert "broken" not in images.values()
