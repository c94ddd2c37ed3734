# SPDX-License-Identifier: Apache-2.0
"""Durable payloads to bytes and back: msgspec msgpack, exact types, never pickle.

The codec-safe set is closed: ``None``, ``bool``, ``int`` (any size), ``float`` (NaN and
infinities included), ``str``, ``bytes``, ``list``, ``tuple``, ``dict`` (keys: any
codec-safe hashable value), ``set``, ``frozenset``, ``datetime`` and ``date``. Every
value comes back as the *exact* type it went in as: a tuple stays a tuple, a set a set,
``True`` stays ``True`` (not ``1``), a big int stays exact.

Representation. msgpack natives carry what they can carry losslessly: nil, bool, int in
[-2**63, 2**64), float, str, bin (bytes), array (list) and map (a dict whose keys are all
``str``). Everything else is a msgpack extension whose data is itself msgpack:

====  ==============================================================================
code  meaning
====  ==============================================================================
1     tuple: array of items
2     set: array of items
3     frozenset: array of items
4     dict with some non-``str`` key: flat array ``[k0, v0, k1, v1, ...]``
      (msgspec cannot use an extension value as a map key, so such dicts are pairs)
5     int outside the 64-bit range: big-endian two's complement bytes
6     datetime: ``[y, mo, d, h, mi, s, us, fold, utc_offset_us | nil]``
7     date: ``[y, mo, d]``
8     (retired) re.Pattern: refused on encode and on decode, see "Decoding costs what it
      reads" below
====  ==============================================================================

Decisions (documented in ``docs/durable.md``):

* **Exact types only.** Subclasses of the allowed types (``OrderedDict``, ``defaultdict``,
  namedtuples, ``IntEnum``/``StrEnum`` members, pandas ``Timestamp``) are *rejected*, not
  normalised: normalising would hand the task back a different type than was scheduled,
  which is the silent surprise this codec exists to prevent. ``bool`` is checked before
  ``int`` and is exact too.
* **Time zones are reduced to their UTC offset.** An aware ``datetime`` comes back aware,
  with the exact offset it had (microseconds included) as a fixed
  :class:`datetime.timezone`; a ``zoneinfo`` zone name is not kept (it would tie stored
  payloads to the tz database of the reading process). The instant is exact; naive stays
  naive; ``fold`` is kept.
* **Cycles and depth.** A container that contains itself raises :class:`CodecError` (the
  same object may appear twice side by side: that is shared, not circular, and is stored
  twice). Nesting deeper than :data:`MAX_DEPTH` raises too, on encode and on decode.
* **Hostile bytes.** Decoding never runs code (no pickle, no eval, no imports, no lookups
  by name): the only constructors reachable are the ones above. Any malformed input
  raises :class:`CodecError`, and nothing else.
* **Decoding costs what it reads** (docs/security.md). No type whose construction runs a
  compiler: ``re.Pattern`` was in the set before 0.1 and is not any more, because
  ``re.compile`` of one 8 KB pattern took seconds (and a peer could set ``re.DEBUG`` and
  make the receiver print); a pattern travels as its source string and is compiled by
  the code that uses it. Extension 8 (what older releases wrote for a pattern) is refused
  with a :class:`CodecError` naming it. Sets, frozensets and non-``str``-keyed dicts:
  Python's hashes of int, float, tuple and frozenset are not randomized, so a peer can
  send thousands of members with one hash and make building the set quadratic; a
  container of :data:`HASH_CHECK_FROM` or more members whose largest group of equal
  hashes exceeds :data:`MAX_EQUAL_HASHES` is refused (legitimate data has groups of one
  or two: ``hash(-1) == hash(-2)``). Native msgpack maps are built by msgspec before any
  hook runs, and msgspec accepts array (tuple) keys there; the encoder writes native maps
  only for all-``str`` keys (whose hashes are randomized), so above
  :data:`SCAN_ABOVE` bytes the input is first scanned (linear, in Python) and a native
  map with a key that is not a ``str`` is refused. Below it the worst such map costs a
  few milliseconds, which is what those bytes cost anyway.

Extensions. Layers above add types they own (a PID as its string form, ``Call``, later
the remote layer's registered message classes) through :class:`Codec`, which takes
:class:`Extension` values with codes 16-127 (1-15 belong to the codec). The plain
:func:`encode`/:func:`decode` know none: durable payloads stay the closed set above.

Prior art: msgspec's ``Ext``/``ext_hook`` examples; Temporal's and Celery's "payload
converters" (which is where the "exact types, fail at schedule time" rule comes from:
pickled payloads there fail at run time, long after the bug).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from typing import Any, Final, final

import msgspec

from .errors import CodecError

__all__ = [
    "ALLOWED_TYPES",
    "EXTENSION_CODES",
    "HASH_CHECK_FROM",
    "MAX_DEPTH",
    "MAX_EQUAL_HASHES",
    "SCAN_ABOVE",
    "Codec",
    "CostlyDecodeError",
    "Extension",
    "check_hashes",
    "decode",
    "encode",
    "scan_wire",
]

#: Containers nested deeper than this are refused (on encode and on decode): it bounds the
#: recursion of both directions well below Python's own limit.
MAX_DEPTH: Final = 100

#: Sets, frozensets and non-``str``-keyed dicts of this many members or more have their
#: members' hashes counted on decode (below it, the worst collision costs nothing).
HASH_CHECK_FROM: Final = 64

#: The most members of one decoded set (or keys of one dict) that may share one hash: at
#: most this many probes per insertion, so building it stays linear in its size.
MAX_EQUAL_HASHES: Final = 32

#: Inputs longer than this (bytes) are scanned for native maps with non-``str`` keys
#: before msgspec builds them; a colliding-key map in fewer bytes costs a few ms at most.
SCAN_ABOVE: Final = 8192

#: Human-readable list for error messages.
ALLOWED_TYPES: Final = (
    "None, bool, int, float, str, bytes, list, tuple, dict, set, frozenset, "
    "datetime.datetime, datetime.date"
)

_TUPLE: Final = 1
_SET: Final = 2
_FROZENSET: Final = 3
_PAIRS: Final = 4
_BIGINT: Final = 5
_DATETIME: Final = 6
_DATE: Final = 7
_RETIRED_PATTERN: Final = 8

_INT_MIN: Final = -(2**63)
_INT_MAX: Final = 2**64 - 1

_Ext = msgspec.msgpack.Ext
_ENCODER: Final = msgspec.msgpack.Encoder()
_SCALARS: Final = frozenset({type(None), bool, float, str, bytes})
_ALLOWED: Final = frozenset(
    {type(None), bool, int, float, str, bytes, list, tuple, dict, set, frozenset} | {datetime, date}
)


class CostlyDecodeError(CodecError):
    """Bytes refused because decoding them would cost more than linear time (colliding
    set members or dict keys, a native map with keys that could collide): an attack, not
    a mistake, so remoting closes the connection that sent them (as for a malformed
    frame) instead of only dropping the message."""


#: Extension codes available to the layers above (1-15 are the codec's own).
EXTENSION_CODES: Final = range(16, 128)


@final
@dataclass(frozen=True, slots=True)
class Extension:
    """How one type the codec does not know crosses it.

    Attributes:
        code: the msgpack extension code, in :data:`EXTENSION_CODES`.
        cls: the exact type encoded this way (subclasses are not), or a tuple of types
            sharing the code (``to_wire`` then names which one; remoting's registered
            message classes).
        to_wire: the value as a codec-safe value (itself encoded by the same codec).
        from_wire: the decoded codec-safe value back to the type; raise ``CodecError``
            (or ``ValueError``/``TypeError``) on a malformed one.
    """

    code: int
    cls: type | tuple[type, ...]
    to_wire: Callable[[Any], object]
    from_wire: Callable[[Any], object]


@final
class _Table:
    __slots__ = ("by_code", "by_type")

    def __init__(self, extensions: Iterable[Extension]) -> None:
        self.by_code: dict[int, Extension] = {}
        self.by_type: dict[type, Extension] = {}
        for ext in extensions:
            if ext.code not in EXTENSION_CODES:
                raise ValueError(f"extension code must be in 16..127, got {ext.code!r}")
            classes = ext.cls if isinstance(ext.cls, tuple) else (ext.cls,)
            if ext.code in self.by_code or any(cls in self.by_type for cls in classes):
                raise ValueError(f"extension {ext!r} reuses a code or a type")
            self.by_code[ext.code] = ext
            for cls in classes:
                self.by_type[cls] = ext


# The extensions of the Codec whose encode/decode is running (None: the plain functions).
# A context variable rather than a parameter: the base walk stays as fast as before, and
# the table is only consulted for a type or a code the base codec does not know.
_EXTENSIONS: ContextVar[_Table | None] = ContextVar("tocsin_codec_extensions", default=None)


@final
class Codec:
    """The base codec plus :class:`Extension` types (what the wire uses).

    Guarantees the same as :func:`encode`/:func:`decode`, for the base set and the
    extension types: exact types back, nothing executed on decode, ``CodecError`` for
    anything else.

    Raises:
        ValueError: an extension code outside 16..127, or a code or type given twice.
    """

    __slots__ = ("_table",)

    def __init__(self, extensions: Iterable[Extension] = ()) -> None:
        self._table = _Table(extensions)

    def extended(self, *extensions: Extension) -> Codec:
        """A new codec with these extensions added."""
        return Codec([*self._table.by_code.values(), *extensions])

    def encode(self, value: object, *, name: str = "message") -> bytes:
        """Like :func:`encode`, with this codec's extensions."""
        token = _EXTENSIONS.set(self._table)
        try:
            return encode(value, name=name)
        finally:
            _EXTENSIONS.reset(token)

    def decode(self, data: bytes) -> object:
        """Like :func:`decode`, with this codec's extensions."""
        token = _EXTENSIONS.set(self._table)
        try:
            return decode(data)
        finally:
            _EXTENSIONS.reset(token)


