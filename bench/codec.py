# SPDX-License-Identifier: Apache-2.0
"""What decoding costs: legitimate payloads, and the attacks the codec now refuses.

Side by side in one run (medians of interleaved repetitions):

* ``small``      : a typical remote message (~60 B): ``decode`` (no scan below 8 KiB).
* ``large``      : a 900 KB payload of dicts, lists, tuples and sets: ``decode`` (scan +
                   decode) beside the decode alone (``_decode``) and raw msgspec.
* ``set-100k``   : a set of 100,000 ints: ``decode`` (scan + hash check) beside the
                   decode alone and a plain ``set()`` of the same list.
* attacks        : an 8 KB pattern (extension 8: refused unread, never compiled), 5,000
                   colliding big ints in a set, and 4,000 colliding tuple keys in a
                   native map: tocsin's refusal beside what the old path cost (``set()``
                   of the ints, msgspec building the map).

Usage: ``python bench/codec.py [--quick]``. Prints a table, then one JSON line.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import msgspec

from tocsin._codec import _decode, decode, encode
from tocsin.errors import CodecError

MODULUS = 2**61 - 1
U64 = 2**64
P1, P2, P5 = 11400714785074694791, 14029467366897019727, 2870177450012600261


def colliding_pairs(count: int, target: int = 12345) -> list[tuple[int, int]]:
    """2-tuples of ints with one CPython hash (the xxHash lane is solved for)."""

    def rotl(x: int) -> int:
        return ((x << 31) | (x >> 33)) % U64

    def rotr(x: int) -> int:
        return ((x >> 31) | (x << 33)) % U64

    inv1, inv2 = pow(P1, -1, U64), pow(P2, -1, U64)
    pairs = []
    first = 1
    while len(pairs) < count:
        acc = rotl((P5 + hash(first) * P2) % U64) * P1 % U64
        lane = (rotr(target * inv1 % U64) - acc) * inv2 % U64
        signed = lane - U64 if lane >= 2**63 else lane
        if -MODULUS < signed < MODULUS and signed != -1:
            pairs.append((first, signed))
        first += 1
    return pairs


def timed(fn: Callable[[], Any], reps: int) -> float:
    """Median seconds of ``reps`` calls (a CodecError counts as an answer)."""
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        with contextlib.suppress(CodecError):
            fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few repetitions")
    args = parser.parse_args()
    quick = args.quick
    reps = 3 if quick else 15
    scale = 0.05 if quick else 1.0
    pack = msgspec.msgpack.encode
    ext = msgspec.msgpack.Ext

    small = encode(["tell", "tocsin://shop-1/user/cart", {"sku": "A-1", "n": 2}, 42])
    large_value = {
        f"k{i}": [i, "x" * 10, {"y": 1.5}, (1, 2), {3, 4}] for i in range(int(20_000 * scale))
    }
    large = encode(large_value)
    ints = encode(set(range(int(100_000 * scale))))
    ints_list = list(range(int(100_000 * scale)))
    pattern = ("(?:(?:a{1,100}){1,100}|" * 400)[:8192]
    regex = pack(ext(8, pack([pattern, 0])))
    members = [1 + k * MODULUS for k in range(int(5_000 * scale))]
    bigints = [ext(5, m.to_bytes((m.bit_length() + 8) // 8, "big", signed=True)) for m in members]
    colliding_set = pack(ext(2, pack(bigints)))
    pairs = colliding_pairs(int(4_000 * scale) or 200)
    body = b"".join(pack(list(p)) + b"\x00" for p in pairs)
    colliding_map = b"\xdf" + len(pairs).to_bytes(4, "big") + body

    def hook(code: int, data: memoryview) -> object:
        return None

    rows: dict[str, float] = {}
    rows["small decode"] = timed(lambda: decode(small), reps * 1000) * 1e6
    rows["large decode (scan + decode)"] = timed(lambda: decode(large), reps) * 1e3
    rows["large _decode (no scan)"] = timed(lambda: _decode(large, 0), reps) * 1e3
    rows["large msgspec raw"] = (
        timed(lambda: msgspec.msgpack.decode(large, ext_hook=hook), reps) * 1e3
    )
    rows["set-100k decode (hash check)"] = timed(lambda: decode(ints), reps) * 1e3
    rows["set-100k _decode (no scan)"] = timed(lambda: _decode(ints, 0), reps) * 1e3
    rows["set-100k plain set()"] = timed(lambda: set(ints_list), reps) * 1e3
    rows["attack regex: refused"] = timed(lambda: decode(regex), reps) * 1e3
    rows["attack colliding ints: refused"] = timed(lambda: decode(colliding_set), reps) * 1e3
    rows["attack colliding ints: set() (old)"] = timed(lambda: set(members), reps) * 1e3
    rows["attack tuple-key map: refused"] = timed(lambda: decode(colliding_map), reps) * 1e3
    rows["attack tuple-key map: msgspec (old)"] = (
        timed(lambda: msgspec.msgpack.decode(colliding_map), reps) * 1e3
    )
    units = {"small decode": "µs"}
    print(f"{'measure':44} {'median':>12}")
    for name, value in rows.items():
        print(f"{name:44} {value:10.3f} {units.get(name, 'ms')}")
    sizes = {"small": len(small), "large": len(large), "set-100k": len(ints)}
    print(json.dumps({"quick": quick, "failed": [], "medians": rows, "bytes": sizes}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
