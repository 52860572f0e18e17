"""Strict constructors: the options every bot shares, and an error for every option it does not know.

Every bot (``SimpleBot``, ``StructuredBot``, ``ToolBot``, ``AgentBot``, ``AoTBot``, ``ToTBot``, ``ANoTBot``) takes
the shared options by the same keywords: ``model=``, ``system_prompt=``, ``hooks=``, ``usage_limits=``,
``model_settings=`` and, where it applies, ``output_type=``. :func:`strict_options` wraps a constructor so that:

- an unknown keyword raises ``TypeError`` naming it and the closest valid one ("did you mean max_iterations?");
- ``model_name=`` (the old name of ``model=``) and ``pydantic_model=`` (of ``output_type=``) still work, with a
  ``DeprecationWarning``;
- a provider setting given as a keyword (``temperature=0``), as older versions allowed, moves into
  ``model_settings`` with a ``DeprecationWarning``; nothing else ever reaches the provider.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from llamabot.models.settings import MODEL_SETTING_NAMES, check_model_settings
from llamabot.observe.usage import UsageLimits

F = TypeVar("F", bound=Callable[..., Any])

#: Old keyword -> its current name.
RENAMED = {"model_name": "model", "pydantic_model": "output_type"}


def accepted_options(init: Callable[..., Any]) -> frozenset[str]:
    """The keywords ``init`` accepts (its named parameters but ``self``; for a constructor wrapped by
    :func:`strict_options`, the set it checks against, read once when the class was made)."""
    known = getattr(init, "options", None)
    if known is not None:
        return known
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return frozenset(name for name, p in inspect.signature(init).parameters.items()
                     if p.kind in kinds and name != "self")


def bot_settings(bot: Any, model_settings: Any) -> dict[str, Any]:
    """``bot``'s ``model_settings`` checked (:func:`~llamabot.models.settings.check_model_settings`), none of
    them one of its constructor's options."""
    return check_model_settings(model_settings, type(bot).__name__, accepted_options(type(bot).__init__))


def check_shared(owner: str, *, system_prompt: Any = "", usage_limits: Any = None, prompt_optional: bool = False,
                 ) -> None:
    """``TypeError`` for a shared option of the wrong type: ``system_prompt`` not a string (a model object
    there says to pass ``model=``), ``usage_limits`` not a :class:`UsageLimits`."""
    if not isinstance(system_prompt, str) and not (prompt_optional and system_prompt is None):
        not_a_model(owner, "system_prompt", system_prompt)
        raise TypeError(f"{owner}: system_prompt must be a string, got {type(system_prompt).__name__}")
    if usage_limits is not None and not isinstance(usage_limits, UsageLimits):
        raise TypeError(f"{owner}: usage_limits must be a UsageLimits, got {type(usage_limits).__name__}")


