"""A real authorization server for the OAuth tests: npm ``oidc-provider`` on a loopback port.

:func:`authorization_server` starts ``provider.mjs`` (beside this file) under the node 22 that
scripts/bootstrap.sh installs, with the pinned oidc-provider from the cache, on a free loopback
port, waits until it serves its discovery document and stops it by PID on the way out. It is
general on purpose: the client tests (issue 21) and the resource-server tests (issue 22) share it.
:mod:`kit.oidc.consent` is the person, in headless Chromium.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest

from kit.processes import accepts_connections, free_port, stop_process

OIDC_PROVIDER_VERSION = "9.13.3"  # keep in sync with scripts/bootstrap.sh
NODE_MAJOR = 22
SCRIPT = Path(__file__).with_name("provider.mjs")
ROOT = Path(__file__).resolve().parents[3]
STARTUP_TIMEOUT = 20.0
HINT = "run scripts/bootstrap.sh (it installs node 22 and oidc-provider into the cache)"


def cache_dir() -> Path:
    raw = os.environ.get("ELICITKIT_CACHE")
    if not raw:
        return ROOT / ".cache"
    path = Path(raw).expanduser()
    return path if path.is_absolute() else ROOT / path


def node_and_package() -> tuple[Path, Path]:
    """The node binary and the oidc-provider package directory; the test skips, saying why, without them."""
    cache = cache_dir()
    node = cache / f"node{NODE_MAJOR}" / "node_modules" / ".bin" / "node"
    package = cache / "oidc-provider" / OIDC_PROVIDER_VERSION / "node_modules" / "oidc-provider"
    if not node.is_file():
        pytest.skip(f"node {NODE_MAJOR} is not at {node}; {HINT}")
    if not (package / "package.json").is_file():
        pytest.skip(f"oidc-provider {OIDC_PROVIDER_VERSION} is not at {package}; {HINT}")
    return node, package


@dataclass
class AuthorizationServer:
    """A running oidc-provider: its issuer URL, port and process (stopped by the context manager)."""

    issuer: str
    port: int
    process: subprocess.Popen[bytes]
    log: IO[bytes]

    def get_json(self, path_or_url: str) -> Any:
        url = path_or_url if path_or_url.startswith("http") else self.issuer + path_or_url
        with urllib.request.urlopen(url, timeout=10) as response:
            return json.loads(response.read())

    @property
    def metadata(self) -> dict[str, Any]:
        """The OpenID discovery document (oidc-provider serves no RFC 8414 document of its own)."""
        data: dict[str, Any] = self.get_json("/.well-known/openid-configuration")
        return data

    def output(self) -> str:
        """What the provider printed so far (for a failing test's message)."""
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode(errors="replace")


@contextlib.contextmanager
def authorization_server(
    *,
    access_ttl: int = 3600,
    auto_consent: bool = False,
    clients: Sequence[dict[str, Any]] = (),
    resource_scopes: Sequence[str] = ("mcp:tools",),
) -> Iterator[AuthorizationServer]:
    """Run oidc-provider on a free loopback port until the block ends.

    ``access_ttl``: seconds an access token lives (short, to see a refresh); ``auto_consent``: the
    person only signs in, the grant is given without a consent page; ``clients``: pre-registered
    clients (oidc-provider client metadata); ``resource_scopes``: what a resource's token may carry.
    """
    node, package = node_and_package()
    env = {**os.environ, "OIDC_PROVIDER_ENTRY": str(package), "NODE_ENV": "development"}
    with tempfile.TemporaryDirectory(prefix="oidc-") as scratch, tempfile.TemporaryFile() as log:
        argv_tail = ["--access-ttl", str(access_ttl)]
        if auto_consent:
            argv_tail.append("--auto-consent")
        if clients:
            clients_file = Path(scratch) / "clients.json"
            clients_file.write_text(json.dumps(list(clients)), encoding="utf-8")
            argv_tail += ["--clients", str(clients_file)]
        for scope in resource_scopes:
            argv_tail += ["--resource-scope", scope]
        for _attempt in range(3):  # a free port can be taken between probing and binding it
            port = free_port()
            argv = [str(node), str(SCRIPT), "--port", str(port), *argv_tail]
            proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
            try:
                deadline = time.monotonic() + STARTUP_TIMEOUT
                while proc.poll() is None and time.monotonic() < deadline and not accepts_connections(port):
                    time.sleep(0.05)
                if proc.poll() is not None:
                    continue
                if not accepts_connections(port):
                    break
                yield AuthorizationServer(f"http://127.0.0.1:{port}", port, proc, log)
                return
            finally:
                stop_process(proc)
        log.seek(0)
        output = log.read().decode(errors="replace")
    pytest.fail(f"oidc-provider did not start; its output:\n{output[-4000:]}")


@contextlib.contextmanager
def two_authorization_servers(
    first: dict[str, Any] | None = None, second: dict[str, Any] | None = None
) -> Iterator[tuple[AuthorizationServer, AuthorizationServer]]:
    """Two oidc-provider instances on two loopback ports: an MCP server's own authorization
    server and a third-party provider its users connect accounts at (issue 22). ``first`` /
    ``second``: :func:`authorization_server` options for each. Started one after the other,
    stopped by PID in reverse order."""
    with authorization_server(**(first or {})) as one, authorization_server(**(second or {})) as two:
        assert one.port != two.port
        yield one, two
