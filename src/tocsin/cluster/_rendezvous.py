# SPDX-License-Identifier: Apache-2.0
"""The rendezvous (highest-random-weight) hash behind placement, in one leaf module.

Coordinators compute the preferred owner of an identity inside their own atomic claim
step (issue 19: placement on the coordinator's view, never on a node's stale member
list), and nodes compute it too (the due-task poll, rebalancing). All of them must give
the same answer, so the weight is defined byte for byte here and the Redis coordinator's
Lua script repeats it with ``redis.sha1hex``:

    weight(node) = hex(SHA-1(f"{len(kind)}:{kind}{len(identity)}:{identity}{node}"))

with lengths in UTF-8 bytes, compared as strings (lowercase hex of one length orders
like the bytes). The highest weight wins; a tie (astronomically rare) goes to the
smaller name. SHA-1 is used as a hash here, not for security: it is what Redis' Lua has.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

__all__ = ["rendezvous_owner", "weight"]


def weight(node: str, kind: str, identity: str) -> str:
    """The rendezvous weight of ``node`` for ``(kind, identity)`` (40 hex digits)."""
    k, i = kind.encode(), identity.encode()
    key = b"%d:%s%d:%s%s" % (len(k), k, len(i), i, node.encode())
    # Not hash(): the same on every node and every run (PYTHONHASHSEED).
    return hashlib.sha1(key, usedforsecurity=False).hexdigest()


def rendezvous_owner(kind: str, identity: str, nodes: Iterable[str]) -> str | None:
    """The node that ``(kind, identity)`` prefers among ``nodes`` (``None`` if empty).

    Deterministic across processes and coordinators; ties go to the smaller name.
    """
    best: tuple[str, str] | None = None
    for node in nodes:
        candidate = (weight(node, kind, identity), node)
        if (
            best is None
            or candidate[0] > best[0]
            or (candidate[0] == best[0] and candidate[1] < best[1])
        ):
            best = candidate
    return None if best is None else best[1]
