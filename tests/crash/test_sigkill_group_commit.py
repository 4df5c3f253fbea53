"""SIGKILL a process in the middle of a shared (group) commit; the group is all or nothing.

tests/crash/group_commit_child.py posts a few messages alone, then five
at once that form one group, and stops that group at its COMMIT:

- killed with every statement of the group run but COMMIT not sent, none
  of the five is stored, and the messages answered before are;
- killed after COMMIT returned but before any of the five was answered, all
  five are stored (the group is durable before anyone is told).

Either way no post of the group was answered before the kill. About a
second per backend and mode.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.backends import empty_database
from tests.crash.conftest import selected
from tests.crash.group_commit_child import BEFORE, GROUP
from zq.storage.sql import dialects, migrate
from zq.storage.sql.schema import messages

ROOT = Path(__file__).resolve().parents[2]
# A server keeps what it committed whatever becomes of its client, so the
# kill after COMMIT is run where the writer is the killed process: SQLite.
CASES = (("sqlite", "before"), ("sqlite", "after"), ("postgresql", "before"),
         ("mariadb", "before"))


@pytest.fixture
def sql_uri(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'zq.sqlite3'}"
        return
    with empty_database(request.param) as uri:
        migrate.upgrade(uri)
        yield uri


@pytest.mark.parametrize(("sql_uri", "mode"), [
    pytest.param(name, mode, marks=pytest.mark.skipif(
        not selected(name), reason=f"{name} not in ZQ_TEST_BACKENDS"))
    for name, mode in CASES
], indirect=["sql_uri"])
def test_a_group_killed_at_its_commit_is_all_or_nothing(sql_uri, mode):
    project = f"p-{uuid.uuid4().hex}"
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.crash.group_commit_child", sql_uri, project, mode],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    acked: list[int] = []
    try:
        assert child.stdout is not None
        for line in child.stdout:
            if line.startswith("ACK "):
                acked.append(int(line.split()[1]))
            elif line.strip() == "IN COMMIT":
                break
        else:
            pytest.fail(f"the child ended (status {child.wait()}) before its group committed")
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    assert acked == list(range(BEFORE))  # nobody in the group was answered

    engine = sa.create_engine(dialects.to_sqlalchemy_url(sql_uri), poolclass=sa.NullPool)
    try:
        with engine.connect() as conn:
            bodies = conn.execute(
                sa.select(messages.c.body).where(messages.c.project == project)).scalars()
            stored = sorted(int(body.split(":")[1].rstrip("}")) for body in bodies)
    finally:
        engine.dispose()
    group = list(range(BEFORE, BEFORE + GROUP))
    expected = acked + (group if mode == "after" else [])
    assert stored == expected
