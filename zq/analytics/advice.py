"""The retry-policy advisor's arithmetic: plain Python over small per-queue summaries.

Spark (``zq.analytics.attempts``) reduces the events to, per queue,
how many messages succeeded or failed after how many claims, the gaps
between a message's consecutive claims and each recovered message's
recovery time. Everything below works on those summaries alone, so every
figure can be checked without Spark. The definitions are in
docs/analytics.md, "Retry-policy advice"; in short, for a candidate
``_max_claim_count`` M:

- a message deleted after k claims succeeded on attempt k: with k > M it
  would have been dead lettered (a *false dead letter*);
- a message that failed after c claims (dead lettered, or expired after
  being claimed) would have been dead lettered c - M deliveries sooner when
  M < c (*deliveries saved*); when M > c nobody knows whether attempts
  c+1..M would have succeeded: it is *unknown*, never counted either way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

BACKOFFS = ("fixed", "linear", "exponential")
RETRY_DELAYS = (1, 2, 5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300)  # candidate _retry_delay s
DEFAULT_TOLERANCE = 0.01
DEFAULT_MIN_FAILING = 20


@dataclass
class QueueAttempts:
    """What the events say about one queue's delivery attempts."""

    project: str
    queue: str
    succeeded: dict[int, int] = field(default_factory=dict)  # claims at delete -> messages
    failed: dict[int, int] = field(default_factory=dict)  # claims when it failed -> messages
    # Seconds between consecutive claims of one message in the queue.
    gap_mean: float | None = None
    gap_p50: float | None = None
    gap_p90: float | None = None
    recoveries: list[float] = field(default_factory=list)  # first claim -> successful claim

    @property
    def successes(self) -> int:
        return sum(self.succeeded.values())

    @property
    def failures(self) -> int:
        return sum(self.failed.values())

    @property
    def observed_max(self) -> int:
        """The most claims any message of the queue had."""
        return max([*self.succeeded, *self.failed, 0])


def percentile(values: Sequence[float], p: float) -> float | None:
    """Linear interpolation between closest ranks (Spark's ``percentile``)."""
    if not values:
        return None
    ordered = sorted(values)
    position = p * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def claim_figures(queue: QueueAttempts, m: int) -> dict[str, object]:
    """The figures of one candidate ``_max_claim_count`` for one queue."""
    false_dead_letters = sum(n for k, n in queue.succeeded.items() if k > m)
    saved = sum(n * (c - m) for c, n in queue.failed.items() if c > m)
    unknown = sum(n for c, n in queue.failed.items() if c < m)
    extra = sum(n * (m - c) for c, n in queue.failed.items() if c < m)
    gap, failures = queue.gap_mean, queue.failures
    successes = queue.successes
    return {
        "project": queue.project, "queue": queue.queue, "max_claim_count": m,
        "succeeded": successes, "failed": failures,
        "false_dead_letters": false_dead_letters,
        "false_dead_letter_rate": false_dead_letters / successes if successes else None,
        "deliveries_saved": saved,
        "unknown": unknown,
        "extra_deliveries_if_still_failing": extra,
        # How much later (positive) or sooner (negative) than observed a
        # failing message would have been given up on, on average: an
        # estimate from the mean gap between claims, as the attempts never
        # happened (an unknown message is assumed to keep failing).
        "est_dead_letter_delay_s": (gap * (extra - saved) / failures
                                    if gap is not None and failures else None),
    }


def schedule(base: float, backoff: str, retries: int, max_delay: float | None = None) -> float:
    """Seconds of backoff before retry number ``retries`` (API.md "Backoff", no jitter).

    The wait after the n-th failed claim is ``min(max_delay, base * f(n))``
    with f(n) = 1, n or 2^(n-1); this sums them for n = 1..retries.
    """
    factor = {"fixed": lambda n: 1, "linear": lambda n: n, "exponential": lambda n: 2 ** (n - 1)}
    total = 0.0
    for n in range(1, retries + 1):
        wait = base * factor[backoff](n)
        total += wait if max_delay is None else min(max_delay, wait)
    return total


def backoff_figures(queue: QueueAttempts, m: int, *, delays: Sequence[float] = RETRY_DELAYS
                    ) -> list[dict[str, object]]:
    """For each candidate backoff: would M attempts reach past each observed recovery?

    A recovered message (deleted after k >= 2 claims) needed ``recovery``
    seconds from its first claim to the claim that succeeded. A policy
    *covers* it when its backoff before the last allowed attempt (attempt M)
    is at least that long. The time consumers hold a claim before failing
    comes on top of the backoff, so real retries come later than the
    schedule: ``covered`` is a lower bound.
    """
    rows = []
    recovered = len(queue.recoveries)
    for backoff in BACKOFFS:
        for delay in delays:
            wait = schedule(delay, backoff, m - 1)
            covered = sum(1 for r in queue.recoveries if r <= wait)
            rows.append({
                "project": queue.project, "queue": queue.queue, "max_claim_count": m,
                "backoff": backoff, "retry_delay": delay,
                "backoff_before_last_attempt_s": wait, "recovered": recovered,
                "covered": covered, "covered_share": covered / recovered if recovered else None,
            })
    return rows


