"""Plain value classes for modules every command imports, instead of `@dataclass`: each `@dataclass`
compiles three to six generated functions when its module is imported (~2.7 M instructions, about
0.7 ms, per class: issue 26, the search command's start-up), which a one-shot command pays for
every class on its import path whether it uses it or not.

A subclass lists its fields in `_fields` (the `__init__` order) and writes its own `__init__`; it
gets what `@dataclass` would have generated besides: the same `repr`, equality with an instance of
the very same class by the tuple of its fields, unhashable (`Record`) or hashed by that tuple and
read-only (`FrozenRecord`, whose `__init__` sets them with `_assign`; it pickles by calling the class with its fields)."""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` costs start-up time; only type checkers need it here
if TYPE_CHECKING:
    from typing import Any, ClassVar


class Record:
    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()
    _unshown: ClassVar[tuple[str, ...]] = ()  # fields left out of the repr (secrets), still compared

    def _values(self) -> tuple[Any, ...]:
        return tuple([getattr(self, name) for name in self._fields])

    def __repr__(self) -> str:
        inner = ", ".join(
            [f"{name}={getattr(self, name)!r}" for name in self._fields if name not in self._unshown]
        )
        return f"{type(self).__qualname__}({inner})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Record)
        return self._values() == other._values()

    __hash__ = None  # type: ignore[assignment]  # mutable and compared by value, as a dataclass


class FrozenRecord(Record):
    """Read-only once made: its `__init__` sets the fields with `object.__setattr__`."""

    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]  # a frozen record is hashable
        return hash(self._values())

    def _assign(self, *values: Any) -> None:
        """Set every field, in `_fields` order: a subclass's `__init__` calls it once."""
        for name, value in zip(self._fields, values, strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), self._values())
