"""Direct tests of public report helpers not named elsewhere.

Covered: :func:`noisygd.report.curves.delta_grid`, :func:`noisygd.report.curves.full_accounting`,
:func:`noisygd.report.html.check_report_path`, :func:`noisygd.report.html.png_paths`,
:func:`noisygd.report.html.render_html`, :func:`noisygd.report.html.render_plots`,
:func:`noisygd.report.html.write_files`, :func:`noisygd.report.plots.plot_epsilon_delta`,
:func:`noisygd.report.plots.plot_epsilon_steps`,
:func:`noisygd.report.plots.plot_training_curve` and
:func:`noisygd.report.plots.require_matplotlib`.
"""

from __future__ import annotations

import base64
import html
import io
import math
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import optimize, stats

from noisygd.accounting import best
from noisygd.accounting.events import Gaussian, LastIterateLangevin, SelfComposed
from noisygd.accounting.registry import get_accountant
from noisygd.data.output import OutputPathError
from noisygd.report.content import NO_TRAINING_CURVE, FitReport, TrainingCurve
from noisygd.report.curves import (
    Curve,
    delta_grid,
    epsilon_delta_curves,
    epsilon_step_curves,
    full_accounting,
    run_steps,
)
from noisygd.report.html import (
    PLOT_NAMES,
    check_report_path,
    png_paths,
    render_html,
    render_plots,
    write_files,
)
from noisygd.report.plots import (
    plot_epsilon_delta,
    plot_epsilon_steps,
    plot_training_curve,
    require_matplotlib,
)

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
from matplotlib import image as mpimg  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
DELTA = 1e-5


def gdp_epsilon_closed_form(mu: float, delta: float) -> float:
    """Epsilon of mu-GDP at delta (Dong, Roth and Su 2022, Cor. 2.13), by brentq."""
    def gap(eps: float) -> float:
        return (stats.norm.cdf(-eps / mu + mu / 2)
                - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2) - delta)

    return optimize.brentq(gap, 0.0, 200.0, xtol=1e-13)


def _decode(png: bytes) -> np.ndarray:
    assert png.startswith(PNG_MAGIC)
    img = mpimg.imread(io.BytesIO(png), format="png")
    assert img.ndim == 3 and img.shape[0] > 0 and img.shape[1] > 0
    assert np.ptp(img) > 0  # something is drawn
    return img


def _images(page: str) -> dict[str, bytes]:
    found = re.findall(r'<img id="plot-([a-z_]+)"[^>]*src="data:image/png;base64,([^"]+)"',
                       page)
    return {name: base64.b64decode(data) for name, data in found}


def _report(*, steps: bool = True, training: bool = True) -> FitReport:
    """A small report of 30 Gaussian steps (z = 4), its curves on short grids, GDP only."""
    event = SelfComposed(Gaussian(4.0), 30)
    acc = best(event, DELTA)
    rep = FitReport(title="report <&> test", event=event, delta=DELTA, accounting=acc,
                    budget_epsilon=3.0, steps=run_steps(event))
    rep.delta_curves = epsilon_delta_curves(event, DELTA, result=acc,
                                            deltas=[1e-7, 1e-6, DELTA, 1e-4])
    if steps:
        rep.step_curves = epsilon_step_curves(event, DELTA, result=acc, steps=[1, 5, 15, 30])
    else:
        rep.step_curves_note = "no steps <here>"
    if training:
        rep.training_curve = TrainingCurve([1.0, 2.0, 3.0], [0.7, 0.6, 0.55], "held-out loss")
        rep.training_curve_note = "supplied"
    return rep


# ---------------------------------------------------------------------- delta_grid
@pytest.mark.parametrize(("delta", "points"), [(1e-5, 25), (1e-2, 7), (1e-3, 2), (0.3, 10)])
def test_delta_grid_is_the_log_spaced_range_plus_delta(delta, points):
    """geomspace(min(1e-12, delta/100), min(0.5, 1000 delta), points), with delta added."""
    grid = delta_grid(delta, points)
    lo, hi = min(1e-12, delta / 100), min(0.5, 1000 * delta)
    expected = np.logspace(math.log10(lo), math.log10(hi), points)
    assert grid == sorted(set(grid)) and delta in grid
    rest = [g for g in grid if g != delta]
    assert len(rest) in (points, points - 1)  # delta may be a grid point itself
    np.testing.assert_allclose(rest, [e for e in expected if e != delta], rtol=1e-12)
    ratios = np.diff(np.log(expected))
    np.testing.assert_allclose(ratios, ratios[0], rtol=1e-9)  # log-spaced


