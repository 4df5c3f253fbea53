"""docs/alerts.yml: valid, unit-tested with promtool, and about series zq exports."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import falcon.testing
import yaml

from tests.prometheus_tools import require
from zq.api import create_app
from zq.clock import ManualClock
from zq.config import Config

HERE = Path(__file__).parent
RULES = HERE.parents[1] / "docs" / "alerts.yml"
TESTS = HERE / "alerts_test.yml"


def run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=HERE, capture_output=True, text=True, timeout=60)


def test_rules_are_valid() -> None:
    result = run(require("promtool"), "check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr


def test_rules_pass_their_unit_tests() -> None:
    result = run(require("promtool"), "test", "rules", TESTS.name)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def alerts() -> list[dict]:
    return [rule for group in yaml.safe_load(RULES.read_text())["groups"]
            for rule in group["rules"]]


def test_every_alert_has_a_test_that_fires_it() -> None:
    fired = {check["alertname"] for case in yaml.safe_load(TESTS.read_text())["tests"]
             for check in case.get("alert_rule_test", []) if check.get("exp_alerts")}
    assert fired == {rule["alert"] for rule in alerts()}


def test_rules_use_only_series_zq_exports(tmp_path: Path) -> None:
    app = create_app(Config().with_overrides(storage={"uri": f"sqlite:///{tmp_path}/db"}),
                     clock=ManualClock())
    # Every family is described (HELP) in a scrape, even one without samples yet.
    text = falcon.testing.simulate_get(app, "/metrics").text
    exported = set(re.findall(r"^(?:# HELP )?(zq_\w+)", text, re.MULTILINE))
    used = {name for rule in alerts() for name in re.findall(r"zq_\w+", rule["expr"])}
    assert used <= exported, used - exported
