# SPDX-License-Identifier: Apache-2.0
"""The ``store`` option of ActorSystem and Client: a URL mistake raises at construction,
the same error on every tier (issue 31, item 5); the memory default is said once per
start (item 6)."""

from __future__ import annotations

from typing import Any

import pytest

from tocsin import ActorSystem, Client, InvalidStoreURLError, JobContext, ManualClock, job
from tocsin.durable import DurableActor
from tocsin.stores import open_store

MISTAKES = [
    "sqlite://app.db",  # two slashes: no path
    "sqlite:app.db",
    "app.db",
    "memory:/",
    "mysql://db/app",
    "postgresql://u@h/db?bogus=1",
    "sqlite:////tmp/app.db?mode=ro",
]


@pytest.mark.parametrize("url", MISTAKES)
def test_a_store_url_mistake_raises_invalid_store_url_at_construction(url: str) -> None:
    with pytest.raises(InvalidStoreURLError) as at_system:
        ActorSystem(store=url)
    with pytest.raises(InvalidStoreURLError) as at_client:
        Client(url)
    with pytest.raises(InvalidStoreURLError) as at_open:
        open_store(url)
    assert str(at_system.value) == str(at_client.value) == str(at_open.value)
    assert isinstance(at_system.value, ValueError)


class Reminder(DurableActor):
    kind = "DefaultStoreReminder"


@job
async def remind(ctx: JobContext) -> None:
    pass


async def test_durable_work_on_the_default_memory_store_is_warned_once_per_start(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with ActorSystem(clock=ManualClock()) as system:
        await system.durable(Reminder, "a")
        await system.durable(Reminder, "b")
        await system.jobs.enqueue(remind)
    warnings = [r for r in caplog.records if "in-memory durable store" in r.getMessage()]
    assert len(warnings) == 1
    assert "DefaultStoreReminder" in warnings[0].getMessage()
    assert warnings[0].levelname == "WARNING"


async def test_an_explicit_store_is_not_warned_about(
    caplog: pytest.LogCaptureFixture, tmp_path: Any
) -> None:
    for store in ("memory://", f"sqlite:///{tmp_path}/app.db"):
        async with ActorSystem(clock=ManualClock(), store=store) as system:
            await system.durable(Reminder, "a")
    assert "in-memory durable store" not in caplog.text
