# SPDX-License-Identifier: Apache-2.0
"""Durable actors and persistent tasks: at-least-once, retried with backoff, parked."""

from .._codec import decode, encode
from ..errors import TaskTimeoutError
from ._actor import DurableActor
from ._fence import FenceGuard
from ._records import Call, TaskParked, TaskRecord
from ._retry import Retry, RetryDecision, RetryPolicy

__all__ = [
    "Call",
    "DurableActor",
    "FenceGuard",
    "Retry",
    "RetryDecision",
    "RetryPolicy",
    "TaskParked",
    "TaskRecord",
    "TaskTimeoutError",
    "decode",
    "encode",
]
