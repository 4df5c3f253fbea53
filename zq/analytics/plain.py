"""The tables of zq stats in plain Python, for datasets too small to be worth starting Spark.

Spark takes 10-60 s to start on a small machine; a few thousand events are
counted in a fraction of a second without it. ``zq stats`` uses this engine
when the selection is small (``--engine auto``, see zq.analytics.job) and
Spark otherwise. It computes the same tables, row for row, by the
definitions in zq.analytics.tables, lifecycles and redrives: the tests run
both engines on the same datasets and compare every figure
(tests/analytics/test_plain_engine.py), and the plain-Python recount of the
tests checks both.

Events are ordered within a message by (time, seq) as Spark does; a
message is (backend, project, message_id).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, NamedTuple

import pyarrow as pa

from zq.analytics import buckets
from zq.analytics.results import Result
from zq.poison.moves import REASON_AUTO_REDRIVEN

STEP_KINDS = {"posted", "claimed", "released", "deleted", "dead_lettered", "expired",
              "rejected", "redriven"}
FLOWS = ["posted", "dead_lettered_in", "redriven_in", "claimed", "released", "rejected",
         "deleted", "dead_lettered", "redriven", "expired", "purged"]
COLUMNS = {
    "queue_totals": ["project", "queue", *FLOWS, "present", "unaccounted", "dead_letter_rate"],
    "queue_trend": ["bucket", "bucket_seconds", "project", "queue", *FLOWS, "dead_letter_rate"],
    "claims_distribution": ["project", "queue", "outcome", "claims", "messages"],
    "latency": ["project", "queue", "metric", "messages", "p50", "p95", "p99", "max"],
    "failing_fingerprints": ["project", "fingerprint", "dead_letters", "messages", "queues",
                             "sample"],
    "poison_signatures": ["signature_id", "project", "by", "signature", "messages", "events",
                          "first", "last", "queues", "sample_ids"],
    "consumers": ["client_id", "deliveries", "claims", "deleted", "released", "rejected",
                  "expired", "expired_claims"],
    "dead_letter_rate": ["bucket", "bucket_seconds", "deleted", "dead_lettered",
                         "dead_letter_rate"],
    "rejections": ["project", "queue", "rank", "description", "rejections", "retries",
                   "terminal", "messages", "first", "last"],
    "dead_letters_by_reason": ["project", "queue", "dead_letter_queue", "reason",
                               "dead_letters", "messages", "share"],
    "redrive_outcomes": ["project", "queue", "dead_letter_queue", "redriven", "messages",
                         "succeeded", "failed_again", "died_again", "expired", "pending",
                         "automatic", "success_rate"],
}
SAMPLE_IDS = 5
# The drill-down (zq stats signatures, and report.html's links): not one of
# the tables every run prints, as it has a row per failing message.
DRILL_DOWN = ("signature_messages", ["signature_id", "by", "backend", "project", "message_id",
                                     "queues", "events", "first", "last"])


class Row(NamedTuple):
    """One exported event: the columns the tables read.

    A named tuple, not a frozen dataclass: building one is a single tuple
    allocation instead of 19 ``object.__setattr__`` calls, which made
    reading 20,000 events take 0.6 s.
    """

    backend: str
    seq: int
    time: float
    project: str
    queue: str
    kind: str
    message_id: str | None
    claim_id: str | None
    client_id: str | None
    claim_count: int | None
    fingerprint: str | None
    to_queue: str | None
    reason: str | None
    sample: str | None
    pop: bool | None
    target: str | None
    messages: int | None
    description: str | None
    shape: str | None

    @property
    def at(self) -> tuple[float, int]:
        return (self.time, self.seq)

    @property
    def message(self) -> tuple[str, str, str | None]:
        return (self.backend, self.project, self.message_id)


FIELDS = list(Row._fields)


def rows_of(table: pa.Table) -> list[Row]:
    """The events of an Arrow table of the export's schema, in (backend, seq) order."""
    columns = [table.column(name).to_pylist() for name in FIELDS]
    rows = [Row(*values) for values in zip(*columns, strict=True)]
    rows.sort(key=lambda r: (r.backend, r.seq))
    return rows


def bucket(t: float, width: int) -> str:
    """The label of the time bucket of POSIX seconds ``t`` (zq.analytics.buckets)."""
    return _label(buckets.start(t, width))


# strftime per event was half of the engine's time: buckets repeat, format once.
_label = functools.lru_cache(maxsize=4096)(buckets.label)


