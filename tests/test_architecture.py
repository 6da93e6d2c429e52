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
    ("solvers", "planning", "planning_langevin", "training", "tuning", "torch"),
    ("data",),
    ("report",),
    ("estimators", "dask"),
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


# --------------------------------------------------------------- one home for each rule
#
# Issue 20, items 1, 4 and 5: a rule written in one place. Each check walks the syntax tree of
# every module (nothing is imported) and fails naming file and line; each has a test on a small
# source showing that it sees what it must refuse.

#: The home of the clipped-sum sensitivity rule (1 under add/remove, 2 under replace-one).
SENSITIVITY_HOME = "noisygd.accounting.events"
#: Names of a per-example bound that ``2 * name`` would turn into a replace-one sensitivity.
_BOUND_NAMES = {"l", "lip", "lipschitz", "clip", "g_bound"}
#: Modules allowed to draw Gaussian variates directly: the noise homes (``mechanisms``; the
#: torch backend's noise sources, ``noisygd.torch.noise``, whose ``TorchNoise`` draws
#: ``torch.randn`` on the parameters' device, its NumPy and secure sources calling
#: ``mechanisms``) and reproductions that simulate data (not noise).
NOISE_HOMES = ("noisygd.mechanisms", "noisygd.torch.noise", "noisygd.reproductions.hong_dynamic")
#: Private attributes that carried a privacy input (issue 20 item 1): only the estimator that
#: owns one may touch it, and only on ``self``.
PRIVACY_ATTRIBUTES = {"_prior_events": "noisygd.estimators"}


def _is_two(node: ast.AST) -> bool:
    return (isinstance(node, ast.Constant) and not isinstance(node.value, bool)
            and isinstance(node.value, int | float) and node.value == 2)


def _identifier(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "float" and node.args:
        return _identifier(node.args[0])
    return None


def sensitivity_literals(source: str) -> list[int]:
    """Lines writing the replace-one sensitivity as a literal: ``sensitivity=2``,
    ``2 * L`` (``L``, ``lipschitz``, ``clip``, ...), ``1 if ... else 2``."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.keyword) and node.arg == "sensitivity" and _is_two(node.value):
            lines.append(node.value.lineno)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            for a, b in ((node.left, node.right), (node.right, node.left)):
                name = _identifier(b)
                if _is_two(a) and name is not None and name.lower() in _BOUND_NAMES:
                    lines.append(node.lineno)
        elif isinstance(node, ast.IfExp):
            values = {getattr(node.body, "value", None), getattr(node.orelse, "value", None)}
            if values == {1, 2} and "Neighbouring" in ast.unparse(node.test):
                lines.append(node.lineno)
    return sorted(set(lines))


def direct_noise_draws(source: str) -> list[int]:
    """Lines calling ``.standard_normal(...)``, ``.normal(...)`` or torch's ``.randn(...)``,
    ``.randn_like(...)``, ``.normal_(...)`` (a Gaussian draw)."""
    return sorted({node.lineno for node in ast.walk(ast.parse(source))
                   if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                   and node.func.attr in ("standard_normal", "normal", "randn", "randn_like",
                                          "normal_")})


def solver_name_comparisons(source: str) -> list[int]:
    """Lines comparing a solver's ``name`` (``solver.name == ...``, ``getattr(solver,
    "name") != ...``, ``self._solver.name in ...``)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        for side in (node.left, *node.comparators):
            if isinstance(side, ast.Attribute) and side.attr == "name":
                owner = ast.unparse(side.value)
            elif (isinstance(side, ast.Call) and getattr(side.func, "id", None) == "getattr"
                  and len(side.args) >= 2 and getattr(side.args[1], "value", None) == "name"):
                owner = ast.unparse(side.args[0])
            else:
                continue
            if "solver" in owner.lower():
                lines.append(node.lineno)
    return sorted(set(lines))


