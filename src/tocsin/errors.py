# SPDX-License-Identifier: Apache-2.0
"""Every public tocsin error, rooted in :class:`TocsinError`.

The hierarchy (a class also subclasses the builtin it resembles where a caller might
reasonably catch the builtin)::

    TocsinError
    ├── ActorSystemNotStartedError        (RuntimeError)
    ├── ActorNameTakenError               (ValueError)
    ├── ActorNotFoundError                (LookupError)
    ├── DeadActorError
    │   └── ActorSuspendedError
    ├── AskTimeoutError                   (TimeoutError)
    ├── InvalidIntervalError              (ValueError)
    ├── InvalidCronExpressionError        (ValueError)
    ├── InvalidTimezoneError              (ValueError)
    ├── ScheduleAlreadyExistsError
    ├── ScheduleNotFoundError             (LookupError)
    │   └── TaskNotFoundError
    ├── ScheduleReferenceRequiredError    (ValueError)
    ├── RemotingDisabledError
    ├── ClusterDisabledError              (RuntimeError)
    ├── CodecError                        (TypeError)
    ├── StoreError
    │   ├── InvalidStoreURLError          (ValueError)
    │   └── FencedError
    ├── TaskTimeoutError                  (TimeoutError)
    ├── WrongEventLoopError               (RuntimeError)
    ├── ActorStartError
    ├── RemoteActorError
    ├── NodeUnreachableError              (ConnectionError)
    ├── BackpressureError
    ├── AddressInUseError                 (OSError)
    ├── NotOwnerError
    └── CoordinatorError
        ├── InvalidCoordinatorURLError    (ValueError)
        ├── NodeNameTakenError
        ├── TimezoneMismatchError
        └── CoordinatorUnavailableError   (ConnectionError)

Messages say what was given and what is allowed, and name the parameter.
"""

from __future__ import annotations

import errno

__all__ = [
    "ActorNameTakenError",
    "ActorNotFoundError",
    "ActorStartError",
    "ActorSuspendedError",
    "ActorSystemNotStartedError",
    "AddressInUseError",
    "AskTimeoutError",
    "BackpressureError",
    "ClusterDisabledError",
    "CodecError",
    "CoordinatorError",
    "CoordinatorUnavailableError",
    "DeadActorError",
    "FencedError",
    "InvalidCoordinatorURLError",
    "InvalidCronExpressionError",
    "InvalidIntervalError",
    "InvalidStoreURLError",
    "InvalidTimezoneError",
    "NodeNameTakenError",
    "NodeUnreachableError",
    "NotOwnerError",
    "RemoteActorError",
    "RemotingDisabledError",
    "ScheduleAlreadyExistsError",
    "ScheduleNotFoundError",
    "ScheduleReferenceRequiredError",
    "StoreError",
    "TaskNotFoundError",
    "TaskTimeoutError",
    "TimezoneMismatchError",
    "TocsinError",
    "WrongEventLoopError",
]


class TocsinError(Exception):
    """Root of every error tocsin raises on purpose.

    Catch this to handle any tocsin failure; exceptions raised by your own actor code
    propagate unchanged (an ask whose handler raised fails with *that* exception).
    """


class ActorSystemNotStartedError(TocsinError, RuntimeError):
    """A call needs a running :class:`~tocsin.ActorSystem`, and it is not running.

    Raised before ``await system.start()`` and after ``await system.stop()``.
    """


class ActorNameTakenError(TocsinError, ValueError):
    """``spawn`` was given a name that a live sibling already holds.

    Names are unique among the children of one parent (so paths are unique).
    """


class ActorNotFoundError(TocsinError, LookupError):
    """``actor_of`` found no live actor under the given name or path."""


class DeadActorError(TocsinError):
    """The target actor has stopped (fully or while stopping).

    Raised when registering a schedule to a stopped target, scheduling through the
    context of a stopped actor (or from ``post_stop``), and by an ``ask`` to a stopped
    actor (at once, not after the timeout) or one pending when its target stopped.
    """


class ActorSuspendedError(DeadActorError):
    """The target actor is suspended by its supervisor and takes no messages.

    A subclass of :class:`DeadActorError` so that ``except DeadActorError`` covers every
    "cannot deliver" case of an ``ask``; unlike a stopped actor, a suspended one comes back
    after ``await system.reinstate(pid)``.
    """


class AskTimeoutError(TocsinError, TimeoutError):
    """An ``ask`` got no answer within its ``timeout``.

    Also a builtin :class:`TimeoutError`, so ``except TimeoutError`` works.
    """


