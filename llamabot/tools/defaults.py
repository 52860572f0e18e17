"""The default tools every agent graph gets: two terminal tools and two read-only helpers. None of them blocks
(``blocking=False``): async runs call them on the event loop, without a worker thread."""

from __future__ import annotations

from datetime import date
from typing import Any

from llamabot.errors import excerpt
from llamabot.tools.tool import tool


@tool(loopback_name=None, blocking=False)
def respond_to_user(response: str) -> str:
    """Give the final answer to the user. Call this once you know the answer.

    Args:
        response: The complete answer, written for the user.
    """
    return response


@tool(loopback_name=None, blocking=False)
def return_object_to_user(variable_name: str, _globals_dict: dict[str, Any] | None = None) -> Any:
    """Return a Python object from the caller's variables to the user, instead of a text answer.

    Args:
        variable_name: The name of the variable to return.
    """
    namespace = _globals_dict or {}
    if variable_name.startswith("_") or variable_name not in namespace:  # "_" names are private, as in inspect_globals
        available = ", ".join(sorted(k for k in namespace if not k.startswith("_"))) or "(none)"
        raise KeyError(f"no variable named {excerpt(variable_name, 80)}; available variables: {available}")
    return namespace[variable_name]


@tool(blocking=False)
def today_date() -> str:
    """Today's date, in ISO format (YYYY-MM-DD)."""
    return date.today().isoformat()


@tool(blocking=False)
def inspect_globals(_globals_dict: dict[str, Any] | None = None) -> str:
    """List the caller's variables with their types, so you can pick one to use or return."""
    namespace = _globals_dict or {}
    names = sorted(k for k in namespace if not k.startswith("_"))
    if not names:
        return "No variables are available."
    return "\n".join(f"{k}: {type(namespace[k]).__name__}" for k in names)


DEFAULT_TOOLS = (respond_to_user, return_object_to_user, today_date, inspect_globals)
