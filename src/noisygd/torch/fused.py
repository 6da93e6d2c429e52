r"""Clipped gradient sums without per-example gradients: book-keeping with ghost norms.

The book-keeping method (Bu, Mao and Xu, "Differentially private optimization on large model
at small cost", ICML 2023) for layers whose parameter gradient is a contraction of the layer's
input :math:`a` and the gradient :math:`b = \partial \sum_i\ell_i/\partial s` of its output
:math:`s`:

1. one forward pass records each layer's input :math:`a_i` and output :math:`s_i`;
2. one backward pass computes the output gradients :math:`b_i` only (no parameter gradient);
3. the per-example gradient norms come from :math:`a_i` and :math:`b_i` (below) and give the
   clipping factors :math:`c_i` (:func:`~noisygd.torch.per_example.clip_factors`);
4. the clipped sum is one weighted contraction per layer, e.g. for a linear layer
   :math:`\sum_i c_i\, b_i^\top a_i`.
   An example whose norm is not finite gets :math:`c_i = 0` and its rows of every tensor the
   layer's sum reads (:math:`a_i` and :math:`b_i`, or only its materialised :math:`G_i` and
   bias sums where those are all the sum reads) are zeroed first (``torch.where``), so it
   contributes exactly 0.

Per-example squared norms (:math:`a_i \in \mathbb R^{T\times d}`, :math:`b_i \in \mathbb R^{T\times
p}` over :math:`T` positions: 1 for a plain linear layer, the sequence for a transformer, the
output pixels of a convolution after ``unfold``):

* ``Linear`` and ``Conv2d`` weight, with :math:`G_i = b_i^\top a_i`: for :math:`T = 1`,
  :math:`\lVert G_i\rVert_F^2 = \lVert a_i\rVert^2\lVert b_i\rVert^2`; otherwise the ghost norm
  (Li, Tramèr, Liang and Hashimoto 2022; Goodfellow 2015)
  :math:`\lVert G_i\rVert_F^2 = \langle a_i a_i^\top, b_i b_i^\top\rangle_F` (cost
  :math:`T^2(d + p)`), or :math:`G_i` itself (cost :math:`Tdp`), whichever is cheaper (the
  per-layer rule of Bu et al. 2023 and of Opacus' mixed ghost clipping); a convolution's
  :math:`G_i` comes from one batch-grouped convolution (from the input's patches and one
  batched product per chunk of examples when the input is channels-last) or, for few input
  channels or small maps, from ``unfold`` over chunks of examples; bias:
  :math:`\lVert \mathbf 1^\top b_i\rVert^2`;
* ``Embedding`` with indices :math:`k_{i,t}`:
  :math:`\sum_{t,s}[k_{i,t} = k_{i,s}]\,\langle b_{i,t}, b_{i,s}\rangle`;
* ``LayerNorm`` and ``GroupNorm``: the per-example gradients of the affine parameters,
  :math:`\sum_t b_{i,t}\odot\hat a_{i,t}` and :math:`\sum_t b_{i,t}` with :math:`\hat a` the
  normalised input, are as small as the parameters: materialised.

:class:`FusedPlan` applies when every trained parameter belongs to one of these layers and to
no other module, each layer called once per forward pass with batch-first input and output
(first dimension the number of examples), neither modified in place later
(``ReLU(inplace=True)``: checked by the tensors' version counters); otherwise (or for a layer
configuration not covered, e.g. a grouped convolution) the oracle uses the ``torch.func``
path (:mod:`noisygd.torch.per_example`). Both give the same clipped sum (tests/torch). The
path assumes what every per-example method assumes, that the module treats the examples of a
batch independently; :class:`~noisygd.torch.oracle.TorchOracle` checks it before the first
fused step, on its first batch, against one backward pass per example (each example alone).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from noisygd.torch.per_example import clip_factors, finite_rows
from noisygd.torch.per_example import masked_rows as _masked_rows

__all__ = ["FUSED_LAYERS", "FusedPlan", "fused_plan"]

#: The layer types the fused path covers (module doc).
FUSED_LAYERS: tuple[type[nn.Module], ...] = (
    nn.Linear, nn.Conv2d, nn.Embedding, nn.LayerNorm, nn.GroupNorm)


#: Output positions and input channels from which a convolution's materialised per-example
#: gradients are computed by one batch-grouped convolution rather than ``unfold`` and a
#: batched product (measured on CPU, batch 256, 3x3 kernels: ``unfold`` dominates for large
#: maps, the grouped convolution for small ones and for inputs of fewer than 4 channels,
#: e.g. RGB images: 9 ms against 13 ms on 3x32x32).
_GROUPED_MIN_POSITIONS = 256
_GROUPED_MIN_CHANNELS = 4

#: Bytes of unfolded input per chunk of examples when a convolution's per-example gradients
#: are formed from ``unfold`` (about L2-sized: the copy is read back while in cache).
_CHUNK_BYTES = 2 << 20


def _mask(t: torch.Tensor, keep: torch.Tensor | None) -> torch.Tensor:
    """``t`` with the rows where ``keep`` is False zeroed
    (:func:`~noisygd.torch.per_example.masked_rows`); ``keep=None`` means every example's
    norm is finite, where the mask would change nothing, and returns ``t`` itself."""
    return t if keep is None else _masked_rows(t, keep)


def _sq(t: torch.Tensor) -> torch.Tensor:
    """Per-example squared norm of a ``(B, ...)`` tensor."""
    return torch.linalg.vector_norm(t.flatten(1), dim=1).square()


def _scaled(b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """``b`` with example ``i`` multiplied by ``c[i]``."""
    return b * c.view(-1, *([1] * (b.dim() - 1)))


def _contraction_norm(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, Any]:
    r""":math:`\lVert b_i^\top a_i\rVert_F^2` for ``a`` (B, T, d), ``b`` (B, T, p): ghost or
    materialised, whichever is cheaper; returns the materialised ``(B, p, d)`` if it was."""
    T, d, p = a.shape[1], a.shape[2], b.shape[2]
    if T == 1:
        return _sq(a) * _sq(b), None
    if T * (d + p) < d * p:
        return _ghost_norm(a, b), None
    per = torch.bmm(b.transpose(1, 2), a)
    return _sq(per), per


def _ghost_norm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    r"""The ghost norm :math:`\langle a_i a_i^\top, b_i b_i^\top\rangle_F` for ``a``
    (B, T, d), ``b`` (B, T, p)."""
    aa = torch.bmm(a, a.transpose(1, 2))
    bb = torch.bmm(b, b.transpose(1, 2))
    return (aa * bb).flatten(1).sum(1)


class _Layer:
    """One covered layer: its trained parameters and the norm/contraction rules."""

    def __init__(self, module: nn.Module, names: dict[str, str]) -> None:
        self.module = module
        self.names = names  # attribute ("weight"/"bias") -> full parameter name

    def parts(self) -> list[str]:
        return [k for k in ("weight", "bias") if k in self.names]

    # subclasses: norms(a, b) -> (dict attr -> (B,) squared norms, cache);
    # grads(a, b, cache, factors: dict attr -> (B,), keep: (B,) bool or None) -> dict attr ->
    # gradient, where every tensor a term of the sum is read from (a, b or the cache) has the
    # rows where ``keep`` is False zeroed first (_mask): an example whose norm is not finite
    # contributes exactly 0 (module doc); None: every norm is finite
    def norms(self, a: torch.Tensor, b: torch.Tensor) -> tuple[dict[str, torch.Tensor], Any]:
        raise NotImplementedError

    def grads(self, a: torch.Tensor | None, b: torch.Tensor | None, cache: Any,
              factors: dict[str, torch.Tensor], keep: torch.Tensor | None
              ) -> dict[str, torch.Tensor]:
        raise NotImplementedError

    def needs_inputs(self, a: torch.Tensor, cache: Any) -> bool:
        """Whether :meth:`grads` reads ``a`` and ``b`` given this cache (else they are
        released after the norms: ``None`` is passed)."""
        return True


class _Linear(_Layer):
    @staticmethod
    def _flat(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        B = a.shape[0]
        return a.reshape(B, -1, a.shape[-1]), b.reshape(B, -1, b.shape[-1])

    def norms(self, a, b):
        if a.dim() == 2:  # one position: ||b_i a_i^T||^2 = ||a_i||^2 ||b_i||^2
            sb = _sq(b)
            out2 = {"bias": sb} if "bias" in self.names else {}
            if "weight" in self.names:
                out2["weight"] = _sq(a) * sb
            return out2, {}
        a3, b3 = self._flat(a, b)
        out: dict[str, torch.Tensor] = {}
        cache: dict[str, torch.Tensor] = {}
        if "weight" in self.names:
            out["weight"], per = _contraction_norm(a3, b3)
            if per is not None:
                cache["weight"] = per
        if "bias" in self.names:
            cache["bias"] = b3.sum(1)
            out["bias"] = _sq(cache["bias"])
        return out, cache

    def needs_inputs(self, a, cache):
        return a.dim() == 2 or ("weight" in self.names and "weight" not in cache)

    def grads(self, a, b, cache, factors, keep):
        out = {}
        if a is not None and a.dim() == 2:
            a, b = _mask(a, keep), _mask(b, keep)
            if "weight" in factors:
                out["weight"] = torch.mm(_scaled(b, factors["weight"]).t(), a)
            if "bias" in factors:
                out["bias"] = factors["bias"] @ b
            return out
        if "weight" in factors:
            c = factors["weight"]
            if "weight" in cache:  # materialised: only the cache is read
                out["weight"] = torch.einsum("b,bpd->pd", c, _mask(cache["weight"], keep))
            else:
                a3, b3 = self._flat(_mask(a, keep), _mask(b, keep))
                bs = _scaled(b3, c)
                out["weight"] = bs.reshape(-1, bs.shape[-1]).T @ a3.reshape(-1, a3.shape[-1])
        if "bias" in factors:
            out["bias"] = factors["bias"] @ _mask(cache["bias"], keep)
        return out


class _Conv2d(_Layer):
    def __init__(self, module: nn.Module, names: dict[str, str]) -> None:
        super().__init__(module, names)
        #: Memory that :meth:`_patches` reuses from step to step (:meth:`_scratch`).
        self._buffer: torch.Tensor | None = None

    def _scratch(self, shape: tuple[int, ...], like: torch.Tensor) -> torch.Tensor:
        """An uninitialised tensor of ``shape`` in memory this layer keeps between calls
        (grown when too small): a fresh allocation of a few MB per step costs more in first
        touches of its pages than the copy written into it (Poisson batches change size at
        every step, so the allocator does not hand the same block back). Valid until the
        next call."""
        n = 1
        for k in shape:
            n *= k
        buf = self._buffer
        if (buf is None or buf.numel() < n or buf.dtype != like.dtype
                or buf.device != like.device):
            buf = torch.empty(max(n, 1), dtype=like.dtype, device=like.device)
            self._buffer = buf
        return buf[:n].view(shape)

    def _unfold(self, a: torch.Tensor) -> torch.Tensor:
        """``F.unfold(a, ...)`` of shape (B, C kh kw, L), by a strided view of the padded
        input and one copy (several times faster than ``F.unfold`` on CPU)."""
        m = self.module
        (kh, kw), (sh, sw), (ph, pw), (dh, dw) = (m.kernel_size, m.stride, m.padding,
                                                  m.dilation)
        xp = F.pad(a, (pw, pw, ph, ph)) if ph or pw else a
        win = xp.unfold(2, dh * (kh - 1) + 1, sh).unfold(3, dw * (kw - 1) + 1, sw)
        if dh > 1 or dw > 1:
            win = win[..., ::dh, ::dw]
        B, C, Ho, Wo = win.shape[:4]
        return win.permute(0, 1, 4, 5, 2, 3).reshape(B, C * kh * kw, Ho * Wo)

    def _patches(self, a: torch.Tensor) -> torch.Tensor:
        """The input patches as ``(B, L, kh kw C)``, from a channels-last copy of the padded
        input (the order of the patch coordinates is that of the contiguous channels-last
        windows, not the weight's; ghost norms do not depend on it), written into the layer's
        scratch memory (:meth:`_scratch`: valid until the next call). For many input
        channels several times faster than :meth:`_unfold`, whose innermost copied run is
        one row of one window."""
        m = self.module
        (kh, kw), (sh, sw), (ph, pw), (dh, dw) = (m.kernel_size, m.stride, m.padding,
                                                  m.dilation)
        xp = F.pad(a.permute(0, 2, 3, 1), (0, 0, pw, pw, ph, ph)).contiguous()
        B, Hp, Wp, C = xp.shape
        Ho = (Hp - dh * (kh - 1) - 1) // sh + 1
        Wo = (Wp - dw * (kw - 1) - 1) // sw + 1
        s0, s1, s2, s3 = xp.stride()
        win = xp.as_strided((B, Ho, Wo, kh, kw, C), (s0, sh * s1, sw * s2, dh * s1, dw * s2, s3))
        out = self._scratch((B, Ho, Wo, kh, kw, C), a)
        out.copy_(win)
        return out.view(B, Ho * Wo, kh * kw * C)

    def _per_example(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """The per-example weight gradients, shape (B, p, d): one convolution with the batch
        as groups (much faster than ``unfold`` and a batched product on CPU)."""
        m = self.module
        B, c = a.shape[0], a.shape[1]
        w = torch.nn.grad.conv2d_weight(
            a.reshape(1, B * c, *a.shape[2:]), (B * m.out_channels, c, *m.kernel_size),
            b.reshape(1, B * b.shape[1], *b.shape[2:]), stride=m.stride, padding=m.padding,
            dilation=m.dilation, groups=B)
        return w.view(B, m.out_channels, -1)

    def _per_example_patches(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        r"""The per-example weight gradients for a channels-last input ``a``, shape
        (B, p, kh kw C) with the coordinates in the patches' order (:meth:`_patches`), not the
        weight's: :math:`G_i^\top = P_i^\top b_i` over chunks of examples whose patches take
        about :data:`_CHUNK_BYTES` (a channels-last ``b`` is ``(B, L, p)`` without a copy;
        faster than the batch-grouped convolution, which needs NCHW copies of both: 8.4 ms
        against 11.0 ms on 16x16x16 inputs, 32 outputs, batch 256)."""
        m = self.module
        B, p = b.shape[0], b.shape[1]
        bl = b.permute(0, 2, 3, 1).reshape(B, -1, p)  # a view for channels-last b
        L = bl.shape[1]
        d = a.shape[1] * m.kernel_size[0] * m.kernel_size[1]
        out = torch.empty(B, d, p, dtype=b.dtype, device=b.device)
        k = max(1, _CHUNK_BYTES // max(1, d * L * b.element_size()))
        for s in range(0, B, k):
            torch.bmm(self._patches(a[s:s + k]).transpose(1, 2), bl[s:s + k],
                      out=out[s:s + k])
        return out.transpose(1, 2)

    def _per_example_unfolded(self, a: torch.Tensor, b3: torch.Tensor) -> torch.Tensor:
        r"""The per-example weight gradients :math:`G_i = b_i U_i^\top` (shape (B, p, d),
        ``U_i`` the unfolded input of example ``i``) in chunks of examples whose unfolded
        input takes about :data:`_CHUNK_BYTES`: the ``unfold`` copy of the whole batch (for
        3x32x32 inputs and batch 256, 28 MB written and read back) would cost more in
        memory traffic and fresh pages than the products."""
        B, p, L = b3.shape
        d = a.shape[1] * self.module.kernel_size[0] * self.module.kernel_size[1]
        out = torch.empty(B, d, p, dtype=b3.dtype, device=b3.device)
        k = max(1, _CHUNK_BYTES // max(1, d * L * b3.element_size()))
        for s in range(0, B, k):
            # (k, d, L) @ (k, L, p): the faster orientation of MKL's small products
            torch.bmm(self._unfold(a[s:s + k]), b3[s:s + k].transpose(1, 2), out=out[s:s + k])
        return out.transpose(1, 2)

    def norms(self, a, b):
        out: dict[str, torch.Tensor] = {}
        cache: dict[str, torch.Tensor] = {}
        b3 = b.flatten(2)  # (B, p, L)
        if "weight" in self.names:
            m = self.module
            L, p = b3.shape[2], b3.shape[1]
            d = a.shape[1] * m.kernel_size[0] * m.kernel_size[1]
            if L * (d + p) < d * p:  # ghost norm (module doc)
                out["weight"] = _ghost_norm(self._patches(a), b3.transpose(1, 2))
            else:
                if (L >= _GROUPED_MIN_POSITIONS and a.shape[1] >= _GROUPED_MIN_CHANNELS
                        and a.is_contiguous(memory_format=torch.channels_last)):
                    per = self._per_example_patches(a, b)  # in patch order
                    cache["patch_order"] = per
                elif L >= _GROUPED_MIN_POSITIONS and a.shape[1] >= _GROUPED_MIN_CHANNELS:
                    per = self._per_example(a, b)
                else:  # materialised, on the unfolded input
                    per = self._per_example_unfolded(a, b3)
                cache["weight"] = per
                out["weight"] = _sq(per)
        if "bias" in self.names:
            cache["bias"] = b3.sum(2)
            out["bias"] = _sq(cache["bias"])
        return out, cache

    def needs_inputs(self, a, cache):
        return "weight" in self.names and "weight" not in cache

    def grads(self, a, b, cache, factors, keep):
        m = self.module
        out = {}
        if "weight" in factors:
            c = factors["weight"]
            if "weight" in cache:  # the materialised per-example gradients: only they are read
                per = _mask(cache["weight"], keep)
                g = torch.einsum("b,bpd->pd", c, per)
                if "patch_order" in cache:  # (p, kh kw C) -> the weight's (p, C, kh, kw)
                    kh, kw = m.kernel_size
                    g = g.view(-1, kh, kw, m.in_channels).permute(0, 3, 1, 2)
                out["weight"] = g.reshape(m.weight.shape)
            else:
                out["weight"] = torch.nn.grad.conv2d_weight(
                    _mask(a, keep), m.weight.shape, _scaled(_mask(b, keep), c),
                    stride=m.stride, padding=m.padding, dilation=m.dilation, groups=1)
        if "bias" in factors:
            out["bias"] = factors["bias"] @ _mask(cache["bias"], keep)
        return out


class _Embedding(_Layer):
    def _parts(self, a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        B = a.shape[0]
        idx = a.reshape(B, -1)
        g = b.reshape(B, -1, b.shape[-1])
        pad = self.module.padding_idx
        if pad is not None:
            g = g * (idx != pad).unsqueeze(-1).to(g.dtype)
        return idx, g

    def norms(self, a, b):
        idx, g = self._parts(a, b)
        same = (idx.unsqueeze(2) == idx.unsqueeze(1)).to(g.dtype)
        return {"weight": (torch.bmm(g, g.transpose(1, 2)) * same).flatten(1).sum(1)}, None

    def grads(self, a, b, cache, factors, keep):
        idx, g = self._parts(a, _mask(b, keep))
        w = self.module.weight
        gs = _scaled(g, factors["weight"]).reshape(-1, g.shape[-1])
        return {"weight": torch.zeros_like(w).index_add_(0, idx.reshape(-1), gs)}


class _Norm(_Layer):
    """LayerNorm and GroupNorm: materialised per-example affine gradients (module doc)."""

    def _per(self, a: torch.Tensor, b: torch.Tensor) -> dict[str, torch.Tensor]:
        m = self.module
        if isinstance(m, nn.LayerNorm):
            xhat = F.layer_norm(a, m.normalized_shape, eps=m.eps)
            dims = tuple(range(1, a.dim() - len(m.normalized_shape)))
        else:
            xhat = F.group_norm(a, m.num_groups, eps=m.eps)
            dims = tuple(range(2, a.dim()))
        out = {}
        if "weight" in self.names:
            out["weight"] = (b * xhat).sum(dims) if dims else b * xhat
        if "bias" in self.names:
            out["bias"] = b.sum(dims) if dims else b
        return out

    def norms(self, a, b):
        per = self._per(a, b)
        return {k: _sq(v) for k, v in per.items()}, per

    def needs_inputs(self, a, cache):
        return False

    def grads(self, a, b, cache, factors, keep):
        return {k: torch.einsum("b,b...->...", factors[k], _mask(cache[k], keep))
                for k in factors}


def _covered(module: nn.Module) -> type[_Layer] | None:
    """The rule class for ``module``, or None where the fused path does not apply."""
    if type(module) is nn.Linear:
        return _Linear
    if type(module) is nn.Conv2d:
        pad = module.padding
        if (module.groups != 1 or module.padding_mode != "zeros" or isinstance(pad, str)):
            return None
        return _Conv2d
    if type(module) is nn.Embedding:
        if module.max_norm is not None or module.scale_grad_by_freq or module.sparse:
            return None
        return _Embedding
    if type(module) in (nn.LayerNorm, nn.GroupNorm):
        return _Norm
    return None


class FusedPlan:
    """The covered layers of a module and the hooks that record their inputs and outputs.

    Built by :func:`fused_plan`; :meth:`clipped_sum` computes the clipped gradient sum.
    """

    def __init__(self, layers: list[_Layer], names: Sequence[str]) -> None:
        self.layers = layers
        self.names = list(names)
        self._records: list[tuple[nn.Module, torch.Tensor, torch.Tensor, int, int]] = []
        self._active = False
        self._handles = [layer.module.register_forward_hook(self._hook) for layer in layers]

    def _hook(self, module: nn.Module, inputs: tuple, output: torch.Tensor) -> None:
        if self._active:
            # the version counters tell whether a later in-place operation (ReLU(inplace=True),
            # x += ...) changed the recorded tensors, which would make the norms wrong
            self._records.append((module, inputs[0], output, inputs[0]._version,
                                  output._version))

    def _take(self, batch: int
              ) -> list[tuple[nn.Module, torch.Tensor, torch.Tensor, int, int]] | None:
        """The records of the last forward pass in the order of :attr:`layers`, or None
        unless each covered layer was called exactly once, with input and output of
        ``batch`` rows (the number of examples: a module that puts several views of an
        example on the batch axis, ``enc(torch.cat([x, x2]))``, or a sequence-first
        activation would otherwise get one norm per view or position, not per example),
        and none of the recorded inputs and outputs was modified in place afterwards."""
        records, self._records = self._records, []
        by_layer: dict[int, tuple[nn.Module, torch.Tensor, torch.Tensor, int, int]] = {}
        for rec in records:
            if (id(rec[0]) in by_layer or rec[1]._version != rec[3]
                    or rec[2]._version != rec[4] or rec[1].dim() == 0 or rec[2].dim() == 0
                    or rec[1].shape[0] != batch or rec[2].shape[0] != batch):
                return None
            by_layer[id(rec[0])] = rec
        if len(by_layer) != len(self.layers):
            return None
        return [by_layer[id(layer.module)] for layer in self.layers]

    def remove(self) -> None:
        """Remove the forward hooks."""
        for h in self._handles:
            h.remove()
        self._handles = []

    def _backward(self, module: nn.Module, loss: Callable, x: torch.Tensor, y: torch.Tensor
                  ) -> tuple[list[torch.Tensor], list[torch.Tensor], torch.Tensor] | None:
        """Steps 1 and 2 of the module doc: one forward pass recording the covered layers'
        inputs and outputs, one backward pass for the outputs' gradients. Returns the
        layers' inputs and output gradients (order of :attr:`layers`) and the per-example
        losses, or None when this forward pass did not call each covered layer exactly once
        on ``x.shape[0]`` rows (:meth:`_take`). The outputs themselves are released here:
        only their gradients are used."""
        self._records = []
        self._active = True
        try:
            out = module(x)
        finally:
            self._active = False
        records = self._take(x.shape[0])
        losses = loss(out, y)
        if losses.shape != (x.shape[0],):
            raise ValueError("the loss must return one value per example, shape "
                             f"({x.shape[0]},), got {tuple(losses.shape)}: use reduction='none'")
        if records is None:
            return None
        bs = torch.autograd.grad(losses.sum(), [r[2] for r in records], allow_unused=True,
                                 materialize_grads=True)
        return [r[1] for r in records], list(bs), losses.detach()

    def _norms(self, inputs: list[Any], bs: list[Any], release: bool = False
               ) -> tuple[list[torch.Tensor], list[Any]]:
        """Step 3: per-example squared norms of each trained parameter's gradient (order of
        ``names``) and each layer's cache for step 4. ``release``: a layer's input and
        output gradient are dropped from ``inputs`` and ``bs`` (set to None) as soon as its
        cache holds all that step 4 reads (:meth:`_Layer.needs_inputs`), so that the
        largest activations of a step do not outlive their use."""
        norms: dict[str, torch.Tensor] = {}
        caches = []
        for k, layer in enumerate(self.layers):
            n, cache = layer.norms(inputs[k], bs[k])
            caches.append(cache)
            if release and not layer.needs_inputs(inputs[k], cache):
                inputs[k] = bs[k] = None
            for attr, v in n.items():
                norms[layer.names[attr]] = v
        return [norms[k] for k in self.names], caches

    def clipped_sum(
        self, module: nn.Module, loss: Callable, x: torch.Tensor, y: torch.Tensor,
        clips: float | Sequence[float], n_real: int | None = None,
    ) -> tuple[list[torch.Tensor], torch.Tensor] | None:
        r""":math:`\sum_i c_i g_i` for each trained parameter (order of ``names``) and the
        summed loss, or None when this forward pass did not call each covered layer exactly
        once (the caller then uses the ``torch.func`` path). ``n_real``: only the first
        ``n_real`` examples count (the others, padding, get factor 0 and no loss)."""
        done = self._backward(module, loss, x, y)
        if done is None:
            return None
        inputs, bs, losses = done
        del done
        with torch.no_grad():  # steps 3 and 4 record no graph
            sq, caches = self._norms(inputs, bs, release=True)
            finite = finite_rows(sq)
            listed = clip_factors(sq, clips, finite)
            if n_real is not None and n_real < x.shape[0]:
                for f in {id(f): f for f in listed}.values():  # flat: one tensor, shared
                    f[n_real:] = 0.0  # padding rows (finite, copies of a real one) add 0
            factors = dict(zip(self.names, listed, strict=True))
            # every norm finite: the masks would copy the tensors unchanged, and are skipped
            # (on CPU; on an accelerator the test would cost a synchronisation: they run)
            keep = None if finite.device.type == "cpu" and bool(finite.all()) else finite
            grads: dict[str, torch.Tensor] = {}
            for k, layer in enumerate(self.layers):
                f = {attr: factors[name] for attr, name in layer.names.items()}
                # an example whose norm is not finite has factor 0; each layer zeroes its
                # terms too (the tensors it reads), since 0 * inf = NaN would reach the sum
                # (per_example module doc)
                for attr, g in layer.grads(inputs[k], bs[k], caches[k], f, keep).items():
                    grads[layer.names[attr]] = g
                inputs[k] = bs[k] = caches[k] = None
            return [grads[k] for k in self.names], losses[:n_real].sum()

    def sq_norms(self, module: nn.Module, loss: Callable, x: torch.Tensor, y: torch.Tensor
                 ) -> list[torch.Tensor] | None:
        """Per-example squared norms of each trained parameter's gradient (for tests)."""
        done = self._backward(module, loss, x, y)
        if done is None:
            return None
        with torch.no_grad():
            return self._norms(done[0], done[1])[0]


