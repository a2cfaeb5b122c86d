"""The elicitation examples under ``examples/elicitation/`` run: their ``--demo`` transcripts.

``python example.py --demo`` runs an in-memory client inside the script; its transcript is
asserted line by line. Their tools are tested with the pytest kit, every accept, decline and
cancel path on every era they support (over stdio and HTTP too), in ``tests/examples/``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from elicitkit import Context, Server
from elicitkit.elicitation.enums import TitledEnum
from elicitkit.testing.kit import Kit, accept

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "elicitation"
BISTRO = EXAMPLES / "bistro.py"
DEPLOY = EXAMPLES / "deploy_wizard.py"
GUESS = EXAMPLES / "guess_the_number.py"
AUTH = EXAMPLES / "third_party_auth.py"

STEP = 30.0  # a hang guard for one test's whole conversation (a cold interpreter start is slow when busy)

pytestmark = pytest.mark.timeout(60)

# =============================================================================================
# --demo
# =============================================================================================


@pytest.fixture(scope="module")
def demo() -> dict[str, list[str]]:
    """Every example run with ``--demo``, all at once (fresh interpreters, started in parallel)."""
    procs = {
        script.stem: subprocess.Popen(
            [sys.executable, str(script), "--demo"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for script in (BISTRO, DEPLOY, GUESS, AUTH)
    }
    outputs: dict[str, list[str]] = {}
    try:
        for name, proc in procs.items():
            stdout, stderr = proc.communicate(timeout=STEP)
            assert proc.returncode == 0, f"{name} --demo failed:\n{stderr}"
            assert stderr == "", f"{name} --demo wrote to stderr:\n{stderr}"
            outputs[name] = stdout.splitlines()
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return outputs


def test_bistro_demo(demo: dict[str, list[str]]) -> None:
    assert demo["bistro"] == [
        "bistro asks: We are full for 2 on 2025-12-25. Try another evening?",
        "  user: accept {'try_other': True}",
        # the client filled in the schema's default date, which is full as well: asked again
        "bistro asks: We are full for 2 on 2025-12-26. Try another evening?",
        "  user: accept {'try_other': True, 'date': '2025-12-27'}",
        "book_table -> Table for 2 booked on 2025-12-27.",
        "bistro asks: We are full for 4 on 2025-12-24. Try another evening?",
        "  user: decline",
        "book_table -> No booking made: you declined another date.",
        "bistro asks: Pay the 20 EUR deposit that holds your table.",
        "  user: opens https://pay.bistro.example/deposit/42",
        "  user: accept",
        "pay_deposit -> Waiting for the deposit of booking 42; the payment page is open in your browser.",
        "client: waiting for deposit-42 to complete ...",
        "confirm_deposit -> Booking 42: deposit paid, table confirmed.",
        "client: deposit-42 complete",
    ]


def test_deploy_wizard_demo(demo: dict[str, list[str]]) -> None:
    where = "  form: environment [Staging (safe to break) | Production (real customers)], region [eu-west | us-east]"
    assert demo["deploy_wizard"] == [
        "Step 1/2: where should shop run?",
        where,
        "  user: accept {'environment': 'production'}",
        "Step 2/2: how big should shop be in production?",
        "  form: cpu_cores, memory_gb, auto_scale",
        "  user: accept {'cpu_cores': 4, 'memory_gb': 8}",
        "deploy -> Deployed shop to production in eu-west: 4 cores, 8 GB, auto-scale off.",
        "Step 1/2: where should blog run?",
        where,
        "  user: accept {'environment': 'staging', 'region': 'us-east'}",
        "Step 2/2: how big should blog be in staging?",
        "  form: cpu_cores, memory_gb, auto_scale",
        "  user: cancel",
        "deploy -> Deployment of blog stopped at step 2 (cancel).",
        "Roll shop back to its previous release?",
        "  form: confirm",
        "  user: accept {'confirm': True}",
        "rollback -> Rolled shop back.",
    ]


def test_guess_the_number_demo(demo: dict[str, list[str]]) -> None:
    lines = demo["guess_the_number"]
    assert lines[:3] == [
        "server: Shall we play guess-the-number?",
        "  user: yes",
        "server: Guess a number between 1 and 10.",
    ]
    final = re.fullmatch(r"guess_the_number -> You got it: (\d+), in (\d) guess(?:es)?!", lines[-1])
    assert final is not None, lines[-1]
    secret, count = int(final[1]), int(final[2])
    guesses = [int(line.removeprefix("  user: ")) for line in lines[3:-1:2]]
    assert len(guesses) == count <= 4  # bisection over 1..10
    assert guesses[0] == 5 and guesses[-1] == secret
    hints = lines[4:-1:2]
    assert len(hints) == count - 1
    for guess, hint in zip(guesses, hints, strict=False):
        direction = "low" if guess < secret else "high"
        assert hint.startswith(f"server: {guess} is too {direction}. Guess a number between"), hint


def test_third_party_auth_demo(demo: dict[str, list[str]]) -> None:
    consent = [
        "calendar-bridge asks: Connect your Example Calendar account.",
        "  user: opens https://calendar.example.com/oauth/authorize and consents",
        "  provider -> oauth_callback: Calendar connected. You can close this tab.",
    ]
    events = "Next events: 09:00 stand-up, 12:30 lunch with Ada, 16:00 release review."
    assert demo["third_party_auth"] == [
        "== auto_url_elicitation=True: the client completes the step and retries",
        *consent,
        f"list_events -> {events}",
        "== by hand: catch UrlElicitationRequired",
        "list_events -> error -32042: Example Calendar access is needed first.",
        *consent,
        "client: completion notice received: True",
        f"list_events (retried) -> {events}",
    ]


# =============================================================================================
# found while writing the examples
# =============================================================================================


class Placement(BaseModel):
    environment: Stage  # defined below: pydantic resolves the name when the model is first used


class Stage(TitledEnum):
    STAGING = "staging", "Staging"
    PRODUCTION = "production", "Production"


async def test_a_form_model_with_a_forward_reference_can_be_asked(elicitkit: Kit) -> None:
    server = Server("forward-reference")

    @server.tool()
    async def place(ctx: Context) -> str:
        answer = await ctx.elicit("Where?", Placement)
        return str(answer.data.environment) if answer.accepted else "no"  # type: ignore[attr-defined]

    assert not Placement.__pydantic_complete__
    elicitkit.person.will(accept({"environment": "production"}))
    result = await elicitkit.call(server, "place")
    assert result.text == "production", result.text
