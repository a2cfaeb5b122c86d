"""examples/elicitation/deploy_wizard.py with the kit: two typed forms in a row, and a hand-written schema."""

from __future__ import annotations

import pytest

from elicitkit.testing.kit import Kit, accept, cancel, decline

from ._load import spec

DEPLOY = spec("elicitation/deploy_wizard.py")

pytestmark = pytest.mark.timeout(60)


@pytest.mark.elicitkit_eras(transports=("memory", "stdio"))
async def test_the_wizard_asks_where_then_how_big(elicitkit: Kit) -> None:
    size = {"cpu_cores": 2, "memory_gb": 4, "auto_scale": True}
    elicitkit.person.will(accept({"environment": "staging"}), accept(size))
    async with elicitkit.connect(DEPLOY) as client:
        deployed = await client.call_tool("deploy", {"app_name": "api"})
    # region came from the model's default (filled by the client from 2025-11-25, by the server before)
    assert deployed.text == "Deployed api to staging in eu-west: 2 cores, 4 GB, auto-scale on."
    elicitkit.asked.assert_messages("Step 1/2: where should api run?", "Step 2/2: how big should api be in staging?")
    target, size = elicitkit.asked
    target.assert_fields("environment", "region")
    size.assert_fields("cpu_cores", "memory_gb", "auto_scale")
    assert target.schema is not None and size.schema is not None
    environment, region = target.schema["properties"]["environment"], target.schema["properties"]["region"]
    if elicitkit.era == "2025-06-18":  # that era's titled choice: enum + enumNames, and no defaults
        assert (environment["enum"], environment["enumNames"]) == (
            ["staging", "production"],
            ["Staging (safe to break)", "Production (real customers)"],
        )
        assert "default" not in region
    else:
        assert environment["oneOf"] == [
            {"const": "staging", "title": "Staging (safe to break)"},
            {"const": "production", "title": "Production (real customers)"},
        ]
        assert region["default"] == "eu-west"
        assert size.schema["properties"]["auto_scale"]["default"] is False
    assert region["enum"] == ["eu-west", "us-east"]
    cores = size.schema["properties"]["cpu_cores"]
    assert (cores["type"], cores["minimum"], cores["maximum"]) == ("integer", 1, 32)


@pytest.mark.elicitkit_eras()
async def test_the_wizard_stops_where_the_person_does(elicitkit: Kit) -> None:
    elicitkit.person.will(decline(), accept({"environment": "production", "region": "us-east"}), cancel(), cancel())
    async with elicitkit.connect(DEPLOY) as client:
        texts = [(await client.call_tool("deploy", {"app_name": "api"})).text for _ in range(3)]
    assert texts == [
        "Deployment of api stopped at step 1 (decline).",
        "Deployment of api stopped at step 2 (cancel).",
        "Deployment of api stopped at step 1 (cancel).",
    ]
    assert elicitkit.asked[2].message == "Step 2/2: how big should api be in production?"
    elicitkit.asked.assert_count(4)


@pytest.mark.elicitkit_eras()
async def test_rollback_asks_with_a_hand_written_schema(elicitkit: Kit) -> None:
    elicitkit.person.will(accept({"confirm": True}), accept({"confirm": False}), decline(), cancel())
    async with elicitkit.connect(DEPLOY) as client:
        rolled = [(await client.call_tool("rollback", {"app_name": "api"})).text for _ in range(4)]
    assert rolled == [
        "Rolled api back.",
        "Left api as it is (accept).",
        "Left api as it is (decline).",
        "Left api as it is (cancel).",
    ]
    elicitkit.asked[0].assert_schema(
        {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}
    )
    elicitkit.asked.assert_messages(*["Roll api back to its previous release?"] * 4)
