"""Three instances of ``app.py`` on one Redis behind a round-robin haproxy, for the fleet tests."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import redis

from kit.fleet import Balancer, RedisServer, redis_server, round_robin
from kit.processes import free_port, serve_several_on_free_ports

APP = Path(__file__).with_name("app.py")
FLEET_KEY = "fleet-tests-shared-secret"


@dataclass
class Instance:
    name: str
    port: int
    process: subprocess.Popen[bytes]
    log: IO[bytes] | None = None

    def output(self) -> str:
        """What the instance logged so far (for a failing test's message)."""
        if self.log is None:
            return ""
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def kill(self) -> None:
        """Die at once, as a crashed process does (no shutdown, no goodbye to Redis)."""
        self.process.kill()
        self.process.wait(timeout=10)


@dataclass
class Fleet:
    redis: RedisServer
    balancer: Balancer
    instances: dict[str, Instance] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return self.balancer.url

    def owner_of(self, session_id: str) -> Instance:
        client = redis.Redis.from_url(self.redis.url)
        try:
            owner = client.get(f"elicitkit:sess:{session_id}")
        finally:
            client.close()
        assert owner is not None, f"session {session_id} is not registered"
        return self.instances[owner.decode()]


@contextlib.contextmanager
def fleet(*, sse: bool = False, size: int = 3, app: Path = APP) -> Iterator[Fleet]:
    """``size`` instances of ``app`` (JSON answers, or SSE with ``sse``) on a fresh Redis behind haproxy.

    Each instance gets the balancer's address in ``FLEET_PUBLIC_URL`` (where people reach it).
    """
    balancer_port = free_port()
    with redis_server() as rs, contextlib.ExitStack() as stack:
        extra = ["--sse"] if sse else []
        names = [f"i{index}" for index in range(size)]
        starts = [
            (
                lambda p: [sys.executable, str(app), str(p), *extra],
                name,
                {
                    **os.environ,
                    "ELICITKIT_REDIS_URL": rs.url,
                    "ELICITKIT_FLEET_KEY": FLEET_KEY,
                    "FLEET_INSTANCE": name,
                    "FLEET_HEARTBEAT": "0.3",
                    "FLEET_PUBLIC_URL": f"http://127.0.0.1:{balancer_port}/mcp",
                },
            )
            for name in names
        ]
        served = stack.enter_context(serve_several_on_free_ports(starts))  # side by side: their imports overlap
        instances = {
            name: Instance(name, port, proc, log) for name, (port, proc, log) in zip(names, served, strict=True)
        }
        balancer = stack.enter_context(round_robin([i.port for i in instances.values()], port=balancer_port))
        yield Fleet(rs, balancer, instances)
