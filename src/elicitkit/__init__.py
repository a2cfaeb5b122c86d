"""elicitkit: a Model Context Protocol implementation built around elicitation.

The curated public API, one line each (``__all__`` lists exactly these, and nothing else is
exported here). Content blocks and prompt messages are in :mod:`elicitkit.content`, every
error in :mod:`elicitkit.errors`, the seed projects' names in :mod:`elicitkit.compat`, the
pytest kit in :mod:`elicitkit.testing.kit`.

Serving
    ``Server("weather")``: ``@server.tool()``, ``@server.resource(uri)``, ``@server.prompt()``, ``server.run()``
    ``Context``: a tool's parameter typed ``ctx: Context``; ``await ctx.elicit("Sure?", bool)``
    ``ToolError("no such city")``: raise it, and the call ends with ``isError`` and that text
    ``ToolResult(content=[...], structured={...})``: a tool's full answer, when a value is not enough
    ``Resolve(fn)``: ``confirm: Annotated[Confirm, Resolve(ask_confirm)]``, filled before the tool runs
    ``Elicit(message, Model)``: what a resolver returns to ask for its value instead of computing it

Forms (a pydantic model becomes the requested schema)
    ``Format("email")``: ``Annotated[str, Format("email")]``; also date, date-time, uri
    ``TitledEnum``: an ``Enum`` whose members carry a title, shown to the person as options
    ``Titles({"s": "Small"})``: titles for a ``Literal[...]`` or ``list[Literal[...]]`` field

Answers
    ``ElicitationResult``: what ``ctx.elicit`` returns; ``AcceptedElicitation(data=...)``,
    ``DeclinedElicitation()``, ``CancelledElicitation()`` are its three cases, made for ``match``

Asking as a client
    ``Client(["python", "server.py"], elicitation_callback=answer)``, or ``Client("http://host/mcp")``
    ``FormRequest`` / ``UrlRequest``: what the callback receives (``.message``, ``.requested_schema`` / ``.url``)
    ``InputRequiredResult``: a 2026 call that needs input, kept with ``input_required="return"``, resumed later
    ``CIHandler({"name": "Ada"})``: answers from defaults, for CI; ``Policy(handler, rate_limit=...)`` wraps any handler
    ``TerminalHandler()`` / ``BrowserHandler()``: the person answers in a terminal form or a browser page

Keys
    ``KeyRing.from_env()``: the keys that seal 2026 ``requestState``, shared by a fleet of processes

Errors (the tree is in :mod:`elicitkit.errors`)
    ``ElicitkitError`` (the root), ``MCPError`` (a JSON-RPC error), ``ConnectionClosed``,
    ``RequestTimeout``, ``ElicitationError``, ``SchemaError``, ``InvalidAnswer``,
    ``ElicitationTimeout``, ``UrlElicitationRequired`` (-32042: visit these URLs, then retry)
"""

# First: the error root, which every module below imports (errors.py then imports the leaves).
from elicitkit.errors import ElicitkitError  # isort: skip

from elicitkit.client.client import Client
from elicitkit.client.handlers.browser import BrowserHandler
from elicitkit.client.handlers.ci import CIHandler
from elicitkit.client.handlers.policy import Policy
from elicitkit.client.handlers.terminal import TerminalHandler
from elicitkit.client.rounds import InputRequiredResult
from elicitkit.elicitation.enums import Format, TitledEnum, Titles
from elicitkit.elicitation.errors import (
    ElicitationError,
    ElicitationTimeout,
    InvalidAnswer,
    SchemaError,
    UrlElicitationRequired,
)
from elicitkit.elicitation.requests import FormRequest, UrlRequest
from elicitkit.elicitation.results import (
    AcceptedElicitation,
    CancelledElicitation,
    DeclinedElicitation,
    ElicitationResult,
)
from elicitkit.protocol.errors import ConnectionClosed, MCPError, RequestTimeout
from elicitkit.server.context import Context
from elicitkit.server.resolvers import Elicit, Resolve
from elicitkit.server.rounds.keys import KeyRing
from elicitkit.server.server import Server
from elicitkit.server.tools import ToolError, ToolResult

__version__ = "0.1.0"


__all__ = [
    "AcceptedElicitation",
    "BrowserHandler",
    "CIHandler",
    "CancelledElicitation",
    "Client",
    "ConnectionClosed",
    "Context",
    "DeclinedElicitation",
    "Elicit",
    "ElicitationError",
    "ElicitationResult",
    "ElicitationTimeout",
    "ElicitkitError",
    "FormRequest",
    "Format",
    "InputRequiredResult",
    "InvalidAnswer",
    "KeyRing",
    "MCPError",
    "Policy",
    "RequestTimeout",
    "Resolve",
    "SchemaError",
    "Server",
    "TerminalHandler",
    "TitledEnum",
    "Titles",
    "ToolError",
    "ToolResult",
    "UrlElicitationRequired",
    "UrlRequest",
    "__version__",
]
