"""The RSGI -> thread hand-off alone (zq.buffered_wsgi), two checkouts alternating, in process.

    python -m benchmarks.handoff_ab --baseline /tmp/zq-main --repeat 3 --concurrency 8

Each run loads ``zq/buffered_wsgi.py`` of one checkout in a fresh process,
puts ``--requests`` body-less requests through its ``BufferedWSGI`` (4
threads) to a WSGI app that answers ``{}`` at once, ``--concurrency`` at a
time on one event loop, and prints req/s and CPU microseconds per request.
No granian and no storage: the figure is the cost of zq's own hand-off
between the loop and the app threads, which HTTP benchmarks on a loaded
machine cannot separate from the noise.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


class Protocol:
    """An RSGI protocol of a request without a body."""

    answer: Any = None

    def response_bytes(self, status: int, headers: list, body: bytes) -> None:
        self.answer = status


class Headers(dict):
    pass


def app(environ: dict, start_response: Any) -> list[bytes]:
    start_response("200 OK", [("content-type", "application/json")])
    return [b"{}"]


def one_run(checkout: Path, requests: int, concurrency: int) -> dict:
    spec = importlib.util.spec_from_file_location("handoff", checkout / "zq/buffered_wsgi.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    front = module.BufferedWSGI(app, threads=4, body_timeout=5, max_body=100)
    scope = SimpleNamespace(http_version="1.1", server="127.0.0.1:8888", client="127.0.0.1:1",
                            scheme="http", method="GET", path="/v2/ping", query_string="",
                            headers=Headers())

    async def main() -> tuple[float, float]:
        gate = asyncio.Semaphore(concurrency)

        async def request() -> None:
            async with gate:
                await front.__rsgi__(scope, Protocol())

        wall, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(request() for _ in range(requests)))
        return time.perf_counter() - wall, time.process_time() - cpu

    wall, cpu = asyncio.run(main())
    front.close()
    return {"req_per_s": round(requests / wall), "cpu_us": round(cpu / requests * 1e6, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="examples:\n"
               "  python -m benchmarks.handoff_ab --baseline /tmp/zq-main --repeat 3 "
               "--concurrency 8\n"
               "  python -m benchmarks.handoff_ab --baseline /tmp/zq-main-rsgi --repeat 4 "
               "--concurrency 8",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, required=True,
                        help="checkout to compare with")
    parser.add_argument("--candidate", type=Path, default=ROOT,
                        help="checkout measured against it (default: this one)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of each checkout, alternating (default: %(default)s)")
    parser.add_argument("--requests", type=int, default=20000,
                        help="requests per run (default: %(default)s)")
    parser.add_argument("--concurrency", type=int, default=8,
                        help="requests in flight on the event loop (default: %(default)s)")
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_run(args.one, args.requests, args.concurrency)))
        return
    results: dict[str, list[dict]] = {"baseline": [], "candidate": []}
    for number in range(args.repeat):
        order = ["baseline", "candidate"] if number % 2 == 0 else ["candidate", "baseline"]
        for name in order:
            done = subprocess.run([sys.executable, "-m", "benchmarks.handoff_ab", "--baseline",
                                   str(args.baseline), "--one", str(getattr(args, name)),
                                   "--requests", str(args.requests),
                                   "--concurrency", str(args.concurrency)],
                                  cwd=ROOT, check=True, capture_output=True, text=True)
            result = {"target": name, **json.loads(done.stdout)}
            print(json.dumps(result), flush=True)
            results[name].append(result)
    base, cand = (statistics.median(r["req_per_s"] for r in results[n])
                  for n in ("baseline", "candidate"))
    base_cpu, cand_cpu = (statistics.median(r["cpu_us"] for r in results[n])
                          for n in ("baseline", "candidate"))
    print(f"req/s median: baseline {base:.0f}, candidate {cand:.0f}, ratio {cand / base:.2f}; "
          f"CPU us/request: baseline {base_cpu}, candidate {cand_cpu}")


if __name__ == "__main__":
    main()
