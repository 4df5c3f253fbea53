"""zq on a local Redis Cluster under load: the long versions of tests/drivers/redis_cluster.

    python -m benchmarks.redis_cluster [--messages 3000] [--rounds 3]
                                       [--reshard-rounds 4] [--failover]
    (from the repository root; redis-server and redis-cli on PATH)

Each round starts a fresh 6-node cluster (3 masters, 3 replicas) on spare
loopback ports (tests/redis_cluster.py) and runs:

- conservation: eight consumers, 10% poison, ``--messages`` messages, every
  message audited (tests/drivers/redis_cluster/workload.py), with the
  messages handled a second;
- resharding under load: the same workload with a producer posting all
  along while ``redis-cli --cluster reshard`` moves the slot of the
  project's keys (and its master's slots before it) to another master and
  back ``--reshard-rounds`` times; the calls Redis refused (TRYAGAIN) while
  the slot migrated, the seconds each move took, and the audit;
- with ``--failover``: tests/failover's scenario (``zq serve --workers 2``,
  eight HTTP clients, the master of the project's slot SIGKILLed, the
  replica promoted by the cluster) and its report (503s, recovery, losses).

Prints one block per round; nonzero exit status when an audit failed.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
import uuid
from pathlib import Path


def conservation_round(messages: int, reshard_rounds: int) -> bool:
    from tests.drivers.redis_cluster import workload
    from tests.drivers.redis_cluster.test_under_load import project_near_a_range_start
    from tests.redis_cluster import local_cluster
    from zq.clock import SystemClock
    from zq.storage.redis import RedisStorage, open_redis

    ok = True
    with local_cluster() as cluster:
        uri = f"{cluster.uri}?prefix=bench-{uuid.uuid4().hex[:8]}"
        storage = open_redis(uri, clock=SystemClock())
        assert isinstance(storage, RedisStorage)
        try:
            project = f"still-{uuid.uuid4().hex[:8]}"
            started = time.monotonic()
            tally = workload.run(storage, project, messages=messages, deadline=600)
            took = time.monotonic() - started
            problems = tally.problems(storage, project)
            ok &= not problems
            print(f"  conservation: {len(tally.posted)} messages in {took:.1f} s "
                  f"({len(tally.posted) / took:.0f}/s), {sum(tally.deliveries.values())} "
                  f"deliveries; problems: {problems or 'none'}")

            project, count, source = project_near_a_range_start(storage, cluster)
            target = next(port for port in cluster.masters() if port != source)
            ids = cluster.node_id(source), cluster.node_id(target)
            moves: list[float] = []
            enough = threading.Event()

            def reshard(source: int = source, ids: tuple[str, str] = ids,
                        count: int = count) -> None:
                try:
                    time.sleep(0.5)
                    for n in range(reshard_rounds):
                        cluster.wait_agreed()
                        begun = time.monotonic()
                        from_id, to_id = ids if n % 2 == 0 else ids[::-1]
                        cluster.redis_cli(
                            "--cluster", "reshard", f"127.0.0.1:{source}",
                            "--cluster-from", from_id, "--cluster-to", to_id,
                            "--cluster-slots", str(count), "--cluster-yes",
                            "--cluster-pipeline", "5")
                        moves.append(time.monotonic() - begun)
                finally:
                    enough.set()

            refused_before = _refusals(cluster)
            mover = threading.Thread(target=reshard)
            mover.start()
            started = time.monotonic()
            tally = workload.run(storage, project, messages=messages, until=enough,
                                 deadline=600)
            took = time.monotonic() - started
            mover.join(600)
            problems = tally.problems(storage, project)
            ok &= not problems and len(moves) == reshard_rounds
            print(f"  resharding: {count} slots moved {len(moves)} times "
                  f"({', '.join(f'{m:.2f}' for m in moves)} s) under {len(tally.posted)} "
                  f"messages in {took:.1f} s; {_refusals(cluster) - refused_before} calls "
                  f"refused while migrating and retried, {tally.unavailable} answered 503; "
                  f"problems: {problems or 'none'}")
        finally:
            storage.close()
    return ok


def _refusals(cluster: object) -> int:
    total = 0
    for port in cluster.masters():  # type: ignore[attr-defined]
        stats = cluster.client(port).info("errorstats")  # type: ignore[attr-defined]
        total += int(stats.get("errorstat_TRYAGAIN", {}).get("count", 0))
    return total


def failover_round() -> bool:
    from tests.failover.scenario import Timing, redis_cluster_failover

    with tempfile.TemporaryDirectory() as tmp:
        outcome = redis_cluster_failover(Path(tmp), timing=Timing(before=5.0, after=5.0))
    for line in outcome.report.lines():
        print(f"  {line}")
    report = outcome.report
    return (report.server_errors == 0 and not report.hung and report.in_two_queues == 0
            and report.in_neither == 0 and not outcome.client_failures)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="examples:\n"
               "  python -m benchmarks.redis_cluster\n"
               "  python -m benchmarks.redis_cluster --messages 3000 --rounds 2 --failover",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=3000,
                        help="messages of each conservation workload (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds, each on a fresh 6-node cluster (default: %(default)s)")
    parser.add_argument("--reshard-rounds", type=int, default=4,
                        help="slot moves there and back under load per round "
                             "(default: %(default)s)")
    parser.add_argument("--failover", action="store_true",
                        help="also kill the master of the project's slot under HTTP load")
    args = parser.parse_args()
    ok = True
    for n in range(args.rounds):
        print(f"round {n + 1}:")
        ok &= conservation_round(args.messages, args.reshard_rounds)
        if args.failover:
            ok &= failover_round()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