def encode(value: object, *, name: str = "payload") -> bytes:
    """Encode a codec-safe value to bytes.

    Guarantees ``decode(encode(v))`` has exactly the types of ``v``, all the way down, and
    compares equal to it (aware datetimes keep their instant and UTC offset, not a zone
    name). Never pickles.

    Args:
        value: the value to encode.
        name: what to call the value in error messages (``"payload"``, ``"storage['k']"``).

    Returns:
        msgpack bytes.

    Raises:
        CodecError: ``value`` contains something outside the codec-safe set, a subclass
            of an allowed type, a str with a lone surrogate, a circular reference, or
            nests deeper than :data:`MAX_DEPTH`. The message names the offending type and
            its location, e.g. ``payload['a'][2]: cannot encode <class 'function'>;
            allowed: ...``.
    """
    tree = _to_wire(value, (None, name, None), 0, set())
    try:
        return _ENCODER.encode(tree)
    except UnicodeEncodeError as exc:
        # A lone surrogate ("\ud800") is a Python str but not text: UTF-8, and so
        # msgpack, SQLite and PostgreSQL, cannot hold it (issue 10, item 9).
        bad = exc.object[exc.start : exc.end]
        raise CodecError(
            f"{name}: cannot encode a str holding the lone surrogate {bad!r}; "
            "allowed: str that UTF-8 can encode"
        ) from None


