"""The browser form end to end: an in-process server asks, headless Chromium (Selenium) answers.

Each test builds a server with a tool that asks a question, connects
``Client(server, elicitation_callback=BrowserHandler(open_url=...))`` and calls the tool in the
event loop; ``open_url`` hands the page's URL over a memory stream to a Selenium script that
runs in a worker thread (Selenium blocks) and does what a person would. The assertions are on
what the tool received, so they prove the whole path: page -> handler -> client -> server.

One Chromium session serves the whole module. The tests skip, saying why, when Chromium or
chromedriver is missing (``scripts/bootstrap.sh`` installs both).
"""

from __future__ import annotations

import datetime
import os
import shutil
import threading
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
import anyio.abc
import anyio.from_thread
import anyio.to_thread
import pytest
from pydantic import AnyUrl, BaseModel, Field

from elicitkit import Client, Context, Format, Titles, UrlElicitationRequired, UrlRequest
from elicitkit.client.handlers.browser import BrowserHandler
from elicitkit.compat import MCPServer
from elicitkit.elicitation.results import ElicitationResult

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (test extra)")
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.remote.webelement import WebElement  # noqa: E402
from selenium.webdriver.support.select import Select  # noqa: E402
from selenium.webdriver.support.wait import WebDriverWait  # noqa: E402

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]

CHROMIUM = os.environ.get("ELICITKIT_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("ELICITKIT_CHROMEDRIVER", "/usr/bin/chromedriver")
CHROME_ARGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
)
WAIT = 5.0  # seconds Selenium waits for a page


# ------------------------------------------------------------------------------ the server


class Signup(BaseModel):
    name: Annotated[str, Field(min_length=2, max_length=40, title="Full name", description="As on your badge")]
    email: Annotated[str, Format("email"), Field(title="Email")]
    age: Annotated[int, Field(ge=18, le=130, title="Age")]
    city: Annotated[str, Field(title="City")] = "Paris"
    newsletter: Annotated[bool, Field(title="Newsletter")] = False
    plan: Annotated[
        Literal["free", "pro", "team"],
        Titles(free="Free tier", pro="Pro (9 EUR/month)", team="Team plan"),
        Field(title="Plan"),
    ] = "free"
    extras: Annotated[
        list[Literal["ham", "olives", "basil"]],
        Titles(ham="Ham", olives="Black olives", basil="Fresh basil"),
        Field(title="Extras"),
    ] = []


SIZES = {"s": "Small (8 inch)", "m": "Medium (10 inch)", "l": "Large (12 inch)", "xl": "XL (14 inch)"}
SIZES |= {"xxl": "XXL (16 inch)", "family": "Family (18 inch)"}


class Pizza(BaseModel):
    size: Annotated[Literal["s", "m", "l", "xl", "xxl", "family"], Titles(SIZES), Field(title="Size")]
    toppings: Annotated[
        list[Literal["ham", "olives", "basil", "chili"]],
        Titles(ham="Ham", olives="Black olives", basil="Fresh basil", chili="Chili, hot"),
        Field(title="Toppings", min_length=1, max_length=3),
    ]
    day: Annotated[datetime.date, Field(title="Delivery day")] = datetime.date(2025, 12, 26)


ARRIVAL = datetime.datetime(2025, 12, 26, 19, 0, tzinfo=datetime.UTC)


class Booking(BaseModel):
    website: Annotated[AnyUrl, Field(title="Website")]
    arrival: Annotated[datetime.datetime, Field(title="Arrival")] = ARRIVAL
    budget: Annotated[float, Field(ge=0, le=1000, title="Budget")] = 12.5
    insured: Annotated[bool, Field(title="Insured?")]


class Name(BaseModel):
    name: Annotated[str, Field(title="Name")]


HOSTILE = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'


class Hostile(BaseModel):
    answer: Annotated[str, Field(title=f"Title {HOSTILE}", description=f"Description {HOSTILE}")] = HOSTILE


def outcome(result: ElicitationResult[Any]) -> dict[str, Any]:
    data = result.data.model_dump(mode="json") if result.accepted and result.data is not None else None
    return {"action": result.action.value, "data": data}


def build_server(name: str = "signup", title: str = "Signup desk") -> MCPServer:
    server = MCPServer(name, "2.1.0", title=title)

    @server.tool()
    async def signup(ctx: Context) -> dict[str, Any]:
        """Ask who signs up."""
        return outcome(await ctx.elicit("Welcome!\nPlease sign up for the conference.", Signup))

    @server.tool()
    async def order(ctx: Context) -> dict[str, Any]:
        """Ask for a pizza."""
        return outcome(await ctx.elicit("What pizza would you like?", Pizza))

    @server.tool()
    async def book(ctx: Context) -> dict[str, Any]:
        """Ask for booking details."""
        return outcome(await ctx.elicit("Booking details?", Booking))

    @server.tool()
    async def two_names(ctx: Context) -> list[dict[str, Any]]:
        """Ask twice in one call."""
        return [outcome(await ctx.elicit("First name?", Name)), outcome(await ctx.elicit("Second name?", Name))]

    @server.tool()
    async def hostile(ctx: Context) -> dict[str, Any]:
        """Ask with markup everywhere."""
        return outcome(await ctx.elicit(f"Message {HOSTILE}", Hostile))

    @server.tool()
    async def visit(ctx: Context, url: str) -> dict[str, Any]:
        """Send the user to a URL."""
        result = await ctx.elicit_url("Please pay the deposit on our payment page.", url)
        return {"action": result.action.value}

    return server


