"""The Tree-of-Thoughts state machine (seed ``004_*``, Jido.AI ``TreeOfThoughts.Machine``). Pure: no I/O.

``update(machine, msg, env) -> (machine, directives)`` never mutates its argument and never reads a clock:
the caller passes the time in ``env.now_ms``. States and allowed transitions are in ``TRANSITIONS``.

One search: ``start`` creates the root and asks for ``branching_factor`` thoughts; the reply's thoughts are sent
for evaluation; the scored thoughts become children; then the machine stops (a trusted goal test accepted a
thought, a score reached ``early_success_threshold``, a budget ran out, the best score converged) or expands
the next frontier node (``parallel_expansions`` > 1: the next *wave*, up to that many of the best frontier nodes
expanded side by side, each with its own calls; the next wave starts once every expansion of this one has ended,
so results do not depend on which reply comes first). Three seed weaknesses are fixed (see ``docs/design/tot/LLD.md``): reaching
``max_depth`` closes that branch only; an unreadable score uses the retry budget before any fallback; the
evaluator sees the problem and the path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from llamabot.reasoning.tot.messages import (
    CallLLMStream,
    Directive,
    EvaluateThoughts,
    GenerateThoughts,
    LLMPartial,
    LLMResult,
    Message,
    Phase,
    RequestError,
    Start,
    ThoughtEntry,
    ThoughtsEvaluated,
    ThoughtsGenerated,
    add_usage,
)
from llamabot.reasoning.tot.options import ToTError, ToTOptions, Traversal
from llamabot.reasoning.tot.parsing import parse_continuations, parse_scores, parse_thoughts
from llamabot.reasoning.tot.state import (
    BUSY,
    TRANSITIONS,
    Env,
    Expansion,
    S,
    Status,
    TerminationReason,
    ToTMachine,
    new_machine,
    path_texts,
)
from llamabot.reasoning.tot.tree import (
    ThoughtNode,
    find_best_leaf,
    find_leaves,
    get_children,
    get_node,
    get_path_to_node,
    grow_frontier,
    ranked_leaves,
)

__all__ = [
    "BUSY", "TRANSITIONS", "Env", "Expansion", "Status", "TerminationReason", "ToTError", "ToTMachine", "ToTOptions",
    "Traversal", "find_best_leaf", "find_leaves", "get_children", "get_node", "get_path_to_node",
    "model_calls", "new_machine", "parse_scores", "parse_thoughts", "path_texts", "ranked_leaves", "update",
]

FALLBACK_SCORE = 0.5  # the seed's score for a thought whose score could not be read, once retries are spent


# -- update -------------------------------------------------------------------------------------------------


def update(machine: ToTMachine, msg: Message, env: Env | None = None) -> tuple[ToTMachine, list[Directive]]:
    """Apply ``msg``; return the new machine and the directives to perform. Stale call ids and messages that
    do not fit the current state are ignored (``(machine, [])``); ``start`` while busy gets ``request_error``.
    The reply to a call abandoned when the search ended adds its token usage and nothing else."""
    env = env or Env()
    if isinstance(msg, Start):
        return _on_start(machine, msg, env)
    if not isinstance(msg, (ThoughtsGenerated, ThoughtsEvaluated, LLMResult, LLMPartial)):
        raise ToTError(f"not a Tree-of-Thoughts message: {msg!r}")
    if isinstance(msg, LLMResult) and msg.call_id in machine.abandoned_calls:
        left = tuple(c for c in machine.abandoned_calls if c != msg.call_id)
        return replace(machine, usage=add_usage(machine.usage, msg.usage), abandoned_calls=left), []
    i = next((i for i, e in enumerate(machine.active) if e.call_id == msg.call_id), None)
    if machine.status not in (S.GENERATING, S.EVALUATING) or i is None:
        return machine, []
    exp = machine.active[i]
    if isinstance(msg, LLMPartial):
        if msg.chunk_type != "content" or not isinstance(msg.delta, str):
            return machine, []
        return _set(machine, i, replace(exp, streaming_text=exp.streaming_text + msg.delta)), []
    if isinstance(msg, LLMResult):
        active = machine.active
        if exp.streaming_text:
            active = _swapped(active, i, replace(exp, streaming_text=""))
        usage = add_usage(machine.usage, msg.usage)
        if not msg.ok:
            return _fail(_drop(replace(machine, usage=usage, active=active), i), f"model call failed: {msg.error}", env)
        text = msg.text if msg.text else exp.streaming_text
        if exp.phase == "generation":
            thoughts, mode = parse_thoughts(text)
            return _on_thoughts(replace(machine, usage=usage, active=active, parser_mode=mode), i, thoughts, text, env)
        scores, mode = parse_scores(text, exp.pending_thoughts)
        return _on_scores(replace(machine, usage=usage, active=active, parser_mode=mode), i, scores, text, env,
                          parse_continuations(text, exp.pending_thoughts))
    if isinstance(msg, ThoughtsGenerated) and exp.phase == "generation":
        return _on_thoughts(machine, i, list(msg.thoughts), None, env)
    if isinstance(msg, ThoughtsEvaluated) and exp.phase == "evaluation":
        return _on_scores(machine, i, dict(msg.scores), None, env, dict(msg.continuations))
    return machine, []


def _goto(m: ToTMachine, status: Status, **changes: Any) -> ToTMachine:
    if status is not m.status and status not in TRANSITIONS[m.status]:
        raise ToTError(f"illegal transition {m.status.value} -> {status.value} (a bug in the machine)")
    return replace(m, status=status, **changes)


def _busy(active: tuple[Expansion, ...]) -> Status:
    return S.GENERATING if any(e.phase == "generation" for e in active) else S.EVALUATING


def _set(m: ToTMachine, i: int, exp: Expansion) -> ToTMachine:
    """Expansion ``i`` replaced by ``exp``; the status follows the expansions' phases."""
    active = _swapped(m.active, i, exp)
    return _goto(m, _busy(active), active=active)


