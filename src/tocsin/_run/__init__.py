# SPDX-License-Identifier: Apache-2.0
"""The process supervisor behind :func:`tocsin.run` and ``tocsin run``: one node per core.

A layer above the facade (it builds ordinary :class:`~tocsin.ActorSystem` s in forked
workers) and below ``cli/``, whose ``tocsin run`` only parses arguments into the calls
this package exports. The package is private, ``_run`` and not ``run``: importing a
submodule ``tocsin.run`` would set the attribute ``tocsin.run`` to that module, so
``tocsin.run(...)`` (the function) would stop being callable once anything (a worker,
``tocsin run``, a test) had imported it (docs/architecture.md, "Running processes").
"""

from __future__ import annotations

from ._api import explicit_options, run
from ._arbiter import Arbiter
from ._config import MainFunc, check_environment, make_config, open_run_dir, setup_logging
from ._errors import RunUsageError
from ._target import check_targets

__all__ = [
    "Arbiter",
    "MainFunc",
    "RunUsageError",
    "check_environment",
    "check_targets",
    "explicit_options",
    "make_config",
    "open_run_dir",
    "run",
    "setup_logging",
]
