r"""The one bridge to Google's ``dp-accounting``: event translation and PLD construction.

Every translation of a noisygd event into a ``dp_accounting.DpEvent`` is in
this module, in the table :data:`TRANSLATIONS` (which is also the dispatch
table of the ``pld`` accountant, :class:`noisygd.accounting.pld.PLDAccountant`).
dp_accounting itself is imported **lazily**, the first time a translation or a
PLD is actually computed: importing this module (or :mod:`noisygd.accounting`,
or :mod:`noisygd`) does not load it.

Neighbouring relations. dp_accounting's ``GaussianDpEvent(z)`` means noise of
standard deviation ``z`` per unit *per-record contribution*: under
``ADD_OR_REMOVE_ONE`` the means differ by 1, under ``REPLACE_ONE`` by 2 (see
``GaussianPrivacyLoss``: "the privacy loss distribution for REPLACE adjacency
corresponds to the same privacy loss distribution with twice the
sensitivity"). A noisygd :class:`~noisygd.accounting.events.Gaussian` carries
the L2 sensitivity *under its own relation* (1 for add/remove of a clipped
example, 2 for replace-one), so it is translated to
``GaussianDpEvent(noise_multiplier / sensitivity)`` under add/remove and to
``GaussianDpEvent(2 * noise_multiplier / sensitivity)`` under replace-one; in
both cases the PLD is that of a Gaussian shift of ``sensitivity /
noise_multiplier`` standard deviations, as it must be.

Translations:

* ``Gaussian`` -> ``GaussianDpEvent`` (``NoOpDpEvent`` for infinite noise);
* ``SelfComposed`` -> ``SelfComposedDpEvent`` (``NoOpDpEvent`` for count 0);
* ``Composed`` -> ``ComposedDpEvent``;
* ``PoissonSampled`` of Gaussians -> ``PoissonSampledDpEvent(q, GaussianDpEvent(sigma))``,
  ``sigma`` from :func:`~noisygd.accounting.subsampling.effective_noise_multiplier`
  (all queries see the same subsample);
* ``TreeAggregation`` -> ``GaussianDpEvent(2 / mu)`` under ``REPLACE_ONE``,
  ``GaussianDpEvent(1 / mu)`` under ``ADD_OR_REMOVE_ONE`` (random leaves; the tree is
  mu-GDP, exactly with leaves by position, as a mixture bounded by mu with random leaves:
  see the event);
* ``OutputPerturbation`` with Gaussian noise -> its Gaussian; the L2-Laplace
  (K-norm) noise has no dp_accounting counterpart and is refused;
* ``SampledWithoutReplacement`` of Gaussians ->
  ``SampledWithoutReplacementDpEvent(n, m, GaussianDpEvent(sigma))`` with ``sigma`` the
  effective noise multiplier over the replace-one sensitivity (the convention of
  dp_accounting's RDP accountant, the one dp_accounting accountant that reads it).
  dp_accounting's PLD accountant does not read that event, so an event containing one is
  not handed to it: :func:`composed_pld_accountant` builds its PLD here, from the
  symmetric dominating PLD of :mod:`~noisygd.accounting.wor_pld` (Zhu, Dong and Wang 2022,
  Proposition 30) for each without-replacement part and dp_accounting's own PLD for every
  other part, composed with dp_accounting's pessimistic convolution.

``EpsilonDelta``, ``NonPrivate`` (refused rather than reported as an infinite epsilon)
and every other event have no entry and are refused with
:class:`~noisygd.accounting.base.UnsupportedEventError`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from noisygd._checks import check_nonnegative, check_positive, check_probability
from noisygd.accounting.base import UnsupportedEventError, dispatch
from noisygd.accounting.events import (
    Composed,
    DpEvent,
    Gaussian,
    Neighbouring,
    OutputPerturbation,
    PoissonSampled,
    SampledWithoutReplacement,
    SelfComposed,
    TreeAggregation,
    contains,
)
from noisygd.accounting.subsampling import effective_noise_multiplier
from noisygd.accounting.wor_pld import without_replacement_gaussian_pld

if TYPE_CHECKING:  # pragma: no cover
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

__all__ = [
    "TRANSLATIONS",
    "clear_pld_cache",
    "composed_pld_accountant",
    "contains_without_replacement",
    "dp_accounting_relation",
    "pld_delta",
    "pld_epsilon",
    "pld_supports",
    "to_dp_accounting",
]


def _dpa() -> Any:
    """The ``dp_accounting`` module, imported on first use."""
    import dp_accounting

    return dp_accounting


def dp_accounting_relation(relation: Neighbouring | str) -> dp_accounting.NeighboringRelation:
    """dp_accounting's ``NeighboringRelation`` for a noisygd :class:`Neighbouring`."""
    relation = Neighbouring(relation)
    dpa = _dpa()
    if relation is Neighbouring.ADD_REMOVE:
        return dpa.NeighboringRelation.ADD_OR_REMOVE_ONE
    return dpa.NeighboringRelation.REPLACE_ONE


