"""The browser form's pages as pure functions: escaping, the CSP, errors, and reading a post back."""

from __future__ import annotations

import base64
import hashlib
import re
from datetime import datetime
from typing import Any

from elicitkit.elicitation.fields import form_fields
from elicitkit.elicitation.page import (
    CSP,
    SECURITY_HEADERS,
    done_page,
    error_page,
    form_page,
    initial_raw,
    input_name,
    openable,
    read_answers,
    review_page,
    url_page,
    waiting_page,
)
from elicitkit.elicitation.requests import Origin
from elicitkit.elicitation.urls import assess_url

EVIL = '<script>alert("x")</script>'
ORIGIN = Origin(name=f"srv{EVIL}", version=EVIL, title=f"The {EVIL} Shop", location=EVIL)
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": f"Name {EVIL}", "description": EVIL, "minLength": 2},
        "size": {"type": "string", "oneOf": [{"const": f"s{EVIL}", "title": f"Small {EVIL}"}]},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "minItems": 1},
        "count": {"type": "integer", "minimum": 1, "default": 2},
        "ok": {"type": "boolean", "default": False},
        "when": {"type": "string", "format": "date-time"},
    },
    "required": ["name", "tags"],
}
FIELDS = form_fields(SCHEMA)
RAW = {f.name: initial_raw(f) for f in FIELDS}


def pages() -> list[str]:
    content = {"name": EVIL, "size": f"s{EVIL}", "tags": ["a"], "count": 2, "ok": False}
    return [
        form_page(message=EVIL, origin=ORIGIN, fields=FIELDS, raw=RAW, errors={}, action="/q/t", csrf="c", title=EVIL),
        review_page(
            message=EVIL, origin=ORIGIN, fields=FIELDS, content=content, action="/q/t", csrf="c", review_id="r"
        ),
        url_page(message=EVIL, origin=ORIGIN, url=f"https://example.com/{EVIL}", action="/q/t", csrf="c"),
        done_page(ORIGIN, "sent"),
        waiting_page(ORIGIN, f"https://example.com/{EVIL}", "waiting"),
        error_page(404, EVIL, EVIL),
    ]


def test_every_server_string_is_escaped_and_no_page_has_a_script() -> None:
    for html in pages():
        assert "<script" not in html
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
        assert "onerror" not in html.lower()


def test_the_csp_allows_exactly_the_inline_stylesheet() -> None:
    assert SECURITY_HEADERS["Content-Security-Policy"] == CSP
    assert "default-src 'none'" in CSP and "script-src" not in CSP
    for html in pages():
        styles = re.findall(r"<style>(.*?)</style>", html, re.S)
        assert len(styles) == 1
        digest = base64.b64encode(hashlib.sha256(styles[0].encode()).digest()).decode()
        assert f"'sha256-{digest}'" in CSP


def test_the_form_shows_errors_where_they_belong() -> None:
    errors = {"name": "too short", None: "the form as a whole"}
    html = form_page(
        message="Hi",
        origin=None,
        fields=FIELDS,
        raw=RAW,
        errors=errors,
        action="/q/tok",
        csrf="sec",
        notice="Look again",
    )
    assert 'action="/q/tok"' in html and 'name="csrf" value="sec"' in html
    assert '<p class="notice" role="status">Look again</p>' in html
    # One summary, focused on load, in form order, each item a link to its field; no alert per field.
    assert 'id="summary" role="alert" tabindex="-1" autofocus' in html and "2 answers need a change" in html
    assert html.index("the form as a whole") < html.index('href="#f0"')
    assert '<li><a href="#f0"><bdi>Name &lt;script&gt;' in html
    name = input_name(0)
    assert f'<p class="error" id="{name}-error"><bdi>too short</bdi></p>' in html
    assert html.count('role="alert"') == 1
    # The description is linked to its input, with the rules and the error.
    assert f'aria-describedby="{name}-desc {name}-rules {name}-error" aria-invalid="true"' in html
    assert "an unknown server" in html and "<title>Fix your answers: Question from An unknown server</title>" in html


def test_choices_are_not_bold_labels_and_date_pickers_do_not_promise_a_format() -> None:
    html = form_page(message="Hi", origin=None, fields=FIELDS, raw=RAW, errors={}, action="/q/t", csrf="c")
    assert ".field>label:not(.choice)" in html  # the field's label is bold, its options are not
    assert "YYYY" not in html  # the picker shows the person's own date format


def test_pattern_hints_and_errors_are_in_words() -> None:
    schema = {
        "type": "object",
        "properties": {
            "code": {"type": "string", "pattern": "^[A-Z]{3}-\\d{3}$", "title": "Code"},
            "ref": {"type": "string", "pattern": "^[A-Z]{3}-\\d{3}$", "description": "Like ABC-123"},
        },
    }
    fields = form_fields(schema)
    html = form_page(message="m", origin=None, fields=fields, raw={}, errors={}, action="/q/t", csrf="c")
    assert "3 capital letters, then “-”, then 3 digits" in html and not re.search(r'class="rules">[^<]*\\d', html)
    _, _, problems = read_answers(schema, fields, {"f0": ["abc-123"], "f1": ["x"]})
    assert problems == {
        "code": "Not in the expected form: 3 capital letters, then “-”, then 3 digits.",
        "ref": "Not in the expected form: Like ABC-123.",
    }


