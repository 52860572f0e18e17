"""Imports are cheap and quiet: no LiteLLM, no llama.cpp, no network, no logging sinks at import."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap


def run_python(code: str, env: dict[str, str] | None = None) -> str:
    full_env = {**os.environ, **(env or {})}
    full_env.pop("LITELLM_LOCAL_MODEL_COST_MAP", None) if env is None else None
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60, env=full_env
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip()


def test_mdl_import_010_import_llamabot_does_not_import_litellm_or_llama_cpp():
    out = run_python(
        """
        import sys
        import llamabot
        from llamabot import tool, SimpleBot, StructuredBot, ToolBot, AsyncToolBot, ScriptedModel, DEFAULT_TOOLS
        from llamabot import AgentBot, AsyncAgentBot, to_mermaid
        import llamabot.reasoning.aot
        import llamabot.cli
        print(sorted(m for m in ("litellm", "llama_cpp") if m in sys.modules))
        """
    )
    assert out == "[]"


def test_mdl_import_010_cli_help_does_not_import_litellm():
    code = """
        import sys
        from typer.testing import CliRunner
        from llamabot.cli import app
        result = CliRunner().invoke(app, ["--help"])
        assert result.exit_code == 0 and "chat" in result.output
        print(sorted(m for m in ("litellm", "llama_cpp") if m in sys.modules))
        """
    assert run_python(code) == "[]"


def test_mdl_import_020_litellm_cost_map_is_local_unless_the_user_chose():
    code = "import os, llamabot; print(os.environ['LITELLM_LOCAL_MODEL_COST_MAP'])"
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert result.stdout.strip() == "True"
    assert run_python(code, env={"LITELLM_LOCAL_MODEL_COST_MAP": "False"}) == "False"


def test_mdl_log_010_import_adds_no_log_sinks_and_library_logs_are_opt_in():
    out = run_python(
        """
        from loguru import logger
        before = len(logger._core.handlers)
        import llamabot
        after = len(logger._core.handlers)
        print(before == after, logger._core.activation_list)
        """
    )
    assert out.startswith("True") and "('llamabot.', False)" in out
