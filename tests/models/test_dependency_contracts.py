"""Contracts with LiteLLM and llama-cpp-python: every private or undocumented attribute, and every shape,
that llamabot's code touches, one test each (MDL-DEP-010: LiteLLM, MDL-DEP-020: llama-cpp-python).

These are what the version bounds in pyproject.toml rest on (docs/design/models/LLD.md, "Dependency bounds").
When a new release changes one of them, its test fails with a message naming the llamabot code that depends on
it, so widening a bound is: install the new release, run this file, fix what it names.

The LiteLLM tests need no model (a scripted custom provider answers). The llama-cpp-python tests need only
``import llama_cpp`` (no GGUF is loaded); they are marked ``local_model`` because that extra is what provides
llama_cpp, and like every ``local_model`` test they run in CI and are never skipped.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import inspect
import json
import re
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from packaging.requirements import Requirement

from llamabot.models.reply import ModelReply, ToolCallRequest, Usage
from llamabot.models.scripted import ScriptedModel

MESSAGES = [{"role": "user", "content": "hi"}]


def broken(library: str, what: str, dependent: str) -> str:
    """The message of a failed contract: what changed, and which llamabot code needs it."""
    try:
        version = importlib.metadata.version(library)
    except importlib.metadata.PackageNotFoundError:
        version = "(not installed)"
    return (
        f"{library} {version} does not provide {what}, which {dependent} depends on. Adapt that code, or bound "
        f"{library} below this release in pyproject.toml (see docs/design/models/LLD.md, 'Dependency bounds')."
    )


def declared_range(distribution: str) -> Requirement:
    """llamabot's own requirement on ``distribution``, as installed (extras included)."""
    for line in importlib.metadata.requires("llamabot") or ():
        requirement = Requirement(line)
        if requirement.name.lower().replace("_", "-") == distribution:
            return requirement
    raise AssertionError(f"llamabot declares no requirement on {distribution}; see pyproject.toml")


def typed_dict_keys(cls: Any) -> set[str]:
    """A TypedDict's keys, without evaluating its annotations (LiteLLM's may be forward references)."""
    return set(cls.__required_keys__) | set(cls.__optional_keys__)


def params(function: Any) -> set[str]:
    return set(inspect.signature(function).parameters)


# --- LiteLLM -------------------------------------------------------------------------------------------------


@pytest.fixture
def litellm(monkeypatch):
    """LiteLLM as llamabot sets it up, with its provider registry restored after the test."""
    from llamabot.models.litellm_model import ensure_litellm

    module = ensure_litellm()
    monkeypatch.setattr(module, "custom_provider_map", list(module.custom_provider_map))
    monkeypatch.setattr(module, "_custom_providers", list(module._custom_providers))
    monkeypatch.setattr(module, "provider_list", list(module.provider_list))
    monkeypatch.setattr(module, "model_cost", dict(module.model_cost))
    return module


def scripted(litellm: Any, prefix: str, *items: Any, zero_cost: bool = True) -> tuple[str, ScriptedModel]:
    from llamabot.models.scripted_provider import register_scripted_provider

    model = ScriptedModel(items)
    return register_scripted_provider(model, prefix=prefix, zero_cost=zero_cost), model


def test_mdl_dep_010_litellm_version_is_in_the_declared_range():
    import litellm

    requirement = declared_range("litellm")
    installed = importlib.metadata.version("litellm")
    assert "mcp" in requirement.extras, (
        "llamabot needs litellm[mcp]: LiteLLM imports mcp on any call with tools="
    )
    assert requirement.specifier.contains(installed, prereleases=True), (
        f"litellm {installed} is outside llamabot's declared range {requirement.specifier}"
    )
    assert hasattr(litellm, "completion")