def test_delta_grid_low_end_follows_a_tiny_delta():
    """Below 1e-10, the grid starts at delta/100; it always holds delta and stays <= 0.5."""
    for delta in (1e-11, 1e-14):
        grid = delta_grid(delta, 5)
        assert grid[0] == pytest.approx(delta / 100, rel=1e-12)
        assert delta in grid and grid == sorted(grid) and grid[-1] <= 0.5
    assert delta_grid(1e-8)[0] == pytest.approx(1e-12, rel=1e-12)
    assert len(delta_grid(1e-5)) == 26  # 25 points; 1e-5 is not one of them


def test_delta_grid_refuses_bad_arguments():
    """delta outside (0, 1), fewer than two points, a non-integer count: refused."""
    for bad in (0.0, 1.0, -1e-5, math.nan):
        with pytest.raises(ValueError, match="delta must be in the open interval"):
            delta_grid(bad)
    with pytest.raises(ValueError, match="points must be an integer >= 2"):
        delta_grid(1e-5, 1)
    with pytest.raises(TypeError, match="points must be an integer"):
        delta_grid(1e-5, 2.5)


# ---------------------------------------------------------------------- full_accounting
def test_full_accounting_asks_every_accountant_and_matches_closed_forms():
    """Gaussian steps: every general accountant answers (none spared), GDP is the closed form,
    RDP and PLD agree with dp_accounting, the headline is the smallest."""
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant
    from dp_accounting.rdp import rdp_privacy_accountant

    z, T = 4.0, 50
    event = SelfComposed(Gaussian(z), T)
    full = full_accounting(event, DELTA)
    assert full.not_consulted == {}
    assert {"gdp", "zcdp", "rdp", "pld"} <= set(full.by_accountant)
    # the default spares the others once exact GDP answered; full asks them
    assert set(best(event, DELTA).by_accountant) < set(full.by_accountant)
    exact = gdp_epsilon_closed_form(math.sqrt(T) / z, DELTA)
    assert full.by_accountant["gdp"] == pytest.approx(exact, rel=1e-8)
    dp_ev = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(z), T)
    rdp = rdp_privacy_accountant.RdpAccountant()
    rdp.compose(dp_ev)
    assert full.by_accountant["rdp"] == pytest.approx(rdp.get_epsilon(DELTA), rel=1e-3)
    pld = pld_privacy_accountant.PLDAccountant()
    pld.compose(dp_ev)
    assert full.by_accountant["pld"] == pytest.approx(pld.get_epsilon(DELTA), rel=1e-3)
    for eps in full.by_accountant.values():
        assert eps >= exact * (1 - 1e-9)  # none certifies below the exact value
    assert full.epsilon == min(full.by_accountant.values())
    assert full.by_accountant[full.accountant] == full.epsilon
    assert set(full.refused).isdisjoint(full.by_accountant)


def test_full_accounting_includes_the_paper_accountants():
    """A last-iterate Langevin event: the paper's composition baseline is asked too."""
    event = LastIterateLangevin(strong_convexity=1.0, smoothness=4.0, step_size=0.02,
                                sigma=0.02, steps=100, n_samples=5000, sensitivity=4.0,
                                constraint="none", start_variance=2 * 0.02**2)
    full = full_accounting(event, DELTA)
    plain = best(event, DELTA)
    assert "langevin_composition" in full.by_accountant
    assert "langevin_composition" not in plain.by_accountant
    assert get_accountant("langevin_composition").kind == "paper"
    assert full.by_accountant["langevin_last_iterate"] == pytest.approx(plain.epsilon,
                                                                       rel=1e-12)
    assert full.epsilon == min(full.by_accountant.values())
    with pytest.raises(ValueError, match="delta must be in the open interval"):
        full_accounting(event, 0.0)


# ---------------------------------------------------------------------- plots
def test_require_matplotlib_passes_when_installed_and_names_the_fix_when_not(monkeypatch):
    """Installed: no error. Hidden: ImportError naming the 'plot' extra, also from the plots."""
    assert require_matplotlib() is None
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"pip install 'noisygd\[plot\]'"):
        require_matplotlib()
    with pytest.raises(ImportError, match=r"noisygd\[plot\]"):
        plot_training_curve([1, 2], [0.5, 0.4], "loss")


