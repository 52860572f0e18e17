"""PocketFlow flows with strict routing, and a node usable in both sync and async flows.

pocketflow's ``Flow`` only *warns* when a node returns an action that has no edge, then silently ends the run.
Here a ``None`` action follows the ``"default"`` edge when there is one (as in pocketflow) and otherwise ends
the flow quietly (that is how a terminal node stops); a named action without an edge raises
:class:`GraphRoutingError` naming the node, the action and the edges it has.
"""

from __future__ import annotations

import copy
from typing import Any

import pocketflow

from llamabot.errors import LlamabotError
from llamabot.observe.tracing import OpenSpan, close_span, start_span


class GraphRoutingError(LlamabotError, RuntimeError):
    """A node returned an action for which it has no outgoing edge."""


def node_label(node: Any) -> str:
    """A readable name for a node: its ``name`` attribute, else its class name."""
    return getattr(node, "name", None) or type(node).__name__


def next_node(current: Any, action: str | None) -> Any:
    """The node ``current`` hands over to for ``action`` (``None``: the flow ends), with strict routing."""
    following = current.successors.get(action or "default")
    if following is None:
        if action is None:  # no action and no default edge: the flow ends here
            return None
        edges = ", ".join(repr(a) for a in current.successors) or "none"
        raise GraphRoutingError(f"node {node_label(current)!r} returned action {action!r}, but its edges are: {edges}")
    return following


def _copied(node: Any, params: dict[str, Any]) -> Any:
    """The copy of a node that is not a :class:`DualNode`, given the flow's params, exactly as pocketflow makes
    one for every step. A DualNode keeps no per-run attributes and its ``params`` are its own: the flows run it
    itself (they test ``__copy__ is _SAME`` before calling this)."""
    node = copy.copy(node)
    node.set_params(params)
    return node


class Flow(pocketflow.Flow):
    """A sync flow: ``None`` ends it, an unknown action raises :class:`GraphRoutingError`.

    Its walk is pocketflow's, minus the per-step copy and ``set_params`` for :class:`DualNode`s (as in
    :class:`AsyncFlow`): pocketflow's ``set_params`` on a node that is not copied would overwrite the shared
    node's own ``params`` on every run.
    """

    def get_next_node(self, curr: Any, action: str | None) -> Any:
        return next_node(curr, action)

    def run_from(self, node: Any, shared: dict[str, Any]) -> Any:
        """Walk the graph from ``node`` (e.g. the node after a checkpoint) instead of the start node."""
        return self._orch(shared, start=node)

    def _orch(self, shared: dict[str, Any], params: dict[str, Any] | None = None, start: Any = None) -> Any:
        params = params or {**self.params}
        current, action = start or self.start_node, None
        while current is not None:
            if getattr(type(current), "__copy__", None) is not _SAME:  # not a DualNode: copy it, as pocketflow does
                current = _copied(current, params)
            action = current._run(shared)
            current = next_node(current, action)
        return action


class AsyncFlow(pocketflow.AsyncFlow):
    """An async flow with the same strict routing as :class:`Flow`.

    Its walk is pocketflow's, minus the per-step copy and ``set_params`` for :class:`DualNode`s, which keep
    no per-run attributes (other nodes are copied and given the params exactly as pocketflow does).
    """

    def get_next_node(self, curr: Any, action: str | None) -> Any:
        return next_node(curr, action)

    async def run_from_async(self, node: Any, shared: dict[str, Any]) -> Any:
        """Walk the graph from ``node`` (e.g. the node after a checkpoint) instead of the start node."""
        return await self._orch_async(shared, start=node)

    async def _orch_async(self, shared: dict[str, Any], params: dict[str, Any] | None = None,
                          start: Any = None) -> Any:
        params = params or {**self.params}
        current, action = start or self.start_node, None
        while current is not None:
            if getattr(type(current), "__copy__", None) is not _SAME:  # not a DualNode: copy it, as pocketflow does
                current = _copied(current, params)
            if isinstance(current, pocketflow.AsyncNode):
                action = await current._run_async(shared)
            else:
                action = current._run(shared)
            current = next_node(current, action)
        return action


