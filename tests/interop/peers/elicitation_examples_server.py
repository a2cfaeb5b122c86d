"""Every tool of ``examples/elicitation/*.py`` on one elicitkit server, for clients of other SDKs.

Usage::

    python elicitation_examples_server.py stdio
    python elicitation_examples_server.py http PORT   # Streamable HTTP at http://127.0.0.1:PORT/mcp

The examples are loaded from their files (they are scripts, not a package) and their tools
are added, unchanged, to one :class:`~elicitkit.Server`; the tool names do not clash.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from elicitkit import Server

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "elicitation"
NAMES = ("bistro", "deploy_wizard", "guess_the_number", "third_party_auth")

server = Server("elicitation-examples", "1.0.0")

for name in NAMES:
    spec = importlib.util.spec_from_file_location(f"elicitation_example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the models' (string) annotations through it
    spec.loader.exec_module(module)
    for tool in module.server.tools.values():
        server.add_tool(tool)


def main(argv: list[str]) -> None:
    if len(argv) >= 3 and argv[1] == "http":
        server.run("http", port=int(argv[2]))
    else:
        server.run("stdio")


if __name__ == "__main__":
    main(sys.argv)
