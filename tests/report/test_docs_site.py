"""The documentation site: ``mkdocs build --strict`` passes; every example of the new pages runs.

The new pages (getting started, reports, accountants compared, guarantees, migration, home) are
run in one empty folder, in site order: each ``python`` block is executed (one namespace per
page), each ``toml`` block with a ``title="FILE"`` is written to FILE, and each ``console`` line
``$ noisygd ...`` is run through :func:`noisygd.cli.main` and must exit 0. A block importing a
library that is not installed (diffprivlib, Opacus: the migration page's peers) is skipped and
named in the skip reason. The accountants page's table is recomputed.
"""

from __future__ import annotations

import importlib.util
import math
import re
import shlex
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
#: The pages written with the site (the older pages' examples are run by their owners' tests).
NEW_PAGES = ("getting_started.md", "report.md", "accountants.md", "guarantees.md",
             "migration.md", "index.md")
FENCE = re.compile(r"^```([a-z]+)([^\n]*)\n(.*?)^```", flags=re.S | re.M)


def blocks(page: str) -> list[tuple[str, str, str]]:
    """``(language, info string, code)`` of every fenced block of ``docs/page``."""
    text = (DOCS / page).read_text(encoding="utf-8")
    return [(m.group(1), m.group(2).strip(), m.group(3)) for m in FENCE.finditer(text)]


def _missing_imports(code: str) -> list[str]:
    names = re.findall(r"^\s*(?:from|import)\s+([A-Za-z_][\w]*)", code, flags=re.M)
    return sorted({n for n in names if importlib.util.find_spec(n) is None})


def _run_page(page: str, skipped: list[str]) -> int:
    """Run the examples of ``page`` in the current folder; return how many ran."""
    from noisygd.cli import main

    namespace: dict[str, object] = {"__name__": f"docs_{page}"}
    ran = 0
    for lang, info, code in blocks(page):
        if lang == "python":
            missing = _missing_imports(code)
            if missing:
                skipped.append(f"{page}: a block needs {', '.join(missing)}")
                continue
            exec(compile(code, f"docs/{page}", "exec"), namespace)
            ran += 1
        elif lang == "toml":
            title = re.search(r'title="([^"]+)"', info)
            if title:
                Path(title.group(1)).write_text(code, encoding="utf-8")
                ran += 1
        elif lang == "console":
            for line in code.splitlines():
                if line.startswith("$ noisygd "):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # the draft's PrivacyLeakWarning
                        assert main(shlex.split(line[len("$ noisygd "):])) == 0, line
                    ran += 1
    return ran


def test_the_new_pages_are_in_the_site_navigation():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in NEW_PAGES:
        assert f" {page}" in nav, page
    assert (DOCS / "images" / "report.png").is_file()


def test_every_example_of_the_new_pages_runs(tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)
    skipped: list[str] = []
    counts = {page: _run_page(page, skipped) for page in NEW_PAGES}
    capsys.readouterr()
    assert counts["getting_started.md"] == 8  # 3 python blocks, 1 toml file, 4 commands
    for name in ("clients.json", "clients.html", "clients.epsilon_delta.png",
                 "clients.epsilon_steps.png", "predictions.csv", "report.html",
                 "clients-later.html"):
        assert (tmp_path / name).is_file(), name
    assert "share of mu^2" in (tmp_path / "clients.html").read_text(encoding="utf-8")
    # only the peers' examples may be left out (test_peer_examples runs them when installed)
    assert all(s.startswith("migration.md: ") for s in skipped), skipped


PEERS = ("diffprivlib", "torch", "opacus")


