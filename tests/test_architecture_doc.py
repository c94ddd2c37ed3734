# SPDX-License-Identifier: Apache-2.0
"""docs/architecture.md cites only what exists: every file path, every name in backticks.

The page is for contributors, and it rots first: it once called remoting and the cluster
"next issues" and described a start order the code no longer had. This test reads every
inline code span (and the layer listing's first column) and checks it:

* a path (``actor/_runtime.py``, ``cli/``, ``system.py``) exists under ``src/tocsin``, or
  under the repository root when it starts with ``tests/``, ``docs/`` or ``bench/``;
* a name (``RemoteService``, ``Runtime.codec_extension``, ``deliver_if_won(...)``,
  ``tocsin.run``) resolves: a ``tocsin.`` name by import, any other by each of its dotted
  parts being a word of tocsin's source (a definition, an attribute, a parameter);
* anything else (a URL, a command line, a tuple, an expression with spaces) is prose.
"""

from __future__ import annotations

import importlib
import re
from functools import cache
from pathlib import Path

import pytest

import tocsin

SRC = Path(tocsin.__file__).parent
ROOT = SRC.parents[1]
PAGE = ROOT / "docs" / "architecture.md"

NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
PATH = re.compile(r"[\w.-]+(?:/[\w.-]+)*/?")


def spans() -> list[str]:
    """Inline code spans outside fenced blocks, plus the fenced layer listing's entries."""
    text = PAGE.read_text(encoding="utf-8")
    found: list[str] = []
    for i, part in enumerate(re.split(r"^```[^\n]*\n", text, flags=re.M)):
        if i % 2:  # inside a fenced block: the layer listing's first column
            found += [line.split()[0] for line in part.splitlines() if line[:2] == "  "]
            found = [s for s in found if PATH.fullmatch(s) and ("/" in s or s.endswith(".py"))]
        else:
            found += re.findall(r"`([^`\n]+)`", part)
    return found


def is_path(span: str) -> bool:
    return PATH.fullmatch(span) is not None and ("/" in span or span.endswith(".py"))


def callee(span: str) -> str | None:
    """The dotted name a span cites (``x.y(...)`` cites ``x.y``), or None for prose."""
    head = span.split("(", 1)[0] if span.endswith(")") else span
    return head if NAME.fullmatch(head) else None


@cache
def source_words() -> frozenset[str]:
    words: set[str] = set()
    for path in SRC.rglob("*.py"):
        words.update(re.findall(r"[A-Za-z_]\w*", path.read_text(encoding="utf-8")))
    return frozenset(words)


def resolves(name: str) -> bool:
    if name.startswith("tocsin."):
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                value: object = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            try:
                for attr in parts[cut:]:
                    value = getattr(value, attr)
            except AttributeError:
                return False
            return True
        return False
    return all(part in source_words() for part in name.split("."))


PATHS = sorted({s for s in spans() if is_path(s)})
NAMES = sorted({n for s in spans() if not is_path(s) and (n := callee(s)) is not None})


def test_the_page_cites_paths_and_names() -> None:
    """The parser finds what the page is made of (a broken parser checks nothing)."""
    assert {"actor/_runtime.py", "system.py", "_run/_arbiter.py", "remote/"} <= set(PATHS)
    assert {"RemoteService", "ClusterNode", "Arbiter", "Runtime"} <= set(NAMES)


@pytest.mark.parametrize("path", PATHS)
def test_every_cited_path_exists(path: str) -> None:
    base = ROOT if path.split("/", 1)[0] in ("tests", "docs", "bench") else SRC
    assert (base / path).exists(), f"docs/architecture.md cites {path!r}: not under {base}"


@pytest.mark.parametrize("name", NAMES)
def test_every_cited_name_resolves(name: str) -> None:
    assert resolves(name), f"docs/architecture.md cites `{name}`: not found in src/tocsin"


def test_the_page_describes_the_layers_that_exist() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert "next issue" not in text
    for package in ("remote/", "cluster/", "metrics/", "console/", "cli/"):
        assert package in text, package
