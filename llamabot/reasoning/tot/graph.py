"""ToTBot and AsyncToTBot: a Tree-of-Thoughts search as a PocketFlow graph driving the pure machine.

    expand -("generate")-> generate -("expand")-> expand
    expand -("evaluate")-> evaluate -("expand")-> expand        (expand ends the flow when the machine is done)

The machine decides everything (see :mod:`machine`); the graph only performs its directives through the model
seam. Nodes are built per bot; every call gets a fresh machine and shared dict, so runs never share state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import fields, replace
from typing import Any

from llamabot.agents.graphbot import AwaitedCall, GraphBot
from llamabot.bot.options import bot_settings, positional_model, strict_options
from llamabot.models.base import ChatModel, TokenCallback
from llamabot.models.resolve import get_model
from llamabot.models.settings import ModelSettings
from llamabot.observe.hooks import CallbackHook, RunHooks
from llamabot.observe.tracing import Trace
from llamabot.observe.usage import UsageLimits
from llamabot.reasoning.tot.machine import ToTMachine, new_machine, path_texts
from llamabot.reasoning.tot.messages import Start
from llamabot.reasoning.tot.nodes import ExpandNode, GoalTest, ThoughtCallNode
from llamabot.reasoning.tot.options import ToTOptions, with_options
from llamabot.reasoning.tot.prompts import ToTPrompts
from llamabot.reasoning.tot.result import ToTResult, build_result

_OPTION_NAMES = frozenset(f.name for f in fields(ToTOptions))


class ToTBot(GraphBot):
    """Search a tree of thoughts for a solution to ``problem``: ``result = bot(problem)``.

    ``model``: any LiteLLM model string, a chat model object (``ScriptedModel``) or ``None`` (default);
    ``model_settings``: provider settings (``temperature``, ``max_tokens``...); ``hooks``, ``usage_limits``: as for
    every bot. Every option is a keyword; an unknown one is a ``TypeError``.
    ``options`` (or any :class:`ToTOptions` field as a keyword: ``branching_factor=2``...) shape the search.
    ``prompts``: a :class:`ToTPrompts` (e.g. ``Game24Prompts()``); ``generation_prompt`` / ``evaluation_prompt``
    override its system prompts. ``goal_test(problem, path) -> bool``: an optional trusted check that ends the
    search with ``success``. ``check_steps`` (default on): proposals that break the problem's rules
    (``prompts.step_rules``: for the Game of 24, wrong arithmetic or a number that is not left) are dropped
    before they are scored; the prompts' rules never look ahead or solve. ``json_output``: ask for JSON by
    ``response_format`` (enforced by grammar on the
    embedded model). ``stream_target`` receives streamed text (each piece also reaches the machine as
    ``llm_partial``); ``on_step`` receives the machine after every update.
    """

    @strict_options(extra=_OPTION_NAMES)
    def __init__(
        self,
        _model: str | ChatModel | None = None,
        /,
        *,
        model: str | ChatModel | None = None,
        model_settings: ModelSettings | dict[str, Any] | None = None,
        options: ToTOptions | None = None,
        prompts: ToTPrompts | None = None,
        generation_prompt: str | None = None,
        evaluation_prompt: str | None = None,
        goal_test: GoalTest | None = None,
        check_steps: bool = True,
        json_output: bool = True,
        stream_target: TokenCallback | None = None,
        on_step: Callable[[ToTMachine], None] | None = None,
        hooks: Iterable[RunHooks] = (),
        usage_limits: UsageLimits | None = None,
        **search_options: Any,
    ):
        model = positional_model(type(self).__name__, _model, model)
        if on_step is not None:
            hooks = (*hooks, machine_steps(on_step))
        super().__init__(hooks=hooks, usage_limits=usage_limits)
        settings = bot_settings(self, model_settings)  # the search options included (strict_options' extra)
        self.model_settings = settings
        self.options = with_options(options, **search_options)
        prompts = prompts or ToTPrompts()
        if generation_prompt is not None:
            prompts = replace(prompts, generation_prompt=generation_prompt)
        if evaluation_prompt is not None:
            prompts = replace(prompts, evaluation_prompt=evaluation_prompt)
        self.prompts = prompts
        self.model = get_model(model)
        self.model_name = self.model.name
        self.stream_target = stream_target
        self.on_step = on_step
        call = {"json_output": json_output, "completion_kwargs": settings, "limit": self.options.parallel_expansions}
        self.generate_node = ThoughtCallNode("generate", self.model, prompts, **call)
        self.evaluate_node = ThoughtCallNode("evaluate", self.model, prompts, **call)
        self.expand_node = ExpandNode(goal_test, step_check=prompts.step_rules if check_steps else None)
        self.expand_node - "generate" >> self.generate_node
        self.expand_node - "evaluate" >> self.evaluate_node
        self.generate_node - "expand" >> self.expand_node
        self.evaluate_node - "expand" >> self.expand_node
        self.set_graph(self.expand_node)

    def run_attributes(self, problem: str) -> dict[str, Any]:
        return {"problem": problem}

    def new_state(self, problem: str, trace: Trace, options: dict[str, Any]) -> dict[str, Any]:
        return {"machine": new_machine(self.options), "messages": [Start(problem, f"tot-{trace.trace_id[:8]}")],
                "directives": []}

    def run_values(self, options: dict[str, Any]) -> dict[str, Any]:
        return {"stream_target": self.stream_target}

    def result(self, shared: dict[str, Any], trace: Trace) -> ToTResult:
        machine: ToTMachine = shared["machine"]
        answer = None
        if machine.solution_path:
            answer = self.prompts.answer(machine.prompt or "", path_texts(machine, machine.solution_path[-1]))
        return build_result(machine, answer)



class AsyncToTBot(AwaitedCall, ToTBot):
    """The name kept for services (``await AsyncToTBot(...).arun(problem)``): the same bot as :class:`ToTBot`."""


def machine_steps(on_step: Callable[[ToTMachine], None]) -> RunHooks:
    """A hook calling ``on_step(machine)`` after every update of the search machine (each ``expand`` step)."""

    def on_end(span: Any, state: Any) -> None:
        if span.kind == "tot_update":
            on_step(state["machine"])

    return CallbackHook(on_end=on_end)
