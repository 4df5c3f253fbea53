"""Time ``zq events export`` and the ``zq stats`` Spark job on synthetic events.

    python benchmarks/analytics_bench.py --events 1000000 [--dir DIR] [--keep]

Events come from zq.analytics.synthetic through a streaming EventLog, so the
export path is the real one (batches, state file, fsync, trim) minus the
backend's own read cost; ``--skip-export`` reuses a dataset already in DIR.

Prints the seconds of the export (and how many of them went to generating
the synthetic events, which stand in for the backend's read), of the job,
their total, events per second, the export process's peak RSS and the
Spark driver JVM's (local mode: the executors too), and the load average.
The job's line gives the driver JVM's CPU, then that CPU by thread role (the
JIT compilers, the garbage collector, Spark's tasks, the rest); ``--json-out``
keeps the job's output, to check that a change leaves every figure as it was.

The issue 31 run (target: export plus job under 3 minutes):

    python benchmarks/analytics_bench.py --events 10000000 --dir /tmp/bench10m \
        --driver-memory 8g
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from zq.analytics.arguments import add_stats_arguments
from zq.analytics.export import export
from zq.analytics.synthetic import synthetic_events
from zq.storage.base import EventLog
from zq.storage.records import Event


class SyntheticEventLog(EventLog):
    """An event log that generates its events as they are read (read forward only)."""

    def __init__(self, count: int, seed: int = 0) -> None:
        self._events: Iterator[Event] = synthetic_events(count, seed=seed)
        self._last: str | None = None
        self.generating = 0.0  # seconds spent making events, not exporting them

    def read(self, *, after: str | None = None, limit: int = 1000) -> list[Event]:
        if after != self._last:
            raise RuntimeError("the synthetic log reads forward only")
        started = time.perf_counter()
        batch = [event for _, event in zip(range(limit), self._events, strict=False)]
        self.generating += time.perf_counter() - started
        if batch:
            self._last = batch[-1].cursor
        return batch

    def count(self, *, after: str | None = None) -> int:
        return 0  # generated on demand: nothing waits

    def trim(self, *, up_to: str) -> int:
        return 0

    def end(self) -> str | None:
        return self._last  # what has been generated so far


class _Storage:
    def __init__(self, log: EventLog) -> None:
        self.events = log


def size_of(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*.parquet"))


def peak_rss_mb(pid: int | str = "self") -> float | None:
    """The peak resident set size of a process (VmHWM), in MB; None where /proc has none."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def cpu_seconds(pid: int | str = "self") -> float | None:
    """User plus system CPU seconds of a process so far (less noisy than wall time on a
    shared machine); None where /proc has none."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def jvm_threads_cpu(pid: int) -> dict[str, float]:
    """CPU seconds of a JVM's live threads by role: the JIT compilers, the garbage
    collector, Spark's task threads and the rest (planning, code generation, the
    driver's scheduling). Threads that already ended are not counted."""
    roles = {"C2 CompilerThre": "JIT (C2)", "C1 CompilerThre": "JIT (C1)",
             "Executor task": "Spark tasks"}
    spent: dict[str, float] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return spent
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as stat:
                raw = stat.read()
        except OSError:
            continue
        name = raw[raw.index("(") + 1:raw.rindex(")")]
        fields = raw.rsplit(")", 1)[1].split()
        role = next((r for prefix, r in roles.items() if name.startswith(prefix)), None)
        if role is None:
            gc = name.startswith(("GC Thread", "G1 ")) or name in ("VM Thread",)
            role = "garbage collector" if gc else "other"
        seconds = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        spent[role] = spent.get(role, 0.0) + seconds
    return spent


def driver_jvm() -> int | None:
    """The process id of the running Spark driver JVM, if any."""
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    if session is None:
        return None
    return session.sparkContext._jvm.java.lang.ProcessHandle.current().pid()


