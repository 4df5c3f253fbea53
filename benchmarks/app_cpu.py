"""CPU per request of zq's WSGI app alone, in process: no HTTP server, no load generator.

    python -m benchmarks.app_cpu [--baseline TREE] [--requests 3000] [--repeat 3]
    (from the repository root)

Builds zq's app (zq.api.create_app, default configuration) over Redis db 11
under a fresh key prefix (or, with ``--uri sqlite``, a fresh SQLite file in a
temporary directory), and calls it directly as WSGI with the load
generator's post of 10 messages of 1 KB (``--workload post``) or a claim of
10 and the bulk delete of what it claimed (``claim-delete``), one request at
a time, and prints the process CPU time per request (microseconds; it
includes redis-py's side of each round trip, not Redis's). With
``--baseline TREE`` the same runs in a fresh process with an older zq
source tree on PYTHONPATH, alternating with this tree, and the ratio is
printed; ``--baseline-without-hiredis`` hides the hiredis package from the
baseline's process (redis-py then packs and parses in Python, as before zq
required hiredis). On a machine shared with other work, CPU time is steadier than
wall time. Removes its Redis keys at the end.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REDIS = "redis://127.0.0.1:6379/11"


def _environ(method: str, path: str, query: str = "", body: bytes = b"") -> dict:
    return {
        "REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query,
        "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8888", "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(body), "wsgi.errors": sys.stderr,
        "CONTENT_LENGTH": str(len(body)), "CONTENT_TYPE": "application/json",
        "HTTP_CLIENT_ID": "6e7b3c1a-6a2c-4a8e-9a55-0f1d2c3b4a59",
        "HTTP_X_PROJECT_ID": "bench-app-cpu",
    }


def _measure(workload: str, requests: int, backend: str = "redis") -> float:
    """CPU microseconds per request of ``workload`` on this process's zq."""
    with tempfile.TemporaryDirectory(prefix="zq-app-cpu-") as directory:
        return _measure_in(workload, requests, backend, directory)


def _measure_in(workload: str, requests: int, backend: str, directory: str) -> float:
    import redis

    from zq.api import create_app
    from zq.config import Config
    from zq.storage import open_storage

    prefix = f"appcpu{uuid.uuid4().hex[:8]}"
    uri = (f"sqlite:///{directory}/zq.sqlite3" if backend == "sqlite"
           else f"{REDIS}?prefix={prefix}")
    storage = open_storage(uri)
    app = create_app(Config(), storage=storage)
    answers: list[str] = []

    def call(environ: dict) -> bytes:
        body = b"".join(app(environ, lambda status, headers: answers.append(status)))
        if not answers[-1].startswith("20"):
            raise SystemExit(f"{environ['REQUEST_METHOD']} {environ['PATH_INFO']}: "
                             f"{answers[-1]} {body[:200]!r}")
        return body

    messages = [{"ttl": 300, "body": {"data": "x" * 980, "t": time.time(), "p": i}}
                for i in range(10)]
    post = json.dumps({"messages": messages}).encode()
    path = "/v2/queues/bench/messages"
    try:
        if workload == "claim-delete":
            for _ in range(requests):
                call(_environ("POST", path, body=post))
        started = time.process_time()
        for _ in range(requests):
            if workload == "post":
                call(_environ("POST", path, body=post))
                continue
            claimed = json.loads(call(_environ("POST", "/v2/queues/bench/claims", "limit=10",
                                               b'{"ttl": 60, "grace": 60}')))
            ids = ",".join(m["href"].rsplit("/", 1)[1].split("?")[0]
                           for m in claimed["messages"])
            claim = claimed["messages"][0]["href"].split("claim_id=")[1]
            call(_environ("DELETE", path, f"ids={ids}&claim_ids={claim}"))
        spent = time.process_time() - started
    finally:
        storage.close()
        if backend == "redis":
            client = redis.Redis.from_url(REDIS)
            keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
            for i in range(0, len(keys), 500):
                client.delete(*keys[i:i + 500])
    per = 2 if workload == "claim-delete" else 1
    return spent / (requests * per) * 1e6


def _run(tree: Path, workload: str, requests: int, hiredis: bool = True,
         backend: str = "redis") -> float:
    env = {**os.environ, "PYTHONPATH": str(tree), "ZQ_LOG_LEVEL": "WARNING"}
    hide = [] if hiredis else ["--without-hiredis"]
    # Run by path, not with -m from ROOT: -m puts the working directory first
    # on sys.path, and this tree's zq would shadow the baseline's.
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--one", workload,
                          "--requests", str(requests), "--uri", backend, *hide],
                         cwd=tempfile.gettempdir(), env=env,
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="an older zq source tree")
    parser.add_argument("--workload", choices=("post", "claim-delete"), action="append")
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline-without-hiredis", action="store_true")
    parser.add_argument("--uri", choices=("redis", "sqlite"), default="redis",
                        help="the backend: Redis db 11 (default) or a fresh SQLite file")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--without-hiredis", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        if args.without_hiredis:
            sys.modules["hiredis"] = None  # type: ignore[assignment]  # redis-py: not installed
        print(f"{_measure(args.one, args.requests, args.uri):.1f}")
        return 0
    trees = {"this": ROOT, **({"baseline": args.baseline} if args.baseline else {})}
    print(f"load average: {Path('/proc/loadavg').read_text().split()[:3]}")
    for workload in args.workload or ["post", "claim-delete"]:
        figures: dict[str, list[float]] = {name: [] for name in trees}
        for round_ in range(args.repeat):
            order = list(trees) if round_ % 2 == 0 else list(trees)[::-1]
            for name in order:
                hiredis = name == "this" or not args.baseline_without_hiredis
                figures[name].append(_run(trees[name], workload, args.requests, hiredis,
                                          args.uri))
        cells = ", ".join(f"{name} {statistics.median(v):.0f} us ({min(v):.0f}-{max(v):.0f})"
                          for name, v in figures.items())
        ratio = ""
        if "baseline" in figures:
            times = statistics.median(figures["baseline"]) / statistics.median(figures["this"])
            ratio = f"; baseline / this {times:.2f}x"
        print(f"{workload:12} CPU per request: {cells}{ratio}", flush=True)
    print(f"load average: {Path('/proc/loadavg').read_text().split()[:3]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
