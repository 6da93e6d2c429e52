r"""Schema bounds and levels paid for privately: plan, record, release, resolve.

A column may leave its bounds (``bounds = "private"``, with a public search ``range``) or its
level list (``levels = "private"``, with a declared ``vocabulary``) to the fit, which pays
for them from the budget (docs/schema.md, "Paying for bounds and levels"):

1. **Plan** (:func:`plan_paid`, no data): with :math:`\mu` the fit's whole Gaussian-DP
   budget (:func:`noisygd.accounting.gdp.calibrate_mu` of ``(epsilon, delta)``; secure
   mode: :math:`\sqrt{2\rho}`) and :math:`s` = ``[privacy] preprocessing_share``, each of
   the ``m`` paid columns gets :math:`\mu_j = \mu\sqrt{s/m}`, so that the paid statistics
   spend exactly :math:`\sum_j \mu_j^2 = s\mu^2`. Each is one Gaussian histogram over public
   bins (:mod:`noisygd.mechanisms.private_statistics`), whose event is known now.
2. **Record** (:func:`record_prior_events`): with a ledger, the paid statistics are one
   release, recorded before any data is read (after checking that the ledger also admits
   the rest of the fit).
3. **Release** (:func:`resolve_paid`): the noisy histograms; a numeric column's bounds are
   quantiles of its noisy CDF, a categorical column keeps the vocabulary levels whose noisy
   count passes a threshold (the others, and values outside the vocabulary, go to the
   explicit unknown level). The result is an ordinary schema with public bounds and
   levels (every value in it is a release or a declaration), which encodes, fits and
   predicts as any other. Then, for each numeric column with ``count_clipped = true``, the
   noisy numbers of its values below ``low`` and above ``high`` of its bounds (declared, or
   just released): a two-bin Gaussian histogram
   (:func:`~noisygd.mechanisms.private_statistics.noisy_clip_counts`, sensitivity 1 under
   add/remove and :math:`\sqrt 2` under replace-one, as any histogram), one more paid
   statistic sharing the same ``preprocessing_share``.
4. **Compose**: the events go to :func:`noisygd.training.fit_private` as ``prior_events``;
   the training run is calibrated for what remains and the model's event is
   ``Composed((*paid, count, *runs))``, accounted exactly by the Gaussian-DP and PLD
   accountants.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from noisygd._checks import user_stacklevel
from noisygd.accounting.events import Composed, DpEvent, Gaussian, Neighbouring
from noisygd.mechanisms.private_statistics import (
    DEFAULT_GRID_RATIO,
    DEFAULT_LEVEL_THRESHOLD,
    DEFAULT_QUANTILES,
    bin_index,
    geometric_grid,
    histogram_event,
    quantile_bounds,
)
from noisygd.schema.model import (
    ERROR,
    INDICATOR,
    OTHER_LEVEL,
    CategoricalColumn,
    NumericColumn,
    SchemaError,
    TableSchema,
    Target,
    level_codes,
    level_key,
    parse_schema,
)

__all__ = [
    "CLIP_COUNTS",
    "MECHANISM",
    "PaidColumn",
    "PaidPlan",
    "PaidRelease",
    "clip_bounds",
    "coarse_bounds",
    "paid_clip_counts",
    "paid_histogram_counts",
    "paid_rng",
    "paid_spec",
    "plan_paid",
    "planning_schema",
    "preprocessing_mu",
    "record_prior_events",
    "resolve_paid",
    "resolve_paid_counts",
    "target_at_range",
]

#: How the paid statistics are released (for reports).
MECHANISM = ("Gaussian mechanism: one noisy histogram per column over public bins (a "
             "geometric grid on the declared range; the declared vocabulary), sensitivity 1 "
             "(add/remove) or sqrt(2) (replace-one); bounds = quantiles of the noisy CDF and "
             "levels = counts above a threshold are post-processing")
#: How the clipped-value counts are released (for reports).
CLIP_MECHANISM = ("Gaussian mechanism on the two counts (below low, above high) of a column "
                  "against its bounds: each row is in at most one of below/inside/above, so "
                  "sensitivity 1 (add/remove) or sqrt(2) (replace-one), as a histogram; shown "
                  "rounded and clipped at 0 (post-processing)")
#: ``PaidColumn.statistic`` of a column's clipped-value counts (``count_clipped = true``).
CLIP_COUNTS = "clip_counts"


def preprocessing_mu(epsilon: float, delta: float, share: float, *,
                     secure: bool = False) -> tuple[float, float]:
    r"""``(mu_total, mu_paid)``: the fit's Gaussian-DP budget and the paid statistics' part.

    :math:`\mu_{\rm paid} = \sqrt s\,\mu` with :math:`\mu` =
    :func:`~noisygd.accounting.gdp.calibrate_mu` ``(epsilon, delta)`` (secure mode:
    :math:`\sqrt{2\rho}` with :math:`\rho` = :func:`~noisygd.mechanisms.noise.zcdp_rho_for`),
    as :func:`noisygd.training.fit_private` computes its budget.
    """
    from noisygd._checks import check_fraction
    from noisygd.accounting.base import check_delta, check_epsilon

    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    share = check_fraction("preprocessing_share", share, closed_right=False)
    if secure:
        from noisygd.mechanisms.noise import zcdp_rho_for

        mu = math.sqrt(2.0 * zcdp_rho_for(epsilon, delta))
    else:
        from noisygd.accounting.gdp import calibrate_mu

        mu = calibrate_mu(epsilon, delta)
    return float(mu), float(math.sqrt(share) * mu)


def paid_rng(random_state: Any, secure: bool) -> Any:
    """The generator of the paid statistics' noise, independent of the training's.

    Secure mode: a fresh :class:`~noisygd.mechanisms.secure.SecureRandom`. A
    :class:`numpy.random.Generator` is used as is (the training then draws after it from
    the same stream). An int or None seeds ``SeedSequence(random_state, spawn_key=(1,))``:
    a stream independent of ``default_rng(random_state)``, which the training uses
    (composition assumes independent noise), and reproducible with the same seed.
    """
    if secure:
        from noisygd.mechanisms.secure import SecureRandom

        return SecureRandom()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is not None and not isinstance(random_state, int | np.integer):
        raise TypeError("random_state must be an int, a numpy Generator or None for a fit "
                        "that pays for schema bounds or levels")
    seq = np.random.SeedSequence(None if random_state is None else int(random_state),
                                 spawn_key=(1,))
    return np.random.default_rng(seq)


@dataclass(frozen=True)
class PaidColumn:
    """One paid statistic, planned (``released`` None) or released.

    Attributes
    ----------
    name : str
    statistic : {"bounds", "levels", "clip_counts"}
    mu : float
        Its Gaussian-DP share :math:`\\mu_j`.
    noise_std : float
        The histogram's noise standard deviation :math:`\\sigma_j = \\Delta_2/\\mu_j`.
    n_bins : int
        Public bins (grid cells, or vocabulary levels).
    event : DpEvent
    released : tuple of float, list of levels, or None
        Bounds ``(low, high)``, the kept levels (vocabulary order), or the clipped-value
        counts ``(below, above)`` (noisy, rounded, clipped at 0).
    fallback : bool
        Bounds: nothing passed the threshold and the declared range was used.
    against : (float, float) or None
        Clipped-value counts: the bounds counted against (declared, or released).
    """

    name: str
    statistic: str
    mu: float
    noise_std: float
    n_bins: int
    event: DpEvent
    released: Any = None
    fallback: bool = False
    against: tuple[float, float] | None = None

    def describe(self, spec: NumericColumn | CategoricalColumn | Target) -> str:
        """One line for reports (public values only)."""
        if self.statistic == CLIP_COUNTS:
            sd = f"Gaussian noise sd {self.noise_std:.4g}, mu = {self.mu:.4g}"
            if self.released is None or self.against is None:
                return (f"column {self.name!r}: numbers of values below/above its bounds "
                        f"(noisy, paid; {sd})")
            (below, above), (lo, hi) = self.released, self.against
            return (f"column {self.name!r}: clipped values (noisy, paid): {below} below "
                    f"{lo:.6g}, {above} above {hi:.6g} (rounded, clipped at 0; {sd})")
        if self.statistic == "bounds":
            assert isinstance(spec, NumericColumn | Target)
            q = spec.quantiles or DEFAULT_QUANTILES
            what = ("bounds [" + ", ".join(f"{v:.6g}" for v in self.released) + "]"
                    if self.released is not None else "bounds")
            how = (f"the {q[0]:g}/{q[1]:g} quantiles of a noisy histogram over "
                   f"{self.n_bins} public bins on range {list(spec.range or ())}")
            if self.fallback:
                how += " (no noisy count passed the threshold: the declared range is used)"
        else:
            assert isinstance(spec, CategoricalColumn)
            vocab = spec.vocabulary or []
            kept = self.released
            what = (f"{len(kept)} of {len(vocab)} vocabulary levels kept {list(kept)}"
                    if kept is not None else f"levels of a {len(vocab)}-level vocabulary")
            how = (f"noisy count >= {_threshold(spec):g} noise sd; dropped and unlisted "
                   f"values -> {_unknown_level(spec)!r}")
        who = "target" if isinstance(spec, Target) else "column"
        return (f"{who} {self.name!r}: {what} ({how}; Gaussian noise sd "
                f"{self.noise_std:.4g}, mu = {self.mu:.4g})")

    def to_dict(self) -> dict[str, Any]:
        from noisygd.accounting.serialization import event_to_dict

        released = self.released
        if isinstance(released, tuple):
            released = list(released)
        out = {"name": self.name, "statistic": self.statistic, "mu": self.mu,
               "noise_std": self.noise_std, "n_bins": self.n_bins,
               "released": released, "fallback": self.fallback,
               "event": event_to_dict(self.event)}
        if self.statistic == CLIP_COUNTS:
            out["bounds"] = None if self.against is None else list(self.against)
            out["label"] = "noisy, paid"
        return out


@dataclass(frozen=True)
class PaidPlan:
    """The paid statistics of a schema, planned from public facts alone (:func:`plan_paid`).

    Attributes
    ----------
    share : float
        ``[privacy] preprocessing_share`` :math:`s`.
    mu_total, mu_paid : float
        The fit's Gaussian-DP budget and :math:`\\sqrt s\\,\\mu`.
    relation : str
    secure : bool
    columns : list of PaidColumn
    """

    share: float
    mu_total: float
    mu_paid: float
    relation: str
    secure: bool
    columns: list[PaidColumn] = field(default_factory=list)

    @property
    def events(self) -> list[DpEvent]:
        return [c.event for c in self.columns]

    @property
    def event(self) -> DpEvent:
        """``Composed`` of the columns' events (one event: itself)."""
        ev = self.events
        return ev[0] if len(ev) == 1 else Composed(tuple(ev))

    def mu_events(self) -> float:
        r"""The paid events' Gaussian-DP :math:`\sqrt{\sum_j \mu_j^2}`, from the events
        (exact GDP, :func:`~noisygd.accounting.gdp.gaussian_mu`; secure mode:
        :math:`\sqrt{2\rho}` of their zCDP), as :func:`noisygd.training.fit_private` counts
        them."""
        if self.secure:
            from noisygd.accounting.zcdp import zcdp_rho

            return float(math.sqrt(2.0 * zcdp_rho(self.event)))
        from noisygd.accounting.gdp import gaussian_mu

        return float(gaussian_mu(self.event))

    def mu2_share(self) -> float:
        r"""The paid events' share of :math:`\mu^2`: :math:`\sum_j\mu_j^2/\mu^2` (``share``
        exactly, up to secure-mode rounding), from the events themselves."""
        return float(self.mu_events() ** 2 / self.mu_total ** 2)


