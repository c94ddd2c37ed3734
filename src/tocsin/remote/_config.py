# SPDX-License-Identifier: Apache-2.0
"""``Remoting``: the frozen, validated configuration of a node's remoting.

Everything is checked here, at construction, so a bad listen address, a short secret or
two message classes of one wire name fail where they are written, not at ``start()``.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final, final

from .._keywords import keyword_only
from ._address import NodeAddress
from ._messages import MessageRegistry

__all__ = ["MIN_SECRET_BYTES", "Remoting"]

#: The shortest shared secret accepted (bytes; a ``str`` is measured UTF-8 encoded).
MIN_SECRET_BYTES: Final = 16
_MiB: Final = 1 << 20
_WILDCARDS: Final = frozenset({"0.0.0.0", "::", "*"})


@final
@keyword_only()
@dataclass(frozen=True, slots=True, repr=False, kw_only=True)
class Remoting:
    """How a node takes part in remoting. Pass it as ``ActorSystem(remoting=...)``.

    Every option is keyword-only (``Remoting(listen=..., secret=...)``); the positional
    form still works for one release, with a ``DeprecationWarning``.

    Args:
        listen: ``"tcp://host:port"`` (port 0 picks a free port; ``system.address`` then
            shows the real one) or ``"unix:///absolute/path.sock"``.
        secret: the shared secret every node of the deployment holds, at least 16 bytes
            (``bytes`` or ``str``, UTF-8). Both sides of every connection prove they hold
            it before any frame is decoded. It authenticates peers; it does not encrypt
            (use TLS for that).
        advertise: the address peers dial when it differs from ``listen`` (``listen`` on
            ``0.0.0.0``, NAT, containers). Same forms as ``listen``, with a real port.
        messages: the classes that may cross the wire besides the codec-safe values and
            PIDs: ``msgspec.Struct`` subclasses and dataclasses. Each is named on the wire
            by its msgspec tag when it has a ``str`` one, else its ``__name__``; every
            node registers classes of the same names and fields.
        max_frame: largest frame accepted or sent, in bytes (default 4 MiB). It is
            checked from the 4-byte length prefix before the body is read.
        max_buffer: bytes of outbound frames one peer connection may hold unsent
            (default 16 MiB). A send beyond it is a dead letter (the event loop is never
            blocked waiting for the network).
        heartbeat: seconds between heartbeats on an idle connection (default 1.0); a
            connection that hears nothing for ``3 * heartbeat`` is closed as lost.
        reconnect_max: cap of the jittered exponential reconnect backoff, seconds
            (default 5.0; the first retry waits about 50 ms).
        connect_timeout: seconds a dial plus handshake may take (default 5.0).
        tls_cert, tls_key, tls_ca: optional mutual TLS, all three or none: this node's
            certificate chain and key (PEM files), and the CA file peers' certificates
            must chain to. Both directions require a certificate.

    Raises:
        ValueError: an address is malformed, the secret is shorter than 16 bytes, two
            message classes share a wire name, a size or time is not positive, or the TLS
            files are given partially or do not exist.
        TypeError: ``secret`` is not ``str``/``bytes``, or a message is not a class of an
            allowed kind.
    """

    listen: str
    secret: bytes | str = field(repr=False)
    advertise: str | None = None
    messages: Iterable[type] = ()
    max_frame: int = 4 * _MiB
    max_buffer: int = 16 * _MiB
    heartbeat: float = 1.0
    reconnect_max: float = 5.0
    connect_timeout: float = 5.0
    tls_cert: str | os.PathLike[str] | None = None
    tls_key: str | os.PathLike[str] | None = None
    tls_ca: str | os.PathLike[str] | None = None
    # Derived, validated forms (not constructor arguments).
    listen_address: NodeAddress = field(init=False, repr=False, compare=False)
    advertise_address: NodeAddress | None = field(init=False, repr=False, compare=False)
    registry: MessageRegistry = field(init=False, repr=False, compare=False)
    secret_bytes: bytes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "listen_address", NodeAddress.parse(self.listen, param="listen"))
        advertise = None
        if self.advertise is not None:
            advertise = NodeAddress.parse(self.advertise, param="advertise")
            if advertise.kind == "tcp" and advertise.port == 0:
                raise ValueError(
                    f"`advertise` needs the real port peers dial, got {self.advertise!r}"
                )
        listen = self.listen_address
        if advertise is None and listen.kind == "tcp" and listen.host in _WILDCARDS:
            raise ValueError(
                f"`listen` is {self.listen!r}, which peers cannot dial: give `advertise`, the "
                "address they dial (e.g. 'tcp://10.0.0.5:7100')"
            )
        setattr_(self, "advertise_address", advertise)
        setattr_(self, "secret_bytes", _secret(self.secret))
        messages = tuple(self.messages)
        setattr_(self, "messages", messages)
        setattr_(self, "registry", MessageRegistry(messages))
        for name in ("max_frame", "max_buffer"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 64:
                raise ValueError(f"`{name}` must be an int of at least 64 bytes, got {value!r}")
        for name in ("heartbeat", "reconnect_max", "connect_timeout"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not (value > 0 and math.isfinite(value))
            ):
                raise ValueError(
                    f"`{name}` must be a positive finite number of seconds, got {value!r}"
                )
        tls = (self.tls_cert, self.tls_key, self.tls_ca)
        given = [t is not None for t in tls]
        if any(given) and not all(given):
            raise ValueError(
                "TLS needs all of `tls_cert`, `tls_key` and `tls_ca` (mutual TLS), got "
                f"tls_cert={self.tls_cert!r}, tls_key={self.tls_key!r}, tls_ca={self.tls_ca!r}"
            )
        for name, value in zip(("tls_cert", "tls_key", "tls_ca"), tls, strict=True):
            if value is not None and not os.path.isfile(value):
                raise ValueError(f"`{name}` must name an existing PEM file, got {value!r}")

    @property
    def tls(self) -> bool:
        """Whether connections use mutual TLS."""
        return self.tls_cert is not None

    @property
    def dial_address(self) -> NodeAddress:
        """The address peers dial (``advertise`` if given, else ``listen``)."""
        return self.advertise_address or self.listen_address

    def __repr__(self) -> str:
        fields = [f"listen={self.listen!r}", "secret=<hidden>"]
        if self.advertise is not None:
            fields.append(f"advertise={self.advertise!r}")
        names = ", ".join(self.registry.names)
        fields.append(f"messages=[{names}]")
        if self.tls:
            fields.append("tls=True")
        return f"Remoting({', '.join(fields)})"

    def replace(self, **changes: Any) -> Remoting:
        """A copy with some fields changed (validated again)."""
        current = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}
        current.update(changes)
        return Remoting(**current)


def _secret(secret: object) -> bytes:
    if isinstance(secret, str):
        raw = secret.encode("utf-8")
    elif isinstance(secret, bytes | bytearray):
        raw = bytes(secret)
    else:
        raise TypeError(f"`secret` must be bytes or str, got {type(secret).__name__}")
    if len(raw) < MIN_SECRET_BYTES:
        raise ValueError(
            f"`secret` must be at least {MIN_SECRET_BYTES} bytes, got {len(raw)} "
            "(use e.g. secrets.token_bytes(32))"
        )
    return raw