def test_a_secret_is_masked_and_never_shown_back() -> None:
    schema = {"type": "object", "properties": {"api_key": {"type": "string"}}, "required": ["api_key"]}
    fields = form_fields(schema)
    form = form_page(
        message="m", origin=None, fields=fields, raw={"api_key": ["s3cr3t"]}, errors={}, action="/q/t", csrf="c"
    )
    assert 'type="password"' in form and "s3cr3t" not in form
    review = review_page(
        message="m", origin=None, fields=fields, content={"api_key": "s3cr3t"}, action="/q/t", csrf="c", review_id="r"
    )
    assert "s3cr3t" not in review and "(hidden)" in review


def test_a_look_alike_domain_stops_and_names_the_foreign_letter() -> None:
    page = url_page(message="m", origin=None, url="https://xn--pple-43d.com/", action="/q/t", csrf="c")
    assert "Stop: this domain may be pretending" in page and "CYRILLIC SMALL LETTER A" in page
    assert 'name="confirm"' in page and "Open anyway" in page
    assert page.index('value="decline"') < page.index('value="open"')  # Decline comes first, as the main button


def test_a_url_that_cannot_be_opened_gets_no_open_button() -> None:
    good = url_page(message="m", origin=None, url="https://pay.example.com/x", action="/q/t", csrf="c")
    assert 'value="open"' in good
    bad = url_page(message="m", origin=None, url="javascript:alert(1)", action="/q/t", csrf="c")
    assert 'value="open"' not in bad and "cannot be opened from here" in bad
    idn = url_page(message="m", origin=None, url="https://xn--pple-43d.com/", action="/q/t", csrf="c")
    assert "xn--pple-43d.com" in idn and "displayed as" in idn
    assert not openable("https://ex\u200bample.com/", assess_url("https://ex\u200bample.com/"))
    assert not openable("https:///nohost", assess_url("https:///nohost"))


def test_posted_defaults_read_back_to_the_defaults() -> None:
    posted = {input_name(i): raw for i, raw in enumerate(RAW[f.name] for f in FIELDS)}
    posted[input_name(0)] = ["Ada"]
    posted[input_name(2)] = ["a", "b"]
    raw, values, problems = read_answers(SCHEMA, FIELDS, posted)
    assert problems == {}
    assert values == {"name": "Ada", "size": None, "tags": ["a", "b"], "count": 2, "ok": False, "when": None}
    assert raw["ok"] == ["no"] and raw["tags"] == ["a", "b"]


def test_posted_problems_are_reported_per_field() -> None:
    posted = {input_name(0): ["A"], input_name(3): ["many"], input_name(5): ["2024-05-06T07:08"]}
    raw, values, problems = read_answers(SCHEMA, FIELDS, posted)
    assert problems["count"] == "Not a whole number: write digits only, like 42."
    assert "name" in problems  # shorter than minLength 2
    assert "tags" in problems  # nothing ticked on a required multi-select: "none", which is too few
    assert values["tags"] == []
    assert raw["count"] == ["many"]  # shown again as typed
    # A datetime-local input has no zone: the answer gets this machine's offset, as RFC 3339 wants.
    assert values["when"] == datetime(2024, 5, 6, 7, 8).astimezone().isoformat(timespec="seconds")


def test_the_renderer_stays_pure() -> None:
    """No server, no asyncio, no client internals: so a server-hosted page can share it (issue 15)."""
    import ast
    import inspect

    from elicitkit.elicitation import page

    tree = ast.parse(inspect.getsource(page))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "elicitkit.elicitation.fields" in imported  # the walk sees the imports
    allowed = {"elicitkit.elicitation.fields", "elicitkit.elicitation.urls"}
    for name in imported:
        root = name.split(".")[0]
        assert root not in {"asyncio", "anyio", "starlette", "uvicorn", "socket", "webbrowser", "httpx"}, name
        assert not name.startswith("elicitkit.") or name in allowed or name.startswith("elicitkit.elicitation"), name


def test_a_32042_reason_is_escaped_and_comes_before_the_buttons() -> None:
    page = url_page(message="m", origin=None, url="https://pay.example.com/x", action="/q/t", csrf="c", reason=EVIL)
    assert "&lt;script&gt;" in page and "<script" not in page
    assert page.index('id="reason"') < page.index('id="consent"')
    same = url_page(message="m", origin=None, url="https://pay.example.com/x", action="/q/t", csrf="c", reason="m")
    assert 'id="reason"' not in same  # the same words twice say nothing more


# -- issue 25: what the pages tell a person


def _form(schema: dict[str, Any], message: str = "Question?") -> str:
    fields = form_fields(schema)
    raw = {f.name: initial_raw(f) for f in fields}
    return form_page(
        message=message, origin=Origin(name="s"), fields=fields, raw=raw, errors={}, action="/q/t", csrf="c"
    )