# -------------------------------------------------------------- translation table
def to_dp_accounting(event: DpEvent) -> dp_accounting.DpEvent:
    """Translate a noisygd event into the equivalent ``dp_accounting.DpEvent``.

    The returned event must be accounted under
    ``dp_accounting_relation(event.neighbouring)``.

    Raises
    ------
    UnsupportedEventError
        For events with no entry in :data:`TRANSLATIONS` (including
        :class:`~noisygd.accounting.events.NonPrivate`, which is refused
        rather than reported as infinite epsilon).
    """
    return dispatch(
        TRANSLATIONS, event, refusal="no dp_accounting translation is known for {name}"
    )


def _gaussian(event: Gaussian) -> dp_accounting.DpEvent:
    dpa = _dpa()
    if math.isinf(event.noise_multiplier):
        return dpa.NoOpDpEvent()
    z = event.noise_multiplier / event.sensitivity
    if event.relation is Neighbouring.REPLACE_ONE:
        z *= 2.0  # dp_accounting doubles the shift under REPLACE_ONE (module docstring)
    return dpa.GaussianDpEvent(noise_multiplier=z)


def _self_composed(event: SelfComposed) -> dp_accounting.DpEvent:
    dpa = _dpa()
    if event.count == 0:
        return dpa.NoOpDpEvent()
    return dpa.SelfComposedDpEvent(to_dp_accounting(event.event), event.count)


def _composed(event: Composed) -> dp_accounting.DpEvent:
    parts = [to_dp_accounting(e) for e in event.events]
    return _dpa().ComposedDpEvent(parts)


def _poisson_sampled(event: PoissonSampled) -> dp_accounting.DpEvent:
    sigma = effective_noise_multiplier(event.event)  # refuses non-Gaussian inner events
    dpa = _dpa()
    if event.rate == 0.0 or math.isinf(sigma):
        return dpa.NoOpDpEvent()
    return dpa.PoissonSampledDpEvent(
        sampling_probability=event.rate, event=dpa.GaussianDpEvent(noise_multiplier=sigma)
    )


def _tree(event: TreeAggregation) -> dp_accounting.DpEvent:
    mu = event.mu
    dpa = _dpa()
    if mu == 0.0:
        return dpa.NoOpDpEvent()
    # dp_accounting's REPLACE_ONE Gaussian(z') has shift 2/z', its ADD_OR_REMOVE_ONE
    # Gaussian(z') shift 1/z' (module docstring)
    shift = event.relation.clipped_sum_sensitivity
    return dpa.GaussianDpEvent(noise_multiplier=shift / mu)


def _output_perturbation(event: OutputPerturbation) -> dp_accounting.DpEvent:
    # Only the Gaussian noises have a dp_accounting counterpart; the K-norm
    # (L2-Laplace) mechanism has none, so as_gaussian refuses it (pure_dp reads it).
    return to_dp_accounting(event.as_gaussian())


