"""Issue 25 in headless Chromium: people on the pages, as they would use them.

- two people answering pages of one tool on one server: a finished tab never moves to the
  other's question (defect 1), each answer serves its own call;
- ``elicitkit call --ui browser`` (the real command, no desktop browser: it prints the address)
  ends on a page that stays readable after the command exits;
- an old page's Send (Back, then Send) leads to where things stand, never a bare "Not found";
- a look-alike domain written in Unicode opens by typing its ASCII (punycode) name, and the stop
  names the real letters;
- axe-core: no serious or critical violation on the server's page states, desktop and phone.

The Selenium driver and helpers are the browser handler's module's (one Chromium per module).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx
import pytest
from pydantic import BaseModel

from elicitkit import Client, Context, Server
from elicitkit.server.pages import pages_of

from . import test_in_chromium as chromium
from .test_in_chromium import (
    WAIT,
    Audit,
    By,
    WebDriver,
    WebDriverWait,
    axe_source,
    body_class,
    load,
    outcome_shown,
    press,
    session,
    type_into,
    ux_server,
)

driver = chromium.driver  # the module-scoped headless Chromium fixture
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]

ROOT = Path(__file__).resolve().parents[4]
LINK = re.compile(r"http://\S+/mcp/ask/[A-Za-z0-9_\-]+")


class Booking(BaseModel):
    guests: int


class ApiKey(BaseModel):
    api_key: str


def bistro() -> Server:
    server = Server("bistro", "1.0.0", title="Bistro du Coin")

    @server.tool()
    async def book(ctx: Context, day: str) -> str:
        """The party size, on the server's page for a client without elicitation."""
        result = await ctx.elicit(f"How many guests on {day}?", Booking, fallback="page", timeout=30)
        return f"booked {result.data.guests} on {day}" if result.accepted else result.action.value

    @server.tool()
    async def connect(ctx: Context) -> str:
        """An API key, on the server's page."""
        result = await ctx.elicit("Your API key for the weather service", ApiKey, fallback="page", timeout=30)
        return f"key of {len(result.data.api_key)}" if result.accepted else result.action.value

    return server


def link_of(text: str) -> str:
    found = LINK.search(text)
    assert found is not None, text
    return found.group(0)


def answer_in(chrome: WebDriver, url: str, value: str) -> str:
    """A person: load, fill in, review, send; returns the final page's kind."""
    load(chrome, url)
    type_into(chrome, "guests", value)
    press(chrome, "button[value=review]")
    return press(chrome, "button[value=send]")


async def test_two_people_on_one_server_each_tab_stays_with_its_own_question(driver: WebDriver) -> None:
    from elicitkit.transports.http.serve import serve_http_background

    server = bistro()
    async with serve_http_background(server) as handle, Client(handle.url) as alice, Client(handle.url) as bob:
        alice_link = link_of((await alice.call_tool("book", {"day": "Friday"})).text)
        first_tab = driver.current_window_handle
        done = await anyio.to_thread.run_sync(answer_in, driver, alice_link, "2")
        assert done == "page-done"
        bob_link = link_of((await bob.call_tool("book", {"day": "Friday"})).text)  # within Alice's look-out window

        def watch_alice_tab() -> list[str]:
            seen = []
            deadline = time.monotonic() + 5  # the done page reloads every 2 s: at least two reloads
            while time.monotonic() < deadline:
                seen.append(driver.current_url.split("?")[0])
                time.sleep(0.25)
            return seen

        alice_saw = await anyio.to_thread.run_sync(watch_alice_tab)
        assert set(alice_saw) == {alice_link}, alice_saw  # never Bob's question
        assert body_class(driver) == "page-done" and outcome_shown(driver) == "sent"
        assert "answered on this page before" not in driver.page_source

        driver.switch_to.new_window("tab")
        try:
            assert await anyio.to_thread.run_sync(answer_in, driver, bob_link, "5") == "page-done"
        finally:
            driver.close()
            driver.switch_to.window(first_tab)
        assert (await alice.call_tool("book", {"day": "Friday"})).text == "booked 2 on Friday"
        assert (await bob.call_tool("book", {"day": "Friday"})).text == "booked 5 on Friday"
    await pages_of(server).aclose()


