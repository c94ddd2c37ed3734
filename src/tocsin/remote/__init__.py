# SPDX-License-Identifier: Apache-2.0
"""Remoting: tell, ask and schedule to actors on other processes and machines.

``Remoting(listen=..., secret=..., advertise=None, messages=[...])`` configures a node;
the transport (:class:`~tocsin.remote._node.RemoteNode`) authenticates every connection
with a mutual HMAC-SHA256 challenge–response on the shared secret before any frame is
decoded, frames envelopes with a 4-byte length prefix, and never pickles. See
``docs/remoting.md``.
"""

from __future__ import annotations

from ._config import Remoting
from ._metrics import RemoteMetrics

__all__ = ["RemoteMetrics", "Remoting"]