def test_plot_epsilon_delta_leaves_refused_points_out_and_marks_the_fit():
    """A PNG; nan points are left out (same image as the curve without them), an all-nan curve
    draws nothing; the fit's point changes the image; the backend is untouched."""
    before = dict.__getitem__(matplotlib.rcParams, "backend")
    xs = [1e-7, 1e-6, 1e-5, 1e-4]
    with_nan = Curve("gdp", "thm", "general", xs, [5.0, math.nan, 4.0, 3.5])
    without = Curve("gdp", "thm", "general", [xs[0], xs[2], xs[3]], [5.0, 4.0, 3.5])
    a = plot_epsilon_delta([with_nan], DELTA, 4.0, "gdp")
    _decode(a)
    assert a == plot_epsilon_delta([without], DELTA, 4.0, "gdp")
    empty = Curve("rdp", "thm", "general", xs, [math.nan] * 4)
    assert plot_epsilon_delta([empty], DELTA, 4.0, "gdp") == plot_epsilon_delta(
        [], DELTA, 4.0, "gdp")
    assert plot_epsilon_delta([without], DELTA, 4.5, "gdp") != a
    assert plot_epsilon_delta([without, empty], DELTA, 4.0, "gdp") == a
    assert dict.__getitem__(matplotlib.rcParams, "backend") == before


def test_plot_epsilon_steps_leaves_refused_points_out_and_marks_the_steps():
    """A PNG; nan points left out; the fit's step count changes the image; deterministic."""
    with_nan = Curve("gdp", "thm", "general", [1, 5, 15, 30], [0.5, math.nan, 2.0, 3.0])
    without = Curve("gdp", "thm", "general", [1, 15, 30], [0.5, 2.0, 3.0])
    a = plot_epsilon_steps([with_nan], DELTA, 30)
    _decode(a)
    assert a == plot_epsilon_steps([without], DELTA, 30)
    assert a != plot_epsilon_steps([without], DELTA, 15)
    paper = Curve("gdp", "thm", "paper", [1, 15, 30], [0.5, 2.0, 3.0])
    assert a != plot_epsilon_steps([paper], DELTA, 30)  # labelled "(paper)"


def test_plot_training_curve_takes_any_sequence_and_shows_its_label():
    """Lists, tuples and arrays give the same PNG; a different label or value changes it."""
    steps, values = [1, 2, 3, 4], [0.7, 0.6, 0.55, 0.52]
    a = plot_training_curve(steps, values, "loss")
    _decode(a)
    assert a == plot_training_curve(tuple(steps), np.asarray(values), "loss")
    assert a != plot_training_curve(steps, values, "accuracy")
    assert a != plot_training_curve(steps, [0.7, 0.6, 0.55, 0.1], "loss")


# ---------------------------------------------------------------------- render_plots
def test_render_plots_draws_each_present_plot_with_the_plot_functions():
    """Keys in PLOT_NAMES order, only those the report holds; bytes equal the plot functions'."""
    rep = _report()
    plots = render_plots(rep)
    assert list(plots) == list(PLOT_NAMES)
    acc = rep.accounting
    assert plots["epsilon_delta"] == plot_epsilon_delta(rep.delta_curves, DELTA, acc.epsilon,
                                                        acc.accountant)
    assert plots["epsilon_steps"] == plot_epsilon_steps(rep.step_curves, DELTA, 30)
    assert plots["training_curve"] == plot_training_curve([1.0, 2.0, 3.0], [0.7, 0.6, 0.55],
                                                          "held-out loss")
    assert set(render_plots(_report(steps=False, training=False))) == {"epsilon_delta"}
    no_count = _report(training=False)
    no_count.steps = None
    assert set(render_plots(no_count)) == {"epsilon_delta"}


# ---------------------------------------------------------------------- render_html
def test_render_html_embeds_the_given_plots_verbatim():
    """Given plots are embedded byte for byte as data URIs; nothing external is loaded; the
    summary shows epsilon, delta, budget, accountant and event; text is escaped."""
    rep = _report()
    fake = {"epsilon_delta": b"first", "epsilon_steps": b"second", "training_curve": b"third"}
    page = render_html(rep, fake)
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert _images(page) == fake
    lowered = page.lower()
    for forbidden in ("http://", "https://", "<script", "<link", "url("):
        assert forbidden not in lowered
    acc = rep.accounting
    assert f"epsilon = {acc.epsilon:.6g} at delta = {DELTA:.6g}" in page
    assert "(budget: epsilon = 3)" in page
    assert f"<b>{acc.accountant}</b>" in page
    assert html.escape(rep.event.describe()) in page
    assert "<title>report &lt;&amp;&gt; test</title>" in page
    assert "report <&> test" not in page