class JobProgress:
    """The job's progress lines, each with the driver JVM's CPU seconds so far."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.jvm: int | None = None

    def __call__(self, message: str) -> None:
        if self.jvm is None and message.startswith("Spark "):
            self.jvm = driver_jvm()
        cpu = cpu_seconds(self.jvm) if self.jvm is not None else None
        spent = "" if cpu is None else f" cpu {cpu:6.1f}s"
        print(f"[job {time.perf_counter() - self.started:6.1f}s{spent}] {message}",
              file=sys.stderr, flush=True)


def megabytes(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.0f} MB"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="examples:\n"
               "  python benchmarks/analytics_bench.py --events 1000000 --dir /tmp/exs --skip-job\n"
               "  python benchmarks/analytics_bench.py --events 10000000 --dir /tmp/bench10m "
               "--driver-memory 8g",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000, dest="count",
                        help="synthetic events exported (default: %(default)s)")
    parser.add_argument("--dir", help="dataset directory (default: a temporary one)")
    parser.add_argument("--batch-size", type=int, default=100_000,
                        help="events per export batch (default: %(default)s)")
    parser.add_argument("--skip-export", action="store_true",
                        help="reuse the dataset already in --dir instead of exporting")
    parser.add_argument("--skip-job", action="store_true",
                        help="time the export only, not the Spark job")
    parser.add_argument("--keep", action="store_true", help="keep the temporary dataset")
    parser.add_argument("--master", default=None,
                        help="Spark master URL passed to the job (default: the job's own, local)")
    parser.add_argument("--driver-memory", default="4g",
                        help="spark.driver.memory of the job (default: %(default)s)")
    parser.add_argument("--json-out", metavar="FILE",
                        help="write the job's output (every table, JSON) to FILE, to compare runs")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting for the job (repeatable), to compare settings")
    options = parser.parse_args()

    root = Path(options.dir or tempfile.mkdtemp(prefix="zq-bench-"))
    print(f"dataset: {root}", file=sys.stderr)
    load = " ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"load average at start: {load}")
    export_seconds = job_seconds = 0.0
    if not options.skip_export:
        log = SyntheticEventLog(options.count)
        cpu_before = cpu_seconds()
        started = time.perf_counter()
        result = export({"bench": _Storage(log)}, str(root), batch_size=options.batch_size)[0]
        export_seconds = time.perf_counter() - started
        # ru_maxrss: this process's peak so far, which is the export's (KB on Linux).
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"export: {result.events:,} events, {len(result.files)} files, "
              f"{size_of(root) / 1e6:.1f} MB in {export_seconds:.1f}s "
              f"({result.events / export_seconds:,.0f} events/s; of which generating the "
              f"synthetic events {log.generating:.1f}s), CPU "
              f"{(cpu_seconds() or 0) - (cpu_before or 0):.1f}s, peak RSS {megabytes(rss)}")
    if not options.skip_job:
        from zq.analytics.job import run

        job_parser = argparse.ArgumentParser()
        add_stats_arguments(job_parser)
        argv = ["--events", str(root), "--format", "json",
                "--conf", f"spark.driver.memory={options.driver_memory}"]
        for setting in options.conf:
            argv += ["--conf", setting]
        if options.master:
            argv += ["--master", options.master]
        args = job_parser.parse_args(argv)
        started = time.perf_counter()
        progress = JobProgress()
        output = io.StringIO()
        code = run(args, out=output, progress=progress)
        job_seconds = time.perf_counter() - started
        if options.json_out:
            Path(options.json_out).write_text(output.getvalue())
        jvm = progress.jvm
        cpu = cpu_seconds(jvm) if jvm is not None else None
        print(f"job: {job_seconds:.1f}s (Spark start-up included), exit code {code}, "
              f"driver JVM peak RSS {megabytes(peak_rss_mb(jvm) if jvm else None)} "
              f"(--driver-memory {options.driver_memory}), JVM CPU "
              + ("n/a" if cpu is None else f"{cpu:.1f}s"))
        if jvm is not None:
            roles = jvm_threads_cpu(jvm)
            print("job: JVM CPU by thread role: " + ", ".join(
                f"{role} {seconds:.1f}s" for role, seconds in
                sorted(roles.items(), key=lambda item: -item[1])))
    if not options.skip_export and not options.skip_job:
        total = export_seconds + job_seconds
        print(f"total: {total:.1f}s ({options.count / total:,.0f} events/s end to end): "
              f"export {export_seconds:.1f}s + job {job_seconds:.1f}s")
    load = " ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"load average at end: {load}")
    if not options.dir and not options.keep:
        shutil.rmtree(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