# ------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    """One headless Chromium for the whole module, with a fresh profile."""
    for what, path in (("chromium", CHROMIUM), ("chromedriver", CHROMEDRIVER)):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)) and not shutil.which(path):
            pytest.skip(f"{what} not found at {path}; scripts/bootstrap.sh installs Debian chromium + chromium-driver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in CHROME_ARGS:
        options.add_argument(arg)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    chrome = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    chrome.set_page_load_timeout(10)
    try:
        yield chrome
    finally:
        chrome.quit()


@dataclass
class Landing:
    """A stand-in for the site a URL question sends the user to; records who came and from where."""

    url: str
    visits: list[tuple[str, str | None]] = field(default_factory=list)


@pytest.fixture(scope="module")
def landing() -> Iterator[Landing]:
    visits: list[tuple[str, str | None]] = []

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            visits.append((self.path, self.headers.get("Referer")))
            body = b"<!doctype html><title>Landing</title><p id=landed>Deposit page</p>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield Landing(f"http://127.0.0.1:{httpd.server_address[1]}", visits)
    finally:
        httpd.shutdown()
        httpd.server_close()


@dataclass
class Session:
    client: Client
    handler: BrowserHandler
    urls: anyio.abc.ObjectReceiveStream[str]
    announced: list[str]

    def next_url(self) -> str:
        """From the Selenium thread: the URL of the next page the handler opens."""

        async def receive() -> str:
            with anyio.fail_after(WAIT):
                return await self.urls.receive()

        return anyio.from_thread.run(receive)

    async def ask(self, tool: str, args: dict[str, Any], drive: Callable[[Callable[[], str]], Any]) -> tuple[Any, Any]:
        """Call ``tool``; meanwhile ``drive(next_url)`` plays the user in a thread. -> (tool result, drive's)."""
        box: dict[str, Any] = {}

        async def call() -> None:
            result = await self.client.call_tool(tool, args)
            assert not result.is_error, result.text
            assert result.structured_content is not None
            box["result"] = result.structured_content["result"]

        with anyio.fail_after(15):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                seen = await anyio.to_thread.run_sync(drive, self.next_url)
        return box["result"], seen


@asynccontextmanager
async def session(server: MCPServer | None = None, **options: Any) -> AsyncIterator[Session]:
    send, receive = anyio.create_memory_object_stream[str](10)
    announced: list[str] = []
    handler = BrowserHandler(open_url=send.send_nowait, announce=announced.append, **options)
    async with handler, Client(server or build_server(), elicitation_callback=handler) as client:
        yield Session(client, handler, receive, announced)


# ------------------------------------------------------------------------------ the "user"


def body_class(driver: WebDriver) -> str:
    # A page that reloads itself (a waiting or done page looking out for the next question) can
    # replace <body> between finding it and reading it: read the new one.
    for _ in range(5):
        try:
            return driver.find_element(By.TAG_NAME, "body").get_attribute("class") or ""
        except StaleElementReferenceException:
            continue
    return driver.find_element(By.TAG_NAME, "body").get_attribute("class") or ""


def load(driver: WebDriver, url: str) -> str:
    driver.get(url)
    return body_class(driver)


def press(driver: WebDriver, selector: str) -> str:
    """Click a submit button and wait for the next page; returns its kind (``page-...``).

    The old document is marked and we wait for a complete document without the mark: an element
    staleness probe can fail with a generic error while Chrome swaps documents.
    """
    driver.execute_script("document.elicitkitOld = true")
    driver.find_element(By.CSS_SELECTOR, selector).click()
    WebDriverWait(driver, WAIT, ignored_exceptions=(WebDriverException,)).until(
        lambda d: d.execute_script("return !document.elicitkitOld && document.readyState === 'complete'")
    )
    return body_class(driver)


def field_input(driver: WebDriver, name: str) -> WebElement:
    return driver.find_element(By.CSS_SELECTOR, f'[data-name="{name}"] input, [data-name="{name}"] select')


def type_into(driver: WebDriver, name: str, text: str) -> None:
    box = field_input(driver, name)
    box.clear()
    box.send_keys(text)


def choose(driver: WebDriver, name: str, title: str) -> None:
    """Click the radio or checkbox whose visible label is ``title``."""
    labels = driver.find_elements(By.CSS_SELECTOR, f'[data-name="{name}"] label.choice')
    matching = [label for label in labels if label.text.strip() == title]
    assert len(matching) == 1, [label.text for label in labels]
    matching[0].click()


def ticked(driver: WebDriver, name: str) -> list[str]:
    """The labels of the ticked radios/checkboxes of a field."""
    labels = driver.find_elements(By.CSS_SELECTOR, f'[data-name="{name}"] label.choice')
    return [label.text.strip() for label in labels if label.find_element(By.TAG_NAME, "input").is_selected()]


def value_of(driver: WebDriver, name: str) -> str:
    return field_input(driver, name).get_attribute("value") or ""


def error_of(driver: WebDriver, name: str) -> str:
    found = driver.find_elements(By.CSS_SELECTOR, f'[data-name="{name}"] .error')
    return found[0].text if found else ""


def review(driver: WebDriver) -> dict[str, str]:
    """The review page's answers, by field name, as shown."""
    rows = driver.find_elements(By.CSS_SELECTOR, "dl.answers .answer")
    return {row.get_attribute("data-name") or "": row.find_element(By.TAG_NAME, "dd").text for row in rows}


def outcome_shown(driver: WebDriver) -> str:
    return driver.find_element(By.ID, "outcome").get_attribute("data-outcome") or ""


def http(
    url: str, *, data: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], str]:
    """A plain HTTP request from the test itself (no browser): status, headers, body."""
    request = urllib.request.Request(url, data=data, headers=headers or {}, method="POST" if data else "GET")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=WAIT) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()


FORM = {"Content-Type": "application/x-www-form-urlencoded"}

ADA = {
    "name": "Ada Lovelace",
    "email": "ada@example.org",
    "age": 36,
    "city": "London",
    "newsletter": True,
    "plan": "pro",
    "extras": ["olives", "basil"],
}


def fill_ada(driver: WebDriver) -> None:
    type_into(driver, "name", "Ada Lovelace")
    type_into(driver, "email", "ada@example.org")
    type_into(driver, "age", "36")
    type_into(driver, "city", "London")
    field_input(driver, "newsletter").click()
    choose(driver, "plan", "Pro (9 EUR/month)")
    choose(driver, "extras", "Black olives")
    choose(driver, "extras", "Fresh basil")


# ------------------------------------------------------------------------------ tests


async def test_fill_review_send(driver: WebDriver) -> None:
    """A person fills every kind of field, checks the review (titles, not values), sends."""

    def drive(next_url: Callable[[], str]) -> dict[str, Any]:
        url = next_url()
        seen: dict[str, Any] = {"page": load(driver, url)}
        seen["who"] = driver.find_element(By.CSS_SELECTOR, ".asker .who").text
        seen["where"] = driver.find_element(By.CSS_SELECTOR, ".asker .where").text
        seen["message"] = driver.find_element(By.ID, "message").text
        seen["defaults"] = {
            "city": value_of(driver, "city"),
            "newsletter": field_input(driver, "newsletter").is_selected(),
            "plan": ticked(driver, "plan"),
            "extras": ticked(driver, "extras"),
        }
        seen["types"] = {n: field_input(driver, n).get_attribute("type") for n in ("name", "email", "age", "city")}
        seen["name_label"] = driver.find_element(By.CSS_SELECTOR, '[data-name="name"] label').text
        seen["rules"] = {
            n: driver.find_element(By.CSS_SELECTOR, f'[data-name="{n}"] .rules').text for n in ("name", "age")
        }
        seen["desc"] = driver.find_element(By.CSS_SELECTOR, '[data-name="name"] .desc').text
        fill_ada(driver)
        seen["review_page"] = press(driver, "button[value=review]")
        seen["review"] = review(driver)
        seen["done_page"] = press(driver, "button[value=send]")
        seen["done"] = outcome_shown(driver)
        seen["after"] = load(driver, url), outcome_shown(driver)  # Reload: the outcome, no form to resend
        seen["forms_after"] = len(driver.find_elements(By.TAG_NAME, "form"))
        return seen

    started = time.monotonic()
    async with session() as s:
        result, seen = await s.ask("signup", {}, drive)
        assert s.announced and s.handler.url is not None and s.handler.url in s.announced[0]

    assert result == {"action": "accept", "data": ADA}
    assert seen["page"] == "page-form"
    assert seen["who"] == "Signup desk version 2.1.0"
    assert "server name signup" in seen["where"]
    assert seen["message"] == "Welcome!\nPlease sign up for the conference."
    assert seen["defaults"] == {"city": "Paris", "newsletter": False, "plan": ["Free tier"], "extras": []}
    assert seen["types"] == {"name": "text", "email": "email", "age": "number", "city": "text"}
    assert seen["name_label"] == "Full name required"
    assert seen["desc"] == "As on your badge"
    assert seen["rules"] == {"name": "2 to 40 characters", "age": "A whole number; from 18 to 130"}
    assert seen["name_label"] == "Full name required"
    assert seen["review_page"] == "page-review"
    assert seen["review"] == {
        "name": "Ada Lovelace",
        "email": "ada@example.org",
        "age": "36",
        "city": "London",
        "newsletter": "yes",
        "plan": "Pro (9 EUR/month)",
        "extras": "Black olives, Fresh basil",
    }
    assert (seen["done_page"], seen["done"]) == ("page-done", "sent")
    assert seen["after"] == ("page-done", "sent") and seen["forms_after"] == 0
    assert time.monotonic() - started < 10


