"""Lossless JSON form of privacy events, so a stored release can be re-accounted later.

An event is a frozen dataclass (:class:`~noisygd.accounting.events.DpEvent`); its JSON form
names the class and lists its init fields::

    {"version": 1, "type": "PoissonSampled",
     "fields": {"rate": 0.01,
                "event": {"type": "Gaussian",
                          "fields": {"noise_multiplier": 1.1, "sensitivity": 1.0,
                                     "relation": "add_remove"}}}}

Rules, applied recursively to every field value:

* a nested event becomes ``{"type": ..., "fields": ...}`` (``version`` only at the top);
* an enum becomes its value (the field's type annotation names the enum to rebuild);
* a tuple becomes a list (and a list a tuple again on the way back);
* a finite float, an int, a str, a bool and ``None`` stay as they are (JSON keeps ``1`` and
  ``1.0`` apart, and ``repr`` of a float round-trips exactly); NumPy scalars become Python
  ones; ``inf``, ``-inf`` and ``nan`` become ``{"$float": "inf"}`` etc., so the output is
  strict JSON (``json.dumps(..., allow_nan=False)`` accepts it; PostgreSQL's ``json`` too).

Anything else is refused with :class:`TypeError`. :func:`event_to_dict` checks that
:func:`event_from_dict` rebuilds an equal event before it returns, so a new event class
whose fields the rules cannot carry fails loudly when it is first stored, never later when
it is re-accounted. :func:`event_from_dict` refuses an unknown ``type`` or ``version``, and
unknown or missing fields, with :class:`ValueError`; the rebuilt event runs its own
``__post_init__`` checks.

The classes known are the subclasses of :class:`DpEvent` defined in
:mod:`noisygd.accounting.events`, the one module that holds them (:func:`event_classes`);
an event class defined elsewhere is refused.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import types
import typing
from enum import Enum
from typing import Any

import numpy as np

from noisygd.accounting.events import DpEvent

__all__ = ["SERIALIZATION_VERSION", "event_classes", "event_from_dict", "event_to_dict"]

#: Version of the JSON form written by :func:`event_to_dict`.
SERIALIZATION_VERSION = 1

_FLOAT_TAG = "$float"
_SPECIAL_FLOATS = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def event_classes() -> dict[str, type[DpEvent]]:
    """Every event class noisygd defines, by class name: the classes of
    :mod:`noisygd.accounting.events`, the one module that holds them.

    Event classes defined elsewhere (a user's or a test's) are not serialisable: a stored
    ledger must be readable by any later noisygd, so it names only classes noisygd ships.
    """
    from noisygd.accounting import events

    return {
        name: obj
        for name, obj in vars(events).items()
        if isinstance(obj, type) and issubclass(obj, DpEvent) and obj is not DpEvent
        and obj.__module__ == events.__name__
    }


# ------------------------------------------------------------------------------ encode
def event_to_dict(event: DpEvent) -> dict[str, Any]:
    """The JSON-ready dictionary of ``event`` (module docstring), checked to round-trip.

    Parameters
    ----------
    event : DpEvent

    Returns
    -------
    dict
        ``{"version": SERIALIZATION_VERSION, "type": <class name>, "fields": {...}}``.

    Raises
    ------
    TypeError
        If ``event`` is not a :class:`DpEvent`, or one of its fields holds a value the
        rules cannot carry.
    ValueError
        If the class is not one :func:`event_classes` knows, or the dictionary does not
        rebuild an equal event.
    """
    if not isinstance(event, DpEvent):
        raise TypeError(f"event must be a DpEvent, got {type(event).__name__}")
    out = {"version": SERIALIZATION_VERSION, **_encode_event(event, "event")}
    back = event_from_dict(out)
    if back != event:
        raise ValueError(
            f"{type(event).__name__} does not survive serialisation: {event!r} came back as "
            f"{back!r}; teach noisygd.accounting.serialization its field types"
        )
    return out


def _encode_event(event: DpEvent, where: str) -> dict[str, Any]:
    cls = type(event)
    known = event_classes().get(cls.__name__)
    if known is not cls:
        raise ValueError(
            f"{where}: event class {cls.__module__}.{cls.__qualname__} is not a registered "
            "DpEvent subclass"
        )
    if not dataclasses.is_dataclass(event):
        raise TypeError(f"{where}: {cls.__name__} is not a dataclass")
    fields = {}
    for f in dataclasses.fields(event):
        if f.init:
            fields[f.name] = _encode_value(getattr(event, f.name), f"{where}.{f.name}")
    return {"type": cls.__name__, "fields": fields}


def _encode_value(value: Any, where: str) -> Any:
    if isinstance(value, DpEvent):
        return _encode_event(value, where)
    if isinstance(value, Enum):
        return _encode_value(value.value, where)
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, float | np.floating):
        v = float(value)
        if math.isfinite(v):
            return v
        return {_FLOAT_TAG: "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")}
    if isinstance(value, tuple | list):
        return [_encode_value(v, f"{where}[{i}]") for i, v in enumerate(value)]
    raise TypeError(
        f"{where}: cannot serialise a {type(value).__name__} field value (supported: events, "
        "enums, tuples, lists, bool, int, float, str, None)"
    )


# ------------------------------------------------------------------------------ decode
def event_from_dict(data: dict[str, Any]) -> DpEvent:
    """Rebuild the event that :func:`event_to_dict` serialised.

    Parameters
    ----------
    data : dict
        The output of :func:`event_to_dict` (or the same after a JSON round trip).

    Returns
    -------
    DpEvent

    Raises
    ------
    ValueError
        For a missing or unsupported ``version``, an unknown ``type``, unknown or missing
        fields, or field values the event class itself rejects.
    TypeError
        If ``data`` is not a dictionary of the expected shape.
    """
    if not isinstance(data, dict):
        raise TypeError(f"a serialised event must be a dict, got {type(data).__name__}")
    version = data.get("version")
    if version != SERIALIZATION_VERSION:
        raise ValueError(
            f"unsupported serialised-event version {version!r} (this noisygd reads version "
            f"{SERIALIZATION_VERSION})"
        )
    return _decode_event(data, "event")


def _decode_event(data: Any, where: str) -> DpEvent:
    if not isinstance(data, dict) or "type" not in data or "fields" not in data:
        raise TypeError(f"{where}: expected a serialised event {{'type': ..., 'fields': ...}}")
    extra = set(data) - {"type", "fields", "version"}
    if extra:
        raise ValueError(f"{where}: unexpected keys {sorted(extra)} in a serialised event")
    name = data["type"]
    classes = event_classes()
    cls = classes.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(
            f"{where}: unknown event type {name!r}; known types: {', '.join(sorted(classes))}"
        )
    raw = data["fields"]
    if not isinstance(raw, dict):
        raise TypeError(f"{where}: 'fields' must be a dict, got {type(raw).__name__}")
    init_fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = set(raw) - set(init_fields)
    if unknown:
        raise ValueError(f"{where}: {name} has no fields {sorted(unknown)}")
    missing = [
        n for n, f in init_fields.items()
        if n not in raw
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise ValueError(f"{where}: {name} is missing the fields {missing}")
    hints = _type_hints(cls)
    kwargs = {
        n: _decode_value(v, hints.get(n), f"{where}.{n}") for n, v in raw.items()
    }
    return cls(**kwargs)


def _decode_value(value: Any, hint: Any, where: str) -> Any:
    if isinstance(value, dict):
        if set(value) == {_FLOAT_TAG}:
            tag = value[_FLOAT_TAG]
            if tag not in _SPECIAL_FLOATS:
                raise ValueError(f"{where}: unknown special float {tag!r}")
            return _SPECIAL_FLOATS[tag]
        return _decode_event(value, where)
    if isinstance(value, list):
        inner = _element_hint(hint)
        return tuple(_decode_value(v, inner, f"{where}[{i}]") for i, v in enumerate(value))
    enum_cls = _enum_in(hint)
    if enum_cls is not None and value is not None:
        return enum_cls(value)
    return value


@functools.cache
def _type_hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _enum_in(hint: Any) -> type[Enum] | None:
    """The enum class a field annotation names (alone or in a union with None)."""
    if isinstance(hint, type) and issubclass(hint, Enum):
        return hint
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        enums = [a for a in typing.get_args(hint) if isinstance(a, type) and issubclass(a, Enum)]
        if len(enums) == 1:
            return enums[0]
    return None


def _element_hint(hint: Any) -> Any:
    """``X`` for ``tuple[X, ...]`` / ``list[X]`` annotations, else None."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (tuple, list) and args:
        return args[0]
    return None
