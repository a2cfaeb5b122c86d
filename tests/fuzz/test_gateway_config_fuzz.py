"""The gateway's configuration reader against any JSON-like value and any text: it returns a
config or raises :class:`ConfigError` naming the source, and nothing else escapes."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from elicitkit.gateway import ConfigError, GatewayConfig, load_config, parse_config
from elicitkit.gateway.auth import BackendAuth, FrontDoor

from ._budget import fuzz_settings
from ._strategies import json_values

# Every key the models know, and one each they do not (refused, naming it).
AUTH_KEYS = [*sorted(BackendAuth.model_fields), "client_secret"]
FRONT_DOOR_KEYS = [*sorted(FrontDoor.model_fields), "audience"]

backend_like = st.fixed_dictionaries(
    {},
    optional={
        "name": st.one_of(st.text(max_size=10), json_values),
        "command": st.one_of(st.text(max_size=20), st.lists(st.text(max_size=5), max_size=3), json_values),
        "url": st.one_of(st.sampled_from(["http://h/mcp", "https://h", "ftp://x", ""]), json_values),
        "namespace": st.one_of(st.text(max_size=5), json_values),
        "mode": st.one_of(st.sampled_from(["legacy", "modern", "auto", "x"]), json_values),
        "policy": st.one_of(st.dictionaries(st.text(max_size=12), json_values, max_size=3), json_values),
        "timeout": json_values,
        "auth": st.one_of(
            st.dictionaries(
                st.sampled_from(AUTH_KEYS),
                st.one_of(
                    st.sampled_from(["client_credentials", "oauth", "token", "connect", "FUZZ_SET", "FUZZ_UNSET"]),
                    st.sampled_from(["https://login.example.com", "nope", "/tmp"]),
                    json_values,
                ),
                max_size=5,
            ),
            json_values,
        ),
        "tasks": st.one_of(st.sampled_from(["never", "optional", "always"]), json_values),
    },
)
front_door = st.dictionaries(
    st.sampled_from(FRONT_DOOR_KEYS),
    st.one_of(st.sampled_from(["https://gw.example.com/mcp", "FUZZ_SET", "FUZZ_UNSET", "x"]), json_values),
    max_size=5,
)
configs = st.one_of(
    json_values,
    st.fixed_dictionaries({"backends": st.one_of(st.lists(backend_like, max_size=3), json_values)}),
    st.fixed_dictionaries({"gateway": json_values, "backends": st.lists(backend_like, max_size=2)}),
    st.fixed_dictionaries(
        {
            "gateway": st.fixed_dictionaries({"auth": st.one_of(front_door, json_values)}),
            "backends": st.lists(backend_like, max_size=2),
        }
    ),
)


@fuzz_settings(300)
@given(data=configs)
def test_any_value_is_a_config_or_a_config_error(data: object) -> None:
    os.environ["FUZZ_SET"] = "a-secret-the-errors-never-show"  # (the auth tables name variables)
    os.environ.pop("FUZZ_UNSET", None)
    try:
        config = parse_config(data, "fuzz.toml")
    except ConfigError as exc:
        assert str(exc).startswith("fuzz.toml: ")
        assert "a-secret-the-errors-never-show" not in str(exc)
        return
    assert isinstance(config, GatewayConfig) and config.backends


@fuzz_settings(150)
@given(text=st.text(max_size=200), suffix=st.sampled_from([".toml", ".json"]))
def test_any_file_is_a_config_or_a_config_error(text: str, suffix: str) -> None:
    with tempfile.TemporaryDirectory() as where:
        path = Path(where) / f"gw{suffix}"
        path.write_text(text, encoding="utf-8")
        try:
            load_config(path)
        except ConfigError as exc:
            assert str(path) in str(exc)
