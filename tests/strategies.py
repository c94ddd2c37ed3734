# SPDX-License-Identifier: Apache-2.0
"""Hypothesis strategies shared by the property tests, one section per package.

Sections (cron, durable, ...) live in this one module, as in attrs' ``tests/strategies.py``.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Literal

from hypothesis import strategies as st

#: Surrogates are not text (a lone one cannot be encoded as UTF-8).
SURROGATES: tuple[Literal["Cs"]] = ("Cs",)

# --- durable: codec-safe payloads -------------------------------------------------------

#: Fixed UTC offsets, including odd ones (seconds and microseconds are legal offsets).
codec_offsets = st.none() | st.builds(
    lambda us: timezone(timedelta(microseconds=us)),
    st.integers(-(24 * 3600 * 10**6) + 1, 24 * 3600 * 10**6 - 1),
)
codec_datetimes = st.builds(
    lambda dt, tz, fold: dt.replace(tzinfo=tz, fold=fold),
    # Away from year 1 and 9999, where shifting by an offset (for ==, hash) overflows.
    st.datetimes(min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 31)),
    codec_offsets,
    st.sampled_from([0, 1]),
)

#: Hashable codec-safe scalars (no NaN: a NaN set member or key never equals its copy).
codec_hashable_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**64, max_value=2**200)
    | st.integers(min_value=-(2**200), max_value=-(2**63) - 1)
    | st.floats(allow_nan=False)
    | st.text()
    | st.binary()
    | codec_datetimes
    | st.dates()
)
codec_hashables = st.recursive(
    codec_hashable_scalars,
    lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=4),
    max_leaves=8,
)
codec_scalars = codec_hashable_scalars | st.floats()
#: Any codec-safe value, nested: what `tocsin._codec.encode` must round-trip.
codec_values = st.recursive(
    codec_scalars,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.lists(inner, max_size=5).map(tuple)
        | st.dictionaries(st.text(), inner, max_size=5)
        | st.dictionaries(codec_hashables, inner, max_size=5)
        | st.sets(codec_hashables, max_size=5)
        | st.frozensets(codec_hashables, max_size=5)
    ),
    max_leaves=30,
)

# --- cron: Quartz expressions -------------------------------------------------------------

#: Zones with interesting DST: 1 h, 30 min (Lord_Howe), southern hemisphere, none.
cron_zones = st.sampled_from(
    ["UTC", "Europe/Paris", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata"]
)


def cron_elements(low: int, high: int, *, max_step: int | None = None) -> st.SearchStrategy[str]:
    """One list element of a numeric field: ``a``, ``a-b``, ``a/s``, ``a-b/s``, ``*/s``."""
    value = st.integers(low, high)
    step = st.integers(1, max_step if max_step is not None else high - low + 1)
    return st.one_of(
        value.map(str),
        st.tuples(value, value).map(lambda ab: f"{ab[0]}-{ab[1]}"),
        st.tuples(value, step).map(lambda vs: f"{vs[0]}/{vs[1]}"),
        st.tuples(value, value, step).map(lambda abs_: f"{abs_[0]}-{abs_[1]}/{abs_[2]}"),
        step.map(lambda s: f"*/{s}"),
    )


def cron_fields(low: int, high: int, *, star: bool = True) -> st.SearchStrategy[str]:
    """A whole numeric field: ``*`` or a comma list of elements."""
    listed = st.lists(cron_elements(low, high, max_step=high), min_size=1, max_size=3).map(",".join)
    return (st.just("*") | listed) if star else listed


#: Day-of-month rules, including Quartz's specials.
cron_dom_rules = st.one_of(
    cron_fields(1, 31, star=False),
    st.just("L"),
    st.just("LW"),
    st.integers(0, 30).map(lambda n: f"L-{n}"),
    st.integers(0, 30).map(lambda n: f"L-{n}W"),
    st.integers(1, 31).map(lambda n: f"{n}W"),
)
#: Day-of-week rules, including names and Quartz's specials.
cron_dow_rules = st.one_of(
    cron_fields(1, 7, star=False),
    st.sampled_from(["MON-FRI", "SAT,SUN", "FRI-MON", "L", "TUE"]),
    st.integers(1, 7).map(lambda n: f"{n}L"),
    st.tuples(st.integers(1, 7), st.integers(1, 5)).map(lambda nk: f"{nk[0]}#{nk[1]}"),
)
#: The two day fields together: exactly one of them is `?`.
cron_day_pairs = st.one_of(
    st.just(("*", "?")),
    st.just(("?", "*")),
    cron_dom_rules.map(lambda dom: (dom, "?")),
    cron_dow_rules.map(lambda dow: ("?", dow)),
)


@st.composite
def cron_expressions(draw: st.DrawFn, *, years: bool = True) -> str:
    """A valid Quartz expression of 6 or 7 fields."""
    dom, dow = draw(cron_day_pairs)
    fields = [
        draw(cron_fields(0, 59)),
        draw(cron_fields(0, 59)),
        draw(cron_fields(0, 23)),
        dom,
        draw(cron_fields(1, 12)),
        dow,
    ]
    if years and draw(st.booleans()):
        fields.append(draw(st.sampled_from(["*", "2025-2030", "2024/3", "2026,2031", "2099"])))
    return " ".join(fields)


@st.composite
def dense_cron_expressions(draw: st.DrawFn) -> str:
    """Expressions that fire often in any hour: brute force over a few hours checks them."""
    seconds = draw(cron_fields(0, 59))
    minutes = draw(cron_fields(0, 59))
    hours = draw(st.sampled_from(["*", "0-23/2", "1,5,9-12", "*/3"]))
    return f"{seconds} {minutes} {hours} * * ?"


@st.composite
def day_cron_expressions(draw: st.DrawFn) -> str:
    """Noon on days chosen by any day rule, in any months: brute force day by day."""
    dom, dow = draw(cron_day_pairs)
    return f"0 0 12 {dom} {draw(cron_fields(1, 12))} {dow}"


# --- cron: Unix (five-field) expressions ---------------------------------------------------

_UNIX_DAY_NAMES = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]
_UNIX_MONTH_NAMES = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN"]


def unix_elements(low: int, high: int, names: list[str] | None = None) -> st.SearchStrategy[str]:
    """One Unix list element: ``a``, ``a-b`` (a <= b), ``a/s``, ``a-b/s``, ``*/s``, names."""
    value = st.integers(low, high)
    pair = st.tuples(value, value).map(sorted)
    step = st.integers(1, high - low + 2)
    plain = st.one_of(
        value.map(str),
        pair.map(lambda ab: f"{ab[0]}-{ab[1]}"),
        st.tuples(value, step).map(lambda vs: f"{vs[0]}/{vs[1]}"),
        st.tuples(pair, step).map(lambda ps: f"{ps[0][0]}-{ps[0][1]}/{ps[1]}"),
        step.map(lambda s: f"*/{s}"),
    )
    if names is None:
        return plain
    named = st.tuples(st.integers(0, len(names) - 1), st.integers(0, len(names) - 1)).map(sorted)
    return plain | named.map(lambda ab: f"{names[ab[0]]}-{names[ab[1]].lower()}")


def unix_fields(low: int, high: int, names: list[str] | None = None) -> st.SearchStrategy[str]:
    """A whole Unix field: ``*`` or a comma list of elements."""
    listed = st.lists(unix_elements(low, high, names), min_size=1, max_size=3).map(",".join)
    return st.just("*") | listed


@st.composite
def unix_expressions(draw: st.DrawFn) -> str:
    """A valid five-field Unix cron expression."""
    return " ".join(
        [
            draw(unix_fields(0, 59)),
            draw(unix_fields(0, 23)),
            draw(unix_fields(1, 31)),
            draw(unix_fields(1, 12, _UNIX_MONTH_NAMES)),
            draw(unix_fields(0, 7, _UNIX_DAY_NAMES)),
        ]
    )


@st.composite
def unix_day_expressions(draw: st.DrawFn) -> str:
    """Noon on days chosen by both Unix day fields: brute force day by day."""
    dom = draw(unix_fields(1, 31))
    dow = draw(unix_fields(0, 7, _UNIX_DAY_NAMES))
    return f"0 12 {dom} {draw(unix_fields(1, 12, _UNIX_MONTH_NAMES))} {dow}"


_MUTATION_ALPHABET = "0123456789*?-,/#LW LMONJANSUNX\t\u00a0\u0663\uff15\u00bd@ "


@st.composite
def mutated_cron_text(draw: st.DrawFn) -> str:
    """A valid expression with a few characters inserted, deleted or replaced."""
    text = draw(cron_expressions())
    for _ in range(draw(st.integers(1, 4))):
        index = draw(st.integers(0, len(text)))
        char = draw(st.sampled_from(_MUTATION_ALPHABET))
        operation = draw(st.sampled_from(["insert", "delete", "replace"]))
        if operation == "insert":
            text = text[:index] + char + text[index:]
        elif operation == "delete":
            text = text[:index] + text[index + 1 :]
        else:
            text = text[:index] + char + text[index + 1 :]
    return text


#: Instants from 1990 to 2090 (naive; attach a zone in the test).
cron_starts = st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2090, 12, 31))


# -- remoting: node and system addresses ---------------------------------------------------

_HOST_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789.-"

#: Host names, IPv4 and IPv6 literals as a ``listen`` address may hold them.
remote_hosts = st.one_of(
    st.text(_HOST_CHARS, min_size=1, max_size=20),
    st.ip_addresses(v=4).map(str),
    st.ip_addresses(v=6).map(str),
)
#: Absolute Unix socket paths (any printable name characters, '@' and '%' included).
remote_socket_paths = st.lists(
    st.text(
        st.characters(blacklist_characters="/\x00", blacklist_categories=SURROGATES),
        min_size=1,
        max_size=12,
    ),
    min_size=1,
    max_size=4,
).map(lambda parts: "/" + "/".join(parts))
#: System names as ActorSystem accepts them (no '/', '@', '#', ':' or spaces).
remote_system_names = st.text(
    st.characters(blacklist_characters="/@#: \x00", blacklist_categories=("Cs", "Zs", "Cc")),
    min_size=1,
    max_size=12,
)
#: Actor paths: /user/ followed by names without '/', '#' or whitespace.
remote_actor_paths = st.lists(
    st.text(
        st.characters(blacklist_characters="/#", blacklist_categories=("Cs", "Zs", "Cc")),
        min_size=1,
        max_size=8,
    ),
    min_size=1,
    max_size=3,
).map(lambda parts: "/user/" + "/".join(parts))


# --- cluster: sequences of coordinator steps -------------------------------------------

#: One step against a coordinator: let time pass, claim a tick, pause or resume a reference.
cluster_steps = st.one_of(
    st.tuples(st.just("advance"), st.sampled_from([0.5, 10.0, 59.0, 61.0, 130.0])),
    st.tuples(
        st.just("claim"),
        st.sampled_from(["r1", "r2"]),  # reference
        st.integers(-3, 3),  # fire instant, in minutes from the start
        st.sampled_from([60.0, 120.0]),  # ttl
        st.sampled_from(["n1", "n2", "n3"]),  # claiming node
    ),
    st.tuples(st.just("pause"), st.sampled_from(["r1", "r2"]), st.booleans()),
)
