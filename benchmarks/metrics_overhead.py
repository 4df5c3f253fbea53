"""The cost of metrics on the post and claim-delete paths: on vs off, same session.

    python benchmarks/metrics_overhead.py [--rounds 3] [--duration 8] [--storage URI]

Starts two ``zq serve --workers 2`` on the same backend (default: Redis db
11 under fresh key prefixes, removed afterwards): one with ``[metrics]
enabled``, scraped every 5 seconds as a Prometheus would (a scrape is when
the event tail counts, so its cost is in the figure), and one with metrics
off. Then runs the load generator's post and claim-delete workloads against
each in turn, alternating which goes first, ``--rounds`` times, and prints
every run and, per workload, the median msgs/s of each and their ratio
(on / off; 1.00 means no cost). The machine may be shared: the alternation
and the medians are there to make the two sides see the same noise.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ("post", "claim-delete")
SCRAPE_EVERY = 5.0
# Bounds each run with the duration; claim-delete posts its backlog (requests / 2
# claims of 10 messages) before the timed part.
REQUESTS = 4000


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start(storage: str, metrics: bool) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "ZQ_METRICS_ENABLED": "true" if metrics else "false",
           "ZQ_LOG_LEVEL": "WARNING", "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "zq", "serve", "--workers", "2", "--port", str(port),
         "--storage", storage], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/v2", timeout=1, trust_env=False).status_code == 200:
                return process, url
        except httpx.HTTPError:
            time.sleep(0.2)
    process.terminate()
    raise SystemExit(f"zq serve (metrics {'on' if metrics else 'off'}) did not start")


def scrape_until(url: str, stop: threading.Event) -> None:
    while not stop.wait(SCRAPE_EVERY):
        httpx.get(f"{url}/metrics", timeout=30, trust_env=False)


def load(url: str, workload: str, duration: float) -> float:
    """msgs/s of one loadgen run."""
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.loadgen", "--url", url, "--workload", workload,
         "--duration", str(duration), "--requests", str(REQUESTS)],
        cwd=ROOT, capture_output=True, text=True, check=True)
    return float(json.loads(out.stdout.strip().splitlines()[-1])["msgs_per_s"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--storage", default="redis://127.0.0.1:6379/11")
    args = parser.parse_args()
    prefixes = [f"mbench{uuid.uuid4().hex[:8]}" for _ in range(2)]
    redis = args.storage.startswith("redis://")
    uris = [f"{args.storage}?prefix={p}" if redis else args.storage for p in prefixes]
    servers = {"on": start(uris[0], True), "off": start(uris[1], False)}
    stop = threading.Event()
    scraper = threading.Thread(target=scrape_until, args=(servers["on"][1], stop), daemon=True)
    scraper.start()
    results: dict[tuple[str, str], list[float]] = {}
    try:
        for round_ in range(args.rounds):
            order = ("on", "off") if round_ % 2 == 0 else ("off", "on")
            for workload in WORKLOADS:
                for mode in order:
                    rate = load(servers[mode][1], workload, args.duration)
                    results.setdefault((workload, mode), []).append(rate)
                    print(f"round {round_ + 1} {workload:12} metrics {mode:3}: "
                          f"{rate:8.0f} msgs/s", flush=True)
    finally:
        stop.set()
        for process, _ in servers.values():
            process.terminate()
            process.wait(30)
        if redis:
            import redis as redis_client

            client = redis_client.Redis.from_url(args.storage)
            for prefix in prefixes:
                keys = list(client.scan_iter(f"{prefix}:*"))
                for i in range(0, len(keys), 500):
                    client.delete(*keys[i:i + 500])
    for workload in WORKLOADS:
        on = statistics.median(results[(workload, "on")])
        off = statistics.median(results[(workload, "off")])
        print(f"{workload:12} median msgs/s: on {on:.0f}, off {off:.0f}, "
              f"on/off {on / off:.3f} ({(1 - on / off) * 100:+.1f}% slower)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
