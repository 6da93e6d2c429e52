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


def write_lines(name: str, rows: list[dict[str, Any]], lines: list[str]) -> None:
    """:func:`write_experiment` of ``rows`` and the Markdown ``lines``, then print the first
    three (the title and the summary sentence)."""
    write_experiment(name, rows, "\n".join(lines) + "\n")
    print("\n".join(lines[:3]))


def change_summary(label: str, changes: Iterable[float]) -> str:
    """``"<label>: mean change +x, higher by > 0.02 in a, lower by > 0.02 in b of n cells"``."""
    values = [float(v) for v in changes]
    return (f"{label}: mean change {sum(values) / len(values):+.4f}, higher by > 0.02 in "
            f"{sum(v > 0.02 for v in values)}, lower by > 0.02 in "
            f"{sum(v < -0.02 for v in values)} of {len(values)} cells")


#: ``bench_conditioning``'s four families at n 500, 2000, 10 000 and p 5, 20, 100, the eight
#: binary and regression ``bench_utility`` sets and the four epsilons: the grid on which the
#: plain default's rules are compared (:func:`compare_plain_default`).
FAMILY_CELLS = tuple((fam, n, p) for fam in ("onehot", "imbalanced", "scales", "offcentre")
                     for n in (500, 2000, 10000) for p in (5, 20, 100))
UTILITY_TABLES = ("adult", "bank", "credit", "breast_cancer", "digits_binary", "wine", "bike",
                  "diabetes")
EPSILONS = (0.5, 1.0, 2.0, 8.0)


def plain_default_share(prob: dict[str, Any], eps: float, seed: int) -> tuple[float, Any]:
    """The plain default fit of ``prob`` (``bench_conditioning.fit_estimator``, no bounds) and
    its share of the non-private gain (the ceiling computed once per problem):
    ``(share, estimator)``."""
    from bench_conditioning import _share, fit_estimator, nonprivate

    metric, est = fit_estimator(prob, "auto", "plain", eps, seed)
    return _share(prob["task"], metric, prob.setdefault("_ceiling", nonprivate(prob))), est


def compare_plain_default(name: str, doc: str,
                          variants: tuple[tuple[str, Callable[..., tuple[float, dict]]], ...],
                          title: str, what: str, extra: tuple[str, ...] = (),
                          argv: list[str] | None = None) -> int:
    """An experiment's ``main``: two rules of the plain default fit, cell by cell on
    :data:`FAMILY_CELLS` and :data:`UTILITY_TABLES` at :data:`EPSILONS` (run in parts,
    :func:`rows_in_parts`), written by :func:`write_comparison` once merged.

    ``variants`` is ``((label, fit), (label, fit))``; ``fit(prob, eps, seed)`` returns the
    share of the non-private gain and a dict of numbers summed over the seeds into the row
    (the ``extra`` columns). Each row holds the problem, task and epsilon, each label's mean
    and ``"<label> min"`` over the seeds, the summed numbers and ``"change"`` (second minus
    first). Returns 0."""
    from bench_conditioning import named_problems

    ap = experiment_parser(doc, seeds=2)
    add_part_arguments(ap)
    args = ap.parse_args(argv)

    def run_item(item: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
        problem, prob = item
        out = []
        for eps in EPSILONS:
            row: dict[str, Any] = {"problem": problem, "task": prob["task"], "epsilon": eps}
            for label, fit in variants:
                fits = [fit(prob, eps, seed) for seed in range(args.seeds)]
                shares = [share for share, _ in fits]
                row[label], row[f"{label} min"] = (sum(shares) / len(shares), min(shares))
                for _, numbers in fits:
                    for key, value in numbers.items():
                        row[key] = row.get(key, 0) + value
            row["change"] = row[variants[1][0]] - row[variants[0][0]]
            out.append(row)
        return out

    rows = rows_in_parts(name, lambda: named_problems(FAMILY_CELLS, args.data_dir,
                                                      UTILITY_TABLES),
                         args.part, args.merge, run_item)
    if rows is not None:
        write_comparison(name, title, what, rows, (variants[0][0], variants[1][0]),
                         args.seeds, extra)
    return 0


def write_comparison(name: str, title: str, what: str, rows: list[dict[str, Any]],
                     labels: tuple[str, str], seeds: int, extra: tuple[str, ...] = ()) -> None:
    """Write :func:`compare_plain_default`'s ``rows`` (:func:`write_experiment`): the
    ``title``, a sentence on the share of the non-private gain of the default fit ``what``
    with each task's :func:`change_summary`, and the table (both labels' mean and min, the
    ``extra`` columns, the change); prints the first three lines."""
    first, second = labels
    lines = [
        f"# {title}",
        "",
        "Share of the non-private gain (AUC, 0.5 as 0, or R^2; mean and min over seeds "
        f"0..{seeds - 1}) of the default fit {what}. "
        + "; ".join(change_summary(task, [r["change"] for r in rows if r["task"] == task])
                    for task in ("binary", "regression")) + ".",
        "",
        "| problem | task | epsilon | " + " | ".join(
            [first, f"{first} min", second, f"{second} min", *extra, "change"]) + " |",
        "|---|---|---|" + "---|" * (5 + len(extra)),
        *("| " + " | ".join([r["problem"], r["task"], f"{r['epsilon']:g}",
                             *(f"{r[k]:.3f}" for k in (first, f"{first} min", second,
                                                      f"{second} min")),
                             *(str(r[k]) for k in extra), f"{r['change']:+.3f}"]) + " |"
          for r in rows),
        "",
        f"Command: `python experiments/{name}.py --part k/2` for k = 0, 1, then `--merge 2`.",
    ]
    write_experiment(name, rows, "\n".join(lines) + "\n")
    print("\n".join(lines[:3]))
