"""The demo's server: a bistro that asks instead of failing, a delete that confirms, a deposit paid on a page.

Serve it on its own with ``elicitkit serve elicitkit.demo.server:server [--transport http]``.

- ``book_table`` asks for another evening (a form with a date, a titled single-select and a
  multi-select) when the one asked for is full, and asks again if the new one is full too.
- ``delete_folder`` confirms through a resolver, only when the folder is not empty; the folders
  are a dict in memory, nothing on disk is touched.
- ``pay_deposit`` sends the user to a fake bank's page (URL mode) on a loopback port, waits
  until the page reports the payment, then tells the client the step is complete.
"""

from __future__ import annotations

import html
import secrets
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Annotated, Literal

import anyio
from pydantic import BaseModel, Field

from elicitkit import (
    AcceptedElicitation,
    CancelledElicitation,
    Context,
    DeclinedElicitation,
    Elicit,
    ElicitationResult,
    Format,
    Resolve,
    Server,
    TitledEnum,
    Titles,
    ToolError,
)

server = Server(
    "elicitkit-demo",
    "1.0.0",
    title="Bistro Elicit (demo)",
    instructions="Books tables, takes deposits, and deletes (pretend) folders, asking when it must.",
)

FULL = {"2026-12-24", "2026-12-25", "2026-12-31"}
BOOKINGS: dict[str, str] = {}


class Seating(TitledEnum):
    INSIDE = "inside", "Inside, by the window"
    TERRACE = "terrace", "On the heated terrace"
    BAR = "bar", "At the bar"


Extra = Literal["high_chair", "cake", "step_free"]


class OtherEvening(BaseModel):
    date: Annotated[str, Format("date")] = Field("2026-12-27", title="Evening", description="YYYY-MM-DD")
    seating: Seating = Field(Seating.INSIDE, title="Seating")
    extras: Annotated[
        list[Extra], Titles(high_chair="A high chair", cake="A birthday cake", step_free="Step-free access")
    ] = Field(default_factory=list, title="Anything else?")


@server.tool()
async def book_table(date: str, party_size: int, ctx: Context) -> str:
    """Book a table for ``party_size`` on the evening of ``date`` (YYYY-MM-DD)."""
    if party_size < 1 or party_size > 12:
        raise ToolError("we seat parties of 1 to 12")
    seating, extras = Seating.INSIDE, []
    for _ in range(3):
        if date not in FULL:
            break
        answer = await ctx.elicit(f"We are full on {date} for {party_size}. Pick another evening?", OtherEvening)
        match answer:
            case AcceptedElicitation(data=OtherEvening() as other):
                date, seating, extras = other.date, other.seating, list(other.extras)
            case DeclinedElicitation():
                return f"No booking: you declined another evening than {date}."
            case CancelledElicitation():
                return "No booking: the question was dismissed."
    else:
        return f"No booking: {date} is full too, and we stopped asking."
    booking_id = f"B{len(BOOKINGS) + 1:03d}"
    wishes = f", with {', '.join(e.replace('_', ' ') for e in extras)}" if extras else ""
    BOOKINGS[booking_id] = f"{party_size} on {date}, {seating.label.lower()}{wishes}"
    return f"Booked {booking_id}: {BOOKINGS[booking_id]}."


# ----------------------------------------------------------------------------- delete with a resolver

FOLDERS: dict[str, list[str]] = {
    "/demo/empty": [],
    "/demo/project": ["main.py", "README.md", "notes.txt"],
    "/demo/photos": ["cat.jpg", "sea.jpg"],
}


class Confirm(BaseModel):
    ok: bool = Field(title="Delete it?", description="The files cannot be recovered.")


async def confirm_delete(path: str) -> Confirm | Elicit[Confirm]:
    """Ask only when there is something to lose."""
    files = FOLDERS.get(path)
    if files is None:
        raise ToolError(f"no folder {path}")
    if not files:
        return Confirm(ok=True)
    return Elicit(f"{path} holds {len(files)} files ({', '.join(files)}). Delete it?", Confirm)


