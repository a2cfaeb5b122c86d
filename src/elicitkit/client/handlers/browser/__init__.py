"""Transitional: the browser handler while its module is split (see page.py)."""

from elicitkit.client.handlers.browser.page import *  # noqa: F403
