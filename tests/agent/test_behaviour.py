"""The decision step and the error table of the reference graph (AGT-DEC-*), with the scripted model."""

from __future__ import annotations

import json

import pytest

from llamabot import AgentBot, AsyncAgentBot, ScriptedModel, tool
from llamabot.agents.nodes import FORCE_MESSAGE, ToolExecutionError
from llamabot.models.scripted import empty, malformed_tool_call, text, tool_call, tool_calls
from llamabot.toolkits.calculator import CALCULATOR_TOOLS, add, divide, multiply
from llamabot.tools.call import invoke_tool


def test_agt_dec_010_tool_result_goes_back_to_the_model_and_a_terminal_tool_ends_the_run():
    model = ScriptedModel([tool_call("multiply", a=23, b=19), tool_call("respond_to_user", response="437")])
    bot = AgentBot(tools=[multiply], model=model)
    assert bot("What is 23 * 19?") == "437"
    second = model.requests[1].messages
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool"]
    call = second[2]["tool_calls"][0]
    assert call["function"]["name"] == "multiply" and json.loads(call["function"]["arguments"]) == {"a": 23, "b": 19}
    assert second[3]["tool_call_id"] == call["id"] and second[3]["content"] == "437"


def test_agt_dec_020_text_without_a_tool_call_is_routed_to_respond_to_user():
    model = ScriptedModel([text("It is 42.")])
    bot = AgentBot(model=model)
    assert bot("q") == "It is 42."
    assert [s.name for s in bot.last_trace.of_kind("tool_call")] == ["respond_to_user"]
    assert bot.memory[-1] == {"role": "assistant", "content": "It is 42."}  # no orphan tool message


@pytest.mark.parametrize(
    ("model_name", "hint"),
    [(None, "scripted model returned an empty reply"), ("ollama_chat/qwen2.5", "tool_choice='auto'")],
)
def test_agt_dec_030_neither_tool_call_nor_text_raises_value_error_with_a_family_hint(model_name, hint, monkeypatch):
    model = ScriptedModel([empty()])
    bot = AgentBot(model=model)
    if model_name:  # same scripted answers, seen as an Ollama model
        bot.decide_node.family = "ollama"
    with pytest.raises(ValueError, match="neither a tool call nor text") as info:
        bot("q")
    assert hint in str(info.value)


def test_agt_dec_040_invalid_json_is_shown_to_the_model_which_can_correct_it():
    model = ScriptedModel([malformed_tool_call("add", '{"a": 1,'), tool_call("add", a=1, b=2), tool_call("respond_to_user", response="3")])
    assert AgentBot(tools=[add], model=model)("1+2") == "3"
    feedback = model.requests[1].messages[-1]
    assert feedback["role"] == "tool" and "not valid JSON" in feedback["content"] and '{"a": 1,' in feedback["content"]


def test_agt_dec_040_repeated_invalid_calls_raise_value_error_naming_tool_and_arguments():
    model = ScriptedModel(responder=lambda r: malformed_tool_call("add", '{"a": oops}'))
    bot = AgentBot(tools=[add], model=model, max_errors=2)
    with pytest.raises(ValueError, match=r"""tool 'add' with arguments '\{"a": oops\}'"""):
        bot("1+2")
    assert len(model.requests) == 3  # the first try plus max_errors corrections, then it stops


def test_agt_dec_040_the_error_after_max_errors_quotes_a_bounded_excerpt_of_huge_arguments():
    huge = '{"a": ' + "9" * 1_000_000
    model = ScriptedModel(responder=lambda r: malformed_tool_call("add", huge))
    with pytest.raises(ValueError, match="invalid tool calls in a row") as raised:
        AgentBot(tools=[add], model=model, max_errors=1)("1+2")
    message = str(raised.value)
    assert "tool 'add'" in message and "(1000006 chars)" in message and len(message) < 2_000


def test_agt_dec_050_arguments_that_do_not_match_the_schema_are_shown_to_the_model():
    model = ScriptedModel([tool_call("add", a="one", b=2), tool_call("add", a=1, b=2), tool_call("respond_to_user", response="3")])
    assert AgentBot(tools=[add], model=model)("1+2") == "3"
    feedback = model.requests[1].messages[-1]["content"]
    assert "invalid arguments for tool 'add'" in feedback and "a: Input should be a valid number" in feedback


def test_agt_dec_060_unknown_tool_is_an_error_the_model_sees_and_corrects():
    model = ScriptedModel([tool_call("launch_rockets"), tool_call("respond_to_user", response="ok")])
    assert AgentBot(tools=[add], model=model)("q") == "ok"
    feedback = model.requests[1].messages[-1]["content"]
    assert "unknown tool 'launch_rockets'" in feedback and "add" in feedback


def test_agt_dec_060_a_run_never_returns_a_stale_result():
    model = ScriptedModel([tool_call("respond_to_user", response="first answer")])
    bot = AgentBot(tools=[add], model=model, max_errors=1)
    assert bot("q1") == "first answer"
    model.queue(tool_call("nope"), tool_call("nope"))
    with pytest.raises(ValueError, match="unknown tool 'nope'"):
        bot("q2")  # the previous result must not leak out of a failed run


