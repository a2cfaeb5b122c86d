"""``elicitkit demo``: start the demo server over Streamable HTTP and walk through it as a client.

With a terminal attached the questions appear as terminal forms (or, with ``--ui browser``,
as browser forms); without one the CI handler answers from defaults, and a scripted visitor
stands in for the person paying on the fake bank's page. Either way the transcript shows
each call, each question with the server asking, each answer and each result.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from typing import Any

import anyio
from rich.console import Console

from elicitkit.client.client import Client
from elicitkit.client.handlers.ci import CIHandler
from elicitkit.client.handlers.policy import AuditLog, Policy, RateLimit
from elicitkit.demo.server import BOOKINGS, FOLDERS, bank, server
from elicitkit.elicitation.requests import ElicitRequest, FormRequest, UrlRequest
from elicitkit.elicitation.results import ElicitationResult
from elicitkit.transports.http.serve import serve_http_background

# What the CI handler answers with (by field name); anything else comes from the schema's defaults.
CI_DEFAULTS: dict[str, Any] = {"seating": "terrace", "extras": ["cake"], "ok": True}


def visit_and_pay(url: str, delay: float = 0.3) -> None:
    """The scripted visitor: open the bank's page, then press "Pay" (a GET, then a POST)."""
    time.sleep(delay)
    with urllib.request.urlopen(url, timeout=10) as page:
        page.read()
    with urllib.request.urlopen(urllib.request.Request(url, data=b"", method="POST"), timeout=10) as page:
        page.read()


class ScriptedVisitor:
    """URL questions without a person: consent, then a background thread pays on the fake page."""

    def __init__(self, console: Console) -> None:
        self.console = console

    async def __call__(self, request: ElicitRequest) -> ElicitationResult[Any]:
        assert isinstance(request, UrlRequest)
        self.console.print(
            f"         [dim](no person at a browser: a scripted visitor opens {request.url} and pays)[/]"
        )
        threading.Thread(target=visit_and_pay, args=(request.url,), daemon=True).start()
        return ElicitationResult.accept()


class Narrated:
    """Print each question and the answer given, around any handler (the CI transcript)."""

    def __init__(self, forms: Any, urls: Any, console: Console, quiet_questions: bool) -> None:
        self.forms, self.urls, self.console, self.quiet = forms, urls, console, quiet_questions

    async def __call__(self, request: ElicitRequest) -> ElicitationResult[Any]:
        who = request.origin.display_name if request.origin else "the server"
        if not self.quiet:
            self.console.print(f"  [bold magenta]asks[/]   {who}: {request.message}")
            if isinstance(request, FormRequest):
                for name, prop in request.requested_schema.get("properties", {}).items():
                    self.console.print(f"         - {prop.get('title', name)} [dim]({_kind(prop)})[/]")
            else:
                self.console.print(f"         open [underline]{request.url}[/]")
        handler = self.forms if isinstance(request, FormRequest) else self.urls
        result: ElicitationResult[Any] = await handler(request)
        content = ""
        if result.content and isinstance(request, FormRequest):
            content = ": " + _readable(request.requested_schema, result.content)
        self.console.print(f"  [bold green]answer[/] {result.action.value}{content}")
        return result


def _readable(schema: dict[str, Any], content: dict[str, Any]) -> str:
    """An answer as the form showed it: field titles and option titles, not raw values."""
    props = schema.get("properties", {})
    parts = []
    for name, value in content.items():
        prop = props.get(name, {})
        options = prop.get("oneOf") or prop.get("items", {}).get("anyOf") or []
        titles = {o.get("const"): o.get("title", o.get("const")) for o in options if isinstance(o, dict)}
        values = value if isinstance(value, list) else [value]
        shown = [str(titles.get(v, v)) if not isinstance(v, bool) else ("yes" if v else "no") for v in values]
        parts.append(f"{prop.get('title', name)} = {', '.join(shown) or 'none'}")
    return "; ".join(parts)


def _kind(prop: dict[str, Any]) -> str:
    if "oneOf" in prop:
        return "one of: " + ", ".join(o["title"] for o in prop["oneOf"])
    items = prop.get("items", {})
    if "anyOf" in items:
        return "any of: " + ", ".join(o["title"] for o in items["anyOf"])
    extra = f", default {prop['default']!r}" if "default" in prop else ""
    return f"{prop.get('format', prop.get('type'))}{extra}"


def _handlers(ui: str, console: Console) -> tuple[Any, Any, str]:
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    if ui == "auto":
        ui = "terminal" if interactive else "ci"
    if ui == "ci":
        return CIHandler(CI_DEFAULTS), ScriptedVisitor(console), "CI handler: answers come from defaults"
    if ui == "browser":
        from elicitkit.client.handlers.browser import BrowserHandler

        browser = BrowserHandler()
        return browser, browser, "browser forms on a one-time loopback page"
    from elicitkit.client.handlers.terminal import TerminalHandler

    async def open_or_visit(url: str) -> bool | str:
        from elicitkit.client.handlers.browser import open_in_browser

        if await open_in_browser(url):
            return True
        threading.Thread(target=visit_and_pay, args=(url, 1.0), daemon=True).start()
        return "No graphical browser here: a scripted visitor pays on the page instead."

    terminal = TerminalHandler(open_url=open_or_visit)
    return terminal, terminal, "terminal forms (Esc or Ctrl-C cancels)"


