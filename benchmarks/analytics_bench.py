"""Time ``zq events export`` and the ``zq stats`` Spark job on synthetic events.

    python benchmarks/analytics_bench.py --events 1000000 [--dir DIR] [--keep]

Events come from zq.analytics.synthetic through a streaming EventLog, so the
export path is the real one (batches, state file, fsync, trim) minus the
backend's own read cost; ``--skip-export`` reuses a dataset already in DIR.
"""

from __future__ import annotations

import argparse
import io
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from zq.analytics.cli import add_stats_arguments
from zq.analytics.export import export
from zq.analytics.synthetic import synthetic_events
from zq.storage.base import Event, EventLog


class SyntheticEventLog(EventLog):
    """An event log that generates its events as they are read (read forward only)."""

    def __init__(self, count: int, seed: int = 0) -> None:
        self._events: Iterator[Event] = synthetic_events(count, seed=seed)
        self._last: str | None = None

    def read(self, *, after: str | None = None, limit: int = 1000) -> list[Event]:
        if after != self._last:
            raise RuntimeError("the synthetic log reads forward only")
        batch = [event for _, event in zip(range(limit), self._events, strict=False)]
        if batch:
            self._last = batch[-1].cursor
        return batch

    def count(self, *, after: str | None = None) -> int:
        return 0  # generated on demand: nothing waits

    def trim(self, *, up_to: str) -> int:
        return 0


class _Storage:
    def __init__(self, log: EventLog) -> None:
        self.events = log


def size_of(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*.parquet"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, dest="count")
    parser.add_argument("--dir", help="dataset directory (default: a temporary one)")
    parser.add_argument("--batch-size", type=int, default=100_000)
    parser.add_argument("--skip-export", action="store_true")
    parser.add_argument("--skip-job", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the temporary dataset")
    parser.add_argument("--master", default=None)
    parser.add_argument("--driver-memory", default="4g")
    options = parser.parse_args()

    root = Path(options.dir or tempfile.mkdtemp(prefix="zq-bench-"))
    print(f"dataset: {root}", file=sys.stderr)
    if not options.skip_export:
        started = time.perf_counter()
        result = export({"bench": _Storage(SyntheticEventLog(options.count))}, str(root),
                        batch_size=options.batch_size)[0]
        seconds = time.perf_counter() - started
        print(f"export: {result.events:,} events, {len(result.files)} files, "
              f"{size_of(root) / 1e6:.1f} MB in {seconds:.1f}s "
              f"({result.events / seconds:,.0f} events/s)")
    if not options.skip_job:
        from zq.analytics.job import run

        job_parser = argparse.ArgumentParser()
        add_stats_arguments(job_parser)
        argv = ["--events", str(root), "--format", "json",
                "--conf", f"spark.driver.memory={options.driver_memory}"]
        if options.master:
            argv += ["--master", options.master]
        args = job_parser.parse_args(argv)
        started = time.perf_counter()
        code = run(args, out=io.StringIO())
        seconds = time.perf_counter() - started
        print(f"job: {seconds:.1f}s (Spark start-up included), exit code {code}")
    if not options.dir and not options.keep:
        shutil.rmtree(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