@dataclass(frozen=True)
class PaidRelease(PaidPlan):
    """A :class:`PaidPlan` performed: ``columns`` hold the released values."""

    def to_dict(self, schema: TableSchema | None = None,
                accountant: str | None = None) -> dict[str, Any]:
        """JSON-ready record for the model file (public values only)."""
        out: dict[str, Any] = {
            "share": self.share, "mu2_share": self.mu2_share(), "mu_total": self.mu_total,
            "mu_paid": self.mu_paid, "relation": self.relation, "secure": self.secure,
            "mechanism": MECHANISM, "columns": [c.to_dict() for c in self.columns]}
        if any(c.statistic == CLIP_COUNTS for c in self.columns):
            out["clip_mechanism"] = CLIP_MECHANISM
        if accountant is not None:
            out["accountant"] = accountant
        if schema is not None:
            out["statements"] = [c.describe(paid_spec(schema, c.name)) for c in self.columns]
        return out


def paid_spec(schema: TableSchema, name: str) -> NumericColumn | CategoricalColumn | Target:
    """The table of a paid entry: ``[columns.NAME]``, or ``[target]`` for the target.

    Raises
    ------
    KeyError
        If ``name`` is neither a column nor the target of ``schema``.
    """
    if name in schema.columns:
        return schema.columns[name]  # type: ignore[return-value]
    if schema.target is None or schema.target.name != name:
        raise KeyError(f"{name!r} is neither a column nor the target of the schema")
    return schema.target


