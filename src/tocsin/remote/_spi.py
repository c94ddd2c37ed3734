# SPDX-License-Identifier: Apache-2.0
"""Remoting's face for the layers above it (the facade, ``tocsin run``'s networking),
beside the public :mod:`tocsin.remote`: they import these names from here and from no
other ``remote._*`` module (DESIGN.md "Layers"). Re-exports only.

``RemoteService`` is the service the facade starts; ``NodeAddress`` is a parsed
``host:port`` of a node.
"""

from __future__ import annotations

from ._address import NodeAddress
from ._service import RemoteService

__all__ = ["NodeAddress", "RemoteService"]