def test_mdl_dep_010_litellm_has_the_mcp_extra():
    """LiteLLM imports ``mcp`` on any call with ``tools=``: llamabot asks for ``litellm[mcp]``, which only means
    something from the release that declares that extra (1.100.0)."""
    import mcp  # noqa: F401 - importable, as any call with tools= needs

    extras = {
        str(Requirement(line).marker)
        for line in importlib.metadata.requires("litellm") or ()
        if Requirement(line).marker is not None
    }
    assert any('extra == "mcp"' in marker for marker in extras), broken(
        "litellm", "the [mcp] extra", "every tool-using bot (LiteLLM imports mcp on any call with tools=)"
    )


def test_mdl_dep_010_custom_provider_map_entries_are_provider_and_handler(litellm):
    from litellm.types.llms.custom_llm import CustomLLMItem

    dependent = (
        "llamabot/models/litellm_model.py:ensure_litellm and scripted_provider.py:register_scripted_provider"
    )
    assert isinstance(litellm.custom_provider_map, list), broken(
        "litellm", "litellm.custom_provider_map (a list)", dependent
    )
    keys = typed_dict_keys(CustomLLMItem)
    assert {"provider", "custom_handler"} <= keys, broken(
        "litellm", f"CustomLLMItem keys 'provider' and 'custom_handler' (it has {sorted(keys)})", dependent
    )


def test_mdl_dep_010_custom_llm_setup_records_the_provider_in_private_custom_providers(litellm):
    from litellm import CustomLLM

    dependent = "llamabot/models/litellm_model.py:ensure_litellm and LiteLLMModel._assemble"
    setup = getattr(getattr(litellm, "utils", None), "custom_llm_setup", None)
    assert callable(setup), broken("litellm", "litellm.utils.custom_llm_setup()", dependent)
    litellm.custom_provider_map = [
        *litellm.custom_provider_map,
        {"provider": "contract-probe", "custom_handler": CustomLLM()},
    ]
    setup()
    assert "contract-probe" in getattr(litellm, "_custom_providers", ()), broken(
        "litellm", "the private list litellm._custom_providers filled by custom_llm_setup()", dependent
    )
    assert "contract-probe" in litellm.provider_list, broken(
        "litellm", "litellm.provider_list filled by custom_llm_setup() (routing of 'prefix/model')", dependent
    )


def test_mdl_dep_010_custom_llm_base_class_and_error():
    import litellm
    from litellm.llms.custom_llm import CustomLLM, CustomLLMError

    dependent = "llamabot/models/local/provider.py:LocalProvider and scripted_provider.py:ScriptedProvider"
    assert litellm.CustomLLM is CustomLLM, broken(
        "litellm", "litellm.CustomLLM (= litellm.llms.custom_llm.CustomLLM)", dependent
    )
    for method in ("completion", "acompletion", "streaming", "astreaming"):
        assert callable(getattr(CustomLLM, method, None)), broken("litellm", f"CustomLLM.{method}", dependent)
        assert {"model", "messages", "optional_params"} <= params(getattr(CustomLLM, method)), broken(
            "litellm", f"CustomLLM.{method}(model, messages, ..., optional_params, ...)", dependent
        )
    error = CustomLLMError(status_code=500, message="boom")
    assert (error.status_code, error.message, str(error)) == (500, "boom", "boom"), broken(
        "litellm", "CustomLLMError(status_code=, message=)", "llamabot/models/local/provider.py:LocalProvider"
    )


def test_mdl_dep_010_response_types_build_and_read_back():
    from litellm.types.utils import ChatCompletionMessageToolCall, Choices, Function, Message, ModelResponse
    from litellm.types.utils import Usage as LiteLLMUsage

    call = ChatCompletionMessageToolCall(
        id="call_1", type="function", function=Function(name="add", arguments='{"a": 1}')
    )
    response = ModelResponse(
        id="r1",
        created=1,
        model="probe/m",
        choices=[
            Choices(
                index=0,
                message=Message(content=None, role="assistant", tool_calls=[call]),
                finish_reason="tool_calls",
            )
        ],
        usage=LiteLLMUsage(prompt_tokens=3, completion_tokens=4, total_tokens=7),
    )
    message = response.choices[0].message
    got = (
        message.tool_calls[0].id,
        message.tool_calls[0].function.name,
        message.tool_calls[0].function.arguments,
        response.choices[0].finish_reason,
        response.usage.prompt_tokens,
        response.usage.completion_tokens,
        response.model,
    )
    assert got == ("call_1", "add", '{"a": 1}', "tool_calls", 3, 4, "probe/m"), broken(
        "litellm",
        "ModelResponse/Choices/Message/ChatCompletionMessageToolCall/Function/Usage from litellm.types.utils as built",
        "llamabot/models/local/provider.py:to_model_response, scripted_provider.py:_response and litellm_model.py:reply_from_litellm",
    )


