# SPDX-License-Identifier: Apache-2.0
"""``tocsin.run`` from a program: ``main`` is defined in ``__main__`` (workers are forked,
so it need not be importable). Usage: ``python _run_embedded.py RUN_DIR``."""

from __future__ import annotations

import logging
import sys

import tocsin

log = logging.getLogger("embedded")


async def main(system: tocsin.ActorSystem) -> None:
    log.info("embedded main ran in %s", system.name)


if __name__ == "__main__":
    sys.exit(tocsin.run(main, workers=2, name="embedded", run_dir=sys.argv[1], stop_timeout=5))
