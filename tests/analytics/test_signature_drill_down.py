"""Drill-down from a poison signature to every one of its message ids (issue 19, item 3).

Checked against the recount's exact id sets, with the plain engine (fast);
test_plain_engine.py checks Spark's drill-down equal to it.
"""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from tests.analytics.conftest import zq_parser
from tests.analytics.recount_advice import signature_messages, signatures
from zq.analytics import job


def stats(*argv: str) -> tuple[int, str, list[str]]:
    args = zq_parser().parse_args(["stats", *argv])
    out, said = io.StringIO(), []
    code = job.run(args, out=out, progress=said.append)
    return code, out.getvalue(), said


def ids_by_signature(rows: list[dict]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for row in rows:
        found.setdefault(row["signature_id"], set()).add(row["message_id"])
    return found


def test_every_message_of_every_signature(dataset):
    root, events = dataset
    code, out, _ = stats("signatures", "--events", root, "--format", "json",
                         "--engine", "python")
    assert code == 0
    rows = json.loads(out)["signature_messages"]
    expected = signature_messages(events)
    assert ids_by_signature(rows) == expected
    assert len(rows) == sum(len(ids) for ids in expected.values())  # one row per message
    # Beyond the five sample ids the signatures table carries.
    assert max(len(ids) for ids in expected.values()) > 5


def test_one_signature_by_its_id(dataset):
    root, events = dataset
    top = signatures(events, top=3)
    wanted = top[0]["signature_id"]
    code, out, said = stats("signatures", "--events", root, "--signature", wanted,
                            "--signature", top[2]["signature_id"], "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    expected = signature_messages(events)
    assert ids_by_signature(rows) == {s["signature_id"]: expected[s["signature_id"]]
                                      for s in (top[0], top[2])}
    assert len([r for r in rows if r["signature_id"] == wanted]) == top[0]["messages"]
    # Earliest failure first within a signature, and the table's sample ids lead.
    mine = [r for r in rows if r["signature_id"] == wanted]
    assert [r["first"] for r in mine] == sorted(r["first"] for r in mine)
    assert [r["message_id"] for r in mine[:5]] == top[0]["sample_ids"].split(",")
    assert said[-1] == f"{len(rows):,} messages"


def test_an_unknown_signature_is_a_one_line_error(dataset, capsys):
    root, _ = dataset
    code, out, _ = stats("signatures", "--events", root, "--signature", "0123456789ab")
    assert code == 1 and out == ""
    assert capsys.readouterr().err.splitlines() == [
        "zq: error: no failing message has signature 0123456789ab in the selected events "
        "(the signature_id column of poison_signatures names them)"]


@pytest.mark.parametrize("argv", [["signatures", "--signature", "xyz"],
                                  ["signatures", "--signature", "0123456789abc"]])
def test_a_malformed_signature_id_is_a_usage_error(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        zq_parser().parse_args(["stats", "--events", "d", *argv])
    assert exit_.value.code == 2
    assert "is not a signature id (12 hex digits" in capsys.readouterr().err


def test_signature_without_the_action_is_refused(dataset, capsys):
    root, _ = dataset
    code, _, _ = stats("--events", root, "--signature", "0123456789ab")
    assert code == 2
    assert capsys.readouterr().err == (
        "zq: error: --signature only applies to 'zq stats signatures'\n")


def test_the_report_links_each_signature_to_all_its_ids(dataset, tmp_path):
    root, events = dataset
    code, _, _ = stats("--events", root, "--out", str(tmp_path), "--top", "4",
                       "--engine", "python", "--format", "csv")
    assert code == 0
    expected = signature_messages(events)
    shown = [s["signature_id"] for s in signatures(events, top=4)]
    page = (tmp_path / "report.html").read_text()
    assert re.findall(r"<a href='signatures/([0-9a-f]{12})\.csv'", page) == shown
    assert f"zq stats signatures --events {root} --signature {shown[0]}" in page
    for sid in shown:
        with open(tmp_path / "signatures" / f"{sid}.csv") as listing:
            assert {r["message_id"] for r in csv.DictReader(listing)} == expected[sid]
    with open(tmp_path / "signature_messages.csv") as whole:
        assert ids_by_signature(list(csv.DictReader(whole))) == {
            sid: expected[sid] for sid in shown}


def test_no_match_is_still_json_of_the_drill_down(dataset):
    root, _ = dataset
    code, out, _ = stats("signatures", "--events", root, "--queue", "nosuch", "--format", "json")
    assert code == 0
    assert json.loads(out) == {"signature_messages": []}