def _threshold(spec: NumericColumn | CategoricalColumn | Target) -> float:
    t = getattr(spec, "threshold", None)
    return DEFAULT_LEVEL_THRESHOLD if t is None else float(t)


def _unknown_level(spec: CategoricalColumn) -> Any:
    return OTHER_LEVEL if level_key(spec.unknown) == ERROR else spec.unknown


def _grid(spec: NumericColumn | Target) -> np.ndarray:
    assert spec.range is not None
    return geometric_grid(spec.range[0], spec.range[1], ratio=DEFAULT_GRID_RATIO,
                          resolution=spec.resolution)


def plan_paid(schema: TableSchema, *, epsilon: float, delta: float,
              relation: Neighbouring | str = Neighbouring.ADD_REMOVE, rng: Any = None,
              secure: bool = False, released_elsewhere: int = 0) -> PaidPlan:
    r"""The paid statistics' shares, noise and events, before any data is read.

    Each of the ``m`` paid columns gets :math:`\mu_j = \mu_{\rm paid}/\sqrt m` (module doc,
    1); its event is :func:`~noisygd.mechanisms.private_statistics.histogram_event` over its
    public bins. The ``count_clipped = true`` columns come last, one two-bin statistic each
    (:data:`CLIP_COUNTS`), so ``m`` counts them too. ``rng`` matters only in secure mode
    (the rounding grid); pass the generator the release will use.

    Parameters
    ----------
    released_elsewhere : int, default=0
        Paid statistics of the same share released by the fit itself rather than here (a
        regression target's range, released by the estimator's private target range:
        :func:`noisygd.schema.fitting.fit_table`): counted in ``m``, not planned, so that
        every statistic still gets :math:`\mu_j = \mu\sqrt{s/m}`.
    """
    relation = Neighbouring(relation)
    names = schema.paid_columns
    counted = schema.clip_count_columns
    if not (names or counted):
        raise SchemaError("the schema pays for no column (no bounds or levels = \"private\", "
                          "no count_clipped = true)")
    mu_total, mu_paid = preprocessing_mu(epsilon, delta, schema.preprocessing_share,
                                         secure=secure)
    mu_j = mu_paid / math.sqrt(len(names) + len(counted) + int(released_elsewhere))
    if secure and rng is None:
        from noisygd.mechanisms.secure import SecureRandom

        rng = SecureRandom()
    columns = []
    for name in names:
        spec = paid_spec(schema, name)
        if isinstance(spec, NumericColumn | Target):
            n_bins, statistic = _grid(spec).shape[0] - 1, "bounds"
        else:
            assert isinstance(spec, CategoricalColumn)
            n_bins, statistic = len(spec.vocabulary or []), "levels"
        sigma, event = histogram_event(n_bins, mu=mu_j, relation=relation,
                                       rng=rng if secure else None)
        columns.append(PaidColumn(name, statistic, mu_j, sigma, n_bins, event))
    for name in counted:
        sigma, event = histogram_event(2, mu=mu_j, relation=relation,
                                       rng=rng if secure else None)
        columns.append(PaidColumn(name, CLIP_COUNTS, mu_j, sigma, 2, event))
    return PaidPlan(schema.preprocessing_share, mu_total, mu_paid, relation.value, bool(secure),
                    columns)


