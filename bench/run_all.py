# SPDX-License-Identifier: Apache-2.0
"""Run every bench script, one after another (never two at once: they time things).

Every ``bench/*.py`` not starting with ``_`` (and not this file) is run with the arguments
given here, e.g. ``.venv/bin/python bench/run_all.py --quick``. Each script prints its
tables and, as its last stdout line, one JSON object; this runner passes them through and
exits non-zero if any script failed.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def scripts() -> list[Path]:
    """The bench scripts, in name order."""
    return sorted(
        p for p in HERE.glob("*.py") if not p.name.startswith("_") and p.name != Path(__file__).name
    )


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    failed = []
    for script in scripts():
        print(f"\n## {script.name}\n", flush=True)
        started = time.perf_counter()
        code = subprocess.run([sys.executable, str(script), *args], check=False).returncode
        print(f"\n({script.name}: exit {code}, {time.perf_counter() - started:.0f} s)", flush=True)
        if code != 0:
            failed.append(script.name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
