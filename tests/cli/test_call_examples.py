"""``elicitkit call`` on each example as a stdio server: real tools, questions answered by the CI handler.

The CI handler answers a form from ``--defaults`` (by field name), then from the schema's own
defaults, and declines (saying why on stderr) when a required field has neither; it always
declines URL mode. Every command runs in its own interpreter, all of them in parallel.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ._support import ELICITATION, EXAMPLES, Call, Ran, run_batch, server_command

pytestmark = pytest.mark.timeout(90)

BISTRO = server_command(ELICITATION / "bistro.py")
DELETE = server_command(ELICITATION / "delete_folder.py")
DEPLOY = server_command(ELICITATION / "deploy_wizard.py")
GUESS = server_command(ELICITATION / "guess_the_number.py")
AUTH = server_command(ELICITATION / "third_party_auth.py")
TOOLS = server_command(EXAMPLES / "tools_basic.py")
RESOURCES = server_command(EXAMPLES / "resources_and_templates.py")
PROMPTS = server_command(EXAMPLES / "prompts.py")

STAGING = {"environment": "staging", "cpu_cores": 2, "memory_gb": 4}
PRODUCTION_TOML = 'environment = "production"\nregion = "us-east"\ncpu_cores = 8\nmemory_gb = 16\nauto_scale = true\n'

CALLS: dict[str, Call] = {
    # deploy_wizard: two typed forms in a row
    "deploy": Call(["call", DEPLOY, "deploy", "-a", "app_name=shop"], defaults=STAGING),
    "deploy-toml": Call(["call", DEPLOY, "deploy", "-a", "app_name=shop"], PRODUCTION_TOML, ".toml"),
    "deploy-no-defaults": Call(["call", DEPLOY, "deploy", "-a", "app_name=shop"]),
    "deploy-too-big": Call(["call", DEPLOY, "deploy", "-a", "app_name=shop"], defaults={**STAGING, "cpu_cores": 64}),
    "rollback": Call(["call", DEPLOY, "rollback", "-a", "app_name=shop"], "confirm = true\n", ".toml"),
    # delete_folder: a resolver asks, only when the folder is not empty; both protocol eras
    **{
        f"delete-{mode}": Call(
            ["call", DELETE, "delete_folder", "-a", "path=/tmp/project", "--mode", mode], {"ok": True}
        )
        for mode in ("legacy", "modern", "auto")
    },
    "delete-keep": Call(["call", DELETE, "delete_folder", "-a", "path=/tmp/notes"], defaults={"ok": False}),
    "delete-declined": Call(["call", DELETE, "delete_folder", "-a", "path=/tmp/project", "--mode", "modern"]),
    "delete-empty": Call(["call", DELETE, "delete_folder", "-a", "path=/tmp/empty"]),
    "trash-declined": Call(["call", DELETE, "empty_trash"]),
    "trash": Call(["call", DELETE, "empty_trash", "--mode", "modern"], defaults={"ok": True}),
    # bistro: a form when the evening is full, a URL for the deposit
    "book-free": Call(["call", BISTRO, "book_table", "-a", "date=2025-12-20", "-a", "party_size=2"]),
    "book-full": Call(
        ["call", BISTRO, "book_table", "-a", "date=2025-12-25", "-a", "party_size=4"],
        defaults={"try_other": True, "date": "2025-12-27"},
    ),
    "book-full-declined": Call(["call", BISTRO, "book_table", "-a", "date=2025-12-24", "-a", "party_size=4"]),
    "book-args-json": Call(["call", BISTRO, "book_table", "--args-json", '{"date": "2025-12-01", "party_size": 3}']),
    "deposit": Call(["call", BISTRO, "pay_deposit", "-a", "booking_id=42"]),
    # guess_the_number: scalar questions, whose one field is "value"
    "guess-no": Call(["call", GUESS, "guess_the_number"], defaults={"value": False}),
    "guess-yes": Call(["call", GUESS, "guess_the_number"], defaults={"value": True}),
    "guess-nothing": Call(["call", GUESS, "guess_the_number"]),
    # third_party_auth: -32042 with a URL nobody can open here
    "auth-events": Call(["call", AUTH, "list_events"]),
    # the examples that do not ask
    "add": Call(["call", TOOLS, "add", "-a", "a=2", "-a", "b=3"]),
    "add-json": Call(["call", TOOLS, "add", "-a", "a=2", "-a", "b=3", "--json"]),
    "fahrenheit": Call(["call", TOOLS, "to_fahrenheit", "-a", "celsius=100"]),
    "divide-by-zero": Call(["call", TOOLS, "divide", "-a", "a=1", "-a", "b=0"]),
    "tools-list": Call(["call", TOOLS]),
    "write-note": Call(["call", RESOURCES, "write_note", "-a", "title=todo", "-a", "text=buy milk"]),
    "prompts-list": Call(["call", PROMPTS]),
}


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Ran]:
    return run_batch(CALLS, Path(tmp_path_factory.mktemp("defaults")))


def out(ran: dict[str, Ran], name: str, code: int = 0) -> str:
    return ran[name].expect(code).stdout


# ----------------------------------------------------------------------------- deploy_wizard


def test_deploy_from_defaults(ran: dict[str, Ran]) -> None:
    # region and auto_scale come from the forms' own defaults
    assert out(ran, "deploy") == "Deployed shop to staging in eu-west: 2 cores, 4 GB, auto-scale off.\n"
    assert ran["deploy"].stderr == ""


def test_deploy_from_toml_defaults(ran: dict[str, Ran]) -> None:
    assert out(ran, "deploy-toml") == "Deployed shop to production in us-east: 8 cores, 16 GB, auto-scale on.\n"


def test_deploy_declined_at_each_step(ran: dict[str, Ran]) -> None:
    assert out(ran, "deploy-no-defaults") == "Deployment of shop stopped at step 1 (decline).\n"
    assert "no default for required field(s): environment" in ran["deploy-no-defaults"].stderr


def test_deploy_defaults_out_of_bounds_are_declined(ran: dict[str, Ran]) -> None:
    assert out(ran, "deploy-too-big") == "Deployment of shop stopped at step 2 (decline).\n"
    assert "the defaults do not fit the form: cpu_cores" in ran["deploy-too-big"].stderr


def test_rollback_with_a_hand_written_schema(ran: dict[str, Ran]) -> None:
    assert out(ran, "rollback") == "Rolled shop back.\n"


# ----------------------------------------------------------------------------- delete_folder


@pytest.mark.parametrize("mode", ["legacy", "modern", "auto"])
def test_delete_confirmed_in_each_mode(ran: dict[str, Ran], mode: str) -> None:
    assert out(ran, f"delete-{mode}") == "deleted /tmp/project\n"


def test_delete_answered_no_or_declined(ran: dict[str, Ran]) -> None:
    assert out(ran, "delete-keep") == "kept the folder\n"
    assert out(ran, "delete-declined") == "declined: folder not deleted\n"
    assert "no default for required field(s): ok" in ran["delete-declined"].stderr


def test_delete_empty_folder_asks_nothing(ran: dict[str, Ran]) -> None:
    assert out(ran, "delete-empty") == "deleted /tmp/empty\n"
    assert ran["delete-empty"].stderr == ""


def test_empty_trash(ran: dict[str, Ran]) -> None:
    assert out(ran, "trash") == "emptied the trash (1 file(s))\n"
    # a bare-model resolver: declining ends the call with a tool error, exit status 1
    assert out(ran, "trash-declined", 1) == "empty_trash: the user declined: Empty the trash (1 file(s))?\n"


# ----------------------------------------------------------------------------- bistro


def test_book_a_free_evening(ran: dict[str, Ran]) -> None:
    assert out(ran, "book-free") == "Table for 2 booked on 2025-12-20.\n"
    assert out(ran, "book-args-json") == "Table for 3 booked on 2025-12-01.\n"


def test_book_a_full_evening_with_defaults(ran: dict[str, Ran]) -> None:
    assert out(ran, "book-full") == "Table for 4 booked on 2025-12-27.\n"


def test_book_a_full_evening_declined(ran: dict[str, Ran]) -> None:
    assert out(ran, "book-full-declined") == "No booking made: you declined another date.\n"
    assert "no default for required field(s): try_other" in ran["book-full-declined"].stderr


def test_deposit_url_declined(ran: dict[str, Ran]) -> None:
    assert out(ran, "deposit") == "No deposit for booking 42 (decline); the table is held for one hour.\n"
    assert "bistro asked to open https://pay.bistro.example/deposit/42" in ran["deposit"].stderr


# ----------------------------------------------------------------------------- guess_the_number


def test_guess_the_number_no_thanks(ran: dict[str, Ran]) -> None:
    assert out(ran, "guess-no") == "Another time, then.\n"
    assert ran["guess-no"].stderr == ""  # answered, not declined


def test_guess_the_number_declined(ran: dict[str, Ran]) -> None:
    assert out(ran, "guess-nothing") == "Another time, then.\n"
    assert "no default for required field(s): value" in ran["guess-nothing"].stderr


def test_guess_the_number_plays_then_gives_up(ran: dict[str, Ran]) -> None:
    # "value": true answers the yes/no; it is no whole number, so the first guess is declined
    assert out(ran, "guess-yes") == "You gave up before the first guess.\n"
    assert "the defaults do not fit the form: value: expected integer" in ran["guess-yes"].stderr


# ----------------------------------------------------------------------------- third_party_auth


def test_third_party_auth(ran: dict[str, Ran]) -> None:
    events = ran["auth-events"].expect(2)
    assert events.stdout == ""
    assert "calendar-bridge asked to open https://calendar.example.com/oauth/authorize" in events.stderr
    assert "error: Example Calendar access is needed first. (-32042)" in events.stderr


# ----------------------------------------------------------------------------- tools that do not ask


def test_add_arguments_typed_by_the_input_schema(ran: dict[str, Ran]) -> None:
    assert out(ran, "add") == "5\n"
    result = json.loads(out(ran, "add-json"))
    assert result["structuredContent"] == {"result": 5}
    assert result["content"] == [{"type": "text", "text": "5"}]
    assert result["isError"] is False


def test_structured_and_error_results(ran: dict[str, Ran]) -> None:
    assert json.loads(out(ran, "fahrenheit")) == {"celsius": 100.0, "fahrenheit": 212.0}
    assert out(ran, "divide-by-zero", 1) == "cannot divide by zero\n"
    assert out(ran, "write-note") == "saved todo\n"


def test_list_tools_of_examples(ran: dict[str, Ran]) -> None:
    header, *rows, hint = ran["tools-list"].expect(0).lines
    assert header.startswith("tools-basic 1.0.0 (") and header.endswith("): 4 tool(s)")
    tools = [row for row in rows if not row.startswith("      ")]
    assert [row.split()[0] for row in tools] == ["add", "to_fahrenheit", "countdown", "divide"]
    assert tools[0].split(None, 1)[1] == "Add two integers."
    # each tool's arguments under it: type, required or default, description (issue 26.4)
    assert rows[1:3] == [
        "      a: integer, required -- The first number.",
        "      b: integer, default 1 -- The second number.",
    ]
    assert hint.startswith("Call one: elicitkit call ") and hint.endswith(" add -a NAME=VALUE ...")
    assert ran["prompts-list"].expect(0).lines[0].endswith("): 0 tool(s)")
