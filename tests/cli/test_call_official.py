"""``elicitkit call`` against a server written with the official ``mcp`` SDK, over stdio and HTTP.

The server is ``tests/interop/peers/official_elicitation_server.py``: its ``seating`` tool asks
a form whose optional fields have defaults and answers with the raw content it received, so
these tests see exactly what the CLI's CI handler sent back.

They use the default ``--mode`` (legacy, the ``initialize`` handshake). This SDK also answers
``server/discover``, so ``--mode auto`` would speak 2026-07-28 to it, where its tools' questions
(``ctx.session.elicit_form``, ``ctx.elicit_url``) fail: they need a 2025 back-channel.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ._support import OFFICIAL_ELICITATION_SERVER, Call, Ran, http_server, run_batch, server_command

pytestmark = pytest.mark.timeout(90)

STDIO = server_command(OFFICIAL_ELICITATION_SERVER, "stdio")
HTTP = "{http}"  # replaced by the URL of the HTTP server of this module

TOOLS = ["greet", "add", "seating", "connect_account", "gated_report", "grant"]


def seated(**content: object) -> str:
    """What ``seating`` prints: the action and the raw content, as the server's ``json.dumps`` writes it."""
    return json.dumps({"action": "accept", "content": content}, sort_keys=True) + "\n"


DECLINED = json.dumps({"action": "decline", "content": None}) + "\n"

CALLS: dict[str, Call] = {}
for where, server in (("stdio", STDIO), ("http", HTTP)):
    CALLS |= {
        f"{where}-list": Call(["call", server]),
        f"{where}-seating": Call(["call", server, "seating"], defaults={"name": "Ada"}),
        f"{where}-connect": Call(["call", server, "connect_account", "-a", "account=github"]),
    }
# the rest over HTTP only: no server process to start for each (the official SDK is slow to import)
CALLS |= {
    "http-seating-declined": Call(["call", HTTP, "seating"]),
    "http-seating-toml": Call(
        ["call", HTTP, "seating", "--ui", "ci"],
        defaults='name = "Bo"\nparty_size = 5\nterrace = true\n',
        defaults_suffix=".toml",
    ),
    "http-seating-misfit": Call(["call", HTTP, "seating"], defaults={"name": "Ada", "area": "roof"}),
    "http-gated": Call(["call", HTTP, "gated_report"]),
    "http-seating-modern": Call(["call", HTTP, "seating", "--mode", "modern", "--json"], defaults={"name": "Ada"}),
}


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Ran]]:
    def argv(port: int) -> list[str]:
        return [sys.executable, str(OFFICIAL_ELICITATION_SERVER), "http", str(port)]

    with http_server(argv, OFFICIAL_ELICITATION_SERVER.name) as served:
        calls = {
            name: Call([served.url if a == HTTP else a for a in c.args], c.defaults, c.defaults_suffix)
            for name, c in CALLS.items()
        }
        yield run_batch(calls, Path(tmp_path_factory.mktemp("defaults")))


@pytest.mark.parametrize("where", ["stdio", "http"])
def test_seating_answered_from_the_defaults_file_and_the_schema(ran: dict[str, Ran], where: str) -> None:
    # name from the file; party_size, terrace and area from the form's own defaults
    result = ran[f"{where}-seating"].expect(0)
    assert result.stdout == seated(area="window", name="Ada", party_size=2, terrace=False)


def test_seating_defaults_from_toml_override_the_schema(ran: dict[str, Ran]) -> None:
    result = ran["http-seating-toml"].expect(0)
    assert result.stdout == seated(area="window", name="Bo", party_size=5, terrace=True)


def test_seating_without_a_name_is_declined(ran: dict[str, Ran]) -> None:
    result = ran["http-seating-declined"].expect(0)
    assert result.stdout == DECLINED
    assert "no default for required field(s): name" in result.stderr


def test_defaults_that_do_not_fit_the_form_are_declined(ran: dict[str, Ran]) -> None:
    result = ran["http-seating-misfit"].expect(0)
    assert result.stdout == DECLINED
    assert "the defaults do not fit the form: area: 'roof' is not one of" in result.stderr


@pytest.mark.parametrize("where", ["stdio", "http"])
def test_url_elicitation_is_declined_without_a_person(ran: dict[str, Ran], where: str) -> None:
    result = ran[f"{where}-connect"].expect(0)
    assert result.stdout == "github: decline\n"
    assert "asked to open https://auth.example.com/github" in result.stderr
    assert "URL elicitation needs a person at a browser; declined" in result.stderr


def test_url_elicitation_required_declined_ends_the_call(ran: dict[str, Ran]) -> None:
    # -32042: the client runs the URL question (declined here), so the error stands
    result = ran["http-gated"].expect(2)
    assert result.stdout == ""
    assert "asked to open https://reports.example.com/authorize" in result.stderr
    assert "error: Authorization required. (-32042)" in result.stderr


@pytest.mark.parametrize("where", ["stdio", "http"])
def test_listing_tools(ran: dict[str, Ran], where: str) -> None:
    result = ran[f"{where}-list"].expect(0)
    header, *rows = result.lines
    assert header.startswith("official-peer 9.9.9 (")
    assert header.endswith("): 10 tool(s)")
    rows = [row for row in rows if row.startswith("  ") and not row.startswith("      ")]  # tools, not arguments
    names = [row.split()[0] for row in rows]
    assert len(names) == 10
    assert set(TOOLS) <= set(names)
    seating = next(row for row in rows if row.split()[0] == "seating")
    assert "Ask how to seat a party; answers with the raw content that came back." in seating


def test_modern_against_the_official_sdk_says_try_legacy(ran: dict[str, Ran]) -> None:
    """The SDK answers server/discover, then its question fails on 2026: the CLI names the fix (issue 26.8)."""
    result = ran["http-seating-modern"].expect(2)
    assert "no back-channel" in result.stderr
    assert "try --mode legacy" in result.stderr
    said = json.loads(result.stdout)  # --json: the failure as data too
    assert said["exitCode"] == 2 and "no back-channel" in said["error"]