def _without_replacement(event: SampledWithoutReplacement) -> dp_accounting.DpEvent:
    # sigma over the replace-one sensitivity; refuses non-Gaussian inner events
    sigma = effective_noise_multiplier(event.event)
    dpa = _dpa()
    if math.isinf(sigma):
        return dpa.NoOpDpEvent()
    return dpa.SampledWithoutReplacementDpEvent(
        source_dataset_size=event.population_size,
        sample_size=event.sample_size,
        event=dpa.GaussianDpEvent(noise_multiplier=sigma),
    )


#: Event type -> dp_accounting translation: the events the ``pld`` accountant reads.
TRANSLATIONS: dict[type[DpEvent], Callable[[Any], Any]] = {
    Gaussian: _gaussian,
    SelfComposed: _self_composed,
    Composed: _composed,
    PoissonSampled: _poisson_sampled,
    SampledWithoutReplacement: _without_replacement,
    TreeAggregation: _tree,
    OutputPerturbation: _output_perturbation,
}


# ------------------------------------------------------------------- PLD accounting
def _new_accountant(
    event: DpEvent, interval: float
) -> tuple[pld_privacy_accountant.PLDAccountant, Any]:
    translated = to_dp_accounting(event)  # refuses before anything is imported
    from dp_accounting.pld import pld_privacy_accountant

    acc = pld_privacy_accountant.PLDAccountant(
        neighboring_relation=dp_accounting_relation(event.neighbouring),
        value_discretization_interval=interval,
    )
    return acc, translated


def contains_without_replacement(event: DpEvent) -> bool:
    """Whether ``event`` samples without replacement anywhere (composites searched)."""
    return contains(event, SampledWithoutReplacement)


def pld_supports(event: DpEvent) -> bool:
    """Whether ``event`` translates and its PLD can be built and composed.

    Events containing :class:`~noisygd.accounting.events.SampledWithoutReplacement` are
    checked part by part (:func:`_pld_of`); the others by dp_accounting's PLD accountant.
    """
    if contains_without_replacement(event):
        try:
            to_dp_accounting(event)
        except UnsupportedEventError:
            return False
        return all(pld_supports(part) for part in _plain_parts(event))
    try:
        acc, translated = _new_accountant(event, 1e-4)
    except UnsupportedEventError:
        return False
    return bool(acc.supports(translated))


def _plain_parts(event: DpEvent) -> list[DpEvent]:
    """The maximal parts of ``event`` that contain no without-replacement sampling."""
    if isinstance(event, SampledWithoutReplacement):
        return []
    if isinstance(event, SelfComposed) and contains_without_replacement(event):
        return _plain_parts(event.event)
    if isinstance(event, Composed) and contains_without_replacement(event):
        return [p for e in event.events for p in _plain_parts(e)]
    return [event]


class _ComposedPLD:
    """A composed ``PrivacyLossDistribution`` read like dp_accounting's ``PLDAccountant``."""

    def __init__(self, pld: Any) -> None:
        self._pld = pld

    def get_epsilon(self, delta: float) -> float:
        return float(self._pld.get_epsilon_for_delta(delta))

    def get_delta(self, epsilon: float) -> float:
        return float(self._pld.get_delta_for_epsilon(epsilon))


def _pld_of(event: DpEvent, interval: float) -> Any:
    """``PrivacyLossDistribution`` of an event containing without-replacement sampling.

    Without-replacement parts: :func:`~noisygd.accounting.wor_pld.without_replacement_gaussian_pld`
    (the noise over the replace-one sensitivity is the inner event's effective noise
    multiplier, all queries seeing the same subset); ``SelfComposed`` / ``Composed``:
    dp_accounting's pessimistic ``self_compose`` / ``compose``; every other part:
    dp_accounting's PLD accountant on its translation.
    """
    from dp_accounting.pld import privacy_loss_distribution as pld

    if isinstance(event, SampledWithoutReplacement):
        sigma = effective_noise_multiplier(event.event)
        if math.isinf(sigma):
            return pld.identity(interval)
        return without_replacement_gaussian_pld(event.rate, sigma, interval)
    if isinstance(event, SelfComposed) and contains_without_replacement(event):
        if event.count == 0:
            return pld.identity(interval)
        return _pld_of(event.event, interval).self_compose(event.count)
    if isinstance(event, Composed) and contains_without_replacement(event):
        out = _pld_of(event.events[0], interval)
        for e in event.events[1:]:
            out = out.compose(_pld_of(e, interval))
        return out
    built = getattr(_build(event, interval), "_pld", None)
    if built is None:  # pragma: no cover - guards a dp_accounting internals change
        raise UnsupportedEventError("this dp_accounting version exposes no composed PLD")
    return built


