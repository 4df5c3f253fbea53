"""The job on a real Spark standalone cluster gets exactly local mode's figures (issue 19 item 5).

A master and two workers are started from the installed pyspark
(``spark-class`` with the Master and Worker classes, on loopback); the job
is submitted with the command docs/analytics.md shows (``spark-submit
--master spark://... zq/analytics/job.py``) and its JSON compared with the
local-mode run of the same dataset, figure by figure.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.analytics.conftest import QUICK_JIT

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cluster_env() -> dict[str, str]:
    env = dict(os.environ, SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP="127.0.0.1",
               SPARK_DAEMON_JAVA_OPTS=QUICK_JIT,
               PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               PYTHONPATH=str(ROOT))
    env.pop("PYSPARK_GATEWAY_PORT", None)
    return env


def master_state(ui_port: int) -> dict:
    """The standalone master's own account (its web UI's JSON): workers, applications."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as page:
            return json.load(page)
    except OSError:
        return {}


def alive_workers(ui_port: int) -> int:
    return int(master_state(ui_port).get("aliveworkers", 0))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[tuple[str, int]]:
    """(``spark://127.0.0.1:PORT``, web UI port): a master with two one-core workers."""
    work = tmp_path_factory.mktemp("spark-cluster")
    port, ui = free_port(), free_port()
    url = f"spark://127.0.0.1:{port}"
    spark_class = str(spark_home() / "bin" / "spark-class")
    commands = [
        [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
         "--port", str(port), "--webui-port", str(ui)],
        *[[spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
           "--cores", "1", "--memory", "1g", "--webui-port", str(free_port()),
           "--work-dir", str(work / f"worker-{n}"), url] for n in (1, 2)],
    ]
    started = []
    try:
        for n, command in enumerate(commands):
            log = open(work / f"daemon-{n}.log", "wb")  # noqa: SIM115 - closed with the process
            # A session (process group) of its own: killed whole at the end.
            started.append((subprocess.Popen(command, env=cluster_env(), stdout=log,
                                             stderr=subprocess.STDOUT, start_new_session=True),
                            log))
        deadline = time.monotonic() + 300
        while alive_workers(ui) < 2:
            if time.monotonic() > deadline or any(p.poll() is not None for p, _ in started):
                logs = "\n".join((work / f"daemon-{n}.log").read_text()[-2000:]
                                 for n in range(len(started)))
                pytest.fail(f"the standalone cluster did not come up:\n{logs}")
            time.sleep(1)
        yield url, ui
    finally:
        for process, log in reversed(started):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
            log.close()


def test_cluster_figures_are_exactly_local_modes(spark_figures, dataset, cluster, tmp_path):
    root, events = dataset
    url, ui = cluster
    command = [
        str(spark_home() / "bin" / "spark-submit"), "--master", url,
        "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.executor.memory=512m",
        "--conf", "spark.sql.shuffle.partitions=2", "--conf", "spark.ui.enabled=false",
        "--conf", f"spark.driver.extraJavaOptions={QUICK_JIT}",
        "--conf", f"spark.executor.extraJavaOptions={QUICK_JIT}",
        str(ROOT / "zq" / "analytics" / "job.py"), "--events", root, "--format", "json",
    ]
    submitted = subprocess.run(command, env=cluster_env(), capture_output=True, text=True,
                               timeout=1500, cwd=tmp_path)
    assert submitted.returncode == 0, submitted.stderr[-4000:]
    # Spark merges the job's stderr into stdout: with --format json the job
    # prints no progress, so stdout is the JSON alone. The master ran it.
    deadline = time.monotonic() + 60
    while not master_state(ui).get("completedapps") and time.monotonic() < deadline:
        time.sleep(1)  # the driver's goodbye may reach the master a moment later
    [app] = master_state(ui)["completedapps"]
    assert app["name"] == "zq-stats" and app["state"] == "FINISHED", app
    on_cluster = json.loads(submitted.stdout)

    code, out, _ = spark_figures  # the same job in local mode
    assert code == 0
    local = json.loads(out)
    assert list(on_cluster) == list(local)
    for name, rows in local.items():
        assert on_cluster[name] == rows, name  # exactly: same rows, same order, same floats
    assert sum(r["posted"] for r in on_cluster["queue_totals"]) == sum(
        e.kind == "posted" for e in events)