def decode(data: bytes) -> object:
    """Decode bytes made by :func:`encode`.

    Guarantees it never executes code, whatever ``data`` holds.

    Args:
        data: bytes from :func:`encode` (or from anywhere: they are not trusted).

    Returns:
        The value, with its original exact types.

    Guarantees its cost is linear in ``len(data)``: nothing compiled, no set or dict whose
    members collide quadratically (see the module docstring).

    Raises:
        CodecError: ``data`` is not a valid encoding (truncated, malformed, unknown
            extension, unhashable set member or dict key, nesting too deep), holds a
            retired ``re.Pattern``, a native map with a non-``str`` key (above
            :data:`SCAN_ABOVE` bytes), or a set or dict whose members share one hash
            more than :data:`MAX_EQUAL_HASHES` times.
    """
    try:
        if len(data) > SCAN_ABOVE:
            _scan(data, 0)
        return _decode(data, 0)
    except CodecError:
        raise
    except RecursionError as exc:
        raise CodecError("cannot decode payload: nested too deep") from exc
    except Exception as exc:
        # One boundary: msgspec.DecodeError, ValueError from a bad date, TypeError from an
        # unhashable key, OverflowError, re.error ... all mean "these bytes are bad".
        raise CodecError(f"cannot decode payload: {type(exc).__name__}: {exc}") from exc


