"""Transitional: the terminal handler while its module is split (see handler.py)."""

from elicitkit.client.handlers.terminal.handler import *  # noqa: F403
from elicitkit.client.handlers.terminal.handler import _clean, _command, _parse, _Stop  # noqa: F401