def record_prior_events(ledger: Any, dataset: str, plan: PaidPlan, *,
                        rest: DpEvent | None = None,
                        parameters: dict[str, Any] | None = None) -> Any:
    """Record the paid statistics as one ledger release, before any data is read.

    With ``rest`` (the event the rest of the fit will record, e.g. its covering Gaussian),
    the ledger is first asked whether it admits ``Composed((*paid, rest))``, so that a fit
    the budget cannot admit spends nothing. Returns the :class:`~noisygd.ledger.Release`.
    """
    from noisygd.ledger import opened_ledger

    with opened_ledger(ledger) as opened:
        if rest is not None:
            opened.preview(dataset, Composed((*plan.events, rest)), check=True)
        return opened.spend(dataset, plan.event, algorithm="schema/private_statistics",
                            parameters={"columns": [c.name for c in plan.columns],
                                        "statistics": [c.statistic for c in plan.columns],
                                        "preprocessing_share": plan.share,
                                        **(parameters or {})})


def _numeric_column_values(frame: pd.DataFrame, name: str, spec: NumericColumn,
                           source: str) -> np.ndarray:
    from noisygd.schema.encode import _missing_mask, _numeric_values

    col = frame[name]
    missing = _missing_mask(col)
    values = _numeric_values(col, name, spec, source, missing)
    return np.where(missing, np.nan, values)


