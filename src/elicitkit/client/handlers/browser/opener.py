"""Opening the question's page in the user's graphical browser, and never in a text-mode one.

A text-mode browser (lynx, w3m...) would take over the terminal the client may be using, and
``webbrowser`` can block for seconds: :func:`open_in_browser` runs it in a worker thread and
says False when there is no graphical browser, so the caller points the user at the URL.
"""

from __future__ import annotations

import webbrowser

import anyio

__all__ = ["open_in_browser"]


def _is_console(browser: webbrowser.BaseBrowser) -> bool:
    """A text-mode browser (lynx, w3m...) would take over the terminal the client may be using."""
    if type(browser) is webbrowser.GenericBrowser:
        return True
    return isinstance(browser, webbrowser.UnixBrowser) and not browser.background


def _open_gui(url: str) -> bool:
    try:
        browser = webbrowser.get()
    except webbrowser.Error:
        return False
    if _is_console(browser):
        return False
    return browser.open(url, new=2)


async def open_in_browser(url: str) -> bool:
    """Open ``url`` in a graphical browser, in a worker thread (``webbrowser`` can block for seconds).

    Returns False when there is none (no display, or only a text-mode browser): the URL has
    been printed, so the user can open it by hand.
    """
    return await anyio.to_thread.run_sync(_open_gui, url, abandon_on_cancel=True)
