"""Which classes a saved run state may name, and finding them again. Pure: imports only what a name allows.

A class in saved state is named ``module:Qualname``. It may be restored when it is a dataclass, a pydantic model
or an Enum, and either the caller passed it (``allowed=``) or its module is one of :data:`STATE_MODULES`:
llamabot's packages that hold run state. That is decided from the name alone, **before** anything is imported, so
a state naming ``llamabot.durable.runtime:X`` or ``llamabot.models.litellm_model:X`` imports neither DBOS nor
LiteLLM; then :func:`pkgutil.resolve_name` must give back the very class named.
"""

from __future__ import annotations

import dataclasses
import pkgutil
import re
from enum import Enum
from typing import Any

from pydantic import BaseModel

from llamabot.errors import excerpt

#: The llamabot modules (and packages) whose classes a state may name: where run state lives. Any other llamabot
#: module (the durable runtime, LiteLLM's model, the CLI) is refused by name, before it could be imported.
STATE_MODULES = ("llamabot.graph", "llamabot.agents", "llamabot.reasoning", "llamabot.models.reply",
                 "llamabot.observe.usage", "llamabot.toolkits")

#: Modules whose state classes moved (old module -> new one): a checkpoint or paused run saved before the move still
#: names them there, and must stay resumable (``llamabot.graph``'s agent modules moved to ``llamabot.agents``).
MOVED_MODULES = {f"llamabot.graph.{name}": f"llamabot.agents.{name}"
                 for name in ("agent_state", "agent_tool", "approval", "decision", "flowbot", "graphbot", "nodes",
                              "parallel_calls")}
#: ... and classes that moved out of a module that is still there (AoT's records left ``execute`` for ``record``).
MOVED_CLASSES = {f"llamabot.reasoning.aot.execute:{name}": f"llamabot.reasoning.aot.record:{name}"
                 for name in ("AtomRecord", "ExecutionRecord", "RetryPolicy", "AtomTools")}
# ToT's state types left ``machine`` for ``state``; the embedded engine's errors left ``scheduler`` for ``request``.
MOVED_CLASSES.update({f"llamabot.reasoning.tot.machine:{name}": f"llamabot.reasoning.tot.state:{name}"
                      for name in ("Status", "TerminationReason", "Env", "Expansion", "ToTMachine")})
MOVED_CLASSES.update({f"llamabot.models.local.scheduler:{name}": f"llamabot.models.local.request:{name}"
                      for name in ("LocalGenerationError", "LocalBusyError")})

_CLASS_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


def class_name(cls: type) -> str:
    """``module:Qualname``: how a state names ``cls``."""
    return f"{cls.__module__}:{cls.__qualname__}"


def kind_of(cls: type) -> str | None:
    """The tag for instances of ``cls``: ``enum``, ``dataclass``, ``model``, or None for any other class."""
    if issubclass(cls, Enum):
        return "enum"
    if dataclasses.is_dataclass(cls):
        return "dataclass"
    if issubclass(cls, BaseModel):
        return "model"
    return None


def state_module(module: str) -> bool:
    """Whether ``module`` is one of :data:`STATE_MODULES` or inside one (decided from the name alone)."""
    return any(module == allowed or module.startswith(allowed + ".") for allowed in STATE_MODULES)


def find_state_class(name: Any) -> type | str:
    """The class ``name`` names in llamabot's state modules, or the reason it may not be restored (a str). Imports
    a module only after its name passed :func:`state_module`."""
    if not isinstance(name, str) or not _CLASS_NAME.fullmatch(name):
        return f"{excerpt(name)} is not a class name of the form 'module:Qualname'"
    module, _, qualname = name.partition(":")
    if name in MOVED_CLASSES:
        name = MOVED_CLASSES[name]
    elif module in MOVED_MODULES:
        name = f"{MOVED_MODULES[module]}:{qualname}"
    if not state_module(name.partition(":")[0]):
        return (f"class {name} may not be restored: only classes of llamabot's state modules {STATE_MODULES}, "
                "or passed in allowed=, are restored")
    try:
        cls = pkgutil.resolve_name(name)
    except Exception as exc:  # noqa: BLE001 - a missing module or name, or a module that fails to import
        return f"cannot find class {name}: {exc}"
    if not isinstance(cls, type) or class_name(cls) != name:
        return f"{name} is not a class defined under that name"
    return cls
