"""``elicitkit call`` when things go wrong, and the client's own rules (secret guard, audit, rate limit).

A call that cannot be made exits 2 with one clear line (or click's usage error) and never a
traceback; a tool error exits 1. ``asking_server.py`` (next to this file) asks a form with a
``password`` field, which the CLI refuses unless ``--allow-sensitive``: a 2025 server gets a
-32602 error telling it to use URL mode, a 2026 one a decline.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from kit.processes import free_port

from ._support import ASKING_SERVER, ELICITATION, EXAMPLES, HERE, Call, Ran, run_batch, server_command

pytestmark = pytest.mark.timeout(90)

ASKING = server_command(ASKING_SERVER)
TOOLS = server_command(EXAMPLES / "tools_basic.py")
BISTRO = server_command(ELICITATION / "bistro.py")
DEPLOY = server_command(ELICITATION / "deploy_wizard.py")
URL_MODE_ADVICE = "Use URL mode elicitation to send the user to a page of yours instead."


@pytest.fixture(scope="module")
def audits(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(tmp_path_factory.mktemp("audit"))


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory, audits: Path) -> dict[str, Ran]:
    unused = f"http://127.0.0.1:{free_port()}/mcp"  # nothing listens there

    def audit(name: str) -> list[str]:
        return ["--audit", str(audits / f"{name}.jsonl")]

    calls = {
        # usage errors
        "unknown-tool": Call(["call", TOOLS, "nope"]),
        "bad-int": Call(["call", BISTRO, "book_table", "-a", "date=2025-12-25", "-a", "party_size=x"]),
        "bad-optional-int": Call(["call", ASKING, "echo_args", "-a", "count=x"]),
        "not-key-value": Call(["call", TOOLS, "add", "-a", "a"]),
        "args-json-list": Call(["call", TOOLS, "add", "--args-json", "[1, 2]"]),
        "defaults-bad-json": Call(["call", TOOLS, "add", "-a", "a=1"], defaults="{bad"),
        "defaults-not-object": Call(["call", TOOLS, "add", "-a", "a=1"], defaults="[1]"),
        "empty-server": Call(["call", "  "]),
        "rate-negative": Call(["call", TOOLS, "add", "-a", "a=1", "--rate", "-1"]),
        "audit-unwritable": Call(
            ["call", TOOLS, "add", "-a", "a=1", "--audit", str(audits / "no-such-dir" / "a.jsonl")]
        ),
        # the call cannot be made
        "unreachable": Call(["call", unused, "add"]),
        "no-such-command": Call(["call", "/nonexistent/elicitkit-test-server --stdio"]),
        "not-on-path": Call(["call", "elicitkit-test-no-such-command"]),
        "exits-at-once": Call(["call", server_command("-c", "pass")]),
        "tool-reports-error": Call(["call", TOOLS, "add", "--args-json", '{"a": "two"}']),
        "prints-a-banner": Call(["call", server_command(HERE / "noisy_server.py"), "add", "-a", "a=2"]),
        "version-script": Call(["--version"]),
        "version-module": Call(["--version"], command=[sys.executable, "-m", "elicitkit.cli"]),
        # --arg text typed by the input schema, optional parameters included
        "echo-typed": Call(
            ["call", ASKING, "echo_args", *args("note=123", "count=4", "ratio=2", "flag=yes", 'tags=["a", "b"]')]
        ),
        "echo-nulls": Call(["call", ASKING, "echo_args", *args("note=null", "count=null", "flag=off")]),
        # the sensitive-field guard
        "password-refused": Call(["call", ASKING, "sign_in", "-a", "service=bank", *audit("password-refused")]),
        "password-refused-modern": Call(["call", ASKING, "sign_in", "-a", "service=bank", "--mode", "modern"]),
        "password-allowed": Call(
            ["call", ASKING, "sign_in", "-a", "service=bank", "--allow-sensitive", *audit("password-allowed")],
            defaults={"password": "hunter2"},
        ),
        # the audit log and the rate limit
        "deploy-audited": Call(
            ["call", DEPLOY, "deploy", "-a", "app_name=shop", *audit("deploy-audited")],
            defaults={"environment": "production", "cpu_cores": 3, "memory_gb": 5},
        ),
        "rate-limited": Call(
            [
                "call",
                BISTRO,
                "book_table",
                *args("date=2025-12-25", "party_size=2"),
                "--rate",
                "3",
                *audit("rate-limited"),
            ],
            defaults={"try_other": True},  # the default date (the 26th) is full too: it would ask forever
        ),
    }
    return run_batch(calls, Path(tmp_path_factory.mktemp("defaults")))


def args(*pairs: str) -> list[str]:
    return [word for pair in pairs for word in ("-a", pair)]


def audit_lines(audits: Path, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (audits / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()]


# ----------------------------------------------------------------------------- usage errors: exit 2


def test_unknown_tool_lists_the_tools(ran: dict[str, Ran]) -> None:
    result = ran["unknown-tool"].expect(2)
    assert result.stdout == ""
    assert "Error: the server has no tool 'nope' (it has: add, to_fahrenheit, countdown, divide)" in result.stderr


def test_bad_arg_for_an_integer(ran: dict[str, Ran]) -> None:
    result = ran["bad-int"].expect(2)
    assert result.stdout == ""
    assert (
        "Invalid value for --arg: party_size='x': the tool wants integer (invalid literal for int() with base 10: 'x')"
        in result.stderr
    )


def test_bad_arg_for_an_optional_integer(ran: dict[str, Ran]) -> None:
    result = ran["bad-optional-int"].expect(2)
    assert "Invalid value for --arg: count='x': the tool wants integer or null" in result.stderr


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("not-key-value", "Invalid value for --arg: 'a' is not KEY=VALUE"),
        ("args-json-list", "Invalid value for --args-json: must be a JSON object"),
        ("defaults-bad-json", "Invalid value for --defaults: "),
        ("defaults-not-object", "must hold an object of field name -> value"),
        ("empty-server", "Invalid value for SERVER: empty server command"),
        ("rate-negative", "Invalid value for '--rate': -1.0 is not in the range x>0."),
        ("audit-unwritable", "Invalid value for --audit: cannot write "),
    ],
)
def test_usage_errors(ran: dict[str, Ran], name: str, message: str) -> None:
    result = ran[name].expect(2)
    assert result.stdout == ""
    assert message in result.stderr


# ----------------------------------------------------------------------------- the call cannot be made


def test_unreachable_url(ran: dict[str, Ran]) -> None:
    result = ran["unreachable"].expect(2)
    assert result.stdout == ""
    assert result.stderr.startswith("error: could not reach http://127.0.0.1:")


@pytest.mark.parametrize(
    ("name", "command"),
    [("no-such-command", "/nonexistent/elicitkit-test-server"), ("not-on-path", "elicitkit-test-no-such-command")],
)
def test_server_command_that_does_not_exist(ran: dict[str, Ran], name: str, command: str) -> None:
    result = ran[name].expect(2)
    assert result.stdout == ""
    assert result.stderr.startswith("error: could not start ")
    assert f"No such file or directory: '{command}'" in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_server_that_exits_at_once(ran: dict[str, Ran]) -> None:
    result = ran["exits-at-once"].expect(2)
    assert result.stdout == ""
    [line] = result.stderr.splitlines()  # one line, whatever the transport calls it
    assert line.startswith("error: ")


def test_a_server_printing_a_banner_is_named_once_with_its_text(ran: dict[str, Ran]) -> None:
    """Issue 26.6: eight banner lines gave eight identical parse errors and never the text."""
    result = ran["prints-a-banner"].expect(0)
    assert result.stdout == "3\n"
    [line] = [line for line in result.stderr.splitlines() if "rejected invalid message" in line]
    assert "it began 'Starting my server... banner line 0'" in line
    assert "banner line 1" not in result.stderr


def test_tool_error_exits_1(ran: dict[str, Ran]) -> None:
    result = ran["tool-reports-error"].expect(1)
    assert result.stdout.startswith("Invalid arguments for tool add: a: Input should be a valid integer")


# ----------------------------------------------------------------------------- --arg typing


def test_args_typed_by_the_input_schema(ran: dict[str, Ran]) -> None:
    # note is ``str | None``: 123 stays text; count ``int | None``; ratio float; flag bool; tags a list
    assert json.loads(ran["echo-typed"].expect(0).stdout) == {
        "note": "123",
        "count": 4,
        "ratio": 2.0,
        "flag": True,
        "tags": ["a", "b"],
    }
    assert json.loads(ran["echo-nulls"].expect(0).stdout) == {
        "note": None,
        "count": None,
        "ratio": 1.0,
        "flag": False,
        "tags": None,
    }


# ----------------------------------------------------------------------------- the sensitive-field guard


def test_password_form_is_refused_and_the_server_told_to_use_url_mode(ran: dict[str, Ran], audits: Path) -> None:
    result = ran["password-refused"].expect(0)
    # the tool returns the error its question got
    assert result.stdout.startswith("refused (-32602): refused: form field(s) password look like secrets;")
    assert result.stdout.endswith(URL_MODE_ADVICE + "\n")
    # the person at the shell is told too, with the flag that lets it through (issue 26.8)
    assert "the server's form asks for password, which look like secrets" in result.stderr
    assert "rerun with --allow-sensitive" in result.stderr
    [entry] = audit_lines(audits, "password-refused")
    assert entry["action"] == "refused"
    assert entry["server"] == "asking"
    assert entry["mode"] == "form"
    assert entry["message"] == "Sign in to bank."
    assert entry["fields"] == ["username", "password"]
    assert URL_MODE_ADVICE in entry["reason"]
    assert "content" not in entry


def test_password_form_on_2026_is_a_decline(ran: dict[str, Ran]) -> None:
    result = ran["password-refused-modern"].expect(0)
    assert result.stdout == "not signed in to bank (decline)\n"
    assert "refused an input request (sent as a decline)" in result.stderr


def test_allow_sensitive_lets_the_form_through(ran: dict[str, Ran], audits: Path) -> None:
    result = ran["password-allowed"].expect(0)
    assert result.stdout == "signed in to bank as ada (a password of 7 characters)\n"
    text = (audits / "password-allowed.jsonl").read_text(encoding="utf-8")
    assert "hunter2" not in text  # answers are never written
    [entry] = audit_lines(audits, "password-allowed")
    assert entry["action"] == "accept"
    assert "content" not in entry


# ----------------------------------------------------------------------------- audit and rate limit


def test_audit_writes_one_line_per_question_without_answers(ran: dict[str, Ran], audits: Path) -> None:
    assert ran["deploy-audited"].expect(0).stdout == (
        "Deployed shop to production in eu-west: 3 cores, 5 GB, auto-scale off.\n"
    )
    entries = audit_lines(audits, "deploy-audited")
    assert [(e["message"], e["action"], e["fields"]) for e in entries] == [
        ("Step 1/2: where should shop run?", "accept", ["environment", "region"]),
        ("Step 2/2: how big should shop be in production?", "accept", ["cpu_cores", "memory_gb", "auto_scale"]),
    ]
    for entry in entries:
        assert set(entry) == {"time", "server", "serverLocation", "mode", "message", "fields", "action", "seconds"}
        assert entry["server"] == "deploy-wizard"
        assert entry["serverLocation"] == DEPLOY


def test_rate_limit_stops_a_server_that_keeps_asking(ran: dict[str, Ran], audits: Path) -> None:
    result = ran["rate-limited"].expect(0)
    assert result.stdout == "No booking made: you declined another date.\n"
    assert "rate limit: bistro @ " in result.stderr
    assert "may ask 3 questions per minute (burst 3)" in result.stderr
    actions = [entry["action"] for entry in audit_lines(audits, "rate-limited")]
    assert actions == ["accept", "accept", "accept", "decline"]


def test_console_script_and_module_agree(ran: dict[str, Ran]) -> None:
    script = ran["version-script"].expect(0)
    module = ran["version-module"].expect(0)
    assert script.stdout.startswith("elicitkit, version ")
    assert module.stdout.split(", version ")[1] == script.stdout.split(", version ")[1]