def iso(t: float) -> str:
    return datetime.fromtimestamp(int(t // 1), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def rate(failed: int, succeeded: int) -> float | None:
    return failed / (failed + succeeded) if failed + succeeded else None


def percentile(values: list[float], p: float) -> float:
    """Exact, with linear interpolation between the closest ranks (Spark's ``percentile``)."""
    ordered = sorted(values)
    position = p * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def time_range(rows: list[Row]) -> tuple[float | None, float | None]:
    """The first and last event time of the selection (for the bucket width)."""
    times = [r.time for r in rows]
    return (min(times), max(times)) if times else (None, None)


def compute(rows: list[Row], top: int = 20, bucket: int = buckets.DAY) -> dict[str, Result]:
    """Every table of zq stats, by name, as collected Results; ``bucket``: trend width (s)."""
    messages: dict[tuple, list[Row]] = defaultdict(list)
    for r in rows:
        if r.message_id is not None and r.kind in STEP_KINDS:
            messages[r.message].append(r)
    for steps in messages.values():
        steps.sort(key=lambda r: r.at)
    holds = list(_holds(messages))
    tables = {
        "queue_totals": _queue_totals(rows, messages),
        "queue_trend": _queue_trend(rows, bucket),
        **_per_message(messages, top),
        "poison_signatures": _signatures(rows, top),
        "consumers": _consumers(rows, holds, top),
        "dead_letter_rate": _dead_letter_rate(rows, bucket),
        "rejections": _rejections(rows, top),
        "dead_letters_by_reason": _by_reason(rows),
        "redrive_outcomes": _redrive_outcomes(messages),
    }
    return {name: Result(name, COLUMNS[name], [tuple(r[c] for c in COLUMNS[name])
                                                 for r in tables[name]])
            for name in COLUMNS}


def _flows(rows: Iterable[Row], arrivals: tuple[int, int]) -> dict[str, Any]:
    row = dict.fromkeys(FLOWS, 0)
    row["dead_lettered_in"], row["redriven_in"] = arrivals
    for r in rows:
        if r.kind == "expired" and r.message_id is None:
            continue
        if r.kind == "purged":
            row["purged"] += r.messages or 0
        elif r.kind in row:
            row[r.kind] += 1
    return row


def _arrivals(rows: Iterable[Row], width: int | None) -> dict[tuple, tuple[int, int]]:
    """Moves in, per queue (and time bucket of ``width`` seconds, unless None)."""
    arrivals: dict[tuple, tuple[int, int]] = defaultdict(lambda: (0, 0))
    for r in rows:
        if r.kind in ("dead_lettered", "redriven"):
            key = ((bucket(r.time, width),) if width else ()) + (r.project, r.to_queue)
            moved, back = arrivals[key]
            arrivals[key] = (moved + (r.kind == "dead_lettered"), back + (r.kind == "redriven"))
    return arrivals


def _present(rows: list[Row], messages: dict[tuple, list[Row]]) -> dict[tuple, int]:
    purges: dict[tuple, tuple] = {}
    for r in rows:
        if r.kind == "purged":
            key = (r.backend, r.project, r.queue)
            purges[key] = max(purges.get(key, r.at), r.at)
    counts: dict[tuple, int] = defaultdict(int)
    for steps in messages.values():
        last = steps[-1]
        if last.kind in ("deleted", "expired"):
            continue
        queue = last.to_queue if last.kind in ("dead_lettered", "redriven") else last.queue
        purge = purges.get((last.backend, last.project, queue))
        if purge is None or last.at > purge:
            counts[(last.project, queue)] += 1
    return counts


def _queue_totals(rows: list[Row], messages: dict[tuple, list[Row]]) -> list[dict]:
    by_queue: dict[tuple, list[Row]] = defaultdict(list)
    for r in rows:
        by_queue[(r.project, r.queue)].append(r)
    arrivals = _arrivals(rows, None)
    present = _present(rows, messages)
    totals = []
    for key in set(by_queue) | set(arrivals) | set(present):
        row = {"project": key[0], "queue": key[1],
               **_flows(by_queue.get(key, []), arrivals.get(key, (0, 0)))}
        row["present"] = present.get(key, 0)
        into = row["posted"] + row["dead_lettered_in"] + row["redriven_in"]
        out = (row["deleted"] + row["dead_lettered"] + row["redriven"] + row["expired"]
               + row["purged"] + row["present"])
        row["unaccounted"] = into - out
        row["dead_letter_rate"] = rate(row["dead_lettered"], row["deleted"])
        totals.append(row)
    totals.sort(key=lambda r: (-r["dead_lettered"], r["project"], r["queue"]))
    return totals


def _queue_trend(rows: list[Row], width: int) -> list[dict]:
    by_bucket: dict[tuple, list[Row]] = defaultdict(list)
    for r in rows:
        by_bucket[(bucket(r.time, width), r.project, r.queue)].append(r)
    arrivals = _arrivals(rows, width)
    trend = []
    for key in sorted(set(by_bucket) | set(arrivals)):
        row = {"bucket": key[0], "bucket_seconds": width, "project": key[1], "queue": key[2],
               **_flows(by_bucket.get(key, []), arrivals.get(key, (0, 0)))}
        row["dead_letter_rate"] = rate(row["dead_lettered"], row["deleted"])
        trend.append(row)
    return trend


def _per_message(messages: dict[tuple, list[Row]], top: int) -> dict[str, list[dict]]:
    """claims_distribution, latency and failing_fingerprints: one walk over each message."""
    distribution: dict[tuple, int] = defaultdict(int)
    latencies: dict[tuple, list[float]] = defaultdict(list)
    prints: dict[tuple[str, str | None], dict] = defaultdict(
        lambda: {"dead_letters": 0, "messages": set(), "queues": set(), "sample": None})
    for key, steps in messages.items():
        posted = [r for r in steps if r.kind == "posted"]
        posted_at = min((r.time for r in posted), default=None)
        posted_fp = max((r.fingerprint for r in posted if r.fingerprint is not None),
                        default=None)
        claimed = 0
        for r in steps:
            claimed += r.kind == "claimed"
            if r.kind in ("deleted", "dead_lettered"):
                pop = r.kind == "deleted" and bool(r.pop)
                claims = r.claim_count if r.claim_count is not None else claimed + int(pop)
                distribution[(r.project, r.queue, r.kind, claims)] += 1
                if posted_at is not None:
                    metric = "post_to_delete" if r.kind == "deleted" else "post_to_dead_letter"
                    latencies[(r.project, r.queue, metric)].append(r.time - posted_at)
            if r.kind == "dead_lettered":
                entry = prints[(r.project,
                                r.fingerprint if r.fingerprint is not None else posted_fp)]
                entry["dead_letters"] += 1
                entry["messages"].add(key)
                entry["queues"].add(r.queue)
                if r.sample is not None and (entry["sample"] is None
                                             or r.at < entry["sample"][0]):
                    entry["sample"] = (r.at, r.sample)
    fingerprints = sorted(
        ({"project": project, "fingerprint": fp, "dead_letters": v["dead_letters"],
          "messages": len(v["messages"]), "queues": ",".join(sorted(v["queues"])),
          "sample": v["sample"][1] if v["sample"] else None}
         for (project, fp), v in prints.items()),
        # Spark sorts nulls first.
        key=lambda r: (-r["dead_letters"], r["project"], r["fingerprint"] is not None,
                       r["fingerprint"] or ""))
    return {
        "claims_distribution": [
            {"project": p, "queue": q, "outcome": o, "claims": c, "messages": n}
            for (p, q, o, c), n in sorted(distribution.items())],
        "latency": [
            {"project": p, "queue": q, "metric": m, "messages": len(v),
             "p50": percentile(v, 0.5), "p95": percentile(v, 0.95),
             "p99": percentile(v, 0.99), "max": max(v)}
            for (p, q, m), v in sorted(latencies.items())],
        "failing_fingerprints": fingerprints[:top],
    }


def ended_by(claim: Row, following: Row | None) -> str:
    """How the delivery ``claim`` ended, judged by the message's next step."""
    if following is None:
        return "open"
    if following.kind == "released":
        return "released"
    if following.kind == "rejected":
        return "rejected"
    same_claim = following.claim_id is not None and following.claim_id == claim.claim_id
    if following.kind == "dead_lettered" and following.reason == "rejected" and same_claim:
        return "rejected"
    if following.kind == "deleted" and not following.pop:
        return "deleted" if same_claim else "deleted_unclaimed"
    return "expired"


def _holds(messages: dict[tuple, list[Row]]) -> Iterable[tuple[Row, str]]:
    for steps in messages.values():
        for r, following in itertools.zip_longest(steps, steps[1:]):
            if r.kind == "claimed":
                yield r, ended_by(r, following)


def _consumers(rows: list[Row], holds: list[tuple[Row, str]], top: int) -> list[dict]:
    clients: dict[str, dict] = defaultdict(
        lambda: {"deliveries": 0, "claims": set(), "deleted": 0, "released": 0,
                 "rejected": 0, "expired": 0, "expired_claims": set()})
    for claim, end in holds:
        c = clients[claim.client_id or "(none)"]
        c["deliveries"] += 1
        if claim.claim_id is not None:
            c["claims"].add(claim.claim_id)
        if end in ("deleted", "released", "rejected", "expired"):
            c[end] += 1
        if end == "expired" and claim.claim_id is not None:
            c["expired_claims"].add(claim.claim_id)
    for r in rows:
        if r.kind == "expired" and r.message_id is None and r.target == "claim":
            c = clients[r.client_id or "(none)"]
            if r.claim_id is not None:
                c["expired_claims"].add(r.claim_id)
    table = [{"client_id": name, "deliveries": c["deliveries"], "claims": len(c["claims"]),
              "deleted": c["deleted"], "released": c["released"], "rejected": c["rejected"],
              "expired": c["expired"], "expired_claims": len(c["expired_claims"])}
             for name, c in clients.items()]
    table.sort(key=lambda r: (-(r["expired"] + r["released"] + r["rejected"]),
                              -r["expired_claims"], r["client_id"]))
    return table[:top]


def _dead_letter_rate(rows: list[Row], width: int) -> list[dict]:
    per_bucket: dict[str, list[int]] = {}
    for r in rows:
        counts = per_bucket.setdefault(bucket(r.time, width), [0, 0])
        counts[0] += r.kind == "deleted"
        counts[1] += r.kind == "dead_lettered"
    return [{"bucket": b, "bucket_seconds": width, "deleted": n[0], "dead_lettered": n[1],
             "dead_letter_rate": rate(n[1], n[0])} for b, n in sorted(per_bucket.items())]


def signature_id(project: str, by: str, signature: str) -> str:
    """12 hex digits of sha256("project\nby:signature"), as zq.analytics.attempts names it."""
    return hashlib.sha256(f"{project}\n{by}:{signature}".encode()).hexdigest()[:12]


def _failing_messages(rows: list[Row]) -> dict[tuple, dict[tuple, list[Row]]]:
    """{(project, by, signature): {message: its failure events}}."""
    groups: dict[tuple, dict] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r.kind not in ("dead_lettered", "rejected") or r.message_id is None:
            continue
        if r.shape is not None:
            groups[(r.project, "shape", r.shape)][r.message].append(r)
        if r.description is not None:
            groups[(r.project, "description", r.description)][r.message].append(r)
    return groups


def _signatures(rows: list[Row], top: int) -> list[dict]:
    table = []
    for (project, by, signature), per_message in _failing_messages(rows).items():
        failures = [r for found in per_message.values() for r in found]
        earliest = sorted((min(r.at for r in found), key[2]) for key, found in per_message.items())
        table.append({
            "signature_id": signature_id(project, by, signature), "project": project,
            "by": by, "signature": signature, "messages": len(per_message),
            "events": len(failures),
            "first": iso(min(r.time for r in failures)), "last": iso(max(r.time for r in failures)),
            "queues": ",".join(sorted({r.queue for r in failures})),
            "sample_ids": ",".join(m for _, m in earliest[:SAMPLE_IDS])})
    table.sort(key=lambda r: (-r["messages"], -r["events"], r["project"], r["by"],
                              r["signature"]))
    return table[:top]


def signature_messages(rows: list[Row], chosen: Iterable[str] | None = None) -> Result:
    """The drill-down: every failing message of each signature (of ``chosen`` ids only, if
    given), earliest failure first."""
    wanted = None if chosen is None else set(chosen)
    table = []
    for (project, by, signature), per_message in _failing_messages(rows).items():
        sid = signature_id(project, by, signature)
        if wanted is not None and sid not in wanted:
            continue
        for (backend, _, message_id), found in per_message.items():
            table.append((sid, min(r.at for r in found), backend, project, message_id, {
                "signature_id": sid, "by": by, "backend": backend, "project": project,
                "message_id": message_id, "queues": ",".join(sorted({r.queue for r in found})),
                "events": len(found), "first": iso(min(r.time for r in found)),
                "last": iso(max(r.time for r in found))}))
    table.sort(key=lambda entry: entry[:5])
    name, columns = DRILL_DOWN
    return Result(name, columns, [tuple(entry[5][c] for c in columns) for entry in table])


def _rejections(rows: list[Row], top: int) -> list[dict]:
    groups: dict[tuple, dict] = defaultdict(
        lambda: {"rejections": 0, "retries": 0, "terminal": 0, "messages": set(), "times": []})
    for r in rows:
        terminal = r.kind == "dead_lettered" and r.reason == "rejected"
        if r.message_id is None or (r.kind != "rejected" and not terminal):
            continue
        g = groups[(r.project, r.queue, r.description if r.description is not None else "(none)")]
        g["rejections"] += 1
        g["terminal" if terminal else "retries"] += 1
        g["messages"].add(r.message)
        g["times"].append(r.time)
    per_queue: dict[tuple, list[dict]] = defaultdict(list)
    for (project, queue, description), g in groups.items():
        per_queue[(project, queue)].append({
            "project": project, "queue": queue, "description": description,
            "rejections": g["rejections"], "retries": g["retries"], "terminal": g["terminal"],
            "messages": len(g["messages"]), "first": iso(min(g["times"])),
            "last": iso(max(g["times"]))})
    table = []
    for key in sorted(per_queue):
        ranked = sorted(per_queue[key],
                        key=lambda r: (-r["rejections"], -r["messages"], r["description"]))
        table += [{**row, "rank": rank} for rank, row in enumerate(ranked[:top], start=1)]
    return table


def _by_reason(rows: list[Row]) -> list[dict]:
    moves: dict[tuple, list] = defaultdict(list)
    for r in rows:
        if r.kind == "dead_lettered" and r.message_id is not None:
            moves[(r.project, r.queue, r.to_queue, r.reason or "(none)")].append(r.message)
    per_queue: dict[tuple, int] = defaultdict(int)
    for (project, queue, _, _), found in moves.items():
        per_queue[(project, queue)] += len(found)
    table = [{"project": p, "queue": q, "dead_letter_queue": dlq, "reason": reason,
              "dead_letters": len(found), "messages": len(set(found)),
              "share": len(found) / per_queue[(p, q)]}
             for (p, q, dlq, reason), found in moves.items()]
    table.sort(key=lambda r: (r["project"], r["queue"], -r["dead_letters"],
                              r["dead_letter_queue"] or "", r["reason"]))
    return table


def _redrive_outcome(after: list[Row], following_step: Row | None) -> str:
    """What one redrive led to: ``after`` are the message's steps up to its next redrive."""
    failures = 0
    for index, r in enumerate(after):
        following = after[index + 1] if index + 1 < len(after) else following_step
        if r.kind == "deleted":
            return "succeeded"
        if r.kind == "dead_lettered":
            return "died_again"
        if r.kind == "expired":
            return "expired"
        failures += r.kind in ("released", "rejected") or (
            r.kind == "claimed" and following is not None
            and ended_by(r, following) == "expired")
    return "failed_again" if failures else "pending"


def _redrive_outcomes(messages: dict[tuple, list[Row]]) -> list[dict]:
    outcomes = ("succeeded", "failed_again", "died_again", "expired", "pending")
    groups: dict[tuple, dict] = defaultdict(
        lambda: {"redriven": 0, "messages": set(), "automatic": 0,
                 **dict.fromkeys(outcomes, 0)})
    for key, steps in messages.items():
        redrives = [i for i, r in enumerate(steps) if r.kind == "redriven"]
        for i, j in itertools.zip_longest(redrives, redrives[1:]):
            r = steps[i]
            g = groups[(r.project, r.to_queue, r.queue)]
            g["redriven"] += 1
            g["automatic"] += r.reason == REASON_AUTO_REDRIVEN
            g["messages"].add(key)
            g[_redrive_outcome(steps[i + 1:j], steps[j] if j is not None else None)] += 1
    table = []
    for (project, queue, dlq), g in groups.items():
        ended = g["succeeded"] + g["died_again"] + g["expired"]
        table.append({"project": project, "queue": queue, "dead_letter_queue": dlq,
                      "redriven": g["redriven"], "messages": len(g["messages"]),
                      **{name: g[name] for name in outcomes},
                      "success_rate": g["succeeded"] / ended if ended else None,
                      "automatic": g["automatic"]})
    table.sort(key=lambda r: (-r["redriven"], r["project"], r["queue"] or "",
                              r["dead_letter_queue"]))
    return table