def _level_codes(frame: pd.DataFrame, name: str, spec: CategoricalColumn) -> np.ndarray:
    from noisygd.schema.encode import _missing_mask

    col = frame[name]
    missing = _missing_mask(col)
    codes = level_codes(spec.vocabulary or [], col)  # the encoder's matching rule
    return np.where(missing, -1, codes).astype(np.int64)


def _resolved_column(spec: NumericColumn | CategoricalColumn | Target, col: PaidColumn
                     ) -> dict[str, Any]:
    base = spec.model_dump(mode="json")
    for key in ("range", "quantiles", "resolution", "vocabulary", "threshold", "count_clipped"):
        base.pop(key, None)
    base["source"] = "paid for privately (see the model file's 'paid' record)"
    base["draft"] = False
    if isinstance(spec, Target):
        base["bounds"] = list(col.released)
        return base
    if isinstance(spec, NumericColumn):
        lo, hi = col.released
        base["bounds"] = [lo, hi]
        if isinstance(spec.missing, float):
            base["missing"] = float(min(max(spec.missing, lo), hi))
        return base
    unknown = _unknown_level(spec)
    keep = {level_key(v) for v in col.released}
    keep.add(level_key(unknown))
    if level_key(spec.missing) not in (ERROR, INDICATOR):
        keep.add(level_key(spec.missing))
    levels = [v for v in spec.vocabulary or [] if level_key(v) in keep]
    if level_key(unknown) == OTHER_LEVEL:
        levels.append(OTHER_LEVEL)
    base["levels"] = levels
    base["unknown"] = unknown
    return base


#: Released bounds of one sign spanning at most this many bins of the geometric grid are
#: coarse: their width is at most ``DEFAULT_GRID_RATIO ** COARSE_BINS - 1`` (19%) of their
#: distance to 0, whatever the spread of the values inside (:func:`coarse_bounds`).
COARSE_BINS = 2


def coarse_bounds(bounds: tuple[float, float]) -> bool:
    r"""Whether released bounds ``(low, high)`` are too coarse to show the values' spread.

    The grid is geometric (:data:`~noisygd.mechanisms.private_statistics.DEFAULT_GRID_RATIO`
    :math:`g = 2^{1/8}`), so bounds of one sign, each rounded outwards to the grid, are at
    least one bin, :math:`g - 1 \approx 9\%` of their distance to 0, apart: values far from 0
    against their spread (``1e4 + N(0, 1)``) get bounds hundreds of times wider than their
    spread. True where ``low`` and ``high`` have one sign and
    :math:`\max/\min \le g^{2}` (:data:`COARSE_BINS`). A function of the release only
    (post-processing).
    """
    low, high = (abs(v) for v in bounds)
    if bounds[0] * bounds[1] <= 0.0:  # the bounds hold 0: the grid resolves the spread
        return False
    small, large = min(low, high), max(low, high)
    return large <= small * DEFAULT_GRID_RATIO ** COARSE_BINS * (1.0 + 1e-9)


