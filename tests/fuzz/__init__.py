"""Property-based fuzzers (hypothesis): protocol, transports, schema gate, answers, sealed state.

Default run: bounded (about a minute), derandomized when ``CI`` is set. More inputs:
``pytest tests/fuzz --fuzz-long --hypothesis-show-statistics`` (50x, per-test timeout lifted).
"""
