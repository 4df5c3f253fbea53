"""Latencies, errors and bounds of one workload run, and its JSON summary."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

# Printed on stderr where a run's measured window starts and ends, when
# ``--mark-window`` asks for it: a caller measuring the server's CPU over the
# window (benchmarks/zaqar_side_by_side.py) leaves untimed preparation out.
WINDOW_MARK = "loadgen-window"
MARK_WINDOW = False


def mark_window(edge: str) -> None:
    if MARK_WINDOW:
        print(f"{WINDOW_MARK} {edge}", file=sys.stderr, flush=True)


def percentile(ordered: list[float], pct: float) -> float:
    """Nearest-rank percentile of sorted values (0.0 for none)."""
    if not ordered:
        return 0.0
    rank = max(1, -(-len(ordered) * pct // 100))  # ceil without floats
    return ordered[int(rank) - 1]


@dataclass
class Recorder:
    """What one workload run measured; also decides when the run is over.

    A run ends at ``max_requests`` requests or ``duration`` seconds,
    whichever comes first.
    """

    max_requests: int
    duration: float
    latencies: list[float] = field(default_factory=list)
    end_to_end: list[float] = field(default_factory=list)
    errors: int = 0
    messages: int = 0
    reserved: int = 0  # requests started or about to start
    started: float = field(default_factory=time.perf_counter)
    # The generator's own CPU (this process) from the start: what the run cost
    # the machine's shared cores on the generator's side.
    cpu_started: float = field(default_factory=time.process_time)
    extra: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        mark_window("start")

    def restart(self) -> None:
        """Start the clock now (after any untimed preparation)."""
        self.started = time.perf_counter()
        self.cpu_started = time.process_time()
        mark_window("start")

    @property
    def requests(self) -> int:
        return len(self.latencies) + self.errors

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def budget_left(self) -> bool:
        """Whether another request fits in the request and time bounds."""
        return self.reserved < self.max_requests and self.elapsed() < self.duration

    def reserve(self, requests: int = 1) -> bool:
        """Take ``requests`` from the budget before sending them (an exact bound).

        False, and nothing taken, when they would pass the request or time bound.
        """
        if self.reserved + requests > self.max_requests or self.elapsed() >= self.duration:
            return False
        self.reserved += requests
        return True

    def summary(self, workload: str, elapsed: float | None = None) -> dict[str, object]:
        mark_window("end")
        elapsed = self.elapsed() if elapsed is None else elapsed
        ordered = sorted(self.latencies)
        result: dict[str, object] = {
            "workload": workload,
            "msgs_per_s": round(self.messages / elapsed, 1),
            "req_per_s": round(self.requests / elapsed, 1),
            "p50_ms": round(percentile(ordered, 50) * 1000, 2),
            "p99_ms": round(percentile(ordered, 99) * 1000, 2),
            "errors": self.errors,
            "requests": self.requests,
            "messages": self.messages,
            "seconds": round(elapsed, 2),
            "generator_cpu_s": round(time.process_time() - self.cpu_started, 2),
        }
        if self.end_to_end:
            e2e = sorted(self.end_to_end)
            result["e2e_p50_ms"] = round(percentile(e2e, 50) * 1000, 2)
            result["e2e_p99_ms"] = round(percentile(e2e, 99) * 1000, 2)
        result.update(self.extra)
        return result
