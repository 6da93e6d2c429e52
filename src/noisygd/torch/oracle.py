r"""A gradient oracle for any ``torch.nn.Module``: clipped per-example gradient sums on its device.

:class:`TorchOracle` holds a module, a per-example loss and the private examples ``(X, y)`` as
tensors on the module's device, and serves the oracle's hot path

.. math::

    \sum_{i \in S}\mathrm{clip}_C\big(\nabla_\theta\,\ell(f_\theta(x_i), y_i)\big)

(Lecture 12, eq. 12.1) two ways:

* :meth:`TorchOracle.clipped_sum` (torch): rows as a tensor of indices, the parameters read
  from the module, the result a flat tensor on the device; :mod:`noisygd.torch.trainer` uses
  it, so parameters, gradients and noise never leave the device;
* :meth:`TorchOracle.clipped_gradient_sum` (NumPy, the
  :class:`~noisygd.oracles.base.GradientOracle` interface): ``theta`` is copied into the module
  and the sum copied back, so the unchanged NumPy algorithms (``noisy_gd``, ``noisy_sgd``,
  ``dp_ftrl``) train a network too, at two copies per step.

The per-example norms come from the fused book-keeping path
(:mod:`noisygd.torch.fused`) when every trained parameter sits in a covered layer, else from
``torch.func`` (:mod:`noisygd.torch.per_example`). Clipping is flat (one norm over all
parameters) or per layer (one norm per parameter tensor with :math:`C_k = C w_k/\lVert w\rVert`,
so the clipped per-example gradient still has norm at most :math:`C`: the same sensitivity and
the same events).

Memory format: on CPU, when the fused path serves a network holding a ``Conv2d`` and the
examples are images ``(N, C, H, W)`` of at least 16x16 pixels, each batch is copied
channels-last
(``x.contiguous(memory_format=torch.channels_last)``, the values unchanged): the convolutions
then produce channels-last activations, on which PyTorch's CPU kernels for pooling and
element-wise layers are several times faster than on NCHW ones (``MaxPool2d`` on 3x32x32
inputs, batch 256: about 3.5 ms against 15.5 ms). The stored examples and the module are not
changed; only the layout of a batch's activations, hence the rounding of float sums, differs.
For smaller images (below 16x16 pixels) the fused path on CPU instead pads a convolutional
network's batches to a multiple of :data:`_BUCKET` rows with copies of the batch's first
example, whose clipping factors are set to 0 (they add exactly nothing; their loss is not
counted): oneDNN compiles its convolution kernels for each input shape (about 1.5 ms for a new
batch size against 0.2 ms for a seen one, on the digits CNN's first layer), and Poisson
batches change size at every step, so without padding nearly every step of a small network
would compile them anew (on the CIFAR-shaped CNN the compilation is a small part of a 60 ms
step, and padding measured no faster there).

Declared facts: a network states no Lipschitz or smoothness constant and no row bound
(:attr:`row_norm_bound` is None: the model clips gradients, not rows), and it is not convex;
algorithms whose theorem needs those constants refuse it
(:func:`noisygd.torch.trainer.check_method`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from noisygd._checks import check_positive, check_positive_int
from noisygd.objectives.base import ObjectiveConstants
from noisygd.oracles.base import GradientOracle
from noisygd.torch.fused import FusedPlan, fused_plan
from noisygd.torch.per_example import (
    clip_factors,
    finite_rows,
    masked_rows,
    per_example_gradients,
)

__all__ = ["TorchOracle", "check_per_example"]

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _batch_norms(module: nn.Module) -> list[tuple[str, nn.Module]]:
    return [(name, sub) for name, sub in module.named_modules()
            if isinstance(sub, nn.modules.batchnorm._BatchNorm)]


def check_per_example(module: nn.Module,
                      batch_norms: list[tuple[str, nn.Module]] | None = None) -> None:
    """Refuse layers whose gradients are not per-example (BatchNorm in training mode).

    Parameters
    ----------
    module : torch.nn.Module
    batch_norms : list of (name, module), optional
        The module's BatchNorm layers, if already listed.

    Raises
    ------
    ValueError
        Naming the layer and its replacement, ``torch.nn.GroupNorm``.
    """
    for name, sub in _batch_norms(module) if batch_norms is None else batch_norms:
        if sub.training:
            raise ValueError(
                f"layer {name or '<root>'!r} is {type(sub).__name__} in training mode: its "
                "output for one example depends on the whole batch (batch statistics), so "
                "per-example gradients, and the sensitivity of their clipped sum, do not exist. "
                f"Replace it by torch.nn.GroupNorm(num_groups, {sub.num_features}) (or "
                "LayerNorm), or put it in eval mode with statistics that are public.")


def _as_tensor(value: Any, device: torch.device, dtype: torch.dtype | None) -> torch.Tensor:
    t = value if isinstance(value, torch.Tensor) else torch.as_tensor(np.asarray(value))
    if dtype is not None and t.is_floating_point():
        t = t.to(dtype)
    return t.to(device)


#: Smallest image (height x width) whose batches the fused path gathers channels-last (module
#: doc, "Memory format"; measured on CPU, batch 256: on 8x8 digits the NCHW kernels are as
#: fast and the per-example gradients of channels-last activations cost copies).
_CHANNELS_LAST_PIXELS = 256

#: Rows to a multiple of which the fused path pads a convolutional network's batches on CPU
#: (module doc, "Memory format").
_BUCKET = 8

#: Examples of the first batch the fused path is checked on (:meth:`TorchOracle._check_fused`).
_CHECK_EXAMPLES = 8
#: Relative tolerance of that check (float32 norms from two computations agree far closer).
_CHECK_RTOL = 1e-4


def _agree(got: list[torch.Tensor], want: list[torch.Tensor]) -> bool:
    """Whether two lists of per-example squared norms have equal shapes and agree within
    relative :data:`_CHECK_RTOL` (a shape mismatch is a disagreement, not an error); a norm
    that is not finite (an example the clipped sum drops) agrees with one not finite."""
    if len(got) != len(want) or any(a.shape != b.shape for a, b in zip(got, want, strict=True)):
        return False
    for a, b in zip(got, want, strict=True):
        fa, fb = torch.isfinite(a), torch.isfinite(b)
        if not torch.equal(fa, fb):
            return False
        a, b = a[fa], b[fb]
        if not torch.allclose(a, b, rtol=_CHECK_RTOL,
                              atol=1e-6 * max(1.0, float(b.max()) if b.numel() else 1.0)):
            return False
    return True


class TorchOracle(GradientOracle):
    """Private examples, a module and a per-example loss behind the oracle interface.

    Parameters
    ----------
    module : torch.nn.Module
        The model; its trained parameters are those with ``requires_grad``. Its device and
        floating dtype are those of the parameters.
    loss : callable
        ``loss(output, target)`` returning one loss per example, e.g.
        ``torch.nn.CrossEntropyLoss(reduction="none")``.
    X, y : array-like or Tensor
        The private examples (``X[i]``, ``y[i]``), copied once to the module's device
        (floating ``X`` in the parameters' dtype).
    per_layer : bool or sequence of float, default=False
        False: flat clipping. True: one clip per parameter tensor, :math:`C_k = C/\\sqrt K`.
        A sequence of positive weights :math:`w_k` (one per trained parameter tensor):
        :math:`C_k = C w_k/\\lVert w\\rVert`.
    fused : {"auto", True, False}, default="auto"
        The book-keeping path (module doc) where it applies ("auto"), always (True: raises if
        it does not apply) or never (False: ``torch.func``).
    max_physical_batch_size : int, optional
        Examples per forward pass; a larger set of rows is summed in chunks (accumulation).
    l2 : float, default=0.0
        Ridge :math:`\\mu` of :math:`\\frac\\mu2\\lVert\\theta\\rVert^2` (data-independent).

    Examples
    --------
    >>> import torch
    >>> net = torch.nn.Linear(3, 2)
    >>> oracle = TorchOracle(net, torch.nn.CrossEntropyLoss(reduction="none"),
    ...                      torch.randn(5, 3), torch.tensor([0, 1, 0, 1, 1]))
    >>> oracle.clipped_sum(None, 1.0)[0].shape
    torch.Size([8])
    """

    def __init__(
        self,
        module: nn.Module,
        loss: LossFn,
        X: Any,
        y: Any,
        *,
        per_layer: bool | Sequence[float] = False,
        fused: bool | str = "auto",
        max_physical_batch_size: int | None = None,
        l2: float = 0.0,
    ) -> None:
        if not isinstance(module, nn.Module):
            raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
        if not callable(loss):
            raise TypeError("loss must be callable: loss(output, target) -> per-example losses")
        self._batch_norms = _batch_norms(module)
        check_per_example(module, self._batch_norms)
        self.module = module
        self.loss = loss
        self._names = [k for k, v in module.named_parameters() if v.requires_grad]
        if not self._names:
            raise ValueError("the module has no trained parameter (requires_grad=True)")
        params = dict(module.named_parameters())
        self._params = [params[k] for k in self._names]
        self.device = self._params[0].device
        self.dtype = self._params[0].dtype
        self.X = _as_tensor(X, self.device, self.dtype)
        self.y = _as_tensor(y, self.device, self.dtype)
        if self.X.shape[0] != self.y.shape[0] or self.X.shape[0] < 1:
            raise ValueError(f"X and y must hold the same positive number of examples, got "
                             f"{self.X.shape[0]} and {self.y.shape[0]}")
        self._sizes = [p.numel() for p in self._params]
        self._per_layer = self._layer_weights(per_layer)
        if fused not in ("auto", True, False):
            raise ValueError(f"fused must be 'auto', True or False, got {fused!r}")
        self._fused: FusedPlan | None = None if fused is False else fused_plan(module,
                                                                             self._names)
        if fused is True and self._fused is None:
            raise ValueError("fused=True: some trained parameter is not in a Linear, Conv2d "
                             "(groups=1, zero padding), Embedding, LayerNorm or GroupNorm layer")
        self._checked = False
        # the fused path's batches of a convolutional network are gathered channels-last
        # (module doc, "Memory format"): same values, same modules, faster CPU kernels
        self._channels_last = (self._fused is not None and self.X.dim() == 4
                               and self.device.type == "cpu"
                               and self.X.shape[2] * self.X.shape[3] >= _CHANNELS_LAST_PIXELS
                               and any(isinstance(m, nn.Conv2d) for m in module.modules()))
        # smaller images' Poisson batches padded to a multiple of _BUCKET rows (module doc)
        self._bucket = (self._fused is not None and self.device.type == "cpu"
                        and self.X.dim() == 4 and not self._channels_last
                        and any(isinstance(m, nn.Conv2d) for m in module.modules()))
        self._chunk = (None if max_physical_batch_size is None
                       else check_positive_int("max_physical_batch_size",
                                               max_physical_batch_size))
        self._l2 = float(l2)
        if not (math.isfinite(self._l2) and self._l2 >= 0):
            raise ValueError(f"l2 must be finite and >= 0, got {l2!r}")

    def _layer_weights(self, per_layer: bool | Sequence[float]) -> np.ndarray | None:
        if per_layer is False:
            return None
        if per_layer is True:
            w = np.ones(len(self._names))
        else:
            w = np.asarray(per_layer, dtype=float)
            if w.shape != (len(self._names),) or not np.all(np.isfinite(w)) or np.any(w <= 0):
                raise ValueError(f"per_layer weights must be {len(self._names)} positive "
                                 f"numbers (one per trained parameter tensor), got {per_layer!r}")
        return w / np.linalg.norm(w)

    def close(self) -> None:
        """Remove the forward hooks the fused path registered on the module."""
        if self._fused is not None:
            self._fused.remove()

    # ---------------------------------------------------------------- facts
    @property
    def parameter_names(self) -> list[str]:
        """Names of the trained parameters, in the order of the flat vector."""
        return list(self._names)

    @property
    def fused(self) -> bool:
        """Whether the book-keeping path applies to this module."""
        return self._fused is not None

    @property
    def n_params(self) -> int:
        return int(sum(self._sizes))

    @property
    def n_rows(self) -> int:
        return int(self.X.shape[0])

    @property
    def row_norm_bound(self) -> None:
        """None: a model clips gradients, not rows (module doc)."""
        return None

    @property
    def l2(self) -> float:
        return self._l2

    def constants(self) -> ObjectiveConstants:
        """No Lipschitz or smoothness constant, not convex (module doc)."""
        return ObjectiveConstants(lipschitz=None, smoothness=None, strong_convexity=0.0,
                                  convex=False, row_norm_bound=math.inf)

    def clips(self, clip: float) -> float | list[float]:
        """``clip`` (flat) or the per-layer clips :math:`C_k` whose root sum of squares is it."""
        C = check_positive("clip", clip)
        if self._per_layer is None:
            return C
        return [C * float(w) for w in self._per_layer]

    # ---------------------------------------------------------------- parameters
    def get_flat(self) -> torch.Tensor:
        """The trained parameters as one flat tensor (a copy, on the device)."""
        return torch.cat([p.detach().reshape(-1) for p in self._params])

    @torch.no_grad()
    def set_flat(self, theta: torch.Tensor | np.ndarray) -> None:
        """Copy a flat vector into the trained parameters."""
        t = _as_tensor(theta, self.device, self.dtype)
        if t.shape != (self.n_params,):
            raise ValueError(f"theta must have shape ({self.n_params},), got {tuple(t.shape)}")
        for p, piece in zip(self._params, torch.split(t, self._sizes), strict=True):
            p.copy_(piece.view_as(p))

    def split(self, flat: torch.Tensor) -> list[torch.Tensor]:
        """Views of a flat vector shaped like the trained parameters."""
        return [piece.view_as(p) for p, piece in
                zip(self._params, torch.split(flat, self._sizes), strict=True)]

    # ---------------------------------------------------------------- torch hot path
    def _rows(self, rows: Any) -> torch.Tensor | None:
        if rows is None:
            return None
        if isinstance(rows, torch.Tensor):
            return rows.to(self.device)
        return torch.as_tensor(np.asarray(rows, dtype=np.int64), device=self.device)

    def _chunks(self, rows: torch.Tensor | None) -> list[torch.Tensor | None]:
        n = self.n_rows if rows is None else int(rows.shape[0])
        if self._chunk is None or n <= self._chunk:
            return [rows]
        idx = torch.arange(n, device=self.device) if rows is None else rows
        return list(torch.split(idx, self._chunk))

    def _batch(self, rows: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        if self._channels_last and self._fused is not None:
            # the stored examples keep their layout; the batch is copied channels-last
            x = self.X if rows is None else self.X[rows]
            return (x.contiguous(memory_format=torch.channels_last),
                    self.y if rows is None else self.y[rows])
        if rows is None:
            return self.X, self.y
        return self.X[rows], self.y[rows]

    def _padded(self, rows: torch.Tensor | None) -> tuple[torch.Tensor | None, int | None]:
        """``rows`` padded to a multiple of :data:`_BUCKET` with copies of its first index,
        and the number of real rows (None: no padding), where the oracle buckets batches
        (module doc, "Memory format")."""
        if not self._bucket or rows is None or self._fused is None:
            return rows, None
        k = int(rows.shape[0])
        pad = (-k) % _BUCKET
        if k == 0 or pad == 0:
            return rows, None
        return torch.cat([rows, rows[:1].expand(pad)]), k

    def _one_chunk(self, x: torch.Tensor, y: torch.Tensor, clip: float | None,
                   n_real: int | None = None) -> tuple[list[torch.Tensor], torch.Tensor]:
        check_per_example(self.module, self._batch_norms)
        if n_real is not None and (clip is None or self._fused is None):
            x, y, n_real = x[:n_real], y[:n_real], None
        if clip is None:
            losses = self._losses(x, y)
            return list(torch.autograd.grad(losses.sum(), self._params)), losses.detach().sum()
        clips = self.clips(clip)
        real = x.shape[0] if n_real is None else n_real
        if self._fused is not None and not self._checked:
            k = min(real, _CHECK_EXAMPLES)  # the real examples only, never the padding
            self._check_fused(x[:k], y[:k])
        if self._fused is not None:
            done = self._fused.clipped_sum(self.module, self.loss, x, y, clips, n_real)
            if done is not None:
                return done
        x, y = x[:real], y[:real]
        per = per_example_gradients(self.module, self.loss, x, y, self._names)
        sq = [g.flatten(1).pow(2).sum(1) for g in per]
        keep = finite_rows(sq)
        factors = clip_factors(sq, clips, keep)
        grads = [torch.einsum("b,b...->...", c, masked_rows(g, keep))  # non-finite: exactly 0
                 for c, g in zip(factors, per, strict=True)]
        with torch.no_grad():
            total = self._losses(x, y).sum()
        return grads, total

    def _check_fused(self, x: torch.Tensor, y: torch.Tensor) -> None:
        """Before the first fused step, on the first batch's first :data:`_CHECK_EXAMPLES`
        examples: the fused norms (1) against one backward pass per example (each example
        alone, batch size 1: no ``torch.func`` set-up in a run the fused path serves), and,
        for two examples or more, example ``i``'s fused norm unchanged (2) when its
        batch-mates are permuted (the batch reversed) and (3) when they are replaced (each
        half of the batch alone), all within relative :data:`_CHECK_RTOL`, with the shapes
        equal. A module that mixes the examples of a batch, or whose activations are not
        batch-first, fails it and is served by ``torch.func`` from then on (with a warning);
        so is one whose forward pass on these examples does not fit the plan
        (:meth:`FusedPlan._take`: a covered layer called twice or on more rows than
        examples, an output changed in place). A batch of one example is checked by (1)
        alone, which is exact for it, and the check runs again on the next batch, until one
        of two examples or more passes it. A heuristic guard, not a proof (docs/torch.md,
        "The fused path's assumption")."""
        k = x.shape[0]
        with torch.no_grad():
            self._losses(x, y)  # a loss that is not per-example is refused, not compared
        fused = self._fused.sq_norms(self.module, self.loss, x, y)  # type: ignore[union-attr]
        if fused is None:
            self._decline_fused(None)  # this forward pass does not fit the plan
            return
        checks: list[tuple[list[torch.Tensor] | None, list[torch.Tensor]]] = [
            (fused, self._alone_sq_norms(x, y))]
        if k >= 2:
            rev = self._fused.sq_norms(  # type: ignore[union-attr]
                self.module, self.loss, x.flip(0), y.flip(0))
            checks.append((None if rev is None else [r.flip(0) for r in rev], fused))
            for part in (slice(0, k // 2), slice(k // 2, k)):
                got = self._fused.sq_norms(  # type: ignore[union-attr]
                    self.module, self.loss, x[part], y[part])
                checks.append((got, [f[part] for f in fused]))
        if all(got is None or _agree(got, want) for got, want in checks):
            self._checked = k >= 2
            return
        self._decline_fused(
            "the fused per-example norms disagree with those of one backward pass per "
            "example on the first batch (does the module mix the examples of a batch, or "
            "hold activations that are not batch-first?); using torch.func")

    def _decline_fused(self, message: str | None) -> None:
        """Serve every later batch by ``torch.func`` (warning ``message`` unless None)."""
        if message is not None:
            warnings.warn(message, RuntimeWarning, stacklevel=5)
        self.close()
        self._fused = None
        self._checked = True

    def _alone_sq_norms(self, x: torch.Tensor, y: torch.Tensor) -> list[torch.Tensor]:
        """Per-example squared gradient norms from one backward pass per example (batch size
        1: each example alone), per trained tensor."""
        rows = []
        for i in range(x.shape[0]):
            loss = self._losses(x[i:i + 1], y[i:i + 1]).sum()
            grads = torch.autograd.grad(loss, self._params, allow_unused=True,
                                        materialize_grads=True)
            rows.append(torch.stack([g.detach().pow(2).sum() for g in grads]))
        return list(torch.stack(rows).T)

    def _losses(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        losses = self.loss(self.module(x), y)
        if losses.shape != (x.shape[0],):
            raise ValueError("the loss must return one value per example, shape "
                             f"({x.shape[0]},), got {tuple(losses.shape)}: use reduction='none'")
        return losses

    def clipped_sum(self, rows: Any, clip: float | None
                    ) -> tuple[torch.Tensor, torch.Tensor]:
        r""":math:`\sum_{i\in S}\mathrm{clip}_C(g_i)` as a flat tensor on the device, and the
        (private, unreleased) summed loss.

        Parameters
        ----------
        rows : Tensor or ndarray of int, or None
            Indices of the examples (all when None). An empty set gives zeros.
        clip : float or None
            ``C`` (per-layer clips from it when ``per_layer``); None for the unclipped sum.
        """
        idx = self._rows(rows)
        chunks = self._chunks(idx)
        if len(chunks) == 1 and (idx is None or idx.numel() > 0):
            padded, n_real = self._padded(idx)
            grads, loss = self._one_chunk(*self._batch(padded), clip, n_real)
            return torch.cat([g.detach().reshape(-1) for g in grads]), loss.detach()
        flat = torch.zeros(self.n_params, device=self.device, dtype=self.dtype)
        total = torch.zeros((), device=self.device, dtype=self.dtype)
        if idx is not None and idx.numel() == 0:
            return flat, total
        parts = self.split(flat)
        for chunk in chunks:
            padded, n_real = self._padded(chunk)
            grads, loss = self._one_chunk(*self._batch(padded), clip, n_real)
            for part, g in zip(parts, grads, strict=True):
                part.add_(g.detach())
            total += loss
        return flat, total

    def per_example_sq_norms(self, rows: Any = None, *, fused: bool | None = None
                             ) -> list[torch.Tensor]:
        """Per-example squared gradient norms per trained tensor (fused or ``torch.func``).

        For tests and diagnostics (not private). ``fused=None``: the path the oracle uses.
        """
        x, y = self._batch(self._rows(rows))
        use_fused = self._fused is not None if fused is None else fused
        if use_fused:
            if self._fused is None:
                raise ValueError("the fused path does not apply to this module")
            out = self._fused.sq_norms(self.module, self.loss, x, y)
            if out is not None:
                return [v.detach() for v in out]
        per = per_example_gradients(self.module, self.loss, x, y, self._names)
        return [g.flatten(1).pow(2).sum(1) for g in per]

    # ---------------------------------------------------------------- GradientOracle (NumPy)
    def per_example_loss(self, theta: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        self.set_flat(theta)
        x, y = self._batch(self._rows(rows))
        with torch.no_grad():
            return self._losses(x, y).to("cpu", torch.float64).numpy()

    def clipped_gradient_sum(self, theta: np.ndarray, clip: float | None,
                             rows: np.ndarray | None = None) -> np.ndarray:
        self.set_flat(theta)
        flat, _ = self.clipped_sum(rows, clip)
        return flat.to("cpu", torch.float64).numpy()
