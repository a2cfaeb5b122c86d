"""Assertions on the questions asked: what passes, and the message a reader gets when one fails."""

from __future__ import annotations

import re

import pytest

from elicitkit import FormRequest, UrlRequest
from elicitkit.elicitation import Origin
from elicitkit.testing.kit import Questions, schema_diff

SCHEMA = {
    "type": "object",
    "properties": {"date": {"type": "string"}, "guests": {"type": "integer", "default": 2}},
    "required": ["date"],
}


@pytest.fixture
def asked() -> Questions:
    questions = Questions()
    origin = Origin(name="booking")
    questions.record(FormRequest("Which evening?", SCHEMA, origin=origin), "2025-11-25")
    questions.record(UrlRequest("Pay the deposit.", "https://pay.example.com/deposit/7", origin=origin), "2025-11-25")
    return questions


def test_questions_are_numbered_in_asking_order(asked: Questions) -> None:
    form, url = asked
    assert (form.number, form.mode, form.fields, form.server) == (1, "form", ("date", "guests"), "booking")
    assert (url.number, url.mode, url.domain, url.schema) == (2, "url", "pay.example.com", None)
    assert asked.messages == ["Which evening?", "Pay the deposit."]
    asked.assert_count(2)
    asked.assert_messages("Which evening?", re.compile(r"Pay the \w+\."))
    form.assert_schema(SCHEMA)
    form.assert_fields("guests", "date")
    form.assert_mode("form")
    url.assert_url("https://pay.example.com/deposit/7", domain="pay.example.com")
    url.assert_url(re.compile(r"https://pay\.example\.com/deposit/\d+"))


def test_a_wrong_order_shows_each_question_side_by_side(asked: Questions) -> None:
    with pytest.raises(AssertionError) as failed:
        asked.assert_messages("Pay the deposit.", "Which evening?", re.compile("Anything else.*"))
    assert str(failed.value) == (
        "the questions asked are not the ones expected:\n"
        "  #1 differs  expected 'Pay the deposit.', asked 'Which evening?'\n"
        "  #2 differs  expected 'Which evening?', asked 'Pay the deposit.'\n"
        "  #3 missing  expected /Anything else.*/, never asked"
    )


def test_a_question_not_expected_is_named(asked: Questions) -> None:
    with pytest.raises(AssertionError) as failed:
        asked.assert_messages("Which evening?")
    assert str(failed.value).endswith("  #2 extra    'Pay the deposit.' was asked, not expected")


def test_count_mismatch_lists_what_was_asked(asked: Questions) -> None:
    with pytest.raises(AssertionError) as failed:
        asked.assert_count(1)
    assert str(failed.value) == (
        "expected 1 question(s), 2 question(s) asked: #1 'Which evening?'; #2 'Pay the deposit.'"
    )
    with pytest.raises(AssertionError, match=r"^no question #3: 2 question\(s\) asked"):
        asked[2]
    empty = Questions()
    with pytest.raises(AssertionError, match=r"^expected 1 question\(s\), nothing was asked$"):
        empty.assert_count(1)
    empty.assert_nothing_asked()


def test_a_schema_mismatch_is_a_readable_diff(asked: Questions) -> None:
    expected = {**SCHEMA, "properties": {"date": {"type": "string", "format": "date"}, "guests": {"type": "integer"}}}
    with pytest.raises(AssertionError) as failed:
        asked[0].assert_schema(expected)
    message = str(failed.value)
    assert message.startswith("question #1 'Which evening?': the requested schema differs:\n--- expected schema\n")
    assert '-      "format": "date",\n' in message
    assert '+      "default": 2,\n' in message
    assert schema_diff(SCHEMA, SCHEMA) == ""


def test_fields_mode_and_url_failures_say_what_was_asked(asked: Questions) -> None:
    form, url = asked
    with pytest.raises(AssertionError) as fields:
        form.assert_fields("date", "time")
    assert str(fields.value) == (
        "question #1 'Which evening?': expected fields ['date', 'time'], asked ['date', 'guests'] "
        "(missing ['time'], extra ['guests'])"
    )
    mode = r"^question #2 'Pay the deposit\.': expected a form question, it was a url"
    with pytest.raises(AssertionError, match=mode):
        url.assert_mode("form")
    with pytest.raises(AssertionError) as domain:
        url.assert_url(domain="bank.example.com")
    assert str(domain.value) == (
        "question #2 'Pay the deposit.': expected a url on 'bank.example.com', it sends the person to "
        "'pay.example.com' (https://pay.example.com/deposit/7)"
    )
    with pytest.raises(AssertionError, match=re.escape("expected the url 'https://pay.example.com/', asked")):
        url.assert_url("https://pay.example.com/")
    with pytest.raises(AssertionError, match="expected a url question, it was a form question"):
        form.assert_url(domain="pay.example.com")
    with pytest.raises(AssertionError, match="expected a form with a schema, it was a url question"):
        url.assert_schema(SCHEMA)
    with pytest.raises(AssertionError, match=re.escape("expected the message /Which day\\?/")):
        form.assert_message(re.compile(r"Which day\?"))
    form.assert_message("Which evening?")


def test_snapshot_keeps_message_mode_and_schema_or_url(asked: Questions) -> None:
    assert [q.snapshot() for q in asked] == [
        {"mode": "form", "message": "Which evening?", "requestedSchema": SCHEMA},
        {"mode": "url", "message": "Pay the deposit.", "url": "https://pay.example.com/deposit/7"},
    ]
    asked.clear()
    assert len(asked) == 0
