"""The ``Examples`` sections of public docstrings run as written (doctest).

Every module of the package whose source holds a ``>>>`` example is collected, so a new example
is tested without being listed here. No example reads the UCI data files (``public_centring``'s
reads the bundled schema only), so every module runs here, with or without the data folder.
"""

import doctest
import importlib
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def _modules_with_examples() -> list[str]:
    out = []
    for path in sorted((SRC / "noisygd").rglob("*.py")):
        if ">>> " in path.read_text(encoding="utf-8"):
            parts = list(path.relative_to(SRC).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out.append(".".join(parts))
    return out


MODULES = _modules_with_examples()


def test_examples_are_found():
    assert "noisygd.objectives.centred" in MODULES and len(MODULES) >= 4


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an example that writes a file writes it here
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
