# SPDX-License-Identifier: Apache-2.0
"""Counters of one node's remoting, and their frozen snapshot."""

from __future__ import annotations

from dataclasses import dataclass
from typing import final

__all__ = ["Counters", "RemoteMetrics"]


@final
@dataclass(frozen=True, slots=True)
class RemoteMetrics:
    """Counters of one node's remoting since it started (a snapshot).

    Attributes:
        frames_in, frames_out: frames received / written (heartbeats included).
        bytes_in, bytes_out: bytes received / written (handshakes and prefixes included).
        connections: connections open now (both directions).
        reconnects: connections re-established to a peer that had been up before.
        auth_failures: connections refused for a failed or unfinished handshake, on
            either side (a wrong proof, bad opening bytes, a dialer that closed instead of
            proving it holds the secret, no handshake within ``connect_timeout``, an
            inbound TLS handshake that failed or did not finish). A
            connection closed before sending anything (a port probe) is not counted.
        protocol_errors: connections closed for a bad frame (length, encoding, order).
        undecodable: frames whose message could not be decoded here (unknown message
            class, fields that do not fit); the connection stays open.
        unreachable: messages sent from here that became dead letters with reason
            ``unreachable`` (tells, and asks refused at once): the node is down, failed
            the handshake, or is another system than the PID names.
        overflow: messages sent from here that became dead letters with reason
            ``overflow``: the connection's send buffer held ``max_buffer`` bytes unsent
            (the node is up, but slower than this node sends).
        not_found: messages that arrived for an actor this node does not have (or no
            longer has, in that incarnation): dead letters with reason ``not_found``.
        read_pauses: times a connection stopped reading because a frame it read was for
            an actor whose bounded mailbox was full (backpressure: reading resumes once
            that mailbox took the frame).
        held_lost: tells this node still held unsent (its send buffer), or had sent
            without the peer confirming it read them, when their connection was dropped:
            each became a dead letter with reason ``unreachable`` (counted in
            ``unreachable`` too).
        mac_failures: connections closed because a record's MAC was wrong or its
            sequence number out of order (bytes not written by the peer that proved
            the secret, or replayed, reordered or dropped on the way).
        handshakes_refused: inbound connections closed at once because
            ``max_pending_handshakes`` strangers were in their handshake already.
    """

    frames_in: int
    frames_out: int
    bytes_in: int
    bytes_out: int
    connections: int
    reconnects: int
    auth_failures: int
    protocol_errors: int
    undecodable: int
    unreachable: int
    overflow: int
    not_found: int
    read_pauses: int = 0
    held_lost: int = 0
    mac_failures: int = 0
    handshakes_refused: int = 0


@final
class Counters:
    """The live counters (mutable, slotted: incremented on the message path)."""

    __slots__ = (
        "auth_failures",
        "bytes_in",
        "bytes_out",
        "frames_in",
        "frames_out",
        "handshakes_refused",
        "held_lost",
        "mac_failures",
        "not_found",
        "overflow",
        "protocol_errors",
        "read_pauses",
        "reconnects",
        "undecodable",
        "unreachable",
    )

    def __init__(self) -> None:
        self.frames_in = self.frames_out = self.bytes_in = self.bytes_out = 0
        self.reconnects = self.auth_failures = self.protocol_errors = self.undecodable = 0
        self.unreachable = self.overflow = self.not_found = 0
        self.read_pauses = self.held_lost = self.mac_failures = self.handshakes_refused = 0