class InvalidIntervalError(TocsinError, ValueError):
    """A delay or interval is not a positive finite number of seconds.

    Accepted: ``int``/``float`` > 0 and finite, or a positive ``datetime.timedelta``.
    Rejected: 0, negatives, NaN, infinities, ``bool``, strings, ``None``.
    """


class InvalidCronExpressionError(TocsinError, ValueError):
    """A cron expression is malformed, or can never fire after now.

    Attributes:
        expression: the text given.
        field: the name of the offending field (``"seconds"``, ``"day-of-week"``, ...),
            or ``None`` when the problem is the expression as a whole.
        position: index of the offending text in ``expression``, or ``None``.
    """

    def __init__(
        self,
        message: str,
        *,
        expression: str = "",
        field: str | None = None,
        position: int | None = None,
    ) -> None:
        super().__init__(message)
        self.expression = expression
        self.field = field
        self.position = position


class InvalidTimezoneError(TocsinError, ValueError):
    """A ``timezone`` is not an IANA zone name known to :mod:`zoneinfo`.

    Allowed: names such as ``"Europe/Paris"``, ``"America/New_York"``, ``"UTC"``.
    """


class ScheduleAlreadyExistsError(TocsinError):
    """A schedule reference is already held; pass ``replace=True`` to upsert it."""


class ScheduleNotFoundError(TocsinError, LookupError):
    """``cancel_schedule``/``pause_schedule``/``resume_schedule`` named an unknown reference."""


class ScheduleReferenceRequiredError(TocsinError, ValueError):
    """``schedule_cron`` in cluster mode needs an explicit ``reference``.

    Single fire across nodes is keyed on the reference, so a generated one (different on
    every node) would deliver once per node.
    """


class RemotingDisabledError(TocsinError):
    """A remote PID was targeted by a system started without remoting."""


class ClusterDisabledError(TocsinError, RuntimeError):
    """``system.cluster`` was read on a system made without ``cluster=``: it is not part of
    a cluster. A ``RuntimeError`` too (what the read raised before it had a type).

    Differs from :class:`ActorSystemNotStartedError`: a system made with ``cluster=`` but
    not started raises that one (it joins its cluster at ``start()``).
    """


class CodecError(TocsinError, TypeError):
    """A value cannot be encoded by a tocsin codec (or stored bytes cannot be decoded).

    Raised at scheduling time for a durable payload outside the codec-safe set (None,
    bool, int, float, str, list, tuple, dict, set, frozenset, bytes, datetime, date,
    ``re.Pattern``), never later when the task runs.
    """


class StoreError(TocsinError):
    """A task or state store failed (I/O, schema, connection)."""


class InvalidStoreURLError(StoreError, ValueError):
    """A store URL has an unknown scheme or a malformed body.

    Allowed: ``memory://``, ``sqlite:///relative/or/absolute/path.db``, ``sqlite://:memory:``,
    ``postgresql://user@host/db`` (also ``postgres://``).
    """


class TaskNotFoundError(ScheduleNotFoundError):
    """A durable task id names no task (or no parked task, for the parked-list calls).

    A :class:`ScheduleNotFoundError`: a durable task is a schedule of its identity, and
    ``except ScheduleNotFoundError`` catches an unknown id on every surface."""


class TaskTimeoutError(TocsinError, TimeoutError):
    """A durable task ran longer than its time budget (``task_timeout`` or ``timeout=``).

    It counts as a failed run: the task is retried with backoff, then parked. It is the
    ``error`` of the resulting ``TaskParked`` event and the ``last_error`` of the task.
    """


class WrongEventLoopError(TocsinError, RuntimeError):
    """A call was made on another event loop than the one the system started on.

    An :class:`~tocsin.ActorSystem` belongs to the loop ``start()`` ran on (its timer,
    tasks and futures live there). The message names both loops. From another thread,
    use ``pid.tell_threadsafe(...)`` or ``loop.call_soon_threadsafe``.
    """


class ActorStartError(TocsinError):
    """``spawn`` could not start the actor: its first ``pre_start`` failed and the
    supervisor did not bring it up (the restarts failed too, or it stopped it).

    The last ``pre_start`` exception is the ``__cause__``. The name stays free: once this
    is raised, the failed actor is fully stopped.
    """


class RemoteActorError(TocsinError):
    """An ``ask`` to an actor on another node failed there: its handler raised.

    The exception itself does not cross the wire (it could be of any class, and decoding
    never constructs classes the peer names); its type name and text do.

    Attributes:
        type_name: the remote exception's class name, e.g. ``"KeyError"``.
        text: ``str()`` of the remote exception.
    """

    def __init__(self, type_name: str, text: str, *, target: str = "") -> None:
        where = f" (in {target})" if target else ""
        super().__init__(f"{type_name}: {text}{where}")
        self.type_name = type_name
        self.text = text


