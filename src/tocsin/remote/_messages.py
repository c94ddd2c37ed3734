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

Decoding costs what it reads (docs/security.md). msgspec builds the sets, frozensets and
dicts of a typed field, and the tuple-keyed dicts of an ``Any`` one, before any hook of
ours runs, and the hashes of ints, tuples, frozensets and UUIDs are not randomized: a peer
could send thousands of members with one hash. A frame of a class whose fields can hold
such a container (``Any``, ``set``, ``frozenset``, a dict not keyed by ``str``), when
longer than ``SCAN_ABOVE`` bytes, is first scanned (a map of ``HASH_CHECK_FROM`` entries
or more keyed by arrays is refused), then decoded untyped (only str- and scalar-keyed
maps: linear) and walked along the class's annotations: each set's members and each
dict's keys, converted to their annotated type one at a time, must not share a hash more
than ``MAX_EQUAL_HASHES`` times. Only then does the typed decoder build it. Smaller frames
and classes without such fields go straight to msgspec. A ``re.Pattern`` field is refused
at registration (decoding one would run the regex compiler).

Rejected alternatives: pickle (runs code named by the peer); one msgspec ``Union`` of every
registered Struct (dataclasses cannot be tagged, and codec values would need a second
path anyway); walking Struct fields in Python (10x slower than msgspec's own encoder).
"""

from __future__ import annotations

import collections.abc as abc
import dataclasses
import re
import types
import typing
from collections.abc import Callable, Iterable
from typing import Any, Final, final

import msgspec

from .._codec import (
    HASH_CHECK_FROM,
    SCAN_ABOVE,
    Codec,
    CostlyDecodeError,
    Extension,
    check_hashes,
    scan_wire,
)
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
        TypeError: an entry is not a ``msgspec.Struct`` subclass or a dataclass, or one of
            its fields can hold a ``re.Pattern``.
        ValueError: two classes share a wire name.
    """

    __slots__ = ("_by_name", "_by_type")

    def __init__(self, classes: Iterable[type]) -> None:
        by_name: dict[str, tuple[type, tuple[str, ...]]] = {}
        by_type: dict[type, tuple[str, tuple[str, ...]]] = {}
        for cls in classes:
            fields = _fields(cls)
            _refuse_patterns(cls)
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


def _refuse_patterns(cls: type) -> None:
    for node in _type_nodes(msgspec.inspect.type_info(cls)):
        if isinstance(node, msgspec.inspect.CustomType) and issubclass(node.cls, re.Pattern):
            raise TypeError(
                f"`messages` entry {cls!r} has a field that can hold a re.Pattern: decoding "
                "one would run the regex compiler on a peer's bytes; give the field the "
                "pattern's source string (str) and compile it where it is used"
            )


def _type_nodes(root: msgspec.inspect.Type) -> Iterable[msgspec.inspect.Type]:
    """Every node of a msgspec type tree, each once (recursive Structs end)."""
    seen: set[int] = set()
    todo = [root]
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        for attr in ("type", "item_type", "key_type", "value_type"):
            sub = getattr(node, attr, None)
            if isinstance(sub, msgspec.inspect.Type):
                todo.append(sub)
        for attr in ("types", "item_types"):
            todo.extend(getattr(node, attr, ()))
        todo.extend(field.type for field in getattr(node, "fields", ()))


def _builds_hashed(cls: type) -> bool:
    """Whether msgspec may build a set or a non-``str``-keyed dict decoding ``cls``."""
    for node in _type_nodes(msgspec.inspect.type_info(cls)):
        if isinstance(
            node,
            msgspec.inspect.AnyType | msgspec.inspect.SetType | msgspec.inspect.FrozenSetType,
        ):
            return True
        if isinstance(node, msgspec.inspect.DictType) and not isinstance(
            node.key_type, msgspec.inspect.StrType
        ):
            return True
    return False


_SETS: Final = frozenset({set, frozenset, abc.Set, abc.MutableSet})
_MAPS: Final = frozenset({dict, abc.Mapping, abc.MutableMapping})
_SEQUENCES: Final = frozenset(
    {list, abc.Sequence, abc.MutableSequence, abc.Collection, abc.Iterable}
)
_UNIONS: Final = frozenset({typing.Union, types.UnionType})
#: Annotations whose untyped value is already what the typed decoder builds (hash included).
_SCALARS: Final = frozenset({int, str, float, bool, bytes, None, type(None), Any, object})


@final
class _HashGuard:
    """Walks an untyped decoded frame along a class's annotations and refuses any set or
    non-``str``-keyed dict whose members, as the typed decoder would build them, share a
    hash too often (``check_hashes``). Linear: each member is converted once, after its
    own inner containers were checked."""

    __slots__ = ("_dec_hook", "_hints", "_plain")

    def __init__(self, dec_hook: Callable[[type, object], object]) -> None:
        self._dec_hook = dec_hook
        self._hints: dict[type, tuple[tuple[str, Any], ...]] = {}
        self._plain: dict[Any, bool] = {}

    def plain(self, ann: Any) -> bool:
        """Whether values of ``ann`` can hold no set or non-``str``-keyed dict built by
        msgspec (then the walk skips them; ``Any`` is untyped: the scan covered it)."""
        try:
            known = self._plain.get(ann)
        except TypeError:  # an unhashable annotation: walk it
            return False
        if known is None:
            self._plain[ann] = False  # a recursive class is not plain while we look
            known = self._is_plain(ann)
            self._plain[ann] = known
        return known

    def _is_plain(self, ann: Any) -> bool:
        if ann in _SCALARS:
            return True
        origin = typing.get_origin(ann)
        args = typing.get_args(ann)
        if origin is typing.Annotated:
            return self.plain(args[0])
        if origin in _UNIONS or origin is tuple or origin in _SEQUENCES:
            return all(self.plain(arg) for arg in args if arg is not Ellipsis)
        if origin is None and isinstance(ann, type):
            if ann is tuple or ann is list:
                return True
            if issubclass(ann, msgspec.Struct) or dataclasses.is_dataclass(ann):
                return not _builds_hashed(ann)
        return False

    def check(self, value: object, ann: Any) -> None:
        if self.plain(ann):
            return
        origin = typing.get_origin(ann)
        args = typing.get_args(ann)
        if origin is typing.Annotated:
            self.check(value, args[0])
        elif origin in _UNIONS:
            for member in args:
                self.check(value, member)
        elif ann is Any or ann is object:
            return  # untyped: the scan left only scalar-keyed big maps, and no sets
        elif origin is None and isinstance(ann, type) and ann not in _SETS | _MAPS:
            if ann is tuple or ann is list:
                return
            self._record(value, ann)
        else:
            self._container(value, origin or ann, args)

    def _record(self, value: object, cls: type) -> None:
        hints = self._fields(cls)
        if not hints:
            return
        if type(value) is dict:
            for name, ann in hints:
                if name in value:
                    self.check(value[name], ann)
        elif type(value) is list:  # array_like Structs, NamedTuples
            for item, (_, ann) in zip(value, hints, strict=False):
                self.check(item, ann)

    def _fields(self, cls: type) -> tuple[tuple[str, Any], ...]:
        known = self._hints.get(cls)
        if known is not None:
            return known
        hints: tuple[tuple[str, Any], ...] = ()
        if issubclass(cls, msgspec.Struct):
            hints = tuple((f.encode_name, f.type) for f in msgspec.structs.fields(cls))
        elif (
            dataclasses.is_dataclass(cls)
            or typing.is_typeddict(cls)
            or (issubclass(cls, tuple) and hasattr(cls, "_fields"))
        ):
            hints = tuple(typing.get_type_hints(cls).items())
        self._hints[cls] = hints
        return hints

    def _container(self, value: object, base: Any, args: tuple[Any, ...]) -> None:
        if base is tuple and type(value) in (list, tuple):
            assert isinstance(value, list | tuple)
            if len(args) == 2 and args[1] is Ellipsis:
                for item in value:
                    self.check(item, args[0])
            else:
                for item, ann in zip(value, args, strict=False):
                    self.check(item, ann)
        elif base in _SEQUENCES and type(value) is list:
            assert isinstance(value, list)
            item_ann = args[0] if args else Any
            if not self.plain(item_ann):
                for item in value:
                    self.check(item, item_ann)
        elif base in _SETS and type(value) is list:
            assert isinstance(value, list)
            item_ann = args[0] if args else Any
            if not self.plain(item_ann):
                for item in value:
                    self.check(item, item_ann)
            if len(value) >= HASH_CHECK_FROM:
                check_hashes(list(map(self._typed(item_ann), value)), "set")
        elif base in _MAPS and type(value) is dict:
            assert isinstance(value, dict)
            key_ann, value_ann = args if len(args) == 2 else (Any, Any)
            if not self.plain(key_ann):
                for key in value:
                    self.check(key, key_ann)
            if not self.plain(value_ann):
                for item in value.values():
                    self.check(item, value_ann)
            if len(value) >= HASH_CHECK_FROM and key_ann is not str:
                check_hashes(list(map(self._typed(key_ann), value)), "dict")

    def _typed(self, ann: Any) -> Callable[[object], object]:
        """What turns an untyped member into the value the typed decoder would build (a
        fresh object where it would fail: then the typed decode fails, nothing built)."""
        if ann in _SCALARS:
            return _as_is
        args = typing.get_args(ann)
        if typing.get_origin(ann) is tuple and all(
            arg in _SCALARS for arg in args if arg is not Ellipsis
        ):
            return _as_tuple  # what convert builds, without its per-call cost
        dec_hook = self._dec_hook

        def convert(value: object) -> object:
            try:
                return msgspec.convert(value, ann, dec_hook=dec_hook)
            except (msgspec.ValidationError, TypeError, ValueError):
                return object()

        return convert


def _as_is(value: object) -> object:
    return value if type(value) is not list else object()


def _as_tuple(value: object) -> object:
    return tuple(value) if type(value) is list else object()


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
        "_guarded",
        "_hash_guard",
        "_names",
        "_pid_from_string",
        "_pid_type",
        "registry",
        "unguarded",
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
        # The classes whose decoding may build a set or a non-str-keyed dict: their big
        # frames are checked first (module docstring).
        self._guarded: dict[str, type] = {
            name: cls for name, cls in registry.classes() if _builds_hashed(cls)
        }
        #: The typed decoders of the registered classes that are never checked first
        #: (none of their fields can build a hashed container): :meth:`decode` of such a
        #: name is this decoder's ``decode``, with its errors as :meth:`decode_error`
        #: says. For a caller on the hot path (a flood's every frame) that saves a call.
        self.unguarded: Final[dict[str, msgspec.msgpack.Decoder[Any]]] = {
            name: decoder for name, decoder in self._decoders.items() if name not in self._guarded
        }
        self._hash_guard = _HashGuard(self._dec_hook)
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

        Guarantees its cost is linear in the length of ``data`` (module docstring).

        Raises:
            CostlyDecodeError: a set or dict whose members share one hash more than
                ``MAX_EQUAL_HASHES`` times, or (above ``SCAN_ABOVE`` bytes) a big map
                keyed by arrays.
            CodecError: malformed data, an unknown message name, fields that do not fit
                this node's class.
        """
        if not name:
            return self._codec.decode(data)  # type: ignore[arg-type]  # any buffer works
        decoder = self._decoders.get(name)
        if decoder is None:
            raise self._unknown(name)
        if len(data) > SCAN_ABOVE and name in self._guarded:
            self._guard(name, data)
        try:
            return decoder.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise self.decode_error(name, exc) from exc

    @staticmethod
    def decode_error(name: str, exc: Exception) -> CodecError:
        """The error of a registered message ``name`` msgspec could not decode."""
        return CodecError(f"cannot decode message {name!r}: {exc}")

    def _guard(self, name: str, data: bytes | memoryview | msgspec.Raw) -> None:
        try:
            scan_wire(data)
            tree = msgspec.msgpack.decode(data)
            self._hash_guard.check(tree, self._guarded[name])
        except CostlyDecodeError as exc:
            raise CostlyDecodeError(f"message {name!r}: {exc}") from None
        except CodecError:
            return  # malformed: the typed decode below says how
        except RecursionError as exc:
            raise CodecError(f"cannot decode message {name!r}: nested too deep") from exc
        except (msgspec.DecodeError, TypeError, ValueError):
            return  # the typed decode below says what is wrong

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