def _warn_coarse_bounds(name: str, spec: NumericColumn | Target,
                        bounds: tuple[float, float]) -> None:
    """Warn where released bounds are :func:`coarse_bounds` (public: the release's values)."""
    if not coarse_bounds(bounds):
        return
    shown = f"[{bounds[0]:.6g}, {bounds[1]:.6g}]"
    if isinstance(spec, Target):
        what, fix = (f"target {name!r}", "declare [target] bounds = [low, high] (a public range "
                     "of the targets), or shift the targets towards 0 (a fit without --secure, "
                     "and without quantiles or resolution in [target], releases the target's "
                     "range in refined rounds about the targets' private centre instead)")
        harm = "the targets are fitted in units of that width, so the fit may be poor"
    else:
        what, fix = (f"column {name!r}", f"declare bounds = [low, high] in [columns.{name}] "
                     "(a public range), or shift the column towards 0 in the file")
        harm = "its values may fill a small part of [0, 1] and their signal be lost in the noise"
    warnings.warn(
        f"{what}: the released bounds {shown} are one or two bins of the paid geometric grid "
        f"(bins {100 * (DEFAULT_GRID_RATIO - 1):.0f}% of their distance to 0): if the values "
        f"vary much less than the bounds' width, {harm}; {fix}", UserWarning,
        stacklevel=user_stacklevel())


def paid_histogram_counts(schema: TableSchema, frame: pd.DataFrame, plan: PaidPlan,
                          source: str = "the data") -> list[np.ndarray]:
    """The exact histograms (int64) of ``plan``'s bounds and levels statistics over the rows
    of ``frame``, in the plan's order (clipped-value counts excluded: :func:`paid_clip_counts`).

    A numeric column or the target: the counts of :func:`~noisygd.mechanisms.
    private_statistics.bin_index` of its values over its public grid; a categorical column:
    the counts of its vocabulary levels. Nothing is released: these are what
    :func:`resolve_paid_counts` adds noise to. Histograms of disjoint parts of the rows (a
    Dask DataFrame's partitions: :func:`noisygd.schema.partitionwise.resolve_paid_partitionwise`)
    add up to those of all of them.
    """
    from noisygd.mechanisms.private_statistics import code_counts
    from noisygd.schema.encode import encode_target_values

    out = []
    for planned in plan.columns:
        if planned.statistic == CLIP_COUNTS:
            continue
        spec = paid_spec(schema, planned.name)
        if isinstance(spec, NumericColumn | Target):
            values = (encode_target_values(schema, frame[planned.name], source)
                      if isinstance(spec, Target)
                      else _numeric_column_values(frame, planned.name, spec, source))
            codes = bin_index(values, _grid(spec))
        else:
            assert isinstance(spec, CategoricalColumn)
            codes = _level_codes(frame, planned.name, spec)
        out.append(code_counts(codes, planned.n_bins))
    return out


def clip_bounds(resolved: TableSchema, plan: PaidPlan) -> list[tuple[float, float]]:
    """The bounds each ``count_clipped`` column of ``plan`` is counted against: its bounds in
    the resolved schema (declared, or just released), in the plan's order."""
    out = []
    for planned in plan.columns:
        if planned.statistic == CLIP_COUNTS:
            low, high = resolved.columns[planned.name].bounds  # type: ignore[union-attr,misc]
            out.append((float(low), float(high)))
    return out


def paid_clip_counts(schema: TableSchema, frame: pd.DataFrame, plan: PaidPlan,
                     bounds: list[tuple[float, float]], source: str = "the data"
                     ) -> list[np.ndarray]:
    """The exact numbers ``[below, above]`` (int64) of each ``count_clipped`` column of
    ``plan`` against its ``bounds`` (:func:`clip_bounds`), in the plan's order; additive over
    disjoint parts of the rows, as :func:`paid_histogram_counts`."""
    from noisygd.mechanisms.private_statistics import clip_counts

    names = [c.name for c in plan.columns if c.statistic == CLIP_COUNTS]
    out = []
    for name, (low, high) in zip(names, bounds, strict=True):
        spec = schema.columns[name]
        assert isinstance(spec, NumericColumn)
        out.append(clip_counts(_numeric_column_values(frame, name, spec, source), low, high))
    return out


