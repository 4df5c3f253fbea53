"""CPU per request of zq's WSGI app alone, in process: no HTTP server, no load generator.

    python -m benchmarks.app_cpu [--backend redis|sqlite|postgresql|mariadb]
                                 [--workload post|post-b1|claim-delete|cycle|poison]
                                 [--baseline TREE] [--requests 3000] [--repeat 3]
    (from the repository root)

Builds zq's app as a ``zq serve`` worker does (zq.api.create_app, default
configuration, the worker's waiting-claims census and wake-up hook) over
Redis db 11 under a fresh key prefix (``--backend redis``), a fresh
SQLite file (``--backend sqlite``) or a fresh migrated database on the
test server (``--backend postgresql|mariadb``, benchmarks/scratch_storage.py),
and calls it directly as WSGI, one request at a time, with the load
generator's workloads: a post of 10 messages of 1 KB (``post``), a post of
one such message (``post-b1``), a claim of 10 and the bulk delete of what
it claimed (``claim-delete``), a post of 10, a claim of 10 and the bulk
delete (``cycle``), or ``poison``: on a queue with ``_max_claim_count`` 3
and a dead letter queue, a post of 10 of which one is poison, a claim of
10, the bulk delete of the good ones and the release of the claim when
poison was left (so each poison message is dead lettered by its fourth
claim). Prints the process CPU time per request (microseconds; it
includes the client's side of each backend round trip, and SQLite's whole
work, which runs in process, but not a server's: PostgreSQL's and
MariaDB's work is outside it). With ``--baseline TREE`` the same runs
in a fresh process with an older zq source tree first on sys.path,
alternating with this tree round by round, and the ratio is printed;
``--baseline-without-hiredis`` hides the hiredis package from the
baseline's process (redis-py then packs and parses in Python, as before zq
required hiredis). ``--replay`` (Redis only) measures what runs above
the Redis call: each script's answer is recorded on a few real requests,
then every call returns the recorded answer without reaching redis-py
(zq's Python, its Redis driver's parsing included; the client library,
the socket and Redis left out). On a machine shared with other work, CPU time is
steadier than wall time. Removes its Redis keys and SQLite file at the end.
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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
REDIS = "redis://127.0.0.1:6379/11"
WORKLOADS = ("post", "post-b1", "claim-delete", "cycle", "poison")
BACKENDS = ("redis", "sqlite", "postgresql", "mariadb")


def _environ(method: str, path: str, query: str = "", body: bytes = b"") -> dict:
    return {
        "REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query,
        "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8888", "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(body), "wsgi.errors": sys.stderr,
        "CONTENT_LENGTH": str(len(body)), "CONTENT_TYPE": "application/json",
        "HTTP_CLIENT_ID": "6e7b3c1a-6a2c-4a8e-9a55-0f1d2c3b4a59",
        "HTTP_X_PROJECT_ID": "bench-app-cpu",
    }


def _storage_uri(backend: str, scratch: str) -> str:
    """A fresh store for one run: a Redis key prefix or a migrated SQLite file."""
    if backend == "redis":
        return f"{REDIS}?prefix=appcpu{uuid.uuid4().hex[:8]}"
    from zq.storage.sql import migrate

    uri = f"sqlite:///{scratch}/app_cpu.sqlite3"
    migrate.upgrade(uri)
    return uri


@contextmanager
def _store(backend: str) -> Iterator[str]:
    """A fresh store for one run, removed afterwards: PostgreSQL and MariaDB get a
    new migrated database on the test server (benchmarks/scratch_storage.py)."""
    if backend in ("postgresql", "mariadb"):
        from benchmarks.scratch_storage import scratch

        with scratch(backend) as uri:
            yield uri
        return
    with tempfile.TemporaryDirectory(prefix="zq-app-cpu-") as directory:
        uri = _storage_uri(backend, directory)
        try:
            yield uri
        finally:
            if backend == "redis":
                import redis

                client = redis.Redis.from_url(REDIS)
                prefix = uri.rsplit("prefix=", 1)[1]
                keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
                for i in range(0, len(keys), 500):
                    client.delete(*keys[i:i + 500])


def _app(uri: str) -> tuple[Any, Any]:
    """zq's app over ``uri``, wired as zq.server.open_worker wires a worker's, and
    the pools to close afterwards."""
    from zq.api import create_app
    from zq.clock import SystemClock
    from zq.config import Config
    from zq.metrics.waiting import WaitingCensus
    from zq.pooling.setup import open_pools
    from zq.server import open_waiting
    from zq.storage import open_storage

    config, clock = Config(), SystemClock()
    pools, admin = open_pools(config, clock=clock, storage=open_storage(uri, clock=clock))
    census = WaitingCensus()
    waiting = open_waiting(config, pools, clock, census)
    app = create_app(config, clock=clock, pools=pools, admin=admin,
                     on_claimable=waiting.wake_threadsafe, waiting=census)
    return app, pools


def _replaying(app: Any, workload: str) -> None:
    """From now on every Redis script call answers what it answered on a real
    run of ``workload``, without reaching redis-py (``--replay``)."""
    from zq.storage.redis import scripts

    real = scripts.ScriptBook._call
    answers: dict[str, Any] = {}

    def record(book: Any, name: str, command: tuple) -> Any:
        answers[name] = real(book, name, command)
        return answers[name]

    scripts.ScriptBook._call = record  # type: ignore[method-assign]
    _measure_on(app, workload, 30)
    scripts.ScriptBook._call = lambda book, name, command: answers[name]  # type: ignore[method-assign]


def _measure(workload: str, requests: int, backend: str = "redis",
             profile: Any = None, replay: bool = False) -> float:
    """CPU microseconds per request of ``workload`` on this process's zq.

    ``profile``: a cProfile.Profile enabled for the timed requests only.
    """
    with _store(backend) as uri:
        app, pools = _app(uri)
        try:
            if replay:
                _replaying(app, workload)
            return _measure_on(app, workload, requests, profile)
        finally:
            pools.close()


def _measure_on(app: Any, workload: str, requests: int, profile: Any = None) -> float:
    answers: list[str] = []

    def call(environ: dict) -> bytes:
        body = b"".join(app(environ, lambda status, headers: answers.append(status)))
        if not answers[-1].startswith("20"):
            raise SystemExit(f"{environ['REQUEST_METHOD']} {environ['PATH_INFO']}: "
                             f"{answers[-1]} {body[:200]!r}")
        return body

    def post(poison: bool = False, batch: int = 10) -> bytes:
        messages = [{"ttl": 300, "body": {"data": "x" * 980, "t": time.time(),
                                          "p": int(poison and i == 0)}}
                    for i in range(batch)]
        return json.dumps({"messages": messages}).encode()

    queue = "/v2/queues/bench"
    posted = post(batch=1 if workload == "post-b1" else 10)
    if workload == "poison":
        call(_environ("PUT", "/v2/queues/bench-dlq", body=b"{}"))
        call(_environ("PUT", queue, body=json.dumps(
            {"_max_claim_count": 3, "_dead_letter_queue": "bench-dlq"}).encode()))
        posted = post(poison=True)
    if workload == "claim-delete":
        for _ in range(requests):
            call(_environ("POST", f"{queue}/messages", body=posted))
    done = 0
    if profile is not None:
        profile.enable()
    started = time.process_time()
    while done < requests:
        if workload in ("post", "post-b1"):
            call(_environ("POST", f"{queue}/messages", body=posted))
            done += 1
            continue
        if workload in ("cycle", "poison"):
            call(_environ("POST", f"{queue}/messages", body=posted))
            done += 1
        claimed = call(_environ("POST", f"{queue}/claims", "limit=10",
                                b'{"ttl": 60, "grace": 60}'))
        done += 1
        if not claimed:
            continue
        messages = json.loads(claimed)["messages"]
        claim = messages[0]["href"].split("claim_id=")[1]
        good = [m["id"] for m in messages if not m["body"]["p"]]
        if good:
            call(_environ("DELETE", f"{queue}/messages",
                          f"ids={','.join(good)}&claim_ids={claim}"))
            done += 1
        if len(good) < len(messages):  # a failing consumer gives the rest back
            call(_environ("DELETE", f"{queue}/claims/{claim}"))
            done += 1
    spent = time.process_time() - started
    if profile is not None:
        profile.disable()
    return spent / done * 1e6


def _run(tree: Path, workload: str, backend: str, requests: int,
         hiredis: bool = True, replay: bool = False) -> float:
    """One measurement in a fresh process whose ``zq`` is the one of ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree), "ZQ_LOG_LEVEL": "WARNING"}
    hide = ([] if hiredis else ["--without-hiredis"]) + (["--replay"] if replay else [])
    # Run as a file, not with -m from ROOT: -m would put ROOT first on
    # sys.path, and the baseline's process would import this tree's zq.
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "app_cpu.py"),
                          "--one", workload, "--backend", backend,
                          "--requests", str(requests), *hide], cwd=tree, env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{tree} {workload} on {backend} failed:\n{out.stderr[-3000:]}")
    *_, imported, figure = out.stdout.strip().splitlines()
    if not Path(imported).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"the run meant for {tree} imported zq from {imported}")
    return float(figure)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="examples:\n"
               "  python -m benchmarks.app_cpu --baseline /tmp/zq-base --backend redis "
               "--requests 1500 --repeat 3\n"
               "  python -m benchmarks.app_cpu --profile /tmp/p.pstats --backend redis "
               "--workload post --requests 1000",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, metavar="TREE",
                        help="an older zq source tree, run alternating with this one")
    parser.add_argument("--workload", choices=WORKLOADS, action="append",
                        help="repeatable (default: all)")
    parser.add_argument("--backend", choices=BACKENDS, action="append",
                        help="repeatable (default: redis)")
    parser.add_argument("--uri", choices=BACKENDS, help=argparse.SUPPRESS)  # older spelling
    parser.add_argument("--requests", type=int, default=3000,
                        help="timed requests per run (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="rounds per workload and backend (default: %(default)s)")
    parser.add_argument("--baseline-without-hiredis", action="store_true",
                        help="hide the hiredis package from the baseline's process")
    parser.add_argument("--profile", type=Path, metavar="FILE",
                        help="with one --workload and --backend and no --baseline: run once "
                             "under cProfile and write its stats to FILE (pstats)")
    parser.add_argument("--replay", action="store_true",
                        help="Redis only: replay recorded script answers, to measure what "
                        "runs above the Redis call")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--without-hiredis", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    backends = args.backend or [args.uri or "redis"]
    if args.one:
        if args.without_hiredis:
            sys.modules["hiredis"] = None  # type: ignore[assignment]  # redis-py: not installed
        import zq

        figure = _measure(args.one, args.requests, backends[0], replay=args.replay)
        print(zq.__file__)
        print(f"{figure:.1f}")
        return 0
    if args.profile:
        import cProfile

        profile = cProfile.Profile(time.process_time)  # CPU time, as the figures
        _measure((args.workload or ["post"])[0], args.requests, backends[0], profile,
                 args.replay)
        profile.dump_stats(args.profile)
        return 0
    trees = {"this": ROOT, **({"baseline": args.baseline} if args.baseline else {})}
    print(f"load average: {Path('/proc/loadavg').read_text().split()[:3]}")
    for backend in backends:
        for workload in args.workload or list(WORKLOADS):
            figures: dict[str, list[float]] = {name: [] for name in trees}
            for round_ in range(args.repeat):
                order = list(trees) if round_ % 2 == 0 else list(trees)[::-1]
                for name in order:
                    hiredis = name == "this" or not args.baseline_without_hiredis
                    figures[name].append(_run(trees[name], workload, backend, args.requests,
                                              hiredis, args.replay))
            cells = ", ".join(
                f"{name} {statistics.median(v):.0f} us ({min(v):.0f}-{max(v):.0f})"
                for name, v in figures.items())
            ratio = ""
            if "baseline" in figures:
                times = statistics.median(figures["baseline"]) / statistics.median(
                    figures["this"])
                ratio = f"; baseline / this {times:.2f}x"
            print(f"{backend:6} {workload:12} CPU per request: {cells}{ratio}", flush=True)
    print(f"load average: {Path('/proc/loadavg').read_text().split()[:3]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