async def test_change_at_review_keeps_values(driver: WebDriver) -> None:
    """ "The "Change" button goes back to the form with every value kept; the edited answer is what arrives."""

    def drive(next_url: Callable[[], str]) -> dict[str, Any]:
        load(driver, next_url())
        fill_ada(driver)
        assert press(driver, "button[value=review]") == "page-review"
        seen: dict[str, Any] = {"back": press(driver, "button[value=change]")}
        seen["kept"] = {
            "name": value_of(driver, "name"),
            "email": value_of(driver, "email"),
            "age": value_of(driver, "age"),
            "city": value_of(driver, "city"),
            "newsletter": field_input(driver, "newsletter").is_selected(),
            "plan": ticked(driver, "plan"),
            "extras": ticked(driver, "extras"),
        }
        type_into(driver, "age", "37")
        choose(driver, "plan", "Team plan")
        choose(driver, "extras", "Black olives")  # untick
        assert press(driver, "button[value=review]") == "page-review"
        seen["review"] = review(driver)
        press(driver, "button[value=send]")
        return seen

    async with session() as s:
        result, seen = await s.ask("signup", {}, drive)

    assert seen["back"] == "page-form"
    assert seen["kept"] == {
        "name": "Ada Lovelace",
        "email": "ada@example.org",
        "age": "36",
        "city": "London",
        "newsletter": True,
        "plan": ["Pro (9 EUR/month)"],
        "extras": ["Black olives", "Fresh basil"],
    }
    assert seen["review"]["plan"] == "Team plan" and seen["review"]["extras"] == "Fresh basil"
    assert result == {"action": "accept", "data": {**ADA, "age": 37, "plan": "team", "extras": ["basil"]}}


async def test_decline_on_the_form(driver: WebDriver) -> None:
    """Decline works from a half-filled form (no browser validation in the way); the page then only says so."""

    def drive(next_url: Callable[[], str]) -> tuple[str, str, str]:
        url = next_url()
        load(driver, url)
        type_into(driver, "name", "A")  # too short, and required fields are empty: Decline still goes
        page = press(driver, "button[value=decline]")
        return page, outcome_shown(driver), load(driver, url)

    async with session() as s:
        result, (page, shown, after) = await s.ask("signup", {}, drive)

    assert result == {"action": "decline", "data": None}
    assert (page, shown, after) == ("page-done", "declined", "page-done")


async def test_cancel_at_review(driver: WebDriver) -> None:
    def drive(next_url: Callable[[], str]) -> tuple[str, str]:
        load(driver, next_url())
        fill_ada(driver)
        assert press(driver, "button[value=review]") == "page-review"
        return press(driver, "button[value=cancel]"), outcome_shown(driver)

    async with session() as s:
        result, seen = await s.ask("signup", {}, drive)

    assert result == {"action": "cancel", "data": None}
    assert seen == ("page-done", "cancelled")


async def test_invalid_values_are_refused_server_side(driver: WebDriver) -> None:
    """With the browser's checks switched off, the page's server refuses bad values, says why, keeps them."""

    def drive(next_url: Callable[[], str]) -> dict[str, Any]:
        load(driver, next_url())
        seen: dict[str, Any] = {"required_attr": field_input(driver, "email").get_attribute("required")}
        # Turn the browser's own validation off, so only the server side of the page judges.
        driver.execute_script(
            "const f = document.getElementById('answer'); f.noValidate = true;"
            "for (const i of f.querySelectorAll('input')) { i.removeAttribute('required');"
            " i.removeAttribute('minlength'); i.removeAttribute('maxlength'); i.removeAttribute('min');"
            " i.removeAttribute('max'); if (i.type === 'number' || i.type === 'email') i.type = 'text'; }"
        )
        type_into(driver, "name", "A")
        type_into(driver, "email", "")
        type_into(driver, "age", "abc")
        seen["first"] = press(driver, "button[value=review]")
        seen["errors1"] = {n: error_of(driver, n) for n in ("name", "email", "age", "city")}
        seen["kept1"] = {n: value_of(driver, n) for n in ("name", "email", "age")}
        seen["summary"] = driver.find_element(By.CSS_SELECTOR, ".summary").text
        driver.execute_script("document.getElementById('answer').noValidate = true;")
        type_into(driver, "name", "Ada")
        type_into(driver, "email", "ada-at-example")
        type_into(driver, "age", "200")
        seen["second"] = press(driver, "button[value=review]")
        seen["errors2"] = {n: error_of(driver, n) for n in ("name", "email", "age")}
        seen["kept2"] = {n: value_of(driver, n) for n in ("name", "email", "age")}
        driver.execute_script("document.getElementById('answer').noValidate = true;")
        type_into(driver, "email", "ada@example.org")
        type_into(driver, "age", "36")
        seen["third"] = press(driver, "button[value=review]")
        press(driver, "button[value=send]")
        return seen

    async with session() as s:
        result, seen = await s.ask("signup", {}, drive)

    assert seen["required_attr"] == "true"  # the browser would have checked it...
    assert seen["first"] == "page-form"  # ...but the refusal here comes from the server side
    assert seen["errors1"]["name"] == "Too short: use at least 2 characters (this has 1)."
    assert seen["errors1"]["email"] == "This is required: please answer it."
    assert seen["errors1"]["age"] == "Not a whole number: write digits only, like 42."
    assert seen["errors1"]["city"] == ""
    assert seen["kept1"] == {"name": "A", "email": "", "age": "abc"}
    assert seen["summary"].index("Full name") < seen["summary"].index("Email") < seen["summary"].index("Age")
    assert seen["second"] == "page-form"
    assert seen["errors2"] == {
        "name": "",
        "email": "Not an email address: write it like name@example.com.",
        "age": "Out of range: use a number from 18 to 130.",
    }
    assert seen["kept2"] == {"name": "Ada", "email": "ada-at-example", "age": "200"}
    assert seen["third"] == "page-review"
    assert result == {
        "action": "accept",
        "data": {
            "name": "Ada",
            "email": "ada@example.org",
            "age": 36,
            "city": "Paris",
            "newsletter": False,
            "plan": "free",
            "extras": [],
        },
    }


