"""A server module that fails on import: what a kit user sees when their stdio server dies."""

from elicitkit import Server

server = Server("broken")

if __name__ != "__main__" and not __name__.startswith("_elicitkit_fresh_"):
    raise RuntimeError("this server does not start")
