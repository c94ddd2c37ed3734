# SPDX-License-Identifier: Apache-2.0
"""Child processes in tests: read a child's first line of output, bounded in real time."""

from __future__ import annotations

import select
import subprocess
from typing import Any

#: Real seconds a child may take to print its ready line. A bound on a hang, not a speed
#: claim: a loaded 2-core machine can take several seconds just to import a child.
READY_WAIT = 60.0


def ready_line(proc: subprocess.Popen[str], what: str, timeout: float = READY_WAIT) -> str:
    """The first line ``proc`` prints on its stdout (a pipe), waiting at most ``timeout``.

    A plain ``readline()`` waits forever for a child that hangs before printing (and, in
    an async test, blocks the event loop with it). On timeout the child is killed and the
    test fails naming ``what``; a child that exits first gives ``""``.
    """
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    if not ready:
        proc.kill()
        proc.wait(10)
        close_pipes(proc)
        raise AssertionError(f"{what} printed nothing within {timeout} s")
    # The child writes its line with one flushed write: once readable, it is all there.
    return proc.stdout.readline()


def close_pipes(proc: subprocess.Popen[Any]) -> None:
    """Close this side of a reaped child's pipes.

    ``Popen`` closes them only in ``communicate()`` or its ``with`` block; one left to the
    garbage collector is a ResourceWarning, which fails a test of this suite (pyproject's
    ``filterwarnings``) and, worse, whichever test happens to be running when it is
    collected.
    """
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