async def test_titled_select_and_multi_select(driver: WebDriver) -> None:
    """A long titled single-select is a <select> of titles, a titled multi-select is checkboxes."""

    def drive(next_url: Callable[[], str]) -> dict[str, Any]:
        load(driver, next_url())
        size = Select(field_input(driver, "size"))
        seen: dict[str, Any] = {
            "size_options": [o.text for o in size.options],
            "topping_labels": [
                e.text for e in driver.find_elements(By.CSS_SELECTOR, '[data-name="toppings"] label.choice')
            ],
            "day": (field_input(driver, "day").get_attribute("type"), value_of(driver, "day")),
            "rules": driver.find_element(By.CSS_SELECTOR, '[data-name="toppings"] .rules').text,
        }
        size.select_by_visible_text("Large (12 inch)")
        choose(driver, "toppings", "Black olives")
        choose(driver, "toppings", "Chili, hot")  # the comma must not split it
        seen["review_page"] = press(driver, "button[value=review]")
        seen["review"] = review(driver)
        press(driver, "button[value=send]")
        return seen

    async with session() as s:
        result, seen = await s.ask("order", {}, drive)

    assert seen["size_options"] == ["Choose one…", *SIZES.values()]
    assert seen["topping_labels"] == ["Ham", "Black olives", "Fresh basil", "Chili, hot"]
    assert seen["day"] == ("date", "2025-12-26")
    assert seen["rules"] == "1 to 3 choices"
    assert seen["review"] == {"size": "Large (12 inch)", "toppings": "Black olives, Chili, hot", "day": "2025-12-26"}
    assert result == {"action": "accept", "data": {"size": "l", "toppings": ["olives", "chili"], "day": "2025-12-26"}}


async def test_url_datetime_number_and_yes_no_inputs(driver: WebDriver) -> None:
    """format uri -> url input, date-time -> datetime-local in local time (sent as RFC 3339), float -> any step."""

    def drive(next_url: Callable[[], str]) -> dict[str, Any]:
        load(driver, next_url())
        attrs = ("type", "step", "min", "max", "value")
        inputs = {n: field_input(driver, n) for n in ("website", "arrival", "budget")}
        seen: dict[str, Any] = {n: tuple(box.get_dom_attribute(a) for a in attrs) for n, box in inputs.items()}
        seen["insured"] = [e.text for e in driver.find_elements(By.CSS_SELECTOR, '[data-name="insured"] label.choice')]
        type_into(driver, "website", "https://example.org")
        driver.execute_script("arguments[0].value = '2025-12-27T18:30'", field_input(driver, "arrival"))
        type_into(driver, "budget", "99.95")
        choose(driver, "insured", "No")
        seen["review_page"] = press(driver, "button[value=review]")
        seen["review"] = review(driver)
        press(driver, "button[value=send]")
        return seen

    async with session() as s:
        result, seen = await s.ask("book", {}, drive)

    local_default = ARRIVAL.astimezone().strftime("%Y-%m-%dT%H:%M")
    arrival = datetime.datetime.fromisoformat("2025-12-27T18:30").astimezone()  # the user's wall clock
    assert seen["website"] == ("url", None, None, None, "")
    assert seen["arrival"] == ("datetime-local", "1", None, None, local_default)
    assert seen["budget"] == ("number", "any", "0", "1000", "12.5")
    assert seen["insured"] == ["Yes", "No"]  # required, no default: an explicit choice, nothing pre-ticked
    assert seen["review_page"] == "page-review"
    assert seen["review"]["arrival"] == arrival.isoformat()
    assert (seen["review"]["budget"], seen["review"]["insured"]) == ("99.95", "no")
    assert result["action"] == "accept"
    data = result["data"]
    assert datetime.datetime.fromisoformat(data.pop("arrival")) == arrival
    assert data == {"website": "https://example.org/", "budget": 99.95, "insured": False}


async def test_wrong_token_and_forged_requests_are_refused(driver: WebDriver) -> None:
    """Only the right token on the right host with the page's CSRF secret, from the page itself, counts."""

    def drive(next_url: Callable[[], str]) -> dict[str, Any]:
        first = next_url()
        base, token = first.rsplit("/q/", 1)
        seen: dict[str, Any] = {"browser_wrong": load(driver, f"{base}/q/{token[:-2]}xx")}
        seen["browser_status"] = driver.find_element(By.ID, "error").get_attribute("data-status")
        status, headers, page = http(first)
        seen["headers"] = headers
        seen["page_has_token_form"] = f'action="/q/{token}"' in page
        csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        good = f"csrf={csrf}&action=review&f0=Mallory".encode()
        seen["codes"] = {
            "ok": status,
            "wrong token": http(f"{base}/q/{token[:-2]}xx")[0],
            "no token": http(f"{base}/q/")[0],
            "root": http(f"{base}/")[0],
            "bad host": http(first, headers={"Host": "attacker.example"})[0],
            "rebinding host": http(first, headers={"Host": f"attacker.example:{base.rsplit(':', 1)[1]}"})[0],
            "no csrf": http(first, data=b"action=decline", headers=FORM)[0],
            "wrong csrf": http(first, data=b"csrf=guess&action=decline", headers=FORM)[0],
            "foreign origin": http(first, data=good, headers={**FORM, "Origin": "https://evil.example"})[0],
            "null origin": http(first, data=good, headers={**FORM, "Origin": "null"})[0],
            "cross-site": http(first, data=good, headers={**FORM, "Sec-Fetch-Site": "cross-site"})[0],
            "not a form": http(first, data=good, headers={"Content-Type": "application/json"})[0],
            "too large": http(first, data=good, headers={**FORM, "Content-Length": str(2 << 20)})[0],
        }
        # None of that answered the question: the person still can, in the browser.
        load(driver, first)
        type_into(driver, "name", "Grace")
        press(driver, "button[value=review]")
        press(driver, "button[value=send]")
        # The same server's next question comes to this tab (the done page looks out for it).
        WebDriverWait(driver, WAIT).until(lambda d: body_class(d) == "page-form")
        second = driver.current_url
        seen["same_server"] = second.rsplit("/q/", 1)[0] == base and second != first
        reused = http(first, data=f"csrf={csrf}&action=decline".encode(), headers=FORM)
        seen["reused_post"] = reused[0], 'class="page-form"' in reused[2] and "Question 2" in reused[2]
        seen["step"] = driver.find_element(By.ID, "step").text
        type_into(driver, "name", "Alan")
        press(driver, "button[value=review]")
        press(driver, "button[value=send]")
        return seen

    async with session() as s:
        result, seen = await s.ask("two_names", {}, drive)

    assert result == [
        {"action": "accept", "data": {"name": "Grace"}},
        {"action": "accept", "data": {"name": "Alan"}},
    ]
    assert seen["browser_wrong"] == "page-error" and seen["browser_status"] == "404"
    assert seen["codes"] == {
        "ok": 200,
        "wrong token": 404,
        "no token": 404,
        "root": 404,
        "bad host": 403,
        "rebinding host": 403,
        "no csrf": 403,
        "wrong csrf": 403,
        "foreign origin": 403,
        "null origin": 403,
        "cross-site": 403,
        "not a form": 415,
        "too large": 413,
    }
    assert seen["page_has_token_form"]
    assert seen["same_server"]
    assert seen["reused_post"] == (200, True)  # an answered question takes no more answers: on to the open one
    assert seen["step"].startswith("Question 2 from Signup desk")
    csp = seen["headers"]["content-security-policy"]
    assert "default-src 'none'" in csp and "form-action 'self'" in csp and "frame-ancestors 'none'" in csp
    assert "script-src" not in csp and "unsafe-inline" not in csp
    assert seen["headers"]["x-frame-options"] == "DENY"
    assert seen["headers"]["cache-control"] == "no-store"


