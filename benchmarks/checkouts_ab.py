"""Two checkouts of zq side by side: the same workloads, alternating, one session.

    git archive main | (mkdir -p /tmp/zq-main && tar -x -C /tmp/zq-main)
    python -m benchmarks.checkouts_ab --baseline /tmp/zq-main --repeat 3

Starts ``zq serve`` from each checkout (its own code: ``PYTHONPATH`` and
working directory at the checkout) on the same backend kind, each on a
fresh Redis key prefix (Redis db 11) or a fresh SQLite file, with the same
workers and threads; runs every workload against both, alternating which
goes first in each repeat so drifts in the machine's load hit both; prints
every result as a JSON line, then per workload the median req/s (min-max)
of each and the ratio candidate / baseline. Loopback only; servers are
stopped by their pids and the Redis keys removed by their prefixes.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from benchmarks.zaqar_side_by_side import Target, free_port, loadgen, running

ROOT = Path(__file__).resolve().parents[1]
REDIS_URL = "redis://127.0.0.1:6379/11"


def storage_uri(kind: str, scratch: Path, name: str) -> str:
    if kind == "redis":
        return f"{REDIS_URL}?prefix=zqab-{name}-{secrets.token_hex(4)}"
    return f"sqlite:///{scratch / name}.sqlite3"


@contextmanager
def redis_cleanup(uris: list[str]) -> Iterator[None]:
    try:
        yield
    finally:
        import redis

        client = redis.Redis.from_url(REDIS_URL)
        for uri in uris:
            if uri.startswith("redis://"):
                prefix = uri.split("prefix=", 1)[1]
                keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
                for start in range(0, len(keys), 500):
                    client.delete(*keys[start:start + 500])
        client.close()


def target(name: str, checkout: Path, uri: str, args: argparse.Namespace,
           scratch: Path) -> Target:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZQ_")}
    env.update(PYTHONPATH=str(checkout), XDG_DATA_HOME=str(scratch / f"{name}-data"),
               ZQ_SERVER_THREADS=str(args.threads), ZQ_LOG_LEVEL="WARNING")
    command = [sys.executable, "-m", "zq", "serve", "--port", str(port),
               "--workers", str(args.workers), "--storage", uri]
    return Target(name, f"http://127.0.0.1:{port}", command, env, cwd=checkout.resolve())


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.checkouts_ab",
        description="Throughput of two zq checkouts, alternating, in one session.",
        epilog="example:\n"
               "  python -m benchmarks.checkouts_ab --baseline /tmp/zq-main --repeat 3 "
               "--workload ping --workload post",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--baseline", type=Path, required=True, help="checkout to compare with")
    parser.add_argument("--candidate", type=Path, default=ROOT,
                        help="checkout measured against it (default: this one)")
    parser.add_argument("--storage", choices=("redis", "sqlite"), default="redis",
                        help="a fresh Redis key prefix (db 11) or SQLite file for each "
                             "(default: %(default)s)")
    parser.add_argument("--workload", action="append",
                        help="repeatable (default: ping, post, claim-delete)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of each workload on each checkout, alternating "
                             "(default: %(default)s)")
    parser.add_argument("--duration", type=float, default=8.0,
                        help="at most this many seconds per run (default: %(default)s)")
    parser.add_argument("--requests", type=int, default=20000,
                        help="at most this many requests per run (default: %(default)s)")
    parser.add_argument("--concurrency", type=int, default=8,
                        help="loadgen's requests in flight (default: %(default)s)")
    parser.add_argument("--batch", type=int, default=10,
                        help="messages per post and per claim (default: %(default)s)")
    parser.add_argument("--workers", type=int, default=2,
                        help="zq serve worker processes (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=4,
                        help="threads per worker (default: %(default)s)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    for checkout in (args.baseline, args.candidate):
        if not (checkout / "zq" / "server.py").is_file():
            print(f"error: {checkout} is not a zq checkout", file=sys.stderr)
            return 2
    workloads = args.workload or ["ping", "post", "claim-delete"]
    with tempfile.TemporaryDirectory(prefix="zq-ab-") as tmp, ExitStack() as stack:
        scratch = Path(tmp)
        uris = {name: storage_uri(args.storage, scratch, name)
                for name in ("baseline", "candidate")}
        stack.enter_context(redis_cleanup(list(uris.values())))
        targets = [stack.enter_context(running(target(name, checkout, uris[name], args, scratch),
                                               scratch))
                   for name, checkout in (("baseline", args.baseline),
                                          ("candidate", args.candidate))]
        results: dict[tuple[str, str], list[dict]] = {}
        for repeat in range(args.repeat):
            order = targets if repeat % 2 == 0 else targets[::-1]
            for workload in workloads:
                for each in order:
                    result = loadgen(each, workload, args.batch, args)
                    results.setdefault((workload, each.name), []).append(result)
    print("\n| workload | baseline req/s | candidate req/s | candidate / baseline |")
    print("|---|---|---|---|")
    for workload in workloads:
        cells = []
        for name in ("baseline", "candidate"):
            values = [float(r["req_per_s"]) for r in results[(workload, name)]]
            cells.append((statistics.median(values), min(values), max(values)))
        ratio = cells[1][0] / cells[0][0] if cells[0][0] else float("nan")
        print(f"| {workload} | " + " | ".join(f"{m:.0f} ({lo:.0f}-{hi:.0f})"
                                               for m, lo, hi in cells)
              + f" | {ratio:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
