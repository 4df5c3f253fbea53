"""A plain-Python recount of every statistic, written without looking at Spark.

Input: the events in log order (their index is the exporter's ``seq``).
Output: the same tables as ``zq stats --format json``, as lists of dicts.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta

from tests.analytics.recount_advice import signatures
from tests.analytics.recount_poison import dead_letters_by_reason, redrive_outcomes, rejections
from zq.storage.records import Event

STEP_KINDS = {"posted", "claimed", "released", "deleted", "dead_lettered", "expired",
              "rejected", "redriven"}


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def width_for(log: list[Event]) -> int:
    """The documented rule: 1 minute under 2 hours of events, 1 hour under 3 days, else 1 day."""
    span = max(e.time for e in log) - min(e.time for e in log) if log else 0
    return 60 if span < 2 * 3600 else 3600 if span < 3 * 86400 else 86400


def bucket_of(t: float, width: int) -> str:
    """The bucket's start, counted in whole widths from the epoch with datetime arithmetic."""
    step = timedelta(seconds=width)
    start = EPOCH + (datetime.fromtimestamp(t, UTC) - EPOCH) // step * step
    return start.isoformat().replace("+00:00", "Z")


def rate(failed: int, succeeded: int):
    return failed / (failed + succeeded) if failed + succeeded else None


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    position = p * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


FLOWS = ["posted", "dead_lettered_in", "redriven_in", "claimed", "released", "rejected",
         "deleted", "dead_lettered", "redriven", "expired", "purged"]


def flows(events: list[Event], arrivals: tuple[int, int]) -> dict:
    """The flow columns of one queue (and day): events by kind, moves in, purged messages."""
    row = dict.fromkeys(FLOWS, 0)
    row["dead_lettered_in"], row["redriven_in"] = arrivals
    for e in events:
        if e.kind == "expired" and e.message_id is None:
            continue
        if e.kind == "purged":
            row["purged"] += e.detail.get("messages", 0)
        elif e.kind in row:
            row[e.kind] += 1
    return row


def still_present(indexed: list[tuple[int, Event]]) -> dict[tuple[str, str], int]:
    """Messages per queue whose last step left them there, with no purge of it after."""
    last: dict[str, tuple] = {}
    purges: dict[tuple[str, str], tuple] = {}
    for seq, e in indexed:
        at = (e.time, seq)
        if e.kind == "purged":
            purges[(e.project, e.queue)] = max(purges.get((e.project, e.queue), at), at)
        elif e.message_id is not None and e.kind in STEP_KINDS:
            key = (e.project, e.message_id)
            if key not in last or at > last[key][0]:
                last[key] = (at, e)
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for at, e in last.values():
        if e.kind in ("deleted", "expired"):
            continue
        queue = e.detail["to"] if e.kind in ("dead_lettered", "redriven") else e.queue
        purge = purges.get((e.project, queue))
        if purge is None or at > purge:
            counts[(e.project, queue)] += 1
    return counts


