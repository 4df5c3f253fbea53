"""PNG charts of the statistics, drawn with matplotlib (headless)."""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Mapping

# The object-oriented Figure API draws with Agg without touching pyplot's
# global state, so no GUI backend is ever loaded.
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import PercentFormatter

from zq.analytics.results import Result

TOP_QUEUES = 6


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.tight_layout()
    figure.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()


def claims_histogram(distribution: Result) -> bytes:
    """Messages by number of claims, at delete and at dead letter (all queues)."""
    counts: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for row in distribution.records():
        counts[row["outcome"]][int(row["claims"])] += row["messages"]
    claims = sorted({c for per in counts.values() for c in per})
    figure = Figure(figsize=(8, 4))
    axis = figure.subplots()
    width = 0.4
    for offset, (outcome, colour) in enumerate(
            (("deleted", "#4c9f70"), ("dead_lettered", "#d1495b"))):
        axis.bar([c + (offset - 0.5) * width for c in claims],
                 [counts[outcome].get(c, 0) for c in claims], width, label=outcome, color=colour)
    axis.set_xticks(claims)
    axis.set_xlabel("claims per message")
    axis.set_ylabel("messages")
    axis.set_title("Claims per message at delete and at dead letter")
    axis.legend()
    return _png(figure)


def dead_letter_rate(overall: Result, daily: Result) -> bytes:
    """The dead letter rate per day: all queues, and the queues that fail most."""
    figure = Figure(figsize=(8, 4))
    axis = figure.subplots()
    failing: dict[str, int] = defaultdict(int)
    for row in daily.records():
        failing[f"{row['project']}/{row['queue']}"] += row["dead_lettered"]
    top = [q for q, n in sorted(failing.items(), key=lambda kv: -kv[1]) if n][:TOP_QUEUES]
    for queue in top:
        points = [(r["day"], r["dead_letter_rate"]) for r in daily.records()
                  if f"{r['project']}/{r['queue']}" == queue and r["dead_letter_rate"] is not None]
        axis.plot([p[0] for p in points], [p[1] for p in points], marker=".", alpha=0.7,
                  label=queue)
    days = [r["day"] for r in overall.records() if r["dead_letter_rate"] is not None]
    rates = [r["dead_letter_rate"] for r in overall.records() if r["dead_letter_rate"] is not None]
    axis.plot(days, rates, color="black", linewidth=2.5, marker="o", label="all queues")
    axis.set_ylabel("dead lettered / (deleted + dead lettered)")
    axis.set_title("Dead letter rate per day")
    axis.yaxis.set_major_formatter(PercentFormatter(1.0))
    axis.legend(fontsize=8)
    figure.autofmt_xdate()
    return _png(figure)


def latency_percentiles(latency: Result, metric: str = "post_to_delete") -> bytes:
    """p50/p95/p99 of post-to-delete seconds for the busiest queues."""
    rows = sorted((r for r in latency.records() if r["metric"] == metric),
                  key=lambda r: -r["messages"])[:15]
    labels = [f"{r['project']}/{r['queue']}" for r in rows]
    figure = Figure(figsize=(8, 1.2 + 0.45 * max(len(rows), 1)))
    axis = figure.subplots()
    height = 0.27
    for offset, (key, colour) in enumerate((("p50", "#8ecae6"), ("p95", "#219ebc"),
                                             ("p99", "#023047"))):
        axis.barh([i + (offset - 1) * height for i in range(len(rows))],
                  [r[key] for r in rows], height, label=key, color=colour)
    axis.set_yticks(range(len(rows)), labels)
    axis.invert_yaxis()
    axis.set_xlabel("seconds from post to delete")
    axis.set_title("Post-to-delete latency per queue")
    axis.legend()
    return _png(figure)


def retry_advice(claims: Result, advice: Result) -> bytes:
    """Per queue: what each candidate _max_claim_count would have done, and the pick."""
    picked = {(r["project"], r["queue"]): r for r in advice.records()}
    by_queue: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in claims.records():
        by_queue[(row["project"], row["queue"])].append(row)
    # The queues with the most failing messages, where the setting matters most.
    shown = sorted(by_queue, key=lambda q: (-by_queue[q][0]["failed"], q))[:TOP_QUEUES]
    columns = 2 if len(shown) > 1 else 1
    rows = max(1, -(-len(shown) // columns))
    figure = Figure(figsize=(5.5 * columns, 3.4 * rows))
    axes = figure.subplots(rows, columns, squeeze=False).flatten()
    series = (("false_dead_letters", "false dead letters (messages)", "#d1495b", None),
              ("deliveries_saved", "poison deliveries saved", "#4c9f70", None),
              ("unknown", "unknown: failed before attempt M (messages)", "#bbbbbb", "//"))
    width = 0.27
    for axis, queue in zip(axes, shown, strict=False):
        candidates = by_queue[queue]
        xs = [r["max_claim_count"] for r in candidates]
        for offset, (key, label, colour, hatch) in enumerate(series):
            axis.bar([x + (offset - 1) * width for x in xs], [r[key] for r in candidates],
                     width, label=label, color=colour, hatch=hatch, edgecolor="white")
        pick = picked.get(queue, {}).get("max_claim_count")
        if pick is not None:
            axis.axvline(pick, color="black", linestyle="--", linewidth=1.2)
        verdict = f"recommend {pick}" if pick is not None else "not enough data"
        axis.set_title(f"{queue[0]}/{queue[1]} ({verdict})", fontsize=10)
        axis.set_xticks(xs)
        axis.set_xlabel("_max_claim_count")
        axis.set_ylabel("messages / deliveries")
    for axis in axes[len(shown):]:
        axis.set_visible(False)
    handles = [Patch(facecolor=colour, hatch=hatch, edgecolor="white", label=label)
               for _, label, colour, hatch in series]
    handles.append(Line2D([], [], color="black", linestyle="--", label="recommended"))
    figure.legend(handles=handles, loc="lower center", ncol=4, fontsize=9, frameon=False)
    figure.suptitle("What each _max_claim_count would have done (dashed: recommendation)")
    figure.tight_layout(rect=(0, 0.07, 1, 1))
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()


def draw_all(results: Mapping[str, Result]) -> dict[str, bytes]:
    """Every chart whose tables are present, by file name (without .png)."""
    images = {}
    if "claims_distribution" in results:
        images["claims_per_message"] = claims_histogram(results["claims_distribution"])
    if "dead_letter_rate" in results and "queue_daily" in results:
        images["dead_letter_rate"] = dead_letter_rate(results["dead_letter_rate"],
                                                      results["queue_daily"])
    if "advice_claims" in results and "advice" in results and results["advice_claims"].rows:
        images["retry_advice"] = retry_advice(results["advice_claims"], results["advice"])
    if "latency" in results:
        images["latency_percentiles"] = latency_percentiles(results["latency"])
    return images