def test_mdl_dep_010_model_response_keeps_a_private_response_ms():
    from litellm.types.utils import ModelResponse

    response = ModelResponse(model="probe/m")
    response._response_ms = 12.5
    assert response._response_ms == 12.5, broken(
        "litellm",
        "a writable ModelResponse._response_ms",
        "llamabot/models/local/provider.py:LocalProvider.completion",
    )


def test_mdl_dep_010_generic_streaming_chunk_shape():
    from litellm.types.utils import ChatCompletionToolCallChunk, GenericStreamingChunk

    dependent = "llamabot/models/local/provider.py:_chunk/_chunks and scripted_provider.py:_chunks"
    keys = typed_dict_keys(GenericStreamingChunk)
    assert {"text", "tool_use", "is_finished", "finish_reason", "usage", "index"} <= keys, broken(
        "litellm",
        f"GenericStreamingChunk keys text/tool_use/is_finished/finish_reason/usage/index (has {sorted(keys)})",
        dependent,
    )
    call_keys = typed_dict_keys(ChatCompletionToolCallChunk)
    assert {"id", "type", "function", "index"} <= call_keys, broken(
        "litellm",
        f"ChatCompletionToolCallChunk keys id/type/function/index (has {sorted(call_keys)})",
        dependent,
    )


def test_mdl_dep_010_custom_provider_receives_tools_and_formats_in_optional_params(litellm):
    name, model = scripted(litellm, "contract-params", ModelReply(content="ok", usage=Usage(3, 4)))
    tools = [
        {"type": "function", "function": {"name": "add", "parameters": {"type": "object", "properties": {}}}}
    ]
    response = litellm.completion(
        model=name,
        messages=MESSAGES,
        tools=tools,
        tool_choice="auto",
        response_format={"type": "json_object"},
        temperature=0.3,
    )
    seen = model.requests[0]
    assert response.choices[0].message.content == "ok"
    assert (seen.tools, seen.tool_choice, seen.response_format, seen.params.get("temperature")) == (
        tools,
        "auto",
        {"type": "json_object"},
        0.3,
    ), broken(
        "litellm",
        "tools, tool_choice, response_format and sampling kwargs in a custom provider's optional_params",
        "llamabot/models/local/provider.py:LocalProvider and scripted_provider.py:ScriptedProvider._request",
    )


def test_mdl_dep_010_registered_cost_reaches_private_hidden_params(litellm):
    name, _ = scripted(litellm, "contract-cost", ModelReply(content="ok", usage=Usage(3, 4)), zero_cost=False)
    litellm.register_model(
        {
            name: {
                "input_cost_per_token": 0.001,
                "output_cost_per_token": 0.002,
                "litellm_provider": "contract-cost",
                "mode": "chat",
            }
        }
    )
    response = litellm.completion(model=name, messages=MESSAGES)
    hidden = getattr(response, "_hidden_params", None)
    assert isinstance(hidden, dict) and "response_cost" in hidden, broken(
        "litellm",
        "ModelResponse._hidden_params['response_cost']",
        "llamabot/models/litellm_model.py:reply_from_litellm",
    )
    assert hidden["response_cost"] == pytest.approx(3 * 0.001 + 4 * 0.002), broken(
        "litellm",
        "costs from litellm.register_model() in _hidden_params['response_cost']",
        "llamabot/models/litellm_model.py:register_zero_cost and reply_from_litellm",
    )