# --- encode ------------------------------------------------------------------------------


# Where a value sits, as a linked list ``(parent, how, key)`` built for free while walking
# and formatted only on error: formatting eagerly (``f"{path}[{k!r}]"`` per item) tripled
# the cost of encoding a typical small payload.
_Path = tuple[Any, str, Any]


def _fmt(path: _Path) -> str:
    parts: list[str] = []
    node: _Path | None = path
    while node is not None:
        parent, how, key = node
        if parent is None:
            parts.append(how)
        elif how == "[]":
            parts.append(f"[{key!r}]")
        else:
            parts.append(f"<{how} #{key}>")
        node = parent
    return "".join(reversed(parts))


def _reject(value: object, where: _Path) -> CodecError:
    path = _fmt(where)
    cls = type(value)
    base = next((t for t in cls.__mro__[1:] if t in _ALLOWED and t is not object), None)
    if base is not None:
        return CodecError(
            f"{path}: cannot encode {cls!r}, a subclass of {base.__name__}: only the exact "
            f"type is codec-safe (convert it, e.g. {base.__name__}(value)); "
            f"allowed: {ALLOWED_TYPES}"
        )
    return CodecError(f"{path}: cannot encode {cls!r}; allowed: {ALLOWED_TYPES}")


def _to_wire(value: object, path: _Path, depth: int, stack: set[int]) -> Any:
    """Convert to msgpack natives and ``Ext``; ``stack`` holds ids of open containers."""
    cls = type(value)
    if cls in _SCALARS:
        return value
    if cls is int:
        assert isinstance(value, int)
        if _INT_MIN <= value <= _INT_MAX:
            return value
        size = (value.bit_length() + 8) // 8
        return _Ext(_BIGINT, value.to_bytes(size, "big", signed=True))
    if cls is datetime:
        assert isinstance(value, datetime)
        offset = value.utcoffset()
        off_us = None
        if offset is not None:
            off_us = (offset.days * 86_400 + offset.seconds) * 1_000_000 + offset.microseconds
        fields: list[int | None] = [value.year, value.month, value.day, value.hour]
        fields += [value.minute]
        fields += [value.second, value.microsecond, value.fold, off_us]
        return _Ext(_DATETIME, _ENCODER.encode(fields))
    if cls is date:
        assert isinstance(value, date)
        return _Ext(_DATE, _ENCODER.encode([value.year, value.month, value.day]))
    if cls is re.Pattern:
        raise CodecError(
            f"{_fmt(path)}: cannot encode a re.Pattern: decoding one would run the regex "
            "compiler on bytes from a store or a peer; send its source string "
            "(pattern.pattern, and pattern.flags if any) and compile it where it is used"
        )
    if cls not in (list, tuple, dict, set, frozenset):
        table = _EXTENSIONS.get()
        ext = None if table is None else table.by_type.get(cls)
        if ext is None:
            raise _reject(value, path)
        if depth >= MAX_DEPTH:
            raise CodecError(f"{_fmt(path)}: nested deeper than {MAX_DEPTH} containers")
        inner = _to_wire(ext.to_wire(value), (path, cls.__name__, 0), depth + 1, stack)
        return _Ext(ext.code, _ENCODER.encode(inner))

    # A container: guard against cycles (ids on the current path only, so a shared,
    # non-circular sub-value is fine) and runaway depth.
    if depth >= MAX_DEPTH:
        raise CodecError(f"{_fmt(path)}: nested deeper than {MAX_DEPTH} containers")
    key = id(value)
    if key in stack:
        raise CodecError(
            f"{_fmt(path)}: circular reference to a {cls.__name__} that contains itself"
        )
    stack.add(key)
    try:
        return _container(value, path, depth + 1, stack)
    finally:
        stack.discard(key)


