"""The server the fuzzers talk to: a few tools, a prompt, a resource and completion, all on every era.

    python tests/fuzz/fuzz_server.py stdio
    python tests/fuzz/fuzz_server.py http PORT    # Streamable HTTP at http://127.0.0.1:PORT/mcp

Nothing here asks the client anything, so a fuzzer never has a server request to answer.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from elicitkit import Server

server = Server("fuzz-target", "1.0.0")


@server.tool()
def echo(text: str) -> str:
    """The text back."""
    return text


@server.tool()
def add(a: int, b: int = 0) -> int:
    return a + b


@server.tool()
def shape(payload: dict[str, Any]) -> int:
    """Anything nested: how many top-level keys."""
    return len(payload)


@server.prompt()
def greet(name: str) -> str:
    return f"Hello, {name}!"


@server.resource("notes://readme")
def readme() -> str:
    return "read me"


@server.resource("users://{user_id}/profile")
def profile(user_id: int) -> str:
    return f"user {user_id}"


@server.completion()
def complete(ref: Any, argument: str, value: str, context: dict[str, str]) -> list[str]:
    return [value + "!"]


def main() -> None:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    if sys.argv[1:2] == ["http"]:
        server.run("http", port=int(sys.argv[2]))
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