def _drop(m: ToTMachine, i: int) -> ToTMachine:
    """Expansion ``i`` ended (the status is left for what comes next)."""
    return replace(m, active=_swapped(m.active, i, None))


def _swapped(active: tuple[Expansion, ...], i: int, exp: Expansion | None) -> tuple[Expansion, ...]:
    """``active`` with expansion ``i`` replaced by ``exp``, or removed (``None``)."""
    return (*active[:i], *((exp,) if exp is not None else ()), *active[i + 1:])


def _on_start(m: ToTMachine, msg: Start, env: Env) -> tuple[ToTMachine, list[Directive]]:
    if m.status in BUSY:
        return m, [RequestError(msg.call_id, "busy", f"a search is already running (status: {m.status.value})")]
    if m.status is not S.IDLE:
        return m, [RequestError(msg.call_id, "finished", f"this search has {m.status.value}; start a new machine")]
    if not isinstance(msg.prompt, str) or not msg.prompt.strip():
        return m, [RequestError(msg.call_id, "invalid", "the problem (start prompt) is empty")]
    root = ThoughtNode("n0", None, msg.prompt, None, (), 0)
    fresh = ToTMachine(options=m.options)
    count = _request_count(fresh.options, 1)
    m = _goto(fresh, S.GENERATING, prompt=msg.prompt, nodes={root.id: root}, root_id=root.id,
              active=(Expansion(root.id, msg.call_id, "generation", count),), started_at_ms=env.now_ms, node_seq=1,
              run_id=msg.call_id)
    return m, [GenerateThoughts(msg.call_id, root.id, msg.prompt, (), count)]


def _request_count(o: ToTOptions, nodes: int) -> int:
    return max(0, min(o.branching_factor, o.max_nodes - nodes))


def model_calls(m: ToTMachine) -> int:
    """The model calls this search has asked for so far (generations, evaluations and repairs)."""
    return 0 if m.run_id is None else m.call_seq + 1


def _calls_left(m: ToTMachine) -> int | None:
    budget = m.options.max_model_calls
    return None if budget is None else budget - model_calls(m)


