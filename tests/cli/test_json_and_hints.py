"""``--json`` on every subcommand, and what the command says when a newcomer gets something wrong
(issue 26: a wrong URL path, a forced 2026 connection to nothing, a listing with arguments)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kit.processes import free_port

from ._support import ELICITKIT, EXAMPLES, ROOT, Call, Ran, child_env, run, run_batch, server_command

pytestmark = pytest.mark.timeout(120)

TOOLS = server_command(EXAMPLES / "tools_basic.py")


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Ran]:
    nothing = f"http://127.0.0.1:{free_port()}/mcp"
    calls = {
        "list-json": Call(["call", TOOLS, "--json"]),
        "unreachable-json": Call(["call", nothing, "--json"]),
        "tasks-get-nothing": Call(["tasks", "get", nothing, "t1"]),
        "tasks-get-nothing-json": Call(["tasks", "get", nothing, "t1", "--json"]),
        "tasks-cancel-nothing-json": Call(["tasks", "cancel", nothing, "t1", "--json"]),
        "modern-nothing": Call(["call", nothing, "--mode", "modern"]),
        "demo-json": Call(["demo", "--json"]),
        "help-tasks": Call(["tasks", "--help"]),
    }
    return run_batch(calls, Path(tmp_path_factory.mktemp("json")))


def test_listing_as_json_has_each_argument(ran: dict[str, Ran]) -> None:
    listing = json.loads(ran["list-json"].expect(0).stdout)
    assert listing["server"]["name"] == "tools-basic"
    add = next(tool for tool in listing["tools"] if tool["name"] == "add")
    assert add["inputSchema"]["required"] == ["a"]  # the wire form, whole
    assert add["parameters"] == [
        {"name": "a", "type": "integer", "required": True, "description": "The first number."},
        {"name": "b", "type": "integer", "required": False, "default": 1, "description": "The second number."},
    ]


def test_failures_as_json(ran: dict[str, Ran]) -> None:
    for name in ("unreachable-json", "tasks-get-nothing-json", "tasks-cancel-nothing-json"):
        result = ran[name].expect(2)
        said = json.loads(result.stdout)
        assert said["exitCode"] == 2, result
        assert "cannot connect to 127.0.0.1" in said["error"], result
        assert said["error"] in result.stderr  # and the same line for the person


def test_nothing_listening_is_not_called_an_old_server(ran: dict[str, Ran]) -> None:
    """Issue 26.7: `tasks get` (always 2026) and `--mode modern` against nothing said 'the server
    does not speak 2026-07-28 ... connect with mode='legacy'' (wrong, and tasks has no --mode)."""
    for name in ("tasks-get-nothing", "modern-nothing"):
        result = ran[name].expect(2)
        assert "is the server running at" in result.stderr, result
        assert "does not speak 2026-07-28" not in result.stderr, result
        assert "mode='legacy'" not in result.stderr, result


def test_demo_as_json(ran: dict[str, Ran]) -> None:
    result = ran["demo-json"].expect(0)
    said = json.loads(result.stdout)
    assert [step["result"] for step in said["steps"]] == [
        "Booked B001: 4 on 2026-12-27, on the heated terrace, with cake.",
        "Deposit for B001 paid; your table is confirmed.",
        "Deleted /demo/empty.",
        "Deleted /demo/project.",
    ]
    assert said["audit"] == [
        {"mode": "form", "action": "accept"},
        {"mode": "url", "action": "accept"},
        {"mode": "form", "action": "accept"},
    ]
    assert "demo finished" in result.stderr  # the transcript, for the person


def test_help_text_has_no_rest_markup(ran: dict[str, Ran]) -> None:
    assert "``" not in ran["help-tasks"].expect(0).stdout


def test_serve_json_says_where_it_listens_and_a_wrong_path_gets_a_hint() -> None:
    port = free_port()
    argv = [*ELICITKIT, "serve", "examples/tools_basic.py", "--transport", "http", "--port", str(port), "--json"]
    process = subprocess.Popen(argv, cwd=ROOT, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode()  # printed once it accepts requests
        assert json.loads(line) == {"listening": f"http://127.0.0.1:{port}/mcp", "server": "tools-basic"}
        wrong = run(["call", f"http://127.0.0.1:{port}/"]).expect(2)
        assert "HTTP 404" in wrong.stderr
        assert "It is usually at the path /mcp" in wrong.stderr
        busy = run(["serve", "examples/tools_basic.py", "--transport", "http", "--port", str(port), "--json"])
        busy.expect(2)
        assert json.loads(busy.stdout)["error"].endswith(
            "Address already in use (another server is using that port: stop it, or choose another port)"
        )
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=15)
    assert process.returncode == 0


def test_server_run_http_prints_its_address_and_a_taken_port_in_one_line(tmp_path: Path) -> None:
    """``server.run("http")`` from a script: the address on stderr; a taken port is one line, exit 1."""
    script = tmp_path / "serve_it.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(EXAMPLES)!r})\n"
        "from tools_basic import server\n"
        "server.run('http', port=int(sys.argv[1]))\n"
    )
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, str(script), str(port)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"error: cannot listen on 127.0.0.1:{port}: Address already in use"
        " (another server is using that port: stop it, or choose another port)"
    ]
    port = free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen([sys.executable, str(script), str(port)], stderr=subprocess.PIPE, env=env)
    try:
        assert process.stderr is not None
        said = process.stderr.readline().decode().strip()
        assert said == f"tools-basic: serving MCP at http://127.0.0.1:{port}/mcp (Ctrl-C stops)"
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=15)
