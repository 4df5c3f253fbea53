"""Coalesced Redis calls off and on, side by side: zq on Redis, the same workloads, one run.

    python -m benchmarks.redis_coalesce_ab [--repeat 3] [--duration 6] [--cases post:10,...]

Starts two private ``redis-server`` (no persistence, random loopback ports,
in a temporary directory, stopped at the end) and two ``zq serve``, one on
each, with ``[redis] coalesce`` false and true (the same worker and thread
counts), runs every case against each in turn (the order alternates
between repeats) and prints one JSON line per run and a table of medians.

Per run, over the load generator's measured window:

- throughput and **server CPU per 1,000 messages**: the CPU time (user +
  system) of zq's process tree plus that of its redis-server, divided by
  the messages moved;
- **round trips**: the redis-server's ``total_reads_processed`` (socket
  reads that found a request: one per round trip, however many commands
  it carries) and ``total_commands_processed`` (which counts the commands
  the scripts run too), per 1,000 messages (the harness's own INFO calls,
  two, included);
- **Redis syscalls**: the redis-server's read and write system calls
  (/proc/PID/io ``syscr``/``syscw``) per 1,000 messages.

Each Redis serves one zq only, so none of these counts another helper's
traffic. The load average is printed with every run. ``--strace`` adds one
run per case and target under ``strace -c -f -e trace=network`` attached to
zq's workers: the workers' own network system calls per 1,000 messages
(strace slows the workers, so those runs are kept out of the CPU figures).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import redis

from benchmarks.group_commit_ab import add_cases_argument, add_run_arguments, chosen_cases
from benchmarks.zaqar_side_by_side import (
    ROOT,
    Target,
    free_port,
    loadgen,
    machine,
    process_tree,
    running,
)


@contextlib.contextmanager
def redis_server(scratch: Path, name: str) -> Iterator[tuple[int, int]]:
    """(port, pid) of a private redis-server without persistence; stopped after."""
    port = free_port()
    folder = scratch / name
    folder.mkdir()
    process = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(folder), "--daemonize", "no"],
        stdout=(folder / "redis.log").open("wb"), stderr=subprocess.STDOUT,
        start_new_session=True)
    try:
        client = redis.Redis(port=port)
        deadline = time.monotonic() + 20
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server {name} did not start") from None
                time.sleep(0.1)
        client.close()
        yield port, process.pid
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def redis_counts(port: int, pid: int) -> dict[str, int]:
    client = redis.Redis(port=port)
    try:
        stats = client.info("stats")
    finally:
        client.close()
    counts = {"reads": int(stats["total_reads_processed"]),
              "commands": int(stats["total_commands_processed"])}
    text = Path(f"/proc/{pid}/io").read_text()
    for key in ("syscr", "syscw"):
        counts[key] = int(re.search(rf"^{key}: (\d+)$", text, re.M).group(1))  # type: ignore[union-attr]
    return counts


def workers(target: Target) -> list[int]:
    assert target.process is not None
    return [pid for pid in process_tree(target.process.pid) if pid != target.process.pid]


def window_backend(port: int, pid: int, marks: list[dict[str, int]]) -> Callable[[], list[int]]:
    """The target's backend pids for loadgen, which asks for them exactly at
    the start and at the end of its measured window: the Redis counts are
    taken then too, so they cover the window only (not a claim-delete's
    filling of its queue)."""

    def pids() -> list[int]:
        marks.append(redis_counts(port, pid))
        return [pid]

    return pids


def measure(target: Target, port: int, pid: int, workload: str, batch: int,
            args: argparse.Namespace, *, strace: bool = False) -> dict:
    marks: list[dict[str, int]] = []
    target.backend = window_backend(port, pid, marks)
    tracer = None
    if strace:
        command = ["strace", "-c", "-f", "-e", "trace=network", "-o", str(args.scratch / "st")]
        for worker in workers(target):
            command += ["-p", str(worker)]
        tracer = subprocess.Popen(command, stderr=subprocess.DEVNULL)
        time.sleep(1.0)  # attached
    with contextlib.redirect_stdout(io.StringIO()):  # printed below, with the counts
        result = loadgen(target, workload, batch, args)
    before, after = marks[0], marks[-1]
    messages = max(int(result.get("messages") or 0) or int(result.get("requests") or 0), 1)
    for key in ("reads", "commands", "syscr", "syscw"):
        result[f"redis_{key}_per_1k_msgs"] = round(1000 * (after[key] - before[key]) / messages, 1)
    if tracer is not None:
        tracer.send_signal(signal.SIGINT)
        tracer.wait(30)
        calls = 0
        for line in (args.scratch / "st").read_text().splitlines():
            fields = line.split()
            if len(fields) >= 5 and fields[-1] not in ("syscall", "total") and fields[3].isdigit():
                calls += int(fields[3])
        result["strace_network_calls_per_1k_msgs"] = round(1000 * calls / messages, 1)
        result["strace"] = True
    result["load_average"] = os.getloadavg()[0]
    print(json.dumps(result), flush=True)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="examples:\n"
               "  python -m benchmarks.redis_coalesce_ab --repeat 3 --duration 6 "
               "--cases post:1,post:10,claim-delete:10,poison:10 --strace\n"
               "  python -m benchmarks.redis_coalesce_ab --repeat 3 --duration 4 "
               "--concurrency 1 --cases post:10,claim-delete:10",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_arguments(parser, duration=6.0)
    parser.add_argument("--strace", action="store_true",
                        help="one more run per case and target under strace -c (not in CPU)")
    add_cases_argument(parser)
    args = parser.parse_args(argv)
    cases = chosen_cases(args)
    args.scratch = Path(tempfile.mkdtemp(prefix="zq-redis-coalesce-"))
    print(f"date: {time.strftime('%Y-%m-%d %H:%M:%S %z')}\nmachine: {machine()}\n"
          f"command: python -m benchmarks.redis_coalesce_ab {' '.join(argv or sys.argv[1:])}",
          flush=True)
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("ZQ_")}
    results: dict[tuple[str, str], list[dict]] = {}
    traced: dict[tuple[str, str], dict] = {}
    with contextlib.ExitStack() as stack:
        targets = []
        for name, flag in (("off", "false"), ("on", "true")):
            port, pid = stack.enter_context(redis_server(args.scratch, name))
            http = free_port()
            target = Target(
                f"coalesce-{name}", f"http://127.0.0.1:{http}",
                [sys.executable, "-m", "zq", "serve", "--workers", str(args.workers),
                 "--port", str(http), "--storage", f"redis://127.0.0.1:{port}/0"],
                {**base_env, "ZQ_SERVER_THREADS": str(args.threads),
                 "ZQ_REDIS_COALESCE": flag}, cwd=ROOT)
            targets.append((target, port, pid))
        for target, _, _ in targets:
            stack.enter_context(running(target, args.scratch))
        for repeat in range(args.repeat):
            for workload, batch in cases:
                order = targets if repeat % 2 == 0 else targets[::-1]
                for target, port, pid in order:
                    key = (target.name, f"{workload} b{batch}")
                    results.setdefault(key, []).append(
                        measure(target, port, pid, workload, batch, args))
        if args.strace:
            for workload, batch in cases:
                for target, port, pid in targets:
                    traced[(target.name, f"{workload} b{batch}")] = measure(
                        target, port, pid, workload, batch, args, strace=True)
    metrics = [("msgs_per_s", "msg/s"), ("server_cpu_ms_per_1k_msgs", "CPU ms/1k msgs"),
               ("redis_reads_per_1k_msgs", "Redis reads/1k msgs"),
               ("redis_commands_per_1k_msgs", "Redis commands/1k msgs"),
               ("redis_syscr_per_1k_msgs", "Redis read syscalls/1k msgs"),
               ("redis_syscw_per_1k_msgs", "Redis write syscalls/1k msgs")]
    print("\nmedians (min-max) of", args.repeat, "runs; load average at the end:",
          " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print("\n| case | metric | off | on | on/off |\n|---|---|---|---|---|")
    for workload, batch in cases:
        case = f"{workload} b{batch}"
        for metric, label in metrics:
            cells = []
            values = []
            for name in ("off", "on"):
                runs = [r[metric] for r in results[(f"coalesce-{name}", case)]
                        if r.get(metric) is not None]
                values.append(statistics.median(runs))
                cells.append(f"{values[-1]:,.1f} ({min(runs):,.1f}-{max(runs):,.1f})")
            ratio = f"{values[1] / values[0]:.2f}" if values[0] else "-"
            print(f"| {case} | {label} | {cells[0]} | {cells[1]} | {ratio} |")
        if traced:
            off, on = (traced[(f"coalesce-{n}", case)]["strace_network_calls_per_1k_msgs"]
                       for n in ("off", "on"))
            print(f"| {case} | zq network syscalls/1k msgs (strace) | {off:,.1f} | {on:,.1f} | "
                  f"{on / off:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