def _call_id(m: ToTMachine) -> tuple[ToTMachine, str]:
    seq = m.call_seq + 1
    return replace(m, call_seq=seq), f"{m.run_id}.{seq}"


def _request(m: ToTMachine, exp: Expansion) -> GenerateThoughts | EvaluateThoughts:
    path = path_texts(m, exp.node_id)
    if exp.phase == "generation":
        return GenerateThoughts(exp.call_id, exp.node_id, m.prompt or "", path, exp.count)
    return EvaluateThoughts(exp.call_id, exp.node_id, m.prompt or "", path, exp.pending_thoughts)


def _can_retry(m: ToTMachine, i: int, phase: Phase) -> bool:
    """A repair call is left in the retry budget and, with the evaluations this expansion and the others of its
    wave still need, in the model-call budget."""
    left = _calls_left(m)
    needed = (2 if phase == "generation" else 1) + sum(
        1 for j, e in enumerate(m.active) if j != i and e.phase == "generation")
    return m.active[i].request_retries < m.options.max_parse_retries and (left is None or left >= needed)


def _retry(m: ToTMachine, i: int, phase: Phase, raw: str | None, error: str) -> tuple[ToTMachine, list[Directive]]:
    exp = m.active[i]
    request = _request(m, exp)
    m, call_id = _call_id(m)
    m = replace(
        _set(m, i, replace(exp, call_id=call_id, request_retries=exp.request_retries + 1)),
        parse_retries={**m.parse_retries, phase: m.parse_retries.get(phase, 0) + 1},
        parser_errors=(*m.parser_errors, f"{phase}_parse_retry"),
    )
    return m, [CallLLMStream(call_id, phase, request, raw or "", error)]


def _legal(m: ToTMachine, env: Env, path: tuple[str, ...], thoughts: Sequence[Any]) -> tuple[list[str], list[str]]:
    """``thoughts`` proposed after ``path``, stripped, without empties and repeats, that keep the problem's rules
    (``env.step_check``), and the rules the others broke: how proposals and continuations are both admitted."""
    cleaned = list(dict.fromkeys(t.strip() for t in thoughts if isinstance(t, str) and t.strip()))
    if env.step_check is None:
        return cleaned, []
    verdicts = [(text, env.step_check(m.prompt or "", path, text)) for text in cleaned]
    return [text for text, reason in verdicts if not reason], [reason for _, reason in verdicts if reason]


def _on_thoughts(m: ToTMachine, i: int, thoughts: list[str], raw: str | None,
                 env: Env) -> tuple[ToTMachine, list[Directive]]:
    exp = m.active[i]
    cleaned, broken = _legal(m, env, path_texts(m, exp.node_id), thoughts)
    if broken:
        m = replace(m, rejected_steps=(*m.rejected_steps, *broken))
        if not cleaned and _can_retry(m, i, "generation"):
            return _retry(m, i, "generation", raw, "every proposed step breaks the rules: " + "; ".join(broken[:3]))
    cleaned = cleaned[: exp.count]
    if not cleaned:
        if _can_retry(m, i, "generation"):
            return _retry(m, i, "generation", raw, "no thoughts could be read from the reply")
        # Close this branch and go on with the frontier (the seed ended the whole search in error).
        m = replace(m, parser_errors=(*m.parser_errors, "generation_parse_failed"),
                    closed_nodes=(*m.closed_nodes, exp.node_id))
        return _next(_drop(m, i), env)
    entries = tuple(ThoughtEntry(f"t{k}", text) for k, text in enumerate(cleaned, 1))
    m, call_id = _call_id(m)
    m = _set(m, i, replace(exp, phase="evaluation", call_id=call_id, pending_thoughts=entries, request_retries=0))
    return m, [EvaluateThoughts(call_id, exp.node_id, m.prompt or "", path_texts(m, exp.node_id), entries)]