def fused_plan(module: nn.Module, names: Sequence[str]) -> FusedPlan | None:
    """A :class:`FusedPlan` when every parameter in ``names`` belongs to a covered layer
    (module doc) and to no other module (tied weights, e.g. an embedding shared with the
    decoder, would be counted under one module only), else None.

    Parameters
    ----------
    module : torch.nn.Module
    names : sequence of str
        The trained parameters (``module.named_parameters()`` names).
    """
    wanted = set(names)
    trained = {id(p) for k, p in module.named_parameters() if k in wanted}
    reached = [id(p) for _, p in module.named_parameters(remove_duplicate=False)
               if id(p) in trained]
    if len(reached) != len(set(reached)):
        return None  # a trained parameter reachable from two modules (tied weights)
    layers: list[_Layer] = []
    seen: set[str] = set()
    for prefix, sub in module.named_modules():
        own = {attr: f"{prefix}.{attr}" if prefix else attr
               for attr, _ in sub.named_parameters(recurse=False)}
        own = {attr: full for attr, full in own.items() if full in wanted}
        if not own:
            continue
        rule = _covered(sub)
        if rule is None or not set(own) <= {"weight", "bias"}:
            return None
        layers.append(rule(sub, own))
        seen |= set(own.values())
    if seen != wanted:
        return None
    return FusedPlan(layers, names)
