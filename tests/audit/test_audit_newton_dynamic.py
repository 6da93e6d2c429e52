"""Construction of the audits of ``method="dynamic"`` and ``method="newton"`` (fast)."""

from __future__ import annotations

import numpy as np
import pytest

from noisygd.accounting import best
from noisygd.audit.problems import make_problem


def test_dynamic_white_box_statistic_shift_is_the_events_mu() -> None:
    p = make_problem("dynamic", epsilon=2.0)
    sig = np.asarray(p.settings["sigmas"])
    assert p.nu == pytest.approx(float(np.sqrt(np.sum(sig ** -2.0))), rel=1e-12)
    for seed in range(3):
        r0 = p.run(0, np.random.default_rng(seed))
        r1 = p.run(1, np.random.default_rng(seed))
        assert r0.event == r1.event
        assert p.observe(r1) - p.observe(r0) == pytest.approx(p.nu, abs=1e-9)
    assert best(r0.event, 1e-5).epsilon == pytest.approx(2.0, rel=1e-3)


def test_newton_canary_is_the_worst_case_of_both_releases() -> None:
    from noisygd.accounting.events import Neighbouring
    from noisygd.audit.problems import CANARY_TARGET, _oracles
    from noisygd.objectives.glm import SquaredLoss

    p = make_problem("newton", epsilon=2.0)
    d0, d1 = _oracles(SquaredLoss(fit_intercept=False), Neighbouring.ADD_REMOVE, 4, 1.0,
                      CANARY_TARGET)
    theta = np.array([0.3, -0.2])
    # the canary's curvature term: B^2 e_0 e_0^T, Frobenius norm C_H = B^2 = 1
    dH = d1.clipped_curvature_sum(theta, 1.0) - d0.clipped_curvature_sum(theta, 1.0)
    assert np.allclose(dH, [[1.0, 0.0], [0.0, 0.0]], atol=1e-12)
    # its clipped gradient: -C e_0 (target 1e6)
    dg = d1.clipped_gradient_sum(theta, 1.0) - d0.clipped_gradient_sum(theta, 1.0)
    assert np.allclose(dg, [-1.0, 0.0], atol=1e-12)
    r0 = p.run(0, np.random.default_rng(0))
    assert best(r0.event, 1e-5).epsilon == pytest.approx(2.0, rel=1e-3)
    assert not p.gaussian_output and p.family is None  # Clopper-Pearson headline


@pytest.mark.parametrize("relation", ["add_remove", "replace_one"])
def test_newton_multinomial_canary_starts_above_both_clips(relation) -> None:
    """The softmax audit's canary: at Theta = 0 its clipped gradient and clipped curvature
    term are at their clips (both releases differ by their sensitivities there; under
    replace-one the curvature sums are equal), it alone touches Theta[:, 0], and the run
    spends the calibrated budget."""
    p = make_problem("newton_multinomial", epsilon=2.0, relation=relation)
    assert p.settings["n_classes"] == 3 and not p.gaussian_output
    r0, r1 = (p.run(w, np.random.default_rng(0)) for w in (0, 1))
    assert r0.event == r1.event
    assert best(r0.event, 1e-5).epsilon == pytest.approx(2.0, rel=1e-3)
    assert np.all(np.isfinite(r1.theta)) and r1.theta.shape == (6,)

    from noisygd.audit.problems import _ordinary_rows
    from noisygd.objectives.multinomial import MultinomialLogisticLoss
    from noisygd.oracles.array import ArrayOracle

    X, _ = _ordinary_rows(4)
    y = 1 + np.arange(4) % 2
    objective = MultinomialLogisticLoss(3, fit_intercept=False)
    canary = ArrayOracle(objective, np.array([[1.0, 0.0]]), np.array([0]), row_norm_bound=1.0)
    rows = ArrayOracle(objective, X, y, row_norm_bound=1.0)
    theta = np.zeros(6)
    g = canary.clipped_gradient_sum(theta, 0.5)
    H = canary.clipped_curvature_sum(theta, 0.4)
    assert np.linalg.norm(g) == pytest.approx(0.5, rel=1e-12)
    assert np.linalg.norm(H) == pytest.approx(0.4, rel=1e-12)
    touched = np.flatnonzero(np.abs(g) + np.abs(H).sum(axis=0))
    assert set(touched) <= {0, 2, 4}  # Theta[k, 0] in the row-major layout
    other = rows.clipped_gradient_sum(np.ones(6), None)
    assert np.allclose(other[[0, 2, 4]], 0.0)