def strict_options(init: F | None = None, *, extra: frozenset[str] = frozenset()) -> Any:
    """Wrap a bot's ``__init__``: unknown keywords are a ``TypeError`` with a suggestion; deprecated names are
    renamed with a warning (see the module). ``extra``: keywords the constructor takes through ``**kwargs``
    (``ToTBot``'s search options)."""
    if init is None:
        return functools.partial(strict_options, extra=extra)
    accepted = accepted_options(init) | extra
    positional = [name for name, p in inspect.signature(init).parameters.items()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and name != "self"]

    @functools.wraps(init)
    def checked(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(positional):
            raise TypeError(too_many_positional(type(self).__name__, positional, args))
        if kwargs.keys() - accepted:
            kwargs = normalized(type(self).__name__, accepted, kwargs)
        init(self, *args, **kwargs)

    checked.options = accepted  # type: ignore[attr-defined]
    return checked


def normalized(owner: str, accepted: frozenset[str], kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with deprecated names replaced; ``TypeError`` for any keyword ``owner`` does not take."""
    kwargs = dict(kwargs)
    for old, new in RENAMED.items():
        if old in kwargs and new in accepted:
            if new in kwargs:
                raise TypeError(f"{owner}() got both {old}= and {new}=; pass only {new}=")
            warnings.warn(f"{owner}({old}=...) is deprecated; use {new}=", DeprecationWarning, stacklevel=3)
            kwargs[new] = kwargs.pop(old)
    moved = {key: kwargs.pop(key) for key in list(kwargs) if key not in accepted and key in MODEL_SETTING_NAMES}
    if moved and "model_settings" in accepted:
        warnings.warn(f"{owner}({', '.join(f'{k}=...' for k in moved)}) is deprecated; pass "
                      f"model_settings={{{', '.join(repr(k) + ': ...' for k in moved)}}}",
                      DeprecationWarning, stacklevel=3)
        given = kwargs.get("model_settings")
        if given is not None and not isinstance(given, dict):
            raise TypeError(f"{owner}: model_settings must be a dict of provider settings, got {type(given).__name__}")
        clash = sorted(moved.keys() & (given or {}).keys())
        if clash:
            raise TypeError(f"{owner}() got {clash[0]!r} both as a keyword and in model_settings; pass it once")
        kwargs["model_settings"] = {**(given or {}), **moved}
    elif moved:
        kwargs.update(moved)  # reported as unknown below
    unknown = sorted(kwargs.keys() - accepted)
    if unknown:
        raise TypeError(unknown_option(owner, unknown[0], accepted))
    return kwargs


def too_many_positional(owner: str, positional: list[str], args: tuple[Any, ...]) -> str:
    """The message for positional arguments past the ones a bot takes: every other option is a keyword."""
    takes = ", ".join(name.lstrip("_") for name in positional) or "nothing"
    extra = args[len(positional):]
    hint = " (a model goes in model=...)" if any(isinstance(a, str) or hasattr(a, "acomplete") or _models(a)
                                                  for a in extra) else ""
    return (f"{owner}() takes {len(positional)} positional argument(s) ({takes}) but {len(args)} were given; "
            f"pass the other options as keywords{hint}")


def unknown_option(owner: str, name: str, accepted: frozenset[str]) -> str:
    """The message for an unknown keyword: what it was, the closest valid one, and where provider settings go."""
    message = f"{owner}() got an unexpected keyword argument {name!r}"
    close = difflib.get_close_matches(name, sorted(accepted), n=1, cutoff=0.6)
    if close:
        return f"{message}; did you mean {close[0]}?"
    if "model_settings" in accepted:
        return f"{message}; provider settings go in model_settings={{{name!r}: ...}}"
    return message


def positional_model(owner: str, given: Any, model: Any) -> Any:
    """The model of a bot that used to take it as its first positional argument (``ToTBot(model)``): still
    accepted, with a ``DeprecationWarning``; ``TypeError`` when ``model=`` is given too."""
    if given is None:
        return model
    if model is not None:
        raise TypeError(f"{owner}() got a model both positionally and as model=; pass only model=")
    warnings.warn(f"{owner}(model) is deprecated; pass the model as {owner}(model=...)", DeprecationWarning,
                  stacklevel=4)
    return given


def not_a_model(owner: str, parameter: str, value: Any) -> None:
    """``TypeError`` when a chat model object, or a list of them (a fallback chain), was passed where ``parameter``
    is expected: the mistake of ``AgentBot(tools, model)``, ``AoTBot(model)`` or ``AgentBot([primary, fallback])``."""
    if _is_model(value):
        raise TypeError(f"{owner}(): got a model object as {parameter}; pass the model as {owner}(model=...)")
    if _models(value):
        raise TypeError(f"{owner}(): got a list of models as {parameter}; pass a fallback chain as "
                        f"{owner}(model=[primary, fallback, ...])")


def _is_model(value: Any) -> bool:
    return hasattr(value, "complete") and hasattr(value, "acomplete") and hasattr(value, "name")


def _models(value: Any) -> bool:
    """``value`` is a chat model, or a non-empty list or tuple of chat models."""
    if isinstance(value, (list, tuple)):
        return bool(value) and all(_is_model(item) for item in value)
    return _is_model(value)


def settings_apart(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` (a bot's keywords from a config, a CLI or a report) with the provider settings among them
    (``temperature``, ``max_tokens``...) moved into ``model_settings``, as the constructors take them."""
    moved = {key: options[key] for key in options if key in MODEL_SETTING_NAMES}
    if not moved:
        return dict(options)
    rest = {key: value for key, value in options.items() if key not in moved}
    rest["model_settings"] = {**(rest.get("model_settings") or {}), **moved}
    return rest