def recommend(queue: QueueAttempts, *, tolerance: float = DEFAULT_TOLERANCE,
              min_failing: int = DEFAULT_MIN_FAILING) -> dict[str, object]:
    """The advice for one queue: a ``_max_claim_count`` and a backoff, with the evidence."""
    recoveries = queue.recoveries
    row: dict[str, object] = {
        "project": queue.project, "queue": queue.queue,
        "succeeded": queue.successes, "failed": queue.failures,
        "observed_max_claims": queue.observed_max,
        "max_claim_count": None, "false_dead_letters": None, "deliveries_saved": None,
        "unknown": None, "backoff": None, "retry_delay": None, "covered_share": None,
        "gap_p50_s": queue.gap_p50, "gap_p90_s": queue.gap_p90,
        "recovered": len(recoveries),
        "recovery_p50_s": percentile(recoveries, 0.5),
        "recovery_p90_s": percentile(recoveries, 0.9),
    }
    if queue.failures < min_failing or not queue.successes:
        row["advice"] = (f"not enough data: {queue.failures} failing and {queue.successes} "
                         f"succeeded messages (at least {min_failing} failing and 1 succeeded "
                         "needed)")
        return row
    allowed = tolerance * queue.successes
    m = next(m for m in range(1, queue.observed_max + 1)
             if claim_figures(queue, m)["false_dead_letters"] <= allowed)
    figures = claim_figures(queue, m)
    row.update({key: figures[key] for key in ("false_dead_letters", "deliveries_saved",
                                              "unknown")})
    row["max_claim_count"] = m
    advice = [f"_max_claim_count={m}: {figures['false_dead_letters']} of "
              f"{queue.successes} successes would have been dead lettered "
              f"(tolerance {tolerance:.2%}), {figures['deliveries_saved']} poison deliveries "
              f"saved, {figures['unknown']} failing messages unknown (failed before attempt {m})"]
    if recoveries:
        best = _best_backoff(backoff_figures(queue, m), 1 - tolerance)
        if best is None:
            advice.append(f"no candidate backoff reaches {1 - tolerance:.0%} of the "
                          f"{len(recoveries)} recoveries within {m} attempts: raise the "
                          "attempts or the delay")
        else:
            row.update({key: best[key] for key in ("backoff", "retry_delay", "covered_share")})
            advice.append(f"_retry_backoff={best['backoff']} _retry_delay={best['retry_delay']}: "
                          f"backoff {best['backoff_before_last_attempt_s']:.0f}s before attempt "
                          f"{m} (as long as poison waits to be dead lettered) covers "
                          f"{best['covered']} of {best['recovered']} recoveries "
                          f"(they took p50 {row['recovery_p50_s']:.0f}s, "
                          f"p90 {row['recovery_p90_s']:.0f}s)")
    row["advice"] = "; ".join(advice)
    return row


def _best_backoff(rows: Sequence[Mapping[str, object]], share: float
                  ) -> Mapping[str, object] | None:
    """The candidate that covers ``share`` of recoveries with the least waiting."""
    good = [r for r in rows if r["covered_share"] is not None and r["covered_share"] >= share]
    return min(good, key=lambda r: (r["backoff_before_last_attempt_s"],
                                    BACKOFFS.index(r["backoff"]), r["retry_delay"]),
               default=None)


def advise(queues: Sequence[QueueAttempts], *, tolerance: float = DEFAULT_TOLERANCE,
           min_failing: int = DEFAULT_MIN_FAILING) -> dict[str, list[dict[str, object]]]:
    """The three advisor tables: ``advice``, ``advice_claims`` and ``advice_backoff``."""
    advice, claims, backoff = [], [], []
    for queue in sorted(queues, key=lambda q: (q.project, q.queue)):
        row = recommend(queue, tolerance=tolerance, min_failing=min_failing)
        advice.append(row)
        # One candidate beyond the most claims seen: all of it is unknown.
        claims += [claim_figures(queue, m) for m in range(1, queue.observed_max + 2)]
        if row["max_claim_count"] is not None and queue.recoveries:
            backoff += backoff_figures(queue, row["max_claim_count"])
    return {"advice": advice, "advice_claims": claims, "advice_backoff": backoff}


def queues_from(counts: Sequence[Mapping[str, object]], gaps: Sequence[Mapping[str, object]],
                recovered: Sequence[Mapping[str, object]]) -> list[QueueAttempts]:
    """QueueAttempts from the rows of ``attempt_counts``, ``attempt_gaps`` and ``recoveries``."""
    queues: dict[tuple[str, str], QueueAttempts] = {}

    def queue(row: Mapping[str, object]) -> QueueAttempts:
        key = (str(row["project"]), str(row["queue"]))
        return queues.setdefault(key, QueueAttempts(*key))

    for row in counts:
        outcome = queue(row).succeeded if row["outcome"] == "succeeded" else queue(row).failed
        outcome[int(row["claims"])] = int(row["messages"])
    for row in gaps:
        found = queue(row)
        found.gap_mean, found.gap_p50, found.gap_p90 = (row["gap_mean"], row["gap_p50"],
                                                       row["gap_p90"])
    for row in recovered:
        queue(row).recoveries = sorted(row["recoveries"])
    return list(queues.values())


def columns() -> dict[str, list[str]]:
    """The columns of each advisor table, also when it has no rows."""
    empty = QueueAttempts("", "")
    return {"advice": list(recommend(empty, min_failing=1)),
            "advice_claims": list(claim_figures(empty, 1)),
            "advice_backoff": list(backoff_figures(empty, 1)[0])}