def _on_scores(m: ToTMachine, i: int, scores: dict[str, Any], raw: str | None, env: Env,
               continuations: Mapping[str, Sequence[str]] = MappingProxyType({})) -> tuple[ToTMachine, list[Directive]]:
    exp = m.active[i]
    clean = {}
    for key, value in scores.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value:  # not NaN
            clean[key] = min(max(float(value), 0.0), 1.0)
    missing = [t.id for t in exp.pending_thoughts if t.id not in clean]
    if missing and _can_retry(m, i, "evaluation"):
        return _retry(m, i, "evaluation", raw, f"no score could be read for {', '.join(missing)}")
    if missing:  # the retry budget is spent: the seed's fallback score, recorded in the diagnostics
        m = replace(m, parser_errors=(*m.parser_errors, "evaluation_fallback"),
                    parser_mode="default" if len(missing) == len(exp.pending_thoughts) else m.parser_mode)
    parent = m.nodes[exp.node_id]
    nodes = dict(m.nodes)
    child_ids = []
    for entry in exp.pending_thoughts[: max(0, m.options.max_nodes - len(nodes))]:
        node_id = f"n{m.node_seq + len(child_ids)}"
        nodes[node_id] = ThoughtNode(node_id, parent.id, entry.content, clean.get(entry.id, FALLBACK_SCORE), (),
                                     parent.depth + 1)
        child_ids.append(node_id)
    nodes[parent.id] = replace(parent, children=(*parent.children, *child_ids))
    m = replace(m, nodes=nodes, node_seq=m.node_seq + len(child_ids), active=_swapped(m.active, i, None))
    m, continued = _continued(m, list(zip(child_ids, exp.pending_thoughts[: len(child_ids)], strict=True)), continuations, env)
    return _after_evaluation(m, [m.nodes[c] for c in (*child_ids, *continued)], env)


def _continued(m: ToTMachine, children: list[tuple[str, ThoughtEntry]], continuations: Mapping[str, Sequence[str]],
               env: Env) -> tuple[ToTMachine, list[str]]:
    """The next steps the evaluation reply wrote for its candidates (``continuations``: thought id -> steps),
    added as those candidates' children: each checked by the problem's rules as a proposal is (a broken one is
    dropped and recorded), scored as the candidate it continues (the evaluator's judgement of that candidate),
    within ``max_nodes`` and ``max_depth``. The model wrote every one of them; the machine only files them, so a
    step the evaluator already wrote costs no generation call. Returns the machine and the new node ids."""
    nodes, added, broken = dict(m.nodes), [], []
    for child_id, entry in children:
        child = nodes[child_id]
        if child.depth >= m.options.max_depth or not continuations.get(entry.id):
            continue
        steps, rules = _legal(m, env, path_texts(m, child_id), continuations[entry.id])
        broken += rules
        ids = []
        for step in steps:
            if len(nodes) >= m.options.max_nodes:
                break
            node_id = f"n{m.node_seq + len(added)}"
            nodes[node_id] = ThoughtNode(node_id, child_id, step, child.score, (), child.depth + 1)
            ids.append(node_id)
            added.append(node_id)
        if ids:
            nodes[child_id] = replace(child, children=(*child.children, *ids))
    if not added and not broken:
        return m, []
    return replace(m, nodes=nodes, node_seq=m.node_seq + len(added), continued_nodes=(*m.continued_nodes, *added),
                   rejected_steps=(*m.rejected_steps, *broken)), added


def _after_evaluation(m: ToTMachine, children: list[ThoughtNode], env: Env) -> tuple[ToTMachine, list[Directive]]:
    o = m.options
    if env.goal_test is not None:
        solved = [c for c in children if env.goal_test(m.prompt or "", path_texts(m, c.id))]
        if solved:
            return _complete(m, TerminationReason.SUCCESS, max(solved, key=lambda c: c.score or 0.0).id, env)
    hits = [c for c in children if (c.score or 0.0) >= o.early_success_threshold and c.depth >= o.min_depth]
    if hits:
        return _complete(m, TerminationReason.THRESHOLD, max(hits, key=lambda c: c.score or 0.0).id, env)
    if children and children[0].depth >= o.min_depth:  # only answers count towards convergence
        best = find_best_leaf(m, o.min_depth)
        recent = (*m.recent_best_scores, best.score if best and best.score is not None else 0.0)
        m = replace(m, recent_best_scores=recent[-o.convergence_window:])
    if _converged(m):
        return _complete(m, TerminationReason.CONVERGED, None, env)
    open_children = [c.id for c in children if c.depth < o.max_depth]  # a child at max_depth closes its branch
    return _next(m, env, frontier=grow_frontier(m.nodes, m.frontier, open_children, m.options))


