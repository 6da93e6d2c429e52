"""MkDocs hook: Sphinx roles and directives of the docstrings rendered as plain code.

The docstrings are numpydoc with Sphinx roles (``:func:`fit_private```, ``:math:`\\mu^2```),
which mkdocstrings renders as text followed by code (``:func:<code>fit_private</code>``). This
hook drops the role, keeps the code, and writes a ``~``-shortened target by its last name
(``:class:`~noisygd.solvers.Solver``` -> ``Solver``); a ``.. math::`` line before its indented
block (already rendered as a code block) is dropped. ``:pep:`562``` becomes "PEP 562".
tests/report/test_docs_site.py fails on a role left in a built page.
"""

from __future__ import annotations

import re
from typing import Any

#: Roles of the docstrings (Python domain, math, PEP).
ROLE = re.compile(
    r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj|const|math|ref|doc|term|pep)"
    r":<code>(~?)([^<]*)</code>")
#: A role left inside code (a default value written with one: ``:data:`X` (1e-3)``).
CODE_ROLE = re.compile(
    r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj|const|math|ref|doc|term):`(~?)([^`]*)`")
DIRECTIVE = re.compile(r"<p>\.\. (?:math|note|warning)::</p>\s*")
#: A one-line ``.. math:: formula`` (the formula in the same paragraph).
INLINE_MATH = re.compile(r"<p>\.\. math::\s+(.*?)</p>", flags=re.S)


def _role(match: re.Match[str]) -> str:
    text = match.group(2)
    if match.group(0).startswith(":pep:"):
        return f"PEP {text}"
    if match.group(1):  # ~a.b.c -> c
        text = text.rsplit(".", 1)[-1]
    return f"<code>{text}</code>"


def render_roles(html: str) -> str:
    """``html`` with every Sphinx role and ``.. math::`` line rendered as described above."""
    html = CODE_ROLE.sub(lambda m: m.group(2).rsplit(".", 1)[-1] if m.group(1)
                         else m.group(2), html)
    html = INLINE_MATH.sub(r"<p><code>\1</code></p>", DIRECTIVE.sub("", html))
    return ROLE.sub(_role, html)


def on_page_content(html: str, **kwargs: Any) -> str:
    """MkDocs' ``on_page_content`` event."""
    return render_roles(html)
