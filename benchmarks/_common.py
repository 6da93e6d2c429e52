"""Shared helpers for benchmark scripts: timing, environment facts, JSON + Markdown output.

Every benchmark writes ``benchmarks/results/<name>.json`` (``{"meta": ..., "rows": [...]}``)
and ``benchmarks/results/<name>.md`` (a Markdown table of the rows) with
:func:`write_results`. Rows are flat dicts; the utility benchmarks use the keys
``method, epsilon, delta, accuracy_mean, accuracy_std, excess_risk_mean, fit_seconds,
seconds_per_epoch, accountant, notes`` so that methods can be appended to one table.
"""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from noisygd.data import uci_data_dir

RESULTS_DIR = Path(__file__).resolve().parent / "results"

UTILITY_COLUMNS = (
    "method", "epsilon", "delta", "accuracy_mean", "accuracy_std", "excess_risk_mean",
    "fit_seconds", "seconds_per_epoch", "accountant", "notes",
)


def data_dir(cli_value: str | None = None) -> Path:
    """The UCI data folder (:func:`noisygd.data.uci_data_dir`)."""
    return uci_data_dir(cli_value)


def time_call(
    fn: Callable[[], Any], repeats: int = 5, warmup: int = 1
) -> tuple[float, list[float]]:
    """Median wall time of ``fn()`` over ``repeats`` calls (after ``warmup`` untimed calls)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def environment() -> dict[str, Any]:
    """Facts that timings depend on (CPU count, load, library versions)."""
    import scipy
    import sklearn

    try:
        load = os.getloadavg()
    except OSError:  # pragma: no cover - not on every platform
        load = None
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "load_average_at_start": load,
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def _jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return _jsonable(v.tolist())
    if isinstance(v, np.generic):
        return _jsonable(v.item())
    if isinstance(v, float) and not math.isfinite(v):
        return None if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if hasattr(v, "value") and isinstance(v.value, str):
        return v.value
    return v


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if not math.isfinite(v):
            return "inf" if v > 0 else ("nan" if math.isnan(v) else "-inf")
        if v == 0:
            return "0"
        if abs(v) >= 1e4 or abs(v) < 1e-3:
            return f"{v:.3g}"
        return f"{v:.4f}"
    return str(v).replace("|", "\\|").replace("\n", " ")


def markdown_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    """Rows as a Markdown table; columns default to the union of keys in first-seen order."""
    if columns is None:
        columns = []
        for r in rows:
            columns += [k for k in r if k not in columns]
    head = "| " + " | ".join(columns) + " |"
    sep = "|" + "|".join("---" for _ in columns) + "|"
    body = ["| " + " | ".join(_fmt(r.get(c)) for c in columns) + " |" for r in rows]
    return "\n".join([head, sep, *body])


def write_results(
    name: str,
    rows: Sequence[dict[str, Any]],
    meta: dict[str, Any],
    *,
    columns: Sequence[str] | None = None,
    results_dir: Path | None = None,
    extra_markdown: str = "",
) -> tuple[Path, Path]:
    """Write ``<results_dir>/<name>.json`` and ``<name>.md``; return both paths."""
    out = Path(results_dir) if results_dir is not None else RESULTS_DIR
    out.mkdir(parents=True, exist_ok=True)
    jpath, mpath = out / f"{name}.json", out / f"{name}.md"
    jpath.write_text(json.dumps({"meta": _jsonable(meta), "rows": _jsonable(list(rows))},
                                indent=2) + "\n")
    lines = [f"# {meta.get('title', name)}", ""]
    if meta.get("description"):
        lines += [str(meta["description"]), ""]
    lines += [markdown_table(rows, columns), ""]
    if extra_markdown:
        lines += [extra_markdown, ""]
    lines += [f"Command: `{meta['command']}`" if meta.get("command") else "", ""]
    mpath.write_text("\n".join(lines))
    return jpath, mpath