async def test_server_text_is_escaped(driver: WebDriver) -> None:
    """Markup from the server (names, message, titles, descriptions, defaults) shows as text, never runs."""

    def drive(next_url: Callable[[], str]) -> dict[str, Any]:
        load(driver, next_url())
        seen = {
            "elements": len(driver.find_elements(By.CSS_SELECTOR, "script, img, iframe")),
            "pwned": driver.execute_script("return window.pwned === undefined ? null : window.pwned"),
            "who": driver.find_element(By.CSS_SELECTOR, ".asker .who").text,
            "message": driver.find_element(By.ID, "message").text,
            "label": driver.find_element(By.CSS_SELECTOR, '[data-name="answer"] label').text,
            "desc": driver.find_element(By.CSS_SELECTOR, '[data-name="answer"] .desc').text,
            "value": value_of(driver, "answer"),
            "title": driver.title,
        }
        press(driver, "button[value=cancel]")
        return seen

    async with session(build_server("evil", f"Bank {HOSTILE}")) as s:
        result, seen = await s.ask("hostile", {}, drive)

    assert result == {"action": "cancel", "data": None}
    assert seen["elements"] == 0 and seen["pwned"] is None
    assert seen["who"] == f"Bank {HOSTILE} version 2.1.0"
    assert seen["message"] == f"Message {HOSTILE}"
    assert seen["label"] == f"Title {HOSTILE} optional"
    assert seen["desc"] == f"Description {HOSTILE}"
    assert seen["value"] == HOSTILE
    assert seen["title"] == f"Question from Bank {HOSTILE}"


async def test_url_mode_consent_opens_the_target(driver: WebDriver, landing: Landing) -> None:
    """The consent page sets the domain apart; "Open" accepts, opens the site (no Referer), and the tab waits."""
    target = f"{landing.url}/deposit/42?amount=20"

    def drive(next_url: Callable[[], str]) -> dict[str, Any]:
        url = next_url()
        seen: dict[str, Any] = {"page": load(driver, url)}
        seen["host"] = driver.find_element(By.CSS_SELECTOR, "#target .host").text
        seen["target"] = driver.find_element(By.ID, "target").text
        seen["button"] = driver.find_element(By.ID, "open").text
        seen["warnings"] = len(driver.find_elements(By.ID, "warnings"))
        seen["after_open"] = press(driver, "#open")
        seen["status"] = driver.find_element(By.ID, "status").text
        seen["opened"] = next_url()  # the handler opens the site itself, in a new tab
        link = driver.find_element(By.CSS_SELECTOR, "#status ~ p a[target=_blank]")
        seen["link"] = link.get_attribute("href"), link.get_attribute("rel")
        driver.refresh()  # Reload: still the waiting page
        seen["reloaded"] = body_class(driver)
        load(driver, seen["opened"])
        seen["landed"] = driver.find_element(By.ID, "landed").text
        driver.back()  # Back from the site: the waiting page, not the consent form again
        seen["back"] = body_class(driver)
        status, headers, page = http(url)
        seen["after"] = status, 'data-state="waiting"' in page, headers.get("refresh")
        return seen

    visits_before = len(landing.visits)
    async with session() as s:
        result, seen = await s.ask("visit", {"url": target}, drive)

    host = landing.url.removeprefix("http://")
    assert result == {"action": "accept"}
    assert seen["page"] == "page-url"
    assert seen["host"] == host and seen["target"] == target
    assert seen["button"] == "Open 127.0.0.1"
    assert seen["warnings"] == 0  # plain http to loopback: nothing to warn about
    assert seen["after_open"] == "page-waiting"
    assert seen["status"].startswith("Waiting for Signup desk to confirm you finished at 127.0.0.1")
    assert seen["opened"] == target and seen["link"] == (target, "noreferrer noopener")
    assert seen["reloaded"] == "page-waiting" and seen["back"] == "page-waiting"
    assert seen["landed"] == "Deposit page"
    arrived = [visit for visit in landing.visits[visits_before:] if visit[0] != "/favicon.ico"]
    assert arrived == [("/deposit/42?amount=20", None)]  # no Referer: the token's URL never leaks
    assert seen["after"] == (200, True, "2")


