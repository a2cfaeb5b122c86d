"""The terminal form's conversation without a terminal: each typed line -> the next step, and what is said."""

from __future__ import annotations

from typing import Any

import pytest

from elicitkit.client.handlers.terminal.dialogue import (
    Back,
    Change,
    Problem,
    Send,
    ShowHelp,
    Stop,
    Value,
    clean,
    command,
    field_completions,
    field_prompt,
    option_marks,
    parse,
    read_consent,
    read_field_answer,
    read_review_answer,
    report_line,
    review_prompt,
    review_rows,
    stopped_line,
)
from elicitkit.elicitation.fields import FieldError, form_fields
from elicitkit.elicitation.requests import Origin

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "format": "email", "title": "Email"},
        "colours": {
            "type": "array",
            "items": {"anyOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
            "title": "Colours",
        },
        "count": {"type": "integer", "minimum": 1, "default": 2},
        "ok": {"type": "boolean"},
    },
    "required": ["email"],
}
EMAIL, COLOURS, COUNT, OK = form_fields(SCHEMA)


# ------------------------------------------------------------------------------ a field


def test_enter_keeps_the_current_answer_and_clear_empties_it() -> None:
    assert read_field_answer(COUNT, "  ", 2, can_go_back=True) == Value(2)
    assert read_field_answer(COUNT, ":clear", 2, can_go_back=True) == Value(None)
    assert read_field_answer(COLOURS, ":clear", ["r"], can_go_back=True) == Value([])  # "none of these"


def test_a_typed_answer_is_parsed_and_judged_by_the_schema() -> None:
    assert read_field_answer(COUNT, "7", 2, can_go_back=True) == Value(7)
    assert read_field_answer(COLOURS, "+Green", ["r"], can_go_back=True) == Value(["r", "g"])
    assert read_field_answer(COUNT, "seven", 2, can_go_back=True) == Problem(
        "Not a whole number: write digits only, like 42."
    )
    assert read_field_answer(COUNT, "0", 2, can_go_back=True) == Problem("Too small: use 1 or more.")
    assert read_field_answer(EMAIL, "", None, can_go_back=True) == Problem("This is required: please answer it.")
    assert read_field_answer(EMAIL, "::nope", None, can_go_back=True) == Problem(
        "Not an email address: write it like name@example.com."  # "::" types ":nope", not the command
    )


def test_commands_at_a_field() -> None:
    assert read_field_answer(EMAIL, ":back", None, can_go_back=True) == Back()
    assert read_field_answer(EMAIL, ":b", None, can_go_back=False) == Problem("this is the first question")
    assert read_field_answer(EMAIL, ":help", None, can_go_back=False) == ShowHelp()
    assert read_field_answer(EMAIL, ":nope", None, can_go_back=False) == Problem(
        "unknown command :nope (type ::nope to answer with the text itself)"
    )
    with pytest.raises(Stop) as stopped:
        read_field_answer(EMAIL, ":decline", None, can_go_back=True)
    assert (stopped.value.action, stopped.value.how) == ("decline", ":decline")


# ------------------------------------------------------------------------------ review and consent


def test_review_answers() -> None:
    fields = [EMAIL, COLOURS, COUNT]
    # Enter alone never sends: sending is typed, so six Enters do not send a form nobody chose to send.
    assert read_review_answer(fields, "") == Problem(
        "nothing is sent until you type s · 1 to 3 changes an answer · :decline · :cancel"
    )
    assert read_review_answer(fields, "S") == Send()
    assert read_review_answer(fields, ":send") == Send()
    assert read_review_answer(fields, "2") == Change(1)
    assert read_review_answer(fields, "count") == Change(2)  # by name
    assert read_review_answer(fields, "colours") == Change(1)  # by title, any case
    assert read_review_answer(fields, "4") == Problem(
        "nothing is sent until you type s · 1 to 3 changes an answer · :decline · :cancel"
    )
    assert read_review_answer([], "x") == Problem("nothing is sent until you type s · :decline · :cancel")
    for text, action in (
        ("d", "decline"),
        ("No", "decline"),
        (":decline", "decline"),
        ("c", "cancel"),
        (":cancel", "cancel"),
    ):
        with pytest.raises(Stop) as stopped:
            read_review_answer(fields, text)
        assert (stopped.value.action, stopped.value.how) == (action, text)


def test_consent_to_open_a_url() -> None:
    assert read_consent("y") and read_consent("Open")
    assert not read_consent("maybe")
    assert not read_consent("")  # Enter alone is not a yes
    for text, action in (("n", "decline"), ("cancel", "cancel")):
        with pytest.raises(Stop) as stopped:
            read_consent(text)
        assert stopped.value.action == action


# ------------------------------------------------------------------------------ what is shown


