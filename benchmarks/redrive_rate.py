"""Redrive rate: messages/s moved back out of a large dead letter queue.

    PYTHONPATH=$PWD python benchmarks/redrive_rate.py [--count 100000]
        [--backends sqlite,postgresql,redis]

For each backend (a scratch SQLite file, a fresh PostgreSQL database, a
random Redis key prefix, all removed afterwards), fills two dead letter
queues with ``--count`` messages each (posted to "orders" and rejected into
the queue, untimed), then times, in the same run:

- A, ``redrive``: QueueService.redrive pages of 200 (the limit cap) until
  the queue is empty, as ``zq redrive`` and ``POST .../redrive`` do
  (selection over the listing, pool checks, the move primitive);
- B, ``move``: the move primitive alone (``MessageController.move`` with
  ``zq.poison.moves.redriven``) over the known ids in chunks of 200: the floor.

Prints one JSON line per backend with both rates, A/B, and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import uuid

from benchmarks.scratch_storage import scratch
from zq.config import Limits
from zq.events import fingerprint
from zq.poison import moves
from zq.pooling import SingleBackend
from zq.service import QueueService
from zq.storage import open_storage
from zq.storage.base import Storage
from zq.storage.records import NewMessage

BATCH = 500
PAGE = 200


def fill(storage: Storage, project: str, dlq: str, count: int) -> list[str]:
    """``count`` messages rejected from "orders" into ``dlq`` (untimed)."""
    body = json.dumps({"order": 1, "payload": "x" * 100}, sort_keys=True)
    message = NewMessage(body=body, ttl=86400, delay=0, fingerprint=fingerprint(body))
    posted: list[str] = []
    for start in range(0, count, BATCH):
        ids = storage.messages.post(project, "orders", [message] * min(BATCH, count - start),
                                    client_id=None)
        storage.messages.move(project, "orders", ids, moves.rejected(dlq, None, "boom"),
                              client_id=None)
        posted += ids
    return posted


def redrive_all(service: QueueService, project: str, dlq: str) -> int:
    moved, marker = 0, None
    while True:
        result = service.redrive(project, dlq, {"limit": PAGE, "marker": marker},
                                 client_id=None)
        moved += result.moved
        if result.next is None:
            return moved
        marker = result.next


def move_all(storage: Storage, project: str, dlq: str, ids: list[str]) -> int:
    moved = 0
    for start in range(0, len(ids), PAGE):
        moved += len(storage.messages.move(project, dlq, ids[start:start + PAGE],
                                           moves.redriven("orders", 3600), client_id=None))
    return moved


def measure(backend: str, count: int) -> dict[str, object]:
    with scratch(backend) as uri:
        storage = open_storage(uri)
        try:
            project = f"bench-{uuid.uuid4().hex[:8]}"
            fill(storage, project, "dlq-a", count)
            ids_b = fill(storage, project, "dlq-b", count)
            service = QueueService(Limits(), SingleBackend(storage))
            started = time.perf_counter()
            moved_a = redrive_all(service, project, "dlq-a")
            seconds_a = time.perf_counter() - started
            started = time.perf_counter()
            moved_b = move_all(storage, project, "dlq-b", ids_b)
            seconds_b = time.perf_counter() - started
        finally:
            storage.close()
    assert moved_a == moved_b == count, (moved_a, moved_b, count)
    rate_a, rate_b = count / seconds_a, count / seconds_b
    return {"backend": backend, "messages": count,
            "redrive_per_s": round(rate_a), "move_per_s": round(rate_b),
            "redrive_over_move": round(rate_a / rate_b, 2),
            "redrive_seconds": round(seconds_a, 1), "loadavg": os.getloadavg()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="examples:\n"
               "  python benchmarks/redrive_rate.py --count 2000\n"
               "  python benchmarks/redrive_rate.py --count 100000 --backends sqlite",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=100_000,
                        help="messages per dead letter queue (default 100000)")
    parser.add_argument("--backends", default="sqlite,postgresql,redis",
                        help="comma list of backends, one scratch store each "
                             "(default: %(default)s)")
    args = parser.parse_args()
    for backend in args.backends.split(","):
        print(json.dumps(measure(backend.strip(), args.count)), flush=True)


if __name__ == "__main__":
    main()