def _build(event: DpEvent, interval: float) -> Any:
    if contains_without_replacement(event):
        to_dp_accounting(event)  # refuses untranslatable parts before any work
        try:
            return _ComposedPLD(_pld_of(event, interval))
        except (OverflowError, FloatingPointError, MemoryError, ValueError) as exc:
            raise UnsupportedEventError(
                f"the PLD construction failed for {event.describe()} "
                f"(value_discretization_interval={interval:g}): {exc}"
            ) from exc
    acc, translated = _new_accountant(event, interval)
    if not acc.supports(translated):
        raise UnsupportedEventError(
            f"dp_accounting's PLD accountant cannot bound {event.describe()} "
            f"under {event.neighbouring.value}"
        )
    try:
        acc.compose(translated)
    except (OverflowError, FloatingPointError, MemoryError, ValueError) as exc:
        raise UnsupportedEventError(
            f"dp_accounting's PLD construction failed for {event.describe()} "
            f"(value_discretization_interval={interval:g}): {exc}"
        ) from exc
    return acc


# A few recent PLDs (calibration verifies one that the caller then reports); each may
# hold ~1e6 floats.
_cached_build = functools.lru_cache(maxsize=8)(_build)


def clear_pld_cache() -> None:
    """Release the PLDs :func:`composed_pld_accountant` keeps for recent events.

    Each may hold about a million floats; a caller done with accounting for a while (a
    training run, once planned and reported) frees them rather than carry them through
    the run. Only a later computation's time is affected: it builds its PLD again.
    """
    _cached_build.cache_clear()


def composed_pld_accountant(event: DpEvent, interval: float) -> Any:
    """dp_accounting's ``PLDAccountant`` with ``event`` composed (cached for hashable events).

    For an event containing without-replacement sampling, an object with the same
    ``get_epsilon`` / ``get_delta`` reading the PLD built by :func:`_pld_of`.

    Parameters
    ----------
    event : DpEvent
    interval : float
        ``value_discretization_interval``; pessimistic rounding keeps every
        epsilon an upper bound at any interval.
    """
    try:
        hash(event)
    except TypeError:  # a frozen event holding an unhashable field is built uncached
        return _build(event, interval)
    return _cached_build(event, interval)


def _read(what: str, fn: Callable[[float], float], x: float) -> float:
    try:
        return float(fn(x))
    except (OverflowError, FloatingPointError, ValueError) as exc:
        raise UnsupportedEventError(f"dp_accounting's PLD {what} failed: {exc}") from exc


def pld_epsilon(event: DpEvent, delta: float, interval: float) -> float:
    """Pessimistic PLD epsilon of ``event`` at ``delta`` (Doroshenko et al. 2022).

    Raises
    ------
    ValueError
        If ``delta`` is not in (0, 1) or ``interval`` is not positive and finite.
    """
    check_probability("delta", delta)
    check_positive("interval", interval)
    return _read("epsilon", composed_pld_accountant(event, interval).get_epsilon, delta)


def pld_delta(event: DpEvent, epsilon: float, interval: float) -> float:
    """Pessimistic PLD delta of ``event`` at ``epsilon``.

    Raises
    ------
    ValueError
        If ``epsilon`` is negative or not finite, or ``interval`` is not positive and finite.
    """
    check_nonnegative("epsilon", epsilon)
    check_positive("interval", interval)
    return min(1.0, _read("delta", composed_pld_accountant(event, interval).get_delta, epsilon))
