"""Streamable HTTP: the client transport (``client``) and the server side."""
