"""The person at the browser: headless Chromium signs in to oidc-provider and consents.

:func:`chromium` starts one headless Chromium (Selenium) with a fresh profile, or skips the test
saying why; :func:`sign_in_and_consent` does what a person does with an authorization URL:
open it, sign in on oidc-provider's login form, press Continue on the consent page when it
comes, and wait for the loopback redirect's page. It returns that page's heading.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

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
    # loopback only: oidc-provider's pages @import a web font; fail that at once instead of waiting on DNS
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
)
WAIT = 15.0
CONSENT = "input[name=prompt][value=consent]"  # oidc-provider's consent form (its login form says "login")


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium driven by Selenium, quit on the way out."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (test extra)")
    for what, path in (("chromium", CHROMIUM), ("chromedriver", CHROMEDRIVER)):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)) and not shutil.which(path):
            pytest.skip(f"{what} not found at {path}; scripts/bootstrap.sh installs Debian chromium + chromium-driver")
    from selenium.webdriver.chrome.service import Service

    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for arg in CHROME_ARGS:
            options.add_argument(arg)
        options.add_argument(f"--user-data-dir={profile}")
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        driver.set_page_load_timeout(WAIT)
        try:
            yield driver
        finally:
            driver.quit()


def sign_in_and_consent(
    driver: Any, authorization_url: str, *, login: str = "ada", redirect_prefix: str, seen: list[str] | None = None
) -> str:
    """Open the URL, sign in, consent if asked; return the heading of the page at ``redirect_prefix``.

    ``seen``: gets the pages met on the way ("login", "consent"), for a test that cares.
    """
    seen = [] if seen is None else seen
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    driver.get(authorization_url)
    wait = WebDriverWait(driver, WAIT)

    def stage(d: Any) -> str | None:
        if d.current_url.startswith(redirect_prefix):
            return "redirected"
        if d.find_elements(By.CSS_SELECTOR, CONSENT):
            return "consent"
        return "login" if d.find_elements(By.NAME, "login") else None

    try:
        if wait.until(stage) == "login":  # a browser that signed in before goes straight to consent
            seen.append("login")
            driver.find_element(By.NAME, "login").send_keys(login)
            driver.find_element(By.NAME, "password").send_keys("any password will do")
            driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
            wait.until(lambda d: stage(d) in ("consent", "redirected"))
        if stage(driver) == "consent":
            seen.append("consent")
            wait.until(lambda d: d.execute_script("return document.readyState") == "complete")
            driver.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
            wait.until(lambda d: d.current_url.startswith(redirect_prefix))
        heading = wait.until(lambda d: d.find_elements(By.TAG_NAME, "h1"))
    except TimeoutException:
        raise AssertionError(f"stuck at {driver.current_url}: {_text(driver)}") from None
    return str(heading[0].text)


class ChromiumAuthorizer:
    """An :class:`~elicitkit.auth.Authorizer` whose person is headless Chromium: the real loopback
    redirect (:class:`~elicitkit.auth.LoopbackAuthorizer`), with the sign-in done by ``driver``.

    ``opened`` lists every authorization URL shown, so a test can say "no browser this time".
    """

    def __init__(self, driver: Any, *, login: str = "ada") -> None:
        import io

        from elicitkit.auth import LoopbackAuthorizer

        self.inner = LoopbackAuthorizer(open_browser=False, print_to=io.StringIO())
        self.driver = driver
        self.login = login
        self.opened: list[str] = []
        self.headings: list[str] = []

    @property
    def redirect_uri(self) -> str:
        return self.inner.redirect_uri

    async def start(self) -> None:
        await self.inner.start()

    async def close(self) -> None:
        await self.inner.close()

    async def authorize(self, authorization_url: str) -> Any:
        import anyio
        import anyio.to_thread

        self.opened.append(authorization_url)
        redirect = self.inner.redirect_uri

        async def person() -> None:
            heading = await anyio.to_thread.run_sync(
                lambda: sign_in_and_consent(self.driver, authorization_url, login=self.login, redirect_prefix=redirect)
            )
            self.headings.append(heading)

        async with anyio.create_task_group() as tg:
            tg.start_soon(person)
            params = await self.inner.authorize(authorization_url)
        return params


def _text(driver: Any) -> str:
    """What the page says (its body text), for a failing test's message."""
    from selenium.webdriver.common.by import By

    try:
        return str(driver.find_element(By.TAG_NAME, "body").text)[:2000]
    except Exception as exc:  # the page may be gone mid-navigation
        return f"(no body text: {type(exc).__name__})"


def connect_in_browser(
    driver: Any, link: str, logins: dict[str, str], *, seen: list[str] | None = None
) -> dict[str, str]:
    """A person connecting an account from a server's start link (issue 22's third-party sign-in).

    Follows the link and whatever comes: oidc-provider's login form (the name from ``logins``,
    by the issuer's origin the form is served from), its consent page, the server's confirm
    page (pressing Connect), until the server's "connected" page or an error page. Returns what
    the person saw: ``{"end": "connected" | "error", "status": ..., "text": ..., "account": ...}``.
    """
    seen = [] if seen is None else seen
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    driver.get(link)
    wait = WebDriverWait(driver, WAIT)
    found: dict[str, str] = {}

    def stage(d: Any) -> str | None:
        for name, selector in (("connected", "#connected"), ("error", "#error"), ("confirm", "#connect")):
            if d.find_elements(By.CSS_SELECTOR, selector):
                return name
        if d.find_elements(By.CSS_SELECTOR, CONSENT):
            return "consent"
        return "login" if d.find_elements(By.NAME, "login") else None

    try:
        for _ in range(12):
            where = wait.until(stage)
            seen.append(where)
            if where in ("connected", "error"):
                found["end"] = where
                found["text"] = _text(driver)
                if where == "error":
                    found["status"] = str(driver.find_element(By.ID, "error").get_attribute("data-status"))
                return found
            before = driver.current_url
            if where == "login":
                origin = "/".join(before.split("/")[:3])
                driver.find_element(By.NAME, "login").send_keys(logins[origin])
                driver.find_element(By.NAME, "password").send_keys("any password will do")
                driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
            elif where == "consent":
                wait.until(lambda d: d.execute_script("return document.readyState") == "complete")
                driver.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
            else:  # the server's confirm page: which account is being connected, then Connect
                found["account"] = driver.find_element(By.CSS_SELECTOR, ".account").text
                driver.find_element(By.ID, "connect").click()
            wait.until(lambda d, before=before, where=where: d.current_url != before or stage(d) != where)
    except TimeoutException:
        raise AssertionError(f"stuck at {driver.current_url}: {_text(driver)}") from None
    raise AssertionError(f"too many steps: {seen}")


def forget_sign_ins(driver: Any) -> None:
    """Sign the browser out everywhere (every cookie of every site), as another person's browser."""
    driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
