# SPDX-License-Identifier: Apache-2.0
"""DESIGN.md "Layers (bottom up) and package layout" as executable statements: one small test
per sentence that names a public name, a signature, a default, an error type or a
behaviour.

Timing uses a ManualClock and never sleeps.
"""

from __future__ import annotations

import importlib
import importlib.metadata

import pytest

import tocsin
from tocsin import (
    ActorSystem,
    ScheduleNotFoundError,
    TocsinError,
)


@pytest.mark.parametrize(
    "module",
    [
        "tocsin.errors",
        "tocsin.clock",
        "tocsin.cron",
        "tocsin._codec",
        "tocsin._deadlines",
        "tocsin.actor",
        "tocsin.scheduling",
        "tocsin.stores",
        "tocsin.durable",
        "tocsin.remote",
        "tocsin.system",
        "tocsin._run",
        "tocsin.cli",
    ],
)
def test_layout_module_exists(module: str) -> None:
    importlib.import_module(module)


def test_actor_system_lives_in_tocsin_system() -> None:
    from tocsin.system import ActorSystem as FromSystem

    assert FromSystem is ActorSystem


def test_every_error_of_the_design_derives_from_tocsin_error() -> None:
    for name in [
        "ActorSystemNotStartedError",
        "InvalidIntervalError",
        "ScheduleAlreadyExistsError",
        "ScheduleNotFoundError",
        "DeadActorError",
        "InvalidCronExpressionError",
        "ScheduleReferenceRequiredError",
        "RemotingDisabledError",
        "ActorStartError",
        "ActorNotFoundError",
        "CodecError",
        "NodeUnreachableError",
        "RemoteActorError",
        "AskTimeoutError",
        "TaskNotFoundError",
    ]:
        cls = getattr(tocsin, name)
        assert issubclass(cls, TocsinError), name
        assert name in tocsin.__all__


def test_public_names_report_the_tocsin_module() -> None:
    assert ScheduleNotFoundError.__module__ == "tocsin"
    assert ActorSystem.__module__ == "tocsin"