class NodeUnreachableError(TocsinError, ConnectionError):
    """The node hosting a remote actor cannot be reached, or was lost mid-``ask``.

    Raised by an ``ask`` (or a remote ``actor_of``) as soon as the connection is known to
    be down (dial refused or timed out, handshake failed, connection lost while waiting):
    unlike :class:`AskTimeoutError`, which means the node was reachable but no answer came
    in time. A ``tell`` never raises it: the message becomes a dead letter with reason
    ``unreachable``.
    """


class BackpressureError(TocsinError):
    """A message was refused at once because a bounded buffer on its way is full.

    Raised by an ``ask`` to an actor whose bounded mailbox is full (``mailbox_bound``),
    or to an actor on another node whose connection already holds ``max_buffer`` bytes of
    unsent frames (the peer, or the network, is slower than this node sends). The target
    is up; nothing was sent. A ``tell`` in the same case is a dead letter with reason
    ``overflow`` (never ``unreachable``); ``await pid.send(...)`` waits for room instead.
    """


class AddressInUseError(TocsinError, OSError):
    """The remoting ``listen`` address is taken: a live listener holds it.

    For a Unix socket the path is probed with a connect first: a socket file nobody
    answers on (left by a crashed node) is removed and bound again, a live one is never
    taken over. For TCP, the operating system's "address in use". ``errno`` is
    ``EADDRINUSE``.
    """

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.errno = errno.EADDRINUSE


class CoordinatorError(TocsinError):
    """The cluster coordinator failed (unreachable, I/O, schema, a script error).

    Raised by coordinator calls (``tocsin.cluster``). The outcome of the failed call is
    unknown: a claim may or may not have been recorded. Callers never treat it as "not
    claimed by anyone": a cron tick whose claim raised is not delivered, and an activation
    whose ownership claim raised re-reads the directory before doing anything.
    """


class InvalidCoordinatorURLError(CoordinatorError, ValueError):
    """A coordinator URL has an unknown scheme or a malformed body.

    Allowed: ``memory://`` or ``memory://NAME`` (shared by the systems of one process that
    use the same URL), ``sqlite:///relative.db``, ``sqlite:////absolute.db``,
    ``postgresql://user@host/db`` (also ``postgres://``), ``redis://host:port/db`` (also
    ``rediss://``, ``unix://``).
    """


class NodeNameTakenError(CoordinatorError):
    """A node tried to join under a name whose lease another live node holds.

    A node restarted under its old name waits for its previous lease to lapse (at most
    ``lease`` seconds); this is raised only if the name is still held after that, which
    means another running node uses it. Give every node its own name.
    """


class TimezoneMismatchError(CoordinatorError):
    """A node's cron zone differs from the zone of the live members of its cluster.

    Every node of a cluster must compute the same cron instants, so they share one zone
    (``ActorSystem(timezone=...)``, else the machine's zone): a node whose zone differs
    refuses to join, at ``start()``, and the message names both zones.
    """


class FencedError(StoreError):
    """A durable write was refused: a newer ownership epoch holds its identity.

    Cluster mode (``docs/cluster.md``): every write of a durable activation carries its
    node's ownership epoch into the store's own transaction (a ``Fence`` op, first in the
    batch). A node that lost its lease (paused, partitioned) while another node took the
    identity over writes with an older epoch: the store refuses the whole batch, nothing
    of it is kept, the activation stops and ``fenced_writes`` is counted.
    """


class CoordinatorUnavailableError(CoordinatorError, ConnectionError):
    """The cluster coordinator did not answer in time (down, frozen, unreachable).

    Raised to a caller that needed it now: an ``ask`` (or ``system.durable``) whose
    durable identity could not be claimed or located because the coordinator failed, or
    a coordinator call that ran past its bound. Nothing was decided; the node keeps
    retrying in the background (``docs/cluster.md``, "Outages heal by themselves"), so
    calling again once the coordinator is back succeeds.
    """


class NotOwnerError(TocsinError):
    """Cluster mode: this node may not run a durable identity, and knows no owner to
    forward to: it holds no live lease (lost to a pause, a partition or a coordinator
    outage, not yet regained).

    Raised to an ``ask`` that could not reach its identity for that reason (instead of
    "is stopped"). The node joins again by itself (``LeaseRegained`` on
    ``system.events``); asks made after that reach the identity.
    """