def test_peer_examples_of_the_migration_page(tmp_path, monkeypatch):
    missing = [m for m in PEERS if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (make bench-env installs them in "
                    ".venv-peers)")
    monkeypatch.chdir(tmp_path)
    skipped: list[str] = []
    assert _run_page("migration.md", skipped) == 4
    assert not skipped


def _table_script():
    spec = importlib.util.spec_from_file_location("accountants_table",
                                                  DOCS / "site" / "accountants_table.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def _page_table() -> list[list[str]]:
    text = (DOCS / "accountants.md").read_text(encoding="utf-8")
    body = text.split("<!-- accountants-table:begin -->")[1].split(
        "<!-- accountants-table:end -->")[0]
    rows = [line.strip().strip("|").split("|") for line in body.strip().splitlines()]
    return [[c.strip() for c in r] for r in rows[2:]]


def test_accountants_page_matches_the_accountants():
    script = _table_script()
    recomputed = script.compute()
    page = _page_table()
    assert len(page) == len(recomputed)
    for cells, row in zip(page, recomputed, strict=True):
        assert cells[0] == row["method"]
        for name, shown in zip(script.COLUMNS, cells[2:], strict=True):
            expected = script.cell(row["epsilon"][name])
            if name == row["tightest"]:
                expected = f"**{expected}**"
            assert shown == expected, (row["method"], name)


def test_accountants_page_first_row_is_the_gdp_closed_form():
    # 100 Gaussian steps at noise multiplier 10: mu = sqrt(100)/10 = 1, and epsilon of 1-GDP
    # at delta solves delta = Phi(-eps + 1/2) - e^eps Phi(-eps - 1/2) (Dong, Roth, Su 2022).
    from scipy.optimize import brentq
    from scipy.stats import norm

    eps = brentq(lambda e: norm.cdf(-e + 0.5) - math.exp(e) * norm.cdf(-e - 0.5) - 1e-5,
                 0.0, 50.0, xtol=1e-12)
    first = _page_table()[0]
    assert first[0] == "NoisyGD"
    assert first[2] == f"**{eps:.4g}**"


def test_mkdocs_build_strict(tmp_path):
    for module in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        if importlib.util.find_spec(module.split(".")[0]) is None:
            pytest.skip(f"{module} is not installed (pip install -e '.[docs]')")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
         str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
        env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    site = tmp_path / "site"
    for page in NEW_PAGES:
        assert (site / page.replace(".md", ".html")).is_file(), page
    assert (site / "images" / "report.png").is_file()
    api = (site / "api" / "estimators.html").read_text(encoding="utf-8")
    assert "DPLogisticRegression" in api and "row_norm_bound" in api
    raw, empty = [], []
    for page in sorted(site.rglob("*.html")):
        html = page.read_text(encoding="utf-8")
        raw += [f"{page.relative_to(site)}: {m}" for m in raw_roles(html)]
        if page.parent.name == "api":
            empty += [f"{page.relative_to(site)}: {c}" for c in undocumented_classes(html)]
    assert not raw, "Sphinx roles shown as raw text:\n" + "\n".join(raw[:40])
    assert not empty, "classes rendered without a docstring:\n" + "\n".join(empty)


#: A Sphinx role or directive left in rendered HTML (``:func:<code>x</code>``, ``:math:`x```,
#: ``.. math::``).
RAW_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj|const|math|ref|doc"
                      r"|term|pep):(?:<code>|`)|<p>\.\. [a-z]+::")
CLASS_BLOCK = re.compile(r'<div class="doc doc-object doc-class">\s*<h\d id="([^"]+)"')


def raw_roles(html: str) -> list[str]:
    """Every raw role or directive of a built page (the text around it)."""
    return [html[max(0, m.start() - 30):m.end() + 30].replace("\n", " ")
            for m in RAW_ROLE.finditer(html)]


def undocumented_classes(html: str) -> list[str]:
    """Classes of an API page whose entry has no docstring text: nothing but the bases
    between the class's contents and its members (or the next object)."""
    out = []
    for m in CLASS_BLOCK.finditer(html):
        start = html.find('class="doc doc-contents', m.end())
        stops = [i for i in (html.find('<div class="doc doc-children"', start),
                             html.find('<div class="doc doc-object', start)) if i != -1]
        body = html[start:min(stops) if stops else len(html)]
        body = re.sub(r'<p class="doc doc-class-bases">.*?</p>', "", body, flags=re.S)
        if not re.sub(r"<[^>]+>|\s+", "", body.split(">", 1)[-1]):
            out.append(m.group(1))
    return out


def test_the_site_checks_see_raw_roles_and_empty_classes():
    """The two checks of :func:`test_mkdocs_build_strict` on small pieces of HTML, and the
    hook that renders the roles (docs/site/sphinx_roles.py)."""
    sys.path.insert(0, str(DOCS / "site"))
    try:
        from sphinx_roles import render_roles
    finally:
        sys.path.pop(0)
    raw = ("<p>see :func:<code>fit</code> and :class:<code>~a.b.Solver</code>, "
           ":math:<code>\\mu</code></p><td><code>:data:`BETA` (1e-3)</code></td>")
    assert len(raw_roles(raw)) == 4
    rendered = render_roles(raw + "<p>.. math::</p>\n<pre>x</pre> :pep:<code>562</code>"
                            "<p>.. math:: \\mu = 1</p>")
    assert raw_roles(rendered) == []
    assert "<code>Solver</code>" in rendered and "PEP 562" in rendered
    assert "<code>BETA (1e-3)</code>" in rendered and "<code>\\mu = 1</code>" in rendered
    empty = ('<div class="doc doc-object doc-class">\n<h2 id="m.A" class="doc doc-heading">A</h2>'
             '<div class="doc doc-contents "><p class="doc doc-class-bases">Bases: B</p>\n'
             '<div class="doc doc-children"></div></div></div>')
    full = empty.replace("Bases: B</p>", "Bases: B</p><p>What A does.</p>")
    assert undocumented_classes(empty) == ["m.A"] and undocumented_classes(full) == []


# ------------------------------------------------------------- the other pages of the site
#: Pages whose python blocks are fragments (they use names defined elsewhere: ``X``,
#: ``oracle``, ``LogisticLoss`` ...). /tmp/team/requests-report.md asks their owners to make
#: them runnable; this test fails when one starts to run, so that it is taken off the list.
FRAGMENTS: frozenset[str] = frozenset()
#: Pages whose examples need more than a minute (audit.md: 10,000 audited runs, about 45 s
#: alone on an idle core) or the UCI data.
SLOW_PAGES = frozenset({"audit.md"})
DATA_PAGES = frozenset({"data.md"})
OTHER_PAGES = sorted(p.name for p in DOCS.glob("*.md")
                     if p.name not in NEW_PAGES and any(lang == "python"
                                                        for lang, _, _ in blocks(p.name)))


def _marks(page: str) -> list[pytest.MarkDecorator]:
    return ([pytest.mark.slow] if page in SLOW_PAGES else []) + (
        [pytest.mark.data] if page in DATA_PAGES else [])


@pytest.mark.parametrize("page", [pytest.param(p, marks=_marks(p)) for p in OTHER_PAGES])
def test_python_examples_of_the_other_pages(page, tmp_path, monkeypatch, capsys):
    # cwd: an empty folder beside which examples/ and ../shared/ are as in the repository
    work = tmp_path / "repo"
    work.mkdir()
    (work / "examples").symlink_to(ROOT / "examples")
    if (ROOT.parent / "shared").is_dir():
        (tmp_path / "shared").symlink_to(ROOT.parent / "shared")
    if page in DATA_PAGES and not (ROOT.parent / "shared" / "data" / "uci").is_dir():
        pytest.skip("needs ../shared/data/uci")
    monkeypatch.chdir(work)
    namespace: dict[str, object] = {"__name__": f"docs_{page}"}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for lang, _, code in blocks(page):
                if lang == "python":
                    exec(compile(code, f"docs/{page}", "exec"), namespace)
    except NameError as exc:
        if page in FRAGMENTS:
            pytest.skip(f"docs/{page} holds a fragment, not a runnable example: {exc}")
        raise
    capsys.readouterr()
    assert page not in FRAGMENTS, f"docs/{page} now runs: take it off FRAGMENTS"
