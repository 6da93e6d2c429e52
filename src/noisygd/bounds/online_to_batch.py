r"""Online-to-batch conversion (seed 001, "Why is this useful?").

The slides' lemma: if the rows :math:`x_1, \dots, x_n` are drawn i.i.d. from ``P`` and an
online algorithm's iterate :math:`w_t` depends only on :math:`x_1, \dots, x_{t-1}` (and its own
coins), then for the average :math:`\bar w = \frac1T\sum_tw_t` and any fixed :math:`w^*`,

.. math::  \mathbb E\,L_P(\bar w) \le L_P(w^*) + \mathbb E\,\mathrm{Regret}/n,
           \qquad L_P(w) = \mathbb E_{x\sim P}\,\ell(w; x).

Proof: :math:`\mathbb E\,\ell(w_t; x_t) = \mathbb E\,L_P(w_t)` because :math:`x_t` is
independent of :math:`w_t`; sum over ``t``, divide by ``T`` and use the convexity of
:math:`L_P` (Jensen) for :math:`\bar w`. With batches of ``b`` rows per step the same holds per
row (every row of batch ``t`` is independent of :math:`w_t`). It needs **one pass** (a row seen
twice is no longer independent of the iterate), the **averaged** output, a convex loss, and a
regret bound that covers the run (clipping that never changes a gradient).
"""

from __future__ import annotations

from noisygd._checks import check_nonnegative, check_positive_int

__all__ = ["online_to_batch_bound", "online_to_batch_refusal"]


def online_to_batch_refusal(*, epochs: int, output: str, regret_covers_run: bool) -> str | None:
    """Why the conversion does not apply to a DP-FTRL run (None when it does)."""
    E = check_positive_int("epochs", epochs)
    reasons = []
    if E != 1:
        reasons.append(f"{E} epochs (the conversion needs one pass: a row seen twice is not "
                       "independent of the iterate)")
    if output != "average":
        reasons.append(f"output={output!r} (the conversion bounds the averaged iterate)")
    if not regret_covers_run:
        reasons.append("the regret bound does not cover the run (non-convex loss, clipping "
                       "below the Lipschitz constant, or an L2 term without a radius)")
    return "; ".join(reasons) or None


def online_to_batch_bound(*, average_regret: float, epochs: int, output: str,
                          regret_covers_run: bool) -> float:
    r"""The bound on :math:`\mathbb E\,L_P(\bar w) - L_P(w^*)` the conversion gives: the
    expected average regret per row (module doc), for a one-pass run with the averaged output
    whose regret bound covers the run.

    Raises
    ------
    ValueError
        When the conversion does not apply (:func:`online_to_batch_refusal` says why).
    """
    reason = online_to_batch_refusal(epochs=epochs, output=output,
                                     regret_covers_run=regret_covers_run)
    if reason is not None:
        raise ValueError(f"online-to-batch does not apply: {reason}")
    return check_nonnegative("average_regret", average_regret)
