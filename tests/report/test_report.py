"""noisygd.report: privacy curves, the HTML page, its plots, and what it must not contain."""

from __future__ import annotations

import base64
import math
import re
import subprocess
import sys

import numpy as np
import pytest
from scipy.stats import norm

from noisygd.accounting import best
from noisygd.accounting.events import (
    Composed,
    Gaussian,
    LastIterateLangevin,
    Neighbouring,
    PoissonSampled,
    SelfComposed,
)
from noisygd.accounting.tree import tree_event
from noisygd.estimators import CONDITIONING_RELEASES, CONDITIONING_ROUNDS
from noisygd.exceptions import UnsupportedEventError
from noisygd.mechanisms.feature_range import FEATURE_RANGE_ROUNDS
from noisygd.report import (
    NO_TRAINING_CURVE,
    PLOT_NAMES,
    build_report,
    epsilon_delta_curves,
    epsilon_step_curves,
    to_html,
    truncate_event,
    write_report,
)
from noisygd.report.content import PRE_RELEASE_NAMES
from noisygd.report.curves import run_steps, step_grid

pytest.importorskip("matplotlib")

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)) / 3
    y = (X[:, 0] - X[:, 1] > 0).astype(int)
    return X, y


@pytest.fixture(scope="module")
def fitted():
    from noisygd.estimators import DPLogisticRegression

    X, y = _data()
    return DPLogisticRegression(epsilon=1.0, delta=1e-5, classes=[0, 1],
                                random_state=0, feature_range_share=0.0).fit(X, y)


def gdp_epsilon_closed_form(mu: float, delta: float) -> float:
    """Epsilon of mu-GDP at delta (Dong, Roth, Su 2022, Cor. 2.13), solved by bisection."""
    def d(eps):
        return norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)

    lo, hi = 0.0, 100.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if d(mid) > delta else (lo, mid)
    return hi


# ---------------------------------------------------------------------- curves
def test_truncate_cuts_every_repeated_step_and_keeps_the_count():
    count = Gaussian(30.0)
    ev = Composed((count, SelfComposed(Gaussian(4.0), 50), SelfComposed(Gaussian(5.0), 50)))
    cut = truncate_event(ev, 7)
    assert cut == Composed((count, SelfComposed(Gaussian(4.0), 7),
                            SelfComposed(Gaussian(5.0), 7)))
    assert truncate_event(ev, 500) == ev
    assert run_steps(ev) == 50
    sgd = SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 1000)
    assert truncate_event(sgd, 10) == SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 10)


def test_truncate_langevin_changes_only_the_steps():
    ev = LastIterateLangevin(strong_convexity=1.0, smoothness=4.0, step_size=0.02, sigma=0.02,
                             steps=100, n_samples=5000, sensitivity=4.0, constraint="none",
                             start_variance=2 * 0.02**2)
    cut = truncate_event(ev, 10)
    assert cut.steps == 10
    assert {k: v for k, v in vars(cut).items() if k != "steps"} == \
        {k: v for k, v in vars(ev).items() if k != "steps"}


def test_events_without_steps_are_refused_not_guessed():
    tree = tree_event(noise_multiplier=5.0, steps=16, epochs=1,
                      relation=Neighbouring.REPLACE_ONE)
    with pytest.raises(UnsupportedEventError):
        truncate_event(tree, 3)
    with pytest.raises(UnsupportedEventError):
        epsilon_step_curves(Gaussian(2.0), 1e-5)


def test_step_curve_matches_the_gdp_closed_form_and_ends_at_the_fit():
    count, z, T, delta = Gaussian(30.0), 4.0, 60, 1e-5
    ev = Composed((count, SelfComposed(Gaussian(z), T)))
    curves = {c.accountant: c for c in epsilon_step_curves(ev, delta, steps=[1, 5, 20, 60])}
    gdp = curves["gdp"]
    for k, eps in zip(gdp.x, gdp.epsilon, strict=True):
        mu = math.sqrt(count.mu**2 + k / z**2)
        assert eps == pytest.approx(gdp_epsilon_closed_form(mu, delta), rel=1e-6)
    full = best(ev, delta, include_paper=True, exhaustive=True)
    assert set(curves) == set(full.by_accountant)
    for name, c in curves.items():  # the last point is the fit's own epsilon
        assert c.epsilon[-1] == pytest.approx(full.by_accountant[name], rel=1e-9)
        assert all(b >= a - 1e-12 for a, b in zip(c.epsilon, c.epsilon[1:], strict=False))


