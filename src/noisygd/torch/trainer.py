r"""Private training of any ``torch.nn.Module``: the noisygd algorithms, on the module's device.

:class:`PrivateTrainer` takes a module, a torch optimiser on its parameters and a per-example
loss, and trains on ``(X, y)`` with one of the algorithms whose guarantee needs only clipping
(Lecture 12 and 14; seed 003), with the same events, accountants, calibration, privacy ledger
and report as the linear estimators:

``"noisy_sgd"`` (``sampling="poisson"``, add/remove)
    each step a Poisson batch (every example with probability :math:`\gamma`,
    :class:`~noisygd.torch.loader.PoissonLoader`); privatised gradient
    :math:`\hat g_t = (\sum_{i\in B_t}\mathrm{clip}_C(g_i) + \mathcal N(0,(zC)^2I))/(\gamma n)`
    (Opacus' normalisation). Event ``SelfComposed(PoissonSampled(gamma, Gaussian(z)), T)``.
``"noisy_sgd"`` (``sampling="shuffle"``, replace-one)
    fixed-size batches of a fresh permutation each epoch; divided by the batch size. Event
    ``SelfComposed(Gaussian(z, 2, REPLACE_ONE), epochs touched)`` (no amplification claimed).
``"noisy_gd"``
    every example every step; divided by the public ``n``. Event
    ``SelfComposed(Gaussian(z, Delta), T)``.
``"dp_ftrl"`` (replace-one)
    batches of consecutive examples in the order given (no sampling); the tree mechanism
    releases noisy prefix sums :math:`\tilde s_t` (Honaker's estimator by default) and the
    optimiser gets the increment :math:`(\tilde s_t - \tilde s_{t-1})/b`: with
    ``torch.optim.SGD(lr)`` this is exactly DP-FTRL,
    :math:`w_{t+1} = w_1 - \tilde s_t/\lambda` with :math:`\lambda = b/\mathrm{lr}`; any other
    optimiser post-processes the same released tree. Event ``TreeAggregation(z, T, epochs)``.
``"dynamic_noisy_gd"``
    NoisyGD with the noise multiplier of step ``t`` equal to :math:`z\,s_t` for the public
    shape ``s`` of :func:`noisygd.algorithms.schedules.noise_schedule` (``schedule=``, default
    ``"exponential"``: decreasing noise), the event the composition of the steps' Gaussians.

The privatised gradient is written into each parameter's ``.grad`` and the optimiser steps:
any torch optimiser works (post-processing). Gradients, noise (:mod:`noisygd.torch.noise`)
and the Poisson draws stay on the module's device: no host copy per step.

Planning without constants
--------------------------
A network states no Lipschitz or smoothness constant, so no bound chooses the steps: the rule
is public and documented. The user gives the batch size and ``steps`` or ``epochs``
(NoisySGD: :math:`T = \lceil E/\gamma\rceil`, :math:`\gamma = b/n`; shuffled and DP-FTRL:
:math:`E\lceil n/b\rceil`; NoisyGD: ``steps``), the learning rate through the optimiser, and
``epsilon``/``delta`` (the noise multiplier is then the smallest meeting them,
:func:`noisygd.accounting.calibration.calibrate_noise_multiplier` on the planned event) or
``noise_multiplier`` (the epsilon is then reported). The size ``n`` used for :math:`\gamma` and
the normalisation must be public: under add/remove neighbours pass ``n_samples_public``
(Opacus treats ``len(dataset)`` as public; noisygd asks); under replace-one it is public by
definition.

Refusals
--------
BatchNorm in training mode (not per-example; use GroupNorm) and the methods whose theorem
needs a convex loss or stated constants (:data:`REFUSED`) are refused before any data is read.
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from noisygd._checks import check_choice, check_positive, check_positive_int, check_probability
from noisygd.accounting.base import AccountingResult, within_budget
from noisygd.accounting.calibration import calibrate_noise_multiplier
from noisygd.accounting.dp_accounting_bridge import clear_pld_cache
from noisygd.accounting.events import (
    Composed,
    DpEvent,
    Gaussian,
    Neighbouring,
    PoissonSampled,
    SelfComposed,
)
from noisygd.accounting.registry import best
from noisygd.accounting.tree import TreeAggregation
from noisygd.algorithms.schedules import noise_schedule
from noisygd.mechanisms.secure import SecureRandom
from noisygd.mechanisms.tree import VARIANTS, honaker_node_variances
from noisygd.torch.loader import PoissonLoader, ShuffleLoader
from noisygd.torch.noise import NoiseSource, TorchNoise, as_noise_source
from noisygd.torch.oracle import LossFn, TorchOracle, check_per_example

__all__ = ["METHODS", "REFUSED", "PrivateTrainer", "TorchPlan", "check_method", "plan_run"]

METHODS = ("noisy_sgd", "noisy_gd", "dp_ftrl", "dynamic_noisy_gd")

#: Methods a network cannot use, and why.
REFUSED = {
    "langevin": "the Langevin last-iterate accountant needs a convex, smooth loss with stated "
                "Lipschitz and smoothness constants (its privacy converges only under them); a "
                "network is not convex and states no constant",
    "output_perturbation": "output perturbation bounds the sensitivity of the exact minimiser "
                           "of a strongly convex loss with a Lipschitz constant; a network's "
                           "minimiser has no such bound",
    "rrpsgd": "RRPSGD's privacy argument bounds the sensitivity of the unclipped iterates "
              "through convexity and stated Lipschitz and smoothness constants; a network "
              "states none",
    "ssp": "sufficient statistics perturbation is for least squares only",
    "bassily": "Bassily et al.'s algorithm needs a convex Lipschitz loss with a stated constant",
}

SAMPLINGS = ("poisson", "shuffle")


def check_method(method: str) -> str:
    """``method`` if a network can be trained with it; else ``ValueError`` saying why not."""
    if method in REFUSED:
        raise ValueError(f"method={method!r} cannot train a network: {REFUSED[method]}. "
                         f"Use one of {METHODS}.")
    return check_choice("method", method, METHODS)


@dataclass(frozen=True)
class TorchPlan:
    """Every public setting of a run (module doc, "Planning without constants")."""

    method: str
    steps: int
    epochs: float
    batch_size: int | None
    sampling_rate: float | None
    sampling: str | None
    relation: str
    n_samples: float
    noise_multiplier: float
    clip: float
    tree: str
    schedule: str | None
    noise_shape: tuple[float, ...] | None
    per_epoch: int | None

    def largest_sd(self, z: float | None = None) -> float:
        r"""The largest noise scale of one release, :math:`z\,\max_t s_t\,C` (``s_t`` the
        dynamic schedule's shape, 1 otherwise): a secure run's grid is chosen per release
        from its scale and grows with it, so the event's one inflation factor is the one of
        this scale (as NumPy's ``dynamic_noisy_gd`` takes the max over its steps)."""
        z = self.noise_multiplier if z is None else z
        return z * max(self.noise_shape or (1.0,)) * self.clip

    def event(self, z: float | None = None) -> DpEvent:
        """The event of the run with noise multiplier ``z`` (default the plan's)."""
        z = self.noise_multiplier if z is None else z
        rel = Neighbouring(self.relation)
        sens = rel.clipped_sum_sensitivity
        if self.method == "noisy_gd":
            return SelfComposed(Gaussian(z, sensitivity=sens, relation=rel), self.steps)
        if self.method == "dynamic_noisy_gd":
            return Composed(tuple(Gaussian(z * s, sensitivity=sens, relation=rel)
                                  for s in self.noise_shape or ()))
        if self.method == "dp_ftrl":
            return TreeAggregation(noise_multiplier=z, steps=self.steps,
                                   epochs=int(self.epochs))
        if self.sampling == "poisson":
            return SelfComposed(PoissonSampled(self.sampling_rate, Gaussian(z)), self.steps)
        touched = math.ceil(self.steps / self.per_epoch)  # type: ignore[operator]
        return SelfComposed(Gaussian(z, sensitivity=sens, relation=rel), touched)


def plan_run(
    method: str, *, n_samples: float, clip: float, batch_size: int | None,
    steps: int | None, epochs: float | None, sampling: str = "poisson",
    relation: Neighbouring | str | None = None, tree: str = "honaker",
    schedule: str = "exponential", noise_multiplier: float | None = None,
    epsilon: float | None = None, delta: float, noise: NoiseSource | None = None,
    n_params: int = 1,
) -> TorchPlan:
    r"""The run's public plan: steps from the documented rule, the noise calibrated.

    Parameters
    ----------
    method : str
        One of :data:`METHODS`.
    n_samples : float
        Public number of examples ``n``.
    clip : float
        ``C``.
    batch_size : int or None
        Expected (Poisson) or exact batch size ``b``; not used by NoisyGD.
    steps, epochs : int, float or None
        Exactly one (module doc).
    sampling : {"poisson", "shuffle"}
        For NoisySGD.
    relation : Neighbouring or str, optional
        Default: add/remove, except replace-one for ``dp_ftrl`` and shuffled batches.
    tree : {"honaker", "plain"}
        DP-FTRL's prefix-sum estimator.
    schedule : str
        ``dynamic_noisy_gd``'s noise shape (:func:`~noisygd.algorithms.schedules.noise_schedule`).
    noise_multiplier, epsilon : float or None
        Exactly one: the noise, or the target it is calibrated to (with ``delta``).
    delta : float
    noise : NoiseSource, optional
        A secure source wraps the events (:meth:`NoiseSource.wrap_event`).
    n_params : int
        Coordinates of each release (secure mode's rounding).

    Returns
    -------
    TorchPlan
    """
    method = check_method(method)
    n = check_positive("n_samples", n_samples)
    C = check_positive("clip", clip)
    delta = check_probability("delta", delta)
    sampling = check_choice("sampling", sampling, SAMPLINGS)
    tree = check_choice("tree", tree, VARIANTS)
    if (noise_multiplier is None) == (epsilon is None):
        raise ValueError("give exactly one of epsilon (the noise is calibrated) and "
                         "noise_multiplier")
    if (steps is None) == (epochs is None):
        raise ValueError("give exactly one of steps and epochs (no constant of a network "
                         "chooses them)")
    default_rel = (Neighbouring.REPLACE_ONE if method == "dp_ftrl"
                   or (method == "noisy_sgd" and sampling == "shuffle")
                   else Neighbouring.ADD_REMOVE)
    rel = default_rel if relation is None else Neighbouring(relation)
    if method == "dp_ftrl" and rel != Neighbouring.REPLACE_ONE:
        raise ValueError("dp_ftrl is accounted under replace-one neighbours (the stream "
                         "length is public)")
    if method == "noisy_sgd" and sampling == "shuffle" and rel != Neighbouring.REPLACE_ONE:
        raise ValueError("shuffled batches are accounted under replace-one neighbours only "
                         "(under add/remove the batch boundaries shift)")
    if method == "noisy_sgd" and sampling == "poisson" and rel != Neighbouring.ADD_REMOVE:
        raise ValueError("Poisson sampling is accounted under add/remove neighbours")
    gamma = None
    per_epoch = None
    b = None
    if method in ("noisy_sgd", "dp_ftrl"):
        b = check_positive_int("batch_size", batch_size)
        if b > n:
            raise ValueError(f"batch_size={b} exceeds n_samples={n}")
    if method == "noisy_sgd" and sampling == "poisson":
        gamma = b / n  # type: ignore[operator]
        T = (check_positive_int("steps", steps) if steps is not None
             else math.ceil(check_positive("epochs", epochs) / gamma - 1e-9))
        E = T * gamma
    elif method in ("noisy_sgd", "dp_ftrl"):
        per_epoch = math.ceil(n / b)  # type: ignore[operator]
        if method == "dp_ftrl":
            if steps is not None and steps % per_epoch:
                raise ValueError(f"dp_ftrl runs whole epochs of {per_epoch} steps: give epochs")
            E = steps // per_epoch if steps is not None else check_positive_int("epochs",
                                                                                epochs)
            T = int(E) * per_epoch
        else:
            T = (check_positive_int("steps", steps) if steps is not None
                 else math.ceil(check_positive("epochs", epochs) * per_epoch))
            E = T / per_epoch
    else:
        T = check_positive_int("steps", steps) if steps is not None else check_positive_int(
            "epochs", epochs)
        E = float(T)
    shape = None
    if method == "dynamic_noisy_gd":
        raw = noise_schedule(schedule, 1.0, T)
        # scale so that sum_t (z s_t)^-2 = T / z^2: same budget as T steps of N(0, z^2)
        shape = tuple(float(s) for s in raw * math.sqrt(float(np.sum(raw ** -2.0)) / T))
    base = TorchPlan(method=method, steps=int(T), epochs=E, batch_size=b, sampling_rate=gamma,
                     sampling=sampling if method == "noisy_sgd" else None, relation=rel.value,
                     n_samples=n, noise_multiplier=1.0, clip=C, tree=tree,
                     schedule=schedule if method == "dynamic_noisy_gd" else None,
                     noise_shape=shape, per_epoch=per_epoch)
    source = noise if noise is not None else TorchNoise(torch.Generator())
    sens = rel.clipped_sum_sensitivity * C

    def make_event(z: float) -> DpEvent:
        return source.wrap_event(base.event(z), base.largest_sd(z), n_params, sens)

    if epsilon is not None:
        z = calibrate_noise_multiplier(make_event, epsilon, delta)
    else:
        z = check_positive("noise_multiplier", noise_multiplier)
    return TorchPlan(**{**asdict(base), "noise_multiplier": float(z)})


@functools.lru_cache(maxsize=16)
def _best(event: DpEvent, delta: float) -> AccountingResult:
    return best(event, delta)


def account(event: DpEvent, delta: float) -> AccountingResult:
    """:func:`noisygd.accounting.registry.best` of a planned event, computed once per process.

    The event and ``delta`` are public and the result depends on nothing else, so a process
    that trains several models on one plan (seeds, a sweep) accounts it once: the PLD
    accountant's work (about a million floats per distribution) is not repeated for each
    trainer. Each caller gets its own copy of the result. An event that is not hashable is
    accounted anew."""
    try:
        hash(event)
    except TypeError:
        return best(event, delta)
    return copy.deepcopy(_best(event, float(delta)))


class _Tree:
    """The binary-tree mechanism on tensors (:class:`noisygd.mechanisms.tree.TreeAggregator`'s
    algorithm, plain or Honaker, with the node noise from a :class:`NoiseSource`)."""

    def __init__(self, sd: float, variant: str, noise: NoiseSource) -> None:
        self.sd, self.variant, self.noise = sd, variant, noise
        self.t = 0
        self.exact: list[torch.Tensor | None] = []
        self.est: list[torch.Tensor | None] = []
        self._v = list(honaker_node_variances(64, sd))

    def add(self, g: torch.Tensor) -> torch.Tensor:
        self.t += 1
        t = self.t
        i = (t & -t).bit_length() - 1
        while len(self.exact) <= i:
            self.exact.append(None)
            self.est.append(None)
        exact = g.clone()
        if self.variant == "plain":
            for j in range(i):
                exact += self.exact[j]  # type: ignore[operator]
            est = self.noise.add_gaussian(exact, self.sd)
        else:
            est = self.noise.add_gaussian(exact, self.sd)
            for h in range(1, i + 1):
                exact = exact + self.exact[h - 1]  # type: ignore[operator]
                children = est + self.est[h - 1]  # type: ignore[operator]
                noisy = self.noise.add_gaussian(exact, self.sd)
                two_v = 2.0 * self._v[h - 1]
                w = two_v / (two_v + self.sd ** 2)
                est = w * noisy + (1.0 - w) * children
        for j in range(i):
            self.exact[j] = None
            self.est[j] = None
        self.exact[i] = exact
        self.est[i] = est
        out = torch.zeros_like(g)
        for j in range(t.bit_length()):
            if (t >> j) & 1:
                out += self.est[j]  # type: ignore[arg-type]
        return out

    def state_dict(self) -> dict[str, Any]:
        return {"t": self.t, "exact": list(self.exact), "est": list(self.est)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.t = int(state["t"])
        self.exact = list(state["exact"])
        self.est = list(state["est"])


class PrivateTrainer:
    r"""Train a ``torch.nn.Module`` with a noisygd algorithm (module doc).

    Parameters
    ----------
    module : torch.nn.Module
    optimizer : torch.optim.Optimizer
        Any optimiser over the module's trained parameters; it steps on the privatised
        gradient (for ``dp_ftrl``, ``SGD(lr)`` is exactly DP-FTRL with :math:`\lambda = b/lr`).
    loss : callable
        Per-example loss, ``loss(output, target)`` of shape ``(B,)`` (``reduction="none"``).
    method : {"noisy_sgd", "noisy_gd", "dp_ftrl", "dynamic_noisy_gd"}, default="noisy_sgd"
    epsilon, delta : float
        The budget; the noise multiplier is calibrated (give ``noise_multiplier`` instead to
        fix the noise: ``epsilon`` is then reported at ``delta``).
    noise_multiplier : float, optional
    clip : float, default=1.0
        Per-example clipping norm ``C`` (the total with ``per_layer``).
    batch_size : int, optional
        Expected (Poisson) or exact batch size; the logical batch.
    steps, epochs : optional
        Exactly one (module doc, "Planning without constants").
    sampling : {"poisson", "shuffle"}, default="poisson"
    relation : {"add_remove", "replace_one"}, optional
    n_samples_public : int, optional
        The public number of examples (required under add/remove; module doc).
    per_layer : bool or sequence of float, default=False
        Per-layer clipping (:class:`~noisygd.torch.oracle.TorchOracle`).
    fused : {"auto", True, False}, default="auto"
    max_physical_batch_size : int, optional
        Examples per forward pass; logical batches are accumulated in chunks of this size.
    generator : torch.Generator, numpy.random.Generator, SecureRandom, int or None
        Randomness of the batches and the noise: a ``torch.Generator`` on the module's device
        (the default, seeded from the int or from the OS when None); a NumPy generator to
        reproduce the NumPy algorithms draw for draw; a ``SecureRandom`` for secure mode.
    secure : bool, default=False
        Secure mode (``generator`` must then be a ``SecureRandom`` or None).
    tree : {"honaker", "plain"}, default="honaker"
    schedule : str, default="exponential"
        ``dynamic_noisy_gd``'s noise shape.
    ledger, dataset : optional
        A privacy ledger and the dataset's name: the planned event is recorded there before
        any example is read (as the estimators do).
    progress : bool, default=False
        Show a tqdm progress bar.

    Attributes
    ----------
    plan_ : TorchPlan
    privacy_ : AccountingResult
        The planned (and, once :attr:`steps_done_` equals the plan's steps, performed) event
        with its epsilon under the tightest accountant.
    steps_done_ : int
    ledger_release_ : Release or None
    """

    def __init__(
        self, module: nn.Module, optimizer: torch.optim.Optimizer, loss: LossFn, *,
        method: str = "noisy_sgd", epsilon: float | None = None, delta: float | None = None,
        noise_multiplier: float | None = None, clip: float = 1.0,
        batch_size: int | None = None, steps: int | None = None, epochs: float | None = None,
        sampling: str = "poisson", relation: str | None = None,
        n_samples_public: int | None = None, per_layer: bool | Any = False,
        fused: bool | str = "auto", max_physical_batch_size: int | None = None,
        generator: Any = None, secure: bool = False, tree: str = "honaker",
        schedule: str = "exponential", ledger: Any = None, dataset: str | None = None,
        progress: bool = False,
    ) -> None:
        check_method(method)
        check_per_example(module)
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError("optimizer must be a torch.optim.Optimizer")
        if delta is None:
            raise ValueError("delta is required (the epsilon of the run is at this delta)")
        self.module, self.optimizer, self.loss = module, optimizer, loss
        self.method, self.epsilon = method, epsilon
        self.delta = check_probability("delta", delta)
        self.noise_multiplier, self.clip = noise_multiplier, clip
        self.batch_size, self.steps, self.epochs = batch_size, steps, epochs
        self.sampling, self.relation = sampling, relation
        self.n_samples_public = n_samples_public
        self.per_layer, self.fused = per_layer, fused
        self.max_physical_batch_size = max_physical_batch_size
        self.secure, self.tree, self.schedule = bool(secure), tree, schedule
        self.ledger, self.dataset, self.progress = ledger, dataset, progress
        device = next(module.parameters()).device
        if self.secure and generator is None:
            generator = SecureRandom()
        self.noise_ = as_noise_source(generator, device)
        if self.noise_.secure != self.secure:
            raise TypeError("secure=True needs generator=SecureRandom() (or None), and a "
                            "SecureRandom needs secure=True")
        self._sampler = (self.noise_.generator if isinstance(self.noise_, TorchNoise)
                         else self.noise_.rng)  # type: ignore[attr-defined]
        self.steps_done_ = 0
        self.ledger_release_ = None
        self.plan_: TorchPlan | None = None
        self._loader: Any = None
        self._tree: _Tree | None = None
        self._prev: torch.Tensor | None = None
        self._pending_loader: dict[str, Any] | None = None

    # ---------------------------------------------------------------- planning
    def _n_public(self, n_rows: int) -> float:
        rel = self._relation()
        if rel == Neighbouring.REPLACE_ONE:
            if self.n_samples_public is not None and int(self.n_samples_public) != n_rows:
                raise ValueError("under replace-one the number of examples is public and must "
                                 "be the true one")
            return float(n_rows)
        if self.n_samples_public is None:
            raise ValueError(
                "under add/remove neighbours the number of examples is private: pass "
                "n_samples_public=len(dataset) when it is public (Opacus assumes it is), or "
                "relation='replace_one'")
        n_public = check_positive_int("n_samples_public", self.n_samples_public)
        if n_public != n_rows:  # declared public, so the check reveals nothing more
            raise ValueError("n_samples_public must be the number of examples given to fit "
                             "(it is declared public and sets the sampling rate and the "
                             "normalisation)")
        return float(n_public)

    def _relation(self) -> Neighbouring:
        if isinstance(self.relation, Neighbouring):
            return self.relation
        if self.relation is not None:
            return Neighbouring(check_choice("relation", self.relation,
                                             tuple(r.value for r in Neighbouring)))
        if self.method == "dp_ftrl" or (self.method == "noisy_sgd"
                                        and self.sampling == "shuffle"):
            return Neighbouring.REPLACE_ONE
        return Neighbouring.ADD_REMOVE

    def make_plan(self, n_samples: float) -> TorchPlan:
        """The plan for ``n_samples`` public examples (no data read)."""
        n_params = sum(p.numel() for p in self.module.parameters() if p.requires_grad)
        return plan_run(
            self.method, n_samples=n_samples, clip=self.clip, batch_size=self.batch_size,
            steps=self.steps, epochs=self.epochs, sampling=self.sampling,
            relation=self._relation(), tree=self.tree, schedule=self.schedule,
            noise_multiplier=self.noise_multiplier, epsilon=self.epsilon, delta=self.delta,
            noise=self.noise_, n_params=n_params)

    def planned_event(self) -> DpEvent:
        """The event the planned run performs (secure mode: wrapped)."""
        plan = self.plan_
        if plan is None:
            raise RuntimeError("no plan yet: call fit")
        p = sum(q.numel() for q in self.module.parameters() if q.requires_grad)
        sens = Neighbouring(plan.relation).clipped_sum_sensitivity * plan.clip
        return self.noise_.wrap_event(plan.event(), plan.largest_sd(), p, sens)

    # ---------------------------------------------------------------- the run
    def fit(self, X: Any, y: Any, *, stop_after: int | None = None,
            callback: Callable[[int], None] | None = None) -> PrivateTrainer:
        """Plan (first call), record in the ledger, then run (or continue) the steps.

        Parameters
        ----------
        X, y : array-like or Tensor
            The private examples.
        stop_after : int, optional
            Stop once this many steps are done in total (checkpoint with
            :meth:`state_dict`; a later ``fit`` continues).
        callback : callable, optional
            Called as ``callback(steps_done)`` after every step (logging, timing,
            checkpoints); it must not read the private examples.

        Returns
        -------
        self
        """
        n_rows = len(X)
        if self.plan_ is None:
            self.plan_ = self.make_plan(self._n_public(n_rows))
            event = self.planned_event()
            self.privacy_ = account(event, self.delta)
            if self.epsilon is not None and not within_budget(self.privacy_.epsilon,
                                                              self.epsilon):
                raise ValueError(f"internal error: the plan spends epsilon = "
                                 f"{self.privacy_.epsilon:.6g} > {self.epsilon:.6g}")
            if self.ledger is not None or self.dataset is not None:
                from noisygd.ledger import check_ledger_arguments, record_release

                check_ledger_arguments(self.ledger, self.dataset)
                self.ledger_release_ = record_release(
                    self.ledger, self.dataset, event,  # type: ignore[arg-type]
                    algorithm=f"PrivateTrainer/{self.method}",
                    parameters={k: v for k, v in asdict(self.plan_).items()
                                if k != "noise_shape"})
            # planned, calibrated and reported: the accountant's cached PLDs (each about a
            # million floats) are not carried through the training run
            clear_pld_cache()
        plan = self.plan_
        oracle = TorchOracle(self.module, self.loss, X, y, per_layer=self.per_layer,
                             fused=self.fused,
                             max_physical_batch_size=self.max_physical_batch_size)
        if oracle.n_rows != n_rows:
            raise ValueError("X and y must hold the same number of examples")
        if plan.method == "noisy_sgd" and self._loader is None:
            if plan.sampling == "poisson":
                self._loader = PoissonLoader(n_rows, plan.sampling_rate, plan.steps,
                                             self._sampler, oracle.device)
            else:
                self._loader = ShuffleLoader(n_rows, plan.batch_size, plan.steps,
                                             self._sampler, oracle.device)
            self._restore_loader()
        if plan.method == "dp_ftrl" and self._tree is None:
            self._tree = _Tree(plan.noise_multiplier * plan.clip, plan.tree, self.noise_)
            self._prev = torch.zeros(oracle.n_params, device=oracle.device, dtype=oracle.dtype)
        end = plan.steps if stop_after is None else min(plan.steps, int(stop_after))
        try:
            with tqdm(total=plan.steps, initial=self.steps_done_, disable=not self.progress,
                      desc=f"noisygd {plan.method}") as bar:
                while self.steps_done_ < end:
                    self._step(oracle, plan, self._rows(plan, oracle))
                    self.steps_done_ += 1
                    bar.update(1)
                    if callback is not None:
                        callback(self.steps_done_)
        finally:
            oracle.close()
        return self

    def _rows(self, plan: TorchPlan, oracle: TorchOracle) -> torch.Tensor | None:
        if plan.method == "noisy_sgd":
            return next(iter(self._loader))
        if plan.method == "dp_ftrl":
            j = self.steps_done_ % plan.per_epoch  # type: ignore[operator]
            b = plan.batch_size
            return torch.arange(j * b, min((j + 1) * b, oracle.n_rows),  # type: ignore[operator]
                                device=oracle.device)
        return None

    def _step(self, oracle: TorchOracle, plan: TorchPlan, rows: torch.Tensor | None) -> None:
        C, z = plan.clip, plan.noise_multiplier
        for p in oracle._params:
            # the previous step's privatised gradient, as ``zero_grad(set_to_none=True)``: not
            # held through this step's forward and backward passes (its memory, allocated
            # among theirs, would split the space they reuse from step to step)
            p.grad = None
        gsum, _ = oracle.clipped_sum(rows, C)
        if plan.method == "dp_ftrl":
            s = self._tree.add(gsum)  # type: ignore[union-attr]
            priv = (s - self._prev) / plan.batch_size
            self._prev = s
        else:
            z_t = z * plan.noise_shape[self.steps_done_] if plan.noise_shape else z
            noisy = self.noise_.add_gaussian(gsum, z_t * C)
            if plan.method == "noisy_sgd" and plan.sampling == "poisson":
                priv = noisy.div_(plan.sampling_rate * plan.n_samples)  # type: ignore[operator]
            elif plan.method == "noisy_sgd":
                priv = noisy.div_(plan.batch_size)  # type: ignore[operator]
            else:
                priv = noisy.div_(plan.n_samples)
        for p, g in zip(oracle._params, oracle.split(priv), strict=True):
            p.grad = g
        self.optimizer.step()

    # ---------------------------------------------------------------- reports, checkpoints
    def privacy_report(self) -> dict[str, Any]:
        """``privacy_`` as a JSON-ready dict, with the plan and the steps done."""
        if self.plan_ is None:
            raise RuntimeError("not fitted")
        out = self.privacy_.to_dict()
        out["plan"] = {k: v for k, v in asdict(self.plan_).items() if k != "noise_shape"}
        out["steps_done"] = self.steps_done_
        return out

    def state_dict(self) -> dict[str, Any]:
        """Everything a resumed run needs: model, optimiser, plan (hence the accountant's
        event), steps done, sampler and noise state, loader and tree state, ledger release.

        **Private data**, not a release (docs/torch.md, "Checkpoints are private data"): the
        generator state recomputes the noise, and a ``dp_ftrl`` tree's state holds the
        un-noised sums of clipped gradients. Store it like the training data."""
        if self.plan_ is None:
            raise RuntimeError("not fitted: nothing to checkpoint")
        if self.secure:
            rng_state: Any = None
        elif isinstance(self._sampler, torch.Generator):
            rng_state = self._sampler.get_state()
        else:
            rng_state = self._sampler.bit_generator.state
        return {
            "model": self.module.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "plan": asdict(self.plan_),
            "delta": self.delta,
            "steps_done": self.steps_done_,
            "rng": rng_state,
            "loader": None if self._loader is None else self._loader.state_dict(),
            "tree": None if self._tree is None else self._tree.state_dict(),
            "prev": self._prev,
            "ledger_release": None if self.ledger_release_ is None
            else self.ledger_release_.id,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` (then :meth:`fit` continues the same run).

        The plan comes from the checkpoint, so the accountant's event, the ledger's record
        and the noise are those of the run that was started; nothing is recorded again.
        """
        self.module.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        plan = dict(state["plan"])
        if plan.get("noise_shape") is not None:
            plan["noise_shape"] = tuple(plan["noise_shape"])
        self.plan_ = TorchPlan(**plan)
        if self.plan_.method != self.method:
            raise ValueError(f"the checkpoint is a {self.plan_.method} run, not {self.method}")
        self.delta = float(state["delta"])
        self.privacy_ = account(self.planned_event(), self.delta)
        self.steps_done_ = int(state["steps_done"])
        if state["rng"] is not None:
            if isinstance(self._sampler, torch.Generator):
                self._sampler.set_state(state["rng"])
            elif isinstance(self._sampler, np.random.Generator):
                self._sampler.bit_generator.state = state["rng"]
        self._loader = None
        self._tree = None
        self._prev = state["prev"]
        if state["tree"] is not None:
            self._tree = _Tree(self.plan_.noise_multiplier * self.plan_.clip, self.plan_.tree,
                               self.noise_)
            self._tree.load_state_dict(state["tree"])
        self._pending_loader = state["loader"]

    def _restore_loader(self) -> None:
        pending = self._pending_loader
        if pending is not None and self._loader is not None:
            self._loader.load_state_dict(pending)
            self._pending_loader = None