def _container(value: object, path: _Path, depth: int, stack: set[int]) -> Any:
    # Leaves are passed through inline (``v if type(v) in _SCALARS``): a call per leaf was
    # most of the cost of a typical payload.
    scalars = _SCALARS
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if type(k) is not str:
                return _pairs(value, path, depth, stack)
            out[k] = v if type(v) in scalars else _to_wire(v, (path, "[]", k), depth, stack)
        return out
    if isinstance(value, list):
        return [
            v if type(v) in scalars else _to_wire(v, (path, "[]", i), depth, stack)
            for i, v in enumerate(value)
        ]
    assert isinstance(value, tuple | set | frozenset)
    # Set members have no index; "<item #i>" (iteration order) still points at the culprit.
    how = "[]" if isinstance(value, tuple) else "item"
    items = [
        v if type(v) in scalars else _to_wire(v, (path, how, i), depth, stack)
        for i, v in enumerate(value)
    ]
    code = _TUPLE if isinstance(value, tuple) else _SET if type(value) is set else _FROZENSET
    return _Ext(code, _ENCODER.encode(items))


def _pairs(value: dict[Any, Any], path: _Path, depth: int, stack: set[int]) -> Any:
    """A dict with a non-``str`` key: a flat ``[k0, v0, k1, v1, ...]`` extension."""
    flat: list[Any] = []
    for i, (k, v) in enumerate(value.items()):
        flat.append(_to_wire(k, (path, "key", i), depth, stack))
        flat.append(_to_wire(v, (path, "[]", k), depth, stack))
    return _Ext(_PAIRS, _ENCODER.encode(flat))


# --- decode ------------------------------------------------------------------------------


def _decode(data: bytes | bytearray | memoryview, depth: int) -> object:
    if depth > MAX_DEPTH:
        raise CodecError(f"cannot decode payload: nested deeper than {MAX_DEPTH}")

    def hook(code: int, ext: memoryview) -> object:
        return _from_ext(code, ext, depth + 1)

    return msgspec.msgpack.decode(data, ext_hook=hook)


def _array(ext: memoryview, depth: int, what: str) -> list[Any]:
    items = _decode(ext, depth)
    if type(items) is not list:
        raise CodecError(f"cannot decode payload: {what} extension does not hold an array")
    return items


def _from_ext(code: int, ext: memoryview, depth: int) -> object:
    decoder = _EXT_DECODERS.get(code)
    if decoder is None:
        table = _EXTENSIONS.get()
        extension = None if table is None else table.by_code.get(code)
        if extension is None:
            raise CodecError(f"cannot decode payload: unknown extension code {code}")
        return extension.from_wire(_decode(ext, depth))
    return decoder(ext, depth)


def _dict(ext: memoryview, depth: int) -> dict[Any, Any]:
    flat = _array(ext, depth, "dict")
    if len(flat) % 2:
        raise CodecError("cannot decode payload: dict extension holds an odd number of items")
    keys = flat[0::2]
    check_hashes(keys, "dict")
    return dict(zip(keys, flat[1::2], strict=True))


def _members(ext: memoryview, depth: int, what: str) -> list[Any]:
    items = _array(ext, depth, what)
    check_hashes(items, what)
    return items


def check_hashes(items: list[Any], what: str) -> None:
    """Refuse members that would make building the set or dict quadratic.

    ``Counter`` of the hashes is safe itself: a hash is an int below 2**63, and ints
    collide in a dict only modulo 2**61 - 1, so at most a handful per bucket.
    """
    if len(items) < HASH_CHECK_FROM:
        return
    worst = max(Counter(map(hash, items)).values())
    if worst > MAX_EQUAL_HASHES:
        raise CostlyDecodeError(
            f"cannot decode payload: {worst} of the {len(items)} members of a {what} share "
            f"one hash (at most {MAX_EQUAL_HASHES} may): refused, building it would cost "
            "time quadratic in its size"
        )


def _bigint(ext: memoryview, depth: int) -> int:
    return int.from_bytes(ext, "big", signed=True)


def _datetime(ext: memoryview, depth: int) -> datetime:
    y, mo, d, h, mi, s, us, fold, off_us = _fields(ext, depth, "datetime", 9)
    tz = None if off_us is None else timezone(timedelta(microseconds=_int(off_us)))
    args = (_int(y), _int(mo), _int(d), _int(h), _int(mi), _int(s), _int(us))
    return datetime(*args, tzinfo=tz, fold=_int(fold))