def recount(log: list[Event], top: int = 20, backend: str = "a", bucket: int | None = None
            ) -> dict[str, list[dict]]:
    width = bucket or width_for(log)

    def day(t: float) -> str:
        return bucket_of(t, width)

    indexed = list(enumerate(log))
    by_queue = defaultdict(list)
    by_queue_day = defaultdict(list)
    arrivals = defaultdict(lambda: (0, 0))
    arrivals_day = defaultdict(lambda: (0, 0))
    for _, e in indexed:
        by_queue[(e.project, e.queue)].append(e)
        by_queue_day[(day(e.time), e.project, e.queue)].append(e)
        if e.kind in ("dead_lettered", "redriven"):
            one = (1, 0) if e.kind == "dead_lettered" else (0, 1)
            for table, key in ((arrivals, (e.project, e.detail["to"])),
                               (arrivals_day, (day(e.time), e.project, e.detail["to"]))):
                table[key] = (table[key][0] + one[0], table[key][1] + one[1])
    present = still_present(indexed)

    totals = []
    for p, q in set(by_queue) | set(arrivals) | set(present):
        row = {"project": p, "queue": q, **flows(by_queue.get((p, q), []), arrivals[(p, q)])}
        row["present"] = present.get((p, q), 0)
        row["unaccounted"] = (row["posted"] + row["dead_lettered_in"] + row["redriven_in"]
                              - row["deleted"] - row["dead_lettered"] - row["redriven"]
                              - row["expired"] - row["purged"] - row["present"])
        row["dead_letter_rate"] = rate(row["dead_lettered"], row["deleted"])
        totals.append(row)
    totals.sort(key=lambda r: (-r["dead_lettered"], r["project"], r["queue"]))
    daily = []
    for d, p, q in sorted(set(by_queue_day) | set(arrivals_day)):
        row = {"bucket": d, "bucket_seconds": width, "project": p, "queue": q,
               **flows(by_queue_day.get((d, p, q), []), arrivals_day[(d, p, q)])}
        row["dead_letter_rate"] = rate(row["dead_lettered"], row["deleted"])
        daily.append(row)

    # Each message's steps, in time order.
    messages = defaultdict(list)
    for seq, e in indexed:
        if e.message_id is not None and e.kind in STEP_KINDS:
            messages[(backend, e.project, e.message_id)].append((e.time, seq, e))
    distribution = defaultdict(int)
    latencies = defaultdict(list)
    moves = []  # (event, seq, message key, posted fingerprint)
    holds = []  # (client, claim id, ended_by)
    for key, steps in messages.items():
        steps.sort(key=lambda s: (s[0], s[1]))
        posted = [s[2] for s in steps if s[2].kind == "posted"]
        posted_at = min((p.time for p in posted), default=None)
        posted_fp = max((p.detail.get("fingerprint") for p in posted
                         if p.detail.get("fingerprint")), default=None)
        claimed = 0
        for index, (_, seq, e) in enumerate(steps):
            if e.kind == "claimed":
                claimed += 1
                following = steps[index + 1][2] if index + 1 < len(steps) else None
                holds.append((e.client_id or "(none)", e.claim_id, ended_by(e, following)))
            if e.kind in ("deleted", "dead_lettered"):
                pop = e.kind == "deleted" and bool(e.detail.get("pop"))
                claims = e.claim_count if e.claim_count is not None else claimed + int(pop)
                distribution[(e.project, e.queue, e.kind, claims)] += 1
                if posted_at is not None:
                    metric = "post_to_delete" if e.kind == "deleted" else "post_to_dead_letter"
                    latencies[(e.project, e.queue, metric)].append(e.time - posted_at)
            if e.kind == "dead_lettered":
                moves.append((e, seq, key, posted_fp))

    claims_distribution = [
        {"project": p, "queue": q, "outcome": o, "claims": c, "messages": n}
        for (p, q, o, c), n in sorted(distribution.items())
    ]
    latency = [
        {"project": p, "queue": q, "metric": m, "messages": len(v),
         "p50": percentile(v, 0.5), "p95": percentile(v, 0.95), "p99": percentile(v, 0.99),
         "max": max(v)}
        for (p, q, m), v in sorted(latencies.items())
    ]

    prints = defaultdict(lambda: {"dead_letters": 0, "messages": set(), "queues": set(),
                                  "sample": None})
    for e, seq, key, posted_fp in moves:
        fp = e.detail.get("fingerprint") or posted_fp
        entry = prints[(e.project, fp)]
        entry["dead_letters"] += 1
        entry["messages"].add(key)
        entry["queues"].add(e.queue)
        if e.detail.get("sample") is not None and (
                entry["sample"] is None or (e.time, seq) < entry["sample"][0]):
            entry["sample"] = ((e.time, seq), e.detail["sample"])
    fingerprints = sorted(
        ({"project": project, "fingerprint": fp, "dead_letters": v["dead_letters"],
          "messages": len(v["messages"]), "queues": ",".join(sorted(v["queues"])),
          "sample": v["sample"][1] if v["sample"] else None}
         for (project, fp), v in prints.items()),
        key=lambda r: (-r["dead_letters"], r["project"], r["fingerprint"]))[:top]

    clients = defaultdict(lambda: {"deliveries": 0, "claims": set(), "deleted": 0,
                                   "released": 0, "rejected": 0, "expired": 0,
                                   "expired_claims": set()})
    for client, claim_id, end in holds:
        c = clients[client]
        c["deliveries"] += 1
        c["claims"].add(claim_id)
        if end in ("deleted", "released", "rejected", "expired"):
            c[end] += 1
        if end == "expired":
            c["expired_claims"].add(claim_id)
    for e in log:
        if e.kind == "expired" and e.message_id is None and e.detail.get("target") == "claim":
            clients[e.client_id or "(none)"]["expired_claims"].add(e.claim_id)
    consumers = sorted(
        ({"client_id": name, "deliveries": c["deliveries"], "claims": len(c["claims"]),
          "deleted": c["deleted"], "released": c["released"], "rejected": c["rejected"],
          "expired": c["expired"], "expired_claims": len(c["expired_claims"])}
         for name, c in clients.items()),
        key=lambda r: (-(r["expired"] + r["released"] + r["rejected"]), -r["expired_claims"],
                       r["client_id"]),
    )[:top]

    per_day = defaultdict(lambda: [0, 0])
    for e in log:
        if e.kind == "deleted":
            per_day[day(e.time)][0] += 1
        elif e.kind == "dead_lettered":
            per_day[day(e.time)][1] += 1
        else:
            per_day.setdefault(day(e.time), [0, 0])
    dead_letter_rate = [{"bucket": d, "bucket_seconds": width, "deleted": n[0],
                         "dead_lettered": n[1], "dead_letter_rate": rate(n[1], n[0])}
                        for d, n in sorted(per_day.items())]

    return {"queue_totals": totals, "queue_trend": daily,
            "claims_distribution": claims_distribution, "latency": latency,
            "failing_fingerprints": fingerprints,
            "poison_signatures": signatures(log, top, backend), "consumers": consumers,
            "dead_letter_rate": dead_letter_rate,
            "rejections": rejections(log, top, backend),
            "dead_letters_by_reason": dead_letters_by_reason(log, backend),
            "redrive_outcomes": redrive_outcomes(log, backend)}


def ended_by(claim: Event, following: Event | None) -> str:
    """How the delivery ``claim`` ended, judged by the message's next step."""
    if following is None:
        return "open"
    if following.kind == "released":
        return "released"
    if following.kind == "rejected":
        return "rejected"
    if (following.kind == "dead_lettered" and following.detail.get("reason") == "rejected"
            and following.claim_id == claim.claim_id):
        return "rejected"  # a terminal reject by this claim's holder
    if following.kind == "deleted" and not following.detail.get("pop"):
        return "deleted" if following.claim_id == claim.claim_id else "deleted_unclaimed"
    return "expired"
