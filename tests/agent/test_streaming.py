"""Token streaming in agent runs (AGT-STREAM-*): ``astream`` yields the model's text and the final answer as it is
written, from the scripted model and through LiteLLM from a real OpenAI-compatible server on loopback."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from llamabot import AgentBot, AsyncAgentBot, ScriptedModel, tool
from llamabot.models.scripted import text, tool_call
from llamabot.observe.answer_stream import AnswerStreams, PartialOutput
from llamabot.observe.hooks import CallbackHook, ToolCallDelta
from llamabot.toolkits.calculator import add

ANSWER = 'The sum is "3".\nDone — naïve ☃ check \\ ok.'


async def events_of(bot, query="q", **options):
    return [e async for e in bot.astream(query, **options)]


def answer_tokens(events):
    return "".join(e.data["delta"] for e in events if e.kind == "token" and e.data["answer"])


async def test_agt_stream_010_astream_yields_the_answer_as_respond_to_user_arguments_are_written():
    model = ScriptedModel([tool_call("add", a=1, b=2), tool_call("respond_to_user", response=ANSWER)])
    events = await events_of(AsyncAgentBot(tools=[add], model=model))
    tokens = [e for e in events if e.kind == "token"]
    assert len(tokens) > 5  # many pieces, not one
    assert answer_tokens(events) == ANSWER == events[-1].data["result"]
    kinds = [e.kind for e in events]
    # the answer streams during the last decision's model call: before that decision and its tool call
    first_token, last_decision = kinds.index("token"), len(kinds) - 1 - kinds[::-1].index("decision")
    assert kinds[:3] == ["decision", "tool_started", "tool_finished"] and first_token > 2
    assert max(i for i, k in enumerate(kinds) if k == "token") < last_decision
    assert kinds[-1] == "final_answer"
    # the add call's arguments are not an answer: no token came from them
    assert all(e.data["answer"] for e in tokens)


async def test_agt_stream_020_model_text_streams_as_tokens_that_are_not_marked_as_the_answer():
    model = ScriptedModel([text("I will answer now")])
    events = await events_of(AsyncAgentBot(model=model))
    text_tokens = [e.data["delta"] for e in events if e.kind == "token" and not e.data["answer"]]
    assert "".join(text_tokens) == "I will answer now" and len(text_tokens) == 4
    assert events[-1].data["result"] == "I will answer now"


async def test_agt_stream_030_concurrent_streams_on_one_bot_never_mix_tokens():
    bot = AsyncAgentBot(model=ScriptedModel(
        responder=lambda request: tool_call("respond_to_user", response=f"answer to {request.last_user_text} " * 5)))
    streams = await asyncio.gather(*(events_of(bot, f"q{i}") for i in range(8)))
    for i, events in enumerate(streams):
        assert answer_tokens(events) == f"answer to q{i} " * 5
        assert len({e.trace_id for e in events}) == 1


async def test_agt_stream_040_a_bot_called_inside_a_tool_streams_nothing_into_the_outer_stream():
    inner = AgentBot(model=ScriptedModel([tool_call("respond_to_user", response="inner secret")]))

    @tool
    def ask(question: str) -> str:
        """Ask an inner agent.

        Args:
            question: The question.
        """
        return inner(question)

    model = ScriptedModel([tool_call("ask", question="x"), tool_call("respond_to_user", response="outer")])
    events = await events_of(AsyncAgentBot(tools=[ask], model=model))
    assert answer_tokens(events) == "outer"


def test_agt_stream_050_hooks_see_every_piece_of_every_tool_call_and_sync_runs_stream_too():
    pieces: list[tuple[str, ToolCallDelta]] = []
    hook = CallbackHook(on_tool_call_delta=lambda span, delta: pieces.append((span.kind, delta)))
    model = ScriptedModel([tool_call("add", a=1, b=2), tool_call("respond_to_user", response="3")])
    assert AgentBot(tools=[add], model=model, hooks=[hook])("1+2") == "3"
    assert {kind for kind, _ in pieces} == {"model_call"}
    by_tool: dict[str, str] = {}
    current = None
    for _, delta in pieces:
        current = delta.name or current
        by_tool[current] = by_tool.get(current, "") + delta.text
    assert json.loads(by_tool["add"]) == {"a": 1, "b": 2} and json.loads(by_tool["respond_to_user"]) == {"response": "3"}


@pytest.mark.parametrize("piece", [1, 2, 3, 7, 1000])
def test_agt_stream_060_the_decoder_gives_the_same_text_whatever_the_piece_size(piece):
    arguments = json.dumps({"response": ANSWER, "other": "x" * 50})
    streams = AnswerStreams({"respond_to_user": "response"})
    got = [streams.feed(7, ToolCallDelta(0, "respond_to_user" if i == 0 else None, arguments[i:i + piece]))
           for i in range(0, len(arguments), piece)]
    assert "".join(got) + "".join(streams.finish(7)) == ANSWER
    # a whole call written as one document (the embedded model's form) decodes the same
    document = json.dumps({"name": "respond_to_user", "arguments": {"response": ANSWER}})
    got = [streams.feed(8, ToolCallDelta(0, None, document[i:i + piece], document=True))
           for i in range(0, len(document), piece)]
    assert "".join(got) + "".join(streams.finish(8)) == ANSWER and streams.calls == {}


def test_agt_stream_070_calls_of_other_tools_and_malformed_pieces_give_no_answer_text():
    streams = AnswerStreams({"respond_to_user": "response"})
    assert streams.feed(1, ToolCallDelta(0, "add", '{"response": "not an answer"}')) == ""
    assert streams.feed(1, ToolCallDelta(1, "respond_to_user", "}{ not json")) == ""
    typed = streams.feed(1, ToolCallDelta(2, "respond_to_user", '{"response": 42}'))
    assert type(typed) is PartialOutput and typed.value == 42  # a typed answer (output_type=), not text
    assert streams.finish(1) == ["", "", ""]


def test_agt_stream_080_decoding_a_long_answer_in_tiny_pieces_reads_linear_text():
    answer = "word " * 20_000  # 100 kB, fed one character at a time
    arguments = json.dumps({"response": answer})
    streams = AnswerStreams({"respond_to_user": "response"})
    out = [streams.feed(1, ToolCallDelta(0, "respond_to_user" if i == 0 else None, char))
           for i, char in enumerate(arguments)]
    out.extend(streams.finish(1))
    assert "".join(out) == answer
    reads = len([p for p in out if p])
    # re-read only after 1/8 growth: about log(n)/log(9/8) reads, not one per character
    assert reads < 120, reads


# -- through LiteLLM: a real OpenAI-compatible streaming server on loopback ------------------------------------


def sse_server(arguments_pieces: list[str], tool: str):
    """An OpenAI-compatible /v1/chat/completions that streams one tool call in the given pieces."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            assert body["stream"] is True
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()

            def send(delta, finish=None, usage=None):
                chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "test-model",
                         "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
                if usage:
                    chunk["choices"], chunk["usage"] = [], usage
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()

            send({"role": "assistant", "tool_calls": [
                {"index": 0, "id": "call_1", "type": "function", "function": {"name": tool, "arguments": ""}}]})
            for piece in arguments_pieces:
                send({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            send({}, finish="tool_calls")
            send({}, usage={"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18})
            self.wfile.write(b"data: [DONE]\n\n")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def test_agt_stream_090_through_litellm_the_answer_streams_from_a_real_server():
    arguments = json.dumps({"response": ANSWER})
    pieces = [arguments[i:i + 5] for i in range(0, len(arguments), 5)]
    server = sse_server(pieces, "respond_to_user")
    try:
        bot = AsyncAgentBot(model="openai/test-model", api_base=f"http://127.0.0.1:{server.server_port}/v1",
                            api_key="not-a-secret")
        events = await events_of(bot, "q")
    finally:
        server.shutdown()
    tokens = [e for e in events if e.kind == "token"]
    assert answer_tokens(events) == ANSWER == events[-1].data["result"]
    assert len(tokens) > 5
    assert events[-1].data["usage"]["input_tokens"] == 11 and events[-1].data["usage"]["output_tokens"] == 7


@pytest.mark.local_model
async def test_agt_stream_110_the_embedded_model_streams_the_answer_as_it_writes_the_call(local_model_name):
    bot = AsyncAgentBot(model=local_model_name, max_iterations=2)
    events = await events_of(bot, "Greet me in one short sentence.")
    answer = events[-1].data["result"]
    pieces = [e.data["delta"] for e in events if e.kind == "token" and e.data["answer"]]
    assert isinstance(answer, str) and answer.strip()
    assert len(pieces) > 1 and "".join(pieces) == answer  # written piece by piece, not delivered whole
