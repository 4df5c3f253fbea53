"""report.html: numbers read the same way in every table, and wide tables scroll."""

from __future__ import annotations

import re

from zq.analytics.report import html_report
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
