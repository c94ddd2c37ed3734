# SPDX-License-Identifier: Apache-2.0
"""``tocsin.testing.Simulation``: a cluster in one process, one clock, seeded faults."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import pytest

from tocsin.testing import (
    Ack,
    Delivery,
    Fault,
    FaultKind,
    Faults,
    Simulation,
    SimulationViolation,
    Write,
)
from tocsin.testing._sim_workload import AT_LEAST_ONCE, AT_MOST_ONCE


async def test_a_run_without_faults_delivers_every_instant_once_and_acknowledges_writes() -> None:
    sim = Simulation(nodes=3, seed=1, faults=Faults.none())
    await sim.run(60)
    sim.check()
    assert sim.faults == []
    once = [e for e in sim.record if isinstance(e, Delivery) and e.reference == AT_MOST_ONCE]
    instants = [e.instant for e in once]
    assert len(instants) == len(set(instants)) >= 55
    assert {e.node for e in once} <= {"n0", "n1", "n2"}
    acks = [e for e in sim.record if isinstance(e, Ack) and e.key == "count"]
    assert len(acks) > 50
    assert any(isinstance(e, Write) and e.key.startswith("ran/") for e in sim.record)
    assert all(a.at <= b.at for a, b in itertools.pairwise(sim.record))


async def test_two_runs_of_one_seed_give_the_same_faults_and_the_same_record() -> None:
    faults = Faults(crash=2, pause=1, partition=1, skew=1, loss=2, delay=2)
    first = Simulation(nodes=3, seed=11, faults=faults)
    await first.run(90)
    second = Simulation(nodes=3, seed=11, faults=faults)
    await second.run(90)
    assert first.faults == second.faults
    assert {f.kind for f in first.faults} >= {FaultKind.CRASH, FaultKind.LOSS}
    assert first.record == second.record
    other = Simulation(nodes=3, seed=12, faults=faults)
    await other.run(90)
    assert other.faults != first.faults


async def test_a_crashed_node_comes_back_with_only_the_store_and_the_invariants_hold() -> None:
    sim = Simulation(nodes=3, seed=2, faults=Faults(crash=3))
    await sim.run(120)
    crashes = [f for f in sim.faults if f.kind is FaultKind.CRASH]
    assert crashes
    sim.check()
    crash = crashes[0]
    assert crash.node is not None
    # Back after its restart: the node delivers and acknowledges again.
    later = [e for e in sim.record if e.at > crash.end + 2 * sim.lease]
    assert any(getattr(e, "node", None) == crash.node for e in later)


async def test_a_forged_second_delivery_of_an_at_most_once_instant_is_caught() -> None:
    sim = Simulation(nodes=2, seed=3, faults=Faults.none())
    await sim.run(20)
    sim.check()
    first = next(e for e in sim.record if isinstance(e, Delivery) and e.reference == AT_MOST_ONCE)
    sim.record.append(dataclasses.replace(first, node="n1" if first.node == "n0" else "n0"))
    with pytest.raises(SimulationViolation) as caught:
        sim.check()
    message = str(caught.value)
    assert "at-most-once" in message
    assert "seed 3" in message
    assert "python -m tocsin.testing --seed 3 --seconds 20 --nodes 2" in message
    assert repr(first) in message


async def test_forged_writes_and_acks_are_caught() -> None:
    sim = Simulation(nodes=2, seed=4, faults=Faults.none())
    await sim.run(20)
    write = next(e for e in sim.record if isinstance(e, Write) and e.key == "count")
    base = list(sim.record)

    sim.record.append(dataclasses.replace(write, epoch=write.epoch - 1, at=999.0))
    with pytest.raises(SimulationViolation, match="older epoch"):
        sim.check()

    sim.record[:] = [*base, Ack(write.identity, "count", 10_000, "n0", 999.0)]
    with pytest.raises(SimulationViolation, match="never stored"):
        sim.check()

    ack = next(e for e in base if isinstance(e, Ack) and e.key == "count")
    sim.record[:] = [*base, dataclasses.replace(write, identity=ack.identity, value=0, at=999.0)]
    with pytest.raises(SimulationViolation, match="counter went back"):
        sim.check()


async def test_a_forged_gap_in_at_least_once_deliveries_is_caught() -> None:
    sim = Simulation(nodes=2, seed=5, faults=Faults.none())
    await sim.run(60)
    sim.check()
    victim = next(
        e
        for e in sim.record
        if isinstance(e, Delivery) and e.reference == AT_LEAST_ONCE and e.at > 5
    )
    sim.record[:] = [
        e
        for e in sim.record
        if not (
            isinstance(e, Delivery) and (e.reference, e.instant) == (AT_LEAST_ONCE, victim.instant)
        )
    ]
    with pytest.raises(SimulationViolation, match="never delivered"):
        sim.check()


def test_fault_rates_and_simulation_arguments_are_checked_at_construction() -> None:
    with pytest.raises(ValueError, match="`crash` must be a finite rate >= 0"):
        Faults(crash=-1)
    with pytest.raises(ValueError, match="`loss` must be a finite rate"):
        Faults(loss=float("nan"))
    with pytest.raises(ValueError, match="`nodes` must be an int >= 1, got 0"):
        Simulation(nodes=0)
    with pytest.raises(ValueError, match="`seed` must be an int"):
        Simulation(seed="7")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"`faults` must be a tocsin\.testing\.Faults"):
        Simulation(faults={"crash": 1})  # type: ignore[arg-type]


async def test_a_simulation_runs_once() -> None:
    sim = Simulation(nodes=1, seed=6, faults=Faults.none())
    with pytest.raises(ValueError, match="`seconds` must be a positive number"):
        await sim.run(0)
    await sim.run(5)
    with pytest.raises(RuntimeError, match="already ran"):
        await sim.run(5)


def test_faults_are_drawn_from_the_seed_one_per_kind_and_node_at_a_time() -> None:
    import random

    from tocsin.testing._sim_values import draw_faults

    rates = Faults(crash=5, pause=5, store_outage=5)
    drawn = draw_faults(rates, random.Random(1), ["n0", "n1"], 0.0, 600.0, 10.0)
    assert drawn == draw_faults(rates, random.Random(1), ["n0", "n1"], 0.0, 600.0, 10.0)
    assert drawn == sorted(drawn, key=lambda f: f.start)
    for kind in (FaultKind.CRASH, FaultKind.PAUSE, FaultKind.STORE_OUTAGE):
        for node in ("n0", "n1", None):
            mine = [f for f in drawn if f.kind is kind and f.node == node]
            assert all(a.end <= b.start for a, b in itertools.pairwise(mine))
    pauses = [f for f in drawn if f.kind is FaultKind.PAUSE]
    assert pauses
    assert all(f.end - f.start > 10.0 for f in pauses)
    assert all(isinstance(f, Fault) for f in drawn)


#: The fixed seeds `make test` runs (ten simulated minutes of the built-in workload under
#: the default faults, each a few real seconds): a regression of the cluster shows here
#: with the seed that found it. More seeds: `make simulate SEEDS=10000`.
FIXED_SEEDS = list(range(1, 11))


@pytest.mark.slow
@pytest.mark.parametrize("seed", FIXED_SEEDS)
async def test_ten_simulated_minutes_under_default_faults_keep_the_invariants(seed: int) -> None:
    sim = Simulation(nodes=3, seed=seed, faults=Faults.default())
    await sim.run(600)
    sim.check()


async def test_one_seed_replays_the_same_record_in_another_process() -> None:
    import os
    import subprocess
    import sys

    digests = set()
    for hash_seed in ("1", "2"):
        result = subprocess.run(
            [sys.executable, "-m", "tocsin.testing", "--seed", "5", "--seconds", "120"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
        )
        assert result.returncode == 0, result.stdout + result.stderr
        digests.add(result.stdout.strip().splitlines()[-1])
    assert len(digests) == 1, digests


async def test_a_store_that_ignores_the_fence_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # The invariants are not vacuous: with the fence check removed from the store, a node
    # paused past its lease wakes and its in-flight write lands after the new owner's.
    from tocsin.stores import Fence, MemoryStore

    apply = MemoryStore.apply

    async def unfenced(self: MemoryStore, ops: Any) -> None:
        await apply(self, [op for op in ops if not isinstance(op, Fence)])

    monkeypatch.setattr(MemoryStore, "apply", unfenced)
    caught: list[str] = []
    for seed in range(26, 46):  # seed 26 caught it when written; seeds move with the code
        sim = Simulation(nodes=3, seed=seed, faults=Faults(pause=2, partition=2, loss=1))
        await sim.run(300)
        try:
            sim.check()
        except SimulationViolation as violation:
            caught.append(str(violation))
            break
    assert caught, "no seed of 26-45 caught the unfenced store"
    assert "older epoch" in caught[0]
    assert f"seed {seed}" in caught[0]


async def test_the_replay_command_names_every_option_that_differs_from_the_defaults() -> None:
    faults = Faults(crash=1.5, loss=0.25)
    sim = Simulation(nodes=2, seed=9, faults=faults, lease=4.0)
    await sim.run(10)
    command = sim.replay_command()
    assert command == (
        "python -m tocsin.testing --seed 9 --seconds 10 --nodes 2 "
        f"--faults {faults.to_text()} --lease 4"
    )
    assert Faults.from_text(faults.to_text()) == faults
    assert Faults.from_text("none") == Faults.none()
    with pytest.raises(ValueError, match="KIND=RATE"):
        Faults.from_text("earthquake=1")


#: Four times the default rates: the seeds below found what they test at these.
HARSH = Faults(
    crash=0.8,
    pause=0.6,
    partition=0.6,
    skew=0.8,
    store_outage=0.4,
    coordinator_outage=0.4,
    loss=1.2,
    delay=1.2,
)


async def test_a_winner_frozen_past_its_delivery_lease_delivers_late_with_its_old_fence() -> None:
    # Found at HARSH rates (seed 218 first; seed 230 since the delay fault slows the
    # coordinator too): n0 won instant 161 (fence 141) and froze; n1 claimed it again
    # once the delivery lease lapsed (fence 146) and delivered at 166 s; n0 woke and
    # delivered at 178 s. As documented (at_least_once: duplicates happen, the fence
    # tells them apart): the later delivery carries the smaller fence, so a handler
    # keeping the largest fence it saw refuses it. The invariant: one delivery per fence.
    # Seeds change with the code they run: look from 230 on (it showed one when written).
    late_zombies: list[list[Delivery]] = []
    seed = 230
    while not late_zombies and seed < 260:
        sim = Simulation(nodes=3, seed=seed, faults=HARSH)
        await sim.run(300)
        sim.check()
        by_instant: dict[float, list[Delivery]] = {}
        for entry in sim.record:
            if isinstance(entry, Delivery) and entry.reference == AT_LEAST_ONCE:
                by_instant.setdefault(entry.instant, []).append(entry)
        late_zombies = [
            ds
            for ds in by_instant.values()
            if len(ds) > 1
            and ds[-1].fence is not None
            and ds[0].fence is not None
            and ds[-1].fence < ds[0].fence
        ]
        assert all(len({d.fence for d in ds}) == len(ds) for ds in by_instant.values())
        seed += 1
    assert late_zombies, "no seed of 230-259 shows a late zombie any more: look further"


async def test_a_run_that_fails_names_its_seed_and_leaves_no_node_running() -> None:
    started: list[Any] = []

    async def setup(system: Any) -> None:
        started.append(system)
        if len(started) == 2:
            raise RuntimeError("the application refused to start")

    sim = Simulation(nodes=2, seed=13, faults=Faults.none(), setup=setup)
    with pytest.raises(RuntimeError, match="refused to start") as caught:
        await sim.run(30)
    assert any("seed 13" in note for note in caught.value.__notes__)
    assert not any(system.running for system in started)


async def test_two_simulations_at_once_in_one_process_are_refused() -> None:
    import asyncio

    first = Simulation(nodes=1, seed=14, faults=Faults.none())
    running = asyncio.ensure_future(first.run(30))
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="one after"):
        await Simulation(nodes=1, seed=15, faults=Faults.none()).run(5)
    await running
    first.check()


async def test_a_forged_last_write_the_store_does_not_hold_is_caught() -> None:
    sim = Simulation(nodes=2, seed=16, faults=Faults.none())
    await sim.run(20)
    sim.check()
    write = next(e for e in sim.record if isinstance(e, Write) and e.key.startswith("ran/"))
    sim.record.append(dataclasses.replace(write, value="forged", epoch=10**6, at=999.0))
    with pytest.raises(SimulationViolation, match="not the last write"):
        sim.check()


@pytest.mark.slow
async def test_four_nodes_at_lease_4_keep_the_invariants_where_one_forwarded_to_itself() -> None:
    # Seed 4036 stopped simulated time at 388 s before cluster/_durable.py stopped a node
    # forwarding an identity owned by another incarnation of itself to itself
    # (tests/cluster/test_found_by_simulation.py has the reduced case).
    sim = Simulation(nodes=4, seed=4036, faults=Faults.default(), lease=4.0)
    await sim.run(600)
    sim.check()


async def test_a_restart_whose_setup_fails_fails_the_run_with_its_seed() -> None:
    starts: dict[str, int] = {}

    async def setup(system: Any) -> None:
        starts[system.name] = starts.get(system.name, 0) + 1
        if starts[system.name] == 2:
            raise RuntimeError(f"{system.name} refused to restart")

    sim = Simulation(nodes=2, seed=2, faults=Faults(crash=3), setup=setup)
    with pytest.raises(RuntimeError, match="refused to restart") as caught:
        await sim.run(120)
    assert any("seed 2" in note for note in caught.value.__notes__)


def test_the_command_line_runs_many_seeds_and_refuses_bad_options() -> None:
    import subprocess
    import sys

    ran = subprocess.run(
        [sys.executable, "-m", "tocsin.testing", "--seeds", "2", "--seconds", "30", "--jobs", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "2 seeds of 30 simulated s on 3 nodes: 2 passed, 0 failed" in ran.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "tocsin.testing", "--seed", "1", "--faults", "meteor=1"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert bad.returncode == 2
    assert "KIND=RATE" in bad.stderr