async def test_url_mode_warns_and_declines(driver: WebDriver) -> None:
    """A look-alike, unencrypted, non-web address: warnings shown, no Open button, even a forged "open" fails."""
    target = "ftp://xn--pypal-4ve.com/login"

    def drive(next_url: Callable[[], str]) -> dict[str, Any]:
        url = next_url()
        load(driver, url)
        csrf = driver.find_element(By.NAME, "csrf").get_attribute("value") or ""
        seen: dict[str, Any] = {
            "warnings": [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#warnings li")],
            "domain": driver.find_element(By.ID, "domain").text,
            "open_buttons": len(driver.find_elements(By.ID, "open")),
            "forged_open": http(url, data=f"csrf={csrf}&action=open".encode(), headers=FORM)[0],
        }
        seen["done"] = press(driver, "button[value=decline]"), outcome_shown(driver)
        return seen

    async with session() as s:
        result, seen = await s.ask("visit", {"url": target}, drive)

    assert result == {"action": "decline"}
    assert any("not a web address" in w for w in seen["warnings"])
    assert any("internationalised" in w for w in seen["warnings"])
    assert "xn--pypal-4ve.com" in seen["domain"] and "displayed as" in seen["domain"]
    assert seen["open_buttons"] == 0 and seen["forged_open"] == 400
    assert seen["done"] == ("page-done", "declined")


async def test_a_32042_reason_is_shown_before_the_buttons(driver: WebDriver) -> None:
    """A URL that came in a -32042 error: the server's reason is on the consent page, above its buttons."""
    reason = "Your GitHub account must be linked before your private repositories can be listed."
    server = MCPServer("repos", "1.0.0", title="Repo browser")

    @server.tool()
    async def repos(ctx: Context) -> str:
        """Refuse until the account is linked."""
        link = UrlRequest("Link your GitHub account.", "https://github.example/o", "gh")
        raise UrlElicitationRequired([link], reason)

    def drive(next_url: Callable[[], str]) -> dict[str, Any]:
        load(driver, next_url())
        seen: dict[str, Any] = {
            "message": driver.find_element(By.ID, "message").text,
            "reason": driver.find_element(By.ID, "reason").text,
            # In reading order: the reason comes before the consent form and its buttons.
            "before_buttons": driver.execute_script(
                "const r = document.getElementById('reason'), f = document.getElementById('consent');"
                "return !!(r.compareDocumentPosition(f) & Node.DOCUMENT_POSITION_FOLLOWING)"
                " && r.getBoundingClientRect().bottom <= document.getElementById('open').getBoundingClientRect().top;"
            ),
        }
        seen["done"] = press(driver, "button[value=decline]"), outcome_shown(driver)
        return seen

    send, receive = anyio.create_memory_object_stream[str](10)
    handler = BrowserHandler(open_url=send.send_nowait, announce=None)
    async with handler, Client(server, elicitation_callback=handler, auto_url_elicitation=True) as client:
        s = Session(client, handler, receive, [])
        with anyio.fail_after(15):
            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    with pytest.raises(UrlElicitationRequired, match="must be linked"):
                        await client.call_tool("repos")

                tg.start_soon(call)
                seen = await anyio.to_thread.run_sync(drive, s.next_url)

    assert seen["message"] == "Link your GitHub account."
    assert seen["reason"] == "Why: " + reason
    assert seen["before_buttons"] is True
    assert seen["done"] == ("page-done", "declined")


async def test_timeout_cancels_and_closes_the_page() -> None:
    """Nobody answers: after ``timeout`` the question is cancelled and its page is gone."""
    async with session(timeout=0.3) as s:
        with anyio.fail_after(5):
            result = await s.client.call_tool("signup", {})
            url = await s.urls.receive()
        status = await anyio.to_thread.run_sync(lambda: http(url)[0])
    assert result.structured_content == {"result": {"action": "cancel", "data": None}}
    assert status == 404


async def test_aclose_cancels_open_questions() -> None:
    """Closing the handler answers whatever is still open with cancel and stops the server."""
    async with session() as s:
        async with anyio.create_task_group() as tg:
            box: dict[str, Any] = {}

            async def call() -> None:
                box["result"] = (await s.client.call_tool("signup", {})).structured_content

            tg.start_soon(call)
            with anyio.fail_after(5):
                url = await s.urls.receive()
            await s.handler.aclose()
        assert box["result"] == {"result": {"action": "cancel", "data": None}}
        assert s.handler.url is None
        with pytest.raises(OSError):
            await anyio.to_thread.run_sync(lambda: http(url))


# ------------------------------------------------------------------------------ every page: phone, a11y, screenshots

AXE_VERSION = "4.14.1"  # keep in sync with scripts/bootstrap.sh
ROOT = Path(__file__).resolve().parents[4]
SHOTS = ROOT / "build" / "screenshots"
DESKTOP = (1280, 800)
PHONE = (390, 844)


def axe_source() -> str:
    cache = Path(os.environ.get("ELICITKIT_CACHE", ROOT / ".cache"))
    path = cache / "axe-core" / AXE_VERSION / "node_modules" / "axe-core" / "axe.min.js"
    if not path.is_file():
        pytest.skip(f"axe-core {AXE_VERSION} not at {path}; scripts/bootstrap.sh installs it")
    return path.read_text(encoding="utf-8")


def viewport(driver: WebDriver, size: tuple[int, int]) -> None:
    """An exact CSS viewport (a phone is a touch device: mobile=True)."""
    width, height = size
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
    )


def shoot(driver: WebDriver, name: str) -> None:
    """The whole page (not just the viewport) as build/screenshots/<name>.png."""
    import base64

    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
    (SHOTS / f"{name}.png").write_bytes(base64.b64decode(shot["data"]))


LAYOUT = """
const doc = document.documentElement;
const out = {scroll: [doc.scrollWidth, doc.clientWidth], small: [], rows: []};
const targets = 'button, input:not([type=hidden]), select, label.choice, .summary a';
for (const el of document.querySelectorAll(targets)) {
  const r = el.getBoundingClientRect();
  const what = `${el.tagName} ${el.name || el.textContent.trim()} ${r.width}x${r.height}`;
  if (r.width < 24 || r.height < 24) out.small.push(what);
}
for (const row of document.querySelectorAll('.actions')) {
  const buttons = [...row.querySelectorAll('button')].map(b => b.getBoundingClientRect());
  const tops = new Set(buttons.map(r => Math.round(r.top)));
  const width = row.getBoundingClientRect().width;
  const full = buttons.every(r => Math.abs(r.width - width) < 1.5);
  out.rows.push({oneRow: tops.size <= 1, fullWidth: full});
}
return out;
"""

AXE_RUN = """
const done = arguments[arguments.length - 1];
axe.run(document, {resultTypes: ['violations']}).then(
  r => done(r.violations.map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.map(n => n.target.join(' '))}))),
  e => done([{id: 'axe-error', impact: 'critical', nodes: [String(e)]}]));
"""


@dataclass
class Audit:
    """What each page showed at both widths: its accessibility violations and its phone layout."""

    axe: str
    seen: dict[str, dict[str, Any]] = field(default_factory=dict)

    def check(self, driver: WebDriver, name: str) -> None:
        """Audit the page now in ``driver`` at desktop and phone width; screenshots of both."""
        report: dict[str, Any] = {"page": body_class(driver)}
        for label, size in (("desktop", DESKTOP), ("phone", PHONE)):
            viewport(driver, size)
            if not driver.execute_script("return typeof axe !== 'undefined'"):
                driver.execute_script(self.axe)
            driver.set_script_timeout(20)
            report[f"axe-{label}"] = [
                v for v in driver.execute_async_script(AXE_RUN) if v["impact"] in ("serious", "critical")
            ]
            report[f"layout-{label}"] = driver.execute_script(LAYOUT)
            shoot(driver, f"{name}-{label}")
        # Dark mode has its own colours: check their contrast too (desktop width).
        viewport(driver, DESKTOP)
        dark = {"media": "screen", "features": [{"name": "prefers-color-scheme", "value": "dark"}]}
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia", dark)
        report["axe-dark"] = [v for v in driver.execute_async_script(AXE_RUN) if v["impact"] in ("serious", "critical")]
        shoot(driver, f"{name}-dark")
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "", "features": []})
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        self.seen[name] = report


