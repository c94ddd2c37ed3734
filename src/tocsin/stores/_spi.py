# SPDX-License-Identifier: Apache-2.0
"""The stores' face for the layers above them (the cluster's SQLite coordinator, the CLI's
``tasks``), beside the public :mod:`tocsin.stores`: they import these names from here and
from no other ``stores._*`` module (DESIGN.md "Layers"). Re-exports only.

``set_wal_mode`` switches a SQLite file to WAL with the stores' open-race retry;
``connect_read_only`` opens one for reading without creating or migrating it; the
``_dsn`` names check and redact the URL options the coordinators share with the stores.
"""

from __future__ import annotations

from ._dsn import (
    CONNECT_TIMEOUT,
    PG_OPTIONS,
    REDIS_OPTIONS,
    check_connect_timeout,
    no_answer,
    redact,
    split_options,
    unknown_message,
)
from ._sqlite_readonly import connect_read_only
from ._sqlite_wal import set_wal_mode

__all__ = [
    "CONNECT_TIMEOUT",
    "PG_OPTIONS",
    "REDIS_OPTIONS",
    "check_connect_timeout",
    "connect_read_only",
    "no_answer",
    "redact",
    "set_wal_mode",
    "split_options",
    "unknown_message",
]