def _date(ext: memoryview, depth: int) -> date:
    y, mo, d = _fields(ext, depth, "date", 3)
    return date(_int(y), _int(mo), _int(d))


def _retired_pattern(ext: memoryview, depth: int) -> object:
    # Never compiled: that is the point (docs/durable.md, "Payload codec", has the
    # migration note for rows written by a release that still stored patterns).
    raise CodecError(
        "cannot decode payload: it holds a re.Pattern (extension 8), which tocsin no "
        "longer decodes (compiling a regex from stored or received bytes costs unbounded "
        "time); store the pattern's source string instead"
    )


def _fields(ext: memoryview, depth: int, what: str, n: int) -> list[Any]:
    fields = _array(ext, depth, what)
    if len(fields) != n:
        raise CodecError(f"cannot decode payload: {what} extension needs {n} fields")
    return fields


def _int(value: object) -> int:
    if type(value) is not int:
        raise CodecError(f"cannot decode payload: expected an int field, got {type(value)!r}")
    return value


_EXT_DECODERS: Final[dict[int, Callable[[memoryview, int], object]]] = {
    _TUPLE: lambda ext, depth: tuple(_array(ext, depth, "tuple")),
    _SET: lambda ext, depth: set(_members(ext, depth, "set")),
    _FROZENSET: lambda ext, depth: frozenset(_members(ext, depth, "frozenset")),
    _PAIRS: _dict,
    _BIGINT: _bigint,
    _DATETIME: _datetime,
    _DATE: _date,
    _RETIRED_PATTERN: _retired_pattern,
}


# --- the scan of large inputs --------------------------------------------------------------


# What each msgpack head byte costs the scan: the whole item's length for an item of
# fixed size (ints, floats, nil, bools, fixstr: skipped in one step), else 0 (a str or
# bin with a length field, an array, a map, an extension: read below).
def _skip_table() -> tuple[int, ...]:
    table = [0] * 256
    for head in [*range(0x80), *range(0xE0, 0x100), 0xC0, 0xC2, 0xC3]:
        table[head] = 1
    for head in range(0xA0, 0xC0):
        table[head] = 1 + (head & 0x1F)
    fixed = {0xCA: 4, 0xCB: 8, 0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8}
    fixed |= {0xD0: 1, 0xD1: 2, 0xD2: 4, 0xD3: 8}
    for head, size in fixed.items():
        table[head] = 1 + size
    return tuple(table)


_SKIP: Final = _skip_table()
#: Width of the length field of str8/16/32 and bin8/16/32.
_SIZED: Final = {0xC4: 1, 0xC5: 2, 0xC6: 4, 0xD9: 1, 0xDA: 2, 0xDB: 4}
_EXT_SIZED: Final = {0xC7: 1, 0xC8: 2, 0xC9: 4}
_FIXEXT: Final = {0xD4: 1, 0xD5: 2, 0xD6: 4, 0xD7: 8, 0xD8: 16}
#: Heads of arrays, maps and extensions: what msgspec would build a hashable key from.
_CONTAINER_HEADS: Final = frozenset(
    [*range(0x80, 0xA0), 0xDC, 0xDD, 0xDE, 0xDF, *_FIXEXT, *_EXT_SIZED]
)


def _scan(data: bytes | bytearray | memoryview, depth: int) -> None:
    """Refuse a native map with a non-``str`` key in ``data`` or the extensions it holds.

    msgspec builds such a map (an array key becomes a tuple) before any hook of ours
    runs, and tuples of ints can be made to share one hash in any number. One pass over
    the bytes, no value built (items of fixed size are skipped by a table lookup); the
    extensions' bodies (codec msgpack, except a big int's bytes) are scanned the same
    way.
    """
    if depth > MAX_DEPTH:
        raise CodecError(f"cannot decode payload: nested deeper than {MAX_DEPTH}")
    buf = bytes(data)
    try:
        end = _scan_items(buf, depth)
    except IndexError:
        raise CodecError("cannot decode payload: truncated") from None
    if end > len(buf):
        raise CodecError("cannot decode payload: truncated")


