"""report.html: numbers read the same way in every table and column, wide tables scroll, and
the charts draw only what was measured (issue 25, item 21)."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta

import matplotlib.dates as mdates

from zq.analytics import charts
from zq.analytics.report import html_report, render_text
from zq.analytics.results import Result


def _cells(page: str) -> list[str]:
    return re.findall(r"<td class='n'>([^<]*)</td>", page)


def test_every_number_is_thousands_separated_with_the_same_decimals_at_any_size():
    latency = Result("latency", ["queue", "messages", "p50", "p95", "rate"],
                     [("q", 1255, 645.5, 1787.25, 0.04232)])
    page = html_report({"latency": latency}, {}, title="t")
    # 1787.25 once printed as "1787" beside "645.50"; counts as "1255" beside "5,151".
    assert _cells(page) == ["1,255", "645.50", "1,787.25", "0.0423"]


def test_a_wide_table_scrolls_inside_the_page_instead_of_running_off_it():
    wide = Result("consumers", [f"c{i}" for i in range(20)], [tuple(range(20))])
    page = html_report({"consumers": wide}, {}, title="t")
    assert "<div class='wide'><table>" in page and "</table></div>" in page
    assert re.search(r"\.wide\{overflow-x:auto", page)


def _column(page: str, table: str, column: str) -> list[str]:
    """The cells of one column of one table of report.html."""
    block = page[page.index(f"<h2>{table}</h2>"):]
    block = block[:block.index("</table>")]
    index = re.findall(r"<th>([^<]*)</th>", block).index(column)
    return [re.findall(r"<td[^>]*>([^<]*)</td>", row)[index]
            for row in re.findall(r"<tr>(.*?)</tr>", block, re.S)[1:]]


def test_each_column_has_one_number_format():
    # The installed wheel printed 1.00 beside 0.5000 in one column (issue 25, item 21).
    reasons = Result("dead_letters_by_reason", ["queue", "share"],
                     [("a", 1.0), ("b", 0.5), ("b", 0.25)])
    redrives = Result("redrive_outcomes", ["queue", "success_rate"],
                      [("a", 1.0), ("b", 0.0), ("c", None)])
    latency = Result("latency", ["queue", "messages", "p50", "max"],
                     [("a", 1, 0.5, 0.75), ("b", 3000, 2.25, 4000.0)])
    page = html_report({r.name: r for r in (reasons, redrives, latency)}, {}, title="t")
    assert _column(page, "dead_letters_by_reason", "share") == ["1.0000", "0.5000", "0.2500"]
    assert _column(page, "redrive_outcomes", "success_rate") == ["1.0000", "0.0000", ""]
    assert _column(page, "latency", "p50") == ["0.50", "2.25"]
    assert _column(page, "latency", "max") == ["0.75", "4,000.00"]
    assert _column(page, "latency", "messages") == ["1", "3,000"]
    # The text tables follow the same rule (without thousands separators).
    text = render_text([reasons, latency])
    assert re.findall(r"(\d+\.\d+)\s*$", text, re.M) == [
        "1.0000", "0.5000", "0.2500", "0.75", "4000.00"]


def test_one_is_singular_in_titles_and_notes():
    one = Result("claims_distribution", ["project", "queue", "outcome", "claims", "messages"],
                 [("p", "lonely", "deleted", 1, 1),
                  ("p", "busy", "deleted", 1, 2), ("p", "busy", "dead_lettered", 2, 1)])
    titles = [axis.get_title() for axis in charts.claims_figure(one).axes]
    assert "p/lonely (1 message)" in titles and "p/busy (3 messages)" in titles
    assert render_text([Result("t", ["a"], [(1,)])]).startswith("== t (1 row)\n")
    page = html_report({"t": Result("t", ["a"], [(1,), (2,)])}, {}, title="t", max_rows=1)
    assert "1 more row in t.csv" in page


HOUR = 3600
START = datetime(2023, 11, 15, tzinfo=UTC)


def _trend(buckets: list[tuple[int, int, int, int]]) -> tuple[Result, Result]:
    """dead_letter_rate and queue_trend of one queue: (hour, posted, deleted, dead_lettered)."""
    def label(hour: int) -> str:
        return (START + timedelta(hours=hour)).strftime("%Y-%m-%dT%H:%M:%SZ")

    overall = Result("dead_letter_rate", ["bucket", "bucket_seconds", "deleted", "dead_lettered",
                                          "dead_letter_rate"],
                     [(label(h), HOUR, d, x, x / (d + x) if d + x else None)
                      for h, _, d, x in buckets])
    per_queue = Result("queue_trend", ["bucket", "bucket_seconds", "project", "queue", "posted",
                                       "deleted", "dead_lettered", "dead_letter_rate"],
                       [(label(h), HOUR, "p", "q", p, d, x, x / (d + x) if d + x else None)
                        for h, p, d, x in buckets])
    return overall, per_queue


def _segments(line) -> list[tuple[float, float]]:
    """The (start, end) x of every segment a line draws, in days (matplotlib dates)."""
    xs = mdates.date2num(line.get_xdata())
    ys = line.get_ydata()
    return [(xs[i], xs[i + 1]) for i in range(len(xs) - 1)
            if not math.isnan(ys[i]) and not math.isnan(ys[i + 1])]


def test_the_trend_lines_break_over_buckets_without_events():
    # Hours 0-2 busy, 3-6 without a single event, 7 with events but no post (a true 0), 8 busy.
    overall, per_queue = _trend([(0, 40, 30, 10), (1, 50, 40, 10), (2, 45, 35, 10),
                                 (7, 0, 30, 5), (8, 40, 30, 10)])
    figure = charts.trend_figure(overall, per_queue)
    volume, rate = figure.axes[:2]
    posted = next(line for line in volume.get_lines() if line.get_label() == "posted")
    hour = HOUR / 86400
    segments = _segments(posted)
    assert segments and all(end - start <= hour + 1e-9 for start, end in segments)
    assert len(segments) == 3  # 0-1, 1-2, then the empty hours, then 7-8 (7's 0 drawn)
    assert 0.0 in posted.get_ydata()
    for line in rate.get_lines():
        assert all(end - start <= hour + 1e-9 for start, end in _segments(line)), line


def test_a_count_axis_ticks_whole_numbers_only():
    # With 10 messages at most, "2" stood at 2.5 and "8" at 7.5.
    overall, per_queue = _trend([(0, 10, 6, 4), (1, 1, 1, 0), (2, 0, 0, 0)])
    volume = charts.trend_figure(overall, per_queue).axes[0]
    assert all(tick == int(tick) for tick in volume.get_yticks())


def test_a_point_alone_between_gaps_still_shows_without_markers():
    # Over 200 buckets the posted line has no markers; hour 102, alone, must still be seen.
    overall, per_queue = _trend([(h, 10, 10, 0) for h in range(230) if h not in (101, 103)])
    volume = charts.trend_figure(overall, per_queue).axes[0]
    alone = [line for line in volume.get_lines() if line.get_linestyle() == "None"]
    middle = mdates.date2num(START + timedelta(hours=102.5))
    assert any(middle in mdates.date2num(line.get_xdata()) for line in alone)


def test_a_bar_too_short_for_its_count_carries_no_label():
    outcomes = Result("redrive_outcomes", [
        "project", "queue", "dead_letter_queue", "redriven", "messages", "succeeded",
        "failed_again", "died_again", "expired", "pending", "success_rate"], [
        ("p", "big", "big-dlq", 1000, 1000, 600, 100, 200, 50, 50, 0.71),
        ("p", "small", "small-dlq", 12, 12, 5, 1, 3, 1, 2, 0.56),
        ("p", "tiny", "tiny-dlq", 1, 1, 1, 0, 0, 0, 0, 1.0)])
    figure = charts.redrive_figure(outcomes)
    axis = figure.axes[0]
    renderer = figure.canvas.get_renderer()
    bars = [patch.get_window_extent(renderer) for patch in axis.patches]
    frame = axis.get_window_extent(renderer)
    counts = [text for text in axis.texts if text.get_text().replace(",", "").isdigit()]
    assert {t.get_text() for t in counts} == {"600", "100", "200", "50"}  # the big row only
    for text in counts:
        box = text.get_window_extent(renderer)
        assert box.x0 > frame.x0  # never over the axis and the row names
        assert any(bar.x0 <= box.x0 and box.x1 <= bar.x1 for bar in bars), text.get_text()
