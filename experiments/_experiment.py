"""What the experiments share: their command line (``--seeds``, ``--data-dir``), and running
their cells in parts (one process per core) and merging the parts: ``--part k/m`` runs every
``m``-th item from the ``k``-th and writes ``results/<name>.part<k>.json``; ``--merge m`` reads
the ``m`` parts back, in order."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


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