def test_agt_dec_070_several_calls_in_one_reply_run_without_a_new_model_call():
    model = ScriptedModel([
        tool_calls(("add", {"a": 1, "b": 2}), ("multiply", {"a": 3, "b": 4})),
        tool_call("respond_to_user", response="done"),
    ])
    bot = AgentBot(tools=[add, multiply], model=model)
    assert bot("q") == "done"
    assert len(model.requests) == 2
    assert [s.name for s in bot.last_trace.of_kind("tool_call")] == ["add", "multiply", "respond_to_user"]
    tool_results = [m for m in model.requests[1].messages if m["role"] == "tool"]
    assert [m["content"] for m in tool_results] == ["3", "12"]


def test_agt_dec_070_calls_queued_after_a_terminal_tool_are_closed_not_run():
    model = ScriptedModel([tool_calls(("respond_to_user", {"response": "bye"}), ("add", {"a": 1, "b": 1}))])
    bot = AgentBot(tools=[add], model=model)
    assert bot("q") == "bye"
    assert [s.name for s in bot.last_trace.of_kind("tool_call")] == ["respond_to_user"]
    assert bot.memory[-1]["role"] == "tool" and bot.memory[-1]["content"].startswith("Not run")


def test_agt_dec_080_max_iterations_forces_respond_to_user():
    model = ScriptedModel(responder=lambda r: (
        tool_call("respond_to_user", response="best effort") if r.tool_choice != "required" else tool_call("add", a=1, b=1)
    ))
    bot = AgentBot(tools=[add], model=model, max_iterations=3)
    assert bot("loop forever") == "best effort"
    assert len(model.requests) == 4
    forced = model.requests[-1]
    assert forced.tool_choice == {"type": "function", "function": {"name": "respond_to_user"}}
    assert forced.messages[-1]["content"] == FORCE_MESSAGE


def test_agt_dec_080_without_respond_to_user_exceeding_max_iterations_is_a_runtime_error():
    @tool(loopback_name=None)
    def finish(answer: str) -> str:
        """Finish."""
        return answer

    bot = AgentBot(tools=[add, finish], model=ScriptedModel(responder=lambda r: tool_call("add", a=1, b=1)),
                   max_iterations=2)
    del bot.tools["respond_to_user"]
    bot.decide_node.final_toolbot = None
    with pytest.raises(RuntimeError, match=r"max_iterations \(2\) exceeded"):
        bot("q")


def test_agt_dec_090_a_failing_tool_is_reported_to_the_model_and_bounded():
    model = ScriptedModel([tool_call("divide", a=1, b=0), tool_call("respond_to_user", response="cannot divide")])
    bot = AgentBot(tools=[divide], model=model)
    assert bot("1/0") == "cannot divide"
    assert "ZeroDivisionError: cannot divide by zero" in model.requests[1].messages[-1]["content"]
    assert bot.last_trace.of_kind("tool_call")[0].error.startswith("ZeroDivisionError")

    always = AgentBot(tools=[divide], model=ScriptedModel(responder=lambda r: tool_call("divide", a=1, b=0)), max_errors=2)
    with pytest.raises(ToolExecutionError, match="tool 'divide' failed"):
        always("1/0")


def test_agt_dec_100_ollama_models_use_auto_tool_choice_with_a_reminder():
    bot = AgentBot(tools=[add], model="ollama_chat/qwen2.5")
    assert bot.decide_node.toolbot.tool_choice == "auto"
    assert "must answer by calling exactly one of the provided tools" in bot.decide_node.toolbot.system_prompt


def test_agt_dec_110_embedded_models_force_a_tool_call():
    bot = AgentBot(tools=[add], model="local/qwen2.5-coder-1.5b")
    assert bot.decide_node.toolbot.tool_choice == "required"


def test_agt_dec_120_return_object_to_user_reads_the_callers_globals():
    data = {"rows": [1, 2, 3]}
    model = ScriptedModel([tool_call("return_object_to_user", variable_name="data")])
    assert AgentBot(model=model)("give me data", globals_dict={"data": data}) is data


async def test_agt_dec_130_async_tools_are_awaited_by_the_async_agent():
    @tool
    async def slow_double(x: int) -> int:
        """Double x, slowly."""
        return 2 * x

    model = ScriptedModel([tool_call("slow_double", x=21), tool_call("respond_to_user", response="42")])
    assert await AsyncAgentBot(tools=[slow_double], model=model).arun("q") == "42"
    assert model.requests[1].messages[-1]["content"] == "42"

    sync_model = ScriptedModel([tool_call("slow_double", x=1), tool_call("respond_to_user", response="x")])
    assert AgentBot(tools=[slow_double], model=sync_model)("q") == "x"
    assert "is async" in sync_model.requests[1].messages[-1]["content"]


