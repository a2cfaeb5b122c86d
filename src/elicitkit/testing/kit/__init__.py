"""A pytest kit for tools that ask: a scripted person, assertions on the questions, every era.

Installed with the package as a pytest plugin (the ``elicitkit`` fixture, the
``elicitkit_eras`` marker and ``--elicitkit-update-snapshots``); see ``docs/testing.md``::

    from elicitkit.testing.kit import accept, decline

    @pytest.mark.elicitkit_eras()              # 2025-06-18, 2025-11-25 and 2026-07-28
    async def test_booking(elicitkit):
        elicitkit.person.will(accept({"date": "2025-12-27"}), decline())
        ...
"""

from elicitkit.testing.kit.asked import Question, Questions, schema_diff
from elicitkit.testing.kit.kit import Case, Kit, tamper
from elicitkit.testing.kit.script import (
    Person,
    Scripted,
    accept,
    after,
    cancel,
    decline,
    hang_up,
    never,
    reply,
    wrong,
)
from elicitkit.testing.kit.serving import ERAS, TRANSPORTS

__all__ = [
    "ERAS",
    "TRANSPORTS",
    "Case",
    "Kit",
    "Person",
    "Question",
    "Questions",
    "Scripted",
    "accept",
    "after",
    "cancel",
    "decline",
    "hang_up",
    "never",
    "reply",
    "schema_diff",
    "tamper",
    "wrong",
]