class DualNode(pocketflow.AsyncNode):
    """A node that runs in a sync :class:`Flow` (``prep``/``exec``/``post``) and in an :class:`AsyncFlow`
    (``prep``/``exec_async``/``post``). Subclasses write ``prep`` and ``post`` once; only ``exec`` has twins, and
    a subclass that writes only ``exec`` runs it on the async path too.

    Each step is a span of the run (``span_kind``/``span_category``; ``span_kind = None`` records none), opened
    after ``prep`` with :meth:`span_attributes` and closed after ``post`` with the chosen ``action``: that is
    how the run's hooks see node starts and ends. The node's span is the active span while ``exec`` runs, so
    model calls nest under it.

    A DualNode keeps no per-run state in attributes (all of it lives in ``shared``), so the per-step
    ``copy.copy`` pocketflow makes of every node (to protect per-run attributes) is unnecessary: ``__copy__``
    returns the node itself, which saves a third of the engine's cost per step. ``max_retries`` stays 1 for the
    same reason (pocketflow's sync retry loop counts retries on the node).
    """

    span_kind: str | None = "node"
    span_category: str = "node"
    span_name: str | None = None  # default: the node's label

    def __copy__(self) -> DualNode:
        return self

    def span_attributes(self, prep_res: Any) -> dict[str, Any] | None:
        """Attributes of this step's span, from what ``prep`` returned (none by default; ``None``: no span)."""
        return {}

    async def exec_async(self, prep_res: Any) -> Any:
        """The async ``exec``: by default the sync ``exec``, so a node that writes only ``exec`` works under
        :class:`AsyncFlow` (override it to await a model or an async tool)."""
        return self.exec(prep_res)

    def _open(self, shared: Any, prep_res: Any) -> OpenSpan | None:
        """Open this step's span (``None``: it records none, e.g. a decision that only pops a queued call)."""
        attributes = self.span_attributes(prep_res)
        if attributes is None:
            return None
        return start_span(self.span_name or node_label(self), self.span_kind, self.span_category, shared, attributes)

    # The two paths below differ only in how exec is called (tests/graph/test_flow_twins.py walks random graphs
    # both ways and compares the steps).
    def _run(self, shared: dict[str, Any]) -> Any:  # the sync path, as pocketflow.Node._run
        prep_res = self.prep(shared)
        opened = None if self.span_kind is None else self._open(shared, prep_res)
        try:
            exec_res = self.exec(prep_res) if self.max_retries == 1 else pocketflow.Node._exec(self, prep_res)
            action = self.post(shared, prep_res, exec_res)
        except BaseException as exc:
            close_span(opened, shared, exc)
            raise
        if opened is not None:  # the span ends with the action chosen
            opened[0].attributes["action"] = action
            close_span(opened, shared)
        return action

    async def _run_async(self, shared: dict[str, Any]) -> Any:  # the async path, without pocketflow's extra layers
        prep_res = self.prep(shared)
        opened = None if self.span_kind is None else self._open(shared, prep_res)
        try:
            exec_res = await (self.exec_async(prep_res) if self.max_retries == 1 else self._exec(prep_res))
            action = self.post(shared, prep_res, exec_res)
        except BaseException as exc:
            close_span(opened, shared, exc)
            raise
        if opened is not None:
            opened[0].attributes["action"] = action
            close_span(opened, shared)
        return action

    async def prep_async(self, shared: dict[str, Any]) -> Any:
        return self.prep(shared)

    async def post_async(self, shared: dict[str, Any], prep_res: Any, exec_res: Any) -> Any:
        return self.post(shared, prep_res, exec_res)


#: ``DualNode.__copy__``: a node whose class has it is run itself, not copied (see :func:`_copied`).
_SAME = DualNode.__copy__
