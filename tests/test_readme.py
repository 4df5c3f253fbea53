"""README.md stays true: its sessions, the configuration table and the commands it promises.

The curl walk-through runs against a real ``zq serve`` (SQLite, as the
quick start starts it), and every response it shows is compared with the
real one: the same keys, and the same values once ids, times and ages are
set aside. The Python example then runs after it, as a user going through
the README top to bottom would, and twice.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.server import ServerProcess, clean_environment
from tests.e2e.test_client_consumer import readme_example, readme_example_output
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
                "docs/storage-sql.md", "docs/console.md", "docs/poison.md", "docs/metrics.md",
                "docs/pools.md", "docs/notifications.md", "docs/encryption.md",
                "docs/architecture.md", "docs/consumers.md"):
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


def section(title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", README, re.S | re.M)
    assert match, f"README.md lost its section {title!r}"
    return match.group(1)


def test_the_commands_table_lists_every_command() -> None:
    from zq.cli import build_parser

    [commands] = [action for action in build_parser()._actions
                  if isinstance(action, argparse._SubParsersAction)]
    table = section("Commands")
    assert [name for name in commands.choices if f"| `zq {name}" not in table] == []


# -- the curl walk-through, against a real server ---------------------------

ID = re.compile(r"\b[0-9a-f]{32}\b")
TIME = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\b")
MARK = "@@readme-step-"


def curl_walk_through() -> tuple[str, list[tuple[str, str]]]:
    """The setup lines, and each ``$ command`` of the session with the output shown."""
    match = re.search(r"```sh\n(ZQ=.*?)```\n\n```console\n(.*?)```",
                      section("The dead letter queue, with curl"), re.S)
    assert match, "README.md lost its curl session"
    steps: list[tuple[str, list[str]]] = []
    for line in match.group(2).splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            assert steps, "the session must start with a command"
            steps[-1][1].append(line)
    return match.group(1), [(command, "\n".join(shown).strip()) for command, shown in steps]


def comparable(value: Any) -> Any:
    """``value`` with what changes from run to run (ids, times, ages) set aside."""
    if isinstance(value, dict):
        return {key: type(item).__name__ if key == "age" else comparable(item)
                for key, item in value.items()}
    if isinstance(value, list):
        return [comparable(item) for item in value]
    if isinstance(value, str):
        return TIME.sub("<time>", ID.sub("<id>", value))
    return value


def keys(value: Any) -> Any:
    """The shape of a JSON document: its keys, nested, without the values."""
    if isinstance(value, dict):
        return {key: keys(item) for key, item in value.items()}
    if isinstance(value, list):
        return [keys(item) for item in value]
    return None


def shown_as(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


@pytest.fixture(scope="module")
def walked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, list]]:
    """A ``zq serve`` as the quick start runs it, after the README's curl session.

    Yields the server and, per step, (command, output shown, real output).
    """
    assert shutil.which("curl"), "the README's walk-through needs curl"
    tmp = tmp_path_factory.mktemp("readme")
    env = clean_environment(tmp / "data")
    env["NO_PROXY"] = env["no_proxy"] = "*"  # curl straight to the local server
    server = ServerProcess(tmp / "server.log", env)  # `zq serve`, but on a free port
    try:
        server.start()
        setup, steps = curl_walk_through()
        assert re.search(r"^ZQ=http://127\.0\.0\.1:8888/v2$", setup, re.M)
        script = [re.sub(r"^ZQ=.*$", f"ZQ={server.url}/v2", setup, flags=re.M)]
        for index, (command, _) in enumerate(steps):
            # A response without a final newline must not run into the mark.
            script += [f"printf '\\n{MARK}{index}\\n'", command]
        done = subprocess.run(["bash", "-c", "\n".join(script)], cwd=tmp, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        real = re.split(rf"^{MARK}\d+\n", done.stdout, flags=re.M)[1:]
        assert len(real) == len(steps), done.stdout
        yield server, [(command, shown, out.strip())
                       for (command, shown), out in zip(steps, real, strict=True)]
    finally:
        server.stop()


def test_every_response_of_the_curl_walk_through_is_what_the_server_answers(walked) -> None:
    _, steps = walked
    assert len(steps) >= 10
    for command, shown, real in steps:
        shown, real = shown_as(shown), shown_as(real)
        assert type(shown) is type(real), f"$ {command}\nshown: {shown}\nreal:  {real}"
        if isinstance(shown, (dict, list)):
            assert keys(shown) == keys(real), f"$ {command}: other keys than the server's"
        assert comparable(shown) == comparable(real), f"$ {command}"


def test_the_python_example_runs_after_the_walk_through(walked, tmp_path) -> None:
    # A user who did the curl session first: the queue exists with its own
    # metadata and the dead letter queue holds a max_claim_count dead letter.
    # Run twice, as a user trying it again would.
    server, _ = walked
    script = tmp_path / "example.py"
    script.write_text(readme_example())
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
            timeout=120, env={**server.env, "ZQ_URL": server.url,
                              "PYTHONPATH": str(ROOT)})
        assert done.returncode == 0, done.stderr
        assert done.stdout == readme_example_output()
