"""The layering of ``src/noisygd``: no import cycle, no upward import, light imports.

Every module under ``src/noisygd`` is parsed with :mod:`ast` (nothing is imported), and each
``import noisygd...`` / ``from noisygd... import ...`` / relative import becomes an edge of the
internal import graph, wherever it stands: module level, inside a function, or under
``if TYPE_CHECKING:`` (a type named from a higher layer is still a dependency on it). An edge goes
to the module named; ``from package import name`` goes to ``package.name`` when that is a module,
else to the package's ``__init__``.

The layer table below is the one ``docs/architecture.md`` documents. A module may import from its
own layer and the layers below it, never from above. A layer key is the dotted path after
``noisygd.`` (``"data.uci"``); a module belongs to the layer of its longest listed prefix, so
``noisygd.data.uci.adult`` sits in ``data.uci``'s layer and ``noisygd.data.io`` in ``data``'s.

One kind of edge is not an import-time dependency and is listed by name in
:data:`LAZY_FORWARDS`: a package ``__init__`` that forwards names from a higher layer inside its
module-level ``__getattr__`` (:pep:`562`), so the higher module is imported on first attribute
access, never when the package is imported. Such an edge is checked to stand inside that
``__getattr__`` and is left out of the graph; :func:`test_light_imports` checks that importing
the package does not load the forwarded module.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = "noisygd"

#: Bottom to top. A module's layer is decided by its longest listed prefix after ``noisygd.``
#: (the root package ``noisygd`` itself sits in the bottom layer). The UCI loaders
#: (``data.uci``) are bundled schema files encoded by ``noisygd.schema``, so they sit above it,
#: while the rest of ``noisygd.data`` (readers, preprocessing) sits below it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("", "_checks", "exceptions", "bounds"),
    ("accounting",),
    ("ledger",),
    ("objectives",),
    ("oracles",),
    ("mechanisms",),
    ("algorithms",),
    ("solvers", "planning", "planning_langevin", "training", "tuning"),
    ("data",),
    ("report",),
    ("estimators",),
    ("schema", "audit"),
    ("data.uci",),
    ("reproductions",),
    ("cli",),
)
LAYER_OF: dict[str, int] = {name: i for i, names in enumerate(LAYERS) for name in names}

#: ``(package, module)``: the package's ``__init__`` forwards names from ``module`` (a higher
#: layer) in its module-level ``__getattr__`` only (module docstring).
LAZY_FORWARDS: frozenset[tuple[str, str]] = frozenset({
    # noisygd.data re-exports load_uci, dataset_info, public_centring, uci_data_dir and
    # UCI_DATASETS for existing callers; noisygd.schema imports noisygd.data.io/preprocessing.
    ("noisygd.data", "noisygd.data.uci"),
})


def compiled_modules() -> dict[str, Path]:
    """Dotted name -> C source of each compiled module that ``setup.py`` builds.

    They import nothing of the package; listing them keeps ``from noisygd.x._kernel import f``
    an edge to that module (not to its package ``noisygd.x``).
    """
    out = {}
    for node in ast.walk(ast.parse((SRC.parent / "setup.py").read_text())):
        if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Extension"
                and node.args and isinstance(node.args[0], ast.Constant)):
            sources = next(k.value for k in node.keywords if k.arg == "sources")
            out[node.args[0].value] = SRC.parent / sources.elts[0].value  # type: ignore[attr-defined]
    return out


def module_files() -> dict[str, Path]:
    """Dotted module name -> source file, for every module of the package (compiled ones
    included, with their C source)."""
    out = {}
    for path in sorted((SRC / PKG).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    out.update(compiled_modules())
    return out


MODULES = module_files()


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """Absolute name of the module that ``from ... import`` reads from."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _existing(name: str) -> str | None:
    """The longest prefix of ``name`` that is a module of the package."""
    parts = name.split(".")
    while parts:
        if ".".join(parts) in MODULES:
            return ".".join(parts)
        parts.pop()
    return None


