"""The schema file: public bounds and level lists for a table, validated with pydantic.

A schema is a TOML file (read with the standard library's :mod:`tomllib`)::

    row_norm_bound = 1.0            # every encoded row has norm <= this bound

    [file]                          # optional: how to read the data file
    header = true                   # false: give names = [...] in file order
    na_values = ["?"]               # cells read as missing (besides the empty cell)

    [target]
    name = "y"
    labels = ["no", "yes"]          # classification; or bounds = [lo, hi] (regression)

    [columns.age]
    kind = "numeric"
    bounds = [18, 100]              # values outside are clipped (per row, free)
    missing = 40                    # a public constant, or "indicator", or "error"

    [columns.job]
    kind = "categorical"
    levels = ["admin.", "unknown", "services"]
    unknown = "unknown"             # a level not in the list goes to this declared level
    missing = "indicator"           # an extra one-hot column "job=<missing>"

    [columns.id]
    kind = "ignore"

Every value in the file is a public declaration: nothing is read from the data, except what
is **paid for** from the budget (docs/schema.md, "Paying for bounds and levels")::

    [privacy]
    preprocessing_share = 0.1       # share of the Gaussian-DP budget mu^2 (default 0.1)

    [columns.balance]
    kind = "numeric"
    bounds = "private"              # the noisy CDF's quantiles over a public grid
    range = [-1e6, 1e6]             # public search range (required)
    quantiles = [0.01, 0.99]        # optional (this default)

    [columns.age]
    kind = "numeric"
    bounds = [18, 100]
    count_clipped = true            # release noisy counts of the values below 18 / above 100

    [columns.job]
    kind = "categorical"
    levels = "private"              # kept: vocabulary levels with a large enough noisy count
    vocabulary = ["admin.", "services", "unknown"]
    unknown = "unknown"             # dropped and unlisted levels go here (default "<other>")

A regression ``[target]`` may also say ``bounds = "private"`` with ``range`` (and
``quantiles``, ``resolution``). :attr:`TableSchema.paid_columns` lists the paid entries;
:mod:`noisygd.schema.paid` releases them and resolves the schema.
 A value that
*was* read from the data (by ``noisygd schema draft``) sits in a table marked ``draft = true``;
:func:`load_schema` accepts such a file, but :meth:`TableSchema.check_final` (called by
``noisygd fit``) refuses it until every marked table has been confirmed (its ``draft`` line
deleted).
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from noisygd._checks import MAX_SCALE

__all__ = [
    "CategoricalColumn",
    "FileOptions",
    "IgnoreColumn",
    "NumericColumn",
    "OrdinalColumn",
    "PrivacyOptions",
    "SchemaError",
    "TableSchema",
    "Target",
    "load_schema",
    "parse_schema",
]

#: A level of a categorical or ordinal column, or a class label: a string or an integer.
Level = StrictStr | StrictInt
#: Reserved words of ``missing`` / ``unknown`` (not levels).
INDICATOR = "indicator"
ERROR = "error"
#: Reserved word of ``missing`` / ``unknown`` of a categorical column: an all-zero block.
ZEROS = "zeros"
#: Suffix of the indicator column of a column with ``missing = "indicator"``.
MISSING_LEVEL = "<missing>"
#: ``bounds = "private"`` / ``levels = "private"``: paid for from the budget.
PRIVATE = "private"
#: The level added to a ``levels = "private"`` column that declares no ``unknown`` level.
OTHER_LEVEL = "<other>"
#: Default ``[privacy] preprocessing_share``: the share of the Gaussian-DP budget ``mu^2``
#: spent on paid bounds and levels.
DEFAULT_PREPROCESSING_SHARE = 0.1


class SchemaError(ValueError):
    """A schema file is absent, not TOML, invalid, or does not fit the data file's columns.

    The message names the schema table or column and what to change; it never quotes a value
    read from the data.
    """


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _bounds(value: tuple[float, float], what: str) -> tuple[float, float]:
    lo, hi = value
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"{what} must be finite numbers [low, high]")
    if not lo < hi:
        raise ValueError(f"{what} must have low < high")
    return float(lo), float(hi)


def _distinct_levels(levels: list[Any], what: str) -> list[Any]:
    if not levels:
        raise ValueError(f"{what} must list at least one value")
    keys = [level_key(v) for v in levels]
    if len(set(keys)) != len(keys):
        raise ValueError(f"{what} must be distinct (compared as text, e.g. 1 and \"1\" clash)")
    for v in levels:
        if level_key(v) in (INDICATOR, ERROR, ZEROS):
            raise ValueError(f"{what} may not contain the reserved words 'indicator', 'error' "
                             "or 'zeros'")
    return levels


def level_key(value: Any) -> str:
    """The text a level, a label or a data cell is compared by (``1``, ``1.0`` and ``"1"`` agree).

    Strings are stripped of surrounding white space; integral floats are written without a
    decimal point. A data cell that does not match a level by this text may still match by
    :func:`level_codes`' second rule (booleans, numbers written as text).
    """
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


#: The words a boolean is written as (compared in lower case): ``True``, ``true``, ``TRUE``.
_BOOLEAN_WORDS = ("false", "true")
#: A number written in decimal or scientific notation (``-1``, ``1.0``, ``.5``, ``1e3``).
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
#: Integers up to this magnitude are exact as floats (a larger one is compared as text only).
_EXACT_INTEGER = 2**53


def _declared_alias(level: Any) -> str | None:
    """A declared level's second key: ``bool:true`` for a boolean word (any case), ``int:N``
    for an integer (or its plain decimal text, ``"12"``), else ``None``."""
    if isinstance(level, bool):
        return f"bool:{str(level).lower()}"
    if isinstance(level, int):
        return f"int:{level}" if abs(level) < _EXACT_INTEGER else None
    text = str(level).strip()
    if text.lower() in _BOOLEAN_WORDS:
        return f"bool:{text.lower()}"
    try:
        number = int(text)
    except ValueError:
        return None
    return f"int:{number}" if str(number) == text and abs(number) < _EXACT_INTEGER else None


def _cell_alias(value: Any) -> str | None:
    """A data cell's second key: a boolean (Python, NumPy, or a word in any case) as
    ``bool:...``; a number equal to an integer (``1.0``, ``"1.0"``, ``"1e0"``) as ``int:N``."""
    if isinstance(value, (bool, np.bool_)):
        return f"bool:{str(bool(value)).lower()}"
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in _BOOLEAN_WORDS:
            return f"bool:{text.lower()}"
        if _DECIMAL.fullmatch(text) is None:  # float() also takes "1_0", "nan", "infinity"
            return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    if math.isfinite(number) and number.is_integer() and abs(number) < _EXACT_INTEGER:
        return f"int:{int(number)}"
    return None


def _unshared_aliases(levels: Sequence[Any]) -> dict[str, int]:
    """``{second key: position}`` of the declared levels, without a key two levels share."""
    positions: dict[str, list[int]] = {}
    for i, level in enumerate(levels):
        alias = _declared_alias(level)
        if alias is not None:
            positions.setdefault(alias, []).append(i)
    return {alias: where[0] for alias, where in positions.items() if len(where) == 1}


def level_codes(levels: Sequence[Any], cells: pd.Series) -> np.ndarray:
    """Position of each cell in ``levels``; ``-1`` for a missing cell or an undeclared value.

    A cell matches the level with the same :func:`level_key`; failing that, a boolean cell
    (Parquet ``bool``, pandas ``boolean``, or the text ``True``/``false``/... in any case)
    matches a declared boolean word in any case (``"True"`` or ``"true"``), and a number or
    numeric text equal to an integer (``1.0``, ``"1.0"``) matches that declared integer (``1``
    or ``"1"``). So the same schema encodes a CSV file and its Parquet copy alike. A second
    key two declared levels share (``"True"`` and ``"true"``) matches neither: such cells
    must match exactly.
    """
    keys = cells.map(level_key, na_action="ignore").astype(object)
    codes = pd.Index([level_key(v) for v in levels]).get_indexer(keys)
    unmatched = (codes < 0) & cells.notna().to_numpy()
    if not unmatched.any():
        return codes
    aliases = _unshared_aliases(levels)
    if aliases:
        second = cells[unmatched].map(_cell_alias).map(aliases)
        codes[unmatched] = second.fillna(-1).to_numpy(dtype=np.int64)
    return codes


class FileOptions(_Strict):
    """How the data file is read (``[file]``); all optional.

    Attributes
    ----------
    header : bool
        The first line names the columns (default). ``false``: ``names`` gives them.
    names : list of str, optional
        Column names in file order, for a file without a header line.
    delimiter : str, optional
        Field separator; default: the one of ``,``, ``;`` and tab that the first line holds most.
    na_values : list of str
        Cells read as missing, besides the empty cell (e.g. ``["?"]``, ``["NA"]``).
    comment : str, optional
        A character that starts a comment line (e.g. ``"|"`` for ``adult.test``'s banner).
    encoding : str
        Text encoding (default ``utf-8``).
    """

    header: StrictBool = True
    names: list[StrictStr] | None = None
    delimiter: StrictStr | None = None
    na_values: list[StrictStr] = Field(default_factory=list)
    comment: StrictStr | None = None
    encoding: StrictStr = "utf-8"

    @model_validator(mode="after")
    def _check(self) -> FileOptions:
        if not self.header and not self.names:
            raise ValueError("header = false needs names = [...] (the columns in file order)")
        if self.header and self.names:
            raise ValueError("names = [...] is for a file without a header: set header = false "
                             "or delete names")
        if self.names is not None and len(set(self.names)) != len(self.names):
            raise ValueError("names must be distinct: a column name appears twice")
        if self.delimiter is not None and len(self.delimiter) != 1:
            raise ValueError("delimiter must be one character")
        if self.comment is not None and len(self.comment) != 1:
            raise ValueError("comment must be one character")
        try:
            "".encode(self.encoding)
        except LookupError:
            raise ValueError(f"encoding {self.encoding!r} is not a known text encoding "
                             "(e.g. 'utf-8', 'latin-1')") from None
        return self


class _PaidBounds(_Strict):
    """``bounds`` that may say ``"private"``, with the keys that then choose the release
    (shared by :class:`NumericColumn` and :class:`Target`; see :func:`_check_private_bounds`).
    """

    #: With ``bounds = "private"``: the public search range, the quantiles released as the
    #: bounds (default :data:`~noisygd.mechanisms.private_statistics.DEFAULT_QUANTILES`),
    #: and the grid's smallest resolved magnitude (default: 1e-6 of the range's largest).
    range: tuple[float, float] | None = None
    quantiles: tuple[float, float] | None = None
    resolution: float | None = None

    @field_validator("bounds", check_fields=False)
    @classmethod
    def _finite(cls, v: tuple[float, float] | str | None
                ) -> tuple[float, float] | str | None:
        return v if v is None or v == PRIVATE else _bounds(v, "bounds")  # type: ignore[arg-type]

    @field_validator("range")
    @classmethod
    def _finite_range(cls, v: tuple[float, float] | None) -> tuple[float, float] | None:
        return None if v is None else _bounds(v, "range")

    @property
    def paid(self) -> bool:
        """``bounds = "private"``: the bounds are paid for from the budget."""
        return getattr(self, "bounds", None) == PRIVATE


class _Column(_Strict):
    draft: StrictBool = False
    #: Free text: where the declared values come from (a codebook, a documentation page).
    source: StrictStr | None = None


class NumericColumn(_Column, _PaidBounds):
    """``kind = "numeric"``: clipped to ``bounds``, transformed, mapped onto ``[0, 1]``.

    ``z = (t(clip(x, lo, hi)) - t(lo)) / (t(hi) - t(lo))`` with ``t`` the ``transform``
    (``identity``, ``log1p`` or ``signed_log1p(x) = sign(x) log(1 + |x|)``). ``missing``: a
    public constant in raw units (inside ``bounds``), ``"indicator"`` (the value encodes as 0
    and an extra column ``NAME=<missing>`` is 1), or ``"error"`` (default).
    """

    kind: Literal["numeric"]
    bounds: tuple[float, float] | Literal["private"]
    transform: Literal["identity", "log1p", "signed_log1p"] = "identity"
    missing: float | Literal["indicator", "error"] = ERROR
    #: ``count_clipped = true``: the numbers of values below ``low`` and above ``high`` are
    #: released as noisy counts paid for from ``[privacy] preprocessing_share``
    #: (:func:`noisygd.mechanisms.private_statistics.noisy_clip_counts`); otherwise they are
    #: never computed.
    count_clipped: StrictBool | None = None

    @model_validator(mode="after")
    def _check(self) -> NumericColumn:
        lo, hi, where = _check_private_bounds(self)
        if self.transform == "log1p" and lo <= -1.0:
            raise ValueError(f"transform = \"log1p\" needs {where} with low > -1")
        if isinstance(self.missing, float) and not (
                math.isfinite(self.missing) and lo <= self.missing <= hi):
            raise ValueError(f"missing (a public constant) must lie within {where}")
        return self


def _check_private_bounds(spec: Any) -> tuple[float, float, str]:
    """Check a table's ``bounds = "private"`` keys; return the public interval and its key.

    ``bounds = "private"`` needs ``range``; ``quantiles`` (``0 < q_low < q_high <= 1``) and
    ``resolution`` (> 0) are optional; all three apply only to ``"private"`` bounds.
    """
    if spec.bounds == PRIVATE:
        if spec.range is None:
            raise ValueError("bounds = \"private\" needs range = [low, high]: the widest "
                             "interval known without the data to hold the values (it "
                             "bounds the public grid the noisy histogram is taken on)")
        if spec.quantiles is not None:
            q_lo, q_hi = spec.quantiles
            if not (0.0 < q_lo < q_hi <= 1.0):
                raise ValueError("quantiles must be [q_low, q_high] with "
                                 "0 < q_low < q_high <= 1")
        if spec.resolution is not None and not (
                math.isfinite(spec.resolution) and spec.resolution > 0):
            raise ValueError("resolution must be a positive finite number")
        lo, hi = spec.range
        return lo, hi, "range"
    extra = [k for k in ("range", "quantiles", "resolution") if getattr(spec, k) is not None]
    if extra:
        raise ValueError(f"{', '.join(extra)} apply only to bounds = \"private\": "
                         "delete them, or set bounds = \"private\"")
    if spec.bounds is None:
        return -math.inf, math.inf, "bounds"
    lo, hi = spec.bounds
    return lo, hi, "bounds"


class _LevelColumn(_Column):
    levels: list[Level]
    missing: Level = ERROR
    unknown: Level = ERROR

    @field_validator("levels")
    @classmethod
    def _distinct(cls, v: list[Any]) -> list[Any]:
        return _distinct_levels(v, "levels")

    def _declared(self) -> list[Any]:
        """The levels ``missing`` and ``unknown`` may name."""
        return list(self.levels)

    @model_validator(mode="after")
    def _check(self) -> _LevelColumn:
        keys = {level_key(v) for v in self._declared()}
        for name in ("missing", "unknown"):
            value = level_key(getattr(self, name))
            allowed = (ERROR, INDICATOR, ZEROS) if name == "missing" else (ERROR, ZEROS)
            if value == ZEROS and self.kind == "ordinal":
                raise ValueError("'zeros' is for categorical columns (an ordinal level 0 "
                                 "already encodes as 0)")
            if value not in allowed and value not in keys:
                words = " or ".join(repr(a) for a in allowed)
                raise ValueError(f"{name} must be {words}, or one of the declared levels")
        return self

    def level_index(self, value: Any) -> int:
        """Position of ``value`` in ``levels`` (compared by :func:`level_key`)."""
        return [level_key(v) for v in self.levels].index(level_key(value))


class CategoricalColumn(_LevelColumn):
    """``kind = "categorical"``: one-hot against ``levels`` (one column per level).

    ``unknown``: a value not in ``levels`` is an error (default) or encodes as this declared
    level. ``missing``: an error (default), ``"indicator"`` (one more column
    ``NAME=<missing>``), or a declared level. ``unknown``/``missing`` = ``"zeros"``: the
    value encodes as an all-zero block (no column is 1).

    ``levels = "private"`` with ``vocabulary = [...]``: the levels are paid for (a Gaussian
    histogram over the vocabulary; a level is kept when its noisy count passes ``threshold``
    noise standard deviations, default 3). ``unknown`` then names a vocabulary level (always
    kept) that receives the dropped levels and the values outside the vocabulary; without
    it they go to a new level ``"<other>"``. A ``missing`` level must be in the vocabulary
    (always kept).
    """

    kind: Literal["categorical"]
    levels: list[Level] | Literal["private"]  # type: ignore[assignment]
    vocabulary: list[Level] | None = None
    threshold: float | None = None

    @field_validator("levels")
    @classmethod
    def _distinct(cls, v: list[Any] | str) -> list[Any] | str:
        return v if v == PRIVATE else _distinct_levels(v, "levels")  # type: ignore[arg-type]

    @field_validator("vocabulary")
    @classmethod
    def _distinct_vocabulary(cls, v: list[Any] | None) -> list[Any] | None:
        if v is not None:
            _distinct_levels(v, "vocabulary")
            if OTHER_LEVEL in {level_key(x) for x in v}:
                raise ValueError(f"vocabulary may not contain the reserved level "
                                 f"{OTHER_LEVEL!r}")
        return v

    @property
    def paid(self) -> bool:
        """``levels = "private"``: the level list is paid for from the budget."""
        return self.levels == PRIVATE

    def _declared(self) -> list[Any]:
        return list(self.vocabulary or []) if self.paid else list(self.levels)

    @model_validator(mode="after")
    def _check_paid(self) -> CategoricalColumn:
        if self.paid:
            if self.vocabulary is None:
                raise ValueError("levels = \"private\" needs vocabulary = [...]: every level "
                                 "the column may hold, from its documentation (the noisy "
                                 "histogram is taken over it)")
            if self.threshold is not None and not (
                    math.isfinite(self.threshold) and self.threshold > 0):
                raise ValueError("threshold must be a positive finite number (noise standard "
                                 "deviations)")
        else:
            extra = [k for k in ("vocabulary", "threshold") if getattr(self, k) is not None]
            if extra:
                raise ValueError(f"{', '.join(extra)} apply only to levels = \"private\": "
                                 "delete them, or set levels = \"private\"")
        return self


class OrdinalColumn(_LevelColumn):
    """``kind = "ordinal"``: ``levels`` in order; level ``i`` of ``k`` encodes as ``i/(k-1)``.

    ``missing`` and ``unknown`` as for :class:`CategoricalColumn`; with ``missing =
    "indicator"`` a missing value encodes as 0 and an extra column ``NAME=<missing>`` is 1.
    """

    kind: Literal["ordinal"]

    @field_validator("levels")
    @classmethod
    def _two(cls, v: list[Any]) -> list[Any]:
        if len(v) < 2:
            raise ValueError("an ordinal column needs at least two levels")
        return v


class IgnoreColumn(_Strict):
    """``kind = "ignore"``: the column is read past and never used."""

    kind: Literal["ignore"]
    draft: StrictBool = False
    source: StrictStr | None = None


class PrivacyOptions(_Strict):
    r"""``[privacy]``: what paid-for bounds and levels may spend.

    Attributes
    ----------
    preprocessing_share : float
        The share of the fit's Gaussian-DP budget :math:`\mu^2` spent on the paid
        statistics (``bounds = "private"``, ``levels = "private"``, and the clipped-value
        counts of ``count_clipped = true`` columns), split equally between them (default
        :data:`DEFAULT_PREPROCESSING_SHARE` = 0.1). A declaration of the user (how
        much of the budget the preprocessing is worth), never tuned on the data.
    """

    preprocessing_share: float = DEFAULT_PREPROCESSING_SHARE

    @field_validator("preprocessing_share")
    @classmethod
    def _share(cls, v: float) -> float:
        if not (math.isfinite(v) and 0.0 < v < 1.0):
            raise ValueError("preprocessing_share must be in (0, 1): the share of the budget "
                             "mu^2 spent on paid bounds and levels")
        return v


Column = Annotated[
    NumericColumn | CategoricalColumn | OrdinalColumn | IgnoreColumn,
    Field(discriminator="kind"),
]


class Target(_PaidBounds):
    """``[target]``: ``name`` and either ``labels`` (classification) or ``bounds`` (regression).

    Regression targets are clipped to ``bounds`` (per row, free) and fitted centred at the
    bounds' midpoint; a class label not in ``labels`` is an error. ``bounds = "private"``
    with ``range`` (and optional ``quantiles``, ``resolution``) pays for them, as for a
    numeric column.
    """

    name: StrictStr
    labels: list[Level] | None = None
    bounds: tuple[float, float] | Literal["private"] | None = None
    draft: StrictBool = False
    source: StrictStr | None = None

    @model_validator(mode="after")
    def _check(self) -> Target:
        if (self.labels is None) == (self.bounds is None):
            raise ValueError("give exactly one of labels = [...] (classification) or "
                             "bounds = [low, high] (regression)")
        lo, hi, where = _check_private_bounds(self)
        if self.bounds is not None and max(abs(lo), abs(hi)) > MAX_SCALE:
            raise ValueError(f"{where} must lie within [-{MAX_SCALE:g}, {MAX_SCALE:g}]: the "
                             "squared loss squares the targets (rescale the target's units)")
        if self.labels is not None:
            _distinct_levels(self.labels, "labels")
            if len(self.labels) < 2:
                raise ValueError("labels must list at least two classes")
        return self

    @property
    def task(self) -> Literal["classification", "regression"]:
        return "classification" if self.labels is not None else "regression"


class TableSchema(_Strict):
    """A validated schema file (module docstring). Build with :func:`load_schema`.

    Attributes
    ----------
    row_norm_bound : float
        ``B``: every encoded row has norm at most ``B``.
    target : Target or None
        Needed to fit; optional for :class:`~noisygd.schema.SchemaTransformer` alone.
    columns : dict of str to column
        One entry per column of the file besides the target, in encoding order.
    file : FileOptions
    draft : bool
        Set by ``noisygd schema draft``; see :meth:`check_final`.
    """

    row_norm_bound: float = 1.0
    target: Target | None = None
    columns: dict[str, Column]
    file: FileOptions = Field(default_factory=FileOptions)
    draft: StrictBool = False
    privacy: PrivacyOptions | None = None

    @field_validator("row_norm_bound")
    @classmethod
    def _positive(cls, v: float) -> float:
        if not (math.isfinite(v) and 0 < v <= MAX_SCALE):
            raise ValueError(f"row_norm_bound must be a positive number <= {MAX_SCALE:g} (the "
                             "losses' constants square it)")
        return v

    @model_validator(mode="after")
    def _check(self) -> TableSchema:
        if not any(not isinstance(c, IgnoreColumn) for c in self.columns.values()):
            raise ValueError("columns: declare at least one feature (a column whose kind is "
                             "not \"ignore\")")
        if self.target is not None and self.target.name in self.columns:
            raise ValueError(f"column {self.target.name!r} is the [target] and also has a "
                             f"[columns.{self.target.name}] table: delete one of them")
        if self.file.names is not None:
            declared = set(self.file.names)
            expected = set(self.columns) | ({self.target.name} if self.target else set())
            if declared != expected:
                extra = sorted(expected - declared)
                absent = sorted(declared - expected)
                parts = []
                if extra:
                    parts.append(f"add {', '.join(extra)} to [file] names")
                if absent:
                    parts.append(f"declare [columns.NAME] for {', '.join(absent)} "
                                 "(kind = \"ignore\" to skip)")
                raise ValueError("[file] names and the declared columns differ: "
                                 + "; ".join(parts))
        if self.target is not None and self.target.labels is not None:
            markers = {v.strip() for v in self.file.na_values}
            clash = [level_key(v) for v in self.target.labels if level_key(v) in markers]
            if clash:
                raise ValueError(
                    f"[target] labels {clash} are also in [file] na_values, so their cells "
                    "would be read as missing (a missing target is refused): delete them from "
                    "na_values (a schema reads as missing only the empty cell and na_values)")
        if self.privacy is not None and not (self.paid_columns or self.clip_count_columns):
            raise ValueError("[privacy] preprocessing_share is set but no column is paid for: "
                             "delete [privacy], or set bounds = \"private\" / levels = "
                             "\"private\" / count_clipped = true on a column")
        return self

    @property
    def clip_count_columns(self) -> list[str]:
        """Numeric columns with ``count_clipped = true``, in order: their numbers of values
        below and above the bounds are released as noisy counts paid for from the budget."""
        return [k for k, v in self.columns.items()
                if isinstance(v, NumericColumn) and v.count_clipped]

    @property
    def pays(self) -> bool:
        """The fit pays for a statistic from ``preprocessing_share`` (bounds, levels or
        clipped-value counts)."""
        return bool(self.paid_columns or self.clip_count_columns)

    @property
    def paid_columns(self) -> list[str]:
        """Columns whose bounds or levels are paid for (``"private"``), in order; the
        target's name last when its bounds are (``[target] bounds = "private"``)."""
        out = [k for k, v in self.columns.items() if getattr(v, "paid", False)]
        if self.target is not None and self.target.paid:
            out.append(self.target.name)
        return out

    @property
    def preprocessing_share(self) -> float:
        """``[privacy] preprocessing_share`` (its default without the table)."""
        return (self.privacy.preprocessing_share if self.privacy is not None
                else DEFAULT_PREPROCESSING_SHARE)

    def check_public(self, what: str = "this step") -> None:
        """Raise :class:`SchemaError` if a column's bounds or levels are still to be paid for.

        Encoding needs every bound and level list; ``"private"`` ones are released by the
        fit (:func:`noisygd.schema.paid.resolve_paid`) and written into the model's schema.
        """
        paid = self.paid_columns
        if paid:
            raise SchemaError(
                f"{what} needs public bounds and levels, but the schema pays for those of "
                f"{', '.join(map(repr, paid))} (\"private\"): fit with 'noisygd fit --schema' "
                "(or noisygd.schema.fitting.fit_table), which releases them privately and "
                "writes them into the model's schema, or declare them")

    @property
    def features(self) -> dict[str, NumericColumn | CategoricalColumn | OrdinalColumn]:
        """The columns that are encoded (``kind`` other than ``ignore``), in order."""
        return {k: v for k, v in self.columns.items() if not isinstance(v, IgnoreColumn)}

    def draft_tables(self) -> list[str]:
        """Tables still marked ``draft = true`` (``[target]``, ``[columns.NAME]``, top level)."""
        out = ["top level (draft = true)"] if self.draft else []
        if self.target is not None and self.target.draft:
            out.append("[target]")
        out.extend(f"[columns.{k}]" for k, v in self.columns.items() if v.draft)
        return out

    def check_final(self, source: str = "the schema") -> None:
        """Raise :class:`SchemaError` unless the schema has a target and no draft values."""
        drafts = self.draft_tables()
        if drafts:
            shown = ", ".join(drafts[:8]) + (f" and {len(drafts) - 8} more"
                                             if len(drafts) > 8 else "")
            raise SchemaError(
                f"{source} still holds draft (data-derived) values in {shown}: replace each "
                "marked value by one known without looking at the data (or confirm it), then "
                "delete that table's 'draft = true' line (and the top-level one)")
        if self.target is None:
            raise SchemaError(f"{source} has no [target] table: add one with name = \"COLUMN\" "
                              "and labels = [...] or bounds = [low, high]")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (the same structure as the TOML file)."""
        return self.model_dump(mode="json", exclude_defaults=False)


#: The keys that take a list or ``"private"``, and what to write there.
_PRIVATE_OR = {
    "bounds": "must be two finite numbers [low, high], or \"private\" (paid for; needs range)",
    "levels": "must be a list of levels, or \"private\" (paid for; needs vocabulary)",
}


def _union_branch(part: str) -> bool:
    """A location segment pydantic adds for a branch of a union (``tuple[...]``, ...)."""
    return part.startswith(("tuple[", "literal[", "list[", "function-"))


def _collapse_unions(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One error per key for the ``[...] or "private"`` keys (not one per union branch)."""
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, ...]] = set()
    for err in errors:
        loc = [str(p) for p in err.get("loc", ())]
        cut = next((i for i, p in enumerate(loc) if _union_branch(p)), None)
        if cut is not None and cut >= 1 and loc[cut - 1] in _PRIVATE_OR:
            key = tuple(loc[:cut])
            if key in seen:
                continue
            seen.add(key)
            err = {"loc": key, "type": "private_or", "msg": _PRIVATE_OR[loc[cut - 1]]}
        out.append(err)
    return out


