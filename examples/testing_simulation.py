"""Simulate your own application as a three-node cluster under faults drawn from a seed.

Run: python examples/testing_simulation.py [SEED]
"""

import asyncio
import sys

from tocsin import Actor, ActorSystem, ReceiveContext
from tocsin.durable import Call, DurableActor
from tocsin.testing import Faults, Simulation, record_ack, record_tick


class Wallet(DurableActor):
    """The application's state: a balance that must never lose an acknowledged deposit."""

    kind = "example.Wallet"

    async def deposit(self, amount: int) -> int:
        balance: int = await self.storage.get("balance", 0) + amount
        await self.storage.put("balance", balance)
        return balance


class Billing(Actor):
    """Every ten seconds, one node of the cluster bills: a deposit into the wallet."""

    async def receive(self, ctx: ReceiveContext) -> None:
        record_tick(ctx)  # a Delivery in sim.record: check() catches one instant billed twice
        wallet = await ctx.system.durable(Wallet, "acme")
        balance = await wallet.ask(Call("deposit", 5))
        record_ack(ctx.system, "acme", "balance", balance)  # check(): never lost


async def setup(system: ActorSystem) -> None:
    """Run on every node at each start, restarts included."""
    billing = await system.spawn(Billing, "billing")
    await system.schedule_cron("bill", billing, "*/10 * * * * ?", reference="billing", replace=True)


async def main(seed: int) -> None:
    sim = Simulation(nodes=3, seed=seed, faults=Faults(crash=1, partition=1, loss=2), setup=setup)
    await sim.run(300)  # five simulated minutes, in well under a real second
    sim.check()  # raises SimulationViolation naming the seed and the first bad entries
    crashes = sum(1 for fault in sim.faults if fault.kind == "crash")
    print(f"seed {seed}: {len(sim.faults)} faults ({crashes} crashes), {len(sim.record)} entries")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 7))
