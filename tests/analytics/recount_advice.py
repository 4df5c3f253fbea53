"""A plain-Python recount of the advisor and the poison signatures, written apart from Spark.

Each message is replayed under every candidate ``_max_claim_count`` one by
one (no histograms), and body shapes are recomputed from the samples with
an explicit stack, so a shared mistake with zq.analytics is unlikely.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections import defaultdict
from datetime import UTC, datetime

from zq.encryption import is_sealed
from zq.storage.records import Event

ENDS = ("deleted", "dead_lettered", "expired")
KINDS = ("fixed", "linear", "exponential")
DELAYS = (1, 2, 5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300)


def quantile(values: list[float], p: float):
    if not values:
        return None
    s = sorted(values)
    i = p * (len(s) - 1)
    lo = int(i)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (i - lo)


def per_queue(log: list[Event], backend: str = "a"):
    """{(project, queue): {"ends": [(outcome, claims)], "gaps": [...], "recoveries": [...]}}"""
    histories = defaultdict(list)
    for seq, e in enumerate(log):
        if e.message_id is not None and e.kind in ("posted", "claimed", "released", *ENDS):
            histories[(backend, e.project, e.message_id, e.queue)].append((e.time, seq, e))
    queues = defaultdict(lambda: {"ends": [], "gaps": [], "recoveries": []})
    for (_, project, _, queue), steps in histories.items():
        steps.sort(key=lambda s: (s[0], s[1]))
        entry = queues[(project, queue)]
        claim_times = [t for t, _, e in steps if e.kind == "claimed"]
        entry["gaps"] += [b - a for a, b in itertools.pairwise(claim_times)]
        before = []  # claim times in this queue so far
        for t, _, e in steps:
            if e.kind == "claimed":
                before.append(t)
            if e.kind not in ENDS:
                continue
            pop = e.kind == "deleted" and bool(e.detail.get("pop"))
            claims = len(before) + pop
            if e.kind == "deleted":
                entry["ends"].append(("succeeded", claims))
                if claims >= 2:
                    first = before[0] if before else t
                    entry["recoveries"].append((t if pop else before[-1]) - first)
            elif e.kind == "dead_lettered" or claims >= 1:
                entry["ends"].append(("failed", claims))
            break
    return queues


def waits(kind: str, delay: float, retries: int) -> float:
    total, wait = 0.0, delay
    for n in range(1, retries + 1):
        if kind == "linear":
            wait = delay * n
        elif kind == "exponential":
            wait = delay if n == 1 else wait * 2
        total += wait
    return total


def advise(log: list[Event], tolerance: float = 0.01, min_failing: int = 20):
    advice, claims_rows, backoff_rows = [], [], []
    for (project, queue), q in sorted(per_queue(log).items()):
        if not q["ends"] and not q["gaps"]:
            continue  # nothing was ever attempted twice or finished here
        succeeded = sum(1 for o, _ in q["ends"] if o == "succeeded")
        failed = len(q["ends"]) - succeeded
        top = max([c for _, c in q["ends"]] + [0])
        gap_mean = sum(q["gaps"]) / len(q["gaps"]) if q["gaps"] else None
        figures = {}
        for m in range(1, top + 2):
            f = {"false_dead_letters": 0, "deliveries_saved": 0, "unknown": 0, "extra": 0}
            for outcome, c in q["ends"]:
                if outcome == "succeeded":
                    f["false_dead_letters"] += c > m
                elif c > m:
                    f["deliveries_saved"] += c - m
                elif c < m:
                    f["unknown"] += 1
                    f["extra"] += m - c
            figures[m] = f
            claims_rows.append({
                "project": project, "queue": queue, "max_claim_count": m,
                "succeeded": succeeded, "failed": failed,
                "false_dead_letters": f["false_dead_letters"],
                "false_dead_letter_rate": f["false_dead_letters"] / succeeded if succeeded
                else None,
                "deliveries_saved": f["deliveries_saved"], "unknown": f["unknown"],
                "extra_deliveries_if_still_failing": f["extra"],
                "est_dead_letter_delay_s": gap_mean * (f["extra"] - f["deliveries_saved"])
                / failed if gap_mean is not None and failed else None})
        row = {"project": project, "queue": queue, "succeeded": succeeded, "failed": failed,
               "observed_max_claims": top, "max_claim_count": None,
               "false_dead_letters": None, "deliveries_saved": None, "unknown": None,
               "backoff": None, "retry_delay": None, "covered_share": None,
               "gap_p50_s": quantile(q["gaps"], 0.5), "gap_p90_s": quantile(q["gaps"], 0.9),
               "recovered": len(q["recoveries"]),
               "recovery_p50_s": quantile(q["recoveries"], 0.5),
               "recovery_p90_s": quantile(q["recoveries"], 0.9)}
        advice.append(row)
        if failed < min_failing or not succeeded:
            continue
        m = 1
        while figures[m]["false_dead_letters"] > tolerance * succeeded:
            m += 1
        row.update(max_claim_count=m, false_dead_letters=figures[m]["false_dead_letters"],
                   deliveries_saved=figures[m]["deliveries_saved"],
                   unknown=figures[m]["unknown"])
        if not q["recoveries"]:
            continue
        best = None
        for kind in KINDS:
            for delay in DELAYS:
                wait = waits(kind, delay, m - 1)
                covered = sum(r <= wait for r in q["recoveries"])
                share = covered / len(q["recoveries"])
                backoff_rows.append({
                    "project": project, "queue": queue, "max_claim_count": m,
                    "backoff": kind, "retry_delay": delay,
                    "backoff_before_last_attempt_s": wait,
                    "recovered": len(q["recoveries"]), "covered": covered,
                    "covered_share": share})
                if share >= 1 - tolerance and (best is None or wait < best[0]):
                    best = (wait, kind, delay, share)
        if best:
            row.update(backoff=best[1], retry_delay=best[2], covered_share=best[3])
    return {"advice": advice, "advice_claims": claims_rows, "advice_backoff": backoff_rows}


def shape(text: str | None):
    """Key paths and leaf types of a JSON text, by an explicit stack."""
    if not text or is_sealed(text):
        return None
    try:
        body = json.loads(text)
    except ValueError:
        return None
    names = {bool: "bool", int: "int", float: "float", str: "str", type(None): "null"}
    found, stack = set(), [("", body)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict) and value:
            stack += [(path + "." + k if path else k, v) for k, v in value.items()]
        elif isinstance(value, list) and value:
            stack += [((path or "$") + "[]", v) for v in value]
        else:
            kind = ("obj" if isinstance(value, dict) else "list" if isinstance(value, list)
                    else names[type(value)])
            found.add((path or "$", kind))
    return "{" + ", ".join(f"{p}:{k}" for p, k in sorted(found)) + "}"  # by path, then type


def iso(t: float) -> str:
    return datetime.fromtimestamp(int(t), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def signature_id(project: str, by: str, signature: str) -> str:
    return hashlib.sha256(f"{project}\n{by}:{signature}".encode()).hexdigest()[:12]


def failing(log: list[Event], backend: str = "a"):
    """{(project, by, signature): {message: [(time, seq, queue)]}}"""
    groups = defaultdict(lambda: defaultdict(list))
    for seq, e in enumerate(log):
        if e.kind not in ("dead_lettered", "rejected") or e.message_id is None:
            continue
        key = (backend, e.project, e.message_id)
        found = shape(e.detail.get("sample"))
        if found is not None:
            groups[(e.project, "shape", found)][key].append((e.time, seq, e.queue))
        if e.detail.get("description") is not None:
            groups[(e.project, "description", e.detail["description"])][key].append(
                (e.time, seq, e.queue))
    return groups


def signatures(log: list[Event], top: int = 20, backend: str = "a"):
    rows = []
    for (project, by, sig), messages in failing(log, backend).items():
        seen = [(min(v)[:2], k[2]) for k, v in messages.items()]
        rows.append({
            "signature_id": signature_id(project, by, sig), "project": project,
            "by": by, "signature": sig, "messages": len(messages),
            "events": sum(len(v) for v in messages.values()),
            "first": iso(min(t for v in messages.values() for t, _, _ in v)),
            "last": iso(max(t for v in messages.values() for t, _, _ in v)),
            "queues": ",".join(sorted({q for v in messages.values() for _, _, q in v})),
            "sample_ids": ",".join(m for _, m in sorted(seen)[:5])})
    rows.sort(key=lambda r: (-r["messages"], -r["events"], r["project"], r["by"],
                             r["signature"]))
    return rows[:top]


def signature_messages(log: list[Event], backend: str = "a") -> dict[str, set[str]]:
    """{signature_id: the ids of every message that failed with it}"""
    return {signature_id(*signature): {key[2] for key in messages}
            for signature, messages in failing(log, backend).items()}
