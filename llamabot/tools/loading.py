"""Load tools named as ``module:attribute`` (the CLI's ``--tool``), with the standard library's resolver."""

from __future__ import annotations

import pkgutil
from collections.abc import Iterable

from llamabot.errors import ToolDefinitionError
from llamabot.tools.tool import Tool, as_tool


def load_tools(specs: Iterable[str]) -> list[Tool]:
    """``["pkg.mod:name", ...]`` -> the tools they name; a name may be one ``@tool`` or a list/tuple of them.

    Raises :class:`ToolDefinitionError` naming the spec when it is malformed, cannot be imported, or is not a tool.
    """
    loaded: list[Tool] = []
    for spec in specs:
        module_name, sep, attribute = spec.partition(":")
        if not module_name or not sep or not attribute:
            raise ToolDefinitionError(f"{spec!r}: use module:attribute, e.g. llamabot.toolkits.calculator:add")
        try:
            value = pkgutil.resolve_name(spec)
        except (ImportError, AttributeError, ValueError) as exc:
            raise ToolDefinitionError(f"cannot load {spec!r}: {exc}") from exc
        for item in value if isinstance(value, (list, tuple)) else [value]:
            try:
                loaded.append(as_tool(item))
            except TypeError as exc:
                raise ToolDefinitionError(f"{spec!r}: {exc}") from exc
    return loaded
