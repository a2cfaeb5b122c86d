"""A scripted stdio peer (not elicitkit): ``python scripted_stdio.py legacy|legacy-silent|modern``.

* ``legacy``: a handshake-era server that answers anything before ``initialize`` with -32600.
* ``legacy-silent``: the same, but never answers requests before ``initialize``.
* ``no-discover``: the same, but -32601 (method not found) for anything before ``initialize``.
* ``modern``: a 2026 server: ``server/discover`` and ``tools/call``, no ``initialize``.

``tools/call`` answers with the method names it has seen so far, so a test can tell the eras apart.
"""

from __future__ import annotations

import json
import sys

MODE = sys.argv[1]
seen: list[str] = []


def reply(message: dict, result: dict | None = None, error: dict | None = None) -> None:
    out: dict = {"jsonrpc": "2.0", "id": message["id"]}
    if error is not None:
        out["error"] = error
    else:
        out["result"] = result
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()


initialized = False
for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    if method is None or "id" not in message:
        continue
    seen.append(method)
    if MODE == "modern":
        if method == "server/discover":
            reply(
                message,
                {
                    "resultType": "complete",
                    "supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {}},
                    "ttlMs": 0,
                    "cacheScope": "private",
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern-stdio", "version": "1"}},
                },
            )
        elif method == "tools/call":
            reply(message, {"resultType": "complete", "content": [{"type": "text", "text": ",".join(seen)}]})
        else:
            reply(message, error={"code": -32601, "message": f"Method not found: {method}"})
        continue
    if method == "initialize":
        initialized = True
        reply(
            message,
            {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "legacy-stdio", "version": "1"},
            },
        )
    elif not initialized:
        if MODE == "legacy":
            reply(message, error={"code": -32600, "message": "not initialized"})
        elif MODE == "no-discover":
            reply(message, error={"code": -32601, "message": f"Method not found: {method}"})
    elif method == "tools/call":
        reply(message, {"content": [{"type": "text", "text": ",".join(seen)}]})
    else:
        reply(message, error={"code": -32601, "message": f"Method not found: {method}"})