def test_agt_calc_010_calculator_toolkit():
    assert [t.tool.name for t in CALCULATOR_TOOLS] == ["add", "subtract", "multiply", "divide", "power"]
    results = [invoke_tool(t, {"a": 6, "b": 3}).unwrap() for t in CALCULATOR_TOOLS[:4]]
    assert results == [9, 3, 18, 2]
    assert invoke_tool(CALCULATOR_TOOLS[4], {"base": 2, "exponent": 10}).unwrap() == 1024
    with pytest.raises(ZeroDivisionError):
        divide(1, 0)


def test_agt_dec_080_a_model_that_ignores_the_forced_answer_is_stopped():
    model = ScriptedModel(responder=lambda r: tool_call("add", a=1, b=1))  # never answers
    bot = AgentBot(tools=[add], model=model, max_iterations=2)
    with pytest.raises(RuntimeError, match=r"did not call 'respond_to_user' \(or another terminal tool\) when asked"):
        bot("loop")
    assert len(model.requests) == 3  # two decisions, then the forced one


def test_agt_dec_080_a_forced_answer_with_invalid_arguments_says_what_was_invalid():
    model = ScriptedModel([tool_call("add", a=1, b=1), tool_call("respond_to_user", wrong=1)])
    bot = AgentBot(tools=[add], model=model, max_iterations=1)
    with pytest.raises(RuntimeError, match=r"invalid: invalid arguments for tool 'respond_to_user': response"):
        bot("q")


def test_agent_tools_that_the_graph_would_lose_are_errors_at_construction():
    @tool
    def decide(x: int) -> int:  # "decide" is the graph's edge back to the decision: the tool would never run
        """Decide."""
        return x

    def search_tool(result: str):
        @tool(name="search")
        def search(q: str) -> str:
            """Search."""
            return result
        return search

    with pytest.raises(TypeError, match="may not be named 'decide'"):
        AgentBot(tools=[decide], model=ScriptedModel())
    with pytest.raises(TypeError, match="two different tools are named 'search'"):
        AgentBot(tools=[search_tool("a"), search_tool("b")], model=ScriptedModel())


@pytest.mark.parametrize("option", [{"max_iterations": -1}, {"max_iterations": "3"}, {"max_errors": -1},
                                    {"max_errors": 1.5}, {"history_limit": -2}, {"max_iterations": True}])
def test_agent_loop_bounds_that_are_not_whole_numbers_are_refused_at_construction(option):
    with pytest.raises(ValueError, match=f"{next(iter(option))} must be a whole number"):
        AgentBot(tools=[add], model=ScriptedModel(), **option)


def test_agt_dec_090_a_failing_tool_with_a_custom_loopback_is_still_shown_to_the_model():
    @tool(loopback_name="review")
    def flaky(x: int) -> int:
        """Fails on odd numbers."""
        if x % 2:
            raise ValueError("odd")
        return x

    model = ScriptedModel([tool_call("flaky", x=1), tool_call("flaky", x=2), tool_call("respond_to_user", response="2")])
    bot = AgentBot(tools=[flaky], model=model)
    assert bot.tool_nodes["flaky"].successors == {"review": bot.decide_node}
    assert bot("q") == "2"
    assert "ValueError: odd" in model.requests[1].messages[-1]["content"]


def test_agt_dec_140_mixed_valid_and_invalid_calls_run_the_valid_ones_and_report_the_others():
    model = ScriptedModel([
        tool_calls(("add", {"a": 1, "b": 2}), ("nope", {})),
        tool_call("respond_to_user", response="3"),
    ])
    assert AgentBot(tools=[add], model=model)("q") == "3"
    sent = model.requests[1].messages
    add_id, nope_id = (c["id"] for c in sent[2]["tool_calls"])
    results = {m["tool_call_id"]: m["content"] for m in sent if m["role"] == "tool"}
    assert results[add_id] == "3"
    assert "unknown tool 'nope'" in results[nope_id]


def test_agt_dec_150_spans_of_bots_called_inside_a_tool_nest_under_the_tool_call():
    inner_model = ScriptedModel(["inner answer"])

    @tool
    def ask_expert(question: str) -> str:
        """Ask another bot."""
        from llamabot import SimpleBot

        return str(SimpleBot("expert", model=inner_model)(question))

    model = ScriptedModel([tool_call("ask_expert", question="why"), tool_call("respond_to_user", response="ok")])
    bot = AgentBot(tools=[ask_expert], model=model)
    bot("q")
    by_id = {s.span_id: s for s in bot.last_trace.spans}
    inner_run = next(s for s in bot.last_trace.spans if s.name == "SimpleBot")
    assert by_id[inner_run.parent_id].kind == "tool_call" and by_id[inner_run.parent_id].name == "ask_expert"


def test_agt_dec_080_any_terminal_tool_ends_a_forced_run():
    @tool(loopback_name=None)
    def done() -> str:
        """Finish."""
        return "finished"

    model = ScriptedModel(responder=lambda r: tool_call("add", a=1, b=1) if r.tool_choice == "required" else tool_call("done"))
    assert AgentBot(tools=[add, done], model=model, max_iterations=2)("q") == "finished"
