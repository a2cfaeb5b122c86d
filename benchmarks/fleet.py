#!/usr/bin/env python3
"""What the fleet's Redis backplane costs: S1 (one form question per call) through haproxy.

    python benchmarks/fleet.py              # about a minute
    python benchmarks/fleet.py --calls 400 --park 300

Three setups in one run, each behind the same kind of round-robin haproxy (no stickiness):

* ``1 x plain``: one instance, no backplane (the single-process baseline);
* ``1 x redis``: one instance with the Redis backplane on (what the backplane costs by itself);
* ``3 x redis``: three instances with the backplane: two requests in three land on an instance
  that does not hold the session and are relayed through Redis.

Per setup: latency p50 of sequential calls, calls/s with 32 in flight, server CPU per call (all
instances; Redis's own CPU shown apart) and memory per parked question (server RSS, plus what
Redis holds, with ``--park`` questions waiting). Ratios are against ``1 x plain``.
Needs ``redis-server`` and ``haproxy`` (``scripts/bootstrap.sh`` installs them).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE / "servers"), str(HERE.parent / "tests")]
FLEET_KEY = "benchmark-fleet-key"


# ----------------------------------------------------------------------------- one instance


def serve(port: int, redis_url: str | None, instance: str) -> None:
    """The worker: S1's server (benchmarks/servers/elicitkit_server.py), with the backplane or not."""
    from elicitkit_server import form_server

    server: Any = form_server()
    if redis_url:
        from elicitkit.backplane.redis_backplane import RedisBackplane

        server.use_backplane(RedisBackplane.from_url(redis_url, instance_id=instance, key=FLEET_KEY))
    profile_dir = os.environ.get("BENCH_FLEET_PROFILE")  # a directory: write cProfile stats there on exit
    if not profile_dir:
        server.run("http", port=port)
        return
    import cProfile

    with cProfile.Profile(time.process_time) as profiler:
        server.run("http", port=port)
    profiler.dump_stats(f"{profile_dir}/{instance}-{'redis' if redis_url else 'plain'}-{os.getpid()}.prof")


# ----------------------------------------------------------------------------- measuring


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def redis_memory(url: str) -> int:
    import redis

    client = redis.Redis.from_url(url)
    try:
        return int(client.info("memory")["used_memory"])
    finally:
        client.close()


def redis_commands(url: str) -> dict[str, int]:
    """Commands Redis has run so far, by name (``INFO commandstats``; scripts' inner commands too)."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        stats = client.info("commandstats")
    finally:
        client.close()
    return {name.removeprefix("cmdstat_"): int(value["calls"]) for name, value in stats.items()}


def low_latency_haproxy() -> None:
    """haproxy sends a partial response with MSG_MORE unless told not to, so each SSE event waits
    for the client's delayed ACK (~200 ms on Linux). docs/fleet.md tells users to set it too."""
    import kit.fleet

    if "http-no-delay" not in kit.fleet.HAPROXY_CONFIG:
        kit.fleet.HAPROXY_CONFIG = kit.fleet.HAPROXY_CONFIG.replace(
            "    option redispatch\n", "    option redispatch\n    option http-no-delay\n"
        )


@contextlib.contextmanager
def setup(instances: int, with_redis: bool, redis_url: str, redis_pid: int) -> Iterator[dict[str, Any]]:
    from kit.fleet import round_robin
    from kit.processes import serve_on_free_port

    with contextlib.ExitStack() as stack:
        pids = []
        ports = []
        for index in range(instances):
            argv = [sys.executable, __file__, "_serve"]
            extra = ["--redis", redis_url] if with_redis else []
            port, proc, _ = stack.enter_context(
                serve_on_free_port(
                    lambda p, extra=extra, i=index, argv=argv: [*argv, str(p), "--instance", f"i{i}", *extra],
                    f"instance {index}",
                )
            )
            pids.append(proc.pid)
            ports.append(port)
        balancer = stack.enter_context(round_robin(ports, check_interval_ms=2000))
        yield {"url": balancer.url, "pids": pids, "redis_pid": redis_pid, "redis_url": redis_url}