def _where(loc: tuple[Any, ...]) -> str:
    """A pydantic error location as the TOML table and key it refers to."""
    parts = [str(p) for p in loc]
    if parts[:1] == ["columns"] and len(parts) >= 2:
        # drop the discriminator tag pydantic inserts ("columns", NAME, "numeric", field)
        rest = [p for p in parts[2:] if p not in ("numeric", "categorical", "ordinal", "ignore")]
        table = f"[columns.{parts[1]}]"
        return f"{table} {'.'.join(rest)}".strip()
    if parts[:1] in (["target"], ["file"]):
        return f"[{parts[0]}] {'.'.join(parts[1:])}".strip()
    return ".".join(parts) if parts else "top level"


def _message(err: dict[str, Any]) -> str:
    msg = str(err.get("msg", "invalid"))
    kind = err.get("type", "")
    if kind == "private_or":
        return msg
    if kind == "union_tag_invalid" or kind == "union_tag_not_found":
        return ("kind must be one of \"numeric\", \"categorical\", \"ordinal\", \"ignore\"")
    if kind == "extra_forbidden" and [str(p) for p in err.get("loc", ())][-1:] == [
            "count_clipped"]:
        return "count_clipped applies only to kind = \"numeric\" columns: delete it here"
    if kind == "extra_forbidden":
        return "unknown key (misspelt? see docs/schema.md for the keys of each table)"
    if kind == "missing":
        return "required key is missing"
    loc = [str(p) for p in err.get("loc", ())]
    if "bounds" in loc and kind in ("tuple_type", "too_short", "too_long", "float_parsing",
                                    "float_type", "finite_number"):
        return "must be two finite numbers [low, high]"
    return msg.removeprefix("Value error, ")


def parse_schema(data: Any, source: str = "schema") -> TableSchema:
    """Validate a dict (a parsed TOML file) into a :class:`TableSchema`.

    Raises :class:`SchemaError` listing every problem as ``[table] key: what to change``.
    """
    if isinstance(data, TableSchema):
        return data
    try:
        return TableSchema.model_validate(data)
    except ValidationError as exc:
        problems = [f"{_where(tuple(e['loc']))}: {_message(e)}"
                    for e in _collapse_unions(list(exc.errors()))]
        raise SchemaError(f"{source} is not a valid schema: " + "; ".join(problems)) from None


def load_schema(path: str | Path) -> TableSchema:
    """Read and validate a TOML schema file.

    Raises
    ------
    SchemaError
        The file is absent, not TOML (TOML itself refuses a table or key given twice), or not
        a valid schema; the message names the table and key.
    """
    p = Path(path)
    if p.is_dir():
        raise SchemaError(f"schema {p} is a directory: give the path of a TOML schema file")
    if not p.is_file():
        raise SchemaError(f"schema file not found: {p}")
    try:
        with p.open("rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise SchemaError(f"schema {p} is not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SchemaError(f"cannot read schema {p}: {exc}") from None
    return parse_schema(data, f"schema {p}")