def _streamed_reply() -> ModelReply:
    return ModelReply(
        content="hello there",
        tool_calls=(ToolCallRequest("call_9", "add", '{"a": 1, "b": 2}'),),
        usage=Usage(3, 4),
    )


def _check_stream(litellm: Any, name: str, chunks: list[Any]) -> None:
    dependent = "llamabot/models/litellm_model.py:_emit and LiteLLMModel._assemble"
    text, arguments, names = "", "", []
    for chunk in chunks:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        text += delta.content or ""
        for call in getattr(delta, "tool_calls", None) or ():
            assert call.index == 0, broken(
                "litellm", "ChatCompletionDeltaToolCall.index in stream chunks", dependent
            )
            names.append(call.function.name)
            arguments += call.function.arguments or ""
    assert (text, arguments, [n for n in names if n]) == ("hello there", '{"a": 1, "b": 2}', ["add"]), broken(
        "litellm",
        "choices[0].delta.content / .tool_calls[i].function.name|arguments in stream chunks",
        dependent,
    )
    prefix = name.split("/", 1)[0]
    assert prefix in litellm._custom_providers, broken("litellm", "litellm._custom_providers", dependent)
    for chunk in chunks:  # what LiteLLMModel._assemble does for custom providers
        chunk.model = name
    built = litellm.stream_chunk_builder(chunks, messages=MESSAGES)
    message = built.choices[0].message
    got = (
        message.content,
        message.tool_calls[0].function.name,
        message.tool_calls[0].function.arguments,
        built.usage.prompt_tokens,
        built.usage.completion_tokens,
        built._hidden_params.get("response_cost"),
    )
    assert got == ("hello there", "add", '{"a": 1, "b": 2}', 3, 4, 0.0), broken(
        "litellm",
        "stream_chunk_builder(chunks, messages=) rebuilding text, tool calls, usage and cost",
        dependent,
    )


def test_mdl_dep_010_streaming_through_a_custom_provider_and_rebuilding_it(litellm):
    name, _ = scripted(litellm, "contract-stream", _streamed_reply())
    chunks = list(
        litellm.completion(model=name, messages=MESSAGES, stream=True, stream_options={"include_usage": True})
    )
    _check_stream(litellm, name, chunks)


async def test_mdl_dep_010_async_streaming_through_a_custom_provider_and_rebuilding_it(litellm):
    name, _ = scripted(litellm, "contract-astream", _streamed_reply())
    stream = await litellm.acompletion(
        model=name, messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    )
    chunks = [chunk async for chunk in stream]
    _check_stream(litellm, name, chunks)


@pytest.mark.parametrize(("name", "args", "status", "moves_on"), [
    ("RateLimitError", ("m", "openai", "x"), 429, True),
    ("Timeout", ("m", "x", "openai"), 408, True),
    ("APIConnectionError", ("m", "openai", "x"), 500, True),
    ("InternalServerError", ("m", "openai", "x"), 500, True),
    ("BadGatewayError", ("m", "openai", "x"), 502, True),
    ("ServiceUnavailableError", ("m", "openai", "x"), 503, True),
    ("AuthenticationError", ("m", "openai", "x"), 401, True),
    ("PermissionDeniedError", ("m", "openai", "x", "response"), 403, True),
    ("BadRequestError", ("m", "x", "openai"), 400, False),
    ("ContextWindowExceededError", ("m", "x", "openai"), 400, False),
    ("ContentPolicyViolationError", ("m", "x", "openai"), 400, False),
    ("NotFoundError", ("m", "x", "openai"), 404, False),
])
def test_mdl_dep_010_exception_classes_carry_the_http_status_the_fallback_chain_reads(litellm, name, args, status,
                                                                                       moves_on):
    import httpx

    from llamabot.models.fallback import falls_back

    cls = getattr(litellm, name, None)
    assert cls is not None, broken("litellm", f"litellm.{name}", "llamabot/models/fallback.py:falls_back")
    if args[-1] == "response":  # a class that needs the HTTP response it reports
        args = (*args[:-1], httpx.Response(status, request=httpx.Request("POST", "http://127.0.0.1/v1")))
    error = cls(*args)
    assert getattr(error, "status_code", None) == status, broken(
        "litellm", f"litellm.{name}().status_code == {status}", "llamabot/models/fallback.py:falls_back")
    assert falls_back(error) is moves_on


