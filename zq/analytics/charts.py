"""PNG charts of the statistics, drawn with matplotlib (headless)."""

from __future__ import annotations

import io
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

# The object-oriented Figure API draws with Agg without touching pyplot's
# global state, so no GUI backend is ever loaded.
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullLocator, PercentFormatter

from zq.analytics.definitions import MIN_FINISHED
from zq.analytics.number_formats import plural
from zq.analytics.results import Result

TOP_QUEUES = 6


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.tight_layout()
    figure.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()


def seconds_label(value: float) -> str:
    """A duration as people read it: 850 ms, 12.3 s, 4.1 min, 2.0 h, 3.5 d."""
    for limit, unit, scale in ((1, "ms", 1e-3), (60, "s", 1), (3600, "min", 60),
                               (86400, "h", 3600)):
        if abs(value) < limit:
            return f"{value / scale:.0f} {unit}" if unit == "ms" else f"{value / scale:.1f} {unit}"
    return f"{value / 86400:.1f} d"


def count_label(value: float) -> str:
    """A count with thousands separators; 1.2k / 3.4M when it would not fit."""
    if abs(value) >= 1e6:
        return f"{value / 1e6:.1f}M"
    if abs(value) >= 1e4:
        return f"{value / 1e3:.0f}k"
    return f"{value:,.0f}"


def _queue(row: Mapping) -> str:
    return f"{row['project']}/{row['queue']}"


