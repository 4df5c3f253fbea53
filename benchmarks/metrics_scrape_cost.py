"""What one scrape of GET /metrics costs with many queues.

    python benchmarks/metrics_scrape_cost.py [--queues 1000] [--storage URI]

Posts one message to each of ``--queues`` queues of a fresh SQLite file
(or the given storage), then times, in one process: the first scrape (the
event tail reads every post, the gauges read every queue, up to
``[metrics] max_queues`` = the number of queues here), a scrape within
``cache_seconds`` (cached gauges, nothing new to tail), and a scrape after
the cache expired (the gauges read every queue again).
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid

import falcon.testing

from zq.api import create_app
from zq.clock import ManualClock
from zq.config import Config
from zq.metrics.tail import SETTLE


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="examples:\n"
               "  python benchmarks/metrics_scrape_cost.py\n"
               "  python benchmarks/metrics_scrape_cost.py --queues 5000 "
               "--storage redis://127.0.0.1:6379/11",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queues", type=int, default=1000,
                        help="queues created before the scrapes (default: %(default)s)")
    parser.add_argument("--storage", default="",
                        help="storage URI (default: a temporary SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        storage = args.storage or f"sqlite:///{tmp}/zq.sqlite3"
        clock = ManualClock(time.time())
        config = Config().with_overrides(
            storage={"uri": storage},
            metrics={"max_queues": args.queues, "budget_seconds": 60, "cache_seconds": 10})
        app = create_app(config, clock=clock)
        headers = {"Client-ID": str(uuid.uuid4()), "X-Project-ID": f"bench-{uuid.uuid4().hex}"}
        for n in range(args.queues):
            result = falcon.testing.simulate_post(
                app, f"/v2/queues/q{n}/messages", json={"messages": [{"body": n}]},
                headers=headers)
            assert result.status_code == 201, result.text
        clock.advance(SETTLE + 1)

        def scrape(what: str) -> None:
            started = time.perf_counter()
            text = falcon.testing.simulate_get(app, "/metrics").text
            seconds = time.perf_counter() - started
            series = sum(1 for line in text.splitlines() if line.startswith("zq_queue_messages"))
            print(f"{what:40} {seconds * 1000:8.1f} ms  ({series} zq_queue_messages series)")

        print(f"{args.queues} queues on {storage.split(':')[0]}")
        scrape("first scrape (tail + gauges)")
        scrape("second scrape (gauges cached)")
        time.sleep(10.1)  # the gauges' cache_seconds is wall time
        scrape("scrape after cache_seconds (gauges)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
