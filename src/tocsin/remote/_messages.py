# SPDX-License-Identifier: Apache-2.0
"""Which values cross the wire: the codec-safe set, PIDs, and registered message classes.

A registered class (a ``msgspec.Struct`` subclass or a dataclass) is named on the wire by
its msgspec tag when it has a ``str`` one, else by its ``__name__`` — the name msgspec
gives a tagged Struct. Its instance is encoded by msgspec itself and decoded *typed*, by
this node's own class: fields are validated and converted by their annotations (a field
annotated ``tuple[int, ...]`` comes back a tuple, one annotated ``PID`` a PID; a field
annotated ``Any`` gets msgspec's plain types). Everything else is a codec-safe value with
exact types (``tocsin._codec``), and PIDs and registered messages may sit inside it (the
codec's extension hook). Decoding looks a name up in *this node's* registry: it never
imports or evaluates a name the peer sent, and an unknown name is a :class:`CodecError`.

A message crosses as ``(name, payload)``: ``name`` is the registered class's wire name
(the payload is that class, msgspec-encoded: the fast path, about 0.5 µs each way), or
``""`` for any other value (the payload is the codec's encoding).

Rejected alternatives: pickle (runs code named by the peer); one msgspec ``Union`` of every
registered Struct (dataclasses cannot be tagged, and codec values would need a second
path anyway); walking Struct fields in Python (10x slower than msgspec's own encoder).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any, Final, final

import msgspec

from .._codec import Codec, Extension
from ..durable._spi import CALL_EXTENSION
from ..errors import CodecError

__all__ = ["MESSAGE_CODE", "PID_CODE", "MessageRegistry", "WireCodec", "wire_name"]

#: Codec extension codes used on the wire (see ``tocsin._codec.EXTENSION_CODES``): a PID
#: as the kernel encodes it, and a registered message inside a codec value.
PID_CODE: Final = 16
MESSAGE_CODE: Final = 32


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

    def classes(self) -> list[tuple[str, type]]:
        return [(name, cls) for name, (cls, _) in self._by_name.items()]


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
        pid_type: the PID class; its instances cross as their wire string (``pid.wire``).
        pid_from_string: turns a PID string from the peer back into a PID (a local PID
            when it names this node, else a remote one); raises ``ValueError`` when bad.
        pid_code: the codec extension code of a PID (the kernel's).
    """

    __slots__ = (
        "_codec",
        "_decoders",
        "_encoder",
        "_names",
        "_pid_from_string",
        "_pid_type",
        "registry",
    )

    def __init__(
        self,
        registry: MessageRegistry,
        pid_type: type,
        pid_from_string: Callable[[str], object],
        *,
        pid_code: int = PID_CODE,
    ) -> None:
        self.registry = registry
        self._names = {cls: name for name, cls in registry.classes()}
        self._pid_type = pid_type
        self._pid_from_string = pid_from_string
        self._encoder = msgspec.msgpack.Encoder(enc_hook=self._enc_hook)
        self._decoders: dict[str, msgspec.msgpack.Decoder[Any]] = {
            name: msgspec.msgpack.Decoder(cls, dec_hook=self._dec_hook)
            for name, cls in registry.classes()
        }
        # tocsin's own message types cross too: ``Call`` (durable actors' method calls).
        extensions = [Extension(pid_code, pid_type, _pid_wire, self._pid_from_wire), CALL_EXTENSION]
        classes = tuple(cls for _, cls in registry.classes())
        if classes:
            extensions.append(
                Extension(MESSAGE_CODE, classes, self._message_to_wire, self._message_from_wire)
            )
        self._codec = Codec(extensions)

    def encode(self, value: object, *, name: str = "message") -> tuple[str, bytes]:
        """``(wire name, payload)`` for ``value``; the name is ``""`` for a codec value.

        Raises:
            CodecError: ``value`` holds something that cannot cross (not codec-safe, not a
                PID, not a registered message, or a registered message whose fields
                msgspec cannot encode), a cycle, or nests too deep.
        """
        wire = self._names.get(type(value))
        if wire is not None:
            try:
                return wire, self._encoder.encode(value)
            except (TypeError, ValueError, OverflowError):
                return wire, self._encode_registered(value, name)  # raises, with context
        try:
            return "", self._codec.encode(value, name=name)
        except CodecError as exc:
            raise CodecError(f"{exc}; remoting also allows {self.registry.describe()}") from None

    def decode(self, name: str, data: bytes | memoryview | msgspec.Raw) -> object:
        """The value sent as ``(name, data)``. Never runs code named by the data.

        Raises:
            CodecError: malformed data, an unknown message name, fields that do not fit
                this node's class.
        """
        if not name:
            return self._codec.decode(data)  # type: ignore[arg-type]  # any buffer works
        decoder = self._decoders.get(name)
        if decoder is None:
            raise self._unknown(name)
        try:
            return decoder.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise CodecError(f"cannot decode message {name!r}: {exc}") from exc

    # -- msgspec hooks ------------------------------------------------------------------

    def _encode_registered(self, value: object, where: str) -> bytes:
        try:
            return self._encoder.encode(value)
        except (TypeError, ValueError, OverflowError) as exc:
            raise CodecError(
                f"{where}: cannot encode {type(value).__name__}: {exc} (registered messages "
                "are encoded by msgspec: their fields must be msgspec-encodable or PIDs)"
            ) from exc

    def _enc_hook(self, value: object) -> object:
        if type(value) is self._pid_type:
            return _pid_wire(value)
        raise TypeError(f"{type(value)!r} is not msgspec-encodable")

    def _dec_hook(self, cls: type, value: object) -> object:
        if cls is self._pid_type and type(value) is str:
            return self._pid_from_string(value)
        raise TypeError(f"cannot decode a {cls!r}")

    def _unknown(self, name: object) -> CodecError:
        return CodecError(
            f"cannot decode message: {name!r} is not a registered message on this "
            f"node (registered: {', '.join(self.registry.names) or 'none'})"
        )

    # -- codec extensions (PIDs and registered messages inside codec values) ---------------

    def _pid_from_wire(self, value: object) -> object:
        if type(value) is not str:
            raise CodecError("cannot decode message: a PID is one string")
        try:
            return self._pid_from_string(value)
        except ValueError as exc:
            raise CodecError(f"cannot decode message: bad PID {value!r}: {exc}") from exc

    def _message_to_wire(self, value: object) -> object:
        known = self.registry.lookup_type(type(value))
        assert known is not None
        return [known[0], self._encode_registered(value, "message")]

    def _message_from_wire(self, items: object) -> object:
        if type(items) is not list or len(items) != 2 or type(items[1]) is not bytes:
            raise CodecError("cannot decode message: a registered message is [name, bytes]")
        if type(items[0]) is not str or not items[0]:
            raise self._unknown(items[0])
        return self.decode(items[0], items[1])

    def __str__(self) -> str:
        return self.registry.describe()


def _pid_wire(pid: Any) -> str:
    wire = getattr(pid, "wire", None)
    return wire if isinstance(wire, str) else str(pid)