def test_mdl_dep_010_local_cost_map_variable_keeps_the_import_offline():
    """``llamabot/__init__.py`` sets ``LITELLM_LOCAL_MODEL_COST_MAP=True`` so importing LiteLLM never fetches
    its cost map; a fresh interpreter with the network cut off must import it without trying."""
    script = textwrap.dedent(
        """
        import socket
        attempts = []
        def refuse(*args, **kwargs):
            attempts.append(args)
            raise OSError("network is off in this test")
        socket.socket.connect = refuse
        socket.socket.connect_ex = refuse
        socket.getaddrinfo = refuse
        import llamabot  # sets LITELLM_LOCAL_MODEL_COST_MAP
        import litellm
        assert litellm.model_cost, "empty cost map"
        print("ATTEMPTS", len(attempts))
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ATTEMPTS 0" in result.stdout, broken(
        "litellm",
        "the LITELLM_LOCAL_MODEL_COST_MAP=True switch (import tried the network)",
        f"llamabot/__init__.py (offline import); stderr: {result.stderr[-1500:]}",
    )


# --- llama-cpp-python ----------------------------------------------------------------------------------------

local = pytest.mark.local_model


@pytest.fixture(scope="module")
def llama_cpp():
    try:
        import llama_cpp
    except ImportError:
        pytest.fail('llama-cpp-python is not installed: pip install -e ".[local,dev]"')
    return llama_cpp


def init_assigns(cls: type, attribute: str) -> bool:
    """Whether ``cls.__init__`` assigns ``self.<attribute>`` (an instance attribute no GGUF-free test can read)."""
    source = inspect.getsource(cls.__init__)
    return re.search(rf"self\.{re.escape(attribute)}\s*(:[^=\n]+)?=(?!=)", source) is not None


@local
def test_mdl_dep_020_llama_cpp_version_is_in_the_declared_range(llama_cpp):
    requirement = declared_range("llama-cpp-python")
    assert isinstance(llama_cpp.__version__, str), broken(
        "llama-cpp-python",
        "llama_cpp.__version__",
        "llamabot/models/local/engine.py:LocalEngine._key (prefix-cache keys)",
    )
    assert requirement.specifier.contains(llama_cpp.__version__, prereleases=True), (
        f"llama-cpp-python {llama_cpp.__version__} is outside llamabot's declared range {requirement.specifier}"
    )


@local
def test_mdl_dep_020_llama_constructor_arguments(llama_cpp):
    wanted = {"model_path", "n_ctx", "n_threads", "n_threads_batch", "n_batch", "verbose"}
    missing = wanted - params(llama_cpp.Llama.__init__)
    assert not missing, broken(
        "llama-cpp-python",
        f"Llama(...) arguments {sorted(missing)}",
        "llamabot/models/local/runtime.py:_load",
    )


@local
def test_mdl_dep_020_llama_instance_attributes_set_at_load(llama_cpp):
    dependents = {
        "_model": "llamabot/models/local/runtime.py:_load (llm._model.token_get_text for BOS/EOS text)",
        "metadata": "llamabot/models/local/runtime.py:_load (the GGUF's tokenizer.chat_template)",
    }
    for attribute, dependent in dependents.items():
        assert init_assigns(llama_cpp.Llama, attribute), broken(
            "llama-cpp-python", f"Llama.{attribute}", dependent
        )
    assert callable(getattr(llama_cpp._internals.LlamaModel, "token_get_text", None)), broken(
        "llama-cpp-python",
        "the private LlamaModel.token_get_text (Llama._model)",
        "llamabot/models/local/runtime.py:_load",
    )


@local
def test_mdl_dep_020_llama_handles_and_methods(llama_cpp):
    Llama = llama_cpp.Llama
    for name, dependent in {
        "model": "llamabot/models/local/runtime.py:_load and local/scheduler.py (the scheduler's context on "
        "llm.model)",
    }.items():
        assert isinstance(inspect.getattr_static(Llama, name, None), property), broken(
            "llama-cpp-python", f"Llama.{name}", dependent
        )
    for name, wanted, dependent in [
        ("tokenize", {"text", "add_bos", "special"}, "llamabot/models/local/engine.py:LocalEngine._tokens"),
        ("token_eos", set(), "llamabot/models/local/runtime.py:_load"),
        ("token_bos", set(), "llamabot/models/local/runtime.py:_load"),
        ("close", set(), "llamabot/models/local/runtime.py:LoadedModel.close"),
    ]:
        method = getattr(Llama, name, None)
        assert callable(method), broken("llama-cpp-python", f"Llama.{name}()", dependent)
        missing = wanted - params(method)
        assert not missing, broken("llama-cpp-python", f"Llama.{name} arguments {sorted(missing)}", dependent)


@local
def test_mdl_dep_020_jinja2_chat_formatter_renders_messages_and_tools(llama_cpp):
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    dependent = "llamabot/models/local/runtime.py:_load and local/engine.py:LocalEngine._prompt"
    template = "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}{% if tools %}[{{ tools[0].function.name }}]{% endif %}"
    formatter = Jinja2ChatFormatter(template=template, eos_token="</s>", bos_token="<s>", stop_token_ids=[2])
    rendered = formatter(
        messages=[{"role": "user", "content": "hi"}],
        tools=[{"type": "function", "function": {"name": "add"}}],
    )
    assert (rendered.prompt, list(rendered.stop or [])) == ("<s><user>hi[add]", ["</s>"]), broken(
        "llama-cpp-python",
        "Jinja2ChatFormatter(template=, eos_token=, bos_token=, stop_token_ids=)(messages=, tools=) -> .prompt/.stop",
        dependent,
    )


@local
def test_mdl_dep_020_gbnf_from_json_schema(llama_cpp):
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    schema = {
        "type": "object",
        "properties": {"name": {"enum": ["add"]}, "arguments": {"type": "object"}},
        "required": ["name", "arguments"],
    }
    grammar = json_schema_to_gbnf(json.dumps(schema))
    assert isinstance(grammar, str) and "root ::=" in grammar and "add" in grammar, broken(
        "llama-cpp-python",
        "llama_grammar.json_schema_to_gbnf(schema_json) giving GBNF text with a root rule",
        "llamabot/models/local/engine.py:_grammar (tool calls and response_format)",
    )


#: The low-level llama.cpp functions llamabot calls, with the ctypes argument types it passes.
SCHEDULER = "llamabot/models/local/scheduler.py"
LOW_LEVEL = {
    "llama_state_seq_get_size": (2, f"{SCHEDULER}:Scheduler._snapshot"),
    "llama_state_seq_get_data": (4, f"{SCHEDULER}:Scheduler._snapshot"),
    "llama_state_seq_set_data": (4, f"{SCHEDULER}:Scheduler._restore"),
    "llama_get_memory": (1, f"{SCHEDULER}:Scheduler._main"),
    "llama_memory_seq_rm": (4, f"{SCHEDULER}:Scheduler._clear and _start"),
    "llama_memory_seq_cp": (5, f"{SCHEDULER}:Scheduler._start (a live sequence's prefix shared)"),
    "llama_context_default_params": (0, f"{SCHEDULER}:Scheduler._main"),
    "llama_init_from_model": (2, f"{SCHEDULER}:Scheduler._main"),
    "llama_free": (1, f"{SCHEDULER}:Scheduler._main"),
    "llama_model_get_vocab": (1, f"{SCHEDULER}:Scheduler._main"),
    "llama_batch_init": (3, f"{SCHEDULER}:Scheduler._main"),
    "llama_batch_free": (1, f"{SCHEDULER}:Scheduler._main"),
    "llama_decode": (2, f"{SCHEDULER}:Scheduler._step"),
    "llama_sampler_chain_default_params": (0, f"{SCHEDULER}:Scheduler._sampler"),
    "llama_sampler_chain_init": (1, f"{SCHEDULER}:Scheduler._sampler"),
    "llama_sampler_chain_add": (2, f"{SCHEDULER}:Scheduler._sampler"),
    "llama_sampler_init_greedy": (0, f"{SCHEDULER}:Scheduler._sampler"),
    "llama_sampler_init_grammar": (3, f"{SCHEDULER}:Scheduler._sampler"),
    "llama_sampler_init_top_k": (1, f"{SCHEDULER}:Scheduler._sampler"),
    "llama_sampler_init_top_p": (2, f"{SCHEDULER}:Scheduler._sampler"),
    "llama_sampler_init_min_p": (2, f"{SCHEDULER}:Scheduler._sampler"),
    "llama_sampler_init_temp": (1, f"{SCHEDULER}:Scheduler._sampler"),
    "llama_sampler_init_dist": (1, f"{SCHEDULER}:Scheduler._sampler"),
    "llama_sampler_init_penalties": (5, f"{SCHEDULER}:Scheduler._sampler (as llama-cpp-python calls it)"),
    "llama_sampler_sample": (3, f"{SCHEDULER}:Scheduler._step"),
    "llama_sampler_free": (1, f"{SCHEDULER}:Scheduler._finish"),
    "llama_vocab_is_eog": (2, f"{SCHEDULER}:Scheduler._accept"),
    "llama_vocab_n_tokens": (1, f"{SCHEDULER}:Scheduler._sampler"),
    "llama_token_to_piece": (6, f"{SCHEDULER}:Scheduler._accept"),
    "llama_model_is_recurrent": (
        1,
        "llamabot/models/local/runtime.py:_load (prefix caches off for recurrent models)",
    ),
    "llama_model_is_hybrid": (
        1,
        "llamabot/models/local/runtime.py:_load (prefix caches off for hybrid models)",
    ),
}


@local
@pytest.mark.parametrize("name", sorted(LOW_LEVEL))
def test_mdl_dep_020_low_level_state_and_memory_functions(llama_cpp, name):
    arity, dependent = LOW_LEVEL[name]
    function = getattr(llama_cpp, name, None)
    assert function is not None, broken("llama-cpp-python", f"llama_cpp.{name}", dependent)
    argtypes = getattr(function, "argtypes", None)
    assert argtypes is not None and len(argtypes) == arity, broken(
        "llama-cpp-python", f"llama_cpp.{name} taking {arity} arguments (argtypes {argtypes})", dependent
    )
    if name in ("llama_state_seq_get_data", "llama_state_seq_set_data"):
        buffer = (ctypes.c_uint8 * 4)()
        assert argtypes[1].from_param(buffer) is not None, broken(
            "llama-cpp-python", f"llama_cpp.{name} accepting a (ctypes.c_uint8 * n) buffer", dependent
        )


@local
def test_mdl_dep_020_context_params_and_batch_fields_the_scheduler_sets(llama_cpp):
    dependent = f"{SCHEDULER}:Scheduler._main and _step"
    context = {name for name, _ in llama_cpp.llama_context_params._fields_}
    wanted = {"n_ctx", "n_batch", "n_ubatch", "n_seq_max", "n_threads", "n_threads_batch", "kv_unified", "no_perf",
              "flash_attn_type"}
    assert wanted <= context, broken("llama-cpp-python", f"llama_context_params fields {sorted(wanted - context)}",
                                     dependent)
    batch = {name for name, _ in llama_cpp.llama_batch._fields_}
    wanted = {"n_tokens", "token", "pos", "n_seq_id", "seq_id", "logits"}
    assert wanted <= batch, broken("llama-cpp-python", f"llama_batch fields {sorted(wanted - batch)}", dependent)
    for constant in ("LLAMA_FLASH_ATTN_TYPE_DISABLED", "LLAMA_DEFAULT_SEED"):
        assert isinstance(getattr(llama_cpp, constant, None), int), broken(
            "llama-cpp-python", f"llama_cpp.{constant}", dependent
        )
