"""The ``Examples`` sections of public docstrings run as written (doctest)."""

import doctest

import pytest

import noisygd.data.uci
import noisygd.objectives.centred


@pytest.mark.parametrize("module", [noisygd.objectives.centred, noisygd.data.uci])
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
