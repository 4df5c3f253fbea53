"""A plain-Python recount of the poison workflow's tables, written apart from Spark.

Each redrive is followed by walking the message's own events one by one
(no windows, no joins), so a shared mistake with zq.analytics.redrives is
unlikely.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime

from zq.storage.records import Event

STEPS = ("posted", "claimed", "released", "deleted", "dead_lettered", "expired", "rejected",
         "redriven")


def iso(t: float) -> str:
    return datetime.fromtimestamp(int(t // 1), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def rejections(log: list[Event], top: int = 20, backend: str = "a") -> list[dict]:
    groups: dict = defaultdict(lambda: {"rejections": 0, "retries": 0, "terminal": 0,
                                        "messages": set(), "times": []})
    for e in log:
        if e.message_id is None:
            continue
        terminal = e.kind == "dead_lettered" and e.detail.get("reason") == "rejected"
        if e.kind != "rejected" and not terminal:
            continue
        g = groups[(e.project, e.queue, e.detail.get("description") or "(none)")]
        g["rejections"] += 1
        g["terminal" if terminal else "retries"] += 1
        g["messages"].add((backend, e.project, e.message_id))
        g["times"].append(e.time)
    per_queue = defaultdict(list)
    for (project, queue, description), g in groups.items():
        per_queue[(project, queue)].append({
            "project": project, "queue": queue, "description": description,
            "rejections": g["rejections"], "retries": g["retries"], "terminal": g["terminal"],
            "messages": len(g["messages"]), "first": iso(min(g["times"])),
            "last": iso(max(g["times"]))})
    rows = []
    for key in sorted(per_queue):
        ranked = sorted(per_queue[key],
                        key=lambda r: (-r["rejections"], -r["messages"], r["description"]))
        for rank, row in enumerate(ranked[:top], start=1):
            rows.append({"project": row["project"], "queue": row["queue"], "rank": rank,
                         **{k: v for k, v in row.items() if k not in ("project", "queue")}})
    return rows


def dead_letters_by_reason(log: list[Event], backend: str = "a") -> list[dict]:
    moves: dict = defaultdict(list)
    for e in log:
        if e.kind == "dead_lettered" and e.message_id is not None:
            moves[(e.project, e.queue, e.detail.get("to"), e.detail.get("reason") or "(none)")
                  ].append(e.message_id)
    per_queue: dict = defaultdict(int)
    for (project, queue, _, _), ids in moves.items():
        per_queue[(project, queue)] += len(ids)
    rows = [{"project": p, "queue": q, "dead_letter_queue": dlq, "reason": reason,
             "dead_letters": len(ids), "messages": len(set(ids)),
             "share": len(ids) / per_queue[(p, q)]}
            for (p, q, dlq, reason), ids in moves.items()]
    return sorted(rows, key=lambda r: (r["project"], r["queue"], -r["dead_letters"],
                                       r["dead_letter_queue"], r["reason"]))


def redrive_outcome(after: list[Event]) -> str:
    """What one redrive led to, from the message's events after it (up to its next redrive)."""
    failures = 0
    for index, e in enumerate(after):
        if e.kind == "deleted":
            return "succeeded"
        if e.kind == "dead_lettered":
            return "died_again"
        if e.kind == "expired":
            return "expired"
        if e.kind in ("released", "rejected"):
            failures += 1
        if e.kind == "claimed" and index + 1 < len(after):
            following = after[index + 1]
            # Claimed again, or ended by something this claim did not do: it ran out.
            lapsed = following.kind == "claimed" or (
                following.kind == "deleted" and bool(following.detail.get("pop")))
            failures += lapsed
    return "failed_again" if failures else "pending"


def redrive_outcomes(log: list[Event], backend: str = "a") -> list[dict]:
    histories: dict = defaultdict(list)
    for seq, e in enumerate(log):
        if e.message_id is not None and e.kind in STEPS:
            histories[(backend, e.project, e.message_id)].append((e.time, seq, e))
    groups: dict = defaultdict(lambda: {"redriven": 0, "messages": set(), "automatic": 0,
                                        "succeeded": 0, "failed_again": 0, "died_again": 0,
                                        "expired": 0, "pending": 0})
    for key, steps in histories.items():
        steps.sort(key=lambda s: (s[0], s[1]))
        events = [s[2] for s in steps]
        for index, e in enumerate(events):
            if e.kind != "redriven":
                continue
            after = []
            for later in events[index + 1:]:
                if later.kind == "redriven":
                    break
                after.append(later)
            g = groups[(e.project, e.detail["to"], e.queue)]
            g["redriven"] += 1
            g["automatic"] += e.detail.get("reason") == "auto_redriven"
            g["messages"].add(key)
            g[redrive_outcome(after)] += 1
    rows = []
    for (project, queue, dlq), g in groups.items():
        ended = g["succeeded"] + g["died_again"] + g["expired"]
        rows.append({"project": project, "queue": queue, "dead_letter_queue": dlq,
                     "redriven": g["redriven"], "messages": len(g["messages"]),
                     "succeeded": g["succeeded"], "failed_again": g["failed_again"],
                     "died_again": g["died_again"], "expired": g["expired"],
                     "pending": g["pending"], "automatic": g["automatic"],
                     "success_rate": g["succeeded"] / ended if ended else None})
    return sorted(rows, key=lambda r: (-r["redriven"], r["project"], r["queue"],
                                       r["dead_letter_queue"]))
