"""Shared fixtures. Tests marked ``local_model`` drive the real embedded model; they are never skipped:
if the ``local`` extra is missing they fail with the install hint."""

from __future__ import annotations

import faulthandler
import sys

import pytest

#: Seconds the test process may take to exit after the last test: a thread left waiting (a pool Python joins at
#: exit) would otherwise hold CI until its time limit, with nothing printed.
EXIT_LIMIT_S = 120

LOCAL_TEST_MODEL = "local/qwen2.5-coder-1.5b"


@pytest.fixture(scope="session")
def local_model_name() -> str:
    """The embedded model, assembled and verified (fails loudly if the local extra is not installed)."""
    from llamabot.models.registry import LOCAL_MODELS, ensure_model_file, local_runtime_installed

    if not local_runtime_installed():
        pytest.fail('llama-cpp-python is not installed: pip install -e ".[local,dev]"')
    ensure_model_file(LOCAL_MODELS[LOCAL_TEST_MODEL.split("/", 1)[1]].alias)
    return LOCAL_TEST_MODEL


def pytest_unconfigure(config) -> None:
    """After the session: if the interpreter has not exited within :data:`EXIT_LIMIT_S`, print every thread's stack
    and exit with status 1 (a hang at exit is a failure that names its thread, not a silent CI timeout)."""
    faulthandler.dump_traceback_later(EXIT_LIMIT_S, exit=True, file=sys.__stderr__)