@server.tool()
async def delete_folder(path: str, confirm: Annotated[ElicitationResult[Confirm], Resolve(confirm_delete)]) -> str:
    """Delete a (pretend) folder, confirming first when it is not empty."""
    match confirm:
        case AcceptedElicitation(data=Confirm(ok=True)):
            FOLDERS.pop(path, None)
            return f"Deleted {path}."
        case AcceptedElicitation():
            return f"Kept {path}."
        case DeclinedElicitation():
            return f"Kept {path}: you declined."
        case CancelledElicitation():
            return f"Kept {path}: the question was dismissed."
    raise AssertionError(confirm)  # pragma: no cover


# ----------------------------------------------------------------------------- a deposit, paid out of band


@dataclass
class Payment:
    id: str
    booking_id: str
    amount: str
    paid: threading.Event = field(default_factory=threading.Event)


class FakeBank:
    """A payment page on a loopback port (stdlib HTTP server in a thread): no real money moves."""

    def __init__(self) -> None:
        self.payments: dict[str, Payment] = {}
        self._httpd: ThreadingHTTPServer | None = None
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        with self._lock:
            if self._httpd is None:
                self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _page_handler(self))
                self._httpd.daemon_threads = True
                threading.Thread(target=self._httpd.serve_forever, name="fake-bank", daemon=True).start()
            return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def open(self, booking_id: str, amount: str) -> tuple[Payment, str]:
        payment = Payment(f"pay-{secrets.token_urlsafe(9)}", booking_id, amount)
        self.payments[payment.id] = payment
        return payment, f"{self.base_url}/pay/{payment.id}"

    def close(self) -> None:
        with self._lock:
            if self._httpd is not None:
                self._httpd.shutdown()
                self._httpd.server_close()
                self._httpd = None


def _page_handler(bank: FakeBank) -> type[BaseHTTPRequestHandler]:
    class Page(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # quiet: the demo prints its own story
            pass

        def _payment(self) -> Payment | None:
            parts = self.path.split("?")[0].strip("/").split("/")
            return bank.payments.get(parts[1]) if len(parts) == 2 and parts[0] == "pay" else None

        def _send(self, status: int, body: str) -> None:
            data = (
                "<!doctype html><meta charset=utf-8><title>Fake Bank</title>"
                "<style>body{font-family:sans-serif;max-width:28em;margin:3em auto}"
                "button{font-size:1.1em;padding:.4em 1.2em}</style>" + body
            ).encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.send_header(
                "Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'"
            )
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            payment = self._payment()
            if payment is None:
                self._send(404, "<p>No such payment.</p>")
            elif payment.paid.is_set():
                self._send(200, "<h1>Already paid</h1><p>You can close this tab.</p>")
            else:
                self._send(
                    200,
                    f"<h1>Fake Bank</h1><p>Demo only: no real payment happens.</p>"
                    f"<p>Pay <b>{html.escape(payment.amount)}</b> to <b>Bistro Elicit</b>"
                    f" for booking {html.escape(payment.booking_id)}.</p>"
                    f"<form method=post><button id=pay>Pay {html.escape(payment.amount)}</button></form>",
                )

        def do_POST(self) -> None:
            payment = self._payment()
            if payment is None:
                self._send(404, "<p>No such payment.</p>")
                return
            payment.paid.set()
            self._send(200, "<h1>Paid</h1><p>Thank you. You can close this tab and go back to your assistant.</p>")

    return Page


bank = FakeBank()


@server.tool()
async def pay_deposit(booking_id: str, ctx: Context, wait_seconds: float = 300.0) -> str:
    """Take the 20 EUR deposit that holds a booking, on the bank's page: card details never pass through MCP."""
    if booking_id not in BOOKINGS:
        raise ToolError(f"no booking {booking_id}")
    payment, url = bank.open(booking_id, "20.00 EUR")
    answer = await ctx.elicit_url(
        f"Pay the 20 EUR deposit for booking {booking_id} on the bank's page.", url, elicitation_id=payment.id
    )
    if not answer.accepted:
        return f"No deposit for {booking_id} ({answer.action}); the table is held for one hour."
    # The bank's page sets the event from its own thread; wait for it there.
    paid = await anyio.to_thread.run_sync(payment.paid.wait, wait_seconds, abandon_on_cancel=True)
    if not paid:
        return f"No deposit for {booking_id}: the payment page was not completed in time."
    await ctx.elicit_complete(payment.id)
    return f"Deposit for {booking_id} paid; your table is confirmed."