async def _step(
    console: Console, title: str, call: Callable[[], Any], *, spin: bool, record: list[dict[str, Any]] | None = None
) -> Any:
    console.print(f"  [bold cyan]call[/]   {title}")
    if spin and console.is_terminal:
        with console.status("waiting for the server ..."):
            result = await call()
    else:
        result = await call()
    style = "red" if result.is_error else "bold"
    console.print(f"  [bold cyan]result[/] [{style}]{result.text}[/]")
    if record is not None:
        record.append({"call": title, "result": result.text, "isError": result.is_error})
    return result


async def walkthrough(
    ui: str = "auto", console: Console | None = None, record: list[dict[str, Any]] | None = None
) -> int:
    """Run the three steps; each call and its result is appended to ``record`` when given."""
    if console is None:
        console = Console(highlight=False)
        if not console.is_terminal:
            console = Console(highlight=False, width=100, soft_wrap=True)  # a transcript: long lines stay whole
    forms, urls, ui_name = _handlers(ui, console)
    interactive_ui = not isinstance(forms, CIHandler)
    audit: list[dict[str, Any]] = []
    answer = Policy(
        Narrated(forms, urls, console, quiet_questions=interactive_ui),
        rate_limit=RateLimit(per_minute=30, burst=10),
        audit=AuditLog(audit.append),
    )
    BOOKINGS.clear()
    FOLDERS.update({"/demo/empty": [], "/demo/project": ["main.py", "README.md", "notes.txt"]})
    console.rule("[bold]elicitkit demo: a server that asks, a client that answers")
    async with contextlib.AsyncExitStack() as stack:
        with console.status("starting the demo server ...") if console.is_terminal else contextlib.nullcontext():
            http = await stack.enter_async_context(serve_http_background(server))
        stack.callback(bank.close)
        console.print(f"server  {server.name} on {http.url} (Streamable HTTP, uvicorn)")
        console.print(f"answers {ui_name}\n")

        console.print("[bold]1. Book a table[/] [dim]protocol 2025-11-25: the server asks in the middle of the call[/]")

        def notice(method: str, params: dict[str, Any]) -> None:
            if method == "notifications/elicitation/complete" and not interactive_ui:  # the UI says it itself
                console.print(f"  [bold green]notice[/] the server reports {params.get('elicitationId')} complete")

        async with Client(http.url, elicitation_callback=answer, notification_callback=notice) as client:
            await _step(
                console,
                'book_table {"date": "2026-12-24", "party_size": 4} (Christmas Eve is full)',
                lambda: client.call_tool("book_table", {"date": "2026-12-24", "party_size": 4}),
                spin=not interactive_ui,
                record=record,
            )
            booking = next(iter(BOOKINGS), None)
            console.print()
            console.print("[bold]2. Pay the deposit[/] [dim]URL mode: the card details never pass through MCP[/]")
            if booking is None:
                console.print("  [dim]no booking was made, so there is no deposit to pay[/]")
            else:
                await _step(
                    console,
                    f'pay_deposit {{"booking_id": "{booking}", "wait_seconds": 120}}',
                    lambda: client.call_tool("pay_deposit", {"booking_id": booking, "wait_seconds": 120}),
                    spin=not interactive_ui,
                    record=record,
                )
        console.print()
        console.print(
            "[bold]3. Delete a folder[/] [dim]protocol 2026-07-28: stateless; the question rides an"
            " InputRequiredResult and the call is retried with the answer[/]"
        )
        async with Client(http.url, mode="modern", elicitation_callback=answer) as modern:
            for path in ("/demo/empty", "/demo/project"):
                await _step(
                    console,
                    f'delete_folder {{"path": "{path}"}}',
                    lambda path=path: modern.call_tool("delete_folder", {"path": path}),  # type: ignore[misc]
                    spin=not interactive_ui,
                    record=record,
                )
        console.print()
        actions = ", ".join(f"{e['mode']} {e['action']}" for e in audit) or "none"
        console.print(f"audit log: {len(audit)} question(s): {actions}")
        if record is not None:
            record.append({"audit": [{k: e[k] for k in ("mode", "action") if k in e} for e in audit]})
    console.rule("[bold green]demo finished")
    return 0


def run(ui: str = "auto", *, as_json: bool = False) -> int:
    """Run the walkthrough; the exit status. ``as_json``: the transcript goes to stderr, and stdout
    gets one JSON object (``steps``: each call and result; ``audit``: each question's mode and action)."""
    if as_json:
        console = Console(highlight=False, stderr=True)
        record: list[dict[str, Any]] = []
        code = anyio.run(walkthrough, ui, console, record)
        audit: list[Any] = next((r["audit"] for r in record if "audit" in r), [])
        print(json.dumps({"steps": [r for r in record if "call" in r], "audit": audit}, ensure_ascii=False))
        return code
    try:
        return anyio.run(walkthrough, ui)
    except KeyboardInterrupt:
        print("\ndemo interrupted", file=sys.stderr)
        return 130
