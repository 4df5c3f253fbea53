"""The clogging case: poison messages at the head of a queue, backoff off and on.

A queue whose first 10 messages are poison, 4 consumers claiming 10 at a
time, and a steady stream of good messages posted behind. Each consumer
spends ``--work`` seconds on every message it handles (good or poison);
a good message is then deleted, a poison one rejected for a retry
(``"retry_after": null``: the queue's backoff decides when it comes back,
at once without one). Poison never goes away (the queue has no dead letter
queue), so without backoff it is handed out again and again, ahead of the
good messages behind it.

Three runs of the same workload in one process, on one backend, through
zq's service layer (QueueService, the rules the HTTP API runs):

- ``no poison``: the baseline;
- ``poison, backoff off``;
- ``poison, backoff on`` (``_retry_delay`` / ``_retry_max_delay``, exponential).

A calibration run first measures what the 4 consumers can delete with an
unlimited backlog; the stream is then posted at ``--load`` (default 0.7)
of that rate. Each round runs the three in another order and prints, for
each run, the good messages deleted per second during the window, the
p50/p99 post-to-delete latency of good messages (those still undelivered
at the end count with their age then, a lower bound) and its ratio to the
baseline of its round; then the median over rounds. Targets (issue 16):
backoff on keeps >= 90% of the baseline's throughput and its p99 within 2x.

    PYTHONPATH=$PWD python benchmarks/clogging.py [URI] [--seconds 15] [--rounds 3]
    PYTHONPATH=$PWD python benchmarks/clogging.py redis://127.0.0.1:6379/0?prefix=clog
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from zq.clock import SystemClock
from zq.config import Limits
from zq.errors import ZqError
from zq.pooling import SingleBackend
from zq.service import QueueService
from zq.storage import open_storage

CONSUMERS = 4
CLAIM_LIMIT = 10
POISON = 10
CLAIM = {"ttl": 60, "grace": 60}
POST_EVERY = 0.05  # seconds between the producer's posts


@dataclass
class Run:
    """What one run measured."""

    name: str
    seconds: float
    good_deleted: int = 0
    poison_handled: int = 0
    latencies: list[float] = field(default_factory=list)
    undelivered: list[float] = field(default_factory=list)  # ages at the end

    @property
    def rate(self) -> float:
        return self.good_deleted / self.seconds

    def percentile(self, q: float) -> float:
        values = sorted(self.latencies + self.undelivered)
        if not values:
            return float("nan")
        return values[min(len(values) - 1, int(q * len(values)))]


class Workload:
    """One queue, its producer and its consumers, for one run."""

    def __init__(self, service: QueueService, project: str, queue: str, *, work: float,
                 rate: float | None, backlog: int) -> None:
        self.service = service
        self.project = project
        self.queue = queue
        self.work = work
        self.rate = rate  # good messages per second; None: keep ``backlog`` waiting
        self.backlog = backlog
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.posted: dict[str, float] = {}  # good message id -> post time
        self.deleted: dict[str, float] = {}
        self.poison_handled = 0
        self.poison: set[str] = set()
        self.errors: list[str] = []

    def post_good(self, count: int) -> None:
        document = {"messages": [{"body": {"good": True}, "ttl": 3600}] * count}
        now = time.monotonic()
        ids = self.service.post_messages(self.project, self.queue, document,
                                         client_id=None, body_size=40 * count)
        with self.lock:
            for message_id in ids:
                self.posted[message_id] = now

    def produce(self) -> None:
        started = time.monotonic()
        sent = 0
        while not self.stop.is_set():
            if self.rate is None:
                with self.lock:
                    waiting = len(self.posted) - len(self.deleted)
                if waiting < self.backlog:
                    self.post_good(self.backlog - waiting)
            else:
                due = int((time.monotonic() - started) * self.rate) - sent
                if due > 0:
                    self.post_good(due)
                    sent += due
            self.stop.wait(POST_EVERY)

    def consume(self) -> None:
        try:
            self._consume()
        except Exception as error:  # reported by run(), never lost with the thread
            self.errors.append(f"{type(error).__name__}: {error}")
            self.stop.set()

    def _consume(self) -> None:
        client_id = str(uuid.uuid4())
        while not self.stop.is_set():
            try:
                claim = self.service.claim(self.project, self.queue, CLAIM,
                                           limit=CLAIM_LIMIT, client_id=client_id)
            except ZqError as error:
                self.errors.append(str(error))
                continue
            if claim is None:
                self.stop.wait(0.005)
                continue
            for message in claim.messages:
                if self.stop.is_set():
                    break
                time.sleep(self.work)  # the handler
                if message.id in self.poison:
                    self.service.reject_message(
                        self.project, self.queue, message.id,
                        {"description": "ValueError: poison", "retry_after": None},
                        claim_id=claim.id, client_id=client_id)
                    with self.lock:
                        self.poison_handled += 1
                else:
                    self.service.delete_message(self.project, self.queue, message.id,
                                                claim_id=claim.id, client_id=client_id)
                    with self.lock:
                        self.deleted[message.id] = time.monotonic()

    def run(self, name: str, seconds: float) -> Run:
        threads = [threading.Thread(target=self.produce)]
        threads += [threading.Thread(target=self.consume) for _ in range(CONSUMERS)]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        self.stop.wait(seconds)
        self.stop.set()
        ended = time.monotonic()
        for thread in threads:
            thread.join()
        if self.errors:
            raise SystemExit(f"{name}: {len(self.errors)} errors, first: {self.errors[0]}")
        result = Run(name, ended - started, poison_handled=self.poison_handled)
        with self.lock:
            for message_id, posted in self.posted.items():
                done = self.deleted.get(message_id)
                if done is not None and done <= ended:
                    result.good_deleted += 1
                    result.latencies.append(done - posted)
                elif done is None:
                    result.undelivered.append(ended - posted)
        return result


def run_once(service: QueueService, name: str, *, poison: bool, metadata: dict[str, Any],
             work: float, rate: float | None, seconds: float, backlog: int = 200) -> Run:
    project = f"clog-{uuid.uuid4().hex[:8]}"
    queue = "orders"
    service.create_queue(project, queue, metadata)
    workload = Workload(service, project, queue, work=work, rate=rate, backlog=backlog)
    if poison:
        ids = service.post_messages(
            project, queue, {"messages": [{"body": {"poison": n}, "ttl": 3600}
                                          for n in range(POISON)]},
            client_id=None, body_size=30 * POISON)
        workload.poison = set(ids)
    result = workload.run(name, seconds)
    service.delete_queue(project, queue)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  PYTHONPATH=$PWD python benchmarks/clogging.py --seconds 15",
    )
    parser.add_argument("uri", nargs="?", help="storage URI (default: a temporary SQLite file)")
    parser.add_argument("--seconds", type=float, default=15.0, help="length of each run (15)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of the three runs, each in another order (3)")
    parser.add_argument("--work", type=float, default=0.005,
                        help="seconds a handler spends on each message (0.005)")
    parser.add_argument("--load", type=float, default=0.7,
                        help="the stream's rate as a share of the calibrated capacity (0.7)")
    parser.add_argument("--retry-delay", type=int, default=1, help="_retry_delay of the run "
                        "with backoff on (1)")
    parser.add_argument("--retry-max-delay", type=int, default=60,
                        help="_retry_max_delay of the run with backoff on (60)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        uri = args.uri or f"sqlite:///{scratch}/clogging.sqlite3"
        if not args.uri:
            from zq.storage.sql import migrate
            migrate.upgrade(uri)
        storage = open_storage(uri, clock=SystemClock())
        service = QueueService(Limits(), SingleBackend(storage))
        print(f"backend {uri.split(':', 1)[0]}, {CONSUMERS} consumers claiming {CLAIM_LIMIT}, "
              f"{args.work * 1000:g} ms per message, {args.seconds:g} s per run", flush=True)
        calibration = run_once(service, "calibration", poison=False, metadata={},
                               work=args.work, rate=None, seconds=min(args.seconds, 10))
        rate = calibration.rate * args.load
        print(f"capacity {calibration.rate:.0f} good msg/s with a backlog; stream at "
              f"{args.load:g} of it: {rate:.0f} msg/s", flush=True)
        backoff = {"_retry_delay": args.retry_delay, "_retry_max_delay": args.retry_max_delay}
        modes = [
            ("no poison", False, {}),
            ("poison, backoff off", True, {}),
            ("poison, backoff on", True, backoff),
        ]
        rounds: list[dict[str, Run]] = []
        for number in range(args.rounds):
            # Each round runs the three in another order: the load of a shared
            # machine drifts, and the ratios are taken within a round.
            order = modes[number % 3:] + modes[:number % 3]
            found = {}
            for name, poison, metadata in order:
                found[name] = run_once(service, name, poison=poison, metadata=metadata,
                                       work=args.work, rate=rate, seconds=args.seconds)
            rounds.append(found)
            print_round(number + 1, found)
        storage.close()
    summarize(rounds)


def print_round(number: int, runs: dict[str, Run]) -> None:
    base = runs["no poison"]
    print(f"\nround {number}\n{'run':<22}{'good/s':>9}{'ratio':>8}{'p50 ms':>9}{'p99 ms':>10}"
          f"{'p99 ratio':>11}{'undelivered':>13}{'poison handled':>16}")
    for run in runs.values():
        p50, p99 = run.percentile(0.5) * 1000, run.percentile(0.99) * 1000
        print(f"{run.name:<22}{run.rate:>9.1f}{run.rate / base.rate:>8.2f}{p50:>9.0f}"
              f"{p99:>10.0f}{run.percentile(0.99) / base.percentile(0.99):>11.2f}"
              f"{len(run.undelivered):>13}{run.poison_handled:>16}", flush=True)


def summarize(rounds: list[dict[str, Run]]) -> None:
    """Median over rounds of each run's ratios to the baseline of its round."""
    print(f"\nmedian of {len(rounds)} rounds, ratios to the no-poison run of the same round")
    print(f"{'run':<22}{'good/s':>9}{'ratio':>8}{'p99 ms':>10}{'p99 ratio':>11}")
    ratios = {}
    for name in rounds[0]:
        rate = statistics.median(r[name].rate for r in rounds)
        p99 = statistics.median(r[name].percentile(0.99) for r in rounds) * 1000
        ratio = statistics.median(r[name].rate / r["no poison"].rate for r in rounds)
        p99_ratio = statistics.median(r[name].percentile(0.99) / r["no poison"].percentile(0.99)
                                      for r in rounds)
        ratios[name] = (ratio, p99_ratio)
        print(f"{name:<22}{rate:>9.1f}{ratio:>8.2f}{p99:>10.0f}{p99_ratio:>11.2f}")
    ratio, p99_ratio = ratios["poison, backoff on"]
    met = ratio >= 0.9 and p99_ratio <= 2
    print(f"\ntarget (backoff on: >= 0.90 of the throughput, p99 within 2x): "
          f"{'met' if met else 'NOT met'}")

if __name__ == "__main__":
    main()