def _url_line(process: subprocess.Popen[str], deadline: float) -> str:
    assert process.stderr is not None
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        found = re.search(r"answer it in your browser: (http://127\.0\.0\.1:\d+/q/\S+)", line)
        if found:
            return found.group(1)
    raise AssertionError("the command never printed the page's address")


async def test_elicitkit_call_ui_browser_ends_on_a_page_readable_after_it_exits(driver: WebDriver) -> None:
    game = f"{sys.executable} {ROOT / 'examples' / 'elicitation' / 'guess_the_number.py'}"
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER")}
    env["PYTHONUNBUFFERED"] = "1"
    process = subprocess.Popen(  # noqa: ASYNC220 (read from a worker thread below)
        [sys.executable, "-m", "elicitkit.cli", "call", game, "guess_the_number", "--ui", "browser"],
        env=env,
        cwd=str(ROOT),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = await anyio.to_thread.run_sync(_url_line, process, time.monotonic() + 30)

        def play() -> str:
            load(driver, url)
            return press(driver, "button[value=no]")  # "Shall we play?" No: the game ends

        assert await anyio.to_thread.run_sync(play) == "page-done"
        out, _ = await anyio.to_thread.run_sync(lambda: process.communicate(timeout=30))
        assert process.returncode == 0 and "Another time" in out
        await anyio.sleep(5)  # well past the page's reload interval: the client is gone by now
        assert body_class(driver) == "page-done", driver.page_source[:500]
        assert outcome_shown(driver) == "sent"  # "No" is an answer: it was sent
        assert driver.title == "Answer sent"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


async def test_back_then_send_says_it_was_answered_or_leads_to_the_open_question(driver: WebDriver) -> None:
    """The old review page (as Back shows it) pressed Send after the answer went: the page says so,
    or, in a run of questions, leads on to the one still open; never a bare "Not found"."""

    def drive(next_url: Callable[[], str]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        url = next_url()
        load(driver, url)
        type_into(driver, "name", "Ada")
        press(driver, "button[value=review]")
        first = driver.current_window_handle
        driver.switch_to.new_window("tab")  # the same review page, kept as it was (what Back shows)
        load(driver, url)
        old = driver.current_window_handle
        driver.switch_to.window(first)
        press(driver, "button[value=send]")
        WebDriverWait(driver, WAIT * 2).until(lambda d: body_class(d) == "page-form")  # question 2 came here
        driver.switch_to.window(old)
        seen["old"] = body_class(driver)
        seen["after old send"] = press(driver, "button[value=send]")
        seen["step"] = driver.find_element(By.ID, "step").text if seen["after old send"] == "page-form" else ""
        driver.close()
        driver.switch_to.window(first)
        press(driver, "button[value=yes]")
        WebDriverWait(driver, WAIT * 2).until(lambda d: body_class(d) == "page-form")
        press(driver, "button[value=decline]")
        return seen

    async with session(ux_server()) as s:
        _, seen = await s.ask("wizard", {}, drive)
    assert seen["old"] == "page-review"
    assert seen["after old send"] == "page-form" and seen["step"].startswith("Question 2")  # the open question

    def answered(next_url: Callable[[], str]) -> dict[str, Any]:
        url = next_url()
        load(driver, url)
        type_into(driver, "api_key", "sk-123")
        press(driver, "button[value=review]")
        first = driver.current_window_handle
        driver.switch_to.new_window("tab")
        load(driver, url)
        old = driver.current_window_handle
        driver.switch_to.window(first)
        press(driver, "button[value=send]")
        driver.switch_to.window(old)
        seen = {
            "after old send": press(driver, "button[value=send]"),
            "text": driver.find_element(By.TAG_NAME, "main").text,
        }
        driver.close()
        driver.switch_to.window(first)
        return seen

    async with session(ux_server()) as s:
        _, seen = await s.ask("secret", {}, answered)
    assert seen["after old send"] == "page-done", seen
    assert "answered already" in seen["text"] and "Not found" not in seen["text"]


async def test_a_look_alike_written_in_unicode_opens_by_typing_its_ascii_name(driver: WebDriver) -> None:
    target = "https://www.\u0440aypal.com/pay"  # a Cyrillic er: looks like www.paypal.com
    ascii_name = "www.xn--aypal-uye.com"
    assert "www.\u0440aypal.com".encode("idna").decode() == ascii_name

    def drive(next_url: Callable[[], str]) -> dict[str, Any]:
        load(driver, next_url())
        seen: dict[str, Any] = {"stop": driver.find_element(By.ID, "stop").text}
        seen["label"] = driver.find_element(By.CSS_SELECTOR, "label[for=confirm]").text
        driver.find_element(By.ID, "confirm").send_keys("www.paypal.com")  # the name it imitates: refused
        press(driver, "#open")
        seen["refused"] = driver.find_element(By.ID, "problem").text
        driver.find_element(By.ID, "confirm").send_keys(ascii_name)
        seen["after"] = press(driver, "#open")
        seen["opened"] = next_url()
        return seen

    async with session() as s:
        result, seen = await s.ask("visit", {"url": target}, drive)
    assert f"its real name, in plain letters, is {ascii_name}" in seen["stop"]
    assert "CYRILLIC SMALL LETTER ER" in seen["stop"]
    assert "Its real name is www.\u0440aypal.com" not in seen["stop"]
    assert ascii_name in seen["label"] and ascii_name in seen["refused"]
    assert seen["after"] == "page-waiting" and seen["opened"] == target
    assert result == {"action": "accept"}


async def test_every_server_page_state_at_desktop_and_phone_width(driver: WebDriver) -> None:
    """The server's own pages: form, review (secret hidden and shown), done (with "go back to your
    chat"), done after an old page's Send, refused, not found: no serious or critical axe-core
    violation at desktop and phone width (and dark), no sideways scroll on the phone."""
    from elicitkit.transports.http.serve import serve_http_background

    audit = Audit(axe_source())
    server = bistro()
    async with serve_http_background(server) as handle, Client(handle.url) as client:
        url = link_of((await client.call_tool("connect", {})).text)

        def walk() -> None:
            load(driver, url)
            audit.check(driver, "server-form")
            type_into(driver, "api_key", "sk-live-123456")
            press(driver, "button[value=review]")
            audit.check(driver, "server-review")
            press(driver, "button[value=reveal]")
            assert "sk-live-123456" in driver.find_element(By.CSS_SELECTOR, "dl.answers").text
            audit.check(driver, "server-review-shown")
            first = driver.current_window_handle
            driver.switch_to.new_window("tab")
            load(driver, url)
            old = driver.current_window_handle
            driver.switch_to.window(first)
            press(driver, "button[value=send]")
            driver.get(url + "?still=1")
            assert driver.find_element(By.ID, "go-back").is_displayed()
            audit.check(driver, "server-done")
            driver.switch_to.window(old)
            press(driver, "button[value=send]")
            assert driver.find_element(By.ID, "already").is_displayed()
            audit.check(driver, "server-done-already")
            driver.close()
            driver.switch_to.window(first)
            load(driver, url.rsplit("/", 1)[0] + "/" + "x" * 43)
            audit.check(driver, "server-not-found")

        await anyio.to_thread.run_sync(walk)
        async with httpx.AsyncClient(timeout=5) as http:  # a refusal as a browser would get it (forged form)
            refused = await http.post(url, data={"csrf": "forged", "action": "send"})
        assert refused.status_code in (403, 404)

        def show_refusal() -> None:
            driver.get("data:text/html;charset=utf-8," + refused.text.replace("#", "%23"))
            audit.check(driver, "server-refused")

        await anyio.to_thread.run_sync(show_refusal)
        assert (await client.call_tool("connect", {})).text == "key of 14"
    await pages_of(server).aclose()
    for name, report in audit.seen.items():
        assert report["axe-desktop"] == [] and report["axe-phone"] == [] and report["axe-dark"] == [], (name, report)
        phone = report["layout-phone"]
        assert phone["scroll"][0] <= phone["scroll"][1], (name, phone)
        assert phone["small"] == [], (name, phone)
