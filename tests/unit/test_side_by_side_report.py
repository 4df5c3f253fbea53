"""The side-by-side benchmark's report (RabbitMQ column, open-loop table) and the
AMQP generator's guards, without running any server."""

from __future__ import annotations

import pytest

from benchmarks import amqp_load
from benchmarks import zaqar_side_by_side as sbs


def run(msgs: float, cpu: float | None, **extra: object) -> dict:
    return {"msgs_per_s": msgs, "req_per_s": msgs / 10, "p50_ms": 5.0, "p99_ms": 20.0,
            "errors": 0, "server_cpu_ms_per_1k_msgs": cpu,
            "generator_cpu_ms_per_1k_msgs": 30.0, **extra}


def target(name: str, results: dict[str, list[dict]]) -> sbs.Target:
    made = sbs.Target(name, "http://127.0.0.1:1", [], {})
    made.results = results
    return made


def test_the_table_compares_zq_on_postgresql_with_rabbitmq() -> None:
    targets = {
        "zq-postgresql": target("zq-postgresql", {"post b10": [run(3000, 400), run(3200, 420)]}),
        "rabbitmq": target("rabbitmq", {"post b10": [run(1500, 250), run(1500, 250)],
                                        "post b1": [run(900, 300)]}),
    }
    report = sbs.table(targets)
    row = next(line for line in report.splitlines()
               if line.startswith("| post b10 | zq-postgresql"))
    cells = [cell.strip() for cell in row.split("|")[1:-1]]
    assert cells[-2:] == ["2.07x", "0.61x"]  # 3100/1500 msgs/s, 250/410 CPU
    assert cells[8] == "30"  # the generator's CPU per 1k messages
    assert "zq PostgreSQL / RabbitMQ msgs/s on post b10: 2.07" in report
    assert "| post b1 | rabbitmq |" in report


def test_open_loop_rows_list_every_run_and_judge_the_50_percent_target() -> None:
    runs50 = [run(1000, 100, p99_ms=p99, rate=50.0) for p99 in (8.0, 9.0, 30.0)]
    runs80 = [run(1600, 100, p99_ms=40.0, rate=80.0)]
    targets = {"zq": target("zq", {"post b10": [run(2000, 100)], "post b10 @50%": runs50,
                                   "post b10 @80%": runs80}),
               "zq-postgresql": target("zq-postgresql", {"post b10 @50%": [
                   run(500, 300, p99_ms=26.0, rate=25.0)]})}
    report = sbs.table(targets)
    assert "| post b10 | zq | 50% | 50.0 | 1000 | 5, 5, 5 | 8, 9, 30 | 9 | 0 " \
           "| p99 < 10 ms: met |" in report
    assert "| post b10 | zq | 80% | 80.0 |" in report
    assert "p99 < 25 ms: not met" in report
    main_rows = report.split("Open loop")[0]
    assert "@" not in main_rows  # open-loop runs only in their own table


def test_open_loop_fractions_default_to_half_and_four_fifths() -> None:
    assert sbs.parse_args([]).open_loop_fractions == [0.5, 0.8]
    assert sbs.parse_args(["--open-loop-fraction", "0.3"]).open_loop_fractions == [0.3]
    assert sbs.parse_args(["--open-loop-fractions", "0.5"]).open_loop_fractions == [0.5]
    with pytest.raises(SystemExit):
        sbs.parse_args(["--open-loop-fractions", "0.5,1.5"])


def test_the_amqp_generator_refuses_other_than_loopback() -> None:
    with pytest.raises(SystemExit):
        amqp_load.parse_args(["--url", "amqp://guest:guest@10.0.0.5:5672/"])
    _settings, workloads, limit = amqp_load.parse_args([])
    assert workloads == ["post", "claim-delete", "cycle", "poison"]
    # RabbitMQ delivers a message x-delivery-limit + 1 times: 3, as zq's _max_claim_count.
    assert limit + 1 == amqp_load.MAX_CLAIM_COUNT


def test_the_report_hides_the_brokers_password() -> None:
    assert sbs.redact("amqp://guest:secret@127.0.0.1:5672/") == "amqp://guest@127.0.0.1:5672/"
    assert sbs.redact("amqp://127.0.0.1:5672/") == "amqp://127.0.0.1:5672/"


def test_the_issue_targets_are_judged_on_the_medians() -> None:
    targets = {
        "zq": target("zq", {"post b10": [run(6000, 100)], "poison b10": [run(1000, 100)]}),
        "zaqar": target("zaqar", {"post b10": [run(1000, 600)]}),
        "zq-postgresql": target("zq-postgresql", {"post b10": [run(2000, 300)],
                                                  "poison b10": [run(500, 900)]}),
        "rabbitmq": target("rabbitmq", {"post b10": [run(1500, 200)],
                                        "poison b10": [run(1000, 300)]}),
    }
    report = sbs.table(targets)
    assert "| zq / Zaqar msgs/s on post b10 >= 5x | 6.00 | met |" in report
    assert "| Zaqar / zq server CPU per message on post b10 >= 5x | 6.00 | met |" in report
    assert "| zq PostgreSQL / zq Redis msgs/s on post b10 >= 0.5 (within 2x) | 0.33 " \
           "| not met |" in report
    assert "| zq PostgreSQL / RabbitMQ msgs/s on post b10 >= 1 | 1.33 | met |" in report
    assert "| zq PostgreSQL / RabbitMQ msgs/s on poison b10 >= 1 | 0.50 | not met |" in report
    assert "claim-delete" not in report.split("Issue 31's targets")[1]  # no runs, no row
