"""``python -m elicitkit.demo``: the same as ``elicitkit demo``."""

from elicitkit.cli import main

main(["demo", *__import__("sys").argv[1:]])
