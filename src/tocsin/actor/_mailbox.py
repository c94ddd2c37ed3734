# SPDX-License-Identifier: Apache-2.0
"""What a mailbox holds, and the one protocol by which upper layers put work in it.

A mailbox is a ``deque`` in which message and sender alternate (no envelope tuple per
message: tuples holding objects are tracked by the cyclic GC, and at 100k msgs/s the
collector spent more time on queued envelopes than on dispatch, bench/scheduler.py).
An idle actor has no mailbox at all (an empty ``deque`` costs ~600 bytes).

A queued message is either a plain user message, or one of three *item* kinds the cell
recognises by one set-membership test on the type:

* :class:`Ask`: a message with a :class:`~tocsin.actor._reply.Reply` to answer.
* :class:`RuntimeItem`: something an upper layer queued (a schedule's tick, later a remote
  envelope). The cell calls :meth:`RuntimeItem.open` when its turn reaches it: the message
  to hand to ``receive``, or :data:`STALE` (drop it, it is not lost: e.g. its schedule was
  cancelled). When it cannot be delivered at all, :meth:`RuntimeItem.rejected` says what
  the dead letter carries (or ``STALE``: no dead letter).
* :class:`Turn`: runtime work that must run inside the actor's turn, in mailbox order
  (a durable identity's task drain). The cell awaits :meth:`Turn.run`.

So the cell never names an upper layer's type: a new kind of item is a subclass.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from typing import TYPE_CHECKING, Any, final

if TYPE_CHECKING:
    from ..triggers import Tick
    from ._cell import Cell
    from ._reply import Reply

__all__ = ["ITEM_TYPES", "STALE", "TURN_TYPES", "Ask", "Mailbox", "RuntimeItem", "Turn"]

#: A mailbox: message, sender, message, sender, ...
Mailbox = deque[Any]


@final
class _Stale:
    __slots__ = ()

    def __repr__(self) -> str:
        return "STALE"


#: Returned by :meth:`RuntimeItem.open` / :meth:`RuntimeItem.rejected`: drop the item.
STALE: Any = _Stale()

#: Every item type (Ask, Turn and RuntimeItem subclasses): the cell's one type test.
ITEM_TYPES: set[type] = set()
#: The Turn subclasses (an exact-type set test: ``isinstance`` on an ABC costs ~0.3 µs).
TURN_TYPES: set[type] = set()


@final
class Ask:
    """An ask's message and its reply, as they wait in a mailbox."""

    __slots__ = ("message", "reply")

    def __init__(self, message: Any, reply: Reply) -> None:
        self.message = message
        self.reply = reply

    def rejected(self) -> Any:
        return self.message


class RuntimeItem(ABC):
    """An item an upper layer puts in a mailbox (subclasses register themselves)."""

    __slots__ = ()

    #: Whether :meth:`finished` matters to whoever queued the item (a schedule whose
    #: overlap policy counts ticks in flight): only a tracked item is told. The cell
    #: reads it once ``receive`` returns, and a remote target to ask the hosting node
    #: for a completion frame (one small frame per tick, only then). A class attribute
    #: or a slot on an item made per tick: a property would cost the call it saves.
    tracked: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        ITEM_TYPES.add(cls)

    @abstractmethod
    def open(self) -> Any:
        """The message ``receive`` gets, or :data:`STALE` to drop this item."""

    @abstractmethod
    def rejected(self) -> Any:
        """The item could not be queued or was flushed (target stopped or suspended):
        the message its dead letter carries, or :data:`STALE` for no dead letter."""

    def tick(self) -> Tick | None:
        """What ``ctx.tick`` gives while ``receive`` handles this item's message (read
        only when the handler asks; default ``None``: not a scheduled delivery)."""
        return None

    def finished(self) -> None:
        """Called once ``receive`` for this item's message has returned (or raised), so
        an item can tell its sender the delivery is over (a schedule's overlap policy, a
        remote completion frame), if the item is :attr:`tracked` (locally and across
        nodes alike). Not called for an item opened as :data:`STALE` or rejected:
        ``open`` / ``rejected`` see those. Default: nothing."""

    def lost(self) -> None:
        """Called instead of :meth:`finished` when an item already opened may never have
        reached ``receive`` (its frame never left, its connection was lost, it was
        dead-lettered on the hosting node): not in flight any more, but not known to be
        delivered (cluster cron's ``at_least_once`` lets such a claim lapse, so another
        node delivers the tick). Default: :meth:`finished`."""
        self.finished()


class Turn(ABC):
    """Runtime work run inside an actor's turn: one at a time, never concurrently with
    ``receive``, because it is just another item of the mailbox."""

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        ITEM_TYPES.add(cls)
        TURN_TYPES.add(cls)

    @abstractmethod
    async def run(self, cell: Cell) -> None:
        """Do the work. An exception is logged; it does not fail the actor."""

    def rejected(self) -> Any:
        """Undeliverable turns are dropped (they are the runtime's own work)."""
        return STALE


ITEM_TYPES.add(Ask)
