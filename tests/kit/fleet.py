"""The real parts of a fleet for tests: a ``redis-server`` and a round-robin ``haproxy``.

Both are Debian's packages (the test bootstrap installs them), started on free loopback ports
in a temporary directory and stopped by PID; nothing here touches a system-wide instance.
The balancer has no stickiness on purpose: every request may land on any backend, which is
exactly what the fleet has to survive.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from .processes import STARTUP_TIMEOUT, accepts_connections, free_port, stop_process


def find_program(name: str) -> str:
    """The program's path (haproxy lives in /usr/sbin, which a user's PATH may lack); skip if absent."""
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/local/sbin:/sbin")
    if found is None:
        pytest.skip(f"{name} is not installed (scripts/bootstrap.sh installs it with apt-get)")
    return found


def _wait_for_port(proc: subprocess.Popen[bytes], port: int, name: str, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        if accepts_connections(port):
            return
        time.sleep(0.02)
    stop_process(proc)
    pytest.fail(f"{name} did not start on port {port}; its log:\n{log.read_text(errors='replace')[-3000:]}")


@dataclass
class RedisServer:
    """A ``redis-server`` on a loopback port that a test may stop and start again on the same port."""

    directory: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        assert self.process is None or self.process.poll() is not None, "already running"
        log = self.directory / "redis.log"
        argv = [
            find_program("redis-server"),
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "no",
            "--dir", str(self.directory),
            "--logfile", str(log),
        ]  # fmt: skip
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        log.touch()
        _wait_for_port(self.process, self.port, "redis-server", log)

    def stop(self) -> None:
        """Stop it for good (data is not saved: a restart starts empty, like a lost cache node)."""
        if self.process is not None:
            stop_process(self.process, grace=2.0)


@contextlib.contextmanager
def redis_server() -> Iterator[RedisServer]:
    """A fresh, empty ``redis-server`` for the duration of the block."""
    with tempfile.TemporaryDirectory(prefix="elicitkit-redis-") as directory:
        server = RedisServer(Path(directory))
        server.start()
        try:
            yield server
        finally:
            server.stop()


def quick_client(url: str) -> aioredis.Redis:
    """A client that gives up fast when Redis is down (the default retries for seconds)."""
    return aioredis.Redis.from_url(url, retry=Retry(NoBackoff(), 1), socket_connect_timeout=1, socket_timeout=2)


# Fixtures for tests of the Redis stores; a test directory's conftest.py imports them.


@pytest.fixture(scope="session")
def shared_redis() -> Iterator[RedisServer]:
    """One ``redis-server`` for the session; tests keep apart by key prefix (those that stop
    Redis start their own)."""
    with redis_server() as server:
        yield server


@pytest.fixture
def prefix() -> str:
    """A key prefix of this test's own, so tests sharing the session's Redis never meet."""
    return f"test-{uuid.uuid4().hex[:12]}:"


@contextlib.asynccontextmanager
async def _connected(server: RedisServer) -> AsyncIterator[aioredis.Redis]:
    made = quick_client(server.url)
    try:
        yield made
    finally:
        await made.aclose()


@pytest.fixture
async def client(shared_redis: RedisServer) -> AsyncIterator[aioredis.Redis]:
    async with _connected(shared_redis) as made:
        yield made


@pytest.fixture
async def other_client(shared_redis: RedisServer) -> AsyncIterator[aioredis.Redis]:
    """A second connection pool: what another instance of the fleet would have."""
    async with _connected(shared_redis) as made:
        yield made


HAPROXY_CONFIG = """\
global
    maxconn 2000
defaults
    mode http
    timeout connect 2s
    timeout client 120s
    timeout server 120s
    timeout tunnel 120s
    option redispatch
    option http-no-delay
    retries 2
frontend fleet
    bind 127.0.0.1:{port}
    default_backend instances
backend instances
    balance roundrobin
{servers}
"""


@dataclass
class Balancer:
    """A running haproxy in front of the given backend ports."""

    port: int
    process: subprocess.Popen[bytes]
    backends: tuple[int, ...]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"


@contextlib.contextmanager
def round_robin(
    backend_ports: Sequence[int], *, check_interval_ms: int = 300, port: int | None = None
) -> Iterator[Balancer]:
    """haproxy balancing each request (not each connection) round-robin over ``backend_ports``.

    No cookie, no stick table, no ``prefer-last-server``: consecutive requests of one client,
    even on one keep-alive connection, go to different backends. A dead backend is taken out
    after one failed health check, and a request whose connection fails is sent elsewhere.
    ``port``: the one to bind (known before the backends start, e.g. for their public URL).
    """
    wanted = port
    program = find_program("haproxy")
    servers = "\n".join(
        f"    server i{index} 127.0.0.1:{port} check inter {check_interval_ms}ms fall 1 rise 1"
        for index, port in enumerate(backend_ports)
    )
    with tempfile.TemporaryDirectory(prefix="elicitkit-haproxy-") as directory:
        config = Path(directory) / "haproxy.cfg"
        log = Path(directory) / "haproxy.log"
        for _attempt in range(3):  # the free port may be taken before haproxy binds it
            port = wanted if wanted is not None else free_port()
            config.write_text(HAPROXY_CONFIG.format(port=port, servers=servers))
            with log.open("wb") as output:
                proc = subprocess.Popen(
                    [program, "-db", "-f", str(config)],
                    stdin=subprocess.DEVNULL,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                )
            try:
                deadline = time.monotonic() + STARTUP_TIMEOUT
                while proc.poll() is None and time.monotonic() < deadline and not accepts_connections(port):
                    time.sleep(0.02)
                if proc.poll() is not None:
                    continue
                if not accepts_connections(port):
                    break
                yield Balancer(port, proc, tuple(backend_ports))
                return
            finally:
                stop_process(proc, grace=2.0)
        pytest.fail(f"haproxy did not start; its output:\n{log.read_text(errors='replace')[-3000:]}")
