"""Answer a server's questions on a one-time page in the user's own browser.

:class:`BrowserHandler` serves each question from a small ASGI app (Starlette pieces on
uvicorn, started on first use inside the client's event loop) bound to ``127.0.0.1`` on a
random port, at a URL that carries a one-time token. A form question becomes an HTML form
with a review step; a URL question becomes a consent page that shows where the link really
goes. The page judges input exactly as the terminal form and the server do: each value goes
through :meth:`FormField.parse` and the whole answer through :func:`check_form`, so browser
validation is a convenience and never the gate.

The page runs on the user's machine but shows what a possibly hostile server wrote, so:

- the listener is loopback only and each question's token (``secrets.token_urlsafe``) dies
  when the question ends; an unknown or spent token gets 404;
- the ``Host`` header must name our own address (DNS rebinding), a POST must carry the
  page's CSRF secret and must not come from a foreign ``Origin`` or ``Sec-Fetch-Site``;
- every response carries a Content-Security-Policy that allows no script, no external
  resource, only the page's own inline stylesheet (by hash) and forms posting to itself,
  plus ``no-store`` and anti-framing headers;
- every string from the server (message, titles, descriptions, names, URL) is HTML-escaped,
  and only ``http``/``https`` URLs can be opened, after explicit consent.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import html
import inspect
import logging
import math
import re
import secrets
import socket
import sys
import unicodedata
import webbrowser
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import TracebackType
from typing import Any, Literal
from urllib.parse import parse_qsl

import anyio
import uvicorn
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.types import Receive, Scope, Send

from elicitkit.client.handlers.fields import (
    FieldError,
    FieldKind,
    FormField,
    answer_content,
    check_form,
    form_fields,
)
from elicitkit.client.handlers.urls import UrlAssessment, assess_url
from elicitkit.elicitation.errors import InvalidAnswer
from elicitkit.elicitation.requests import ElicitRequest, FormRequest, Origin, UrlRequest
from elicitkit.elicitation.results import ElicitationResult

__all__ = ["BrowserHandler", "open_in_browser"]

logger = logging.getLogger("elicitkit.client.handlers.browser")

LOOPBACK = "127.0.0.1"
MAX_BODY = 1 << 20  # a form post larger than this is refused (413)
_MAX_FIELDS = 10_000
_RADIO_LIMIT = 5  # single-selects with more options than this become a <select>
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATETIME_LOCAL = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?")
_HTML_NUMBER = re.compile(r"-?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?")
_INPUT_TYPES = {"email": "email", "uri": "url", "date": "date", "date-time": "datetime-local"}

OpenUrl = Callable[[str], object]
"""Shows a URL to the user; called in the event loop, may return an awaitable (awaited)."""

# ------------------------------------------------------------------------------ the look

_CSS = """
:root{color-scheme:light dark;--fg:#1b1f24;--muted:#5b6470;--bg:#f3f4f6;--card:#fff;--line:#d5d9de;
--accent:#1f5fd1;--accent-fg:#fff;--bad:#b3261e;--badbg:#fdecea;--warn:#7a4d00;--warnbg:#fff4d6}
@media (prefers-color-scheme:dark){:root{--fg:#e6e8eb;--muted:#9aa4af;--bg:#0f1216;--card:#181c22;
--line:#2d333b;--accent:#5b93ff;--accent-fg:#0b0d10;--bad:#ff8a80;--badbg:#3a1d1b;--warn:#ffcf70;
--warnbg:#2c2410}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.5 system-ui,-apple-system,"Segoe UI",
Roboto,sans-serif}
main{max-width:44rem;margin:2rem auto;padding:1.5rem 1.75rem;background:var(--card);
border:1px solid var(--line);border-radius:12px}
h1{font-size:1.35rem;margin:.25rem 0 1rem}h2{font-size:1.1rem;margin:1.25rem 0 .5rem}
.asker{border-bottom:1px solid var(--line);padding-bottom:.75rem;margin-bottom:1rem}
.kicker{margin:0;color:var(--muted);font-size:.85rem;text-transform:uppercase;letter-spacing:.04em}
.who{margin:.1rem 0;font-size:1.2rem;font-weight:600}.who .ver{font-weight:400;color:var(--muted);
font-size:.95rem}
.where{margin:0;color:var(--muted);font-size:.9rem;overflow-wrap:anywhere}
.trust{color:var(--muted);font-size:.85rem;margin:.5rem 0 0}
.message{white-space:pre-wrap;overflow-wrap:anywhere;background:var(--bg);border-left:4px solid var(--accent);
padding:.75rem 1rem;border-radius:6px;margin:0 0 1.25rem}
.field{margin:0 0 1.1rem;padding:0;border:0}
.field>label,.field>legend{display:block;font-weight:600;margin-bottom:.2rem;padding:0}
.req{color:var(--bad);font-weight:600;font-size:.8rem;margin-left:.4rem}
.opt{color:var(--muted);font-weight:400;font-size:.8rem;margin-left:.4rem}
.desc{margin:.1rem 0 .3rem;color:var(--muted);overflow-wrap:anywhere}
.rules{margin:.1rem 0 .3rem;color:var(--muted);font-size:.85rem;overflow-wrap:anywhere}
input[type=text],input[type=email],input[type=url],input[type=date],input[type=datetime-local],
input[type=number],select{width:100%;max-width:30rem;padding:.45rem .55rem;font:inherit;color:inherit;
background:var(--card);border:1px solid var(--line);border-radius:6px}
.choice{display:block;margin:.15rem 0}.choice input{margin-right:.45rem}
.invalid input,.invalid select{border-color:var(--bad)}
.error{color:var(--bad);background:var(--badbg);border-radius:6px;padding:.3rem .6rem;margin:.35rem 0 0;
max-width:30rem}
.summary{color:var(--bad);background:var(--badbg);border-radius:8px;padding:.6rem .9rem;margin:0 0 1rem}
.notice{background:var(--warnbg);color:var(--warn);border-radius:8px;padding:.6rem .9rem;margin:0 0 1rem}
.actions{display:flex;flex-wrap:wrap;gap:.6rem;margin-top:1.5rem}
button{font:inherit;padding:.5rem 1.1rem;border-radius:8px;border:1px solid var(--line);
background:var(--card);color:var(--fg);cursor:pointer}
button.primary{background:var(--accent);border-color:var(--accent);color:var(--accent-fg);font-weight:600}
.spacer{flex:1}
dl.answers{margin:0;display:grid;grid-template-columns:minmax(8rem,auto) 1fr;gap:.4rem 1rem}
dl.answers .answer{display:contents}dl.answers dt{font-weight:600}
dl.answers dd{margin:0;overflow-wrap:anywhere;white-space:pre-wrap}
.none{color:var(--muted);font-style:italic}
.url{display:block;font:1rem/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;word-break:break-all;
background:var(--bg);padding:.75rem 1rem;border-radius:6px}
.url .rest{color:var(--muted)}.url .host{color:var(--fg);font-weight:700;font-size:1.1em}
.domain{font-size:1.1rem}.domain strong{font-size:1.2rem}
ul.warnings{background:var(--warnbg);color:var(--warn);border-radius:8px;padding:.6rem .9rem .6rem 2rem}
""".strip()

_CSS_HASH = "sha256-" + base64.b64encode(hashlib.sha256(_CSS.encode()).digest()).decode()
_CSP = f"default-src 'none'; style-src '{_CSS_HASH}'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
_SECURITY_HEADERS = {
    "Content-Security-Policy": _CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # a same-origin POST keeps its Origin; other sites learn nothing
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


def _e(text: object) -> str:
    """Escape for HTML text and quoted attribute values."""
    return html.escape(str(text), quote=True)


def _attrs(attrs: Mapping[str, str | None]) -> str:
    """``key="value"`` pairs, escaped; a None value is a bare boolean attribute."""
    return "".join(f" {k}" if v is None else f' {k}="{_e(v)}"' for k, v in attrs.items())


def _document(title: str, page: str, body: str) -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>"
        f'<body class="page-{page}"><main>{body}</main></body></html>'
    )


def _asker_name(origin: Origin | None) -> str:
    return origin.display_name if origin else "An unknown server"


def _asker(origin: Origin | None) -> str:
    """Who asks: display name, version and where the client reached it; all from the server, all escaped."""
    if origin is None:
        who = '<p class="who"><bdi>an unknown server</bdi></p>'
        where = ""
    else:
        version = f' <span class="ver">version <bdi>{_e(origin.version)}</bdi></span>' if origin.version else ""
        who = f'<p class="who"><bdi>{_e(origin.display_name)}</bdi>{version}</p>'
        facts = []
        if origin.title and origin.title != origin.name:
            facts.append(f"server name <bdi>{_e(origin.name)}</bdi>")
        if origin.location:
            facts.append(f"connected at <bdi>{_e(origin.location)}</bdi>")
        where = f'<p class="where">{" · ".join(facts)}</p>' if facts else ""
    return (
        '<header class="asker"><p class="kicker">An MCP server is asking</p>'
        f"{who}{where}"
        '<p class="trust">This page is served by your MCP client on this computer. The question and'
        " everything in the form come from the server: answer only if you trust it.</p></header>"
    )


# ------------------------------------------------------------------------------ a question


@dataclass(eq=False)
class _Question:
    """One open question: what was asked, where the user is in it, and how it ended."""

    request: ElicitRequest
    token: str
    csrf: str
    done: anyio.Event
    fields: list[FormField]
    raw: dict[str, list[str]]  # what the inputs hold, as the browser sends it, per field name
    stage: Literal["form", "review"] = "form"
    errors: dict[str | None, str] = field(default_factory=dict)
    content: dict[str, Any] | None = None  # the checked answer awaiting "Send"
    review_id: str = ""
    result: ElicitationResult[Any] | None = None


def _input_name(index: int) -> str:
    return f"f{index}"  # never the property name: that comes from the server and may clash


def _checkbox(f: FormField) -> bool:
    """A boolean with a default is a checkbox; without one, yes/no radios so "unset" stays possible."""
    return f.kind is FieldKind.BOOLEAN and f.has_default


def _number_text(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)  # repr: the shortest exact form


def _to_datetime_local(value: str) -> str | None:
    """An RFC 3339 date-time as a ``datetime-local`` input value, in local time; None if unreadable."""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is not None:
        moment = moment.astimezone().replace(tzinfo=None)
    return moment.strftime("%Y-%m-%dT%H:%M" if moment.second == 0 and not moment.microsecond else "%Y-%m-%dT%H:%M:%S")


def _from_input(f: FormField, text: str) -> str:
    """What an input sent, as the text :meth:`FormField.parse` expects.

    A ``datetime-local`` input sends local wall time without a zone; the answer must be
    RFC 3339, so the local offset of this machine (the user's) is added.
    """
    text = text.strip()
    if f.format == "date-time" and _DATETIME_LOCAL.fullmatch(text):
        moment = datetime.fromisoformat(text).astimezone()
        return moment.isoformat(timespec="seconds" if not moment.microsecond else "microseconds")
    return text


def _initial_raw(f: FormField) -> list[str]:
    """The inputs' starting state: the schema's default, in input form."""
    if not f.has_default or f.default is None:
        return []
    default = f.default
    if f.kind is FieldKind.MULTI:
        return [str(v) for v in default] if isinstance(default, list) else []
    if f.kind is FieldKind.BOOLEAN:
        return ["yes" if default is True else "no"]
    if f.kind in (FieldKind.NUMBER, FieldKind.INTEGER):
        return [_number_text(default)]
    if f.format == "date-time" and isinstance(default, str):
        return [_to_datetime_local(default) or default]
    return [str(default)]


def _read_answers(
    request: FormRequest, fields: list[FormField], posted: Mapping[str, list[str]]
) -> tuple[dict[str, list[str]], dict[str, Any], dict[str | None, str]]:
    """A posted form -> (raw inputs to show again, parsed values, problems by field name).

    The same two steps as every other UI: :meth:`FormField.parse` per value, then
    :func:`check_form` on the whole answer (defaults filled in, judged as the server will).
    """
    raw: dict[str, list[str]] = {}
    values: dict[str, Any] = {}
    problems: dict[str | None, str] = {}
    for index, f in enumerate(fields):
        sent = posted.get(_input_name(index), [])
        try:
            if f.kind is FieldKind.MULTI:
                raw[f.name] = list(sent)
                ticked = [s for s in sent if s.strip()]
                if ticked:
                    values[f.name] = f.parse_choices(ticked)
                else:  # nothing ticked: "none of these" when the field must be answered or had a default
                    values[f.name] = [] if f.required or f.has_default else None
            elif _checkbox(f):
                raw[f.name] = ["yes" if "yes" in sent else "no"]
                values[f.name] = f.parse(raw[f.name][0])
            else:
                text = sent[-1] if sent else ""
                raw[f.name] = [text]
                values[f.name] = f.parse(_from_input(f, text))
        except FieldError as exc:
            problems[f.name] = str(exc)
    for name, reason in check_form(request.requested_schema, values).items():
        problems.setdefault(name, reason)
    return raw, values, problems


# ------------------------------------------------------------------------------ rendering


def _rules(f: FormField) -> str:
    text = "; ".join(f.constraints())
    return f'<p class="rules">{_e(text[:1].upper() + text[1:])}</p>' if text else ""


def _label_marks(f: FormField) -> str:
    return ' <span class="req">required</span>' if f.required else ' <span class="opt">optional</span>'


def _choice(kind: str, name: str, value: str, title: str, checked: bool, extra: Mapping[str, str | None]) -> str:
    attrs: dict[str, str | None] = {"type": kind, "name": name, "value": value, **extra}
    if checked:
        attrs["checked"] = None
    return f'<label class="choice"><input{_attrs(attrs)}><bdi>{_e(title)}</bdi></label>'


def _field_html(index: int, f: FormField, raw: list[str], error: str | None) -> str:
    """One field: label, required mark, description, rules in words, the input, and its error."""
    name = _input_name(index)
    ids = [f"{name}-rules"] + ([f"{name}-error"] if error else [])
    common: dict[str, str | None] = {"aria-describedby": " ".join(ids)}
    if error:
        common["aria-invalid"] = "true"
    must = f.required and not f.has_default  # with a default an empty input is fine: the default fills it
    desc = f'<p class="desc"><bdi>{_e(f.description)}</bdi></p>' if f.description else ""
    rules = f'<div id="{name}-rules">{_rules(f)}</div>'
    err = f'<p class="error" id="{name}-error" role="alert">{_e(error)}</p>' if error else ""
    head = f"<bdi>{_e(f.label)}</bdi>{_label_marks(f)}"
    group = f.kind in (FieldKind.MULTI, FieldKind.BOOLEAN) or (
        f.kind is FieldKind.CHOICE and len(f.options) <= _RADIO_LIMIT
    )
    css = "field invalid" if error else "field"
    if group and not _checkbox(f):
        body = _group_inputs(name, f, raw, must, common)
        return (
            f'<fieldset class="{css}" data-name="{_e(f.name)}" data-kind="{f.kind.value}">'
            f"<legend>{head}</legend>{desc}{rules}{body}{err}</fieldset>"
        )
    if _checkbox(f):
        box = _choice("checkbox", name, "yes", "Yes", raw == ["yes"], {"id": name, **common})
        control = box
    elif f.kind is FieldKind.CHOICE:
        control = _select(name, f, raw, must, common)
    else:
        control = _text_input(name, f, raw, must, common)
    return (
        f'<div class="{css}" data-name="{_e(f.name)}" data-kind="{f.kind.value}">'
        f'<label for="{name}">{head}</label>{desc}{rules}{control}{err}</div>'
    )


def _group_inputs(name: str, f: FormField, raw: list[str], must: bool, common: dict[str, str | None]) -> str:
    extra = {**common, **({"required": None} if must else {})}
    if f.kind is FieldKind.MULTI:
        return "".join(_choice("checkbox", name, o.value, o.title, o.value in raw, common) for o in f.options)
    yes_no = [("yes", "Yes"), ("no", "No")]
    options = yes_no if f.kind is FieldKind.BOOLEAN else [(o.value, o.title) for o in f.options]
    current = raw[-1] if raw else ""
    out = [_choice("radio", name, v, t, v == current, extra) for v, t in options]
    if not f.required and not f.has_default:  # a radio cannot be unticked: offer "no answer" explicitly
        out.append(_choice("radio", name, "", "(no answer)", current == "", common))
    return "".join(out)


def _select(name: str, f: FormField, raw: list[str], must: bool, common: dict[str, str | None]) -> str:
    current = raw[-1] if raw else ""
    attrs: dict[str, str | None] = {"id": name, "name": name, **common}
    if must:
        attrs["required"] = None
    placeholder = "Choose one…" if f.required else "(no answer)"
    options = [f'<option value=""{" selected" if current == "" else ""}>{_e(placeholder)}</option>']
    for o in f.options:
        selected = " selected" if o.value == current else ""
        options.append(f'<option value="{_e(o.value)}"{selected}>{_e(o.title)}</option>')
    return f"<select{_attrs(attrs)}>{''.join(options)}</select>"


def _text_input(name: str, f: FormField, raw: list[str], must: bool, common: dict[str, str | None]) -> str:
    value = raw[-1] if raw else ""
    attrs: dict[str, str | None] = {"id": name, "name": name}
    s = f.schema
    if f.kind in (FieldKind.NUMBER, FieldKind.INTEGER):
        # A number input shows nothing for text it cannot read: keep a refused entry visible as text.
        kind = "number" if not value or _HTML_NUMBER.fullmatch(value) else "text"
        attrs.update(type=kind, step="1" if f.kind is FieldKind.INTEGER else "any")
        attrs["inputmode"] = "numeric" if f.kind is FieldKind.INTEGER else "decimal"
        for key, attr in (("minimum", "min"), ("maximum", "max")):
            if isinstance(s.get(key), (int, float)) and not isinstance(s.get(key), bool):
                attrs[attr] = _number_text(s[key])
    else:
        kind = _INPUT_TYPES.get(f.format or "", "text")
        picker = {"date": _DATE, "datetime-local": _DATETIME_LOCAL}.get(kind)
        if picker is not None and value and not picker.fullmatch(value):
            kind = "text"  # a picker shows nothing for a value it cannot read: keep the text visible
        elif kind == "datetime-local":
            attrs["step"] = "1"  # allow seconds
        attrs["type"] = kind
        for key, attr in (("minLength", "minlength"), ("maxLength", "maxlength")):
            if isinstance(s.get(key), int) and not isinstance(s.get(key), bool):
                attrs[attr] = str(s[key])
        if isinstance(s.get("pattern"), str):
            # HTML anchors a pattern to the whole value; JSON Schema searches: widen it to match.
            attrs["pattern"] = f".*(?:{s['pattern']}).*"
    attrs["value"] = value
    if must:
        attrs["required"] = None
    attrs.update(common)
    return f"<input{_attrs(attrs)}>"


def _form_page(q: _Question, path: str, notice: str | None = None) -> str:
    assert isinstance(q.request, FormRequest)
    schema = q.request.requested_schema
    title = schema.get("title") if isinstance(schema.get("title"), str) else None
    heading = f"<h2><bdi>{_e(title)}</bdi></h2>" if title else ""
    summary = ""
    if q.errors:
        labels = {f.name: f.label for f in q.fields}
        items = "".join(
            f"<li><bdi>{_e(labels.get(name, 'The form') if name else 'The form')}</bdi>: {_e(reason)}</li>"
            for name, reason in q.errors.items()
        )
        summary = f'<div class="summary" role="alert"><strong>Please correct this:</strong><ul>{items}</ul></div>'
    notice_html = f'<p class="notice">{_e(notice)}</p>' if notice else ""
    fields = "".join(_field_html(i, f, q.raw.get(f.name, []), q.errors.get(f.name)) for i, f in enumerate(q.fields))
    body = (
        f"{_asker(q.request.origin)}<h1>Question</h1>"
        f'<div class="message" id="message">{_e(q.request.message)}</div>'
        f'{notice_html}{summary}<form method="post" action="{_e(path)}" id="answer">'
        f'<input type="hidden" name="csrf" value="{_e(q.csrf)}">{heading}{fields}'
        '<div class="actions"><button type="submit" class="primary" name="action" value="review">Review answers'
        '</button><span class="spacer"></span>'
        '<button type="submit" name="action" value="decline" formnovalidate>Decline</button>'
        '<button type="submit" name="action" value="cancel" formnovalidate>Cancel</button></div></form>'
    )
    return _document(f"Question from {_asker_name(q.request.origin)}", "form", body)


def _review_page(q: _Question, path: str) -> str:
    assert isinstance(q.request, FormRequest) and q.content is not None
    rows = []
    for f in q.fields:
        if f.name in q.content:
            shown = f.display(q.content[f.name])
            value = f"<bdi>{_e(shown)}</bdi>" if shown else '<span class="none">(empty)</span>'
        else:
            value = '<span class="none">(no answer)</span>'
        rows.append(
            f'<div class="answer" data-name="{_e(f.name)}"><dt><bdi>{_e(f.label)}</bdi></dt><dd>{value}</dd></div>'
        )
    body = (
        f"{_asker(q.request.origin)}<h1>Check your answers</h1>"
        f'<div class="message" id="message">{_e(q.request.message)}</div>'
        f'<dl class="answers">{"".join(rows)}</dl>'
        f'<form method="post" action="{_e(path)}" id="review">'
        f'<input type="hidden" name="csrf" value="{_e(q.csrf)}">'
        f'<input type="hidden" name="review" value="{_e(q.review_id)}">'
        '<div class="actions"><button type="submit" class="primary" name="action" value="send">Send</button>'
        '<button type="submit" name="action" value="change">Change</button><span class="spacer"></span>'
        '<button type="submit" name="action" value="decline">Decline</button>'
        '<button type="submit" name="action" value="cancel">Cancel</button></div></form>'
    )
    return _document(f"Check your answers for {_asker_name(q.request.origin)}", "review", body)


def _openable(url: str, facts: UrlAssessment) -> bool:
    """Only a plain http(s) address with a host and no hidden characters may be opened from here."""
    if facts.scheme not in ("http", "https") or not facts.host:
        return False
    return not any(ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cn", "Cs") for ch in url)


def _url_page(q: _Question, path: str) -> str:
    assert isinstance(q.request, UrlRequest)
    facts = assess_url(q.request.url)
    before, host, after = facts.parts
    shown_url = (
        f'<code class="url" id="target"><span class="rest">{_e(before)}</span>'
        f'<span class="host">{_e(host)}</span><span class="rest">{_e(after)}</span></code>'
    )
    domain = f"<strong><bdi>{_e(facts.host or '(none)')}</bdi></strong>"
    if facts.display_host != facts.host:
        domain += f" (displayed as <bdi>{_e(facts.display_host)}</bdi>)"
    warnings = ""
    if facts.warnings:
        items = "".join(f"<li>{_e(w)}</li>" for w in facts.warnings)
        warnings = f'<ul class="warnings" id="warnings">{items}</ul>'
    openable = _openable(q.request.url, facts)
    if openable:
        open_button = (
            '<button type="submit" class="primary" name="action" value="open" id="open">'
            f"Open <bdi>{_e(facts.host)}</bdi></button>"
        )
    else:
        open_button = ""
        warnings += '<p class="notice">This address cannot be opened from here; you can only decline.</p>'
    asker = _asker_name(q.request.origin)
    body = (
        f"{_asker(q.request.origin)}<h1>Open a web page?</h1>"
        f'<div class="message" id="message">{_e(q.request.message)}</div>'
        f"<p>The server wants you to go to:</p>{shown_url}"
        f'<p class="domain" id="domain">Domain: {domain}</p>{warnings}'
        f"<p>What you do on that page does not pass through this client; <bdi>{_e(asker)}</bdi>"
        " may learn the outcome from the site.</p>"
        f'<form method="post" action="{_e(path)}" id="consent">'
        f'<input type="hidden" name="csrf" value="{_e(q.csrf)}">'
        f'<div class="actions">{open_button}<span class="spacer"></span>'
        '<button type="submit" name="action" value="decline">Decline</button>'
        '<button type="submit" name="action" value="cancel">Cancel</button></div></form>'
    )
    return _document(f"{asker} asks you to open a web page", "url", body)


def _done_page(q: _Question, what: str) -> str:
    asker = _e(_asker_name(q.request.origin))
    text = {
        "sent": f"Your answers were sent to <bdi>{asker}</bdi>.",
        "declined": f"You declined; <bdi>{asker}</bdi> was told no.",
        "cancelled": f"You cancelled; <bdi>{asker}</bdi> was told the question was dismissed.",
    }[what]
    body = f'<h1 id="outcome" data-outcome="{what}">Done</h1><p>{text}</p><p>You can close this tab.</p>'
    return _document("Done", "done", body)


def _opening_page(url: str, facts: UrlAssessment) -> str:
    body = (
        f"<h1>Opening <bdi>{_e(facts.host)}</bdi>…</h1>"
        f'<p>If nothing happens, <a href="{_e(url)}" rel="noreferrer noopener">continue to {_e(url)}</a>.</p>'
        "<p>This question is closed; the client has told the server you agreed.</p>"
    )
    # Navigate with a meta refresh rather than a redirect: form-action 'self' also covers redirects.
    return _document(f"Opening {facts.host}", "opening", body).replace(
        "<title>", f'<meta http-equiv="refresh" content="0;url={_e(url)}"><title>', 1
    )


def _error_page(status: int, title: str, text: str) -> Response:
    body = f'<h1 id="error" data-status="{status}">{_e(title)}</h1><p>{_e(text)}</p>'
    return _html(_document(title, "error", body), status)


def _html(content: str, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    return HTMLResponse(content, status_code=status, headers={**_SECURITY_HEADERS, **(headers or {})})


# ------------------------------------------------------------------------------ the server


class _Refused(Exception):
    def __init__(self, status: int, title: str, text: str) -> None:
        super().__init__(text)
        self.status, self.title, self.text = status, title, text


class _Uvicorn(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # Ctrl-C belongs to the application that runs the client, not to this little server


def _is_console(browser: webbrowser.BaseBrowser) -> bool:
    """A text-mode browser (lynx, w3m...) would take over the terminal the client may be using."""
    if type(browser) is webbrowser.GenericBrowser:
        return True
    return isinstance(browser, webbrowser.UnixBrowser) and not browser.background


def _open_gui(url: str) -> bool:
    try:
        browser = webbrowser.get()
    except webbrowser.Error:
        return False
    if _is_console(browser):
        return False
    return browser.open(url, new=2)


async def open_in_browser(url: str) -> bool:
    """Open ``url`` in a graphical browser, in a worker thread (``webbrowser`` can block for seconds).

    Returns False when there is none (no display, or only a text-mode browser): the URL has
    been printed, so the user can open it by hand.
    """
    return await anyio.to_thread.run_sync(_open_gui, url, abandon_on_cancel=True)


def _announce_stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class BrowserHandler:
    """Answers questions on a one-time loopback page in the user's browser.

    ``open_url`` shows the page (default :func:`open_in_browser`); it is called in the event
    loop and may return an awaitable. ``announce`` also gets a line with the URL, so it can
    be opened by hand (default: printed to stderr; None: only logged). After ``timeout``
    seconds without an answer the question is cancelled. The server starts on the first
    question and serves all later ones; stop it with :meth:`aclose` or ``async with``.
    """

    def __init__(
        self,
        *,
        open_url: OpenUrl | None = None,
        timeout: float | None = None,
        announce: Callable[[str], object] | None = _announce_stderr,
    ) -> None:
        self.open_url: OpenUrl = open_url or open_in_browser
        self.timeout = timeout
        self.announce = announce
        self._questions: dict[str, _Question] = {}
        self._server: _Uvicorn | None = None
        self._task: asyncio.Task[None] | None = None
        self._lock: anyio.Lock | None = None
        self._host = ""  # the one Host header we answer to
        self._origin = ""

    # -- lifecycle ----------------------------------------------------------------------

    @property
    def url(self) -> str | None:
        """The server's base URL (``http://127.0.0.1:<port>``), or None when not running."""
        return self._origin or None

    async def start(self) -> str:
        """Start the loopback server if it is not running; returns its base URL."""
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self._server is None:
                await self._start()
        return self._origin

    async def _start(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind((LOOPBACK, 0))  # port 0: the system picks a free one
            sock.listen(64)
        except OSError:
            sock.close()
            raise
        port = sock.getsockname()[1]
        config = uvicorn.Config(
            self._asgi,
            interface="asgi3",
            http="h11",
            ws="none",
            lifespan="off",
            log_config=None,  # a library must not reconfigure the application's logging
            access_log=False,
            proxy_headers=False,
            server_header=False,
            date_header=False,
            limit_concurrency=64,
            timeout_keep_alive=5,
            timeout_graceful_shutdown=1,
        )
        server = _Uvicorn(config)
        task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]), name="elicitkit-browser-form")
        with anyio.fail_after(10):
            while not server.started:  # uvicorn offers no started event
                if task.done():
                    sock.close()
                    task.result()
                    raise RuntimeError("the browser form server stopped while starting")
                await anyio.sleep(0.005)
        self._server, self._task = server, task
        self._host = f"{LOOPBACK}:{port}"
        self._origin = f"http://{self._host}"
        logger.debug("browser form server listening on %s", self._origin)

    async def aclose(self) -> None:
        """Cancel open questions and stop the server (a later question starts it again)."""
        for question in list(self._questions.values()):
            self._finish(question, ElicitationResult.cancel())
        server, task = self._server, self._task
        self._server = self._task = None
        self._host = self._origin = ""
        if server is None or task is None:
            return
        server.should_exit = True
        with anyio.CancelScope(shield=True):
            try:
                await task
            except Exception:
                logger.exception("the browser form server failed while stopping")

    async def __aenter__(self) -> BrowserHandler:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # -- the callback -------------------------------------------------------------------

    async def __call__(self, request: ElicitRequest) -> ElicitationResult[Any]:
        """Serve ``request`` on a fresh one-time URL, open it, and wait for the person's answer."""
        base = await self.start()
        fields = form_fields(request.requested_schema) if isinstance(request, FormRequest) else []
        question = _Question(
            request=request,
            token=secrets.token_urlsafe(32),
            csrf=secrets.token_urlsafe(32),
            done=anyio.Event(),
            fields=fields,
            raw={f.name: _initial_raw(f) for f in fields},
        )
        self._questions[question.token] = question
        url = f"{base}/q/{question.token}"
        try:
            self._tell(request, url)
            with anyio.move_on_after(self.timeout if self.timeout is not None else math.inf):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._open, url)  # a slow opener neither delays an answer nor the timeout
                    await question.done.wait()
                    tg.cancel_scope.cancel()
            if question.result is None:
                logger.info("no answer within %s s: question cancelled", self.timeout)
                return ElicitationResult.cancel()
            return question.result
        finally:
            self._questions.pop(question.token, None)  # the token dies with the question

    def _tell(self, request: ElicitRequest, url: str) -> None:
        asker = _asker_name(request.origin)
        if isinstance(request, UrlRequest):
            line = f"{asker} asks you to open a web page; decide in your browser: {url}"
        else:
            line = f"{asker} asks a question; answer it in your browser: {url}"
        logger.info("%s", line)
        if self.announce is not None:
            self.announce(line)

    async def _open(self, url: str) -> None:
        try:
            outcome = self.open_url(url)
            if inspect.isawaitable(outcome):
                outcome = await outcome
        except Exception:
            logger.warning("could not open a browser; open %s by hand", url, exc_info=True)
            return
        if outcome is False:
            logger.warning("no graphical browser to open; open %s by hand", url)

    def _finish(self, question: _Question, result: ElicitationResult[Any]) -> None:
        if question.result is None:
            question.result = result
        self._questions.pop(question.token, None)
        question.done.set()

    # -- HTTP ---------------------------------------------------------------------------

    async def _asgi(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        try:
            response = await self._route(request)
        except _Refused as refused:
            if refused.status != 404:
                logger.warning("browser form refused a request: %s %s", refused.status, refused.text)
            response = _error_page(refused.status, refused.title, refused.text)
        except Exception:  # still a page with the security headers, and no details for the browser
            logger.exception("the browser form failed on %s %s", request.method, scope.get("path"))
            response = _error_page(500, "Error", "Something went wrong in the client; see its log.")
        await response(scope, receive, send)

    def _find(self, token: str) -> _Question | None:
        wanted = token.encode()
        found = None
        for known, question in self._questions.items():
            if hmac.compare_digest(known.encode(), wanted):
                found = question
        return found

    async def _route(self, request: Request) -> Response:
        if not self._host or request.headers.get("host") != self._host:
            raise _Refused(403, "Refused", "This page is only served at its own loopback address.")
        path: str = request.scope["path"]
        question = self._find(path[3:]) if path.startswith("/q/") and len(path) > 3 else None
        if question is None:
            raise _Refused(
                404,
                "Not found",
                "This question is not open: the link is wrong, or it was already answered or withdrawn.",
            )
        if request.method == "GET":
            return _html(self._current_page(question, path))
        if request.method != "POST":
            return _html(
                _document("Method not allowed", "error", "<h1>Method not allowed</h1>"), 405, {"Allow": "GET, POST"}
            )
        self._check_post(request)
        posted = await _read_form(request)
        if not hmac.compare_digest(_first(posted, "csrf").encode(), question.csrf.encode()):
            raise _Refused(403, "Refused", "This form was not sent by the page this client served.")
        action = _first(posted, "action")
        if isinstance(question.request, UrlRequest):
            return self._url_action(question, action)
        return self._form_action(question, path, action, posted)

    def _check_post(self, request: Request) -> None:
        origin = request.headers.get("origin")
        if origin is not None and origin != self._origin:
            raise _Refused(403, "Refused", "A form on another site tried to answer this question.")
        site = request.headers.get("sec-fetch-site")
        if site is not None and site not in ("same-origin", "none"):
            raise _Refused(403, "Refused", "A form on another site tried to answer this question.")

    def _current_page(self, question: _Question, path: str) -> str:
        if isinstance(question.request, UrlRequest):
            return _url_page(question, path)
        if question.stage == "review" and question.content is not None:
            return _review_page(question, path)
        return _form_page(question, path)

    def _form_action(self, q: _Question, path: str, action: str, posted: Mapping[str, list[str]]) -> Response:
        assert isinstance(q.request, FormRequest)
        if action == "decline":
            self._finish(q, ElicitationResult.decline())
            return _html(_done_page(q, "declined"))
        if action == "cancel":
            self._finish(q, ElicitationResult.cancel())
            return _html(_done_page(q, "cancelled"))
        if action == "change":
            q.stage, q.errors, q.content = "form", {}, None
            return _html(_form_page(q, path))
        if action == "send":
            fresh = q.stage == "review" and q.content is not None
            if not fresh or not hmac.compare_digest(_first(posted, "review").encode(), q.review_id.encode()):
                notice = "These answers changed since that review page was shown; please review them again."
                return _html(self._current_page_with_notice(q, path, notice), 409)
            assert q.content is not None
            self._finish(q, ElicitationResult.accept(q.content))
            return _html(_done_page(q, "sent"))
        if action != "review":
            raise _Refused(400, "Bad request", "Unknown action.")
        q.raw, values, q.errors = _read_answers(q.request, q.fields, posted)
        if not q.errors:
            try:
                q.content = answer_content(q.request.requested_schema, values)
            except InvalidAnswer as exc:  # check_form passed, so this is not expected; still never send it
                q.errors = {name: reason for name, reason in exc.problems}
        if q.errors:
            q.stage, q.content = "form", None
            return _html(_form_page(q, path), 422)
        q.stage, q.review_id = "review", secrets.token_urlsafe(16)
        return _html(_review_page(q, path))

    def _current_page_with_notice(self, q: _Question, path: str, notice: str) -> str:
        if q.stage == "review" and q.content is not None:
            return _review_page(q, path)
        return _form_page(q, path, notice)

    def _url_action(self, q: _Question, action: str) -> Response:
        assert isinstance(q.request, UrlRequest)
        if action == "decline":
            self._finish(q, ElicitationResult.decline())
            return _html(_done_page(q, "declined"))
        if action == "cancel":
            self._finish(q, ElicitationResult.cancel())
            return _html(_done_page(q, "cancelled"))
        facts = assess_url(q.request.url)
        if action != "open" or not _openable(q.request.url, facts):
            raise _Refused(400, "Bad request", "This address cannot be opened from here.")
        self._finish(q, ElicitationResult.accept())
        # no-referrer: the target must not learn this page's address (it carried the token).
        return _html(_opening_page(q.request.url, facts), headers={"Referrer-Policy": "no-referrer"})


def _first(posted: Mapping[str, list[str]], key: str) -> str:
    values = posted.get(key)
    return values[0] if values else ""


async def _read_form(request: Request) -> dict[str, list[str]]:
    """The POSTed urlencoded form, size-capped; refuses anything else."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/x-www-form-urlencoded":
        raise _Refused(415, "Unsupported form", "Expected an HTML form post.")
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY):
        raise _Refused(413, "Too large", "That form is too large.")
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > MAX_BODY:
            raise _Refused(413, "Too large", "That form is too large.")
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, max_num_fields=_MAX_FIELDS)
    except (UnicodeDecodeError, ValueError):
        raise _Refused(400, "Bad request", "That form could not be read.") from None
    posted: dict[str, list[str]] = {}
    for key, value in pairs:
        posted.setdefault(key, []).append(value)
    return posted