def test_render_html_notes_absent_plots_and_draws_when_not_given():
    """Without the steps or training plot the page says why; plots=None draws render_plots."""
    rep = _report(steps=False, training=False)
    page = render_html(rep, {"epsilon_delta": b"only"})
    assert set(_images(page)) == {"epsilon_delta"}
    assert "No epsilon-against-steps plot: no steps &lt;here&gt;" in page
    assert html.escape(NO_TRAINING_CURVE) in page
    drawn = render_html(rep)
    assert _images(drawn) == render_plots(rep)
    _decode(_images(drawn)["epsilon_delta"])


# ---------------------------------------------------------------------- paths and files
def test_png_paths_are_stem_dot_name_dot_png_beside_the_page(tmp_path):
    """<stem>.<name>.png in the page's folder, whatever the page's ending; order kept."""
    names = ("epsilon_delta", "training_curve")
    got = png_paths(tmp_path / "sub" / "r.html", names)
    assert list(got) == list(names)
    assert got == {n: tmp_path / "sub" / f"r.{n}.png" for n in names}
    assert png_paths("a.b.html", ["x"]) == {"x": Path("a.b.x.png")}
    assert png_paths(Path("page"), ["x"]) == {"x": Path("page.x.png")}
    assert png_paths("r.html", []) == {}


def test_check_report_path_accepts_absent_or_regular_files(tmp_path):
    """An absent path or a regular file (page or plots) is returned as a Path."""
    page = tmp_path / "r.html"
    assert check_report_path(str(page)) == page
    page.write_text("old")
    for target in png_paths(page, tuple(PLOT_NAMES)).values():
        target.write_bytes(b"old")
    assert check_report_path(page) == page


def test_check_report_path_refuses_links_directories_and_fifos(tmp_path):
    """The page or any of its PNG paths being a link, a directory or a FIFO is refused."""
    elsewhere = tmp_path / "elsewhere.html"
    elsewhere.write_text("keep")
    link = tmp_path / "link.html"
    link.symlink_to(elsewhere)
    with pytest.raises(OutputPathError, match=r"--report path .* is a symbolic link"):
        check_report_path(link)
    with pytest.raises(OutputPathError, match="is a directory"):
        check_report_path(tmp_path)
    (tmp_path / "p.epsilon_steps.png").mkdir()
    with pytest.raises(OutputPathError, match=r"--report plot path .* is a directory"):
        check_report_path(tmp_path / "p.html")
    os.mkfifo(tmp_path / "q.training_curve.png")
    with pytest.raises(OutputPathError, match="not a regular file"):
        check_report_path(tmp_path / "q.html")
    assert elsewhere.read_text() == "keep"


def test_check_report_path_needs_matplotlib_first(monkeypatch, tmp_path):
    """Without matplotlib: ImportError before the path is even looked at."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"noisygd\[plot\]"):
        check_report_path(tmp_path)  # a directory, but the missing extra is said first


def test_write_files_writes_each_file_and_returns_the_paths(tmp_path):
    """Each path gets its bytes (folders created, old files replaced), in the given order,
    with no temporary file left."""
    old = tmp_path / "r.html"
    old.write_text("old page")
    files = {old: b"<html>new</html>", tmp_path / "new" / "r.x.png": PNG_MAGIC + b"data"}
    written = write_files(files)
    assert written == list(files)
    for path, data in files.items():
        assert path.read_bytes() == data
    assert not list(tmp_path.rglob("*.tmp"))
    assert write_files({}) == []


def test_write_files_refuses_a_link_or_directory_target(tmp_path):
    """A link or directory target raises OutputPathError and is left as it was."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_bytes(b"keep")
    link = tmp_path / "r.html"
    link.symlink_to(elsewhere)
    with pytest.raises(OutputPathError, match="symbolic link"):
        write_files({link: b"new"})
    assert link.is_symlink() and elsewhere.read_bytes() == b"keep"
    folder = tmp_path / "dir.png"
    folder.mkdir()
    with pytest.raises(OutputPathError, match="is a directory"):
        write_files({folder: b"new"})
    assert folder.is_dir() and not list(tmp_path.rglob("*.tmp"))
