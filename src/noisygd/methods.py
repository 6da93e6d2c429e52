"""The training methods available as ``method=`` in estimators and ``noisygd fit``.

Each adapter plans an algorithm for a per-problem budget (epsilon, delta),
runs it and returns its :class:`~noisygd.algorithms.base.FitResult`; the
composition of everything released is accounted in
:func:`noisygd.training.fit_private`. Importing this module registers them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from noisygd.accounting.base import UnsupportedEventError
from noisygd.accounting.events import Neighbouring
from noisygd.algorithms.base import FitResult
from noisygd.exceptions import AssumptionError
from noisygd.objectives.base import Objective
from noisygd.training import MethodSpec, register_method


def _clip_norm(objective: Objective, row_norm_bound: float, clip: float | None) -> float:
    """The clipping norm: the user's, else the objective's Lipschitz constant."""
    if clip is not None:
        if not (clip > 0) or not np.isfinite(clip):
            raise ValueError(f"clip must be positive and finite, got {clip!r}")
        return float(clip)
    lipschitz = objective.constants(row_norm_bound).lipschitz
    if lipschitz is None:
        raise AssumptionError(
            f"{type(objective).__name__} states no Lipschitz constant for these settings: "
            "give a clipping norm (clip=...) or a projection radius"
        )
    return float(lipschitz)


def fit_noisy_gd(
    objective: Objective,
    X: np.ndarray,
    y: np.ndarray,
    *,
    epsilon: float,
    delta: float,
    n_samples: float,
    relation: Neighbouring,
    row_norm_bound: float,
    clip: float | None,
    max_iter: int | None,
    rng: np.random.Generator,
    **options: Any,
) -> FitResult:
    """NoisyGD (Lecture 12, eq. 12.1) with sigma, T and eta from the section-12.2 planner."""
    from noisygd.algorithms.noisy_gd import noisy_gd
    from noisygd.planning import plan_noisy_gd

    clip_norm = _clip_norm(objective, row_norm_bound, clip)
    constants = objective.constants(row_norm_bound)
    plan_kwargs: dict[str, Any] = {"clip": clip_norm, "relation": relation}
    init_distance = getattr(objective, "optimum_norm_bound", lambda: None)()
    if init_distance is not None:
        plan_kwargs["init_distance"] = init_distance
    if max_iter is not None:
        plan_kwargs["max_steps"] = int(max_iter)
    plan_kwargs.update(options.pop("plan", {}))
    plan = plan_noisy_gd(
        epsilon,
        delta,
        n_samples,
        objective.n_params(X.shape[1]),
        constants,
        **plan_kwargs,
    )
    run_kwargs = {**plan.noisy_gd_kwargs(), **options}
    result = noisy_gd(
        objective,
        X,
        y,
        clip=clip_norm,
        n_samples=n_samples,
        relation=relation,
        rng=rng,
        **run_kwargs,
    )
    result.info["plan"] = {
        k: (v.value if hasattr(v, "value") else v)
        for k, v in dataclasses.asdict(plan).items()
        if isinstance(v, int | float | str | bool | type(None)) or hasattr(v, "value")
    }
    return result


register_method(
    MethodSpec(
        name="noisy_gd",
        fit=fit_noisy_gd,
        gaussian=True,
        description="NoisyGD (eq. 12.1), planner of section 12.2, exact Gaussian-DP accounting",
    )
)


def _fit_langevin(objective: Objective, X: np.ndarray, y: np.ndarray, **kwargs: Any) -> FitResult:
    """Projected noisy GD released at its last iterate (seed 004, Algorithm 1, Theorem 4)."""
    from noisygd.planning_langevin import langevin_fit

    return langevin_fit(objective, X, y, **kwargs)


register_method(
    MethodSpec(
        name="langevin",
        fit=_fit_langevin,
        gaussian=False,
        relations=(Neighbouring.REPLACE_ONE,),
        description="projected noisy GD, last iterate only, Chourasia-Ye-Shokri 2021 accountant",
    )
)


#: Defaults of the NoisySGD adapter: expected batch 512, 10 epochs, step 0.5 on
#: the mean scale, momentum 0.9. Fixed public constants (chosen once on Adult,
#: see docs/noisy_sgd.md); they are not tuned on the data being fitted.
NOISY_SGD_DEFAULTS: dict[str, Any] = {
    "expected_batch_size": 512,
    "epochs": 10,
    "learning_rate": 0.5,
    "momentum": 0.9,
}


def fit_noisy_sgd(
    objective: Objective,
    X: np.ndarray,
    y: np.ndarray,
    *,
    epsilon: float,
    delta: float,
    n_samples: float,
    relation: Neighbouring,
    row_norm_bound: float,
    clip: float | None,
    max_iter: int | None,
    rng: np.random.Generator,
    prior_event: Any = None,
    **options: Any,
) -> FitResult:
    """NoisySGD with Poisson sampling (eqs. 12.2-12.3), noise calibrated on the whole release.

    The noise multiplier is the smallest meeting (epsilon, delta) for
    ``Composed((prior_event, T x PoissonSampled(q, Gaussian(z))))`` under the
    tightest accountant (PLD or RDP). Poisson sampling is accounted under
    add/remove neighbours only.
    """
    from noisygd.accounting.calibration import calibrate_noise_multiplier
    from noisygd.accounting.events import Composed, Gaussian, PoissonSampled, SelfComposed
    from noisygd.algorithms.noisy_sgd import noisy_sgd

    settings = {**NOISY_SGD_DEFAULTS, **options}
    clip_norm = _clip_norm(objective, row_norm_bound, clip)
    rate = min(1.0, settings.pop("expected_batch_size") / n_samples)
    steps = max(1, round(settings.pop("epochs") / rate))
    if max_iter is not None:
        steps = min(steps, int(max_iter))

    def make_event(z: float):
        own = SelfComposed(PoissonSampled(rate, Gaussian(z)), steps)
        return own if prior_event is None else Composed((prior_event, own))

    # RDP is fast and never tighter than PLD here, so its noise is an upper
    # bracket; PLD then finds the smallest noise it certifies (rtol 2e-3).
    z_rdp = calibrate_noise_multiplier(make_event, epsilon, delta, accountant="rdp")
    try:
        z = calibrate_noise_multiplier(
            make_event, epsilon, delta, accountant="pld",
            lower=0.8 * z_rdp, upper=z_rdp, rtol=2e-3,
        )
    except (ValueError, UnsupportedEventError):
        z = z_rdp
    result = noisy_sgd(
        objective,
        X,
        y,
        noise_multiplier=z,
        clip=clip_norm,
        n_samples=n_samples,
        sampling="poisson",
        sampling_rate=rate,
        steps=steps,
        normalize="expected_batch",
        rng=rng,
        **settings,
    )
    result.info["plan"] = {"noise_multiplier": z, "sampling_rate": rate, "steps": steps,
                           "calibrated_with_prior_event": prior_event is not None}
    return result


register_method(
    MethodSpec(
        name="noisy_sgd",
        fit=fit_noisy_sgd,
        gaussian=False,
        relations=(Neighbouring.ADD_REMOVE,),
        accepts_prior_event=True,
        description="NoisySGD with Poisson sampling (eqs. 12.2-12.3), PLD/RDP accounting",
    )
)


#: Defaults of the DP-FTRL adapter (batch 256, lambda 30, 4 epochs with a tree
#: restart per epoch, Honaker estimator, averaged output): public constants.
DP_FTRL_DEFAULTS: dict[str, Any] = {
    "batch_size": 256,
    "l2_ftrl": 30.0,
    "epochs": 4,
    "restart_every_epoch": True,
    "tree": "honaker",
    "output": "average",
}


def fit_dp_ftrl(
    objective: Objective,
    X: np.ndarray,
    y: np.ndarray,
    *,
    epsilon: float,
    delta: float,
    n_samples: float,
    relation: Neighbouring,
    row_norm_bound: float,
    clip: float | None,
    max_iter: int | None,
    rng: np.random.Generator,
    **options: Any,
) -> FitResult:
    """DP-FTRL with the tree mechanism (slides 001), noise from its exact Gaussian-DP mu.

    The tree release is a Gaussian mechanism: mu scales as 1/z, so the noise
    multiplier meeting (epsilon, delta) is ``mu(z=1) / mu(epsilon, delta)``.
    """
    from noisygd.accounting.calibration import calibrate_mu
    from noisygd.accounting.gdp import gaussian_mu
    from noisygd.accounting.tree import tree_event
    from noisygd.algorithms.dp_ftrl import dp_ftrl

    settings = {**DP_FTRL_DEFAULTS, **options}
    clip_norm = _clip_norm(objective, row_norm_bound, clip)
    batch = int(settings["batch_size"])
    steps_per_epoch = -(-X.shape[0] // batch)
    unit = tree_event(
        1.0, steps_per_epoch, int(settings["epochs"]),
        restart_every_epoch=bool(settings["restart_every_epoch"]), relation=relation,
    )
    z = gaussian_mu(unit) / calibrate_mu(epsilon, delta)
    result = dp_ftrl(objective, X, y, noise_multiplier=z, clip=clip_norm, rng=rng, **settings)
    result.info["plan"] = {"noise_multiplier": z, "steps_per_epoch": steps_per_epoch,
                           **{k: v for k, v in settings.items() if not isinstance(v, dict)}}
    return result


register_method(
    MethodSpec(
        name="dp_ftrl",
        fit=fit_dp_ftrl,
        gaussian=True,
        relations=(Neighbouring.REPLACE_ONE,),
        description="DP-FTRL with the binary-tree mechanism (Honaker), exact Gaussian-DP",
    )
)


def _fit_output_perturbation(
    objective: Objective,
    X: np.ndarray,
    y: np.ndarray,
    *,
    epsilon: float,
    delta: float,
    n_samples: float,
    relation: Neighbouring,
    row_norm_bound: float,
    clip: float | None,
    max_iter: int | None,
    rng: np.random.Generator,
    **options: Any,
) -> FitResult:
    """Output-perturbation GD (Zhang et al. 2017, Algorithm 1), analytic Gaussian noise.

    Defaults: the exact analytic-Gaussian calibration and the contraction
    sensitivity bound (both documented in docs/output_perturbation.md); pass
    ``method_options={"noise": "paper", "sensitivity_bound": "zhang2017"}``
    for the paper's own choices. Needs the objective's L and beta (no
    clipping: the sensitivity lemmas are about the unclipped gradient).
    """
    from noisygd.algorithms.output_perturbation import output_perturbation_gd

    if clip is not None:
        raise ValueError("output perturbation does not clip gradients: leave clip=None")
    settings: dict[str, Any] = {"noise": "analytic", "sensitivity_bound": "contraction"}
    bound = getattr(objective, "optimum_norm_bound", lambda: None)()
    if bound is not None:
        settings["optimum_norm_bound"] = bound
    if max_iter is not None:
        settings["steps"] = int(max_iter)
    settings.update(options)
    return output_perturbation_gd(
        objective, X, y, epsilon=epsilon, delta=delta, row_norm_bound=row_norm_bound,
        n_samples=int(n_samples), rng=rng, **settings,
    )


register_method(
    MethodSpec(
        name="output_perturbation",
        fit=_fit_output_perturbation,
        gaussian=False,
        relations=(Neighbouring.REPLACE_ONE,),
        description="full-batch GD then one Gaussian draw (Zhang et al. 2017, Algorithm 1)",
    )
)

#: RRPSGD runs up to n^2 single-example steps; above this many the adapter asks
#: for an explicit ``horizon`` rather than running for hours.
RRPSGD_MAX_DEFAULT_STEPS = 10_000_000


def _fit_rrpsgd(
    objective: Objective,
    X: np.ndarray,
    y: np.ndarray,
    *,
    epsilon: float,
    delta: float,
    n_samples: float,
    relation: Neighbouring,
    row_norm_bound: float,
    clip: float | None,
    max_iter: int | None,
    rng: np.random.Generator,
    **options: Any,
) -> FitResult:
    """Random-round private SGD (Zhang et al. 2017, Algorithm 2) with its two accounts.

    The released event is the tight one for the realised number of rounds
    (``R`` is drawn independently of the data); ``info["paper_event"]`` keeps
    the paper's own argument, whose epsilon the estimator reports in
    ``fit_info_`` beside it.
    """
    from noisygd.accounting.base import best
    from noisygd.algorithms.rrpsgd import rrpsgd

    if clip is not None:
        raise ValueError("RRPSGD does not clip gradients: leave clip=None")
    n = X.shape[0]
    horizon = options.pop("horizon", max_iter)
    if horizon is None and n * n > RRPSGD_MAX_DEFAULT_STEPS:
        raise ValueError(
            f"RRPSGD runs up to n^2 = {n * n:,} steps here; pass max_iter (a public horizon "
            f"<= {RRPSGD_MAX_DEFAULT_STEPS:,}) to run fewer"
        )
    result = rrpsgd(objective, X, y, epsilon=epsilon, delta=delta,
                    row_norm_bound=row_norm_bound, horizon=horizon, rng=rng, **options)
    paper = best(result.info["paper_event"], delta)
    result.info["paper_argument"] = {"epsilon": paper.epsilon, "accountant": paper.accountant}
    return result


register_method(
    MethodSpec(
        name="rrpsgd",
        fit=_fit_rrpsgd,
        gaussian=False,
        relations=(Neighbouring.REPLACE_ONE,),
        description="random-round private SGD (Zhang et al. 2017, Algorithm 2), tight accounting",
    )
)