class Secret(BaseModel):
    service: Annotated[str, Field(title="Service")] = "mail"
    api_key: Annotated[str, Field(title="API key", description="From your account page")]


class DeleteIt(BaseModel):
    ok: Annotated[bool, Field(title="Delete the old backups?", description="They are 3 years old.")]


# elicitkit's server gate refuses ``pattern`` (no spec version has it), but other servers send
# one and the client must still help the person meet it: this question goes out raw.
CODE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "code": {
            "type": "string",
            "title": "Booking code",
            "description": "Three capitals, a dash, three digits",
            "pattern": r"^[A-Z]{3}-\d{3}$",
        },
        "day": {"type": "string", "format": "date", "title": "Day"},
    },
    "required": ["code", "day"],
}


async def ask_code(ctx: Context, message: str) -> dict[str, Any]:
    raw = await ctx.request_input("elicitation/create", {"message": message, "requestedSchema": CODE_SCHEMA})
    return {"action": raw["action"], "data": raw.get("content") if raw["action"] == "accept" else None}


def ux_server() -> MCPServer:
    server = build_server()

    @server.tool()
    async def secret(ctx: Context) -> dict[str, Any]:
        """Ask for an API key."""
        return outcome(await ctx.elicit("Connect your mail account.", Secret))

    @server.tool()
    async def delete(ctx: Context) -> dict[str, Any]:
        """One yes/no question."""
        return outcome(await ctx.elicit("Clean up?", DeleteIt))

    @server.tool()
    async def code(ctx: Context) -> dict[str, Any]:
        """A pattern with a description, and a date."""
        return await ask_code(ctx, "Which booking?")

    @server.tool()
    async def wizard(ctx: Context) -> list[dict[str, Any]]:
        """Three questions in one call."""
        first = outcome(await ctx.elicit("Step one: who?", Name))
        second = outcome(await ctx.elicit("Step two: sure?", DeleteIt))
        third = await ask_code(ctx, "Step three: which booking?")
        return [first, second, third]

    return server


def still_ours(driver: WebDriver) -> str:
    """After Back or Reload: one of our pages (never Chrome's "Confirm Form Resubmission" / ERR_CACHE_MISS)."""
    WebDriverWait(driver, WAIT, ignored_exceptions=(WebDriverException,)).until(
        lambda d: d.execute_script("return document.readyState === 'complete'")
    )
    page = body_class(driver)
    assert page.startswith("page-"), (driver.current_url, driver.title)
    assert "/q/" in driver.current_url and "chrome-error" not in driver.current_url
    return page


async def test_back_and_reload_at_every_step(driver: WebDriver) -> None:
    """Every POST is answered by a redirect: Reload and Back never resend a form, at any step."""

    def drive(next_url: Callable[[], str]) -> dict[str, Any]:
        url = next_url()
        load(driver, url)
        steps: dict[str, Any] = {}
        type_into(driver, "name", "A")  # too short: the form comes back with the error
        driver.execute_script("document.getElementById('answer').noValidate = true")
        press(driver, "button[value=review]")
        driver.refresh()
        steps["errors, reload"] = still_ours(driver), error_of(driver, "name")
        fill_ada(driver)
        press(driver, "button[value=review]")
        driver.refresh()
        steps["review, reload"] = still_ours(driver), review(driver)["age"]
        driver.back()
        steps["review, back"] = still_ours(driver)
        driver.forward()
        steps["review, forward"] = still_ours(driver)
        driver.refresh()
        steps["review, forward, reload"] = still_ours(driver)
        press(driver, "button[value=send]")
        driver.refresh()
        steps["done, reload"] = still_ours(driver), outcome_shown(driver)
        driver.back()
        steps["done, back"] = still_ours(driver)
        driver.get(url)
        steps["done, again"] = still_ours(driver), outcome_shown(driver)
        return steps

    async with session() as s:
        result, steps = await s.ask("signup", {}, drive)

    assert result == {"action": "accept", "data": ADA}
    assert steps["errors, reload"] == ("page-form", "Too short: use at least 2 characters (this has 1).")
    assert steps["review, reload"] == ("page-review", "36")
    assert steps["review, back"] in ("page-form", "page-review")  # the form, or the review it led to
    assert steps["review, forward"] == "page-review" and steps["review, forward, reload"] == "page-review"
    assert steps["done, reload"] == ("page-done", "sent")
    assert steps["done, back"].startswith("page-")
    assert steps["done, again"] == ("page-done", "sent")


async def test_a_wizard_stays_in_one_tab_with_a_step_number(driver: WebDriver) -> None:
    """Three questions in one call: one tab, each question after the first says which step it is."""

    def drive(next_url: Callable[[], str]) -> dict[str, Any]:
        seen: dict[str, Any] = {"first": load(driver, next_url())}
        type_into(driver, "name", "Ada")
        press(driver, "button[value=review]")
        press(driver, "button[value=send]")
        WebDriverWait(driver, WAIT * 2).until(lambda d: body_class(d) == "page-form")
        seen["second"] = driver.find_element(By.ID, "step").text
        press(driver, "button[value=yes]")  # the yes/no step: one click
        WebDriverWait(driver, WAIT * 2).until(lambda d: body_class(d) == "page-form")
        seen["third"] = driver.find_element(By.ID, "step").text
        driver.refresh()
        seen["third, reload"] = driver.find_element(By.ID, "step").text
        press(driver, "button[value=decline]")
        seen["done"] = driver.title, outcome_shown(driver)
        return seen

    async with session(ux_server()) as s:
        result, seen = await s.ask("wizard", {}, drive)
        tabs = len(s.announced)

    assert seen["first"] == "page-form"
    assert seen["second"].startswith("Question 2 from Signup desk")
    assert seen["third"].startswith("Question 3 from Signup desk") and seen["third, reload"] == seen["third"]
    assert seen["done"] == ("Declined", "declined")
    assert result == [
        {"action": "accept", "data": {"name": "Ada"}},
        {"action": "accept", "data": {"ok": True}},
        {"action": "decline", "data": None},
    ]
    assert tabs == 3  # every question was announced (its URL printed), but only the first opened a tab
    assert s.urls.statistics().current_buffer_used == 0


