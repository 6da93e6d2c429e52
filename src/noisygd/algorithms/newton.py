r"""Private damped Newton: a noisy gradient and a noisy curvature sum per step, few steps.

For a loss of one margin, :math:`\ell_i(\theta) = \phi(\langle a_i, \theta\rangle, y_i)`
with served rows :math:`\lVert a_i\rVert \le \tilde B`, the data term's Hessian is a sum of
rank-one terms :math:`\phi''(z_i)a_ia_i^\top`, each of Frobenius norm
:math:`\phi''(z_i)\lVert a_i\rVert^2 \le \beta` (the declared per-example smoothness:
:math:`\tilde B^2/4` for the logistic loss, :math:`\tilde B^2` for least squares). So the
curvature sum has a sensitivity known from public constants, without data-dependent
clipping, and one Newton step costs two Gaussian releases. Run (sum form, public ``n``,
ridge :math:`\lambda` of the objective), for :math:`t = 0, \dots, T-1`:

.. math::

    \tilde g_t &= \sum_i \mathrm{clip}_C(\nabla\ell_i(\theta_t)) + n\lambda\theta_t
        + \mathcal N(0, (z_tC)^2 I_p), \\
    \tilde H_t &= \sum_i \min\big(\phi''(z_i), C_H/\lVert a_i\rVert^2\big)a_ia_i^\top
        + Z_t \quad (t \in \mathcal S; \text{ else } \tilde H_t = \tilde H_{t-1}), \\
    \hat H_t &= \mathrm{modify}(\tilde H_t + n\lambda I), \qquad
    \Delta_t = -\hat H_t^{-1}\tilde g_t, \\
    \theta_{t+1} &= \Pi\big(\theta_t + s_t\Delta_t\big), \qquad
    s_t = \frac{\log(1 + M\lVert\Delta_t\rVert)}{M\lVert\Delta_t\rVert}\ (s_t = 1
        \text{ when } M = 0),

and the output is the average of the last ``tail`` iterates weighted by their gradient
release's :math:`\mu_t^2` (inverse-variance weights).

**The symmetric noise.** :math:`Z_t` is drawn in the isometric coordinates of symmetric
matrices, :math:`v(A) = (A_{jj})_j \cup (\sqrt2 A_{jk})_{j<k}` with
:math:`\lVert v(A)\rVert_2 = \lVert A\rVert_F`: :math:`v(Z_t) \sim
\mathcal N(0, \sigma_H^2 I_{p(p+1)/2})`, i.e. diagonal entries of variance
:math:`\sigma_H^2` and off-diagonal entries of variance :math:`\sigma_H^2/2`. The release
is the Gaussian mechanism on :math:`v(H)` with the Frobenius sensitivity, and its noise has
:math:`\sqrt2` less spectral norm than i.i.d. noise on the upper triangle at the same
privacy (the choice of AdaSSP and of Ganesh et al. 2023).

**Privacy** (Gaussian DP, Dong, Roth and Su 2022). Each gradient release is a Gaussian
mechanism with sensitivity ``relation.clipped_sum_sensitivity`` in units of ``C`` (1
add/remove, 2 replace-one). Each curvature release has sensitivity :math:`C_H` in
Frobenius norm under add/remove (one PSD term of norm :math:`\le C_H` appears), and
:math:`\sqrt2\,C_H` under replace-one: for PSD :math:`A, B` with
:math:`\lVert A\rVert_F, \lVert B\rVert_F \le C_H`,
:math:`\lVert A - B\rVert_F^2 = \lVert A\rVert_F^2 + \lVert B\rVert_F^2 -
2\operatorname{tr}(AB) \le 2C_H^2` since :math:`\operatorname{tr}(AB) \ge 0` (tighter than
the generic factor 2). Everything else (the eigenvalue rule, the damping, the projection,
the average) is post-processing of the releases and public constants. The run is the
adaptive composition of these Gaussian mechanisms, exactly
:math:`\mu`-GDP with :math:`\mu^2 = \sum_k (\Delta_k/z_k)^2` (Corollary 3.3): the event is
``Composed`` of one :class:`~noisygd.accounting.events.Gaussian` per release, in release
order (at step ``t`` the curvature, then the gradient).

**The eigenvalue rule** (post-processing, data-independent). With probability at least
:math:`1 - \varrho` the noise satisfies :math:`\lambda_{\min}(Z_t) \ge -\tau`,
:math:`\tau = \sigma_H\sqrt{(p + 1)\log(p/\varrho)}` (matrix Gaussian series, Tropp 2015,
Theorem 4.1.1: :math:`Z = \sigma_H\sum_k\gamma_kA_k` with
:math:`\sum_kA_k^2 = \frac{p+1}2I`). ``"clip"`` (default; Ganesh et al.'s clipping rule
with the public floor :math:`\tau` in place of a privately chosen one) floors the
eigenvalues of :math:`\tilde H_t + n\lambda I` at :math:`\max(\tau, n\lambda)`. On that
event :math:`\hat H_t \succeq \tilde H_t + n\lambda I \succeq H - \tau I` and
:math:`\hat H_t \succeq \tau I` (with :math:`H` the true curvature, ridge included), so
:math:`\hat H_t \succeq H/2` (their average): a step overshoots the quadratic model by at
most a factor 2 and the iteration never expands. ``"add"`` shifts the
eigenvalues by :math:`\tau` and floors them at :math:`n\lambda` (or at :math:`\tau`
without a ridge): then :math:`\hat H_t \succeq H(\theta_t)`, a majoriser of the curvature
(never overshoots, slower where :math:`\tau` is not small against the curvature). The
diagonal preconditioner (``hessian="diagonal"``, for many parameters) releases only the
diagonal (:math:`\tau = \sigma_H\sqrt{2\log(p/\varrho)}`). A row with at most :math:`m`
nonzero coordinates has :math:`aa^\top \preceq m\,\mathrm{diag}(aa^\top)` (Cauchy-Schwarz
on its support), so :math:`H \preceq m\,\mathrm{diag}(H)` and the step
:math:`-\frac1m\hat D^{-1}\tilde g` is a (noisy) majorisation step: ``row_nonzeros``
:math:`m` is a declared public bound (a utility assumption: privacy does not depend on it),
or a paid one (below).

**The paid row support** (the diagonal form without a declared ``row_nonzeros``). The run
first releases the histogram of the rows' support sizes :math:`k_i` (stored nonzeros plus the
intercept column; :meth:`~noisygd.oracles.base.GradientOracle.row_nonzero_histogram`, bins
:func:`row_nonzero_edges`: every integer to 32, then a factor :math:`\sqrt2`) with Gaussian
noise of sd :math:`z_m` rows. *Sensitivity*: a row adds 1 to exactly one bin, so adding or
removing a row moves the count vector by a unit vector (L2 change 1) and replacing one moves
it by :math:`e_a - e_b` (L2 change :math:`\sqrt2`, or 0 when :math:`a = b`): the sensitivity
is :func:`curvature_sensitivity` of the relation, with no clipping. The release costs
``nnz_share`` (default :data:`DEFAULT_NNZ_SHARE` = 0.01) of :math:`\mu^2`. Then
:math:`m` = :func:`paid_row_nonzeros` (the smallest edge above which the noisy counts hold at
most :math:`10^{-3}n` rows plus twice their noise) is post-processing. A public centre
:math:`c` makes the served rows :math:`x_i - c` dense; :math:`m` counts the support of the
data part :math:`x_i` (the centre is one public direction, small next to the rows on sparse
data), so on centred rows the majorisation is a measured rule, not the lemma above.

**The diagonal preconditioner's steps.** With :math:`H(\theta) \preceq H(0)` for the
logistic loss (:math:`\phi'' \le \phi''(0) = 1/4`; Böhning and Lindsay 1988), the
curvature is released once, at :math:`\theta = 0` (a statistic of the rows alone, with no
label), and majorises the curvature along the whole run. Step :math:`1/m` (the safe
majorisation step), Nesterov momentum :math:`1 - 1/\sqrt m` (:func:`diagonal_momentum`: on
the directions of relative curvature :math:`h = \lambda(\hat D^{-1}H)`, a step
:math:`s` with momentum :math:`\beta` moves like a plain step :math:`s/(1 - \beta)` once
:math:`sh \ll 1 - \beta`, so the effective step is :math:`1/\sqrt m`, the geometric mean
of the safe step :math:`1/m` and the Newton step 1 that is exact where :math:`\hat D`
matches :math:`H`), ``T`` = :func:`diagonal_steps` :math:`= \lceil 6\sqrt m\rceil`
(:math:`T/\sqrt m \approx 6` effective unit steps: the transient contracts by
:math:`e^{-6}` where :math:`h \approx 1`), equal noise on every gradient and the average
of the last half released. **Status: a measured rule**: on the CSR scale problem
(:math:`10^6 \times 10^4`, 10 nonzeros per row, :math:`\varepsilon = 1`) effective steps
0.23-0.30 over 15-20 steps reached the lowest loss (0.6133-0.6147 against 0.6180-0.6490 for
effective steps 0.5-3 and 0.6243 for 10 steps); on synthetic one-hot and random sparse
problems with :math:`m` = 6, 21 and 31 (docs/newton.md, "Many features") it matched or beat
NoisyGD's 1000 steps wherever the default chooses it. With the paid support the run sets
``T`` after the histogram (``adaptive_steps``), with the gradients' :math:`\mu_g^2` spread
evenly over it: :math:`T` releases at :math:`z = \sqrt T\Delta/\mu_g` are exactly
:math:`\mu_g`-GDP whatever ``T`` (Dong, Roth and Su 2022, Cor. 3.3), and ``T`` is a
function of an earlier release (adaptive composition), so the event is the plan's:
the histogram, the curvature and one Gaussian of :math:`\mu_g` for the gradients.

**The damped step** (Bach 2010, Proposition 1). For a loss with
:math:`|\phi'''| \le \phi''\cdot k`, :math:`g(s) = F(\theta + s\Delta)` satisfies
:math:`|g'''| \le M\lVert\Delta\rVert g''` with :math:`M = k\tilde B` (the oracle's
:meth:`~noisygd.oracles.base.GradientOracle.self_concordance`), and for the exact Newton
direction the step :math:`s = \log(1 + R)/R`, :math:`R = M\lVert\Delta\rVert`, decreases
:math:`F` by at least :math:`\lambda^2((1+R)\log(1+R) - R)/R^2` (:math:`\lambda^2` the
squared Newton decrement): globally convergent without a line search (which would read
the data again). Least squares has :math:`M = 0` (full steps) and a constant Hessian,
released once.

**The sharp clip after the first step** (``sharp``: the loss's sharp ratio :math:`s`,
:func:`noisygd.algorithms.regime.sharp_clip_factor`; ``None``: off). After step 0's
releases the run reads the output's noise-to-signal ratio in the curvature's norm, the
ratio of two Newton decrements,

.. math:: q = \frac{(\Delta C/\mu_{\rm tail})\sqrt{\operatorname{tr}\hat H_0^{-1}}}
          {\sqrt{\tilde g_0^\top\hat H_0^{-1}\tilde g_0}}

(:func:`output_noise_to_signal`): the numerator is the root-mean-square decrement of the
output's noise (one gradient release at the tail's :math:`\mu`, below; its square is twice
the output's expected excess risk from the noise), the denominator the first noisy
gradient's decrement (its square estimates twice the start's suboptimality; its own noise
only raises it, so :math:`q` errs toward the base clip). In this norm a direction the loss
does not see (collinear columns: one-hot levels beside the intercept) counts for nothing;
measured in the parameters' own norm (a first version, measured with
``experiments/newton_sharp_clip.py`` before it was replaced: docs/newton.md), such a
direction's noise set :math:`q` and cost the one-hot families up to 0.05 of the non-private
gain. The remaining steps clip at :math:`C\,f(q)`,
:math:`f = 1 - (1 - s)\,r(q)` with NoisyGD's regime :math:`r`
(:func:`noisygd.algorithms.regime.noise_regime`, log-linear from :math:`q = 0.02` to 0.2):
the base clip for an optimisation-limited run, :math:`sC` for a noise-limited one, whose
output's excess risk scales with :math:`C^2` (the estimators' ratios: 1/2 for the logistic
loss, every correctly classified row's gradient left as it was; 0.5015 for least squares, the
clip at the median Gaussian residual). Post-processing of releases already made:
each later gradient is the Gaussian mechanism at the same multiplier :math:`z_t` in units
of the clip it uses, so the event is unchanged (not in secure mode, whose rounding is
priced at the planned clip). **Status: a measured rule** (docs/newton.md, "The sharp clip
after the first step").

**Why the tail average.** Near the optimum with a fixed :math:`\hat H`,
:math:`\theta_{t+1} - \theta^* \approx (I - \hat H^{-1}H)(\theta_t - \theta^*) -
\hat H^{-1}\xi_t`; the weighted mean of the tail iterates has error
:math:`\approx H^{-1}\bar\xi` whatever :math:`\hat H` is, as long as the iteration
contracts: the Hessian's noise slows the steps but does not enter the output's error
(Polyak-Ruppert averaging). This is why the budget goes mostly to the tail's gradients,
and why the curvature is refreshed during the approach only (the tail keeps the last one).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from noisygd._checks import (
    check_choice,
    check_fraction,
    check_generator,
    check_nonnegative,
    check_positive,
    check_positive_int,
    check_real,
)
from noisygd.accounting.events import Composed, DiscreteGaussianNoise, Gaussian, Neighbouring
from noisygd.algorithms.base import FitResult
from noisygd.algorithms.noisy_gd import check_theta0
from noisygd.algorithms.regime import sharp_clip_factor
from noisygd.mechanisms.noise import add_gaussian_noise, is_secure, sensitivity_inflation
from noisygd.mechanisms.secure import DEFAULT_GRID_BITS, SecureRandom
from noisygd.oracles.base import GradientOracle

__all__ = [
    "DAMPINGS",
    "DEFAULT_DIAGONAL_HESSIAN_RATIO",
    "DEFAULT_DIAGONAL_MAX_SHARE",
    "DEFAULT_HESSIAN_RATIO",
    "DEFAULT_NNZ_SHARE",
    "DEFAULT_STEPS",
    "EIGENVALUE_RULES",
    "HESSIAN_FORMS",
    "NewtonPlan",
    "curvature_sensitivity",
    "diagonal_momentum",
    "diagonal_steps",
    "modified_eigen",
    "modify_curvature",
    "newton",
    "noise_floor",
    "output_noise_to_signal",
    "paid_row_nonzeros",
    "plan_newton",
    "row_nonzero_edges",
    "symmetric_gaussian_noise",
]

EIGENVALUE_RULES = ("add", "clip")
#: Curvature matrices up to this size are decomposed on one BLAS thread.
_ONE_THREAD_EIGH = 256
HESSIAN_FORMS = ("full", "diagonal")
DAMPINGS = ("none", "self_concordant")


def curvature_sensitivity(relation: Neighbouring | str) -> float:
    r"""Sensitivity of a sum of PSD per-example terms of Frobenius norm at most 1 (module
    doc, "Privacy"): 1 under add/remove, :math:`\sqrt2` under replace-one."""
    return 1.0 if Neighbouring(relation) is Neighbouring.ADD_REMOVE else math.sqrt(2.0)


def noise_floor(sd: float, n_params: int, failure_probability: float, hessian: str) -> float:
    r""":math:`\tau` with :math:`P(\lambda_{\min}(Z) < -\tau) \le \varrho` (module doc):
    :math:`\sigma\sqrt{(p+1)\log(p/\varrho)}` for the full symmetric noise,
    :math:`\sigma\sqrt{2\log(p/\varrho)}` for the diagonal one (Gaussian tails and a union
    bound)."""
    p = int(n_params)
    log_term = math.log(max(p, 2) / failure_probability)
    if hessian == "diagonal":
        return sd * math.sqrt(2.0 * log_term)
    return sd * math.sqrt((p + 1) * log_term)


def symmetric_gaussian_noise(H: np.ndarray, sd: float,
                             rng: np.random.Generator | SecureRandom) -> np.ndarray:
    r""":math:`H + Z` with :math:`v(Z) \sim \mathcal N(0, \sigma^2 I)` in the isometric
    coordinates :math:`v(A) = (A_{jj}, \sqrt2A_{jk})_{j<k}` (module doc): one call of
    :func:`~noisygd.mechanisms.noise.add_gaussian_noise` on :math:`v(H)` (so secure mode
    rounds and noises exactly the vector the sensitivity is stated for)."""
    p = H.shape[0]
    iu = np.triu_indices(p, 1)
    root2 = math.sqrt(2.0)
    v = np.concatenate([np.diag(H), root2 * H[iu]])
    v = np.asarray(add_gaussian_noise(v, sd, rng), dtype=np.float64)
    out = np.diag(v[:p])
    off = v[p:] / root2
    out[iu] = off
    out[iu[1], iu[0]] = off
    return out


def modified_eigen(H: np.ndarray, tau: float, floor: float, rule: str
                   ) -> tuple[np.ndarray, np.ndarray | None]:
    r"""``(eigenvalues, eigenvectors)`` of the positive definite :math:`\hat H` of a released
    curvature (ridge included); for a diagonal release (a vector) the eigenvectors are None
    (module doc, "The eigenvalue rule").

    ``"add"``: eigenvalues :math:`\max(\tilde\lambda + \tau, f)`; ``"clip"``:
    :math:`\max(\tilde\lambda, \max(\tau, f))`; ``f`` = ``floor`` > 0.

    Raises
    ------
    ValueError
        If ``rule`` is not one of :data:`EIGENVALUE_RULES`.
    """
    check_choice("rule", rule, EIGENVALUE_RULES)
    if H.ndim == 1:
        lam, vecs = H, None
    elif H.shape[0] <= _ONE_THREAD_EIGH:  # small: BLAS threads only contend
        from noisygd.oracles._parallel import _OneBlasThread

        with _OneBlasThread():
            lam, vecs = np.linalg.eigh(0.5 * (H + H.T))
    else:
        lam, vecs = np.linalg.eigh(0.5 * (H + H.T))
    lam = np.maximum(lam + tau, floor) if rule == "add" else np.maximum(lam, max(tau, floor))
    return lam, vecs


def modify_curvature(H: np.ndarray, tau: float, floor: float, rule: str) -> np.ndarray:
    r""":math:`\hat H` itself (:func:`modified_eigen`): a matrix, or a vector for a diagonal
    release."""
    lam, vecs = modified_eigen(H, tau, floor, rule)
    return lam if vecs is None else (vecs * lam) @ vecs.T


@dataclass(frozen=True)
class NewtonPlan:
    r"""Every setting of a private Newton run, fixed from public facts before any data.

    Attributes
    ----------
    relation : Neighbouring
    n_params : int
    n_samples : float
        The public ``n`` of the sum-form ridge :math:`n\lambda\theta`.
    clip : float
        Gradient clipping norm ``C``.
    curvature_clip : float
        :math:`C_H`, the Frobenius bound of each row's curvature term (the declared
        smoothness :math:`\beta` unless given).
    gradient_noise : tuple of float
        :math:`z_t` of each step's gradient release (noise sd :math:`z_tC`).
    hessian_steps : tuple of int
        Steps (0-based) at which the curvature is released; step 0 always.
    hessian_noise : tuple of float
        :math:`z` of each curvature release (noise sd :math:`zC_H`).
    tail : int
        Number of final iterates averaged.
    hessian : {"full", "diagonal"}
    eigenvalue_rule : {"clip", "add"}
    failure_probability : float
        :math:`\varrho` of the noise floor :math:`\tau`.
    secure : bool
        Secure mode: discrete Gaussian noise and a
        :class:`~noisygd.accounting.events.DiscreteGaussianNoise` per release.
    damping : {"none", "self_concordant"}
        Full steps, or the damped step :math:`\log(1 + R)/R` (module doc).
    ridge : float
        A public ridge added to the oracle's ``l2`` for this run (data-independent: the
        releases and the event do not change).
    step_scale : float
        Multiplies every step: :math:`1/m` for the diagonal preconditioner of rows with at
        most :math:`m` nonzero coordinates (module doc), 1 otherwise.
    momentum : float
        Nesterov momentum of the steps (0: none; the diagonal form's rule
        :func:`diagonal_momentum`).
    nnz_noise : float or None
        The paid row support (module doc, "The paid row support"): the noise multiplier of
        the released histogram of the rows' nonzeros (sensitivity
        :func:`curvature_sensitivity`, in rows); None when ``row_nonzeros`` was declared.
        The run then takes :math:`m` from the release (:func:`paid_row_nonzeros`), and its
        step, momentum and, with ``adaptive_steps``, its ``T`` from :math:`m`.
    nnz_edges : tuple of int
        The histogram's bin edges (:func:`row_nonzero_edges`).
    adaptive_steps : bool
        With the paid support: ``T`` = :func:`diagonal_steps` of the released :math:`m`
        (the gradients' :math:`\mu^2` unchanged, spread evenly over the ``T`` steps).
    start : ndarray or None
        Where the run starts (a public point, e.g. the classifier's intercept at a released
        base rate); None: 0. The releases and the event do not depend on it.
    sharp : float or None
        The sharp ratio :math:`s \in (0, 1]` of the clip after the first step (module doc,
        "The sharp clip after the first step"); None: every step clips at ``clip``. Not in
        secure mode.
    details : dict
        Public facts of the planning rule (for reports).
    """

    relation: Neighbouring
    n_params: int
    n_samples: float
    clip: float
    curvature_clip: float
    gradient_noise: tuple[float, ...]
    hessian_steps: tuple[int, ...]
    hessian_noise: tuple[float, ...]
    tail: int
    hessian: str = "full"
    eigenvalue_rule: str = "clip"
    failure_probability: float = 0.05
    secure: bool = False
    damping: str = "none"
    ridge: float = 0.0
    step_scale: float = 1.0
    momentum: float = 0.0
    nnz_noise: float | None = None
    nnz_edges: tuple[int, ...] = ()
    adaptive_steps: bool = False
    start: np.ndarray | None = field(default=None, compare=False)
    sharp: float | None = None
    details: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "relation", Neighbouring(self.relation))
        if self.sharp is not None:
            sharp = check_real("sharp", self.sharp)
            if not 0.0 < sharp <= 1.0 or self.secure:
                raise ValueError("sharp must be in (0, 1], and None in secure mode (the "
                                 f"rounding is priced at the planned clip); got {sharp!r}")
            object.__setattr__(self, "sharp", sharp)
        if len(self.hessian_steps) != len(self.hessian_noise) or 0 not in self.hessian_steps:
            raise ValueError("hessian_steps must include step 0 and match hessian_noise")
        if not 1 <= self.tail <= len(self.gradient_noise):
            raise ValueError("tail must be between 1 and the number of steps")
        if (self.hessian not in HESSIAN_FORMS or self.eigenvalue_rule not in EIGENVALUE_RULES
                or self.damping not in DAMPINGS):
            raise ValueError("unknown hessian form, eigenvalue rule or damping")
        if not 0.0 <= self.momentum < 1.0:
            raise ValueError(f"momentum must be in [0, 1), got {self.momentum!r}")
        if self.nnz_noise is not None and (
                self.secure or self.hessian != "diagonal" or self.hessian_steps != (0,)
                or not self.nnz_edges or len(set(self.gradient_noise)) != 1):
            raise ValueError("the paid row support needs the diagonal form, one curvature "
                             "release at step 0, equal gradient noise, edges and no secure "
                             "mode")

    @property
    def steps(self) -> int:
        """``T``."""
        return len(self.gradient_noise)

    @property
    def gradient_sensitivity(self) -> float:
        """In units of ``C``: ``relation.clipped_sum_sensitivity``."""
        return self.relation.clipped_sum_sensitivity

    @property
    def hessian_sensitivity(self) -> float:
        """In units of :math:`C_H`: :func:`curvature_sensitivity`."""
        return curvature_sensitivity(self.relation)

    @property
    def hessian_dim(self) -> int:
        """Coordinates noised per curvature release: :math:`p(p+1)/2` or :math:`p`."""
        p = self.n_params
        return p if self.hessian == "diagonal" else p * (p + 1) // 2

    def tail_mu(self) -> float:
        r""":math:`\sqrt{\sum_{t \in \text{tail}}\mu_t^2}`: the Gaussian-DP budget of the
        gradients the output averages (its noise is that of one release at this
        :math:`\mu`)."""
        g, _ = self.mu_squares()
        return math.sqrt(math.fsum(g[self.steps - self.tail:]))

    def mu_squares(self) -> tuple[list[float], list[float]]:
        r"""(:math:`\mu_t^2` of each gradient release, of each curvature release)."""
        sg, sh = self.gradient_sensitivity, self.hessian_sensitivity
        pre = [] if self.nnz_noise is None else [(sh / self.nnz_noise) ** 2]
        return ([(sg / z) ** 2 for z in self.gradient_noise],
                pre + [(sh / z) ** 2 for z in self.hessian_noise])

    def _releases(self) -> list[tuple[float, float, float, int]]:
        """``(z, sensitivity, unit, dim)`` per release, in release order."""
        out = []
        where = dict(zip(self.hessian_steps, self.hessian_noise, strict=True))
        for t, z in enumerate(self.gradient_noise):
            if t in where:
                out.append((where[t], self.hessian_sensitivity, self.curvature_clip,
                            self.hessian_dim))
            out.append((z, self.gradient_sensitivity, self.clip, self.n_params))
        return out

    @property
    def event(self) -> Composed:
        """``Composed`` of one Gaussian per release in release order (module doc); in secure
        mode each wrapped in ``DiscreteGaussianNoise`` with its own inflation."""
        if self.nnz_noise is not None:  # module doc, "The paid row support"
            sg, sh = self.gradient_sensitivity, self.hessian_sensitivity
            mu_g = math.sqrt(math.fsum((sg / z) ** 2 for z in self.gradient_noise))
            return Composed((
                Gaussian(self.nnz_noise, sensitivity=sh, relation=self.relation),
                Gaussian(self.hessian_noise[0], sensitivity=sh, relation=self.relation),
                Gaussian(sg / mu_g, sensitivity=sg, relation=self.relation)))
        parts: list = []
        rng = SecureRandom() if self.secure else None
        for z, sens, unit, dim in self._releases():
            g = Gaussian(z, sensitivity=sens, relation=self.relation)
            if rng is not None:
                g = DiscreteGaussianNoise(g, sensitivity_inflation(rng, z * unit, dim,
                                                                   sens * unit))
            parts.append(g)
        return Composed(tuple(parts))

    def summary(self) -> dict[str, Any]:
        """Public settings of the plan (for ``FitResult.info``)."""
        g, h = self.mu_squares()
        return {
            "steps": self.steps, "tail": self.tail, "hessian": self.hessian,
            "hessian_steps": list(self.hessian_steps),
            "eigenvalue_rule": self.eigenvalue_rule, "damping": self.damping,
            "clip": self.clip,
            "curvature_clip": self.curvature_clip,
            "gradient_noise_multipliers": list(self.gradient_noise),
            "hessian_noise_multipliers": list(self.hessian_noise),
            "mu": math.sqrt(math.fsum(g) + math.fsum(h)),
            "hessian_mu_share": math.fsum(h) / (math.fsum(g) + math.fsum(h)),
            "failure_probability": self.failure_probability, "secure": self.secure,
            **({"l2_planned": self.ridge} if self.ridge else {}),
            **({"step_scale": self.step_scale} if self.step_scale != 1.0 else {}),
            **({"momentum": self.momentum} if self.momentum else {}),
            **({"sharp_clip": self.sharp} if self.sharp is not None else {}),
            **({"row_nonzeros": "paid", "row_nonzeros_noise_multiplier": self.nnz_noise,
                "adaptive_steps": self.adaptive_steps}
               if self.nnz_noise is not None else {}),
            **self.details,
        }


def output_noise_to_signal(eigenvalues: np.ndarray, noise_sd: float, gradient: np.ndarray,
                           first_step: np.ndarray) -> float:
    r"""The output's noise-to-signal ratio in the curvature's norm (module doc, "The sharp
    clip after the first step"): the ratio of two Newton decrements,

    .. math:: q = \frac{\sigma\sqrt{\operatorname{tr}\hat H^{-1}}}
              {\sqrt{\tilde g_0^\top\hat H^{-1}\tilde g_0}}
            = \frac{\sigma\sqrt{\sum_k\hat\lambda_k^{-1}}}{\sqrt{-\tilde g_0^\top\Delta_0}},

    :math:`\sigma^2\operatorname{tr}\hat H^{-1} = E\,\xi^\top\hat H^{-1}\xi` for
    :math:`\xi \sim \mathcal N(0, \sigma^2 I)` (twice the output's expected excess risk
    from its noise, sum form) over twice the quadratic model's suboptimality at the start.

    Parameters
    ----------
    eigenvalues : ndarray
        The modified curvature's eigenvalues :math:`\hat\lambda_k > 0` (the diagonal's
        entries for the diagonal form), sum form, ridge included.
    noise_sd : float
        :math:`\sigma = \Delta C/\mu_{\rm tail}`: the sd of one gradient release at the
        tail's Gaussian-DP :math:`\mu`.
    gradient : ndarray
        The first noisy gradient :math:`\tilde g_0` (ridge included).
    first_step : ndarray
        :math:`\Delta_0 = -\hat H_0^{-1}\tilde g_0`, before damping and step scale.

    Returns
    -------
    float
        :math:`q \ge 0` (``inf`` for a zero gradient).
    """
    lam = np.asarray(eigenvalues, dtype=np.float64)
    noise = check_nonnegative("noise_sd", noise_sd) * math.sqrt(float(np.sum(1.0 / lam)))
    decrement = math.sqrt(max(-float(np.dot(gradient, first_step)), 0.0))
    return noise / decrement if decrement > 0 else math.inf


def _check_rng(rng: Any, plan: NewtonPlan) -> None:
    check_generator("rng", rng, secure=plan.secure)
    if plan.secure != is_secure(rng):
        raise TypeError("a secure plan needs rng=SecureRandom() and a SecureRandom needs a "
                        "secure plan (the event must be the one of the noise drawn)")
    # plan.event prices the rounding's inflation on the default grid: a run on another grid
    # (a coarser one inflates the sensitivity more) would not be the event returned
    if plan.secure and rng.grid_bits != DEFAULT_GRID_BITS:
        raise ValueError(f"a secure Newton plan is priced for SecureRandom(grid_bits="
                         f"{DEFAULT_GRID_BITS}) (the default); got grid_bits={rng.grid_bits}")


def newton(oracle: GradientOracle, plan: NewtonPlan,
           rng: np.random.Generator | SecureRandom) -> FitResult:
    r"""Run the private damped Newton method of the module doc.

    Parameters
    ----------
    oracle : GradientOracle
        Must provide curvature sums and a self-concordance constant
        (:meth:`~noisygd.oracles.base.GradientOracle.self_concordance`; checked before any
        row is read).
    plan : NewtonPlan
    rng : numpy.random.Generator or SecureRandom
        A :class:`~noisygd.mechanisms.secure.SecureRandom` exactly when ``plan.secure``.

    Returns
    -------
    FitResult
        ``event = plan.event``; ``info`` holds the plan, the damping factors and how often
        the eigenvalue floor bound (post-processing of the releases only).

    Raises
    ------
    TypeError
        If the oracle states no self-concordance constant (a loss without the curvature
        sums this method needs); nothing has been read then.
    """
    _check_rng(rng, plan)
    p = oracle.n_params
    if p != plan.n_params:
        raise ValueError(f"the oracle has {p} parameters but the plan was made for "
                         f"{plan.n_params}")
    M = oracle.self_concordance()
    if M is None or not math.isfinite(M) or M < 0:
        raise TypeError(f"method 'newton' needs an oracle with curvature sums and a stated "
                        f"self-concordance constant; {type(oracle).__name__} over this loss "
                        "has none (supported: logistic and least squares, one margin)")
    if plan.nnz_noise is not None and not getattr(oracle, "serves_row_nonzeros", False):
        raise TypeError(f"{type(oracle).__name__} serves no row-support histogram: declare "
                        "method_options['row_nonzeros'] for the diagonal preconditioner")
    planned, paid = plan, None
    if plan.nnz_noise is not None:
        plan, paid = _with_paid_row_nonzeros(oracle, plan, rng)
    n, lam = float(plan.n_samples), float(oracle.l2) + plan.ridge
    reg = n * lam
    C, CH = plan.clip, plan.curvature_clip
    g_mu2, _ = plan.mu_squares()
    where = dict(zip(plan.hessian_steps, plan.hessian_noise, strict=True))
    diagonal = plan.hessian == "diagonal"
    T = plan.steps
    first_tail = T - plan.tail
    theta = oracle.project(np.zeros(p) if plan.start is None
                           else check_theta0(plan.start, p))
    previous = theta
    beta = float(plan.momentum)
    acc = np.zeros(p)
    weight = 0.0
    eigen: tuple[np.ndarray, np.ndarray | None] | None = None
    damping, floors = [], 0
    for t in range(T):
        if t in where:
            sd_h = where[t] * CH
            if diagonal:
                raw = oracle.clipped_curvature_diagonal(theta, CH)
                noisy = np.asarray(add_gaussian_noise(raw, sd_h, rng), dtype=np.float64)
            else:
                raw = oracle.clipped_curvature_sum(theta, CH)
                noisy = symmetric_gaussian_noise(raw, sd_h, rng)
            del raw
            tau = noise_floor(sd_h, p, plan.failure_probability, plan.hessian)
            floor = reg if reg > 0 else tau
            shifted = noisy + reg if diagonal else noisy + reg * np.eye(p)
            eigen = modified_eigen(shifted, tau, floor, plan.eigenvalue_rule)
            floors += int(float(np.min(eigen[0])) <= floor * (1 + 1e-12))
        # Nesterov: the gradient at the look-ahead point (theta itself without momentum)
        point = theta if beta == 0.0 or t == 0 else oracle.project(
            theta + beta * (theta - previous))
        g = oracle.clipped_gradient_sum(point, C)
        if reg:
            g = g + reg * point
        g = np.asarray(add_gaussian_noise(g, plan.gradient_noise[t] * C, rng),
                       dtype=np.float64)
        assert eigen is not None  # step 0 releases the curvature
        lam_hat, vecs = eigen
        delta = -g / lam_hat if vecs is None else -(vecs @ ((vecs.T @ g) / lam_hat))
        if t == 0 and plan.sharp is not None:  # module doc: the sharp clip after step 0
            sharp = _sharp_clip_after_first_step(plan, lam_hat, C, g, delta)
            C = sharp["clip"]
        if plan.step_scale != 1.0:
            delta *= plan.step_scale
        R = M * float(np.linalg.norm(delta)) if plan.damping == "self_concordant" else 0.0
        s = math.log1p(R) / R if R > 0 else 1.0
        damping.append(s)
        previous, theta = theta, oracle.project(point + s * delta)
        if t >= first_tail:
            acc += g_mu2[t] * theta
            weight += g_mu2[t]
    info = {
        "algorithm": "private damped Newton (noisy gradient and curvature per step, "
                     "Gaussian-DP composition)",
        "plan": _run_summary(planned, plan, paid),
        "damping": damping,
        "eigenvalue_floor_bound": floors,
        "self_concordance": M,
        "last_iterate": theta,
    }
    if plan.ridge:
        info["plan"]["l2"] = lam
    if plan.sharp is not None:
        info["sharp_clip"] = sharp
    return FitResult(theta=acc / weight, event=planned.event, n_iter=T, info=info)


def _sharp_clip_after_first_step(plan: NewtonPlan, eigenvalues: np.ndarray, clip: float,
                                 gradient: np.ndarray, first_step: np.ndarray
                                 ) -> dict[str, Any]:
    """The clip of steps 1 .. T-1 (module doc, "The sharp clip after the first step") and
    its record: ``noise_to_signal``, ``sharp``, ``factor``, ``base_clip``, ``clip``,
    ``rule``."""
    q = output_noise_to_signal(eigenvalues, plan.gradient_sensitivity * clip / plan.tail_mu(),
                               gradient, first_step)
    factor = sharp_clip_factor(min(q, 1e300), float(plan.sharp))
    return {"noise_to_signal": q, "sharp": plan.sharp, "factor": factor, "base_clip": clip,
            "clip": clip * factor,
            "rule": ("steps 1.. clip at base * (1 - (1 - sharp) r(q)), q = the Newton "
                     "decrement of the output's noise (one gradient release at the tail's mu, "
                     "the released curvature) over the first noisy gradient's; r: NoisyGD's "
                     "noise regime (log-linear from 0.02 to 0.2); post-processing, a "
                     "measured rule")}


def _run_summary(planned: NewtonPlan, run: NewtonPlan,
                 paid: dict[str, Any] | None) -> dict[str, Any]:
    """The run's plan summary; with the paid row support the run's own steps, noise, step
    and momentum, and the planned budget's ``mu`` and shares (the histogram included)."""
    out = run.summary()
    if paid is not None:
        total = planned.summary()
        out.update({"mu": total["mu"], "hessian_mu_share": total["hessian_mu_share"],
                    "row_nonzeros": paid,
                    "row_nonzeros_noise_multiplier": planned.nnz_noise})
    return out


def _with_paid_row_nonzeros(oracle: GradientOracle, plan: NewtonPlan,
                            rng: np.random.Generator) -> tuple[NewtonPlan, dict[str, Any]]:
    r"""The paid row support's release and the run's plan from it (module doc, "The paid
    row support"): the noisy histogram, :math:`m` (:func:`paid_row_nonzeros`), the step
    :math:`1/m`, the momentum :func:`diagonal_momentum` and, with ``adaptive_steps``,
    ``T`` = :func:`diagonal_steps`; the gradients' :math:`\mu_g^2` spread evenly over ``T``
    (their composition is :math:`\mu_g`-GDP whatever ``T``: Dong, Roth and Su 2022, Cor.
    3.3; the event is the plan's, with one Gaussian of :math:`\mu_g` for them)."""
    edges = np.asarray(plan.nnz_edges, dtype=np.int64)
    counts = oracle.row_nonzero_histogram(edges)
    sd = float(plan.nnz_noise)  # in rows (the histogram's unit)
    noisy = np.asarray(add_gaussian_noise(counts, sd, rng), dtype=np.float64)
    del counts
    m = paid_row_nonzeros(noisy, edges, sd, plan.n_samples)
    g_mu2, _ = plan.mu_squares()
    mu_g = math.sqrt(math.fsum(g_mu2))
    T = diagonal_steps(m) if plan.adaptive_steps else plan.steps
    z = math.sqrt(T) * plan.gradient_sensitivity / mu_g
    run = dataclasses.replace(
        plan, gradient_noise=(z,) * T, tail=math.ceil(T / 2), step_scale=1.0 / m,
        momentum=diagonal_momentum(m), nnz_noise=None, nnz_edges=())
    return run, {"released": m, "steps": T, "step_scale": 1.0 / m,
                 "momentum": run.momentum, "tail_fraction": NNZ_TAIL_FRACTION,
                 "rule": "m: smallest edge whose noisy count of rows above it is at most "
                         "tail_fraction * n + 2 noise sds * sqrt(bins above); step 1/m, "
                         "momentum 1 - 1/sqrt(m), T = min(T_max, max(T_min, "
                         "ceil(c sqrt(m)))) when adaptive"}


#: The paid row support's share of the run's :math:`\mu^2` (module doc).
DEFAULT_NNZ_SHARE = 0.01
#: Rows allowed above the paid :math:`m` (a fraction of ``n``; module doc).
NNZ_TAIL_FRACTION = 1e-3
#: :func:`diagonal_steps`: ``T = ceil(c sqrt(m))`` within ``[T_min, T_max]``.
DIAGONAL_STEPS_PER_ROOT = 6.0
MIN_DIAGONAL_STEPS = 10
MAX_DIAGONAL_STEPS = 1000
#: The diagonal form's curvature: at most this share of :math:`\mu^2` (one release).
DEFAULT_DIAGONAL_MAX_SHARE = 0.1


def row_nonzero_edges(n_params: int) -> tuple[int, ...]:
    r"""Bin edges of the paid row support (public, from ``p``): every integer up to 32, then
    a factor :math:`\sqrt2` per edge (rounded up) up to ``n_params`` (the largest support of
    a row, intercept column included)."""
    p = check_positive_int("n_params", n_params)
    edges = list(range(1, min(p, 32) + 1))
    e = 32.0
    while edges[-1] < p:
        e *= math.sqrt(2.0)
        edges.append(min(p, math.ceil(e)))
    return tuple(edges)


def paid_row_nonzeros(noisy: np.ndarray, edges: np.ndarray, sd: float, n: float,
                      fraction: float = NNZ_TAIL_FRACTION) -> int:
    r"""The paid :math:`m` from the noisy histogram (post-processing): the smallest edge
    :math:`e_j` with

    .. math:: \sum_{k > j}\tilde c_k \le f\,n + 2\sigma\sqrt{K - j},

    :math:`\tilde c_k` the noisy counts, :math:`K - j` the number of bins above :math:`e_j`,
    :math:`\sigma` their noise sd and ``f`` = ``fraction``: at most about :math:`fn` rows
    have more than :math:`m` nonzeros (the majorisation :math:`H \preceq mD` then holds for
    all other rows; a utility rule, privacy does not depend on it); the last edge when none
    qualifies."""
    noisy = np.asarray(noisy, dtype=np.float64)
    e = np.asarray(edges, dtype=np.int64)
    above = np.cumsum(noisy[::-1])[::-1][1:]  # above[j]: bins j+1..K, i.e. k > e_j
    bins_above = np.arange(e.size, 0, -1)
    allowed = fraction * float(n) + 2.0 * float(sd) * np.sqrt(bins_above)
    ok = np.flatnonzero(above <= allowed)
    return int(e[ok[0]]) if ok.size else int(e[-1])


def diagonal_momentum(m: int) -> float:
    r""":math:`1 - 1/\sqrt m`: the momentum of the diagonal form with step :math:`1/m`
    (module doc, "The diagonal preconditioner's steps"); 0 for :math:`m = 1`."""
    return 1.0 - 1.0 / math.sqrt(check_positive_int("m", m))


def diagonal_steps(m: int) -> int:
    r""":math:`T = \min(T_{\max}, \max(T_{\min}, \lceil c\sqrt m\rceil))` with
    :math:`c` = :data:`DIAGONAL_STEPS_PER_ROOT` (module doc, "The diagonal preconditioner's
    steps")."""
    t = math.ceil(DIAGONAL_STEPS_PER_ROOT * math.sqrt(check_positive_int("m", m)))
    return int(min(MAX_DIAGONAL_STEPS, max(MIN_DIAGONAL_STEPS, t)))


#: Default number of steps ``T`` (module doc of :mod:`noisygd.solvers.newton`).
DEFAULT_STEPS = 10
#: Target of the full curvature's noise floor: :math:`\tau \le r\,nC_H/p` (the planner's
#: rule; docs/newton.md, "The eigenvalue floor's target", with the measurements: 0.1 before,
#: whose floor stalled the steps along the low-curvature directions of loosely boxed
#: features, bank with its declared box at eps 8 0.876 -> 0.905 test AUC).
DEFAULT_HESSIAN_RATIO = 0.03
#: The diagonal form's target (one release at step 0, within
#: :data:`DEFAULT_DIAGONAL_MAX_SHARE`; its steps are majorisation steps).
DEFAULT_DIAGONAL_HESSIAN_RATIO = 0.1
#: At most this share of :math:`\mu^2` goes to the curvature releases.
DEFAULT_HESSIAN_MAX_SHARE = 0.5
#: Share of the gradients' :math:`\mu^2` spent on the tail's steps.
DEFAULT_TAIL_SHARE = 0.75
#: The curvature is released every this many approach steps (and at the last one).
DEFAULT_HESSIAN_EVERY = 2


def plan_newton(
    mu: float, *, relation: Neighbouring | str, n_params: int, n_samples: float,
    n_step: float, clip: float, curvature_clip: float, steps: int = DEFAULT_STEPS,
    tail: int | None = None, constant_hessian: bool = False, hessian: str = "full",
    eigenvalue_rule: str = "clip", failure_probability: float = 0.05,
    hessian_ratio: float | None = None,
    hessian_max_share: float = DEFAULT_HESSIAN_MAX_SHARE,
    tail_share: float = DEFAULT_TAIL_SHARE, damping: str = "none",
    hessian_every: int = DEFAULT_HESSIAN_EVERY, ridge: float = 0.0,
    row_nonzeros: int | None = None, secure: bool = False, momentum: float | None = None,
    nnz_share: float = DEFAULT_NNZ_SHARE, adaptive_steps: bool = False,
) -> NewtonPlan:
    r"""The Newton plan spending exactly :math:`\mu`-GDP, from public facts only.

    Rules (each a function of ``mu``, ``p``, ``n`` and the declared bounds):

    * ``T`` = ``steps``; the tail is the last :math:`K = \lceil T/3\rceil` steps
      (``tail``), the approach the first :math:`W = T - K`.
    * The curvature is released at step 0 and, during the approach, every
      ``hessian_every`` steps and at its last step (``hessian_every=0``: at step 0 and the
      last approach step only; a loss with a constant Hessian: once, at step 0). The tail
      keeps the last release.
    * Curvature budget: each release gets the :math:`\mu_H` at which its noise floor
      :math:`\tau` (:func:`noise_floor`) is :math:`r\,nC_H/p` (``hessian_ratio`` :math:`r`;
      :math:`nC_H/p` is the curvature per direction of ``n`` rows at the declared bound
      spread over ``p`` directions; ``None``: :data:`DEFAULT_HESSIAN_RATIO` for the full
      form, :data:`DEFAULT_DIAGONAL_HESSIAN_RATIO` for the diagonal one), i.e.
      :math:`\mu_H = \Delta_H(\tau/\sigma)p/(rn)`; all
      releases together at most ``hessian_max_share`` of :math:`\mu^2`.
    * Gradient budget, the rest: ``tail_share`` of it in equal parts over the tail, the
      remainder in equal parts over the approach (all of it over the tail when
      :math:`W = 0`). Release ``k`` gets :math:`z_k = \Delta_k/\mu_k`, so
      :math:`\sum_k(\Delta_k/z_k)^2 = \mu^2`.

    ``ridge`` (:math:`\ge 0`) is added to the oracle's ``l2`` in the run (public).
    ``row_nonzeros`` :math:`m` (the diagonal form only): a declared public bound on the
    nonzero coordinates of a served row, intercept column included; every step is scaled by
    :math:`1/m` (module doc, the diagonal preconditioner), and ``momentum`` defaults to
    :func:`diagonal_momentum`. Without it (and not ``secure``) the plan pays for :math:`m`
    (module doc, "The paid row support"): ``nnz_share`` of :math:`\mu^2` for the histogram,
    the curvature once at step 0, equal gradient noise, the tail ``ceil(T/2)`` unless given;
    ``adaptive_steps`` lets the run set ``T`` = :func:`diagonal_steps` of the released
    :math:`m`. ``momentum``: Nesterov momentum in ``[0, 1)`` (None: 0 for the full form).

    ``details`` records ``hessian_noise_ratio``, the achieved :math:`\tau/(nC_H/p)`: above
    about 1 the curvature is noise-dominated and the method is a conservatively
    preconditioned gradient method (a planner may prefer NoisyGD there).
    """
    mu = check_positive("mu", mu)
    relation = Neighbouring(relation)
    p = check_positive_int("n_params", n_params)
    n = check_positive("n_samples", n_samples)
    T = check_positive_int("steps", steps)
    K = math.ceil(T / 3) if tail is None else check_positive_int("tail", tail)
    if K > T:
        raise ValueError(f"tail={K} exceeds steps={T}")
    hessian = check_choice("hessian", hessian, HESSIAN_FORMS)
    rule = check_choice("eigenvalue_rule", eigenvalue_rule, EIGENVALUE_RULES)
    rho = check_fraction("failure_probability", failure_probability, closed_right=False)
    if rho <= 0.0:
        raise ValueError("failure_probability must be in (0, 1)")
    if hessian_ratio is None:
        hessian_ratio = (DEFAULT_DIAGONAL_HESSIAN_RATIO if hessian == "diagonal"
                         else DEFAULT_HESSIAN_RATIO)
    ratio = check_positive("hessian_ratio", hessian_ratio)
    max_share = check_fraction("hessian_max_share", hessian_max_share, closed_right=False)
    share = check_fraction("tail_share", tail_share)
    if not 0.0 < max_share < 1.0 or not 0.0 < share <= 1.0:
        raise ValueError("hessian_max_share must be in (0, 1) and tail_share in (0, 1]")
    W = T - K
    every = check_positive_int("hessian_every", hessian_every, minimum=0)
    step_scale, paid = 1.0, False
    if hessian == "diagonal" and row_nonzeros is None:
        if secure:
            raise ValueError(
                "the diagonal preconditioner in secure mode needs method_options["
                "'row_nonzeros']: a public bound on the nonzero coordinates per row, "
                "intercept column included (the paid row support is not priced for the "
                "discrete Gaussian); without one use method='noisy_gd'")
        paid = True  # module doc, "The paid row support"
        nnz_share = check_fraction("nnz_share", nnz_share, closed_right=False)
        if not 0.0 < nnz_share < 1.0:
            raise ValueError("nnz_share must be in (0, 1)")
        if momentum is not None and momentum != 0.0:
            raise ValueError("with the paid row support the momentum is the rule's "
                             "(diagonal_momentum of the released m)")
        K = math.ceil(T / 2) if tail is None else K
        W = T - K
    elif hessian == "diagonal":
        m_declared = check_positive_int("row_nonzeros", row_nonzeros)
        step_scale = 1.0 / m_declared
        if momentum is None:
            momentum = diagonal_momentum(m_declared)
    if momentum is None:
        momentum = 0.0
    momentum = check_real("momentum", momentum)
    if constant_hessian or W == 0 or (hessian == "diagonal" and every == 0) or paid:
        h_steps = [0]
    else:
        h_steps = sorted({0, W - 1, *(range(0, W, every) if every else ())})
    sens_h = curvature_sensitivity(relation)
    sens_g = relation.clipped_sum_sensitivity
    per = sens_h * noise_floor(1.0, p, rho, hessian) * p / (ratio * n)
    mu2 = mu * mu
    mu2_nnz = nnz_share * mu2 if paid else 0.0
    mu2_h = min(len(h_steps) * per * per, max_share * mu2)
    mu2_h_each = mu2_h / len(h_steps)
    mu2_g = mu2 - mu2_h - mu2_nnz
    if paid:  # equal gradient noise (the run re-spreads mu_g^2 over its own T)
        g_each = [mu2_g / T] * T
    elif W == 0:
        g_each = [mu2_g / K] * K
    else:
        g_each = [(1.0 - share) * mu2_g / W] * W + [share * mu2_g / K] * K
        if share == 1.0:
            raise ValueError("tail_share=1 leaves nothing for the approach's steps")
    z_h = sens_h / math.sqrt(mu2_h_each)
    achieved = (noise_floor(z_h * curvature_clip, p, rho, hessian)
                / (n * check_positive("curvature_clip", curvature_clip) / p))
    details = {"hessian_noise_ratio": achieved, "hessian_ratio_target": ratio,
               "constant_hessian": bool(constant_hessian),
               "rule": (f"T steps; tail ceil(T/3) averaged with weights mu_t^2; curvature at "
                        f"steps {sorted(h_steps)}; curvature mu from tau <= r n C_H / p, at "
                        "most hessian_max_share of mu^2")}
    return NewtonPlan(
        relation=relation, n_params=p, n_samples=check_positive("n_step", n_step),
        clip=check_positive("clip", clip), curvature_clip=float(curvature_clip),
        gradient_noise=tuple(sens_g / math.sqrt(m) for m in g_each),
        hessian_steps=tuple(h_steps), hessian_noise=(z_h,) * len(h_steps), tail=K,
        hessian=hessian, eigenvalue_rule=rule, failure_probability=rho, secure=bool(secure),
        damping=check_choice("damping", damping, DAMPINGS),
        ridge=check_nonnegative("ridge", ridge), step_scale=step_scale,
        momentum=float(momentum),
        nnz_noise=sens_h / math.sqrt(mu2_nnz) if paid else None,
        nnz_edges=row_nonzero_edges(p) if paid else (),
        adaptive_steps=bool(paid and adaptive_steps),
        details=details)