def test_prompts() -> None:
    assert field_prompt(EMAIL, None) == [("class:label", "Email"), ("class:arrow", " \u203a ")]
    assert field_prompt(COUNT, 2)[1] == ("class:hint", " [2]")
    assert field_prompt(OK, None)[1:3] == [("class:hint", " (y/n)"), ("class:hint", " [skip]")]
    assert field_prompt(COLOURS, [])[1] == ("class:hint", " [none]")
    assert review_prompt(1)[1] == ("class:hint", " [s send · 1 change an answer · :decline · :cancel]")
    assert review_prompt(3)[1] == ("class:hint", " [s send · 1-3 change an answer · :decline · :cancel]")
    assert review_prompt(0)[1] == ("class:hint", " [s send · :decline · :cancel]")
    secret = form_fields({"type": "object", "properties": {"api_key": {"type": "string"}}})[0]
    assert field_prompt(secret, "hunter2")[1] == ("class:hint", " [••••••••]")  # never the secret itself
    assert field_completions(OK) == ["yes", "no"] and field_completions(COLOURS) == ["Red", "Green"]
    assert field_completions(EMAIL) == []


def test_option_numbers_line_up_past_nine() -> None:
    many = {"type": "string", "enum": [f"o{i}" for i in range(1, 12)]}
    field = form_fields({"type": "object", "properties": {"c": many}})[0]
    starts = [start for start, _, _ in option_marks(field, None)]
    assert starts[0] == "   ( )  1) " and starts[9] == "   ( ) 10) " and len({len(s) for s in starts}) == 1


def test_options_are_marked() -> None:
    assert option_marks(COLOURS, ["g"]) == [("   [ ] 1) ", "Red", False), ("   [x] 2) ", "Green", True)]
    choice = form_fields({"type": "object", "properties": {"c": {"type": "string", "enum": ["a\x1b", "b"]}}})[0]
    assert option_marks(choice, "b") == [("   ( ) 1) ", "a\ufffd", False), ("   (•) 2) ", "b", True)]


def test_review_rows_show_defaults_and_problems() -> None:
    values = {"email": "ada@example.com", "colours": None, "count": None, "ok": False}
    rows = review_rows([EMAIL, COLOURS, COUNT, OK], values, {"email": "bad\x1b"})
    assert [(r.number, r.question, r.answer, r.unset, r.problem) for r in rows] == [
        ("1", "Email *", "ada@example.com", False, "bad\ufffd"),
        ("2", "Colours", "—", True, ""),
        ("3", "count", "(default: 2)", True, ""),
        ("4", "ok", "no", False, ""),
    ]


def test_outcome_lines() -> None:
    shop = Origin(name="shop", title="The\x1b Shop")
    assert stopped_line(shop, Stop("decline", "d")) == "✗ Declined: The\ufffd Shop is told you will not answer."
    # A URL question's decline claims nothing it cannot know (a -32042 URL sends no reply at all).
    assert stopped_line(shop, Stop("decline", "n"), url=True) == "✗ Declined: nothing was opened."
    assert stopped_line(None, Stop("cancel", "Esc")) == "✗ Cancelled (Esc): unknown server is told you dismissed it."
    assert report_line("done", "S", "d.example") == ("✓ completed: S confirms you finished at d.example.", "green")
    assert report_line("timeout", "S", "d.example")[1] == "yellow"
    assert report_line("key", "S", "d.example")[1] == "dim"
    assert report_line("gone", "S", "d.example") == ("Stopped waiting for S: the connection is gone.", "yellow")


# ------------------------------------------------------------------------------ pieces


def test_multi_select_adds_and_removes() -> None:
    field = form_fields(SCHEMA)[1]
    assert parse(field, "green, 1", None) == ["g", "r"]
    assert parse(field, "+Red", ["g"]) == ["g", "r"]
    assert parse(field, "-2, +1", ["g"]) == ["r"]
    with pytest.raises(FieldError):
        parse(field, "+Blue", [])


def test_commands() -> None:
    assert command("hello") is None
    assert command(":)") is None
    assert command("::back") is None
    assert command(" :Back ") == "back"
    assert command(":b") == "back"
    for text, action in ((":decline", "decline"), (":cancel", "cancel")):
        with pytest.raises(Stop) as stopped:
            command(text)
        assert stopped.value.action == action


def test_clean() -> None:
    assert clean("a\nb\tc") == "a\nb\tc"
    assert clean("a\nb", lines=False) == "a\ufffdb"
    assert clean("\x1b[0m\u2066x") == "\ufffd[0m\ufffdx"


def test_the_dialogue_does_no_io() -> None:
    """The conversation's rules import no terminal, console or event loop: they are tested alone."""
    import ast
    import inspect

    from elicitkit.client.handlers.terminal import dialogue

    tree = ast.parse(inspect.getsource(dialogue))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "elicitkit.elicitation.fields" in imported  # the walk sees the imports
    for name in imported:
        assert name.split(".")[0] not in {"asyncio", "prompt_toolkit", "rich", "sys", "signal", "threading"}, name