def imports_in(module: str, source: str, is_package: bool = False) -> Iterator[tuple[str, int]]:
    """``(imported internal module, line)`` for every import statement of ``source``."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == PKG or alias.name.startswith(PKG + "."):
                    target = _existing(alias.name)
                    if target is not None:
                        yield target, node.lineno
        elif isinstance(node, ast.ImportFrom):
            source_module = _resolve(module, is_package, node)
            if source_module != PKG and not source_module.startswith(PKG + "."):
                continue
            for alias in node.names:
                sub = f"{source_module}.{alias.name}"
                target = sub if sub in MODULES else _existing(source_module)
                if target is not None:
                    yield target, node.lineno


def imports_of(module: str) -> Iterator[tuple[str, int]]:
    """:func:`imports_in` for a module of the package."""
    path = MODULES[module]
    if path.suffix == ".c":  # a compiled module: no Python imports
        return iter(())
    return imports_in(module, path.read_text(), path.name == "__init__.py")


def getattr_lines(source: str) -> set[int]:
    """Line numbers inside the module-level ``def __getattr__`` of ``source`` (if any)."""
    lines: set[int] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def _lazy_forward(module: str, target: str, line: int) -> bool:
    """Whether ``module`` imports ``target`` at ``line`` as a listed :data:`LAZY_FORWARDS`."""
    if (module, target) not in LAZY_FORWARDS or MODULES[module].name != "__init__.py":
        return False
    return line in getattr_lines(MODULES[module].read_text())


def import_graph() -> dict[str, dict[str, int]]:
    """``graph[a][b]`` = first line of ``a`` that imports ``b`` (self-imports and the listed
    lazy forwards dropped)."""
    graph: dict[str, dict[str, int]] = {m: {} for m in MODULES}
    for module in MODULES:
        for target, line in imports_of(module):
            if target != module and not _lazy_forward(module, target, line):
                graph[module].setdefault(target, line)
    return graph


def layer(module: str) -> int:
    """Index in :data:`LAYERS` of ``module``: that of its longest listed prefix after
    ``noisygd.`` (``KeyError`` names an unplaced module)."""
    parts = module.split(".")[1:]
    for k in range(len(parts), 0, -1):
        key = ".".join(parts[:k])
        if key in LAYER_OF:
            return LAYER_OF[key]
    return LAYER_OF[parts[0] if parts else ""]


def _where(graph: dict[str, dict[str, int]], a: str, b: str) -> str:
    return f"{MODULES[a].relative_to(SRC.parent)}:{graph[a][b]}"


def strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


GRAPH = import_graph()


def test_the_parser_sees_known_imports() -> None:
    """Guard against a graph that is empty by mistake: edges that must be there are found."""
    assert "noisygd.data.schema" in GRAPH["noisygd.data.uci"]  # module-level, absolute
    assert "noisygd.schema" in GRAPH["noisygd.data.uci"]
    assert "noisygd.data.preprocessing" in GRAPH["noisygd.schema.encode"]
    assert "noisygd.objectives.base" in GRAPH["noisygd.oracles.base"]
    assert sum(len(v) for v in GRAPH.values()) > 100


def test_relative_function_level_and_type_checking_imports_are_edges() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "import numpy as np\n"
        "from . import base\n"                      # line 3: sibling module
        "from ..objectives import glm, NotAModule\n"  # line 4: module, then package __init__
        "if TYPE_CHECKING:\n"
        "    from noisygd.solvers.base import Solver\n"  # line 6
        "def f():\n"
        "    import noisygd.data.io\n"                # line 8
        "    from noisygd import exceptions\n"        # line 9
    )
    found = sorted(imports_in("noisygd.oracles.x", source))
    assert found == [
        ("noisygd.data.io", 8),
        ("noisygd.exceptions", 9),
        ("noisygd.objectives", 4),
        ("noisygd.objectives.glm", 4),
        ("noisygd.oracles.base", 3),
        ("noisygd.solvers.base", 6),
    ]
    # inside a package's __init__, "." is the package itself
    assert sorted(imports_in("noisygd.data", "from .io import read_table\n", True)) == [
        ("noisygd.data.io", 1)
    ]


def test_layers_by_longest_prefix() -> None:
    assert layer("noisygd.data.uci.adult") == layer("noisygd.data.uci") == LAYER_OF["data.uci"]
    assert layer("noisygd.data.io") == layer("noisygd.data") == LAYER_OF["data"]
    assert layer("noisygd.data.uci") > layer("noisygd.schema.encode") > layer("noisygd.data.io")
    assert layer("noisygd") == 0


def test_lazy_forwards_stand_inside_getattr_and_nowhere_else() -> None:
    """A listed forward is honoured only inside the package's ``__getattr__``: the same import
    at module level would load the higher layer on import, and stays an (upward) edge."""
    for package, target in sorted(LAZY_FORWARDS):
        found = [line for t, line in imports_of(package) if t == target]
        assert found, f"{package} does not import {target}: drop it from LAZY_FORWARDS"
        inside = getattr_lines(MODULES[package].read_text())
        assert all(line in inside for line in found), (package, target, found)
        assert target not in GRAPH[package]
    src = "import x\ndef __getattr__(name):\n    from noisygd.data import uci\n    return uci\n"
    assert getattr_lines(src) == {2, 3, 4}


def test_every_module_has_a_layer() -> None:
    unplaced = sorted(m for m in MODULES if [*m.split("."), ""][1] not in LAYER_OF)
    assert not unplaced, (
        "modules outside the layer table of tests/test_architecture.py (place them in LAYERS "
        "and in docs/architecture.md): " + ", ".join(unplaced)
    )


def shortest_cycles(graph: dict[str, dict[str, int]], comp: list[str]) -> list[list[str]]:
    """For each module of a strongly connected component, a shortest cycle through it
    (breadth-first inside the component), deduplicated up to rotation."""
    members = set(comp)
    seen: set[tuple[str, ...]] = set()
    out = []
    for start in comp:
        parent: dict[str, str] = {}
        frontier = [start]
        found = None
        while frontier and found is None:
            nxt = []
            for v in frontier:
                for w in sorted(graph[v]):
                    if w not in members:
                        continue
                    if w == start:
                        found = v
                        break
                    if w not in parent:
                        parent[w] = v
                        nxt.append(w)
                if found is not None:
                    break
            frontier = nxt
        if found is None:  # pragma: no cover - a component always has a cycle
            continue
        path = [found]
        while path[-1] != start:
            path.append(parent[path[-1]])
        cycle = path[::-1]
        i = cycle.index(min(cycle))
        key = tuple(cycle[i:] + cycle[:i])
        if key not in seen:
            seen.add(key)
            out.append(list(key))
    return out


def test_no_import_cycle() -> None:
    cycles = strongly_connected(GRAPH)
    lines = []
    for comp in cycles:
        found = shortest_cycles(GRAPH, comp)
        counts: dict[tuple[str, str], int] = {}
        for cyc in found:
            for edge in zip(cyc, [*cyc[1:], cyc[0]], strict=True):
                counts[edge] = counts.get(edge, 0) + 1
        (a, b), k = max(counts.items(), key=lambda item: (item[1], item[0]))
        lines.append(f"  among {len(comp)} modules ({', '.join(comp)}); the import "
                     f"{a} -> {b} ({_where(GRAPH, a, b)}) is on {k} of the {len(found)} "
                     "shortest cycles:")
        for cyc in found:
            hops = [f"{a} -> {b} ({_where(GRAPH, a, b)})"
                    for a, b in zip(cyc, [*cyc[1:], cyc[0]], strict=True)]
            lines.append("    " + ";  ".join(hops))
    assert not cycles, f"{len(cycles)} import cycle(s) inside src/noisygd:\n" + "\n".join(lines)


def test_no_upward_import() -> None:
    bad = []
    for a in sorted(GRAPH):
        if [*a.split("."), ""][1] not in LAYER_OF:
            continue
        for b in sorted(GRAPH[a]):
            if [*b.split("."), ""][1] in LAYER_OF and layer(b) > layer(a):
                bad.append(f"  {a} (layer {layer(a)}) imports {b} (layer {layer(b)})  "
                           f"({_where(GRAPH, a, b)})")
    table = "\n".join(f"  {i}: {', '.join(n or 'noisygd' for n in names)}"
                      for i, names in enumerate(LAYERS))
    assert not bad, (
        f"{len(bad)} upward import(s); layers, bottom to top:\n{table}\noffending imports:\n"
        + "\n".join(bad)
    )


def _loaded_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print('\\n'.join(sorted(sys.modules)))"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=False)
    assert res.returncode == 0, f"`{statement}` fails:\n{res.stderr[-2000:]}"
    return set(res.stdout.split())


@pytest.mark.parametrize(
    ("statement", "forbidden"),
    [
        ("import noisygd", ("dp_accounting", "noisygd.accounting", "sklearn", "scipy")),
        ("import noisygd.accounting.events", ("dp_accounting",)),
        ("import noisygd.data", ("dp_accounting", "noisygd.accounting")),
        # the UCI names of noisygd.data are forwarded lazily (LAZY_FORWARDS)
        ("import noisygd.data", ("noisygd.data.uci", "noisygd.schema")),
    ],
)
def test_light_imports(statement: str, forbidden: tuple[str, ...]) -> None:
    loaded = _loaded_after(statement)
    heavy = sorted(m for m in loaded for f in forbidden if m == f or m.startswith(f + "."))
    assert not heavy, f"`{statement}` loads {', '.join(heavy)}"