async def measure(target: dict[str, Any], calls: int, park: int) -> dict[str, float]:
    import anyio

    from elicitkit import Client, ElicitationResult

    gate: list[anyio.Event | None] = [None]
    parked = [0]
    all_parked = anyio.Event()

    async def answer(request: Any) -> ElicitationResult[Any]:
        if gate[0] is not None:
            parked[0] += 1
            if parked[0] >= park:
                all_parked.set()
            await gate[0].wait()
        return ElicitationResult.accept({"name": "Ada", "party_size": 2, "confirm": True})

    pids, rpid = target["pids"], target["redis_pid"]
    async with Client(target["url"], mode="legacy", elicitation_callback=answer) as client:

        async def one(i: int) -> None:
            text = (await client.call_tool("book", {"date": f"2026-05-{i % 28 + 1:02d}"})).text
            assert text.startswith("booked 2 for Ada"), text

        for i in range(30):
            await one(i)
        cpu0 = sum(cpu_seconds(p) for p in pids)
        redis0 = cpu_seconds(rpid)
        commands0 = redis_commands(target["redis_url"])
        latencies = []
        for i in range(calls):
            t = time.perf_counter()
            await one(i)
            latencies.append(time.perf_counter() - t)
        t0 = time.perf_counter()
        async with anyio.create_task_group() as tg:
            limit = anyio.Semaphore(32)

            async def limited(i: int) -> None:
                async with limit:
                    await one(i)

            for i in range(calls):
                tg.start_soon(limited, i)
        rate = calls / (time.perf_counter() - t0)
        cpu = (sum(cpu_seconds(p) for p in pids) - cpu0) / (2 * calls)
        redis_cpu = (cpu_seconds(rpid) - redis0) / (2 * calls)
        commands1 = redis_commands(target["redis_url"])
        # minus this measurement's own INFO; heartbeats (one SET per instance a second) stay in
        by_name = {n: c - commands0.get(n, 0) - (n == "info") for n, c in commands1.items()}
        by_name = {n: c for n, c in by_name.items() if c > 0}
        # parked questions: memory of every instance (and of Redis) per waiting call
        await anyio.sleep(0.5)
        rss0, mem0 = sum(rss_bytes(p) for p in pids), redis_memory(target["redis_url"])
        gate[0] = anyio.Event()
        async with anyio.create_task_group() as tg:
            for i in range(park):
                tg.start_soon(one, i)
            await all_parked.wait()
            await anyio.sleep(0.5)
            rss1, mem1 = sum(rss_bytes(p) for p in pids), redis_memory(target["redis_url"])
            gate[0].set()
    return {
        "p50_ms": statistics.median(latencies) * 1000,
        "calls_per_s": rate,
        "cpu_us": cpu * 1e6,
        "redis_cpu_us": redis_cpu * 1e6,
        "park_kib": (rss1 - rss0) / park / 1024,
        "redis_park_kib": (mem1 - mem0) / park / 1024,
        "commands": sum(by_name.values()) / (2 * calls),
        "by_name": {n: c / (2 * calls) for n, c in sorted(by_name.items(), key=lambda x: -x[1])},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--park", type=int, default=200)
    parser.add_argument(
        "--without-plain-redis", action="store_true", help="skip '1 x redis' (for A/B runs of the fleet alone)"
    )
    args = parser.parse_args()
    import anyio

    from kit.fleet import redis_server

    low_latency_haproxy()
    os.environ["ELICITKIT_FLEET_KEY"] = FLEET_KEY
    setups = [("1 x plain", 1, False), ("1 x redis", 1, True), ("3 x redis", 3, True)]
    if args.without_plain_redis:
        del setups[1]
    results: dict[str, dict[str, Any]] = {}
    started = time.monotonic()
    with redis_server() as rs:
        assert rs.process is not None
        for name, count, with_redis in setups:
            with setup(count, with_redis, rs.url, rs.process.pid) as target:
                results[name] = anyio.run(measure, target, args.calls, args.park)
            print(f"  {name}: done", file=sys.stderr)
    base = results["1 x plain"]
    print(f"\nS1 (form question) through haproxy round-robin; {args.calls} calls, {args.park} parked questions")
    head = (
        f"{'setup':<10} {'p50 ms':>8} {'x':>5} {'calls/s':>8} {'x':>5} {'server CPU us/call':>19} {'x':>5}"
        f" {'+ Redis us':>10} {'KiB/parked':>10} {'x':>5} {'+ Redis KiB':>11} {'Redis cmds/call':>15}"
    )
    print(head)
    print("-" * len(head))
    for name, r in results.items():
        print(
            f"{name:<10} {r['p50_ms']:>8.2f} {r['p50_ms'] / base['p50_ms']:>5.2f} {r['calls_per_s']:>8.0f}"
            f" {r['calls_per_s'] / base['calls_per_s']:>5.2f} {r['cpu_us']:>19.0f} {r['cpu_us'] / base['cpu_us']:>5.2f}"
            f" {r['redis_cpu_us']:>10.0f} {r['park_kib']:>10.1f} {r['park_kib'] / base['park_kib']:>5.2f}"
            f" {r['redis_park_kib']:>11.2f} {r['commands']:>15.2f}"
        )
    for name, r in results.items():
        if r["by_name"]:
            detail = ", ".join(f"{n} {c:.2f}" for n, c in r["by_name"].items() if c >= 0.01)
            print(f"  {name} Redis commands per call: {detail}")
    print(f"\ntotal {time.monotonic() - started:.0f} s; 2 CPUs shared with everything else on this machine")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_serve":
        worker = argparse.ArgumentParser()
        worker.add_argument("cmd")
        worker.add_argument("port", type=int)
        worker.add_argument("--redis", default=None)
        worker.add_argument("--instance", default="i0")
        a = worker.parse_args()
        serve(a.port, a.redis, a.instance)
    else:
        main()
