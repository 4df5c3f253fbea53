"""Showing the computed tables: text, JSON, CSV, and the ``--out`` directory.

Tables arrive here already small (aggregates); collecting them to the driver
is the point of the job. ``--out`` writes each table as CSV and Parquet, the
charts as PNG, and ``report.html``, a single file with the charts embedded.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from zq.analytics.definitions import DEFINITIONS, MIN_FINISHED
from zq.analytics.number_formats import column_format, plural
from zq.analytics.results import Result

FORMATS = ("table", "json", "csv")
# The tables zq stats prints, in order (computed by zq.analytics.tables).
TABLE_NAMES = (
    "queue_totals", "queue_trend", "claims_distribution", "latency",
    "failing_fingerprints", "poison_signatures", "consumers", "dead_letter_rate",
    "rejections", "dead_letters_by_reason", "redrive_outcomes",
)


def _column_formats(result: Result, rows: Sequence[tuple], *, separators: bool = False
                    ) -> list[Callable[[Any], str]]:
    return [column_format([row[i] for row in rows], separators=separators)
            for i in range(len(result.columns))]


def render_text(results: Sequence[Result], *, max_width: int = 48) -> str:
    """Aligned plain-text tables, one after the other."""
    blocks = []
    for result in results:
        formats = _column_formats(result, result.rows)
        cells = [[show(v)[:max_width] for show, v in zip(formats, row, strict=True)]
                 for row in result.rows]
        widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(result.columns)]
        numeric = [all(isinstance(r[i], int | float) or r[i] is None for r in result.rows)
                   for i in range(len(result.columns))]

        def line(values: Sequence[str], numeric: Sequence[bool] = numeric,
                 widths: Sequence[int] = widths) -> str:
            return "  ".join(v.rjust(w) if n else v.ljust(w)
                             for v, w, n in zip(values, widths, numeric, strict=True)).rstrip()

        count = len(result.rows)
        lines = [f"== {result.name} ({count} {plural(count, 'row')})", line(result.columns),
                 line(["-" * w for w in widths])]
        lines += [line(r) for r in cells] or ["(no rows)"]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def render_json(results: Sequence[Result]) -> str:
    """``{table: [row objects]}``; NaN becomes null."""
    def clean(value: Any) -> Any:
        return None if isinstance(value, float) and math.isnan(value) else value

    data = {r.name: [{k: clean(v) for k, v in rec.items()} for rec in r.records()]
            for r in results}
    return json.dumps(data, indent=2, default=str) + "\n"


def render_csv(results: Sequence[Result]) -> str:
    """One CSV block per table, each preceded by a ``# name`` line."""
    out = io.StringIO()
    for index, result in enumerate(results):
        if index:
            out.write("\n")
        if len(results) > 1:
            out.write(f"# {result.name}\n")
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(result.columns)
        writer.writerows(["" if v is None else v for v in row] for row in result.rows)
    return out.getvalue()


def render(results: Sequence[Result], fmt: str) -> str:
    """The results in one of FORMATS."""
    if fmt == "json":
        return render_json(results)
    if fmt == "csv":
        return render_csv(results)
    return render_text(results)


def arrow_table(result: Result) -> pa.Table:
    columns = {name: [row[i] for row in result.rows] for i, name in enumerate(result.columns)}
    return pa.table(columns) if result.rows else pa.table(
        {name: pa.array([], pa.string()) for name in result.columns})


def write_table(result: Result, directory: str | Path) -> list[Path]:
    """``NAME.csv`` and ``NAME.parquet`` of one table in ``directory``; returns the paths."""
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    table = arrow_table(result)
    pacsv.write_csv(table, root / f"{result.name}.csv")
    pq.write_table(table, root / f"{result.name}.parquet")
    return [root / f"{result.name}.csv", root / f"{result.name}.parquet"]


# Where report.html links each signature's message ids, one CSV per signature.
SIGNATURES_DIR = "signatures"


def write_drill_down(messages: Result, directory: str | Path) -> list[Path]:
    """``signature_messages`` whole, and ``signatures/<signature_id>.csv`` per signature."""
    root = Path(directory)
    written = write_table(messages, root)
    per_signature: dict[str, list[tuple]] = {}
    for row in messages.rows:
        per_signature.setdefault(row[0], []).append(row)
    (root / SIGNATURES_DIR).mkdir(exist_ok=True)
    for sid, rows in per_signature.items():
        path = root / SIGNATURES_DIR / f"{sid}.csv"
        pacsv.write_csv(arrow_table(Result(messages.name, messages.columns, rows)), path)
        written.append(path)
    return written


def write_out(results: Mapping[str, Result], directory: str | Path, *,
              title: str = "zq claim statistics", subtitle: str = "",
              drill_down: Result | None = None, events: str = "DIR") -> list[Path]:
    """Write CSV + Parquet per table, PNG charts and report.html; returns the paths.

    ``drill_down`` (``signature_messages``) is written whole and per signature,
    and report.html links each poison signature to its list; ``events`` is the
    dataset, for the drill-down command the page shows.
    """
    from zq.analytics import charts  # matplotlib only when a report is asked for

    root = Path(directory)
    written = [path for result in results.values() for path in write_table(result, root)]
    if drill_down is not None:
        written += write_drill_down(drill_down, root)
    images = charts.draw_all(results)
    for name, png in images.items():
        (root / f"{name}.png").write_bytes(png)
        written.append(root / f"{name}.png")
    page = root / "report.html"
    page.write_text(html_report(results, images, title=title, subtitle=subtitle,
                                drill_down=drill_down, events=events))
    written.append(page)
    return written


_CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 8px;white-space:nowrap}th{background:#f0f0f0}
.wide{overflow-x:auto;max-width:100%}
td.n{text-align:right;font-variant-numeric:tabular-nums}
img{max-width:100%;border:1px solid #ddd;margin:.5em 0}
.note{color:#666;font-size:13px}
"""


def html_report(results: Mapping[str, Result], images: Mapping[str, bytes], *,
                title: str, subtitle: str = "", max_rows: int = 200,
                drill_down: Result | None = None, events: str = "DIR") -> str:
    """One self-contained HTML page: charts (base64 PNG) then every table.

    With ``drill_down``, each poison signature's id links to the CSV of its
    messages (written beside the page by write_out).
    """
    esc = html.escape
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)}</title>",
             f"<style>{_CSS}</style></head><body><h1>{esc(title)}</h1>"]
    if subtitle:
        parts.append(f"<p class='note'>{esc(subtitle)}</p>")
    parts += headline(results)
    for name, png in images.items():
        data = base64.b64encode(png).decode()
        parts.append(f"<h2>{esc(name.replace('_', ' '))}</h2>"
                     f"<img alt='{esc(name)}' src='data:image/png;base64,{data}'>")
    for result in results.values():
        parts.append(f"<h2>{esc(result.name)}</h2><div class='wide'><table><tr>")
        parts += [f"<th>{esc(c)}</th>" for c in result.columns]
        parts.append("</tr>")
        linked = drill_down is not None and result.name == "poison_signatures"
        shown = result.rows[:max_rows]
        formats = _column_formats(result, shown, separators=True)
        for row in shown:
            cells = [f"<td class='n'>{esc(show(v))}</td>" if isinstance(v, int | float)
                     else f"<td>{esc(show(v))}</td>" for show, v in zip(formats, row, strict=True)]
            if linked:
                sid = esc(str(row[0]))
                cells[0] = (f"<td><a href='{SIGNATURES_DIR}/{sid}.csv' "
                            f"title='every message id of this signature'>{sid}</a></td>")
            parts.append("<tr>" + "".join(cells) + "</tr>")
        parts.append("</table></div>")
        if linked and result.rows:
            parts.append(
                "<p class='note'>Each signature_id links to the CSV of every message of that "
                f"signature ({SIGNATURES_DIR}/&lt;signature_id&gt;.csv; all of them in "
                "signature_messages.csv). From the command line: <code>zq stats signatures "
                f"--events {esc(events)} --signature {esc(str(result.rows[0][0]))} "
                "--format csv</code></p>")
        meanings = DEFINITIONS.get(result.name)
        if meanings:
            parts.append("<details><summary class='note'>what the columns mean</summary><dl>"
                         + "".join(f"<dt>{esc(c)}</dt><dd>{esc(meanings.get(c, ''))}</dd>"
                                   for c in result.columns) + "</dl></details>")
        if len(result.rows) > max_rows:
            more = len(result.rows) - max_rows
            parts.append(f"<p class='note'>{more:,} more {plural(more, 'row')} in "
                         f"{esc(result.name)}.csv</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


WORST_QUEUES = 3


def headline(results: Mapping[str, Result]) -> list[str]:
    """The summary first: totals, the overall dead letter rate, the worst queues (HTML)."""
    if "queue_totals" not in results:
        return []
    esc = html.escape
    totals = results["queue_totals"].records()
    def total(column: str) -> int:
        return sum(r[column] for r in totals)
    trend = results["dead_letter_rate"].records() if "dead_letter_rate" in results else []
    span = "no events"
    if trend:
        from zq.analytics.buckets import describe, shifted

        width = trend[0]["bucket_seconds"]
        span = (f"{trend[0]['bucket']} to {shifted(trend[-1]['bucket'], width)} (UTC, whole "
                f"trend buckets of {describe(width)})")
    finished = total("deleted") + total("dead_lettered")
    rate = f"{total('dead_lettered') / finished:.1%}" if finished else "n/a"
    worst = sorted((r for r in totals if r["deleted"] + r["dead_lettered"] >= MIN_FINISHED
                    and r["dead_lettered"]),
                   key=lambda r: (-r["dead_letter_rate"], -r["dead_lettered"]))[:WORST_QUEUES]
    items = [f"<li>time range: {esc(span)}; generated {esc(_now())}</li>",
             f"<li>{total('posted'):,} posted, {total('deleted'):,} deleted, "
             f"{total('dead_lettered'):,} dead lettered, {total('expired'):,} expired, "
             f"{total('present'):,} still in queues; dead letter rate {rate}</li>"]
    if worst:
        items.append("<li>worst queues by dead letter rate (at least "
                     f"{MIN_FINISHED} finished messages): " + "; ".join(
                         f"{esc(r['project'])}/{esc(r['queue'])} {r['dead_letter_rate']:.1%} "
                         f"({r['dead_lettered']:,} of {r['deleted'] + r['dead_lettered']:,})"
                         for r in worst) + "</li>")
    return ["<h2>Summary</h2><ul>", *items, "</ul>"]


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
