"""The browser form: a server's questions answered on a one-time loopback page in the user's browser.

- :mod:`.page`: the pages as pure functions (form, review, URL consent, done, errors) and
  the reading of a posted form; no server, no asyncio, so other hosts of a form can share it;
- :mod:`.app`: the loopback web app (one-time tokens, Host/Origin/CSRF checks, the steps);
- :mod:`.serve`: uvicorn on a random ``127.0.0.1`` port inside the running loop;
- :mod:`.opener`: opening a graphical browser, never a text-mode one;
- :mod:`.handler`: :class:`BrowserHandler`, which ties a question to its page.
"""

from elicitkit.client.handlers.browser.handler import BrowserHandler, OpenUrl
from elicitkit.client.handlers.browser.opener import open_in_browser

__all__ = ["BrowserHandler", "OpenUrl", "open_in_browser"]
