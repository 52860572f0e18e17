"""Griffe extension: the docstrings' Sphinx roles (``:class:`~llamabot.tools.Tool```, ``:func:`tool```) become
inline code (`Tool`, `tool`) on the site, as Sphinx would show them, instead of the raw role."""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:class|func|mod|meth|data|attr|exc|obj|const):`(~?)([^`]+)`")


def plain(text: str) -> str:
    """``text`` with each role replaced by its target as code (its last part when the target starts with ``~``)."""
    return _ROLE.sub(lambda m: f"`{m[2].rsplit('.', 1)[-1] if m[1] else m[2]}`", text)


class RstRoles(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain(obj.docstring.value)
