"""Module-level regular expressions compiled on first use.

Compiling a pattern costs ~0.1-1 ms; a module compiling a dozen at import makes every command
that imports it pay, whether it matches anything or not (`sessions search` imported ~40 such
patterns and used ten: ~4 ms of a ~110 ms command). `NAME = lazy_pattern(globals(), "NAME", …)`
stands for `re.compile(…)` until the module first uses `NAME`: that use compiles it and puts the
compiled pattern in the module's global, so every later use is the real pattern's, with no
indirection. For module globals only, used by name inside functions (never bound elsewhere at
import time: such a reference would keep going through the stand-in, correct but slower)."""

from __future__ import annotations

import re

TYPE_CHECKING = False  # `typing` costs start-up time (a config load imports this through ids)
if TYPE_CHECKING:
    from typing import Any, AnyStr


class _LazyPattern:
    __slots__ = ("_namespace", "_name", "_args", "_compiled")

    def __init__(self, namespace: dict[str, Any], name: str, pattern: str | bytes, flags: int) -> None:
        self._namespace = namespace
        self._name = name
        self._args = (pattern, flags)
        self._compiled: re.Pattern[Any] | None = None

    def _real(self) -> re.Pattern[Any]:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(*self._args)
            if self._namespace.get(self._name) is self:
                self._namespace[self._name] = compiled
        return compiled

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._real(), attr)

    def __repr__(self) -> str:
        return f"lazy_pattern({self._args[0]!r})"


def lazy_pattern(namespace: dict[str, Any], name: str, pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """`re.compile(pattern, flags)`, compiled when the module global `name` of `namespace` (the
    module's `globals()`) is first used, and put there."""
    return _LazyPattern(namespace, name, pattern, flags)  # type: ignore[return-value]  # stands in


class _LazyModule:
    __slots__ = ("_namespace", "_name")

    def __init__(self, namespace: dict[str, Any], name: str) -> None:
        self._namespace = namespace
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        import importlib

        module = importlib.import_module(self._name)
        if self._namespace.get(self._name) is self:
            self._namespace[self._name] = module
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"lazy_module({self._name!r})"


def lazy_module(namespace: dict[str, Any], name: str) -> Any:
    """The module `name` (a top-level one, bound to the global of that name in `namespace`),
    imported when the module first uses it, then put there: `orjson = lazy_module(globals(),
    "orjson")` instead of `import orjson`, for a module whose importers mostly never call it (orjson
    imports dataclasses, inspect, uuid and platform: ~15 ms of a search command's start-up)."""
    return _LazyModule(namespace, name)
