"""What the experiments share: the benchmarks on the import path (they read
``bench_conditioning``'s problems and fits), their command line (``--seeds``, ``--data-dir``),
running their cells in parts (one process per core) and merging the parts (``--part k/m`` runs
every ``m``-th item from the ``k``-th and writes ``results/<name>.part<k>.json``; ``--merge m``
reads the ``m`` parts back, in order: :func:`rows_in_parts`), and writing their results
(:func:`write_experiment`)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
BENCHMARKS = HERE.parent / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))


def experiment_parser(doc: str, seeds: int) -> argparse.ArgumentParser:
    """A parser described by ``doc``'s first line, with ``--seeds`` (default ``seeds``) and
    ``--data-dir`` (default ``../shared/data/uci`` beside the repository)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=seeds)
    ap.add_argument("--data-dir", type=Path, default=HERE.parent.parent / "shared/data/uci")
    return ap


def add_part_arguments(ap: argparse.ArgumentParser) -> None:
    """``--part k/m`` and ``--merge m``."""
    ap.add_argument("--part", default="0/1", help="k/m: run every m-th item from the k-th")
    ap.add_argument("--merge", type=int, default=0, help="merge this many parts' JSON")


def part_items(items: list[Any], part: str) -> tuple[list[Any], int, int]:
    """``(items[k::m], k, m)`` for ``part = "k/m"``."""
    k, m = (int(v) for v in part.split("/"))
    return items[k::m], k, m


def save_part(name: str, k: int, rows: list[dict[str, Any]]) -> None:
    """Write part ``k``'s rows to ``results/<name>.part<k>.json``."""
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.part{k}.json").write_text(json.dumps(rows, indent=1))


def merged(name: str, parts: int) -> list[dict[str, Any]]:
    """The rows of parts ``0 .. parts - 1``, in order."""
    return [row for k in range(parts)
            for row in json.loads((RESULTS / f"{name}.part{k}.json").read_text())]


def rows_in_parts(name: str, items: Callable[[], list[Any]], part: str, merge: int,
                  run_item: Callable[[Any], Iterable[dict[str, Any]]]
                  ) -> list[dict[str, Any]] | None:
    """The experiment's rows: with ``merge`` the ``merge`` parts' rows (:func:`merged`;
    ``items`` is not built); else ``run_item(item)``'s rows, each printed as JSON, for this
    ``part`` of ``items()`` (:func:`part_items`), saved (:func:`save_part`) and None where
    there are several parts."""
    if merge:
        return merged(name, merge)
    mine, k, m = part_items(items(), part)
    rows = []
    for item in mine:
        for row in run_item(item):
            rows.append(row)
            print(json.dumps(row), flush=True)
    if m > 1:
        save_part(name, k, rows)
        return None
    return rows


def write_experiment(name: str, data: Any, markdown: str) -> None:
    """Write ``results/<name>.json`` (``data``) and ``results/<name>.md``."""
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(data, indent=1))
    (RESULTS / f"{name}.md").write_text(markdown)


def change_summary(label: str, changes: Iterable[float]) -> str:
    """``"<label>: mean change +x, higher by > 0.02 in a, lower by > 0.02 in b of n cells"``."""
    values = [float(v) for v in changes]
    return (f"{label}: mean change {sum(values) / len(values):+.4f}, higher by > 0.02 in "
            f"{sum(v > 0.02 for v in values)}, lower by > 0.02 in "
            f"{sum(v < -0.02 for v in values)} of {len(values)} cells")