def test_labels_are_the_authors_words_not_python_names() -> None:
    from pydantic import BaseModel, Field

    from elicitkit.elicitation.schema import form_for

    class ServerSpec(BaseModel):
        cpu_cores: int = Field(description="CPU cores")
        api_key: str

    schema = form_for(ServerSpec).schema
    by_name = {f.name: f for f in form_fields(schema)}
    assert by_name["cpu_cores"].label == "CPU cores" and by_name["cpu_cores"].help is None
    assert by_name["api_key"].label == "API key"
    page = _form({**schema, "title": "ServerSpec"})
    assert ">Cpu cores<" not in page and page.count("CPU cores") == 1  # a label, not also its description
    assert "ServerSpec" not in page  # a class name is no heading for a person
    assert form_fields(form_for(int).schema)[0].label == "Your answer"
    titled = {"type": "object", "properties": {"n": {"type": "string", "title": "Nickname", "description": "Short"}}}
    assert form_fields(titled)[0].label == "Nickname" and form_fields(titled)[0].help == "Short"


def test_a_destructive_yes_no_has_one_main_button_the_safe_one() -> None:
    def classes(page: str) -> dict[str, str]:
        return dict(
            (m.group(2), m.group(1) or "")
            for m in re.finditer(r'<button type="submit"(?: class="(\w+)")? name="action" value="(yes|no)"', page)
        )

    schema = {"type": "object", "properties": {"ok": {"type": "boolean", "title": "Delete the old backups?"}}}
    assert classes(_form(schema, "Clean up?")) == {"yes": "danger", "no": "primary"}
    plain = {"type": "object", "properties": {"ok": {"type": "boolean", "title": "Shall we play?"}}}
    assert classes(_form(plain, "A game")) == {"yes": "primary", "no": ""}


def test_a_date_described_as_yyyy_mm_dd_is_typed_not_picked() -> None:
    typed = {"type": "object", "properties": {"d": {"type": "string", "format": "date", "description": "YYYY-MM-DD"}}}
    picked = {"type": "object", "properties": {"d": {"type": "string", "format": "date", "title": "Day"}}}
    assert 'type="date"' not in _form(typed) and 'type="text"' in _form(typed)
    assert "A date (YYYY-MM-DD)" in _form(typed)
    assert 'type="date"' in _form(picked)


def test_a_secret_can_be_revealed_on_the_review_page_when_asked() -> None:
    schema = {"type": "object", "properties": {"password": {"type": "string"}}}
    fields = form_fields(schema)
    common: dict[str, Any] = dict(message="m", origin=None, fields=fields, content={"password": "hunter2"},
                                  action="/q/t", csrf="c", review_id="r")  # fmt: skip
    hidden = review_page(**common)
    shown = review_page(**common, revealed=True)
    assert "hunter2" not in hidden and 'value="reveal"' in hidden
    assert "hunter2" in shown and 'value="hide"' in shown


def test_the_page_says_who_serves_it() -> None:
    client = done_page(Origin(name="s"), "sent")
    server = done_page(Origin(name="s"), "sent", served_by="https://mcp.example.com")
    assert "your MCP client on this computer" in client
    assert "the MCP server at <bdi>https://mcp.example.com</bdi>" in server and "this computer" not in server


def test_the_waiting_page_links_the_site_when_no_browser_opened_it() -> None:
    url = "https://pay.example.com/deposit"
    opened = waiting_page(Origin(name="s"), url, "waiting")
    not_opened = waiting_page(Origin(name="s"), url, "waiting", opened=False)
    assert "It opened in a new tab or window" in opened
    assert "It opened" not in not_opened and f'href="{url}"' in not_opened and "No browser could open it" in not_opened


def test_done_pages_say_answered_already_and_go_back_to_the_chat() -> None:
    again = done_page(Origin(name="s"), "sent", already=True)
    later = done_page(Origin(name="s"), "sent", elsewhere=True)
    assert 'id="already"' in again and "answered already" in again
    assert 'id="go-back"' in later and "go back to your chat" in later
    assert 'id="go-back"' not in done_page(Origin(name="s"), "declined", elsewhere=True)


def test_a_look_alike_written_in_unicode_is_named_in_ascii() -> None:
    from elicitkit.elicitation.page import confirmed_domain

    facts = assess_url("https://www.\u0440aypal.com/")
    assert facts.ascii_host == "www.xn--aypal-uye.com"
    assert confirmed_domain("www.xn--aypal-uye.com", facts) and confirmed_domain("WWW.XN--AYPAL-UYE.COM.", facts)
    assert not confirmed_domain("www.paypal.com", facts) and not confirmed_domain("", facts)
    page = url_page(message="Pay", origin=None, url="https://www.\u0440aypal.com/", action="/q/t", csrf="c")
    assert "its real name, in plain letters, is <strong><bdi>www.xn--aypal-uye.com</bdi>" in page
    assert "CYRILLIC SMALL LETTER ER" in page
