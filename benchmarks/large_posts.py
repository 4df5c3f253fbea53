"""PostgreSQL posts: executemany in one transaction vs one WITH query, per size.

    python -m benchmarks.large_posts URI [--sizes 50,101,500,1000,3000] [--rounds 3]
    (from the repository root)

zq.storage.sql.messages writes a PostgreSQL post of at most
ONE_STATEMENT_POST messages as one WITH query (arrays unnested; before
issue 31 a multi-row VALUES), larger ones as executemany inserts in one transaction.
This times both ways for each size (the WITH query only where it fits), in
the same session, best of ``--rounds``, a first untimed post per size
compiling and caching its statement; prints one JSON line per size with
the ratio. On SQLite and MariaDB every post is executemany; the figures
that decided it came from this script at commit 738777e, when their
one-statement way (a multi-row INSERT) still existed. Point it at a
scratch database: the queue is deleted, its events stay.
"""

from __future__ import annotations

import argparse
import json
import time
import uuid

from zq.events import fingerprint
from zq.storage import open_storage
from zq.storage.base import Storage
from zq.storage.records import NewMessage
from zq.storage.sql import postgresql

ONE_STATEMENT_FITS = {"postgresql": 3120}


def best_post(storage: Storage, size: int, rounds: int, threshold: int) -> float:
    body = json.dumps({"n": 0})
    batch = [NewMessage(body=body, ttl=3600, delay=0, fingerprint=fingerprint(body))] * size
    project, queue = f"bench-{uuid.uuid4().hex[:8]}", "large-posts"
    saved = postgresql.ONE_STATEMENT_POST
    postgresql.ONE_STATEMENT_POST = threshold
    try:
        storage.messages.post(project, queue, batch, client_id="bench")  # compiles
        best = float("inf")
        for _ in range(rounds):
            started = time.perf_counter()
            storage.messages.post(project, queue, batch, client_id="bench")
            best = min(best, time.perf_counter() - started)
    finally:
        postgresql.ONE_STATEMENT_POST = saved
        storage.queues.delete(project, queue)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="examples:\n"
               "  python -m benchmarks.large_posts postgresql://postgres@127.0.0.1:5432/bench\n"
               "  python -m benchmarks.large_posts postgresql://postgres@127.0.0.1:5432/bench "
               "--sizes 101,1000 --rounds 5",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("uri", help="PostgreSQL URI of a scratch database")
    parser.add_argument("--sizes", default="50,101,500,1000,3000",
                        help="messages per post, comma list (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="posts per size and way, the best counts (default: %(default)s)")
    args = parser.parse_args()
    storage = open_storage(args.uri)
    dialect = storage.engine.dialect.name  # type: ignore[attr-defined]
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            many = best_post(storage, size, args.rounds, threshold=0)
            line = {"backend": dialect, "messages": size, "executemany_s": round(many, 4)}
            if size <= ONE_STATEMENT_FITS.get(dialect, 0):
                one = best_post(storage, size, args.rounds, threshold=10**9)
                line["one_statement_s"] = round(one, 4)
                line["one_statement_over_executemany"] = round(one / many, 2)
            print(json.dumps(line), flush=True)
    finally:
        storage.close()


if __name__ == "__main__":
    main()
