"""Queue listing with many queues in a project: does a page cost more deep in the listing?

    python -m benchmarks.queue_paging [--backends sqlite,postgresql,mariadb,redis]
        [--queues 10000] [--pages 200]
    (from the repository root)

For each backend (a fresh, never analyzed database or key prefix, removed
afterwards; benchmarks/scratch_storage.py), creates ``--queues`` queues in
one project through the storage contract, then times, in alternating
order, ``--pages`` listings of 10 queues (``QueueController.list``, no
HTTP) of each position:

- ``first``: no marker;
- ``middle``: the marker of the queue halfway through the names;
- ``deep``: the marker 11 queues before the end (a full last page);

and a few ``count`` calls (what ``with_count=true`` costs: it reads every
queue of the project, whatever the page). Prints one JSON line per backend:
p50/p99 ms per position and deep p50 / first p50 (flat paging: about 1).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from benchmarks.loadgen.stats import percentile
from benchmarks.scratch_storage import BACKENDS, scratch
from zq.storage import open_storage
from zq.storage.base import Storage

PROJECT = "paging"
PAGE = 10
COUNTS = 5  # count() reads every queue: a few calls show its cost


def queue_names(count: int) -> list[str]:
    """Names that sort in creation order (``q00000``, ``q00001``, ...)."""
    return [f"q{n:07d}" for n in range(count)]


def create_queues(storage: Storage, project: str, names: list[str], threads: int = 8) -> None:
    """Create every queue (untimed), ``threads`` creations at once: commits overlap."""
    with ThreadPoolExecutor(threads) as pool:
        for created in pool.map(lambda name: storage.queues.create(project, name, {}), names):
            del created


def timed_ms(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {"p50_ms": round(statistics.median(ordered), 3),
            "p99_ms": round(percentile(ordered, 99), 3)}


def measure(storage: Storage, names: list[str], pages: int) -> dict[str, object]:
    markers = {"first": None, "middle": names[len(names) // 2], "deep": names[-PAGE - 1]}
    times: dict[str, list[float]] = {position: [] for position in markers}
    for round_ in range(pages):
        order = list(markers.items())
        for position, marker in (order if round_ % 2 == 0 else order[::-1]):
            times[position].append(timed_ms(
                lambda marker=marker: storage.queues.list(PROJECT, marker=marker, limit=PAGE)))
    page = storage.queues.list(PROJECT, marker=markers["deep"], limit=PAGE)
    assert [q.name for q in page] == names[-PAGE:], "the deep page is not the last 10 queues"
    counted = [timed_ms(lambda: storage.queues.count(PROJECT)) for _ in range(COUNTS)]
    result: dict[str, object] = {position: summary(values) for position, values in times.items()}
    first, deep = statistics.median(times["first"]), statistics.median(times["deep"])
    result["deep_over_first_p50"] = round(deep / first, 2)
    result["count_p50_ms"] = round(statistics.median(counted), 3)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="examples:\n"
               "  python -m benchmarks.queue_paging --pages 100\n"
               "  python -m benchmarks.queue_paging --backends sqlite,redis --queues 20000",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", default=",".join(BACKENDS),
                        help="comma list of %(default)s (default: all of them)")
    parser.add_argument("--queues", type=int, default=10000,
                        help="queues created in the project (default: %(default)s)")
    parser.add_argument("--pages", type=int, default=200,
                        help="timed listings per position (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.queues <= PAGE or args.pages < 1:
        parser.error(f"--queues must be more than {PAGE} and --pages positive")
    names = queue_names(args.queues)
    for backend in args.backends.split(","):
        with scratch(backend) as uri:
            storage = open_storage(uri)
            try:
                started = time.perf_counter()
                create_queues(storage, PROJECT, names)
                setup = time.perf_counter() - started
                result = measure(storage, names, args.pages)
            finally:
                storage.close()
        line = {"backend": backend, "queues": args.queues, "pages": args.pages,
                **result, "setup_s": round(setup, 1),
                "load_average": [round(x, 2) for x in os.getloadavg()]}
        print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
