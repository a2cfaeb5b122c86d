"""examples/elicitation/delete_folder.py with the kit: a resolver asks only when there is something to lose."""

from __future__ import annotations

import pytest

from elicitkit.testing.kit import Kit, accept, cancel, decline

from ._load import spec

DELETE = spec("elicitation/delete_folder.py")

pytestmark = pytest.mark.timeout(60)


@pytest.mark.elicitkit_eras(transports=("memory", "stdio"))
async def test_an_empty_folder_goes_without_a_question(elicitkit: Kit) -> None:
    async with elicitkit.connect(DELETE) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        deleted = await client.call_tool("delete_folder", {"path": "/tmp/empty"})
    assert list(tools["delete_folder"].input_schema["properties"]) == ["path"]  # the resolved one is hidden
    assert deleted.text == "deleted /tmp/empty"
    elicitkit.asked.assert_nothing_asked()


@pytest.mark.elicitkit_eras(transports=("memory", "stdio"))
async def test_each_outcome_of_the_confirmation(elicitkit: Kit) -> None:
    elicitkit.person.will(accept({"ok": False}), decline(), cancel(), accept({"ok": True}))
    async with elicitkit.connect(DELETE) as client:
        texts = [(await client.call_tool("delete_folder", {"path": "/tmp/notes"})).text for _ in range(4)]
        gone = await client.call_tool("delete_folder", {"path": "/tmp/notes"})  # empty now: no question
    assert texts == [
        "kept the folder",
        "declined: folder not deleted",
        "cancelled: folder not deleted",
        "deleted /tmp/notes",
    ]
    assert gone.text == "deleted /tmp/notes"
    elicitkit.asked.assert_messages(*["/tmp/notes has 1 file(s). Delete anyway?"] * 4)
    elicitkit.asked[0].assert_fields("ok")


@pytest.mark.elicitkit_eras()
async def test_a_bare_model_parameter_turns_a_refusal_into_an_error(elicitkit: Kit) -> None:
    elicitkit.person.will(decline(), accept({"ok": True}))
    async with elicitkit.connect(DELETE) as client:
        refused = await client.call_tool("empty_trash")
        emptied = await client.call_tool("empty_trash")
        again = await client.call_tool("empty_trash")  # nothing in it: no question
    assert refused.is_error, refused.text
    assert (emptied.text, again.text) == ("emptied the trash (1 file(s))", "emptied the trash (0 file(s))")
    elicitkit.asked.assert_messages("Empty the trash (1 file(s))?", "Empty the trash (1 file(s))?")