def test_delta_curve_is_decreasing_and_passes_through_the_fit():
    ev = SelfComposed(PoissonSampled(0.02, Gaussian(1.2)), 300)
    full = best(ev, 1e-6, include_paper=True, exhaustive=True)
    curves = epsilon_delta_curves(ev, 1e-6, result=full)
    assert {c.accountant for c in curves} == set(full.by_accountant) == {"rdp", "pld"}
    for c in curves:
        i = c.x.index(1e-6)
        assert c.epsilon[i] == pytest.approx(full.by_accountant[c.accountant], rel=1e-9)
        assert all(b <= a + 1e-9 for a, b in zip(c.epsilon, c.epsilon[1:], strict=False))


def test_langevin_figure1_shape_last_iterate_levels_off():
    # Figure 1 of seed 004 (beta = 4, S_g = 4, n = 5000, eta = sigma = 0.02): the
    # last-iterate bound levels off while composing every step keeps growing.
    ev = LastIterateLangevin(strong_convexity=1.0, smoothness=4.0, step_size=0.02, sigma=0.02,
                             steps=2000, n_samples=5000, sensitivity=4.0, constraint="none",
                             start_variance=2 * 0.02**2)
    curves = {c.accountant: c for c in epsilon_step_curves(ev, 1e-5)}
    last, comp = curves["langevin_last_iterate"], curves["langevin_composition"]
    assert comp.kind == "paper"
    assert comp.epsilon[-1] > 2 * comp.epsilon[len(comp.epsilon) // 2]  # grows
    assert comp.epsilon[-1] > comp.epsilon[-5]
    assert last.epsilon[-1] == pytest.approx(last.epsilon[-2], rel=1e-3)  # plateau
    assert last.epsilon[-1] < comp.epsilon[-1]


def test_step_grid_covers_one_to_total():
    g = step_grid(126)
    assert g[0] == 1 and g[-1] == 126 and g == sorted(set(g))
    assert step_grid(1) == [1]


# ---------------------------------------------------------------------- content
def test_budget_parts_name_the_releases_made_before_the_run():
    """A default DPLinearRegression fit without bounds: its pre-release stages are named
    parts of the budget, in order, each with its declared share of mu^2 (feature range 0.0625
    over its three releases, centre 0.1 over its five, per-feature scale 0.05, residual scale
    0.1), then the count (0.01) and the run (the rest, 0.6775); a release passed in as
    prior_events keeps its generic label."""
    from noisygd.estimators import DPLinearRegression

    rng = np.random.default_rng(0)
    X = rng.random((600, 4))
    y = X @ np.array([1.0, 2.0, 3.0, 4.0]) / 10
    model = DPLinearRegression(epsilon=1.0, target_range=(0.0, 1.0), target_range_share=0.0,
                               random_state=0).fit(X, y)
    parts = build_report(model).budget_parts
    k = len(CONDITIONING_ROUNDS) + len(FEATURE_RANGE_ROUNDS) - 1
    assert [p["part"] for p in parts[:k + 3]] == [
        "the private feature range (released before the run)",
        "the private offsets of the columns far from 0 (released before the run)",
        "the columns' distances to their private offsets (released before the run)",
        *(f"{PRE_RELEASE_NAMES[name]} (released before the run)"
          for name in CONDITIONING_RELEASES),
        "the private per-feature scale (released before the run)",
        "the private target and residual scales (released before the run)"]
    shares = [p["mu2_share"] for p in parts]
    assert shares == pytest.approx([*(0.0625 * f for f in FEATURE_RANGE_ROUNDS),
                                    *(0.1 * f for f in CONDITIONING_ROUNDS), 0.05, 0.1,
                                    0.01, 0.6775], rel=1e-9)
    assert parts[k + 3]["part"].startswith("the number of rows")
    prior = Gaussian(20.0, 1.0)
    given = DPLinearRegression(epsilon=1.0, target_range=(0.0, 1.0), random_state=0,
                               target_range_share=0.0,
                               feature_bounds=(0.0, 1.0)).fit(X, y, prior_events=[prior])
    labels = [p["part"] for p in build_report(given).budget_parts]
    assert labels[:2] == ["prior release 1 of 1",
                          "the private target and residual scales (released before the run)"]


def test_budget_parts_give_the_count_its_declared_share(fitted):
    r = build_report(fitted)
    *conditioning, scale, count, run = r.budget_parts
    assert count["part"].startswith("the number of rows")
    # the classifier's private conditioning (default without bounds) takes 10% of the
    # Gaussian-DP budget mu^2 over its releases, its per-feature scale 5%, training.py gives
    # the noisy count 1%, the run the rest
    assert sum(c["mu2_share"] for c in conditioning) == pytest.approx(0.1, rel=1e-9)
    assert [c["event"] for c in conditioning] == fitted.conditioning_["release"]["events"]
    assert scale["mu2_share"] == pytest.approx(0.05, rel=1e-9)
    assert scale["event"] == fitted.conditioning_["feature_scale_release"]["event"]
    assert count["mu2_share"] == pytest.approx(0.01, rel=1e-9)
    assert run["mu2_share"] == pytest.approx(0.84, rel=1e-9)
    assert r.accounting.epsilon == pytest.approx(fitted.privacy_.epsilon, rel=1e-9)
    assert r.data_handling["paid_for"]
    # every release before the run is named in the data-handling statements, with its event
    paid = r.data_handling["paid_for"]
    for release in fitted.fit_info_["pre_releases"]:
        assert any(release["statistic"] in s and release["event"] in s for s in paid)
    assert r.data_handling["features"].startswith("features without declared bounds")
    statuses = {(c.topic, c.status) for c in r.checks}
    assert ("budget", "holds") in statuses
    assert any(c.topic == "accounting" and c.status == "fails" for c in r.checks)
    assert r.training_curve is None and r.training_curve_note == NO_TRAINING_CURVE


def test_every_input_kind_gives_the_same_accounting(fitted):
    from noisygd.accounting.serialization import event_to_dict

    payload = {"event": event_to_dict(fitted.privacy_.event),
               "privacy": fitted.privacy_report(), "params": {"epsilon": 1.0},
               "coef": np.asarray(fitted.coef_).tolist(),
               "intercept": np.atleast_1d(fitted.intercept_).tolist(),
               "feature_names": ["a", "b", "c", "d"], "labels": ["no", "yes"],
               "report": {"declared_public": ["x"], "paid_for": []}}
    reports = [build_report(fitted), build_report(fitted.privacy_), build_report(payload)]
    eps = {round(r.accounting.epsilon, 12) for r in reports}
    assert len(eps) == 1
    assert reports[2].coefficients["feature_names"] == ["a", "b", "c", "d"]
    with pytest.raises(TypeError):
        build_report(object())


# ---------------------------------------------------------------------- the page
def _images(page: str) -> dict[str, bytes]:
    found = re.findall(r'<img id="plot-([a-z_]+)"[^>]*src="data:image/png;base64,([^"]+)"',
                       page)
    return {name: base64.b64decode(data) for name, data in found}


def test_page_is_self_contained_and_embeds_every_plot(fitted):
    page = to_html(fitted)
    assert page.startswith("<!DOCTYPE html>")
    lowered = page.lower()
    for forbidden in ("http://", "https://", "<script", "<link", "@import", "url("):
        assert forbidden not in lowered, forbidden
    # every src is a data: URI
    assert all(s.startswith("data:image/png;base64,")
               for s in re.findall(r'src="([^"]*)"', page))
    imgs = _images(page)
    assert set(imgs) == {"epsilon_delta", "epsilon_steps"}
    for png in imgs.values():
        assert png.startswith(PNG_MAGIC)
    assert NO_TRAINING_CURVE.split(":")[0] in page
    for name in best(fitted.privacy_.event, 1e-5, include_paper=True,
                     exhaustive=True).by_accountant:
        assert f"<td>{name}</td>" in page


def test_training_curve_when_supplied(fitted):
    page = to_html(fitted, training_curve=([1, 2, 3], [0.69, 0.6, 0.55], "held-out loss"))
    assert set(_images(page)) == set(PLOT_NAMES)
    with pytest.raises(ValueError):
        build_report(fitted, training_curve=([1, 2], [0.5], "loss"), curves=False)


def test_text_is_escaped(fitted):
    page = to_html(fitted, title="<b>x</b> & <script>alert(1)</script>")
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_page_reads_nothing_from_the_rows_but_the_released_coefficients():
    # Two different datasets of the same public size: with the coefficients left out, the
    # pages are byte-identical (plots included): the page holds only public facts. (The
    # private conditioning's centre and clip are released values too, so these fits declare
    # conditioning_share=0: the coefficients are then the only released values.)
    from noisygd.estimators import DPLogisticRegression

    pages = []
    for seed in (1, 2):
        X, y = _data(seed=seed)
        X[:5] *= 1 + seed  # different rows, same public facts
        est = DPLogisticRegression(epsilon=1.0, delta=1e-5, classes=[0, 1], random_state=7,
                                   n_samples_public=400, conditioning_share=0).fit(X, y)
        report = build_report(est)
        report.coefficients = None
        pages.append(to_html(report))
    assert pages[0] == pages[1]


def test_write_report_writes_page_and_pngs(fitted, tmp_path):
    out = tmp_path / "r.html"
    written = write_report(fitted, out)
    assert written[0] == out
    assert {p.name for p in written[1:]} == {"r.epsilon_delta.png", "r.epsilon_steps.png"}
    imgs = _images(out.read_text(encoding="utf-8"))
    for p in written[1:]:
        assert p.read_bytes() == imgs[p.name.split(".")[1]]
    assert not list(tmp_path.glob(".*.tmp"))


def test_write_report_refuses_a_link(fitted, tmp_path):
    from noisygd.data.output import OutputPathError

    target = tmp_path / "elsewhere.html"
    target.write_text("keep")
    link = tmp_path / "r.html"
    link.symlink_to(target)
    with pytest.raises(OutputPathError):
        write_report(fitted, link)
    assert target.read_text() == "keep"


def test_no_pyplot_no_backend_change():
    # the raw rcParams entry: get_backend() itself would resolve the backend via pyplot
    code = ("import matplotlib, sys, numpy as np\n"
            "before = dict.__getitem__(matplotlib.rcParams, 'backend')\n"
            "from noisygd.estimators import DPLogisticRegression\n"
            "from noisygd.report import to_html\n"
            "X = np.random.default_rng(0).normal(size=(200, 3)) / 3\n"
            "y = (X[:, 0] > 0).astype(int)\n"
            "m = DPLogisticRegression(classes=[0, 1], random_state=0).fit(X, y)\n"
            "to_html(m)\n"
            "after = dict.__getitem__(matplotlib.rcParams, 'backend')\n"
            "print(before == after, 'matplotlib.pyplot' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["True", "False"]


@pytest.mark.parametrize(("params", "step_plot"), [
    ({"method": "noisy_sgd"}, True),
    ({"method": "dp_ftrl", "neighbouring": "replace_one", "method_options": {"epochs": 2}},
     False),
    ({"method": "output_perturbation", "neighbouring": "replace_one", "l2": 0.1}, False),
])
def test_every_method_gets_a_page(params, step_plot):
    from noisygd.estimators import DPLogisticRegression

    X, y = _data(n=1500)
    est = DPLogisticRegression(epsilon=1.0, delta=1e-5, classes=[0, 1], random_state=0,
                               **params).fit(X, y)
    report = build_report(est)
    page = to_html(report)
    imgs = _images(page)
    assert ("epsilon_steps" in imgs) is step_plot
    if not step_plot:  # the page says why there is no epsilon-against-steps plot
        assert report.step_curves_note and "No epsilon-against-steps plot" in page
    assert report.accounting.epsilon <= 1.0 * (1 + 1e-9)
    assert report.accounting.epsilon == pytest.approx(est.privacy_.epsilon, rel=1e-9)


def test_clipped_value_counts_are_a_labelled_budget_part_and_a_data_statement():
    """A schema fit with count_clipped = true: the counts are a part of the event named as
    such in "where the budget went" (its mu^2 share = the declared share, one statistic), and
    the data-handling section shows them as noisy and paid for."""
    import pandas as pd

    from noisygd.schema import parse_schema
    from noisygd.schema.fitting import fit_table

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.uniform(-1.0, 2.0, 2000)})
    frame["y"] = np.where(frame["x"] + rng.normal(0, 0.3, 2000) > 0.5, 1, 0)
    schema = parse_schema({"privacy": {"preprocessing_share": 0.25},
                           "target": {"name": "y", "labels": [0, 1]},
                           "columns": {"x": {"kind": "numeric", "bounds": [0, 1],
                                             "count_clipped": True}}})
    _, payload = fit_table(schema, frame, params={"epsilon": 1.0, "delta": 1e-5,
                                                   "random_state": 0,
                                                   "n_samples_public": 2000})
    report = build_report(payload, payload=payload, curves=False)
    first, run = report.budget_parts
    assert first["part"] == "clipped-value counts (noisy, paid) of column 'x' (paid for privately)"
    assert first["mu2_share"] == pytest.approx(0.25, rel=1e-9)
    assert run["part"] == "the training run"
    c = payload["clipped_counts"]["x"]
    assert (f"column 'x': clipped values (noisy, paid): {c['below']} below 0, {c['above']} "
            "above 1") in " ".join(report.data_handling["paid_for"])
    assert "share 0.25 of mu^2 per column" in report.data_handling["clipping"]