def private_privacy_inputs(module: str, source: str) -> list[int]:
    """Lines touching a :data:`PRIVACY_ATTRIBUTES` attribute from outside its owner, or on an
    object other than ``self`` (also through ``__dict__`` or ``setattr``)."""
    tree = ast.parse(source)
    parent = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in PRIVACY_ATTRIBUTES:
            name, on_self = node.attr, ast.unparse(node.value) == "self"
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and node.value in PRIVACY_ATTRIBUTES):
            # a name given to getattr/setattr/hasattr/delattr, or a key of ``x.__dict__``
            name, use = node.value, parent.get(node)
            if isinstance(use, ast.Call) and getattr(use.func, "id", None) in (
                    "getattr", "setattr", "hasattr", "delattr"):
                on_self = bool(use.args) and ast.unparse(use.args[0]) == "self"
            elif isinstance(use, ast.Call) and isinstance(use.func, ast.Attribute):
                on_self = ast.unparse(use.func.value) == "self.__dict__"
            elif isinstance(use, ast.Compare):
                on_self = all(ast.unparse(c) == "self.__dict__" for c in use.comparators)
            else:
                on_self = False
        else:
            continue
        owner = PRIVACY_ATTRIBUTES[name]
        if not (module == owner or module.startswith(owner + ".")) or not on_self:
            lines.append(node.lineno)
    return sorted(set(lines))


def _offences(check, skip: tuple[str, ...] = ()) -> list[str]:
    out = []
    for module, path in sorted(MODULES.items()):
        if path.suffix != ".py" or any(module == s or module.startswith(s + ".") for s in skip):
            continue
        source = path.read_text()
        found = check(module, source)
        out += [f"  {path.relative_to(SRC.parent)}:{line}" for line in found]
    return out


def test_the_rule_detectors_see_what_they_refuse() -> None:
    src = ("def f(L, lipschitz, clip, rel):\n"
           "    a = Gaussian(z, sensitivity=2.0)\n"                        # 2
           "    b = 2.0 * L\n"                                             # 3
           "    c = float(lipschitz) * 2\n"                                # 4
           "    d = 1.0 if rel is Neighbouring.ADD_REMOVE else 2.0\n"      # 5
           "    e = 2.0 * eta - beta\n"                                    # not a bound
           "    f = rng.standard_normal(3) + rng.normal(0, 1) + torch.randn(3)\n"  # 7
           "    g = solver.name == 'noisy_gd'\n"                           # 8
           "    h = getattr(self._solver, 'name', None) != 'x'\n"          # 9
           "    est._prior_events = [a]\n"                                 # 10
           "    est.__dict__.pop('_prior_events', None)\n")                # 11
    assert sensitivity_literals(src) == [2, 3, 4, 5]
    assert direct_noise_draws(src) == [7]
    assert solver_name_comparisons(src) == [8, 9]
    assert private_privacy_inputs("noisygd.schema.fitting", src) == [10, 11]
    assert private_privacy_inputs("noisygd.estimators", (
        "self._prior_events = x\n"
        "a = getattr(self, '_prior_events', None)\n"
        "b = self.__dict__.get('_prior_events')\n"
        "c = '_prior_events' in self.__dict__\n")) == []
    assert private_privacy_inputs("noisygd.estimators", "getattr(est, '_prior_events')\n") == [1]
    assert private_privacy_inputs("noisygd.estimators._base", "self._prior_events = x\n") == []
    assert private_privacy_inputs("noisygd.estimatorsx", "self._prior_events = x\n") == [1]


def test_the_sensitivity_rule_has_one_home() -> None:
    bad = _offences(lambda m, s: sensitivity_literals(s), skip=(SENSITIVITY_HOME,))
    assert not bad, ("the clipped-sum sensitivity written as a literal (use "
                     "Neighbouring.clipped_sum_sensitivity):\n" + "\n".join(bad))


def test_every_noise_draw_goes_through_the_mechanisms() -> None:
    bad = _offences(lambda m, s: direct_noise_draws(s), skip=NOISE_HOMES)
    assert not bad, ("a Gaussian draw outside noisygd.mechanisms (call "
                     "noisygd.mechanisms.noise.add_gaussian_noise):\n" + "\n".join(bad))


def test_no_behaviour_keyed_on_a_solver_name() -> None:
    bad = _offences(lambda m, s: solver_name_comparisons(s), skip=("noisygd.solvers",))
    assert not bad, ("a comparison of a solver's name outside noisygd.solvers (add a Solver "
                     "class attribute instead):\n" + "\n".join(bad))


def test_no_privacy_input_through_a_private_attribute() -> None:
    bad = _offences(private_privacy_inputs)
    assert not bad, ("a privacy input passed through a private attribute (pass it as an "
                     "argument, e.g. fit(..., prior_events=...)):\n" + "\n".join(bad))
