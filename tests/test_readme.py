"""README.md stays true: the configuration table and the commands it promises."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from tools.config_reference import DESCRIPTIONS, reference_table
from zq.config import Config

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
TEST_COMMAND = "pip install '.[test,spark]' && python -m pytest"


def test_configuration_table_is_generated_from_zq_config() -> None:
    match = re.search(
        r"<!-- config-reference:start -->\n(.*?)<!-- config-reference:end -->", README, re.S
    )
    assert match, "README.md lost its config-reference markers"
    assert match.group(1) == reference_table(), "run: python tools/config_reference.py"


def test_every_setting_is_described_and_no_description_is_stale() -> None:
    config = Config()
    fields = {
        f"{section.name}.{item.name}"
        for section in dataclasses.fields(config)
        for item in dataclasses.fields(getattr(config, section.name))
    }
    assert set(DESCRIPTIONS) == fields


def test_quick_start_is_two_commands_and_ci_runs_the_test_command() -> None:
    assert "```sh\npip install . && zq serve\n```" in README
    assert f"```sh\n{TEST_COMMAND}\n```" in README
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python -m pytest" in ci or '-m pytest' in ci
    extras = TEST_COMMAND.split(" && ")[0].rsplit(" ", 1)[1]  # '.[test,spark]'
    assert f"pip install --quiet {extras}" in ci, "CI must install what the README says"


def test_ci_tests_the_installed_artifact_and_the_serve_command() -> None:
    # tests/installed runs the README's `pip install . && zq serve` and every
    # command against the wheel; CI builds it and points the tests at it
    # before its pytest run.
    from tests.installed.test_readme_quick_start import quick_start_serve_command

    assert quick_start_serve_command() == "pip install . && zq serve"
    ci = (ROOT / ".ci" / "run").read_text()
    build = ci.index("bash .ci/artifact")
    assert build < ci.index('export ZQ_TEST_VENV="$artifact_dir/venv"') < ci.index("-m pytest")


def test_readme_links_every_topic_document() -> None:
    for doc in ("docs/redis.md", "docs/mongo.md", "docs/analytics.md", "docs/security.md",
                "docs/storage-sql.md"):
        assert f"]({doc})" in README
        assert (ROOT / doc).is_file()


DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_sample_client_ids_in_the_docs_are_uuids() -> None:
    # The API refuses a Client-ID that is not a UUID; a sample copied from
    # the docs must work.
    uuid = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
    found = []
    for path in DOCUMENTS:
        text = path.read_text()
        found += re.findall(r"Client-ID[\"']?:\s*\"?([^\s\"']+)", text)
        # Tables of consumers: the rows under a client_id header line.
        for table in re.findall(r"^client_id .*\n-+ .*\n((?:(?!```).+\n)+)", text, re.M):
            found += [row.split()[0] for row in table.splitlines()]
    assert len(found) > 5
    assert [value for value in found if not uuid.fullmatch(value)] == []


def test_sample_responses_in_the_docs_are_http_1_1() -> None:
    # zq serve (granian) answers HTTP/1.1; a sample saying otherwise was not real.
    for path in DOCUMENTS:
        assert set(re.findall(r"^HTTP/(\d\.\d) ", path.read_text(), re.M)) <= {"1.1"}, path
