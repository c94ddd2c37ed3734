# SPDX-License-Identifier: Apache-2.0
"""What the remote decode's cost guard costs registered messages, and what it refuses.

One process, medians of repetitions (``timeit``):

* ``small``   : a registered Struct of one int (not guarded: no set, dict or ``Any``), and
                one with a ``frozenset[str]`` and a ``dict[int, str]`` (guarded, ~30 B:
                below 8 KiB, so only a length test).
* ``set-2k``  : an honest ``set[tuple[int, int]]`` of 2,000 pairs (13.6 KB): guarded
                decode (scan, untyped decode, hash check, typed decode) beside msgspec's
                typed decode alone.
* attack      : the same set of 2,000 pairs sharing one hash: refused, beside what
                msgspec alone spends building it.

Usage: ``python bench/wire_costs.py [--quick]``. Prints a table, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
import timeit
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.remote.remote_support import FakePID
from tests.test_codec_costs import colliding_pairs

from tocsin.errors import CodecError
from tocsin.remote._messages import MessageRegistry, WireCodec


class Ping(msgspec.Struct, tag=True):
    n: int


class Bag(msgspec.Struct, tag=True):
    tags: frozenset[str]
    meta: dict[int, str]


class Pairs(msgspec.Struct, tag=True):
    members: set[tuple[int, int]]


def per_call(fn: object, number: int, repeat: int) -> float:
    """Seconds per call: the best of ``repeat`` rounds of ``number`` calls."""
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number  # type: ignore[arg-type]


def refuse(codec: WireCodec, name: str, data: bytes) -> None:
    try:
        codec.decode(name, data)
    except CodecError:
        return
    raise AssertionError("the attack was decoded")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    codec = WireCodec(MessageRegistry([Ping, Bag, Pairs]), FakePID, FakePID)
    plain = msgspec.msgpack.Decoder(Pairs)
    results: dict[str, float] = {}
    for label, value in (("small Ping", Ping(7)), ("small Bag", Bag(frozenset("ab"), {1: "x"}))):
        name, data = codec.encode(value)
        results[f"{label} ({len(data)} B), ns"] = 1e9 * per_call(
            lambda name=name, data=data: codec.decode(name, data), 200_000 // scale, 5
        )
    name, honest = codec.encode(Pairs({(i, 7 * i) for i in range(2000)}))
    results[f"set-2k honest ({len(honest)} B), guarded, us"] = 1e6 * per_call(
        lambda: codec.decode(name, honest), 200 // scale, 5
    )
    results["set-2k honest, msgspec alone, us"] = 1e6 * per_call(
        lambda: plain.decode(honest), 200 // scale, 5
    )
    _, attack = codec.encode(Pairs(set(colliding_pairs(2000))))
    results[f"attack: 2,000 colliding pairs ({len(attack)} B), refused in, us"] = 1e6 * per_call(
        lambda: refuse(codec, name, attack), 50 // scale, 3
    )
    results["attack: msgspec alone building it, us"] = 1e6 * per_call(
        lambda: plain.decode(attack), 1, 3
    )
    print("| measure | value |\n|---|---|")
    for key, figure in results.items():
        print(f"| {key} | {figure:,.0f} |")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
