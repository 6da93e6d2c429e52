r"""Per-example gradients by ``torch.func`` and their clipped sum (the general path).

For a module :math:`f_\theta` and a per-example loss :math:`\ell`, the per-example gradients
:math:`g_i = \nabla_\theta\,\ell(f_\theta(x_i), y_i)` are computed as
``vmap(grad(loss_of_one_example))`` over the batch (``torch.func``): one vectorised call, exact
for any module whose output for example ``i`` depends on ``x_i`` only (no batch statistics).
Memory is :math:`O(|S|\,p)`; :mod:`noisygd.torch.fused` avoids it for the layers it covers.

Clipping (Lecture 12, eq. 12.1), flat or per layer:

.. math::

    \mathrm{flat:}\quad c_i = \min\Big(1, \frac{C}{\lVert g_i\rVert}\Big), \qquad
    \mathrm{per\ layer:}\quad c_{i,k} = \min\Big(1, \frac{C_k}{\lVert g_{i,k}\rVert}\Big),

where :math:`g_{i,k}` is the block of parameter tensor ``k``. Per layer, the clipped
per-example gradient has norm at most :math:`\sqrt{\sum_k C_k^2}`, the sensitivity of the sum.

An example whose gradient norm is not finite (an overflow to ``inf`` or a ``NaN`` in any block)
gets factor 0 in every block and its gradient is masked to exactly zero before the sum
(:func:`finite_rows`): clipped to 0, it contributes nothing, within every bound above. Without
the mask, :math:`C/\infty = 0` and :math:`0\cdot\infty = \mathrm{NaN}` would make the sum NaN
exactly when that example is in the batch, a noise-free distinguishing event.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch.func import functional_call, grad, vmap

__all__ = ["clip_factors", "finite_rows", "masked_rows", "per_example_gradients"]

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def per_example_gradients(
    module: torch.nn.Module,
    loss: LossFn,
    x: torch.Tensor,
    y: torch.Tensor,
    names: Sequence[str],
) -> list[torch.Tensor]:
    """Per-example gradients of ``loss(module(x_i), y_i)`` for the parameters ``names``.

    Parameters
    ----------
    module : torch.nn.Module
    loss : callable
        ``loss(output, target)`` returning one loss per example (``reduction="none"``).
    x, y : Tensor
        A batch: ``x[i]`` and ``y[i]`` are example ``i``.
    names : sequence of str
        Names (``module.named_parameters()``) of the trained parameters.

    Returns
    -------
    list of Tensor
        One tensor of shape ``(len(x), *param.shape)`` per name.
    """
    params = dict(module.named_parameters())
    trained = {k: params[k].detach() for k in names}
    frozen = {k: v.detach() for k, v in params.items() if k not in trained}
    buffers = dict(module.named_buffers())

    def one(p: dict[str, torch.Tensor], xi: torch.Tensor, yi: torch.Tensor) -> torch.Tensor:
        out = functional_call(module, ({**p, **frozen}, buffers), (xi.unsqueeze(0),))
        return loss(out, yi.unsqueeze(0)).sum()

    randomness = "different" if module.training else "error"
    grads = vmap(grad(one), in_dims=(None, 0, 0), randomness=randomness)(trained, x, y)
    return [grads[k] for k in names]


def finite_rows(sq_norms: Sequence[torch.Tensor]) -> torch.Tensor:
    r"""Which examples have a finite gradient norm: :math:`\lVert g_{i,k}\rVert^2` finite for
    every parameter tensor ``k``.

    A finite squared norm implies finite entries (a NaN or an infinite entry makes it NaN or
    ``inf``); an example whose squared norm overflows with finite entries is counted as not
    finite too.

    Parameters
    ----------
    sq_norms : sequence of Tensor of shape (B,)

    Returns
    -------
    Tensor of bool, shape (B,)
    """
    return torch.isfinite(torch.stack(list(sq_norms))).all(0)


def masked_rows(t: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """``t`` (shape ``(B, ...)``) with the rows where ``keep`` is False set to exactly zero
    (``torch.where``, so a NaN or ``inf`` there does not survive); integer tensors (indices)
    are returned unchanged."""
    if not t.is_floating_point():
        return t
    return torch.where(keep.view(-1, *([1] * (t.dim() - 1))), t, torch.zeros((), dtype=t.dtype,
                                                                             device=t.device))


def clip_factors(sq_norms: Sequence[torch.Tensor], clips: Sequence[float] | float,
                 keep: torch.Tensor | None = None) -> list[torch.Tensor]:
    r"""Clipping factors from per-example squared norms (module doc).

    Parameters
    ----------
    sq_norms : sequence of Tensor of shape (B,)
        :math:`\lVert g_{i,k}\rVert^2` for each parameter tensor ``k``.
    clips : float or sequence of float
        One ``C`` (flat clipping: one factor for all tensors) or one ``C_k`` per tensor.
    keep : Tensor of bool, shape (B,), optional
        :func:`finite_rows` of ``sq_norms``, if the caller has it already.

    Returns
    -------
    list of Tensor of shape (B,)
        The factor of each tensor (flat: the same tensor repeated). A zero gradient gets 1;
        an example whose norm is not finite in any tensor (:func:`finite_rows`) gets 0 in
        all (the caller must also mask its gradient, :func:`masked_rows`: ``0 * inf`` is NaN).
    """
    sq_norms = list(sq_norms)
    stacked = torch.stack(sq_norms)
    if keep is None:
        keep = torch.isfinite(stacked).all(0)  # finite_rows, on the stacked norms
    zero = torch.zeros((), dtype=sq_norms[0].dtype, device=sq_norms[0].device)
    if isinstance(clips, int | float):
        total = stacked.sum(0).sqrt()
        factor = torch.where(keep, torch.clamp(float(clips) / total, max=1.0), zero)
        return [factor] * len(sq_norms)
    if len(clips) != len(sq_norms):
        raise ValueError(f"{len(clips)} per-layer clips for {len(sq_norms)} parameter tensors")
    return [torch.where(keep, torch.clamp(float(c) / s.sqrt(), max=1.0), zero)
            for s, c in zip(sq_norms, clips, strict=True)]
