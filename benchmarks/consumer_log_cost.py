"""What the consumer log (zq.poison.consumers) costs per claimed message.

    python -m benchmarks.consumer_log_cost [URI] [-n N] [--rounds R]
    (from the repository root; URI defaults to a temporary SQLite file)

Through the service layer, takes N messages by claim(10) + delete cycles,
once with the driver's consumer log and once with a log that stores
nothing (what zq cost before it), in R rounds alternating which goes
first. Prints the best round's messages per wall second and CPU
microseconds per message of each, then log/none ratios (wall below 1 and
CPU above 1: the log costs). Queues are deleted at the end; the events
and consumer records stay in the backend, so point it at a scratch store.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import uuid

from zq.config import Limits
from zq.pooling import SingleBackend
from zq.service import QueueService
from zq.storage import open_storage
from zq.storage.base import Storage
from zq.storage.consumer_log import ConsumerLog
from zq.storage.records import ConsumerClaim

BATCH = 10


class NoLog(ConsumerLog):
    """A consumer log that keeps nothing: zq without the feature."""

    def record(self, project: str, queue: str, claim: ConsumerClaim, *,
               forget_before: float) -> None:
        pass

    def settle(self, project: str, queue: str, claim_id: str, *, now: float,
               ended: bool) -> None:
        pass

    def extend(self, project: str, queue: str, claim_id: str, *, ttl: int,
               now: float) -> None:
        pass

    def forget(self, project: str, queue: str) -> None:
        pass

    def claims(self, project: str, queue: str, *, expires_after: float,
               client_id: str | None = None) -> list[ConsumerClaim]:
        return []


def run_round(storage: Storage, log: ConsumerLog, total: int) -> dict[str, float]:
    kept = storage.consumers
    storage.consumers = log
    try:
        svc = QueueService(Limits(), SingleBackend(storage))
        if isinstance(log, NoLog):
            # A claim writes its record, and a delete its first settle, in
            # their own steps (zq.poison.consumers): without the feature, neither.
            svc._consumers.entry = lambda client_id: None  # type: ignore[method-assign]
            svc._consumers.to_settle = (  # type: ignore[method-assign]
                lambda project, queue, claim_id: False)
        project, queue = "bench", f"log-{uuid.uuid4().hex[:8]}"
        messages = [{"body": {"n": n}, "ttl": 3600} for n in range(BATCH)]
        for _ in range(total // BATCH):
            document = {"messages": messages}
            svc.post_messages(project, queue, document, client_id="producer",
                              body_size=len(json.dumps(document)))
        wall, cpu, taken = time.perf_counter(), time.process_time(), 0
        while taken < total:
            claim = svc.claim(project, queue, {"ttl": 60, "grace": 60}, limit=BATCH,
                              client_id="consumer")
            assert claim is not None
            for message in claim.messages:
                svc.delete_message(project, queue, message.id, claim_id=claim.id,
                                   client_id="consumer")
            taken += len(claim.messages)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        svc.delete_queue(project, queue)
        return {"msgs_per_s": taken / wall, "cpu_us_per_msg": cpu / taken * 1e6}
    finally:
        storage.consumers = kept


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="examples:\n"
               "  python -m benchmarks.consumer_log_cost\n"
               "  python -m benchmarks.consumer_log_cost redis://127.0.0.1:6379/11?prefix=logcost "
               "-n 5000 --rounds 5",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("uri", nargs="?",
                        help="storage URI, a scratch store (default: a temporary SQLite file)")
    parser.add_argument("-n", type=int, default=2000,
                        help="messages claimed and deleted per mode and round "
                             "(default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds, alternating which mode goes first (default: %(default)s)")
    args = parser.parse_args()
    uri = args.uri or f"sqlite:///{tempfile.mkdtemp()}/bench.sqlite3"
    storage = open_storage(uri)
    modes = {"log": storage.consumers, "none": NoLog()}
    best: dict[str, dict[str, float]] = {}
    for round_ in range(args.rounds):
        order = list(modes) if round_ % 2 == 0 else list(reversed(modes))
        for mode in order:
            got = run_round(storage, modes[mode], args.n)
            if mode not in best or got["msgs_per_s"] > best[mode]["msgs_per_s"]:
                best[mode] = got
    for mode, got in best.items():
        print(json.dumps({"mode": mode, **{k: round(v, 1) for k, v in got.items()}}))
    print(json.dumps({
        "wall_ratio_log_over_none": round(
            best["log"]["msgs_per_s"] / best["none"]["msgs_per_s"], 3),
        "cpu_ratio_log_over_none": round(
            best["log"]["cpu_us_per_msg"] / best["none"]["cpu_us_per_msg"], 3),
        "loadavg": os.getloadavg()[0]}))
    storage.close()


if __name__ == "__main__":
    main()