def resolve_paid(schema: TableSchema, frame: pd.DataFrame, plan: PaidPlan, *, rng: Any,
                 source: str = "the data") -> tuple[TableSchema, PaidRelease]:
    r"""Release the planned statistics and return the schema they resolve, and the release.

    :func:`resolve_paid_counts` of the exact counts of ``frame``'s rows
    (:func:`paid_histogram_counts`, then :func:`paid_clip_counts` against the resolved
    bounds).
    """
    return resolve_paid_counts(
        schema, plan, paid_histogram_counts(schema, frame, plan, source),
        lambda bounds: paid_clip_counts(schema, frame, plan, bounds, source), rng=rng)


def resolve_paid_counts(schema: TableSchema, plan: PaidPlan, counts: list[np.ndarray],
                        clipped: Callable[[list[tuple[float, float]]], list[np.ndarray]], *,
                        rng: Any) -> tuple[TableSchema, PaidRelease]:
    r"""Release the planned statistics from their exact counts; the resolved schema and the
    release.

    ``counts`` are :func:`paid_histogram_counts` (in memory, or summed over partitions);
    ``clipped(bounds)`` returns :func:`paid_clip_counts` against the bounds of the resolved
    schema (called once, only with ``count_clipped`` columns). Each paid column's histogram
    is drawn with ``rng`` (the one ``plan`` was made for in secure mode), in the plan's
    order; its event is checked to be the planned one. Bounds: :func:`~noisygd.
    mechanisms.private_statistics.quantile_bounds` of the noisy CDF (the declared ``range``
    when no count passes the threshold); a ``missing`` constant is clipped into them.
    Levels: the vocabulary levels whose noisy count passes ``threshold`` noise sd, plus the
    unknown level and a ``missing`` level (declared, always kept); ``unknown`` then maps the
    dropped levels and values outside the vocabulary. Clipped-value counts (last): the
    noisy numbers of a ``count_clipped`` column's values below and above its bounds in the
    *resolved* schema (the declared bounds, or the ones just released), shown rounded and
    clipped at 0. The returned schema has no ``"private"`` entry, no ``count_clipped`` and
    no ``[privacy]`` table left.
    """
    from noisygd.mechanisms.private_statistics import (
        NoisyHistogram,
        noisy_histogram_of_counts,
        private_levels_of_counts,
        released_counts,
    )

    stats = [c for c in plan.columns if c.statistic != CLIP_COUNTS]
    if len(counts) != len(stats):
        raise ValueError(f"{len(stats)} histograms planned, {len(counts)} given")
    released: list[PaidColumn] = []
    for planned, exact in zip(stats, counts, strict=True):
        spec = paid_spec(schema, planned.name)
        if np.asarray(exact).shape != (planned.n_bins,):
            raise ValueError(f"the counts of column {planned.name!r} must have the planned "
                             f"{planned.n_bins} bins")
        if isinstance(spec, NumericColumn | Target):
            hist: NoisyHistogram = noisy_histogram_of_counts(exact, mu=planned.mu,
                                                             relation=plan.relation, rng=rng)
            found = quantile_bounds(hist, _grid(spec), spec.quantiles or DEFAULT_QUANTILES,
                                    threshold=DEFAULT_LEVEL_THRESHOLD)
            value: Any = found if found is not None else tuple(spec.range or ())
            fallback = found is None
            if found is not None:
                _warn_coarse_bounds(planned.name, spec, found)
        else:
            assert isinstance(spec, CategoricalColumn)
            levels = private_levels_of_counts(exact, mu=planned.mu, relation=plan.relation,
                                              rng=rng, threshold=_threshold(spec))
            hist = levels.histogram
            value = [v for v, k in zip(spec.vocabulary or [], levels.kept, strict=True) if k]
            fallback = False
        if hist.event != planned.event:
            raise RuntimeError(f"internal error: the paid statistic of column {planned.name!r} "
                               "performed another event than the planned (and recorded) one")
        released.append(PaidColumn(planned.name, planned.statistic, planned.mu,
                                   hist.noise_std, planned.n_bins, hist.event, value,
                                   fallback))
    data = schema.to_dict()
    data.pop("privacy", None)
    by_name = {c.name: c for c in released}
    data["columns"] = {
        name: (_resolved_column(spec, by_name[name])  # type: ignore[arg-type]
               if name in by_name else data["columns"][name])
        for name, spec in schema.columns.items()}
    for col in data["columns"].values():
        col.pop("count_clipped", None)
    if schema.target is not None and schema.target.paid:
        data["target"] = _resolved_column(schema.target, by_name[schema.target.name])
    resolved = parse_schema(data, "the schema resolved by the paid statistics")
    bounds = clip_bounds(resolved, plan)
    if bounds:
        counted = [c for c in plan.columns if c.statistic == CLIP_COUNTS]
        exact_clipped = clipped(bounds)
        if len(exact_clipped) != len(counted) or any(
                np.asarray(e).shape != (2,) for e in exact_clipped):
            raise ValueError(f"{len(counted)} pairs of clipped-value counts planned")
        for planned, against, exact in zip(counted, bounds, exact_clipped, strict=True):
            hist = noisy_histogram_of_counts(exact, mu=planned.mu, relation=plan.relation,
                                             rng=rng)
            if hist.event != planned.event:
                raise RuntimeError(f"internal error: the clipped-value counts of column "
                                   f"{planned.name!r} performed another event than the "
                                   "planned (and recorded) one")
            released.append(PaidColumn(planned.name, CLIP_COUNTS, planned.mu, hist.noise_std,
                                       2, hist.event, tuple(released_counts(hist)),
                                       against=against))
    order = {(c.name, c.statistic): i for i, c in enumerate(plan.columns)}
    released.sort(key=lambda c: order[(c.name, c.statistic)])
    release = PaidRelease(plan.share, plan.mu_total, plan.mu_paid, plan.relation, plan.secure,
                          released)
    return resolved, release


