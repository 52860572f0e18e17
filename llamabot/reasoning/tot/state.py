"""The state of one Tree-of-Thoughts search: its statuses and allowed moves, the caller's loan (``Env``), the
expansions in flight and the immutable :class:`ToTMachine`. How messages move it: :mod:`~llamabot.reasoning.tot.machine`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import Any

from llamabot.reasoning.tot.messages import Phase, ThoughtEntry
from llamabot.reasoning.tot.options import ToTOptions, with_options
from llamabot.reasoning.tot.tree import ThoughtNode, get_path_to_node


class Status(str, Enum):
    IDLE = "idle"
    GENERATING = "generating"
    EVALUATING = "evaluating"
    EXPANDING = "expanding"
    COMPLETED = "completed"
    ERROR = "error"


class TerminationReason(str, Enum):
    SUCCESS = "success"  # a trusted goal test (``env.goal_test``) accepted a thought
    THRESHOLD = "threshold"  # a thought at least ``min_depth`` deep scored >= ``early_success_threshold``
    MAX_DEPTH = "max_depth"  # the frontier ran out: every branch reached ``max_depth`` or was closed
    MAX_NODES = "max_nodes"
    MAX_DURATION = "max_duration"
    MAX_MODEL_CALLS = "max_model_calls"  # the next expansion would not fit in ``max_model_calls``
    CONVERGED = "converged"
    ERROR = "error"


S = Status
#: The allowed transitions. A parse retry stays in its state; ``generating -> expanding`` closes a node
#: whose thoughts could not be read; ``expanding`` is transient (never seen between two updates). With several
#: expansions in a wave the status is ``generating`` while any of them waits for thoughts, else ``evaluating``;
#: so ``generating -> completed`` is an answer found by one expansion while another still generates.
TRANSITIONS: Mapping[Status, frozenset[Status]] = MappingProxyType({
    S.IDLE: frozenset({S.GENERATING}),
    S.GENERATING: frozenset({S.EVALUATING, S.EXPANDING, S.COMPLETED, S.ERROR}),
    S.EVALUATING: frozenset({S.EXPANDING, S.COMPLETED, S.ERROR}),
    S.EXPANDING: frozenset({S.GENERATING, S.COMPLETED, S.ERROR}),
    S.COMPLETED: frozenset(),
    S.ERROR: frozenset(),
})
BUSY = frozenset({S.GENERATING, S.EVALUATING, S.EXPANDING})


@dataclass(frozen=True, slots=True)
class Env:
    """What the caller lends one update: ``now_ms`` (its clock; ``None`` disables time checks),
    ``goal_test(problem, path) -> bool``, a trusted check that a root-to-thought path solves the problem, and
    ``step_check(problem, path, thought) -> str | None``, the problem's rules: the rule a proposed thought breaks
    (it is dropped before evaluation, and the model is told when every proposal broke one), or ``None``. A rules
    check only refuses what the rules forbid; it never looks ahead or scores."""

    now_ms: float | None = None
    goal_test: Callable[[str, tuple[str, ...]], bool] | None = None
    step_check: Callable[[str, tuple[str, ...], str], str | None] | None = None


@dataclass(frozen=True, slots=True)
class Expansion:
    """One node being expanded: its generation call, then its evaluation call, and their repairs. ``call_id`` is
    the call in flight; ``count`` the thoughts asked for; ``pending_thoughts`` the thoughts being evaluated."""

    node_id: str
    call_id: str
    phase: Phase = "generation"
    count: int = 0
    pending_thoughts: tuple[ThoughtEntry, ...] = ()
    request_retries: int = 0  # repair calls spent on the current generate/evaluate request
    streaming_text: str = ""


@dataclass(frozen=True)
class ToTMachine:
    """The whole state of one search. Immutable: :func:`update` returns a new machine."""

    options: ToTOptions = field(default_factory=ToTOptions)
    status: Status = Status.IDLE
    prompt: str | None = None
    nodes: dict[str, ThoughtNode] = field(default_factory=dict)
    root_id: str | None = None
    active: tuple[Expansion, ...] = ()  # the expansions in flight (at most ``parallel_expansions``)
    abandoned_calls: tuple[str, ...] = ()  # calls in flight when the search ended: only their usage is still read
    frontier: tuple[str, ...] = ()
    solution_path: tuple[str, ...] = ()
    termination_reason: TerminationReason | None = None
    error: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    started_at_ms: float | None = None
    finished_at_ms: float | None = None
    parser_mode: str | None = None
    parse_retries: dict[str, int] = field(default_factory=lambda: {"generation": 0, "evaluation": 0})
    parser_errors: tuple[str, ...] = ()
    recent_best_scores: tuple[float, ...] = ()
    closed_nodes: tuple[str, ...] = ()  # nodes whose thoughts could not be read: branches closed
    rejected_steps: tuple[str, ...] = ()  # proposals that broke the problem's rules, each with the rule
    continued_nodes: tuple[str, ...] = ()  # nodes an evaluation reply wrote as a candidate's next step
    run_id: str | None = None  # the start call id; later call ids are ``<run_id>.<n>``
    node_seq: int = 0
    call_seq: int = 0

    # The first expansion in flight, as the seed's one-at-a-time machine named it.
    @property
    def current_node_id(self) -> str | None:
        return self.active[0].node_id if self.active else None

    @property
    def current_call_id(self) -> str | None:
        return self.active[0].call_id if self.active else None

    @property
    def pending_thoughts(self) -> tuple[ThoughtEntry, ...]:
        return self.active[0].pending_thoughts if self.active else ()

    @property
    def streaming_text(self) -> str:
        return self.active[0].streaming_text if self.active else ""


def new_machine(options: ToTOptions | None = None, **option_values: Any) -> ToTMachine:
    """A machine in ``idle``: ``new_machine(branching_factor=2)`` or ``new_machine(ToTOptions(...))``."""
    return ToTMachine(options=with_options(options, **option_values))


def path_texts(machine: ToTMachine, node_id: str) -> tuple[str, ...]:
    """The thoughts from the root's child down to ``node_id`` (the problem excluded)."""
    return tuple(node.content for node in get_path_to_node(machine, node_id)[1:])
