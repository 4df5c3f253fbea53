"""Wall time of ``zq stats`` answers that need no Spark, against a baseline checkout.

    python benchmarks/stats_answer_time.py --baseline /tmp/zq-old   # an older zq source tree

Runs ``python -m zq stats`` (a fresh process each time, as a user would):
``--help`` (zq's own start-up), then on a missing path, an empty dataset,
a filter that matches nothing in a small synthetic dataset, and every
table of that dataset (the plain-Python engine; with ``--out``, the
charts, report.html and the drill-down too; and Spark with ``--engine
spark``: a baseline without ``--engine`` fails that case, rc 2), with this
checkout and, if given, the baseline checkout (its PYTHONPATH), and prints
seconds and the baseline/this ratio.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from zq.analytics.export import export  # noqa: E402
from zq.analytics.synthetic import synthetic_events  # noqa: E402
from zq.storage.base import EventLog  # noqa: E402
from zq.storage.records import Event  # noqa: E402


class _Log(EventLog):
    def __init__(self, events: list[Event]) -> None:
        self._events = events

    def read(self, *, after: str | None = None, limit: int = 1000) -> list[Event]:
        start = 0 if after is None else int(after)
        return self._events[start:start + limit]

    def count(self, *, after: str | None = None) -> int:
        return len(self._events) - (0 if after is None else int(after))

    def trim(self, *, up_to: str) -> int:
        return 0


class _Storage:
    def __init__(self, log: EventLog) -> None:
        self.events = log


def timed(tree: Path, argv: list[str]) -> tuple[float, int]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "zq", "stats", *argv], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=1800)
    return time.perf_counter() - started, done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="examples:\n"
               "  python benchmarks/stats_answer_time.py --no-spark\n"
               "  python benchmarks/stats_answer_time.py --baseline /tmp/zq-old",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, help="an older zq source tree to compare with")
    parser.add_argument("--events", type=int, default=20_000,
                        help="events in the small synthetic dataset (default: %(default)s)")
    parser.add_argument("--no-spark", dest="spark", action="store_false",
                        help="leave out the --engine spark case (minutes on a loaded machine)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="zq-stats-bench-") as scratch:
        empty = Path(scratch) / "empty"
        empty.mkdir()
        dataset = Path(scratch) / "dataset"
        events = list(synthetic_events(options.events, seed=1))
        export({"bench": _Storage(_Log(events))}, str(dataset), batch_size=5000)
        cases = {
            "--help (start-up)": ["--help"],
            "missing path": ["--events", str(Path(scratch) / "nothing-here")],
            "empty dataset": ["--events", str(empty)],
            "--queue nosuch": ["--events", str(dataset), "--queue", "nosuch"],
            # Every table of the whole (small) dataset: plain Python since
            # --engine auto, Spark before.
            f"{options.events:,} events": ["--events", str(dataset), "--format", "json"],
            f"{options.events:,} --out": ["--events", str(dataset), "--out",
                                          str(Path(scratch) / "report")],
            f"{options.events:,} --engine spark": ["--events", str(dataset), "--format", "json",
                                                   "--engine", "spark"],
        }
        if not options.spark:
            del cases[f"{options.events:,} --engine spark"]
        trees = {"this": HERE, **({"baseline": options.baseline} if options.baseline else {})}
        print(f"load average: {Path('/proc/loadavg').read_text().split()[:3]}")
        print(f"{'case':<24} " + " ".join(f"{name:>16}" for name in trees) + "   ratio")
        for case, argv in cases.items():
            figures = {name: timed(tree, argv) for name, tree in trees.items()}
            cells = " ".join(f"{seconds:>9.1f}s (rc {rc})" for seconds, rc in figures.values())
            ratio = (f"   {figures['baseline'][0] / figures['this'][0]:.1f}x"
                     if "baseline" in figures else "")
            print(f"{case:<24} {cells}{ratio}", flush=True)
        print(f"load average: {Path('/proc/loadavg').read_text().split()[:3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
