"""Command line of the load generator."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from urllib.parse import urlsplit

import aiohttp

from benchmarks.loadgen import stats
from benchmarks.loadgen.client import Client
from benchmarks.loadgen.workloads import WORKLOADS, Settings

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
DEFAULT_WORKLOADS = ["post", "claim-delete", "cycle", "poison"]

EPILOG = """\
examples:
  python -m benchmarks.loadgen --url http://127.0.0.1:8888 --workload post --batch 1
  python -m benchmarks.loadgen --workload claim-delete --rate 50 --duration 10
  python -m benchmarks.loadgen --workload all --requests 3000 --duration 15

Each workload prints one JSON line: workload, msgs_per_s, req_per_s, p50_ms,
p99_ms, errors, and the run's parameters. --rate makes the run open-loop:
operations start at that fixed rate whatever the answers' latency, and each
latency counts from when its request was due."""


async def run(settings: Settings, workloads: list[str]) -> list[dict[str, object]]:
    results = []
    client = Client(settings.url, settings.project, settings.concurrency
                    if settings.rate <= 0 else settings.max_in_flight)
    try:
        ping = await client.request("GET", "/v2/ping")
        if ping.status >= 300:
            raise RuntimeError(f"{settings.url}/v2/ping answered {ping.status}")
        for name in workloads:
            result = await WORKLOADS[name](client, settings)
            result.update(concurrency=settings.concurrency, batch=settings.batch,
                          body_size=settings.body_size, rate=settings.rate or None,
                          wait=settings.wait or None)
            print(json.dumps(result), flush=True)
            results.append(result)
    finally:
        await client.close()
    return results


def parse_load_args(parser: argparse.ArgumentParser,
                    argv: list[str] | None) -> argparse.Namespace:
    """``argv`` parsed, with ``--mark-window`` and the checks every load generator makes.

    Shared with benchmarks/amqp_load.py. ``parser`` defines ``--url``,
    ``--concurrency``, ``--requests``, ``--batch`` and ``--max-in-flight``;
    ``--mark-window`` is added here, last in each script's --help.
    """
    parser.add_argument("--mark-window", action="store_true",
                        help=f"print '{stats.WINDOW_MARK} start' and '... end' on stderr "
                             "where each run's measured window starts and ends")
    args = parser.parse_args(argv)
    stats.MARK_WINDOW = args.mark_window
    host = urlsplit(args.url).hostname
    if host not in LOOPBACK:
        parser.error(f"--url must point at a loopback address ({sorted(LOOPBACK)}), not {host}")
    if min(args.concurrency, args.requests, args.batch, args.max_in_flight) < 1:
        parser.error("--concurrency, --requests, --batch and --max-in-flight must be positive")
    return args


def parse_args(argv: list[str] | None = None) -> tuple[Settings, list[str]]:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.loadgen",
        description="Load a local Zaqar v2 API server (zq or OpenStack Zaqar).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:8888",
                        help="server on a loopback address (default: %(default)s)")
    parser.add_argument("--workload", action="append",
                        choices=[*WORKLOADS, "all"],
                        help="repeatable; 'all' is post, claim-delete, cycle, poison "
                             "(default: all)")
    parser.add_argument("--concurrency", type=int, default=8,
                        help="closed loop: requests in flight (default: %(default)s)")
    parser.add_argument("--requests", type=int, default=3000,
                        help="at most this many requests per workload (default: %(default)s)")
    parser.add_argument("--duration", type=float, default=15.0,
                        help="at most this many seconds per workload (default: %(default)s)")
    parser.add_argument("--batch", type=int, default=10,
                        help="messages per post and per claim (default: %(default)s)")
    parser.add_argument("--body-size", type=int, default=1024,
                        help="bytes of each message body as JSON (default: %(default)s)")
    parser.add_argument("--rate", type=float, default=0.0,
                        help="open loop: operations started per second (default: closed loop)")
    parser.add_argument("--wait", type=float, default=0.0,
                        help="seconds every claim asks zq to wait for messages (long poll, "
                             "?wait=S); 0: claims answer at once (default: %(default)s)")
    parser.add_argument("--max-in-flight", type=int, default=256,
                        help="open loop: outstanding operations at most (default: %(default)s)")
    args = parse_load_args(parser, argv)
    if args.duration <= 0 or args.rate < 0 or args.wait < 0:
        parser.error("--duration must be positive, --rate and --wait not negative")
    chosen = args.workload or ["all"]
    workloads = DEFAULT_WORKLOADS if "all" in chosen else chosen
    settings = Settings(url=args.url.rstrip("/"), concurrency=args.concurrency,
                        requests=args.requests, duration=args.duration, batch=args.batch,
                        body_size=args.body_size, rate=args.rate,
                        max_in_flight=args.max_in_flight, wait=args.wait)
    return settings, workloads


def main(argv: list[str] | None = None) -> int:
    settings, workloads = parse_args(argv)
    try:
        asyncio.run(run(settings, workloads))
    except (aiohttp.ClientError, RuntimeError, OSError) as exc:
        print(f"loadgen: {settings.url}: {exc}", file=sys.stderr)
        return 1
    return 0