def _next(m: ToTMachine, env: Env, **changes: Any) -> tuple[ToTMachine, list[Directive]]:
    """After an expansion ended: wait for the rest of its wave, or start the next wave."""
    if m.active:
        return _goto(m, _busy(m.active), **changes), []
    return _expand(_goto(m, S.EXPANDING, **changes), env)


def _converged(m: ToTMachine) -> bool:
    window, scores = m.options.convergence_window, m.recent_best_scores
    return window > 1 and len(scores) >= window and scores[-1] - scores[0] < m.options.min_score_improvement


def _expand(m: ToTMachine, env: Env) -> tuple[ToTMachine, list[Directive]]:
    """Start a wave: up to ``parallel_expansions`` frontier nodes, best first, as many as the budgets fit."""
    o = m.options
    if len(m.nodes) >= o.max_nodes:
        return _complete(m, TerminationReason.MAX_NODES, None, env)
    if o.max_duration_ms is not None and _elapsed(m, env) is not None and _elapsed(m, env) >= o.max_duration_ms:
        return _complete(m, TerminationReason.MAX_DURATION, None, env)
    left = _calls_left(m)
    if left is not None and left < 2 and m.frontier:  # an expansion is a generation and an evaluation
        return _complete(m, TerminationReason.MAX_MODEL_CALLS, None, env)
    if not m.frontier:
        return _complete(m, TerminationReason.MAX_DEPTH, None, env)
    wave = o.parallel_expansions if left is None else min(o.parallel_expansions, left // 2)
    active: list[Expansion] = []
    directives: list[Directive] = []
    frontier, nodes = m.frontier, len(m.nodes)
    while frontier and len(active) < wave and (count := _request_count(o, nodes)) > 0:
        node_id, frontier = frontier[0], frontier[1:]
        nodes += count  # the nodes this expansion may add are held for it
        m, call_id = _call_id(m)
        active.append(Expansion(node_id, call_id, "generation", count))
        directives.append(GenerateThoughts(call_id, node_id, m.prompt or "", path_texts(m, node_id), count))
    return _goto(m, S.GENERATING, frontier=frontier, active=tuple(active)), directives


def _elapsed(m: ToTMachine, env: Env) -> float | None:
    if env.now_ms is None or m.started_at_ms is None:
        return None
    return env.now_ms - m.started_at_ms


def _complete(m: ToTMachine, reason: TerminationReason, node_id: str | None, env: Env) -> tuple[ToTMachine, list[Directive]]:
    if node_id is None:
        best = find_best_leaf(m, m.options.min_depth)
        if best is None:
            return _fail(m, f"the search ended ({reason.value}) before any thought was scored", env)
        node_id = best.id
    path = tuple(node.id for node in get_path_to_node(m, node_id))
    return _goto(m, S.COMPLETED, termination_reason=reason, solution_path=path, finished_at_ms=env.now_ms,
                 **_ended(m)), []


def _fail(m: ToTMachine, error: str, env: Env) -> tuple[ToTMachine, list[Directive]]:
    return _goto(m, S.ERROR, termination_reason=TerminationReason.ERROR, error=error, finished_at_ms=env.now_ms,
                 **_ended(m)), []


def _ended(m: ToTMachine) -> dict[str, Any]:
    """The expansions still in flight when a search ends: their calls are abandoned (only usage is read)."""
    return {"active": (), "abandoned_calls": (*m.abandoned_calls, *(e.call_id for e in m.active))}