def _scan_items(buf: bytes, depth: int, *, wire: bool = False) -> int:
    """The scan's loop over one msgpack document; returns where it ended.

    ``wire``: the document is msgspec's encoding of a registered remote message, not the
    codec's: a map may have keys of any scalar type (ints, floats, bytes), and only a map
    of :data:`HASH_CHECK_FROM` entries or more is refused for an array, map or extension
    key; extension bodies are not the codec's msgpack and are skipped.
    """
    skip = _SKIP
    pos = 0
    stack: list[tuple[int, int]] = []  # the enclosing containers' (items left, map size)
    left, keyed = 1, 0  # the open container: items (map: entries) left, its size if a map
    while True:
        if not left:
            if not stack:
                return pos
            left, keyed = stack.pop()
            continue
        left -= 1
        if keyed:
            head = buf[pos]
            if wire:  # a big map's entries, as items: a key when ``left`` is odd now
                if left % 2 and head in _CONTAINER_HEADS:
                    raise CostlyDecodeError(
                        f"cannot decode message: a map of {keyed} entries has a key that is "
                        "an array, a map or an extension (a tuple-keyed dict): refused "
                        f"above {SCAN_ABOVE} bytes, as its keys' hashes could collide; send "
                        "such a table as a list of pairs"
                    )
            elif 0xA0 <= head <= 0xBF:  # a map entry: its key must be a str
                pos += skip[head]
            elif 0xD9 <= head <= 0xDB:
                width = _SIZED[head]
                pos += 1 + width + int.from_bytes(buf[pos + 1 : pos + 1 + width], "big")
            else:
                raise CostlyDecodeError(
                    "cannot decode payload: a map has a key that is not a str (dicts with "
                    "other keys are written as extension 4)"
                )
        head = buf[pos]
        size = skip[head]
        if size:
            pos += size
            continue
        if 0x80 <= head <= 0x9F:
            count, is_map = head & 0x0F, head <= 0x8F
            pos += 1
        elif head in _SIZED:
            width = _SIZED[head]
            pos += 1 + width + int.from_bytes(buf[pos + 1 : pos + 1 + width], "big")
            continue
        elif 0xDC <= head <= 0xDF:
            width = 2 if head in (0xDC, 0xDE) else 4
            count = int.from_bytes(buf[pos + 1 : pos + 1 + width], "big")
            is_map = head >= 0xDE
            pos += 1 + width
        elif head in _FIXEXT or head in _EXT_SIZED:
            if head in _FIXEXT:
                size, pos = _FIXEXT[head], pos + 1
            else:
                width = _EXT_SIZED[head]
                size = int.from_bytes(buf[pos + 1 : pos + 1 + width], "big")
                pos += 1 + width
            if pos + 1 + size > len(buf):
                raise CodecError("cannot decode payload: truncated")
            if not wire and buf[pos] != _BIGINT:
                _scan(memoryview(buf)[pos + 1 : pos + 1 + size], depth + 1)
            pos += 1 + size
            continue
        else:
            raise CodecError(f"cannot decode payload: invalid msgpack byte 0x{head:02x}")
        if count:
            stack.append((left, keyed))
            if not wire:
                left, keyed = count, count if is_map else 0
            elif is_map:  # its keys are items too; only a big map's are checked
                left, keyed = 2 * count, count if count >= HASH_CHECK_FROM else 0
            else:
                left, keyed = count, 0


def scan_wire(data: bytes | bytearray | memoryview) -> None:
    """Refuse, in msgspec's encoding of a registered remote message, a map of
    :data:`HASH_CHECK_FROM` entries or more with an array, map or extension key.

    msgspec builds such a map (an array key becomes a tuple) before any check of ours can
    see it; scalar keys (str, bytes: randomized hashes; 64-bit ints and floats: a few
    dozen per hash at most) cannot be made to collide in numbers. One linear pass.

    Raises:
        CostlyDecodeError: such a map.
        CodecError: bytes that are not one msgpack document.
    """
    buf = bytes(data)
    try:
        end = _scan_items(buf, 0, wire=True)
    except IndexError:
        raise CodecError("cannot decode message: truncated") from None
    if end > len(buf):
        raise CodecError("cannot decode message: truncated")
