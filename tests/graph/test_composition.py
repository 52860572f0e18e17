"""Composition from one import (API-GRAPH-010/020): the graph names from ``llamabot.graph``; FuncNode takes a
Tool, a ``@tool`` function or a plain typed function."""

from __future__ import annotations

from llamabot import tool
from llamabot.tools.tool import Tool


def test_api_graph_010_the_graph_names_come_from_one_import():
    from llamabot.graph import AsyncFlow, AsyncNode, DecideNode, Flow, FuncNode, GraphBot, Node

    assert all(callable(x) for x in (AsyncFlow, AsyncNode, DecideNode, Flow, FuncNode, GraphBot, Node))


def test_api_graph_020_funcnode_takes_a_tool_a_decorated_function_or_a_plain_function():
    from llamabot.graph import FuncNode

    def add(a: int, b: int) -> int:
        """Add.

        Args:
            a: One.
            b: Two.
        """
        return a + b

    decorated = tool(lambda_free_copy(add))
    for given in (add, decorated, decorated.tool):
        node = FuncNode(given)
        assert isinstance(node.tool, Tool)
        assert node.tool.name == "add"
        assert node.tool.func(a=2, b=3) == 5
    assert not hasattr(add, "tool")  # a plain function is described, not changed


def lambda_free_copy(func):
    def add(a: int, b: int) -> int:
        """Add.

        Args:
            a: One.
            b: Two.
        """
        return func(a, b)

    return add