def target_at_range(schema: TableSchema) -> TableSchema:
    """The schema with a paid regression target's bounds set to its declared ``range``.

    A public placeholder while the fit releases the target's range itself (the estimator's
    private target range, :func:`noisygd.schema.fitting.fit_table`): the features' encoding
    and the public centring do not read the target's bounds, and the fit replaces them by the
    released range before the schema is written. Nothing else changes; the ``[privacy]``
    table is dropped where no other entry pays.

    Raises
    ------
    SchemaError
        If the schema has no paid regression target.
    """
    target = schema.target
    if target is None or not target.paid:
        raise SchemaError("the schema's [target] does not pay for its bounds")
    fake = PaidColumn(target.name, "bounds", 1.0, 1.0, 1, Gaussian(1.0), tuple(target.range or ()))
    data = schema.to_dict()
    data["target"] = _resolved_column(target, fake)
    if not (set(schema.paid_columns) - {target.name} or schema.clip_count_columns):
        data.pop("privacy", None)
    return parse_schema(data, "the schema with the target's declared range")


def planning_schema(schema: TableSchema) -> TableSchema:
    """The schema with every paid entry at its widest public value, for planning only.

    Numeric: ``bounds = range``; categorical: every vocabulary level kept (plus
    ``"<other>"`` when no ``unknown`` level is declared). The encoded width is then the
    largest a fit can produce; nothing is read.
    """
    if not schema.paid_columns:
        return schema
    plan_cols = {}
    for name in schema.paid_columns:
        spec = paid_spec(schema, name)
        if isinstance(spec, NumericColumn | Target):
            released: Any = tuple(spec.range or ())
        else:
            released = list(spec.vocabulary or [])
        fake = PaidColumn(name, "", 1.0, 1.0, 1, Gaussian(1.0), released)
        plan_cols[name] = _resolved_column(spec, fake)
    data = schema.to_dict()
    data.pop("privacy", None)
    if schema.target is not None and schema.target.paid:
        data["target"] = plan_cols.pop(schema.target.name)
    data["columns"] = {k: plan_cols.get(k, v) for k, v in data["columns"].items()}
    return parse_schema(data, "the planning schema")
