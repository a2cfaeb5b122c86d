"""The terminal form: a server's questions answered in the terminal, reviewed before sending.

- :mod:`.dialogue`: what is said and how a typed line is read (pure: no I/O, tested alone);
- :mod:`.view`: the drawing with rich (question panel, fields, review table, URL facts);
- :mod:`.reader`: the keyboard (prompt_toolkit on a terminal, plain lines otherwise);
- :mod:`.waiting`: the background wait for a URL question's completion notice;
- :mod:`.handler`: :class:`TerminalHandler`, which runs the conversation with those.
"""

from elicitkit.client.handlers.terminal.handler import OpenUrl, TerminalHandler

__all__ = ["OpenUrl", "TerminalHandler"]
