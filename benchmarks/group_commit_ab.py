"""Group commit off and on, side by side: zq on PostgreSQL, the same workloads, one run.

    python -m benchmarks.group_commit_ab [--repeat 3] [--duration 8]
                                         [--backend postgresql|mariadb|sqlite]

Starts two ``zq serve`` (``[sql] group_commit`` false and true, the same
worker and thread counts) on one fresh PostgreSQL database (fsync and
synchronous_commit as the server has them, on by default; or a fresh
MariaDB database, or one SQLite file), runs every
case against each in turn (the order alternates between repeats), and
prints one JSON line per run and a table of medians: throughput and
**server CPU per 1,000 messages**: the CPU time (user + system) of the
server's process tree plus that of the PostgreSQL processes serving its
database and the WAL writer (PostgreSQL only: MariaDB's server is one
shared process, its CPU is not counted), over the measured window,
divided by the messages moved. CPU per message is the figure the load of a shared machine
distorts least; the load average is printed with every run.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from benchmarks.scratch_storage import scratch as scratch_store
from benchmarks.zaqar_side_by_side import (
    CASES,
    POSTGRES_URL,
    ROOT,
    Target,
    cpu_seconds,
    free_port,
    loadgen,
    machine,
    postgres_database,
    running,
    spent_since,
)


def add_run_arguments(parser: argparse.ArgumentParser, *, duration: float) -> None:
    """The options of an off/on run (benchmarks/redis_coalesce_ab.py's too): the
    servers' workers and threads, the load generator's bounds, the repeats."""
    parser.add_argument("--workers", type=int, default=2,
                        help="zq serve worker processes (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=4,
                        help="threads per worker (default: %(default)s)")
    parser.add_argument("--concurrency", type=int, default=16,
                        help="loadgen's requests in flight (default: %(default)s)")
    parser.add_argument("--duration", type=float, default=duration,
                        help="at most this many seconds per run (default: %(default)s)")
    parser.add_argument("--requests", type=int, default=20000,
                        help="at most this many requests per run (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of each case on each side, alternating which goes first "
                             "(default: %(default)s)")


def add_cases_argument(parser: argparse.ArgumentParser) -> None:
    """``--cases``: which of CASES to run (read back with ``chosen_cases``)."""
    parser.add_argument("--cases", type=lambda text: set(text.split(",")), default=None,
                        help="comma list of workload:batch, e.g. post:10,claim-delete:10 "
                             "(default: every case)")


def chosen_cases(args: argparse.Namespace) -> list[tuple[str, int]]:
    """The (workload, batch) cases ``--cases`` names, in CASES's order; all without it."""
    return [c for c in CASES if args.cases is None or f"{c[0]}:{c[1]}" in args.cases]


def postgres_pids(database: str | None) -> list[int]:
    """The backends of ``database`` and the WAL writer (which flushes for everyone)."""
    if database is None:
        return []
    import psycopg

    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid() "
            "OR backend_type = 'walwriter'", (database,)).fetchall()
    return [row[0] for row in rows]


def measure(target: Target, database: str | None, workload: str, batch: int,
            args: argparse.Namespace) -> dict:
    pids = target.server_pids() + postgres_pids(database)
    before = cpu_seconds(pids)
    with contextlib.redirect_stdout(io.StringIO()):  # printed below, with the CPU
        result = loadgen(target, workload, batch, args)
    # Backends opened during the run started at 0 CPU.
    after = set(pids) | set(postgres_pids(database)) | set(target.server_pids())
    used = spent_since(before, list(after))
    result["server_cpu_s"] = round(used, 2)
    result["cpu_ms_per_1000_msgs"] = round(1e6 * used / max(result["messages"], 1), 1)
    result["load_average"] = os.getloadavg()[0]
    print(json.dumps(result), flush=True)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="examples:\n"
               "  python -m benchmarks.group_commit_ab --repeat 3 --duration 6 "
               "--cases post:1,post:10,claim-delete:10\n"
               "  python -m benchmarks.group_commit_ab --backend mariadb --repeat 2",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_arguments(parser, duration=8.0)
    add_cases_argument(parser)
    parser.add_argument("--backend", choices=("postgresql", "mariadb", "sqlite"),
                        default="postgresql",
                        help="the fresh database both servers share (default: %(default)s)")
    args = parser.parse_args(argv)
    cases = chosen_cases(args)
    scratch = Path(tempfile.mkdtemp(prefix="zq-group-commit-"))
    print(f"date: {time.strftime('%Y-%m-%d %H:%M:%S %z')}\nmachine: {machine()}\n"
          f"command: python -m benchmarks.group_commit_ab {' '.join(argv or sys.argv[1:])}",
          flush=True)
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("ZQ_")}
    results: dict[tuple[str, str], list[dict]] = {}
    store = postgres_database() if args.backend == "postgresql" else scratch_store(args.backend)
    with store as uri:
        database = urlsplit(uri).path.lstrip("/") if args.backend == "postgresql" else None
        targets = []
        for name, flag in (("off", "false"), ("on", "true")):
            port = free_port()
            targets.append(Target(
                f"group-commit-{name}", f"http://127.0.0.1:{port}",
                [sys.executable, "-m", "zq", "serve", "--workers", str(args.workers),
                 "--port", str(port), "--storage", uri],
                {**base_env, "ZQ_SERVER_THREADS": str(args.threads),
                 "ZQ_SQL_GROUP_COMMIT": flag}, cwd=ROOT))
        with contextlib.ExitStack() as stack:
            for target in targets:
                stack.enter_context(running(target, scratch))
            for repeat in range(args.repeat):
                for workload, batch in cases:
                    order = targets if repeat % 2 == 0 else targets[::-1]
                    for target in order:
                        key = (target.name, f"{workload} b{batch}")
                        results.setdefault(key, []).append(
                            measure(target, database, workload, batch, args))
    print("\n| case | off msg/s | on msg/s | on/off | off CPU ms/1k msgs | "
          "on CPU ms/1k msgs | on/off |\n|---|---|---|---|---|---|---|")
    for workload, batch in cases:
        case = f"{workload} b{batch}"
        row = []
        for metric in ("msgs_per_s", "cpu_ms_per_1000_msgs"):
            off, on = (statistics.median(r[metric] for r in results[(f"group-commit-{n}", case)])
                       for n in ("off", "on"))
            row += [f"{off:,.0f}", f"{on:,.0f}", f"{on / off:.2f}" if off else "-"]
        print(f"| {case} | " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
