# SPDX-License-Identifier: Apache-2.0
"""Remoting: tell, ask and schedule to actors on other processes and machines.

``Remoting(listen=..., secret=..., advertise=None, messages=[...])`` configures a node;
the transport (:class:`~tocsin.remote._node.RemoteNode`) authenticates every connection
(mutual proofs of the shared secret, session keys bound to both names and the dialled
address) and every record after it (HMAC-SHA256 with a sequence number, checked before
any frame is decoded), frames envelopes with a 4-byte length prefix, and never pickles.
See ``docs/remoting.md`` and ``docs/security.md``.
"""

from __future__ import annotations

from ._config import Remoting
from ._metrics import RemoteMetrics

__all__ = ["RemoteMetrics", "Remoting"]
