# SPDX-License-Identifier: Apache-2.0
"""One policy engine (DESIGN "Schedule policies"): the packages listed here decide no
overlap, misfire or grace rule and compute no instant themselves; they call
``tocsin.triggers``. Checked over the source's AST, so a decision written out again (a
read of a policy's fields, a comparison against a policy member, the cron engine or the
jitter hash called directly) fails here, naming the file and line.

A new overlap mode is then added in ``triggers/_overlap.py`` and its tests only.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src" / "tocsin"

#: Packages that must leave every policy decision to the engine: stored schedules, the
#: jobs that run their instants, the stores that keep them. Not yet listed (on this
#: commit): the in-memory scheduler (``scheduling/``: 27 findings, its cron walk and fast
#: paths) and durable tasks (``durable/``: 7), the cluster's claim TTL (one cron walk),
#: and two that are not decisions (``tocsin cron next`` shows the cron engine's answer;
#: the console reads a snapshot's ``mode``, not a policy's).
CALLERS = ("schedules", "jobs", "stores")

#: Fields of Overlap / Misfire whose reading is a decision (the engine's own; a
#: ``MisfirePlan``'s fields are its answer, read freely).
POLICY_FIELDS = frozenset({"mode", "max_in_flight", "grace", "waiting_room", "buffers", "tracks"})
#: Policy values whose members a caller must not compare against.
POLICY_VALUES = frozenset({"Overlap", "Misfire", "DSTPolicy"})
#: Instant arithmetic the engine's triggers own (the cron engine, calendars, jitter, DST).
INSTANT_CALLS = frozenset({"next_after", "excludes", "jitter_offset", "dst_dropped"})


def _findings(source: str, name: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source, name)):
        where = f"{name}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Attribute) and node.attr in POLICY_FIELDS:
            found.append(f"{where}: reads a policy's `.{node.attr}`")
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                if (
                    isinstance(side, ast.Attribute)
                    and isinstance(side.value, ast.Name)
                    and side.value.id in POLICY_VALUES
                ):
                    found.append(f"{where}: compares against {side.value.id}.{side.attr}")
        if isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if called in INSTANT_CALLS:
                found.append(f"{where}: computes instants itself (`{called}`)")
    return found


@pytest.mark.parametrize("package", CALLERS)
def test_callers_of_the_engine_decide_no_policy_themselves(package: str) -> None:
    files = sorted((SRC / package).rglob("*.py"))
    assert files, f"no source under {package}/"
    found = [
        f
        for path in files
        for f in _findings(path.read_text(encoding="utf-8"), str(path.relative_to(SRC)))
    ]
    assert found == [], "decided outside tocsin.triggers:\n" + "\n".join(found)


def test_the_check_sees_a_decision_written_out() -> None:
    # The check must be able to fail: each kind of finding once.
    source = (
        "def f(overlap, misfire, expr, t):\n"
        "    if overlap == Overlap.SKIP:\n"
        "        return misfire.grace\n"
        "    return expr.next_after(t)\n"
    )
    found = _findings(source, "sample.py")
    assert sorted(f.split(": ", 1)[1] for f in found) == [
        "compares against Overlap.SKIP",
        "computes instants itself (`next_after`)",
        "reads a policy's `.grace`",
    ]
