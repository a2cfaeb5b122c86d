"""Streamable HTTP, one concern per module.

Server side: :mod:`.streams` (a request's replayable SSE events), :mod:`.sessions` (legacy
``Mcp-Session-Id`` sessions and the table that runs them), :mod:`.security` (the DNS-rebinding
guard and content negotiation), :mod:`.asgi` (the endpoint: POST, GET, DELETE) and
:mod:`.serve` (the mountable app and the uvicorn runners). The client side lives beside them.

Nothing here is imported eagerly: a client that loads its transport pays for no server code.
"""
