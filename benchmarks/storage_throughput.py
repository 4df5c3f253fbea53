"""Throughput of one storage backend through the storage contract.

    python -m benchmarks.storage_throughput URI [-n N]   (from the repository root)

Times N posts (batches of 10) and then N messages taken by claim(10) +
delete_many cycles, in one thread, on a fresh project; prints one JSON line
per phase. The queue is deleted at the end; the events it wrote stay in the
backend's event log, so point it at a scratch database or Redis prefix.
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from urllib.parse import urlsplit

from zq.events import fingerprint
from zq.storage import open_storage
from zq.storage.base import NewMessage, Storage

BATCH = 10


def post_phase(storage: Storage, project: str, queue: str, total: int) -> float:
    body = json.dumps({"event": "benchmark", "payload": "x" * 100}, sort_keys=True)
    batch = [NewMessage(body=body, ttl=3600, delay=0, fingerprint=fingerprint(body))] * BATCH
    started = time.perf_counter()
    for _ in range(total // BATCH):
        storage.messages.post(project, queue, batch, client_id="bench")
    return time.perf_counter() - started


def claim_delete_phase(storage: Storage, project: str, queue: str, total: int) -> float:
    done = 0
    started = time.perf_counter()
    while done < total:
        claim = storage.claims.create(project, queue, ttl=60, grace=60, limit=BATCH,
                                      client_id="bench", dead_letter=None)
        if claim is None:
            break
        done += len(storage.messages.delete_many(
            project, queue, [m.id for m in claim.messages], claim_ids=[claim.id],
            client_id="bench"))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("uri", help="storage URI, e.g. redis://127.0.0.1:6379/0?prefix=bench")
    parser.add_argument("-n", type=int, default=2000, help="messages per phase")
    args = parser.parse_args()
    total = args.n - args.n % BATCH
    storage = open_storage(args.uri)
    project, queue = f"bench-{uuid.uuid4().hex[:8]}", "throughput"
    backend = urlsplit(args.uri).scheme
    try:
        for phase, run in [("post", post_phase), ("claim_delete", claim_delete_phase)]:
            seconds = run(storage, project, queue, total)
            print(json.dumps({"backend": backend, "phase": phase, "messages": total,
                              "seconds": round(seconds, 3),
                              "msgs_per_s": round(total / seconds)}))
    finally:
        storage.queues.delete(project, queue)
        storage.close()


if __name__ == "__main__":
    main()
