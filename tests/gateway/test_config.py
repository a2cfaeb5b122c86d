"""The gateway's configuration: TOML and JSON read the same; every mistake is one clear error
naming the key (and the file), never a backend that silently does not appear."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from elicitkit.cli import main
from elicitkit.gateway import ConfigError, Gateway, load_config, parse_config

TOML = """
[gateway]
name = "front"
fallback = "page"

[[backends]]
name = "github"
command = "python github_server.py --verbose"
namespace = "github."

[[backends]]
name = "jira"
url = "https://jira.example.com/mcp"
namespace = "jira."
mode = "modern"

[backends.policy]
allow_url_domains = ["*.atlassian.net"]
rate_per_minute = 10
audit = "/tmp/jira-audit.jsonl"
"""


def test_toml_and_json_give_the_same_gateway(tmp_path: Path) -> None:
    toml = tmp_path / "gateway.toml"
    toml.write_text(TOML)
    config = load_config(toml)
    as_json = tmp_path / "gateway.json"
    as_json.write_text(config.model_dump_json())
    assert load_config(as_json) == config
    github, jira = config.backends
    assert config.name == "front"
    assert github.target == ["python", "github_server.py", "--verbose"] and github.mode == "legacy"
    assert jira.target == "https://jira.example.com/mcp" and jira.mode == "modern"
    assert jira.policy.allow_url_domains == ("*.atlassian.net",) and jira.policy.rate_per_minute == 10
    assert github.policy.sensitive_fields is True  # the guard is on unless switched off


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ({}, "backends: Field required"),
        ({"backends": []}, "backends: Tuple should have at least 1 item"),
        ({"backends": [{"name": "a"}]}, "backends[0]: Value error, give exactly one of 'command' (stdio) or 'url'"),
        ({"backends": [{"name": "a", "command": "x", "url": "http://h/mcp"}]}, "give exactly one of"),
        ({"backends": [{"name": "a", "url": "ftp://h"}]}, "backends[0].url: Value error, must be an http://"),
        ({"backends": [{"name": "a b", "command": "x"}]}, "backends[0].name: Value error, use letters"),
        ({"backends": [{"name": "a", "command": ""}]}, "backends[0].command: Value error, an empty command"),
        ({"backends": [{"name": "a", "command": "x", "namespce": "a."}]}, "backends[0].namespce: unknown key"),
        ({"backends": [{"name": "a", "command": "x", "mode": "2026"}]}, "backends[0].mode: Input should be"),
        (
            {"backends": [{"name": "a", "command": "x", "policy": {"rate_per_minute": 0}}]},
            "backends[0].policy.rate_per_minute: Input should be greater than 0",
        ),
        (
            {"backends": [{"name": "a", "command": "x", "policy": {"deny_domains": ["x"]}}]},
            "backends[0].policy.deny_domains: unknown key",
        ),
        ({"backends": [{"name": "a", "command": "x"}, {"name": "a", "command": "y"}]}, "two backends are named 'a'"),
        (
            {
                "backends": [
                    {"name": "a", "command": "x", "namespace": "n."},
                    {"name": "b", "command": "y", "namespace": "n."},
                ]
            },
            "backends 'a' and 'b' share the namespace 'n.'",
        ),
        ({"gateway": {"fallback": "maybe"}, "backends": [{"name": "a", "command": "x"}]}, "fallback: Input should be"),
        ({"gateway": "x", "backends": []}, "[gateway] must be a table"),
        ([1, 2], "must be a table/object, not list"),
    ],
)
def test_every_mistake_names_its_key(data: object, said: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config(data, "gw.toml")
    assert str(raised.value).startswith("gw.toml: ") and said in str(raised.value)


def test_a_file_that_cannot_be_read_or_parsed(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("[[backends]\nname = 1")
    with pytest.raises(ConfigError, match=r"broken\.toml: not valid TOML"):
        load_config(broken)
    broken_json = tmp_path / "broken.json"
    broken_json.write_text("{")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_config(broken_json)


def test_the_command_says_what_is_wrong_and_starts_nothing(tmp_path: Path) -> None:
    config = tmp_path / "gw.toml"
    config.write_text('[[backends]]\nname = "a"\ncommand = "x"\nnamespce = "a."\n')
    result = CliRunner().invoke(main, ["gateway", str(config)])
    assert result.exit_code == 2
    assert "backends[0].namespce: unknown key" in result.output


def test_a_gateway_from_a_file(tmp_path: Path) -> None:
    config = tmp_path / "gw.toml"
    config.write_text(TOML)
    gateway = Gateway.from_file(config)
    assert gateway.name == "front" and list(gateway.backends) == ["github", "jira"]


def test_an_audit_log_that_cannot_be_written_is_said_at_once(tmp_path: Path) -> None:
    config = parse_config(
        {"backends": [{"name": "a", "command": "x", "policy": {"audit": str(tmp_path / "missing" / "audit.jsonl")}}]}
    )
    with pytest.raises(ConfigError, match=r"backend 'a': policy.audit: cannot write .*missing/audit.jsonl"):
        Gateway(config)


@pytest.mark.anyio
@pytest.mark.timeout(30)
async def test_a_silent_backend_is_reported_and_does_not_hold_the_others(tmp_path: Path) -> None:
    import sys

    from elicitkit import Client

    from .support import Person, backends

    silent = {
        "name": "silent",
        "command": [sys.executable, "-c", "import time; time.sleep(60)"],
        "connect_timeout": 0.5,
    }
    config = parse_config({"backends": [silent, backends(official=False)[0]]})
    with anyio.fail_after(15):
        async with Gateway(config).running() as gateway, Client(gateway, elicitation_callback=Person()) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert "old.book" in names and not any(name.startswith("silent") for name in names)
            assert "did not answer within 0.5s" in (gateway.backends["silent"].last_error or "")


def test_the_http_event_loop_is_uvloop_when_installed_and_asyncio_when_asked(tmp_path: Path) -> None:
    gateway = parse_config({"backends": [{"name": "a", "command": "x"}]})
    served = Gateway(gateway)
    assert served.loop_options("http") == {"use_uvloop": True}  # installed by the test extra
    assert served.loop_options("stdio") == {"use_uvloop": False}  # stdio stays on asyncio's
    served.event_loop = "asyncio"
    assert served.loop_options("http") == {"use_uvloop": False}


def test_asking_for_uvloop_without_it_is_said_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "uvloop" else real(name, *a))
    served = Gateway(parse_config({"backends": [{"name": "a", "command": "x"}]}))
    assert served.loop_options("http") == {"use_uvloop": False}  # auto: asyncio's, quietly
    served.event_loop = "uvloop"
    with pytest.raises(ConfigError, match=r"elicitkit\[gateway\]"):
        served.loop_options("http")
    config = tmp_path / "gw.toml"
    config.write_text('[[backends]]\nname = "a"\ncommand = "x"\n')
    result = CliRunner().invoke(main, ["gateway", str(config), "--transport", "http", "--loop", "uvloop"])
    assert result.exit_code == 2
    assert "uvloop event loop is not installed" in result.output
