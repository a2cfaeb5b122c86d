"""``elicitkit serve``: an example over Streamable HTTP called by ``elicitkit call``, the demo server over
stdio as the SERVER command of ``elicitkit call``, and targets that are not servers.
"""

from __future__ import annotations

import shlex
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from ._support import ELICITKIT, Call, Ran, Served, http_server, run, run_batch

pytestmark = pytest.mark.timeout(90)

SERVE_DEMO = shlex.join([*ELICITKIT, "serve", "elicitkit.demo.server:server"])
SERVE_TOOLS = shlex.join([*ELICITKIT, "serve", "examples/tools_basic.py"])  # the attribute defaults to "server"
FULL_EVENING = ["book_table", "-a", "date=2025-12-25", "-a", "party_size=4"]


@pytest.fixture(scope="module")
def bistro() -> Iterator[Served]:
    """``elicitkit serve examples/elicitation/bistro.py:server --transport http --port P``."""

    def argv(port: int) -> list[str]:
        return [
            *ELICITKIT,
            "serve",
            "examples/elicitation/bistro.py:server",
            "--transport",
            "http",
            "--port",
            str(port),
        ]

    with http_server(argv, "elicitkit serve bistro.py") as served:
        yield served
        # SIGTERM ends the server gracefully, with status 0
        served.process.send_signal(signal.SIGTERM)
        assert served.process.wait(timeout=10) == 0, served.output()
        assert "Traceback" not in served.output()


@pytest.fixture(scope="module")
def ran(bistro: Served, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Ran]:
    url = bistro.url
    calls = {
        "http-list": Call(["call", url]),
        "http-book": Call(["call", url, *FULL_EVENING], defaults={"try_other": True, "date": "2025-12-27"}),
        "http-book-auto": Call(
            ["call", url, *FULL_EVENING, "--mode", "auto"], defaults={"try_other": True, "date": "2025-12-28"}
        ),
        "http-book-declined": Call(["call", url, *FULL_EVENING]),
        "http-deposit": Call(["call", url, "pay_deposit", "-a", "booking_id=7"]),
        "stdio-list": Call(["call", SERVE_DEMO]),
        "stdio-delete": Call(["call", SERVE_DEMO, "delete_folder", "-a", "path=/demo/project"], defaults={"ok": True}),
        "stdio-delete-modern": Call(
            ["call", SERVE_DEMO, "delete_folder", "-a", "path=/demo/photos", "--mode", "modern"], defaults={"ok": True}
        ),
        "stdio-book": Call(
            ["call", SERVE_DEMO, "book_table", "-a", "date=2026-12-24", "-a", "party_size=4"],
            defaults={"seating": "terrace", "extras": ["cake", "step_free"]},
        ),
        "stdio-tools": Call(["call", SERVE_TOOLS, "add", "-a", "a=2", "-a", "b=3"]),
        # targets that are not servers: a clean usage error each
        "no-module": Call(["serve", "nosuchmodule:server"]),
        "no-attribute": Call(["serve", "examples/tools_basic.py:nothing"]),
        "no-file": Call(["serve", "examples/nosuch.py:server"]),
        "a-function": Call(["serve", "examples/tools_basic.py:add"]),
        "a-command": Call(["serve", "elicitkit.cli:main"]),
        "a-class": Call(["serve", "elicitkit:Server"]),
    }
    return run_batch(calls, Path(tmp_path_factory.mktemp("defaults")))


def test_call_a_served_http_server(ran: dict[str, Ran], bistro: Served) -> None:
    assert ran["http-list"].expect(0).lines[0] == f"bistro 1.0.0 ({bistro.url}): 3 tool(s)"
    assert ran["http-book"].expect(0).stdout == "Table for 4 booked on 2025-12-27.\n"
    assert ran["http-book-auto"].expect(0).stdout == "Table for 4 booked on 2025-12-28.\n"  # 2026-07-28 over HTTP
    assert ran["http-book-declined"].expect(0).stdout == "No booking made: you declined another date.\n"
    deposit = ran["http-deposit"].expect(0)
    assert deposit.stdout == "No deposit for booking 7 (decline); the table is held for one hour.\n"
    assert "bistro asked to open https://pay.bistro.example/deposit/7" in deposit.stderr


def test_served_demo_as_a_stdio_server_command(ran: dict[str, Ran]) -> None:
    header, *rows = ran["stdio-list"].expect(0).lines
    assert header == f"Bistro Elicit (demo) 1.0.0 ({SERVE_DEMO}): 3 tool(s)"
    tools = [row.split()[0] for row in rows if row.startswith("  ") and not row.startswith("      ")]
    assert tools == ["book_table", "delete_folder", "pay_deposit"]
    assert ran["stdio-delete"].expect(0).stdout == "Deleted /demo/project.\n"
    assert ran["stdio-delete-modern"].expect(0).stdout == "Deleted /demo/photos.\n"
    # Christmas Eve is full: the other evening's date is the form's default, seating and extras from the file
    book = ran["stdio-book"].expect(0)
    assert book.stdout == "Booked B001: 4 on 2026-12-27, on the heated terrace, with cake, step free.\n"


def test_served_file_with_the_default_attribute(ran: dict[str, Ran]) -> None:
    assert ran["stdio-tools"].expect(0).stdout == "5\n"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("no-module", "Invalid value for MODULE:SERVER: cannot import 'nosuchmodule'"),
        ("no-attribute", "Invalid value for MODULE:SERVER: examples/tools_basic.py has no attribute 'nothing'"),
        ("no-file", "Invalid value for MODULE:SERVER: no such file: examples/nosuch.py"),
        ("a-function", "examples/tools_basic.py:add is a function, not an elicitkit Server"),
        ("a-command", "elicitkit.cli:main is a Group, not an elicitkit Server"),
        ("a-class", "elicitkit:Server is a class, not an elicitkit Server"),
    ],
)
def test_bad_serve_target(ran: dict[str, Ran], name: str, message: str) -> None:
    result = ran[name].expect(2)
    assert result.stdout == ""
    assert message in result.stderr


def test_serve_on_a_port_in_use() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run(["serve", "examples/elicitation/bistro.py:server", "--transport", "http", "--port", str(port)])
    result.expect(2)
    # one line that says what and why, no uvicorn log or exception group (issue 26.5)
    assert result.stderr.splitlines() == [
        f"error: cannot listen on 127.0.0.1:{port}: Address already in use"
        " (another server is using that port: stop it, or choose another port)"
    ]
