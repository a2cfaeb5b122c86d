"""How many inputs each fuzzer tries: bounded by default, fixed in the suite, more with ``--fuzz-long``.

``tests/fuzz/conftest.py`` sets :data:`LONG` from the command line before the test modules are
imported; every fuzzer takes its settings from :func:`fuzz_settings`, so one switch scales all.

``scripts/test.sh`` (and any run with ``CI`` set) sets ``ELICITKIT_FUZZ=fixed``: the same inputs
every run, so a red suite means a change broke something, not that this run drew a new input.
A plain ``pytest`` run, and ``ELICITKIT_FUZZ=explore``, draws fresh inputs and keeps what it
finds in hypothesis' example database; that is how new defects are hunted.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, settings

LONG = False  # set by conftest.pytest_configure from --fuzz-long
LONG_FACTOR = 50
LONG_TIMEOUT = 3600  # seconds per fuzzer with --fuzz-long
CI = os.environ.get("ELICITKIT_FUZZ", "fixed" if os.environ.get("CI") else "explore") == "fixed"


def fuzz_settings(examples: int, **overrides: Any) -> settings:
    """Settings for one fuzzer: ``examples`` inputs by default (x50 with --fuzz-long)."""
    return settings(
        max_examples=examples * (LONG_FACTOR if LONG else 1),
        derandomize=CI,  # CI runs are reproducible: same inputs every time
        database=None if CI else settings.default.database,
        deadline=None,  # real processes and sockets: wall time per input varies with the machine's load
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
        print_blob=True,
        **overrides,
    )
