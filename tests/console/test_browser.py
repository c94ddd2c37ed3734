# SPDX-License-Identifier: Apache-2.0
"""The console in a real browser (Debian's chromium + chromium-driver, through Selenium).

On a running system: without the token only the sign-in page shows; the printed URL
(``/?token=...``) signs in and leaves the address bar with an ``HttpOnly``, 12-hour
cookie; a schedule's next fire time ticks forward on its own (server-sent events), the
Retry button of a parked task makes it run and leave the parked list, hostile payload
text shows as text (no alert); Sign out clears the cookie, the sign-in form signs in
again, and a session that expires while its page is open stops its live updates.
Screenshots are saved under ``tmp_path``.

Skips when chromium or chromedriver is missing, unless ``TOCSIN_REQUIRE_BROWSER=1`` or
``CI`` is set (``.ci/run`` sets it and installs both): then it fails instead.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.console.console_support import FAILING, HOSTILE, HOSTILE_NAME, RAN, populate

from tocsin import ActorSystem, ManualClock, SystemClock
from tocsin.console import SESSION_TTL, serve
from tocsin.console._app import sessions_of
from tocsin.stores import MemoryStore

#: Left out of `make check` (a real browser); `make test` runs it.
pytestmark = pytest.mark.slow

#: Real seconds any one browser wait may take (a bound for a busy 2-core machine, not a
#: speed expectation).
WAIT = 30.0


#: Visible text whose contrast with its background is below WCAG AA (4.5:1), as the
#: browser renders it (computed colours, the nearest opaque background up the tree).
LOW_CONTRAST = """
function lum(color) {
  const [r, g, b] = color.match(/[\\d.]+/g).slice(0, 3).map(Number).map(v => {
    v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
function background(el) {
  for (; el; el = el.parentElement) {
    const parts = getComputedStyle(el).backgroundColor.match(/[\\d.]+/g);
    if (parts && (parts.length < 4 || Number(parts[3]) > 0)) return parts.join(',');
  }
  return '255,255,255';
}
const bad = [];
for (const el of document.querySelectorAll('body *')) {
  if (!el.getClientRects().length) continue;  // not rendered
  if (![...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) continue;
  const a = lum(getComputedStyle(el).color), b = lum(background(el));
  const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  if (ratio < 4.5) bad.push(`${el.tagName}.${el.className} ${ratio.toFixed(2)}`);
}
return bad;
"""
#: Buttons, links and form fields without an accessible name.
UNNAMED_CONTROLS = """
return [...document.querySelectorAll('button, a, input:not([type=hidden]), select')]
  .filter(el => !(el.getAttribute('aria-label') || el.textContent.trim() ||
                  (el.labels && el.labels.length)))
  .map(el => el.outerHTML.slice(0, 80));
"""


def _binaries() -> tuple[str, str]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver") or (
        "/usr/bin/chromedriver" if os.path.exists("/usr/bin/chromedriver") else None
    )
    required = os.environ.get("TOCSIN_REQUIRE_BROWSER") == "1" or bool(os.environ.get("CI"))
    if chromium is None or driver is None:
        message = (
            "chromium and chromium-driver are needed (apt-get install chromium chromium-driver)"
        )
        if required:
            pytest.fail(message + " (TOCSIN_REQUIRE_BROWSER/CI is set)")
        pytest.skip(message)
    return chromium, driver


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    chromium, driver_path = _binaries()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        "--window-size=1280,1000",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_page_load_timeout(WAIT)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(autouse=True)
def _reset() -> None:
    FAILING.clear()
    RAN.clear()


async def _wait_parked(system: ActorSystem, store: MemoryStore, count: int) -> None:
    for _ in range(int(WAIT / 0.05)):
        if len(await store.list_tasks(state="parked")) == count:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{count} tasks were not parked within {WAIT} s")


async def test_console_ticks_live_and_retries_a_parked_task_in_a_real_browser(
    browser: Any, tmp_path: Path
) -> None:
    from selenium.common.exceptions import (
        NoAlertPresentException,
        StaleElementReferenceException,
    )
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    store = MemoryStore()
    async with ActorSystem(store=store) as system:  # real time: a browser lives in it
        await populate(system)
        await _wait_parked(system, store, 2)
        async with await serve(system, "127.0.0.1:0", interval=0.2) as server:
            # Live updates replace whole sections: read in one script call (atomic in the
            # page), and retry a click whose element was swapped under it.
            def next_fire(driver: Any) -> str:
                text: str = driver.execute_script(
                    "for (const tr of document.querySelectorAll('#schedules tr')) {"
                    "  if (tr.textContent.includes('every-second')) {"
                    "    return tr.querySelector('.next-fire time').textContent; } }"
                    "return '';"
                )
                return text

            def parked_text(driver: Any) -> str:
                text: str = driver.execute_script(
                    "return document.getElementById('parked').textContent;"
                )
                return text

            def state(driver: Any) -> str:
                text: str = driver.execute_script(
                    "return document.getElementById('live-state').textContent;"
                )
                return text

            def click(selector: str) -> None:
                for _ in range(20):
                    try:
                        browser.find_element(By.CSS_SELECTOR, selector).click()
                        return
                    except StaleElementReferenceException:
                        continue
                raise AssertionError(f"{selector} kept being replaced")

            def scenario() -> None:
                wait = WebDriverWait(
                    browser,
                    WAIT,
                    poll_frequency=0.1,
                    ignored_exceptions=(StaleElementReferenceException,),
                )
                # Without the token (any other user of this machine): the sign-in page.
                browser.get(server.url)
                assert browser.title == "tocsin console: sign in"
                assert "?token=" in browser.find_element(By.TAG_NAME, "main").text
                assert "every-second" not in browser.page_source
                assert browser.execute_script(LOW_CONTRAST) == []
                assert browser.execute_script(UNNAMED_CONTROLS) == []
                # The printed URL: the token is swapped for a cookie and leaves the
                # address bar.
                browser.get(server.login_url)
                assert browser.title == "tocsin console"
                assert "token=" not in browser.current_url
                cookie = browser.get_cookie("tocsin_console")
                assert cookie is not None
                assert cookie["httpOnly"] is True
                assert cookie["sameSite"] == "Strict"
                assert server.token is not None
                assert server.token not in cookie["value"]
                left = cookie["expiry"] - SystemClock().wall()
                assert SESSION_TTL - 120 < left <= SESSION_TTL + 1  # 12 h
                # Live updates: the next fire time moves forward without a reload.
                first = next_fire(browser)
                wait.until(lambda d: next_fire(d) > first)
                assert state(browser) == "Live"  # the event stream signed in by cookie
                # Hostile text is shown as text and never runs.
                assert HOSTILE in parked_text(browser)
                with pytest.raises(NoAlertPresentException):
                    browser.switch_to.alert.accept()
                browser.save_screenshot(str(tmp_path / "console.png"))
                assert browser.execute_script(LOW_CONTRAST) == []
                assert browser.execute_script(UNNAMED_CONTROLS) == []
                # Keyboard: the first Tab reaches the skip link; a focused button keeps its
                # focus while live updates arrive.
                browser.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)
                assert (
                    browser.execute_script("return document.activeElement.textContent;")
                    == "Skip to content"
                )
                browser.execute_script(
                    "document.querySelector(\"button[aria-label^='Discard task t-ship']\").focus();"
                )
                before = next_fire(browser)
                wait.until(lambda d: next_fire(d) > before)  # at least one update arrived
                focused = browser.execute_script(
                    "return document.activeElement.getAttribute('aria-label');"
                )
                assert focused.startswith("Discard task t-ship")
                # Retry: the task succeeds this time and leaves the parked list.
                assert "t-charge" in parked_text(browser)
                FAILING.discard("charge")
                click("button[aria-label='Retry task t-charge (charge) of ConsoleWorker/order-1']")
                wait.until(lambda d: "t-charge" not in parked_text(d))
                assert "t-ship" in parked_text(browser)
                assert "is pending again" in browser.find_element(By.ID, "notice").text
                # Readable on a phone: the same page at a phone's width.
                browser.set_window_size(390, 844)
                browser.save_screenshot(str(tmp_path / "console-phone.png"))
                width = browser.execute_script(
                    "return [document.documentElement.scrollWidth, window.innerWidth];"
                )
                assert width[0] <= width[1], f"sideways scrolling on a phone: {width}"
                assert browser.execute_script(LOW_CONTRAST) == []  # the cards too
                browser.set_window_size(1280, 1000)
                # Sign out: the cookie goes, the page is the sign-in page again.
                click("#sign-out")
                wait.until(lambda d: d.title == "tocsin console: sign in")
                assert "Signed out." in browser.find_element(By.TAG_NAME, "main").text
                assert browser.get_cookie("tocsin_console") is None
                browser.get(server.url)
                assert browser.title == "tocsin console: sign in"
                # The sign-in form works too.
                browser.find_element(By.ID, "token").send_keys(server.token)
                browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
                wait.until(lambda d: d.title == "tocsin console")
                wait.until(lambda d: state(d) == "Live")
                # A session that expires while its page is open: live updates stop and
                # the page says so; a reload asks to sign in again.
                sessions_of(server.app).clock = ManualClock(wall=SystemClock().wall() + SESSION_TTL)
                wait.until(lambda d: state(d).startswith("Live updates stopped"))
                browser.refresh()
                assert browser.title == "tocsin console: sign in"
                assert "expired" in browser.find_element(By.TAG_NAME, "main").text

            await asyncio.to_thread(scenario)
        assert RAN.count("charge") == 2
    for name in ("console.png", "console-phone.png"):
        shot = tmp_path / name
        assert shot.stat().st_size > 10_000, f"{name} looks empty"
    if os.environ.get("TOCSIN_SCREENSHOT_DIR"):  # docs/operations.md takes its picture here
        for name in ("console.png", "console-phone.png"):
            shutil.copy(tmp_path / name, Path(os.environ["TOCSIN_SCREENSHOT_DIR"]) / name)


async def test_a_schedules_history_page_shows_its_ring_and_its_pause_note(
    browser: Any, tmp_path: Path
) -> None:
    """Issue 23: the reference links to the schedule's page; the page lists what became
    of its recent instants, newest first, and a paused schedule's note, time and node
    (hostile note text stays text)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    # The system runs on a ManualClock: its ticks happen when the test says, before the
    # browser looks, and nothing changes under the browser's clicks. (On real time, with
    # live updates every 0.2 s, a click could land on a link just swapped out, and how
    # many ticks the page showed depended on the machine's load: four fixes in a day.)
    clock = ManualClock(wall=SystemClock().wall())
    async with ActorSystem("ops", clock=clock) as system:
        await populate(system)
        pid = await system.actor_of(f"sink{HOSTILE_NAME}")
        await system.schedule("tick", pid, 0.2, reference="fast")
        await system.pause_schedule("standup", note=f"holiday freeze {HOSTILE}")
        await clock.advance(1.0)  # five ticks of "fast", recorded in its ring
        # No live update during the test: an hour between two (the longest allowed).
        async with await serve(system, "127.0.0.1:0", interval=3600) as server:

            def rows(driver: Any) -> list[list[str]]:
                cells: list[list[str]] = driver.execute_script(
                    "return [...document.querySelectorAll('#history tbody tr')]"
                    ".map(tr => [...tr.cells].map(td => td.textContent));"
                )
                return cells

            def scenario() -> None:
                wait = WebDriverWait(browser, WAIT, poll_frequency=0.1)
                browser.get(server.login_url)
                assert browser.title == "tocsin console"
                # The paused schedule's row says why, since when and by whom.
                state = browser.execute_script(
                    "for (const tr of document.querySelectorAll('#schedules tr')) {"
                    "  if (tr.textContent.includes('standup')) {"
                    "    return tr.cells[6].textContent; } } return '';"
                )
                assert state.startswith("paused")
                assert f"holiday freeze {HOSTILE}" in state
                assert "by ops" in state
                browser.find_element(By.CSS_SELECTOR, "a[aria-label='History of fast']").click()
                wait.until(lambda d: d.title.startswith("fast: history"))
                assert browser.find_element(By.TAG_NAME, "h1").text == "Schedule fast"
                assert len(rows(browser)) >= 5  # the five ticks of the advance
                table = rows(browser)
                assert {r[2] for r in table} == {"delivered"}
                instants = [r[0] for r in table]
                assert instants == sorted(instants, reverse=True)  # newest first
                assert {r[4] for r in table} == {"ops"}
                assert browser.execute_script(LOW_CONTRAST) == []
                assert browser.execute_script(UNNAMED_CONTROLS) == []
                browser.save_screenshot(str(tmp_path / "history.png"))
                # The paused one: no instant came due yet, and the page says so.
                browser.get(server.url.split("?")[0] + "schedule?reference=standup")
                facts = browser.find_element(By.ID, "schedule-facts").text
                assert f"holiday freeze {HOSTILE}" in facts
                assert "Nothing recorded yet" in browser.find_element(By.ID, "history").text
                # An unknown reference is a 404, not an empty page.
                browser.get(server.url.split("?")[0] + "schedule?reference=nope")
                assert "No live schedule" in browser.find_element(By.TAG_NAME, "main").text

            await asyncio.to_thread(scenario)
    assert (tmp_path / "history.png").stat().st_size > 10_000
