"""Throughput of one storage backend through the storage contract.

    python -m benchmarks.storage_throughput URI [-n N] [--backlog B] [--threads T]
    (from the repository root)

Times N posts (batches of 10) and then N messages taken by claim(10) +
delete_many cycles, on a fresh project; prints one JSON line per phase.
``--backlog B`` posts B more messages (untimed, batches of 100) before the
claim-delete phase, so claims walk a queue as deep as a loaded server's; ``--threads T``
runs each phase in T threads sharing the queue (T connections), as a server
with several workers would. The queue is deleted at the end; the events it
wrote stay in the backend's event log, so point it at a scratch database or
Redis prefix. ``--analyze`` refreshes PostgreSQL's statistics before the
claim-delete phase.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
import uuid
from collections.abc import Callable
from urllib.parse import urlsplit

from zq.events import fingerprint
from zq.storage import open_storage
from zq.storage.base import Storage
from zq.storage.records import NewMessage

BATCH = 10


def post_phase(storage: Storage, project: str, queue: str, total: int,
               batch_size: int = BATCH) -> int:
    body = json.dumps({"event": "benchmark", "payload": "x" * 100}, sort_keys=True)
    batch = [NewMessage(body=body, ttl=3600, delay=0, fingerprint=fingerprint(body))]
    for _ in range(total // batch_size):
        storage.messages.post(project, queue, batch * batch_size, client_id="bench")
    return total - total % batch_size


def backlog_phase(storage: Storage, project: str, queue: str, total: int) -> int:
    """The untimed backlog, in batches of 100 to fill it quickly."""
    return post_phase(storage, project, queue, total, batch_size=100)


def analyze(storage: Storage) -> None:
    """PostgreSQL: refresh the planner's statistics, as autovacuum would."""
    engine = getattr(storage, "engine", None)
    if engine is not None and engine.dialect.name == "postgresql":
        with engine.begin() as conn:
            conn.exec_driver_sql("ANALYZE")


def claim_delete_phase(storage: Storage, project: str, queue: str, total: int) -> int:
    done = 0
    while done < total:
        claim = storage.claims.create(project, queue, ttl=60, grace=60, limit=BATCH,
                                      client_id="bench")
        if claim is None:
            break
        done += len(storage.messages.delete_many(
            project, queue, [m.id for m in claim.messages], claim_ids=[claim.id],
            client_id="bench"))
    return done


Phase = Callable[[Storage, str, str, int], int]


def timed(phase: Phase, storage: Storage, project: str, queue: str, total: int,
          threads: int) -> tuple[int, float]:
    """Run ``phase`` for ``total`` messages split over ``threads``; (done, seconds)."""
    shares = [total // threads + (1 if i < total % threads else 0) for i in range(threads)]
    done = [0] * threads
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            done[index] = phase(storage, project, queue, shares[index])
        except BaseException as error:  # reported after the join
            errors.append(error)

    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    seconds = time.perf_counter() - started
    if errors:
        raise errors[0]
    return sum(done), seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="examples:\n"
               "  python -m benchmarks.storage_throughput "
               "postgresql://postgres@127.0.0.1:5432/DB -n 5000 --threads 4\n"
               "  python -m benchmarks.storage_throughput "
               "postgresql://postgres@127.0.0.1:5432/DB -n 5000 --threads 4 --backlog 50000",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("uri", help="storage URI, e.g. redis://127.0.0.1:6379/0?prefix=bench")
    parser.add_argument("-n", type=int, default=2000, help="messages per phase")
    parser.add_argument("--backlog", type=int, default=0,
                        help="messages posted (untimed) before the claim-delete phase")
    parser.add_argument("--threads", type=int, default=1, help="threads per phase")
    parser.add_argument("--analyze", action="store_true",
                        help="PostgreSQL: ANALYZE after the backlog (a fresh database has "
                             "no statistics until autovacuum's first visit)")
    args = parser.parse_args()
    total = args.n - args.n % BATCH
    threads = max(1, args.threads)
    storage = open_storage(args.uri)
    project, queue = f"bench-{uuid.uuid4().hex[:8]}", "throughput"
    backend = urlsplit(args.uri).scheme
    try:
        done, seconds = timed(post_phase, storage, project, queue, total, threads)
        report(backend, "post", done, seconds, threads, 0)
        if args.backlog:
            timed(backlog_phase, storage, project, queue, args.backlog, threads)
        if args.analyze:
            analyze(storage)
        done, seconds = timed(claim_delete_phase, storage, project, queue, total, threads)
        report(backend, "claim_delete", done, seconds, threads, args.backlog)
    finally:
        storage.queues.delete(project, queue)
        storage.close()


def report(backend: str, phase: str, done: int, seconds: float, threads: int,
           backlog: int) -> None:
    print(json.dumps({"backend": backend, "phase": phase, "messages": done,
                      "threads": threads, "backlog": backlog,
                      "seconds": round(seconds, 3),
                      "msgs_per_s": round(done / seconds) if seconds else None}), flush=True)


if __name__ == "__main__":
    main()
