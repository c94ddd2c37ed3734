# SPDX-License-Identifier: Apache-2.0
"""The docs a newcomer reads first stay true: shown code is the example file it names, a
shown output is what that example prints, no MkDocs include is left unrendered, and every
repository path a page names exists."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
#: A link to an example, a colon, then the fenced block that must be that file.
SHOWN = re.compile(r"\[`(examples/[\w./-]+\.py)`\]\([^)]*\):\n\n```python\n(.*?)```", re.DOTALL)
#: "print:" or "prints:", then the fenced block of what the example named last prints.
PRINTED = re.compile(r"prints?:\n\n```text\n(.*?)```", re.DOTALL)
#: An example a page names (the one whose output a "prints:" block shows is the last).
EXAMPLE = re.compile(r"`(examples/[\w./-]+\.py)`")
#: Repository paths a page may name.
PATH = re.compile(r"\b((?:tests|examples|bench|src)/[\w./-]+\.(?:py|md|sql|tsv))")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_unrendered_include(page: Path) -> None:
    assert "--8<--" not in page.read_text(), f"{page.name} has an MkDocs include; show the code"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_named_repository_path_exists(page: Path) -> None:
    missing = [p for p in PATH.findall(page.read_text()) if not (ROOT / p).exists()]
    assert not missing, f"{page.name} names files that do not exist: {missing}"


def test_shown_examples_are_the_files_they_name() -> None:
    shown = [(page, m) for page in PAGES for m in SHOWN.finditer(page.read_text())]
    assert any(page.name == "getting-started.md" for page, _ in shown)
    assert any(page.name == "testing.md" for page, _ in shown)
    for page, match in shown:
        path, code = match.group(1), match.group(2)
        assert code == (ROOT / path).read_text(), f"{page.name}: the block under {path} differs"


def test_shown_output_is_what_the_example_prints() -> None:
    """A page that shows an example's output shows what the example prints today (the
    examples run on a ManualClock: their output is exact)."""
    printed = [(page, m) for page in PAGES for m in PRINTED.finditer(page.read_text())]
    assert {"scheduling.md", "operations.md"} <= {page.name for page, _ in printed}
    for page, match in printed:
        named = EXAMPLE.findall(match.string, 0, match.start())
        assert named, f"{page.name}: output shown at {match.start()} names no example"
        path, shown = named[-1], match.group(1)
        result = subprocess.run(
            [sys.executable, str(ROOT / path)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 0, f"{path} failed:\n{result.stderr}"
        assert result.stdout == shown, f"{page.name}: {path} prints\n{result.stdout}"


def test_the_readme_links_absolutely_to_files_of_this_repository() -> None:
    """PyPI shows the README away from the repository: a relative link is dead there."""
    import tomllib

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = meta["urls"]["Repository"] + "/blob/main/"
    links = re.findall(r"\]\(([^)]+)\)", (ROOT / "README.md").read_text())
    assert links
    for link in links:
        assert link.startswith(("https://", "#")), f"README links relatively: {link}"
        if link.startswith(base):
            assert (ROOT / link.removeprefix(base)).exists(), f"README links to no file: {link}"
    assert "Typing :: Typed" in meta["classifiers"]
    assert {"Homepage", "Repository", "Changelog", "Issues"} <= set(meta["urls"])
