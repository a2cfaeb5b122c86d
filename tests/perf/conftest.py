"""Scale tests: many requests at once on one server. Correctness only; no timing is asserted
(performance is measured by ``benchmarks/run.py``)."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "perf: scale tests (thousands of requests at once); checks correctness only")
