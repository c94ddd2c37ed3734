# SPDX-License-Identifier: Apache-2.0
"""Which values cross the wire: the codec-safe set, PIDs, and registered message classes.

A registered class (a ``msgspec.Struct`` subclass or a dataclass) is named on the wire by
its msgspec tag when it has a ``str`` one, else by its ``__name__`` — the name msgspec
gives a tagged Struct — and travels as ``[name, field values...]`` through the shared
codec's extension hook (so its fields may hold tuples, sets, datetimes, PIDs, other
registered messages). Decoding looks the name up in *this node's* registry: it never
imports or evaluates a name the peer sent, and an unknown name is a :class:`CodecError`.

Rejected alternatives: pickle (runs code named by the peer); msgspec's typed decoding of a
``Union`` of the registered Structs (fast, but it cannot hold PIDs or the codec's exact
tuple/set types in fields typed ``Any``, and dataclasses are not taggable).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any, Final, final

import msgspec

from .._codec import decode, encode
from ..errors import CodecError

__all__ = ["MESSAGE_CODE", "PID_CODE", "MessageRegistry", "WireCodec", "wire_name"]

#: Codec extension codes used on the wire (see ``tocsin._codec.EXTENSION_CODES``).
PID_CODE: Final = 32
MESSAGE_CODE: Final = 33


def wire_name(cls: type) -> str:
    """The wire name of a message class: its msgspec ``str`` tag, else ``__name__``."""
    if isinstance(cls, type) and issubclass(cls, msgspec.Struct):
        tag = cls.__struct_config__.tag
        if isinstance(tag, str):
            return tag
    return cls.__name__


@final
class MessageRegistry:
    """The registered message classes of one node, by wire name. Immutable.

    Raises:
        TypeError: an entry is not a ``msgspec.Struct`` subclass or a dataclass.
        ValueError: two classes share a wire name.
    """

    __slots__ = ("_by_name", "_by_type")

    def __init__(self, classes: Iterable[type]) -> None:
        by_name: dict[str, tuple[type, tuple[str, ...]]] = {}
        by_type: dict[type, tuple[str, tuple[str, ...]]] = {}
        for cls in classes:
            fields = _fields(cls)
            name = wire_name(cls)
            if name in by_name:
                if by_name[name][0] is cls:
                    continue
                raise ValueError(
                    f"`messages` holds two classes named {name!r} on the wire: "
                    f"{by_name[name][0]!r} and {cls!r}; give one a msgspec tag or rename it"
                )
            by_name[name] = (cls, fields)
            by_type[cls] = (name, fields)
        self._by_name = by_name
        self._by_type = by_type

    @property
    def names(self) -> tuple[str, ...]:
        """The registered wire names, sorted."""
        return tuple(sorted(self._by_name))

    def describe(self) -> str:
        return "PIDs, registered messages (" + (", ".join(self.names) or "none") + ")"

    def lookup_type(self, cls: type) -> tuple[str, tuple[str, ...]] | None:
        return self._by_type.get(cls)

    def lookup_name(self, name: object) -> tuple[type, tuple[str, ...]] | None:
        return self._by_name.get(name) if type(name) is str else None


def _fields(cls: object) -> tuple[str, ...]:
    if isinstance(cls, type) and issubclass(cls, msgspec.Struct):
        return tuple(cls.__struct_fields__)
    if isinstance(cls, type) and dataclasses.is_dataclass(cls):
        return tuple(f.name for f in dataclasses.fields(cls) if f.init)
    raise TypeError(
        f"`messages` entries must be msgspec.Struct subclasses or dataclasses, got {cls!r}"
    )


@final
class WireCodec:
    """Encode and decode message values for one node.

    Args:
        registry: the node's registered classes.
        pid_type: the PID class; its instances cross as ``str(pid)``.
        pid_from_string: turns a PID string from the peer back into a PID (a local PID
            when it names this node, else a remote one); raises ``ValueError`` when bad.
    """

    __slots__ = ("_pid_from_string", "_pid_type", "registry")

    def __init__(
        self,
        registry: MessageRegistry,
        pid_type: type,
        pid_from_string: Callable[[str], object],
    ) -> None:
        self.registry = registry
        self._pid_type = pid_type
        self._pid_from_string = pid_from_string

    def encode(self, value: object, *, name: str = "message") -> bytes:
        """Bytes for ``value``.

        Raises:
            CodecError: ``value`` holds something that cannot cross (not codec-safe, not a
                PID, not a registered message), a cycle, or nests too deep.
        """
        return encode(value, name=name, extension=self)

    def decode(self, data: bytes | memoryview | msgspec.Raw) -> object:
        """The value in ``data``. Never runs code named by the data.

        Raises:
            CodecError: malformed data, an unknown message name, fields that do not fit.
        """
        return decode(data, extension=self)  # type: ignore[arg-type]  # any buffer works

    # -- the codec's Extension protocol --------------------------------------------------

    def to_wire(self, value: object) -> tuple[int, str, list[Any]] | None:
        cls = type(value)
        if cls is self._pid_type:
            return PID_CODE, "pid", [str(value)]
        known = self.registry.lookup_type(cls)
        if known is None:
            return None
        name, fields = known
        return MESSAGE_CODE, f".{name}", [name, *(getattr(value, f) for f in fields)]

    def from_wire(self, code: int, items: list[Any]) -> object:
        if code == PID_CODE:
            if len(items) != 1 or type(items[0]) is not str:
                raise CodecError("cannot decode message: a PID is one string")
            try:
                return self._pid_from_string(items[0])
            except ValueError as exc:
                raise CodecError(f"cannot decode message: bad PID {items[0]!r}: {exc}") from exc
        if code == MESSAGE_CODE and items:
            known = self.registry.lookup_name(items[0])
            if known is None:
                raise CodecError(
                    f"cannot decode message: {items[0]!r} is not a registered message on this "
                    f"node (registered: {', '.join(self.registry.names) or 'none'})"
                )
            cls, fields = known
            if len(items) - 1 != len(fields):
                raise CodecError(
                    f"cannot decode message {items[0]!r}: {len(items) - 1} fields sent, this "
                    f"node's class has {len(fields)} ({', '.join(fields)})"
                )
            return cls(**dict(zip(fields, items[1:], strict=True)))
        raise CodecError(f"cannot decode message: unknown extension code {code}")

    def __str__(self) -> str:
        return self.registry.describe()
