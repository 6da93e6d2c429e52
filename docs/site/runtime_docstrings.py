"""Griffe extension: a class whose docstring is an expression gets its built ``__doc__``.

The estimators share their parameter sections (``__doc__ = '...' + _COMMON_DOC + ...``),
which static analysis cannot read: mkdocstrings would show the classes without a docstring.
For such a class (a ``__doc__`` member and no literal docstring) this extension imports the
module and uses the class's ``__doc__``. tests/report/test_docs_site.py fails on an empty class
page.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import griffe


class RuntimeDocstrings(griffe.Extension):
    """Use the runtime ``__doc__`` of a class whose docstring is an expression."""

    def on_class_members(self, *, cls: griffe.Class, agent: Any = None, **kwargs: Any) -> None:
        if cls.docstring is not None or "__doc__" not in cls.members:
            return
        try:
            obj = getattr(importlib.import_module(cls.module.path), cls.name)
        except (ImportError, AttributeError):
            return
        if obj.__doc__:
            cls.docstring = griffe.Docstring(
                inspect.cleandoc(obj.__doc__), parent=cls,
                parser=getattr(agent, "docstring_parser", None),
                parser_options=getattr(agent, "docstring_options", None))
            del cls.members["__doc__"]
