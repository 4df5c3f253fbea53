"""Failovers under load, and what zq's answers cost on the way: the long version of tests/failover.

    python -m benchmarks.failover [--rounds 3] [--before 10] [--after 5]
                                  [--only postgresql|redis] [--cost-seconds 10]
                                  [--lag SECONDS]
    (from the repository root)

Failover rounds: for each setup (PostgreSQL with an asynchronous, then a
synchronous standby; Redis through Sentinel with ``[redis] wait_replicas``
0, then 1), ``--rounds`` times: fresh servers on spare loopback ports
(tests/failover/servers.py), ``zq serve --workers 2``, eight clients
(three producers, five consumers: claims, deletes, retry and terminal
rejects, dead letter moves, backoff on) for ``--before`` seconds, SIGKILL
of the primary/master, promotion (PostgreSQL by hand one second later,
Redis by the sentinels), load until a post is acknowledged again and then
``--after`` seconds, the audit of tests/failover/load.py, and the
seconds until the server's gc records the expiry of a one-second message
posted after the failover ("gc after"). With
``--lag`` the replica stops receiving that many seconds before the kill
(tests/failover/servers.py ``hold_replication``) and gets its link back
right after it: the price of asynchronous replication made visible, which on
loopback is otherwise never paid.

Cost: the same servers without a failover, eight producers posting one
message each for ``--cost-seconds`` seconds, with the replica confirming
(PostgreSQL synchronous_standby_names, Redis wait_replicas = 1) and
without: acknowledged posts a second and the latency percentiles.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
import uuid
from pathlib import Path


def failover_rounds(only: str | None, rounds: int, before: float, after: float,
                    lag: float) -> None:
    from tests.failover.scenario import Timing, postgresql_failover, redis_failover

    timing = Timing(before=before, after=after, promote_after=1.0, lag=lag)
    setups = []
    if only in (None, "postgresql"):
        setups += [("postgresql async", lambda tmp: postgresql_failover(
                       tmp, synchronous=False, timing=timing)),
                   ("postgresql sync", lambda tmp: postgresql_failover(
                       tmp, synchronous=True, timing=timing))]
    if only in (None, "redis"):
        setups += [("redis wait_replicas=0", lambda tmp: redis_failover(
                       tmp, wait_replicas=0, timing=timing)),
                   ("redis wait_replicas=1", lambda tmp: redis_failover(
                       tmp, wait_replicas=1, timing=timing))]
    print("| setup | round | requests | 503 | other 5xx | past 10 s | acknowledged posts lost "
          "| deletes undone | moves undone | in two queues | half-moved | kill -> promoted s "
          "| kill -> first acknowledged post s | gc after s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, run in setups:
        for round_ in range(1, rounds + 1):
            with tempfile.TemporaryDirectory(prefix="zq-failover-bench-") as tmp:
                outcome = run(Path(tmp))
            r = outcome.report
            first = "-" if r.kill_to_first_post is None else f"{r.kill_to_first_post:.1f}"
            gc_after = outcome.gc_after_failover
            gc = "never" if gc_after is None else f"{gc_after:.1f}"
            print(f"| {name} | {round_} | {r.requests} | {r.unavailable} | {r.server_errors} "
                  f"| {len(r.hung)} | {r.acknowledged_lost} of {r.acknowledged} "
                  f"| {r.deletes_undone} of {r.deleted} | {r.moves_undone} | {r.in_two_queues} "
                  f"| {r.in_neither} | {r.kill_to_promoted:.1f} | {first} | {gc} |", flush=True)
            if outcome.client_failures:
                print(f"  client failures: {outcome.client_failures}")


def _post_rate(url: str, seconds: float, clients: int = 8) -> tuple[float, float, float]:
    """Acknowledged posts a second, p50 and p99 latency (ms), of ``clients`` posting threads."""
    import httpx

    latencies: list[float] = []
    lock = threading.Lock()
    stop = time.monotonic() + seconds
    project = f"cost-{uuid.uuid4().hex[:8]}"

    def post() -> None:
        mine = []
        with httpx.Client(base_url=url, trust_env=False, timeout=30, headers={
                "Client-ID": str(uuid.uuid4()), "X-Project-ID": project}) as http:
            while time.monotonic() < stop:
                started = time.monotonic()
                response = http.post("/v2/queues/cost/messages",
                                     json={"messages": [{"body": {"n": 1}, "ttl": 3600}]})
                if response.status_code == 201:
                    mine.append(time.monotonic() - started)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=post) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    latencies.sort()
    p99 = latencies[int(len(latencies) * 0.99)] if latencies else float("nan")
    return len(latencies) / seconds, statistics.median(latencies) * 1000, p99 * 1000


def _serve(tmp: Path, uri: str, env: dict[str, str], migrate: bool):
    from tests.crash.audit import crash_environment
    from tests.e2e.server import ServerProcess, clean_environment, run_zq

    environment = {**crash_environment(clean_environment(tmp / "data")), **env}
    if migrate:
        upgraded = run_zq("db", "upgrade", "--storage", uri, env=environment)
        assert upgraded.returncode == 0, upgraded.stderr
    return ServerProcess(tmp / f"cost-{uuid.uuid4().hex[:6]}.log", environment,
                         "--workers", "2", "--storage", uri).start()


def cost(only: str | None, seconds: float) -> None:
    from tests.failover import servers

    print("| setup | acknowledged posts/s | p50 ms | p99 ms |")
    print("| --- | --- | --- | --- |")
    if only in (None, "postgresql"):
        for synchronous in (False, True):
            with (tempfile.TemporaryDirectory(prefix="zq-failover-cost-") as tmp,
                  servers.postgresql_pair(synchronous=synchronous) as pair):
                server = _serve(Path(tmp), pair.uri, {}, migrate=True)
                try:
                    rate, p50, p99 = _post_rate(server.url, seconds)
                finally:
                    server.stop()
            name = "synchronous standby" if synchronous else "asynchronous standby"
            print(f"| postgresql, {name} | {rate:.0f} | {p50:.1f} | {p99:.1f} |", flush=True)
    if only in (None, "redis"):
        with servers.redis_sentinel_set() as redis_set:
            for wait in (0, 1):
                with tempfile.TemporaryDirectory(prefix="zq-failover-cost-") as tmp:
                    env = {"ZQ_REDIS_WAIT_REPLICAS": str(wait)}
                    server = _serve(Path(tmp), redis_set.uri, env, migrate=False)
                    try:
                        rate, p50, p99 = _post_rate(server.url, seconds)
                    finally:
                        server.stop()
                print(f"| redis via sentinel, wait_replicas = {wait} | {rate:.0f} | {p50:.1f} "
                      f"| {p99:.1f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="examples:\n"
               "  python -m benchmarks.failover --rounds 3 --before 10 --after 5\n"
               "  python -m benchmarks.failover --only redis --no-failover --cost-seconds 20",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3,
                        help="failovers per backend (default: %(default)s)")
    parser.add_argument("--before", type=float, default=10.0,
                        help="seconds of load before the kill")
    parser.add_argument("--after", type=float, default=5.0,
                        help="seconds of load after the first acknowledged post")
    parser.add_argument("--only", choices=("postgresql", "redis"),
                        help="measure this backend only (default: both)")
    parser.add_argument("--lag", type=float, default=0.0,
                        help="seconds before the kill the replica stops receiving (0: none)")
    parser.add_argument("--cost-seconds", type=float, default=10.0,
                        help="seconds of each cost measurement; 0: skip the cost")
    parser.add_argument("--no-failover", action="store_true", help="measure the cost only")
    args = parser.parse_args()
    if args.lag < 0 or args.lag >= args.before:
        parser.error("--lag must be at least 0 and less than --before")
    if not args.no_failover:
        failover_rounds(args.only, args.rounds, args.before, args.after, args.lag)
    if args.cost_seconds > 0:
        print()
        cost(args.only, args.cost_seconds)


if __name__ == "__main__":
    main()
