"""The browser form: a server's questions answered on a one-time loopback page in the user's browser.

The pages, the field parsing and the checks are shared with the server's own pages, so they
live outside the client: :mod:`elicitkit.elicitation.page` (pure renderer),
:mod:`elicitkit.elicitation.webapp` (one-time tokens, Host/Origin/CSRF checks, the steps) and
:mod:`elicitkit.transports.http.loopback` (uvicorn on a random ``127.0.0.1`` port). Here:

- :mod:`.opener`: opening a graphical browser, never a text-mode one;
- :mod:`.handler`: :class:`BrowserHandler`, which ties a question to its page.
"""

from elicitkit.client.handlers.browser.handler import BrowserHandler, OpenUrl
from elicitkit.client.handlers.browser.opener import open_in_browser

__all__ = ["BrowserHandler", "OpenUrl", "open_in_browser"]
