# SPDX-License-Identifier: Apache-2.0
"""Node addresses (``tcp://host:port``, ``unix:///path``) and system addresses.

A *node address* says where a node listens or is dialled. A *system address* names one
actor system at one node, as PIDs print it: ``tocsin://shop@127.0.0.1:7100`` for TCP and
``tocsin://shop@unix:%2Frun%2Fshop.sock`` for a Unix socket (the socket path is
percent-encoded so that the first ``/`` after the ``@`` always starts the actor path).
``str(pid)`` is the system address followed by the actor path.

Prior art: Akka's ``akka://system@host:port/user/a`` and Proto.Actor's ``address/id``.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Final, Literal, final
from urllib.parse import quote, unquote

__all__ = ["SCHEME", "NodeAddress", "parse_system_address", "split_pid_string"]

#: The scheme of system addresses and PID strings.
SCHEME: Final = "tocsin://"

_ALLOWED_ADDRESS = "'tcp://host:port' (port 0 picks a free port) or 'unix:///absolute/path'"


@final
@dataclass(frozen=True, slots=True)
class NodeAddress:
    """Where a node listens: a TCP host and port, or a Unix socket path.

    Attributes:
        kind: ``"tcp"`` or ``"unix"``.
        host: the TCP host (name or IP, IPv6 without brackets); ``""`` for Unix.
        port: the TCP port (0 = pick one when listening); 0 for Unix.
        path: the Unix socket path; ``""`` for TCP.
    """

    kind: Literal["tcp", "unix"]
    host: str = ""
    port: int = 0
    path: str = ""

    @classmethod
    def parse(cls, text: object, *, param: str = "listen") -> NodeAddress:
        """Parse ``tcp://host:port`` or ``unix:///path``.

        Raises:
            ValueError: not one of those forms; the message names ``param``.
        """
        if not isinstance(text, str):
            raise ValueError(f"`{param}` must be {_ALLOWED_ADDRESS}, got {text!r}")
        if text.startswith("unix://"):
            path = text[len("unix://") :]
            if not path.startswith("/") or path == "/" or "\0" in path:
                raise ValueError(
                    f"`{param}` must be {_ALLOWED_ADDRESS}: a Unix socket needs an absolute "
                    f"path, got {text!r}"
                )
            return cls("unix", path=path)
        if text.startswith("tcp://"):
            host, port = _host_port(text[len("tcp://") :], text, param)
            return cls("tcp", host=host, port=port)
        raise ValueError(f"`{param}` must be {_ALLOWED_ADDRESS}, got {text!r}")

    @property
    def url(self) -> str:
        """The ``tcp://`` / ``unix://`` form (parseable by :meth:`parse`)."""
        if self.kind == "unix":
            return f"unix://{self.path}"
        return f"tcp://{_bracket(self.host)}:{self.port}"

    @property
    def authority(self) -> str:
        """The node part of a system address: ``host:port`` or ``unix:<encoded path>``."""
        if self.kind == "unix":
            return "unix:" + quote(self.path, safe="")
        return f"{_bracket(self.host)}:{self.port}"

    def system_address(self, system: str) -> str:
        """``tocsin://<system>@<authority>``: how PIDs of that system print."""
        return f"{SCHEME}{system}@{self.authority}"

    def __str__(self) -> str:
        return self.url


def parse_system_address(text: str) -> tuple[str, NodeAddress]:
    """Split ``tocsin://name@authority`` into the system name and its node address.

    Raises:
        ValueError: malformed.
    """
    if not text.startswith(SCHEME):
        raise ValueError(f"a system address starts with {SCHEME!r}, got {text!r}")
    name, at, authority = text[len(SCHEME) :].rpartition("@")
    if not at or not name or "/" in name or not authority or "/" in authority:
        raise ValueError(f"a system address is 'tocsin://name@host:port', got {text!r}")
    if authority.startswith("unix:"):
        path = unquote(authority[len("unix:") :])
        if not path.startswith("/"):
            raise ValueError(f"bad Unix socket path in system address {text!r}")
        return name, NodeAddress("unix", path=path)
    host, port = _host_port(authority, text, "address")
    if port == 0:
        raise ValueError(f"a system address needs a real port, got {text!r}")
    return name, NodeAddress("tcp", host=host, port=port)


def split_pid_string(text: str) -> tuple[str, str]:
    """Split ``str(pid)`` of a remote-capable PID into ``(system address, path)``.

    The path is everything from the first ``/`` after the ``@`` (it starts with ``/``).

    Raises:
        ValueError: not ``tocsin://name@authority/path``.
    """
    if not isinstance(text, str) or not text.startswith(SCHEME):
        raise ValueError(f"a PID string starts with {SCHEME!r}, got {text!r}")
    # Neither the system name nor the authority holds a '/' (a Unix socket path is
    # percent-encoded), so the first '/' after the scheme starts the actor path.
    slash = text.find("/", len(SCHEME))
    if slash < 0 or slash == len(text) - 1:
        raise ValueError(f"a PID string is 'tocsin://name@host:port/path', got {text!r}")
    address = text[:slash]
    parse_system_address(address)
    return address, text[slash:]


def _host_port(text: str, whole: str, param: str) -> tuple[str, int]:
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep or not rest.startswith(":"):
            raise ValueError(f"`{param}` must be {_ALLOWED_ADDRESS}: bad IPv6 address in {whole!r}")
        port_text = rest[1:]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError(
                f"`{param}` must be {_ALLOWED_ADDRESS}: bad IPv6 address in {whole!r}"
            ) from None
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            raise ValueError(f"`{param}` must be {_ALLOWED_ADDRESS}: no port in {whole!r}")
    if not host or any(c in host for c in "/@ "):
        raise ValueError(f"`{param}` must be {_ALLOWED_ADDRESS}: bad host in {whole!r}")
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(
            f"`{param}` must be {_ALLOWED_ADDRESS}: port must be 0-65535, got {port_text!r}"
        )
    return host, int(port_text)


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host else host
