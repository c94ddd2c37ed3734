# SPDX-License-Identifier: Apache-2.0
"""Hypothesis strategies shared by the property tests, one section per package.

Sections (cron, durable, ...) live in this one module, as in attrs' ``tests/strategies.py``.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from hypothesis import strategies as st

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
codec_patterns = st.builds(
    re.compile,
    st.sampled_from(["a+b", "^x$", r"\d{2,3}", "(?P<n>[a-z]+)"]),
    st.sampled_from([0, re.IGNORECASE, re.MULTILINE | re.DOTALL]),
) | st.builds(re.compile, st.sampled_from([b"ab*", b"^\\x00"]))

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
codec_scalars = codec_hashable_scalars | st.floats() | codec_patterns
#: Any codec-safe value, nested: what `tocsin.durable._codec.encode` must round-trip.
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