async def test_secret_pattern_date_and_defaults(driver: WebDriver) -> None:
    """A secret is typed masked and shown as dots; a pattern speaks in the author's words; a date picker."""

    def drive(next_url: Callable[[], str]) -> dict[str, Any]:
        load(driver, next_url())
        seen: dict[str, Any] = {"type": field_input(driver, "api_key").get_attribute("type")}
        type_into(driver, "service", "")  # cleared: the default comes back, marked
        type_into(driver, "api_key", "sk-live-123456")
        press(driver, "button[value=review]")
        seen["review"] = review(driver)
        seen["html_has_key"] = "sk-live-123456" in (driver.page_source or "")
        press(driver, "button[value=send]")
        return seen

    async with session(ux_server()) as s:
        result, seen = await s.ask("secret", {}, drive)
    assert seen["type"] == "password"
    assert seen["review"] == {"service": "mail (default)", "api_key": "•••••••• (hidden)"}
    assert not seen["html_has_key"]
    assert result == {"action": "accept", "data": {"service": "mail", "api_key": "sk-live-123456"}}

    def drive_code(next_url: Callable[[], str]) -> dict[str, Any]:
        load(driver, next_url())
        seen: dict[str, Any] = {
            "day_type": field_input(driver, "day").get_attribute("type"),
            "day_rules": driver.find_element(By.CSS_SELECTOR, '[data-name="day"] .rules').text,
            "code_rules": driver.find_elements(By.CSS_SELECTOR, '[data-name="code"] .rules'),
            "described": field_input(driver, "code").get_attribute("aria-describedby"),
        }
        seen["code_rules"] = len(seen["code_rules"])
        driver.execute_script("document.getElementById('answer').noValidate = true")
        type_into(driver, "code", "abc-123")
        press(driver, "button[value=review]")
        seen["error"] = error_of(driver, "code")
        seen["focused"] = driver.execute_script("return document.activeElement.id")
        seen["links"] = [
            a.get_attribute("href").rsplit("#", 1)[1] for a in driver.find_elements(By.CSS_SELECTOR, "#summary a")
        ]
        press(driver, "button[value=cancel]")
        return seen

    async with session(ux_server()) as s:
        result, seen = await s.ask("code", {}, drive_code)
    assert seen["day_type"] == "date" and seen["day_rules"] == "A date"  # no YYYY-MM-DD beside a dd/mm/yyyy picker
    assert seen["code_rules"] == 0  # the description says it; no raw regex
    assert seen["described"] == "f0-desc"
    assert seen["error"] == "Not in the expected form: Three capitals, a dash, three digits."
    assert seen["focused"] == "summary" and seen["links"] == ["f0", "f1"]  # form order, each to its field
    assert result == {"action": "cancel", "data": None}


async def test_a_look_alike_url_stops_until_its_real_name_is_typed(driver: WebDriver) -> None:
    target = "https://xn--pple-43d.com/pay"

    def drive(next_url: Callable[[], str]) -> dict[str, Any]:
        load(driver, next_url())
        seen: dict[str, Any] = {
            "stop": driver.find_element(By.ID, "stop").text,
            "primary": driver.find_element(By.CSS_SELECTOR, "button.primary").text,
        }
        press(driver, "#open")  # without typing the name: nothing opens
        seen["problem"] = driver.find_element(By.ID, "problem").text
        driver.find_element(By.ID, "confirm").send_keys("xn--pple-43d.com")
        seen["after"] = press(driver, "#open")
        seen["opened"] = next_url()
        return seen

    async with session() as s:
        result, seen = await s.ask("visit", {"url": target}, drive)
    assert "its real name, in plain letters, is xn--pple-43d.com" in seen["stop"]
    assert "CYRILLIC SMALL LETTER A" in seen["stop"]
    assert seen["primary"] == "Decline"
    assert seen["problem"].startswith("Nothing was opened")
    assert seen["after"] == "page-waiting" and seen["opened"] == target
    assert result == {"action": "accept"}


async def test_every_page_at_desktop_and_phone_width(driver: WebDriver, landing: Landing) -> None:
    """Each page: no serious or critical axe-core violation at 1280x800 and 390x844; at 390 px no sideways
    scroll, buttons on one row or stacked full width, every target at least 24 px; screenshots of both."""
    audit = Audit(axe_source())

    def form_flow(next_url: Callable[[], str]) -> None:
        url = next_url()
        load(driver, url)
        audit.check(driver, "form")
        driver.execute_script("document.getElementById('answer').noValidate = true")
        type_into(driver, "name", "A")
        type_into(driver, "age", "200")
        press(driver, "button[value=review]")
        audit.check(driver, "form-errors")
        fill_ada(driver)
        press(driver, "button[value=review]")
        audit.check(driver, "review")
        press(driver, "button[value=send]")
        driver.get(url + "?still=1")
        audit.check(driver, "done-sent")
        load(driver, url + "x")
        audit.check(driver, "error-404")

    def yes_no(next_url: Callable[[], str]) -> None:
        load(driver, next_url())
        audit.check(driver, "yes-no")
        press(driver, "button[value=no]")

    def url_flow(next_url: Callable[[], str]) -> None:
        # The yes/no's done page looks out for the same server's next question: it comes to this tab.
        WebDriverWait(driver, WAIT * 2).until(lambda d: body_class(d) == "page-url")
        audit.check(driver, "url-consent")
        press(driver, "#open")
        next_url()
        audit.check(driver, "url-waiting")

    def lookalike(next_url: Callable[[], str]) -> None:
        load(driver, next_url())
        audit.check(driver, "url-lookalike")
        press(driver, "button[value=decline]")
        audit.check(driver, "done-declined")

    async with session(ux_server()) as s:
        await s.ask("signup", {}, form_flow)
        await s.ask("delete", {}, yes_no)
        await s.ask("visit", {"url": f"{landing.url}/deposit"}, url_flow)
        await s.ask("visit", {"url": "https://xn--pple-43d.com/pay"}, lookalike)

    expected = {"form", "form-errors", "review", "done-sent", "error-404", "yes-no", "url-consent", "url-waiting"}
    assert set(audit.seen) == expected | {"url-lookalike", "done-declined"}
    for name, report in audit.seen.items():
        assert report["axe-desktop"] == [] and report["axe-phone"] == [] and report["axe-dark"] == [], (name, report)
        phone = report["layout-phone"]
        assert phone["scroll"][0] <= phone["scroll"][1], (name, phone)  # no horizontal scroll at 390 px
        assert phone["small"] == [], (name, phone)  # every target at least 24x24 px
        assert all(row["oneRow"] or row["fullWidth"] for row in phone["rows"]), (name, phone)
        assert all(row["oneRow"] for row in report["layout-desktop"]["rows"]), (name, report["layout-desktop"])
        for label in ("desktop", "phone"):
            assert (SHOTS / f"{name}-{label}.png").stat().st_size > 2000


async def test_enter_in_the_look_alike_box_opens_it_and_never_declines(driver: WebDriver) -> None:
    from selenium.webdriver.common.keys import Keys

    def drive(next_url: Callable[[], str]) -> tuple[str, str]:
        load(driver, next_url())
        driver.execute_script("document.elicitkitOld = true")
        driver.find_element(By.ID, "confirm").send_keys("xn--pple-43d.com" + Keys.ENTER)
        WebDriverWait(driver, WAIT, ignored_exceptions=(WebDriverException,)).until(
            lambda d: d.execute_script("return !document.elicitkitOld && document.readyState === 'complete'")
        )
        return body_class(driver), next_url()

    async with session() as s:
        result, seen = await s.ask("visit", {"url": "https://xn--pple-43d.com/pay"}, drive)
    assert seen == ("page-waiting", "https://xn--pple-43d.com/pay") and result == {"action": "accept"}