def _grid(count: int, columns: int = 3, width: float = 4.2, height: float = 3.0
          ) -> tuple[Figure, list]:
    columns = max(1, min(columns, count))
    rows = max(1, -(-count // columns))
    figure = Figure(figsize=(width * columns, height * rows + 0.8))
    axes = list(figure.subplots(rows, columns, squeeze=False).flatten())
    for axis in axes[count:]:
        axis.set_visible(False)
    return figure, axes[:count]


def claims_histogram(distribution: Result) -> bytes:
    """Per queue (small multiples): messages by claims at delete and at dead letter, log scale."""
    return _png_laid_out(claims_figure(distribution))


def claims_figure(distribution: Result) -> Figure:
    """The figure of ``claims_histogram``, laid out."""
    counts: dict[str, dict[str, dict[int, int]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(int)))
    for row in distribution.records():
        counts[_queue(row)][row["outcome"]][int(row["claims"])] += row["messages"]
    total = {q: sum(n for per in c.values() for n in per.values()) for q, c in counts.items()}
    shown = sorted(counts, key=lambda q: (-total[q], q))[:TOP_QUEUES]
    figure, axes = _grid(len(shown) or 1)
    width = 0.4
    for axis, queue in zip(axes, shown, strict=False):
        per = counts[queue]
        claims = sorted({c for outcome in per.values() for c in outcome})
        for offset, (outcome, colour) in enumerate(
                (("deleted", "#4c9f70"), ("dead_lettered", "#d1495b"))):
            values = [per[outcome].get(c, 0) for c in claims]
            bars = axis.bar([c + (offset - 0.5) * width for c in claims], values, width,
                            label=outcome.replace("_", " "), color=colour)
            axis.bar_label(bars, labels=[count_label(v) if v else "" for v in values],
                           fontsize=7, padding=1)
        axis.set_yscale("log")
        # Minor ticks on a log axis are most of the drawing time (8.5 -> 2.8 s
        # for six panels on a loaded 2-core machine) and carry no label.
        axis.yaxis.set_minor_locator(NullLocator())
        axis.set_ylim(0.8, max(max(o.values(), default=1) for o in per.values()) * 3)
        axis.set_xticks(claims)
        axis.set_xlabel("claims per message")
        axis.set_ylabel("messages (log)")
        axis.set_title(f"{queue} ({count_label(total[queue])} "
                       f"{plural(total[queue], 'message')})", fontsize=9)
    handles = [Patch(color="#4c9f70", label="deleted after N claims"),
               Patch(color="#d1495b", label="dead lettered after N claims")]
    figure.legend(handles=handles, loc="lower center", ncol=2, fontsize=9, frameon=False)
    figure.suptitle(f"Claims per message, per queue (the {len(shown)} busiest)")
    figure.tight_layout(rect=(0, 0.05, 1, 1))
    return figure


def _png_laid_out(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()


def _when(label: str) -> datetime:
    return datetime.strptime(label, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


# Value labels on every point up to this many buckets; beyond, only the peak.
_LABELLED_POINTS = 24
# Per-queue rate lines up to this many buckets: beyond, with few messages per
# bucket, they are noise that hides the overall line.
_QUEUE_LINES = 40


def _line(axis: Axes, points: Sequence[tuple[datetime, float]], width: int, *,
          marker: str | None, **style: Any) -> None:
    """A line over bucket middles that joins adjacent buckets only.

    Between two points more than a bucket apart (buckets without events, or
    whose value is not drawn) the line breaks: a straight segment would
    show traffic, or a rate, where none was measured. A point left alone
    by the breaks gets a marker even on a line drawn without, or it would
    not show at all.
    """
    xs: list[datetime] = []
    ys: list[float] = []
    step = timedelta(seconds=width)
    for index, (moment, value) in enumerate(points):
        if index and moment - points[index - 1][0] > step:
            xs.append(points[index - 1][0] + step)
            ys.append(math.nan)
        xs.append(moment)
        ys.append(value)
    line, = axis.plot(xs, ys, marker=marker, **style)
    if marker is None:
        def drawn(i: int) -> bool:
            return 0 <= i < len(ys) and not math.isnan(ys[i])

        alone = [i for i in range(len(ys)) if drawn(i) and not drawn(i - 1) and not drawn(i + 1)]
        axis.plot([xs[i] for i in alone], [ys[i] for i in alone], linestyle="none",
                  marker=".", color=line.get_color())


def trend(overall: Result, per_queue: Result) -> bytes:
    """Per time bucket: messages posted, deleted and dead lettered, and the dead letter rate
    (all queues, and the queues that fail most)."""
    return _png(trend_figure(overall, per_queue))


def trend_figure(overall: Result, per_queue: Result) -> Figure:
    """The figure of ``trend``."""
    from zq.analytics.buckets import describe

    rows = overall.records()
    width = rows[0]["bucket_seconds"] if rows else 86400
    posted: dict[str, int] = defaultdict(int)
    failing: dict[str, int] = defaultdict(int)
    for row in per_queue.records():
        posted[row["bucket"]] += row["posted"]
        failing[_queue(row)] += row["dead_lettered"]
    figure = Figure(figsize=(9, 6.2))
    volume, rate = figure.subplots(2, 1, sharex=True, height_ratios=(1, 1.2))
    starts = [_when(r["bucket"]) for r in rows]
    bar = width / 86400 * 0.85  # matplotlib dates are in days
    deleted = [r["deleted"] for r in rows]
    volume.bar(starts, deleted, bar, align="edge", color="#4c9f70", label="deleted")
    volume.bar(starts, [r["dead_lettered"] for r in rows], bar, bottom=deleted, align="edge",
               color="#d1495b", label="dead lettered")
    middle = [s + timedelta(seconds=width / 2) for s in starts]
    # A bucket with events but no post is a true 0; a bucket without
    # events has no row, and the line breaks over it.
    _line(volume, [(m, posted.get(r["bucket"], 0)) for m, r in zip(middle, rows, strict=True)],
          width, color="#023047", marker="." if len(rows) <= 200 else None, linewidth=1.2,
          label="posted")
    volume.set_ylabel("messages per bucket")
    # Counts: ticks on whole numbers only (at 2.5, a count label read "2").
    volume.yaxis.set_major_locator(MaxNLocator(integer=True))
    volume.yaxis.set_major_formatter(FuncFormatter(lambda v, _: count_label(v)))
    volume.legend(fontsize=8, ncol=3, loc="upper left", frameon=False)
    volume.set_ylim(top=max([*deleted, *posted.values(), 1]) * 1.25 + max(
        (r["dead_lettered"] for r in rows), default=0))
    volume.set_title(f"Messages per {describe(width)} bucket (UTC)", fontsize=10)

    top = [q for q, n in sorted(failing.items(), key=lambda kv: (-kv[1], kv[0])) if n][:TOP_QUEUES]
    shown = [0.05]
    for queue in top if len(rows) <= _QUEUE_LINES else []:
        points = [(_when(r["bucket"]) + timedelta(seconds=width / 2), r["dead_letter_rate"])
                  for r in per_queue.records() if _queue(r) == queue and _rated(r)]
        _line(rate, points, width, marker=".", alpha=0.6, linewidth=1, label=queue)
        shown += [p[1] for p in points]
    known = [(m, r["dead_letter_rate"]) for m, r in zip(middle, rows, strict=True) if _rated(r)]
    _line(rate, known, width, color="black", linewidth=2.2,
          marker="o" if len(known) <= 60 else None, markersize=4, label="all queues")
    few = sum(1 for r in rows if r["dead_letter_rate"] is not None and not _rated(r))
    labelled = known if len(known) <= _LABELLED_POINTS else [max(known, key=lambda k: k[1])]
    for moment, value in labelled:
        rate.annotate(f"{value:.1%}", (moment, value), textcoords="offset points",
                      xytext=(0, 7), ha="center", fontsize=7)
    rate.set_ylabel("dead lettered / (deleted + dead lettered)")
    rate.set_ylim(0, min(1.05, max(shown + [k[1] for k in known]) * 1.2))
    rate.yaxis.set_major_formatter(PercentFormatter(1.0))
    per_queue_note = "" if len(rows) <= _QUEUE_LINES else (
        f"; per queue in queue_trend ({len(rows)} buckets are too many to draw each queue)")
    if few:
        per_queue_note += (f"\n{few} {plural(few, 'bucket')} with fewer than {MIN_FINISHED} "
                           "finished messages not drawn (their rates are in dead_letter_rate)")
    rate.set_title(f"Dead letter rate per {describe(width)} bucket (UTC){per_queue_note}",
                   fontsize=10)
    rate.legend(fontsize=7, ncol=4, loc="upper left", frameon=False)
    locator = AutoDateLocator()
    rate.xaxis.set_major_locator(locator)
    rate.xaxis.set_major_formatter(ConciseDateFormatter(locator))
    return figure


def _rated(row: Mapping) -> bool:
    """Whether a bucket finished enough messages for its dead letter rate to be drawn."""
    return (row["dead_letter_rate"] is not None
            and row["deleted"] + row["dead_lettered"] >= MIN_FINISHED)


_PERCENTILES = (("p50", "#8ecae6"), ("p95", "#219ebc"), ("p99", "#023047"))


def latency_percentiles(latency: Result) -> bytes:
    """Per queue: post-to-delete beside post-to-dead-letter, p50/p95/p99 on a log scale."""
    by_queue: dict[str, dict[str, dict]] = defaultdict(dict)
    for row in latency.records():
        by_queue[_queue(row)][row["metric"]] = row
    shown = sorted(by_queue, key=lambda q: (-sum(r["messages"] for r in by_queue[q].values()),
                                            q))[:TOP_QUEUES]
    figure, axes = _grid(len(shown) or 1, columns=2, width=6.0, height=2.4)
    metrics = ("post_to_delete", "post_to_dead_letter")
    height = 0.27
    # One log scale for every panel, so that panels compare at a glance.
    values = [r[key] for q in shown for r in by_queue[q].values() for key, _ in _PERCENTILES]
    low = max(min((v for v in values if v > 0), default=1.0) / 2, 1e-3)
    high = max(values, default=10.0) * 6
    for axis, queue in zip(axes, shown, strict=False):
        rows = by_queue[queue]
        for offset, (key, colour) in enumerate(_PERCENTILES):
            present = [i for i, m in enumerate(metrics) if m in rows]
            seconds = [max(rows[metrics[i]][key], low) for i in present]
            bars = axis.barh([i + (offset - 1) * height for i in present], seconds, height,
                             color=colour)
            axis.bar_label(bars, labels=[seconds_label(rows[metrics[i]][key]) for i in present],
                           fontsize=7, padding=2)
        axis.set_xscale("log")
        axis.xaxis.set_minor_locator(NullLocator())  # as in claims_histogram: time, no label
        axis.set_xlim(low, high)
        axis.set_yticks(range(len(metrics)), [
            f"{m.replace('_', ' ')}\n({count_label(rows[m]['messages'])} "
            f"{plural(rows[m]['messages'], 'msg')})" if m in rows
            else f"{m.replace('_', ' ')}\n(none)" for m in metrics], fontsize=8)
        axis.invert_yaxis()
        axis.set_xlabel("seconds (log)")
        axis.set_title(queue, fontsize=9)
    handles = [Patch(color=colour, label=key) for key, colour in _PERCENTILES]
    figure.legend(handles=handles, loc="lower center", ncol=3, fontsize=9, frameon=False)
    figure.suptitle("Latency from post to delete and to dead letter, per queue")
    figure.tight_layout(rect=(0, 0.05, 1, 1))
    return _png_laid_out(figure)


# The outflows of a queue, in the order of the balance; they add up to its inflow.
_OUTFLOWS = (("deleted", "#4c9f70"), ("dead_lettered", "#d1495b"), ("redriven", "#f4a259"),
             ("expired", "#8d99ae"), ("purged", "#5c4d7d"), ("present", "#bde0fe"))


def _stacked(rows: Sequence[Mapping], segments: Sequence[tuple[str, str]], *,
             names: Sequence[str], notes: Sequence[str], xlabel: str, title: str,
             room: float) -> Figure:
    """One horizontal bar per row, stacked from ``segments`` (column, colour), laid out.

    Each segment carries its count in its middle when the count fits inside
    it; a segment too short for it stays unlabelled (a label wider than its
    bar would run over its neighbours and, on the first segment, over the
    axis and the row's name): the figures are in the table. ``notes`` go
    after each bar's end; ``room`` is how far the axis reaches past the
    longest bar, for them.
    """
    figure = Figure(figsize=(9, 1.4 + 0.5 * max(len(rows), 1)))
    FigureCanvasAgg(figure)  # a renderer, to measure the labels against their bars
    axis = figure.subplots()
    # Positions, not names, place the bars: two rows may share a name.
    places = list(range(len(rows)))
    left = [0] * len(rows)
    drawn = []
    for key, colour in segments:
        values = [r[key] for r in rows]
        bars = axis.barh(places, values, left=left, color=colour, label=key.replace("_", " "))
        drawn += [(bar, value) for bar, value in zip(bars, values, strict=True) if value]
        left = [a + b for a, b in zip(left, values, strict=True)]
    for index, note in enumerate(notes):
        axis.annotate(note, (left[index], index), xytext=(4, 0), textcoords="offset points",
                      va="center", fontsize=8)
    axis.set_yticks(places, names)
    axis.invert_yaxis()
    axis.set_xlim(right=max([*left, 1]) * room)
    axis.xaxis.set_major_locator(MaxNLocator(integer=True))  # counts: no "0.5 redrives"
    axis.set_xlabel(xlabel)
    axis.set_title(title, fontsize=10)
    axis.legend(fontsize=8, ncol=len(segments), loc="lower center", bbox_to_anchor=(0.5, 1.08),
                frameon=False)
    figure.tight_layout()
    renderer = figure.canvas.get_renderer()
    for bar, value in drawn:
        x, y = bar.get_x() + bar.get_width() / 2, bar.get_y() + bar.get_height() / 2
        label = axis.text(x, y, count_label(value), ha="center", va="center", fontsize=7)
        room_for = bar.get_window_extent(renderer)
        size = label.get_window_extent(renderer)
        if size.width + _LABEL_MARGIN > room_for.width or size.height > room_for.height:
            label.remove()
    return figure


# Pixels a bar's count keeps clear of the bar's ends, at least.
_LABEL_MARGIN = 4


def flow_per_queue(totals: Result) -> bytes:
    """Per queue, where its messages went; the bar's end is what came in."""
    return _png_laid_out(flow_figure(totals))


def flow_figure(totals: Result) -> Figure:
    """The figure of ``flow_per_queue``, laid out."""
    rows = sorted(totals.records(), key=lambda r: -(r["posted"] + r["dead_lettered_in"]
                                                    + r["redriven_in"]))[:12]
    notes = []
    for r in rows:
        inflow = r["posted"] + r["dead_lettered_in"] + r["redriven_in"]
        notes.append(f"in {count_label(inflow)}" + (
            f", unaccounted {r['unaccounted']:,}" if r["unaccounted"] else ""))
    return _stacked(rows, _OUTFLOWS, names=[_queue(r) for r in rows], notes=notes,
                    xlabel="messages", room=1.25,
                    title="Flow per queue: in = posted + dead lettered in + redriven in "
                          "= the outflows below")


_OUTCOMES = (("succeeded", "#4c9f70"), ("failed_again", "#f4a259"),
             ("died_again", "#d1495b"), ("expired", "#8d99ae"), ("pending", "#bde0fe"))


def redrive_outcomes(outcomes: Result) -> bytes:
    """What the redriven messages did next, per queue they were redriven to."""
    return _png_laid_out(redrive_figure(outcomes))


def redrive_figure(outcomes: Result) -> Figure:
    """The figure of ``redrive_outcomes``, laid out."""
    rows = outcomes.records()[:12]
    notes = [f"{r['redriven']:,} redriven" + (
        "" if r["success_rate"] is None else f", {r['success_rate']:.0%} succeeded")
        for r in rows]
    return _stacked(rows, _OUTCOMES, notes=notes, xlabel="redrives", room=1.4,
                    names=[f"{r['project']}: {r['dead_letter_queue']} -> {r['queue']}"
                           for r in rows],
                    title="What redriven messages did next")


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
    if "dead_letter_rate" in results and "queue_trend" in results:
        images["trend"] = trend(results["dead_letter_rate"], results["queue_trend"])
    if "advice_claims" in results and "advice" in results and results["advice_claims"].rows:
        images["retry_advice"] = retry_advice(results["advice_claims"], results["advice"])
    if "latency" in results:
        images["latency_percentiles"] = latency_percentiles(results["latency"])
    if "queue_totals" in results and results["queue_totals"].rows:
        images["flow_per_queue"] = flow_per_queue(results["queue_totals"])
    if "redrive_outcomes" in results and results["redrive_outcomes"].rows:
        images["redrive_outcomes"] = redrive_outcomes(results["redrive_outcomes"])
    return images
