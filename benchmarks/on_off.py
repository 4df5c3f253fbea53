"""Two ``zq serve`` processes, a feature on in one and off in the other, measured alternately.

The shared part of benchmarks/metrics_overhead.py and
benchmarks/notifications_cost.py: start the servers on fresh Redis key
prefixes (or one shared non-Redis storage), scrape /metrics as Prometheus
would, alternate which side goes first in each round so the machine's drifts
hit both, print every run and the median of each side with their ratio, and
remove the servers and their Redis keys at the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

from benchmarks.zaqar_side_by_side import free_port

ROOT = Path(__file__).resolve().parent.parent
SCRAPE_EVERY = 5.0
SIDES = ("on", "off")


def parse_args(doc: str, module: str) -> argparse.Namespace:
    """The options both on/off benchmarks take; ``doc`` (the script's docstring)
    gives the description, ``module`` the examples' ``python -m`` name."""
    parser = argparse.ArgumentParser(
        description=doc.split("\n\n")[0],
        epilog="examples:\n"
               f"  python -m {module} --rounds 3 --duration 8\n"
               f"  python -m {module} --storage redis://127.0.0.1:6379/12",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of each workload on each server, alternating "
                             "(default: %(default)s)")
    parser.add_argument("--duration", type=float, default=8.0,
                        help="seconds of each run (default: %(default)s)")
    parser.add_argument("--storage", default="redis://127.0.0.1:6379/11",
                        help="storage URI of both servers (default: %(default)s)")
    return parser.parse_args()


def start(storage: str, env: Mapping[str, str], label: str) -> tuple[subprocess.Popen, str]:
    """``zq serve --workers 2`` on ``storage`` with ``env`` added; its process and URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "zq", "serve", "--workers", "2", "--port", str(port),
         "--storage", storage], cwd=ROOT,
        env={**os.environ, "ZQ_LOG_LEVEL": "WARNING", "PYTHONPATH": str(ROOT), **env},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/v2", timeout=1, trust_env=False).status_code == 200:
                return process, url
        except httpx.HTTPError:
            time.sleep(0.2)
    process.terminate()
    raise SystemExit(f"zq serve ({label}) did not start")


@contextmanager
def servers(storage: str, envs: Mapping[str, Mapping[str, str]],
            scrape: str | None = None) -> Iterator[dict[str, str]]:
    """One server per side of ``envs``, each on its own Redis key prefix; yields their URLs.

    ``scrape`` names the side whose /metrics is read every SCRAPE_EVERY seconds
    (a scrape is when the event tail counts, so its cost belongs in the figure).
    """
    redis = storage.startswith("redis://")
    prefixes = {side: f"onoff{uuid.uuid4().hex[:8]}" for side in envs}
    started: dict[str, tuple[subprocess.Popen, str]] = {}
    stop = threading.Event()
    try:
        for side, env in envs.items():
            uri = f"{storage}?prefix={prefixes[side]}" if redis else storage
            started[side] = start(uri, env, side)
        if scrape is not None:
            url = started[scrape][1]

            def scrape_until() -> None:
                while not stop.wait(SCRAPE_EVERY):
                    httpx.get(f"{url}/metrics", timeout=30, trust_env=False)

            threading.Thread(target=scrape_until, daemon=True).start()
        yield {side: url for side, (_, url) in started.items()}
    finally:
        stop.set()
        for process, _ in started.values():
            process.terminate()
            process.wait(30)
        if redis:
            drop_prefixes(storage, prefixes.values())


def drop_prefixes(storage: str, prefixes: Iterator[str] | Sequence[str]) -> None:
    import redis as redis_client

    client = redis_client.Redis.from_url(storage)
    for prefix in prefixes:
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
        for i in range(0, len(keys), 500):
            client.delete(*keys[i:i + 500])
    client.close()


def alternate(rounds: int, workloads: Sequence[str],
              run: Callable[[str, str], float], note: Callable[[], str] = lambda: "") -> None:
    """``run(workload, side)`` -> msgs/s; on first in even rounds, off first in odd ones."""
    results: dict[tuple[str, str], list[float]] = {}
    for round_ in range(rounds):
        order = SIDES if round_ % 2 == 0 else SIDES[::-1]
        for workload in workloads:
            for side in order:
                rate = run(workload, side)
                results.setdefault((workload, side), []).append(rate)
                print(f"round {round_ + 1} {workload:12} {side:3}: {rate:8.0f} msgs/s{note()}",
                      flush=True)
    for workload in workloads:
        on = statistics.median(results[(workload, "on")])
        off = statistics.median(results[(workload, "off")])
        print(f"{workload:12} median msgs/s: on {on:.0f}, off {off:.0f}, "
              f"on/off {on / off:.3f} ({(1 - on / off) * 100:+.1f}% slower)")
