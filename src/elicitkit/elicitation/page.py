"""The browser form's pages as pure functions: what was asked and where the person is -> HTML.

No server, no request object, no asyncio: every page is a function of plain values (the
question's message and asker, the fields, what the inputs hold, the errors, where the form
posts and its CSRF secret), so the same renderer can serve the client's loopback form and,
later, pages a server hosts itself. :func:`read_answers` is the other half of the same
encoding: a posted form back to values, judged as every other UI judges them
(:meth:`FormField.parse` per value, then :func:`check_form` on the whole answer).

The pages show what a possibly hostile server wrote, so every string from it (message,
titles, descriptions, names, URL) is HTML-escaped and wrapped in ``<bdi>``, the only style is
the inline stylesheet allowed by hash in :data:`CSP`, there is no script, and only a plain
``http``/``https`` URL gets an "Open" button (:func:`openable`). Serve every page with
:data:`SECURITY_HEADERS`.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
import unicodedata
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from elicitkit.elicitation.fields import FieldError, FieldKind, FormField, check_form
from elicitkit.elicitation.requests import Origin
from elicitkit.elicitation.urls import UrlAssessment, assess_url

__all__ = [
    "CSP",
    "FOLLOW_EVERY",
    "SECURITY_HEADERS",
    "Outcome",
    "WaitState",
    "asker_name",
    "confirmed_domain",
    "destructive",
    "done_page",
    "error_page",
    "form_page",
    "initial_raw",
    "input_name",
    "is_yes_no",
    "method_not_allowed_page",
    "openable",
    "read_answers",
    "review_page",
    "url_page",
    "waiting_page",
]

#: How a question ended, as its last page tells the person.
Outcome = Literal["sent", "declined", "cancelled"]

_RADIO_LIMIT = 5  # single-selects with more options than this become a <select>
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATETIME_LOCAL = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?")
_HTML_NUMBER = re.compile(r"-?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?")
_FORMAT_WORDS = {"date": "a date (YYYY-MM-DD)", "date-time": "a date and time (YYYY-MM-DDTHH:MM:SSZ)"}
_PICKER_WORDS = {"date": "a date", "date-time": "a date and time"}
_INPUT_TYPES = {"email": "email", "uri": "url", "date": "date", "date-time": "datetime-local"}

# ------------------------------------------------------------------------------ the look

_CSS = """
:root{color-scheme:light dark;--fg:#1b1f24;--muted:#4d5661;--bg:#f3f4f6;--card:#fff;--line:#8a939e;
--soft:#d5d9de;--accent:#1f5fd1;--accent-fg:#fff;--bad:#b3261e;--badbg:#fdecea;--warn:#6b4400;--warnbg:#fff4d6;
--stop:#8c1d18;--stopbg:#fde7e4;--ok:#1e6b34}
@media (prefers-color-scheme:dark){:root{--fg:#e6e8eb;--muted:#a9b2bc;--bg:#0f1216;--card:#181c22;
--line:#6b7480;--soft:#2d333b;--accent:#7aa7ff;--accent-fg:#0b0d10;--bad:#ff9c94;--badbg:#3a1d1b;
--warn:#ffd27a;--warnbg:#2c2410;--stop:#ffb4ab;--stopbg:#3d1714;--ok:#7fd59a}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.5 system-ui,-apple-system,"Segoe UI",
Roboto,sans-serif}
main{max-width:44rem;margin:2rem auto;padding:1.5rem 1.75rem;background:var(--card);
border:1px solid var(--soft);border-radius:12px}
h1{font-size:1.35rem;margin:.25rem 0 1rem}h2{font-size:1.1rem;margin:1.25rem 0 .5rem}
.asker{border-bottom:1px solid var(--soft);padding-bottom:.75rem;margin-bottom:1rem}
.kicker{margin:0;color:var(--muted);font-size:.85rem;text-transform:uppercase;letter-spacing:.04em}
.who{margin:.1rem 0;font-size:1.2rem;font-weight:600}.who .ver{font-weight:400;color:var(--muted);
font-size:.95rem}
.where{margin:0;color:var(--muted);font-size:.9rem;overflow-wrap:anywhere}
.trust{color:var(--muted);font-size:.85rem;margin:.5rem 0 0}
.step{margin:0 0 .75rem;color:var(--muted);font-size:.9rem}.step strong{color:var(--fg)}
.message{white-space:pre-wrap;overflow-wrap:anywhere;background:var(--bg);border-left:4px solid var(--accent);
padding:.75rem 1rem;border-radius:6px;margin:0 0 1.25rem}
.field{margin:0 0 1.1rem;padding:0;border:0;min-width:0}
.field>label:not(.choice),.field>legend{display:block;font-weight:600;margin-bottom:.2rem;padding:0}
.req{color:var(--bad);font-weight:600;font-size:.8rem;margin-left:.4rem}
.opt{color:var(--muted);font-weight:400;font-size:.8rem;margin-left:.4rem}
.desc{margin:.1rem 0 .3rem;color:var(--muted);overflow-wrap:anywhere}
.rules{margin:.1rem 0 .3rem;color:var(--muted);font-size:.85rem;overflow-wrap:anywhere}
input[type=text],input[type=email],input[type=url],input[type=date],input[type=datetime-local],
input[type=number],input[type=password],select{width:100%;max-width:30rem;min-height:2.75rem;padding:.45rem .55rem;
font:inherit;color:inherit;background:var(--card);border:1px solid var(--line);border-radius:6px}
.choice{display:flex;align-items:center;gap:.6rem;min-height:2.75rem;margin:0;font-weight:400;cursor:pointer}
.choice input{width:1.5rem;height:1.5rem;margin:0;flex:none;accent-color:var(--accent)}
.invalid input,.invalid select{border-color:var(--bad);border-width:2px}
.error{color:var(--bad);background:var(--badbg);border-radius:6px;padding:.3rem .6rem;margin:.35rem 0 0;
max-width:30rem;font-weight:600}
.summary{color:var(--bad);background:var(--badbg);border:2px solid var(--bad);border-radius:8px;
padding:.6rem .9rem;margin:0 0 1rem}
.summary h2{margin:0 0 .3rem;font-size:1.05rem}.summary ul{margin:0;padding-left:1.2rem}
.summary a{color:var(--bad);font-weight:600;display:block;padding:.15rem 0}
.notice{background:var(--warnbg);color:var(--warn);border-radius:8px;padding:.6rem .9rem;margin:0 0 1rem}
.actions{display:flex;flex-wrap:wrap;gap:.6rem;margin-top:1.5rem}
button{font:inherit;min-height:2.75rem;padding:.5rem 1.1rem;border-radius:8px;border:1px solid var(--line);
background:var(--card);color:var(--fg);cursor:pointer}
button.primary{background:var(--accent);border-color:var(--accent);color:var(--accent-fg);font-weight:600}
button.danger{border-color:var(--stop);color:var(--stop)}
.spacer{flex:1}
a{color:var(--accent)}
.explain{color:var(--muted);font-size:.9rem;margin:.75rem 0 0}
dl.answers{margin:0;display:grid;grid-template-columns:minmax(8rem,auto) 1fr;gap:.4rem 1rem}
dl.answers .answer{display:contents}dl.answers dt{font-weight:600}
dl.answers dd{margin:0;overflow-wrap:anywhere;white-space:pre-wrap}
.none,.default{color:var(--muted);font-style:italic}
.url{display:block;font:1rem/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;word-break:break-all;
background:var(--bg);padding:.75rem 1rem;border-radius:6px}
.url .rest{color:var(--muted)}.url .host{color:var(--fg);font-weight:700;font-size:1.1em}
.domain{font-size:1.1rem;overflow-wrap:anywhere}.domain strong{font-size:1.2rem}
ul.warnings{background:var(--warnbg);color:var(--warn);border-radius:8px;padding:.6rem .9rem .6rem 2rem}
.stop{background:var(--stopbg);color:var(--stop);border:2px solid var(--stop);border-radius:8px;
padding:.75rem 1rem;margin:0 0 1rem}.stop h2{margin:0 0 .4rem}.stop p{margin:.3rem 0}
.confirm{margin-top:1.25rem;border-top:1px solid var(--soft);padding-top:1rem}
.status{font-size:1.1rem;font-weight:600}.status.ok{color:var(--ok)}
@media (max-width:40rem){main{margin:.5rem;padding:1rem;border-radius:10px}
.asker{padding-bottom:.5rem;margin-bottom:.75rem}.kicker{font-size:.75rem}.who{font-size:1.05rem}
.trust{font-size:.8rem;margin-top:.25rem}h1{font-size:1.2rem;margin-bottom:.75rem}
.actions{flex-direction:column;align-items:stretch}.actions button{width:100%}.spacer{display:none}
dl.answers{grid-template-columns:1fr;gap:.1rem}dl.answers dd{margin-bottom:.5rem}}
""".strip()

_CSS_HASH = "sha256-" + base64.b64encode(hashlib.sha256(_CSS.encode()).digest()).decode()
CSP = f"default-src 'none'; style-src '{_CSS_HASH}'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
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


def asker_name(origin: Origin | None) -> str:
    """The asker as page titles and sentences name it."""
    return origin.display_name if origin else "An unknown server"


def _served(served_by: str | None) -> str:
    """Whom the person trusts with what they type here: the client on this computer, or the server at its address."""
    if served_by is None:
        return "This page is served by your MCP client on this computer."
    return (
        f"This page is served by the MCP server at <bdi>{_e(served_by)}</bdi>;"
        " what you send here goes to that server directly."
    )


def _asker(origin: Origin | None, served_by: str | None = None) -> str:
    """Who asks: display name, version and where the client reached it; all from the server, all escaped.

    ``served_by``: None on the client's own pages; the server's origin on a page the server serves.
    """
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
        f'<p class="trust">{_served(served_by)} The question and'
        " everything in the form come from the server: answer only if you trust it.</p></header>"
    )


# ------------------------------------------------------------------------------ inputs


def input_name(index: int) -> str:
    """The name of field number ``index``'s inputs."""
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


def initial_raw(f: FormField) -> list[str]:
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


def read_answers(
    schema: dict[str, Any], fields: Sequence[FormField], posted: Mapping[str, list[str]]
) -> tuple[dict[str, list[str]], dict[str, Any], dict[str | None, str]]:
    """A posted form -> (raw inputs to show again, parsed values, problems by field name).

    The same two steps as every other UI: :meth:`FormField.parse` per value, then
    :func:`check_form` on the whole answer (defaults filled in, judged as the server will).
    """
    raw: dict[str, list[str]] = {}
    values: dict[str, Any] = {}
    problems: dict[str | None, str] = {}
    for index, f in enumerate(fields):
        sent = posted.get(input_name(index), [])
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
    for name, reason in check_form(schema, values).items():
        problems.setdefault(name, reason)
    return raw, values, problems


# ------------------------------------------------------------------------------ rendering


def _rules(f: FormField, picker: bool) -> str:
    rules = f.constraints()
    if picker and f.format in _PICKER_WORDS:  # the browser's picker shows its own (local) format
        rules = [_PICKER_WORDS[f.format] if r == _FORMAT_WORDS.get(f.format) else r for r in rules]
    text = "; ".join(rules)
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
    name = input_name(index)
    picker = _picker(f) is not None
    rules_html = _rules(f, picker)
    ids = [f"{name}-desc"] if f.help else []
    ids += [f"{name}-rules"] if rules_html else []
    ids += [f"{name}-error"] if error else []
    common: dict[str, str | None] = {"aria-describedby": " ".join(ids)} if ids else {}
    if error:
        common["aria-invalid"] = "true"
    must = f.required and not f.has_default  # with a default an empty input is fine: the default fills it
    desc = f'<p class="desc" id="{name}-desc"><bdi>{_e(f.help)}</bdi></p>' if f.help else ""
    rules = f'<div id="{name}-rules">{rules_html}</div>' if rules_html else ""
    err = f'<p class="error" id="{name}-error"><bdi>{_e(error)}</bdi></p>' if error else ""
    head = f"<bdi>{_e(f.label)}</bdi>{_label_marks(f)}"
    group = f.kind in (FieldKind.MULTI, FieldKind.BOOLEAN) or (
        f.kind is FieldKind.CHOICE and len(f.options) <= _RADIO_LIMIT
    )
    css = "field invalid" if error else "field"
    if group and not _checkbox(f):
        body = _group_inputs(name, f, raw, must, common)
        return (
            f'<fieldset class="{css}" id="{name}" tabindex="-1" data-name="{_e(f.name)}" data-kind="{f.kind.value}">'
            f"<legend>{head}</legend>{desc}{rules}{err}{body}</fieldset>"
        )
    if _checkbox(f):
        control = _choice("checkbox", name, "yes", "Yes", raw == ["yes"], {"id": name, **common})
    elif f.kind is FieldKind.CHOICE:
        control = _select(name, f, raw, must, common)
    else:
        control = _text_input(name, f, raw, must, common)
    return (
        f'<div class="{css}" data-name="{_e(f.name)}" data-kind="{f.kind.value}">'
        f'<label for="{name}">{head}</label>{desc}{rules}{err}{control}</div>'
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


def _picker(f: FormField) -> str | None:
    """The browser's date (or date-time) picker for ``f``, unless its description spells a format to type.

    A picker shows the date in the browser's locale (``27/11/2026``), which contradicts a
    description saying ``YYYY-MM-DD``: then the field is a text input and the rules say the form.
    """
    kind = _INPUT_TYPES.get(f.format or "")
    if kind not in ("date", "datetime-local") or f.kind is not FieldKind.TEXT:
        return None
    if f.description is not None and "yyyy" in f.description.casefold():
        return None
    return kind


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
        kind = "password" if f.secret else _INPUT_TYPES.get(f.format or "", "text")
        if kind in ("date", "datetime-local") and _picker(f) is None:
            kind = "text"  # the author's words name the format to type: a picker would show the browser's own
        picker = {"date": _DATE, "datetime-local": _DATETIME_LOCAL}.get(kind)
        if picker is not None and value and not picker.fullmatch(value):
            kind = "text"  # a picker shows nothing for a value it cannot read: keep the text visible
        elif kind == "datetime-local":
            attrs["step"] = "1"  # allow seconds
        attrs["type"] = kind
        if f.secret:
            attrs["autocomplete"] = "off"
        for key, attr in (("minLength", "minlength"), ("maxLength", "maxlength")):
            if isinstance(s.get(key), int) and not isinstance(s.get(key), bool):
                attrs[attr] = str(s[key])
        if isinstance(s.get("pattern"), str):
            # HTML anchors a pattern to the whole value; JSON Schema searches: widen it to match.
            attrs["pattern"] = f".*(?:{s['pattern']}).*"
            if f.description:  # the browser's own bubble then says what the author wants, not "match the format"
                attrs["title"] = f.description
    attrs["value"] = "" if f.secret else value  # a secret is never sent back into the page
    if must:
        attrs["required"] = None
    attrs.update(common)
    return f"<input{_attrs(attrs)}>"


_DESTRUCTIVE = re.compile(
    r"\b(delet\w*|remov\w*|destroy\w*|drop|erase\w*|wipe\w*|purg\w*|overwrit\w*|revok\w*|irreversibl\w*"
    r"|permanent\w*|cannot be undone|discard\w*|terminat\w*|uninstall\w*|reset\w*|format)\b",
    re.IGNORECASE,
)


def _code_name(title: str) -> bool:
    """A schema title that is a class name (``BookingForm``, ``api_settings``), not words for a person."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", title):
        return False
    return "_" in title or any(ch.isupper() for ch in title[1:])


def destructive(message: str, f: FormField) -> bool:
    """A yes/no whose "yes" destroys something (as its words say): "No" is then the main button."""
    return any(_DESTRUCTIVE.search(text) for text in (message, f.label, f.description or ""))


def is_yes_no(fields: Sequence[FormField]) -> bool:
    """A form that is one yes/no question: answered with one click on Yes or No, no review step."""
    return len(fields) == 1 and fields[0].kind is FieldKind.BOOLEAN


def _step(step: int, origin: Origin | None) -> str:
    """Where the person is in a run of questions from one server (shown from the second one on)."""
    if step <= 1:
        return ""
    done = "1 question" if step == 2 else f"{step - 1} questions"
    return (
        f'<p class="step" id="step"><strong>Question {step}</strong> from <bdi>{_e(asker_name(origin))}</bdi>'
        f" · {done} answered on this page before</p>"
    )


def _leave_buttons(origin: Origin | None, *, novalidate: bool = True) -> tuple[str, str]:
    """The Decline and Cancel buttons, and the sentence that says what each does."""
    skip = " formnovalidate" if novalidate else ""
    buttons = (
        f'<button type="submit" name="action" value="decline"{skip}>Decline</button>'
        f'<button type="submit" name="action" value="cancel"{skip}>Cancel</button>'
    )
    asker = f"<bdi>{_e(asker_name(origin))}</bdi>"
    explain = (
        f'<p class="explain" id="leave-help"><strong>Decline</strong> tells {asker} you will not answer.'
        f" <strong>Cancel</strong> dismisses the question without a yes or no; {asker} may ask again.</p>"
    )
    return buttons, explain


def _summary(fields: Sequence[FormField], errors: Mapping[str | None, str]) -> str:
    """The problems in form order, each a link to its field; focused when the page loads."""
    index = {f.name: i for i, f in enumerate(fields)}
    items = []
    for name, reason in sorted(errors.items(), key=lambda e: index.get(e[0], -1) if e[0] else -1):
        if name in index:
            label = fields[index[name]].label
            items.append(
                f'<li><a href="#{input_name(index[name])}"><bdi>{_e(label)}</bdi>: <bdi>{_e(reason)}</bdi></a></li>'
            )
        else:
            items.append(f"<li><bdi>{_e(reason)}</bdi></li>")
    count = "1 answer needs" if len(items) == 1 else f"{len(items)} answers need"
    return (
        '<div class="summary" id="summary" role="alert" tabindex="-1" autofocus aria-labelledby="summary-title">'
        f'<h2 id="summary-title">{count} a change</h2><ul>{"".join(items)}</ul></div>'
    )


def form_page(
    *,
    message: str,
    origin: Origin | None,
    fields: Sequence[FormField],
    raw: Mapping[str, list[str]],
    errors: Mapping[str | None, str],
    action: str,
    csrf: str,
    title: str | None = None,
    notice: str | None = None,
    step: int = 1,
    served_by: str | None = None,
) -> str:
    """The form: who asks, the message, each field as the person left it with its error, and the buttons.

    ``raw`` holds each field's inputs as the browser sent them (or :func:`initial_raw`),
    ``errors`` the problems by field name (None: the form as a whole), ``action`` the URL the
    form posts to and ``csrf`` the secret it posts back; ``title`` is the schema's title;
    ``step`` the question's place in a run of questions shown in the same tab. A form that is
    one yes/no question (:func:`is_yes_no`) gets Yes and No buttons that answer at once.
    """
    heading = f"<h2><bdi>{_e(title)}</bdi></h2>" if title and not _code_name(title) else ""
    summary = _summary(fields, errors) if errors else ""
    notice_html = f'<p class="notice" role="status">{_e(notice)}</p>' if notice else ""
    leave, explain = _leave_buttons(origin)
    if is_yes_no(fields):
        f = fields[0]
        desc = f'<p class="desc" id="f0-desc"><bdi>{_e(f.help)}</bdi></p>' if f.help else ""
        inputs = (
            f'<div class="field" data-name="{_e(f.name)}" data-kind="yesno">'
            f'<p class="who" id="f0"><bdi>{_e(f.label)}</bdi></p>{desc}</div>'
        )
        asker = f"<bdi>{_e(asker_name(origin))}</bdi>"
        # One main button, never two: for something that destroys, the safe "No" is the main one.
        yes_css, no_css = ("danger", "primary") if destructive(message, f) else ("primary", "")
        main_buttons = (
            f'<button type="submit" class="{yes_css}" name="action" value="yes" aria-describedby="f0">Yes</button>'
            f'<button type="submit"{_attrs({"class": no_css}) if no_css else ""} name="action" value="no"'
            ' aria-describedby="f0">No</button>'
        )
        explain = f'<p class="explain">Yes or No goes to {asker} at once.</p>' + explain
    else:
        inputs = "".join(_field_html(i, f, raw.get(f.name, []), errors.get(f.name)) for i, f in enumerate(fields))
        main_buttons = '<button type="submit" class="primary" name="action" value="review">Review answers</button>'
    body = (
        f"{_asker(origin, served_by)}{_step(step, origin)}<h1>Question</h1>"
        f'<div class="message" id="message">{_e(message)}</div>'
        f'{notice_html}{summary}<form method="post" action="{_e(action)}" id="answer">'
        f'<input type="hidden" name="csrf" value="{_e(csrf)}">{heading}{inputs}'
        f'<div class="actions">{main_buttons}<span class="spacer"></span>{leave}</div>{explain}</form>'
    )
    prefix = "Fix your answers: " if errors else ""
    return _document(f"{prefix}Question from {asker_name(origin)}", "form", body)


def review_page(
    *,
    message: str,
    origin: Origin | None,
    fields: Sequence[FormField],
    content: Mapping[str, Any],
    action: str,
    csrf: str,
    review_id: str,
    defaulted: frozenset[str] = frozenset(),
    step: int = 1,
    notice: str | None = None,
    served_by: str | None = None,
    revealed: bool = False,
) -> str:
    """The checked answer (``content``, defaults filled in) to send, change, decline or cancel.

    ``review_id`` goes back with "Send", so a stale review page cannot send answers that
    changed since it was shown; ``defaulted`` names the fields left empty that the schema's
    default filled, marked "(default)"; a secret is shown as dots unless ``revealed`` (the
    person's "Show" button, to check what was pasted).
    """
    rows = []
    secrets_shown = False
    for f in fields:
        if f.name in content:
            shown = f.display(content[f.name])
            secrets_shown = secrets_shown or bool(f.secret and shown)
            if f.secret and shown and not revealed:
                value = '<span aria-label="hidden">••••••••</span> <span class="default">(hidden)</span>'
            else:
                value = f"<bdi>{_e(shown)}</bdi>" if shown else '<span class="none">(empty)</span>'
            if f.name in defaulted:
                value += ' <span class="default">(default)</span>'
        else:
            value = '<span class="none">(no answer)</span>'
        rows.append(
            f'<div class="answer" data-name="{_e(f.name)}"><dt><bdi>{_e(f.label)}</bdi></dt><dd>{value}</dd></div>'
        )
    leave, explain = _leave_buttons(origin, novalidate=False)
    reveal = ""
    if secrets_shown:
        reveal = (
            '<button type="submit" name="action" value="hide">Hide hidden answers</button>'
            if revealed
            else '<button type="submit" name="action" value="reveal">Show hidden answers</button>'
        )
    body = (
        f"{_asker(origin, served_by)}{_step(step, origin)}<h1>Check your answers</h1>"
        f'<div class="message" id="message">{_e(message)}</div>'
        + (f'<p class="notice" role="status">{_e(notice)}</p>' if notice else "")
        + f'<dl class="answers">{"".join(rows)}</dl>'
        f'<form method="post" action="{_e(action)}" id="review">'
        f'<input type="hidden" name="csrf" value="{_e(csrf)}">'
        f'<input type="hidden" name="review" value="{_e(review_id)}">'
        '<div class="actions"><button type="submit" class="primary" name="action" value="send">Send</button>'
        f'<button type="submit" name="action" value="change">Change</button>{reveal}'
        f'<span class="spacer"></span>{leave}</div>'
        f"{explain}</form>"
    )
    return _document(f"Check your answers for {asker_name(origin)}", "review", body)


def openable(url: str, facts: UrlAssessment) -> bool:
    """Only a plain http(s) address with a host and no hidden characters may be opened from here."""
    if facts.scheme not in ("http", "https") or not facts.host:
        return False
    return not any(ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cn", "Cs") for ch in url)


def confirmed_domain(typed: str, facts: UrlAssessment) -> bool:
    """Whether ``typed`` is the look-alike domain's real name: its ASCII (punycode) form, as the
    stop step asks (any keyboard can type it), or the name exactly as the URL writes it."""
    said = typed.strip().rstrip(".").lower()
    return bool(said) and said in (facts.ascii_host.lower(), facts.host.lower())


def url_page(
    *,
    message: str,
    origin: Origin | None,
    url: str,
    action: str,
    csrf: str,
    problem: str | None = None,
    reason: str | None = None,
    served_by: str | None = None,
) -> str:
    """The consent page of a URL question: the full address with its host set apart, the domain, the warnings.

    A look-alike domain (:attr:`UrlAssessment.lookalike`) stops: Decline becomes the main
    button, the foreign letters are named, and opening takes typing the domain's real name.
    ``problem`` says why the last try did not open it; ``reason`` is why the server asks (a
    -32042 error's message), shown under the message, before any button.
    """
    facts = assess_url(url)
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
    problem_html = f'<p class="error" id="problem" role="alert">{_e(problem)}</p>' if problem else ""
    reason_html = (
        f'<p class="reason" id="reason"><strong>Why:</strong> {_e(reason)}</p>'
        if reason and reason.strip() != message.strip()
        else ""
    )
    stop = confirm = ""
    can_open = openable(url, facts)
    lookalike = facts.lookalike and can_open
    if lookalike:
        letters = facts.foreign_words()
        stop = (
            '<div class="stop" id="stop"><h2>Stop: this domain may be pretending</h2>'
            f"<p>It reads as <strong><bdi>{_e(facts.display_host)}</bdi></strong>, but its real name, in plain"
            f" letters, is <strong><bdi>{_e(facts.ascii_host)}</bdi></strong>.</p>"
            + (f"<p>{_e(letters[:1].upper() + letters[1:])}.</p>" if letters else "")
            + "<p>If you did not expect exactly this address, decline.</p></div>"
        )
        # Its own form: Enter in the box presses "Open anyway", never the Decline above it.
        confirm = (
            f'<form method="post" action="{_e(action)}" class="confirm" id="confirm-form">'
            f'<input type="hidden" name="csrf" value="{_e(csrf)}">'
            '<label for="confirm"><strong>To open it anyway</strong>, type its real name:'
            f" <code><bdi>{_e(facts.ascii_host)}</bdi></code></label>"
            '<input type="text" id="confirm" name="confirm" autocomplete="off" spellcheck="false"'
            ' autocapitalize="none" aria-describedby="stop">'
            '<div class="actions"><button type="submit" class="danger" name="action" value="open" id="open">'
            "Open anyway</button></div></form>"
        )
        buttons = (
            '<button type="submit" class="primary" name="action" value="decline">Decline</button>'
            '<button type="submit" name="action" value="cancel">Cancel</button>'
        )
    elif can_open:
        buttons = (
            '<button type="submit" class="primary" name="action" value="open" id="open">'
            f'Open <bdi>{_e(facts.host)}</bdi></button><span class="spacer"></span>'
            '<button type="submit" name="action" value="decline">Decline</button>'
            '<button type="submit" name="action" value="cancel">Cancel</button>'
        )
    else:
        warnings += '<p class="notice">This address cannot be opened from here; you can only decline.</p>'
        buttons = (
            '<button type="submit" class="primary" name="action" value="decline">Decline</button>'
            '<button type="submit" name="action" value="cancel">Cancel</button>'
        )
    asker = asker_name(origin)
    _, explain = _leave_buttons(origin)
    body = (
        f"{_asker(origin, served_by)}<h1>Open a web page?</h1>"
        f'<div class="message" id="message">{_e(message)}</div>{reason_html}'
        f"{problem_html}{stop}<p>The server wants you to go to:</p>{shown_url}"
        f'<p class="domain" id="domain">Domain: {domain}</p>{warnings}'
        f"<p>What you do on that page does not pass through this client; <bdi>{_e(asker)}</bdi>"
        " may learn the outcome from the site.</p>"
        f'<form method="post" action="{_e(action)}" id="consent">'
        f'<input type="hidden" name="csrf" value="{_e(csrf)}">'
        f'<div class="actions">{buttons}</div>{explain}</form>{confirm}'
    )
    title = (
        f"Careful: {asker} asks you to open a look-alike address"
        if lookalike
        else f"{asker} asks you to open a web page"
    )
    return _document(title, "url", body)


_DONE_TITLES = {"sent": "Answer sent", "declined": "Declined", "cancelled": "Cancelled"}


def _still_link(what: str) -> str:
    """The way to stop a page that updates itself (WCAG 2.2.1: a person can turn the timing off)."""
    return f' <a href="?still=1" id="still">Stop {what}</a>.'


def done_page(
    origin: Origin | None,
    outcome: Outcome,
    *,
    follow: bool = False,
    step: int = 1,
    served_by: str | None = None,
    already: bool = False,
    elsewhere: bool = False,
) -> str:
    """The last page of a question: what was sent to whom.

    ``follow``: the page is served with a ``Refresh`` header (:data:`FOLLOW_EVERY` seconds)
    for a while, so the same server's next question shows up in this tab instead of a new one;
    it says so and offers to stop. ``already``: the person pressed a button of an older page
    (Back, then Send): it says the question was answered already. ``elsewhere``: the answer
    waits for the caller's next call (a host without elicitation): it says to go back to the
    chat and ask again.
    """
    asker = _e(asker_name(origin))
    text = {
        "sent": f"Your answers were sent to <bdi>{asker}</bdi>.",
        "declined": f"You declined; <bdi>{asker}</bdi> was told you will not answer.",
        "cancelled": f"You cancelled; <bdi>{asker}</bdi> was told the question was dismissed.",
    }[outcome]
    then = (
        f'<p class="explain">If <bdi>{asker}</bdi> has another question it appears here; this page checks every'
        f" {FOLLOW_EVERY} seconds for a little while.{_still_link('checking')}</p>"
        if follow
        else "<p>You can close this tab.</p>"
    )
    if elsewhere and outcome == "sent":
        then = (
            '<p class="notice" id="go-back" role="status"><strong>Now go back to your chat</strong> and ask it to'
            " carry on (call the tool again): your answer is used then.</p>" + then
        )
    note = (
        '<p class="notice" id="already" role="status">That page was out of date: this question was answered'
        " already, and nothing more was sent.</p>"
        if already
        else ""
    )
    body = (
        f"{_asker(origin, served_by)}{_step(step, origin)}"
        f'<h1 id="outcome" data-outcome="{outcome}">{_DONE_TITLES[outcome]}</h1>{note}<p>{text}</p>{then}'
    )
    return _document(_DONE_TITLES[outcome], "done", body)


#: How a URL question stands after the person agreed to open it (see :func:`waiting_page`).
WaitState = Literal["waiting", "completed", "timeout", "no-notice", "gone"]

#: Seconds between the self-reloads (``Refresh`` header) of a waiting or following page.
FOLLOW_EVERY = 2


def waiting_page(
    origin: Origin | None,
    url: str,
    state: WaitState,
    *,
    updating: bool = True,
    opened: bool | None = None,
    served_by: str | None = None,
) -> str:
    """After consent: waiting for the server to confirm the person finished at ``url``.

    While ``state`` is "waiting" and ``updating``, serve it with a ``Refresh`` header of
    :data:`FOLLOW_EVERY` seconds: it then updates itself, with no script; it offers to stop.
    ``opened``: whether a browser opened the site (False: none could, e.g. over SSH; then
    the page gives the link to open instead of saying it opened).
    """
    facts = assess_url(url)
    asker = f"<bdi>{_e(asker_name(origin))}</bdi>"
    domain = f"<bdi>{_e(facts.display_host or facts.host)}</bdi>"
    again = "" if opened is False else " again"
    link = (
        f'<a href="{_e(url)}" rel="noreferrer noopener" target="_blank" id="site">'
        f"open <bdi>{_e(facts.host)}</bdi>{again}</a>"
    )
    where = (
        f"No browser could open it on the client's computer: {link} here and finish there."
        if opened is False
        else f"It opened in a new tab or window: finish there. Lost it? {link}."
    )
    status = {
        "waiting": (f"Waiting for {asker} to confirm you finished at {domain}…", ""),
        "completed": (f"{asker} confirms you finished at {domain}.", " ok"),
        "timeout": (f"No word from {asker} about {domain}; this page stopped waiting.", ""),
        "no-notice": (f"{asker} carries on when you are done at {domain}.", ""),
        "gone": (f"The connection to {asker} is gone.", ""),
    }[state]
    if state == "no-notice" and opened is False:  # nothing to wait for, but the site still has to be opened
        more = f"<p>{where}</p>"
    elif state != "waiting":
        more = "<p>You can close this tab.</p>"
    elif updating:
        more = (
            f"<p>{where}</p>"
            f'<p class="explain">This page checks every {FOLLOW_EVERY} seconds.{_still_link("checking")}</p>'
        )
    else:
        more = f'<p>{where} <a href="?">Check now</a>.</p>'

    titles = {"waiting": "Waiting…", "completed": "Finished", "timeout": "Stopped waiting"}
    body = (
        f'{_asker(origin, served_by)}<h1 id="outcome" data-outcome="opened" data-state="{state}">'
        f"You agreed to open {domain}</h1>"
        f'<p class="status{status[1]}" id="status" role="status">{status[0]}</p>{more}'
    )
    return _document(titles.get(state, "Opened"), "waiting", body)


def error_page(status: int, title: str, text: str) -> str:
    """A refusal or failure, with its HTTP ``status`` in the page for tests and tools."""
    body = f'<h1 id="error" data-status="{status}">{_e(title)}</h1><p>{_e(text)}</p>'
    return _document(title, "error", body)


def plain_page(title: str, page: str, body_html: str) -> str:
    """A page of the same look around ``body_html`` (already escaped), for the server's other
    pages (the connect pages of :mod:`elicitkit.server.auth.connections.web`)."""
    return _document(title, page, body_html)


def method_not_allowed_page() -> str:
    """The page for a method other than GET and POST (serve with 405 and ``Allow: GET, POST``)."""
    return _document("Method not allowed", "error", "<h1>Method not allowed</h1>")
