# SPDX-License-Identifier: Apache-2.0
"""``python _run_nodeath.py FUNC RUN_DIR WORKERS``: the arbiter of ``_run_app:FUNC`` started
through its private API with ``PR_SET_PDEATHSIG`` off, so the portable fallback (the pipe
the workers watch) is tested on its own.

A separate file, not ``_run_app.py``'s ``__main__``: run as a script, that module would be
imported twice (as ``__main__`` and by name), defining its durable kinds twice.
"""

from __future__ import annotations

import dataclasses
import sys

from tocsin._run._arbiter import Arbiter
from tocsin._run._config import make_config, open_run_dir, setup_logging
from tocsin._run._target import check_targets

if __name__ == "__main__":
    func_name, run_dir, workers = sys.argv[1], sys.argv[2], int(sys.argv[3])
    label = check_targets(f"_run_app:{func_name}")
    config = dataclasses.replace(
        make_config(label, workers=workers, run_dir=run_dir, name="nodeath"),
        parent_death_signal=False,
    )
    setup_logging()
    directory = open_run_dir(config.run_dir)
    sys.exit(Arbiter(config, label, directory).run())
