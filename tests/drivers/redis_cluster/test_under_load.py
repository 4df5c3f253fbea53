"""Conservation on a real cluster, still and while ``redis-cli --cluster reshard`` moves slots.

Eight consumers, 10% poison, every message audited (workload.py). The
reshard test moves the slot that holds the project's keys (with the slots
before it in its master's range: redis-cli moves a master's lowest slots)
to another master and back, twice, while a producer posts and the
consumers claim, delete and dead letter: calls that meet the migration
are refused before they run and retried (zq/storage/redis/cluster.py), so
nothing is lost, doubled or half moved. The longer runs, with figures,
are ``python -m benchmarks.redis_cluster`` (docs/redis.md).
"""

from __future__ import annotations

import threading
import time

import pytest
from redis.crc import key_slot

from tests.drivers.redis_cluster import workload
from tests.redis_cluster import LocalCluster
from zq.storage.redis import RedisStorage

pytestmark = pytest.mark.slow


def test_eight_consumers_with_poison_conserve_every_message(
    storage: RedisStorage, project: str
) -> None:
    tally = workload.run(storage, project, messages=300)
    assert tally.problems(storage, project) == []
    assert tally.unavailable == 0


def _ranges(cluster: LocalCluster) -> list[tuple[int, int, int]]:
    """(first slot, last slot, master port) of every served range."""
    slots = cluster.client(cluster.masters()[0]).execute_command("CLUSTER", "SLOTS")
    return sorted((int(entry[0]), int(entry[1]), int(entry[2][1])) for entry in slots)


def project_near_a_range_start(storage: RedisStorage, cluster: LocalCluster
                               ) -> tuple[str, int, int]:
    """(a project, how many of its master's lowest slots to move to move its home's, that master).

    redis-cli's reshard moves a master's lowest slots first; a project whose
    home is near its master's lowest slot needs few moved.
    """
    ranges = _ranges(cluster)
    lowest = {port: min(first for first, _, p in ranges if p == port) for _, _, port in ranges}
    best: tuple[int, str, int] | None = None
    for n in range(5000):
        project = f"reshard-{n}"
        slot = key_slot(storage._scripts.home(project).encode())
        first, _, port = next(r for r in ranges if r[0] <= slot <= r[1])
        if first == lowest[port] and (best is None or slot - first < best[0]):
            best = (slot - first, project, port)
            if best[0] < 30:
                break
    assert best is not None
    return best[1], best[0] + 1, best[2]


def test_resharding_under_load_loses_and_doubles_nothing(
    storage: RedisStorage, cluster: LocalCluster
) -> None:
    project, count, source = project_near_a_range_start(storage, cluster)
    target = next(port for port in cluster.masters() if port != source)
    source_id, target_id = cluster.node_id(source), cluster.node_id(target)
    moves_done: list[float] = []
    failures: list[BaseException] = []
    enough = threading.Event()

    def reshard() -> None:
        try:
            time.sleep(0.5)  # the workload is under way
            for _ in range(2):
                for from_id, to_id in ((source_id, target_id), (target_id, source_id)):
                    cluster.wait_agreed()
                    started = time.monotonic()
                    cluster.redis_cli(
                        "--cluster", "reshard", f"127.0.0.1:{source}",
                        "--cluster-from", from_id, "--cluster-to", to_id,
                        "--cluster-slots", str(count), "--cluster-yes",
                        "--cluster-pipeline", "5")
                    moves_done.append(time.monotonic() - started)
        except BaseException as error:
            failures.append(error)
        finally:
            enough.set()

    mover = threading.Thread(target=reshard)
    mover.start()
    tally = workload.run(storage, project, messages=300, until=enough)
    mover.join(120)
    assert failures == []
    assert len(moves_done) == 4
    assert tally.problems(storage, project) == []
    assert len(tally.posted) > 300  # the producer posted during the moves
    cluster.wait_ok()
    # The moves met the workload: calls were refused while the slot migrated.
    refused = sum(_refusals(cluster, port) for port in cluster.masters())
    print(f"{count} slots moved 4 times in {moves_done} s; {refused} calls refused "
          f"(TRYAGAIN) and retried; {tally.unavailable} answered 503")
    assert refused > 0


def _refusals(cluster: LocalCluster, port: int) -> int:
    stats = cluster.client(port).info("errorstats")
    return int(stats.get("errorstat_TRYAGAIN", {}).get("count", 0))
