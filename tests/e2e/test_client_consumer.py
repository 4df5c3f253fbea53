"""zq.client.Consumer against a real ``zq serve``: the README example, and SIGTERM.

The README's example runs as it is written (its code block, in a process
of its own) against each backend's server: the failing message must end
in the dead letter queue with the exception's text in its history. Then a
consumer process is stopped with SIGTERM in the middle of a batch: every
message is either handled (deleted) or back in the queue, free, and none
is handled twice.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

from zq.client import Client

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 60.0


def readme_example() -> str:
    readme = (ROOT / "README.md").read_text()
    match = re.search(r"<!-- client-example:start -->\n```python\n(.*?)```\n"
                      r"<!-- client-example:end -->", readme, re.S)
    assert match, "README.md lost its client example"
    return match.group(1)


def readme_example_output() -> str:
    """What the README says its example prints."""
    readme = (ROOT / "README.md").read_text()
    match = re.search(r"<!-- client-example:end -->\n\nprints\n\n```\n(.*?)```", readme, re.S)
    assert match, "README.md lost the output of its client example"
    return match.group(1)


def run_python(code_path: Path, url: str, project: str, env: dict[str, str]
               ) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(code_path)], cwd=ROOT, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
        env={**env, "ZQ_URL": url, "ZQ_PROJECT": project, "PYTHONPATH": str(ROOT),
             "PYTHONUNBUFFERED": "1"})


def test_the_readme_example_dead_letters_the_failing_message(server, project, tmp_path):
    script = tmp_path / "example.py"
    script.write_text(readme_example())
    process = run_python(script, server.url, project, server.env)
    out, err = process.communicate(timeout=TIMEOUT)
    assert process.returncode == 0, err
    assert out == readme_example_output()
    with Client(server.url, project=project) as client:
        [dead] = client.list_messages("orders-dlq", include_history=True)
        assert dead.body == {"sku": "x-42"}
        assert (dead.history[-1]["reason"], dead.history[-1]["description"]) == (
            "rejected", "BadOrder: no order_id in {'sku': 'x-42'}")
        assert client.stats("orders").total == 0


CONSUMER = '''
import os, sys, time
from zq.client import Consumer

def handle(message):
    time.sleep(0.05)  # a handler that takes a while: SIGTERM lands inside one
    print("handled", message.id, flush=True)

consumer = Consumer(os.environ["ZQ_URL"], "work", handle, project=os.environ["ZQ_PROJECT"],
                    batch=10, claim_ttl=60)
print("ready", flush=True)
stats = consumer.run()
print("stopped", stats.handled, stats.released, flush=True)
'''


def test_sigterm_stops_a_consumer_without_losing_a_message(server, project, tmp_path):
    with Client(server.url, project=project) as client:
        posted = client.post("work", *range(40), ttl=3600)
        script = tmp_path / "consumer.py"
        script.write_text(CONSUMER)
        process = run_python(script, server.url, project, server.env)
        try:
            assert process.stdout.readline().strip() == "ready"
            handled: list[str] = []
            while len(handled) < 3:
                line = process.stdout.readline()
                assert line.startswith("handled "), line + process.stderr.read()
                handled.append(line.split()[1])
            process.send_signal(signal.SIGTERM)
            out, err = process.communicate(timeout=TIMEOUT)
        finally:
            if process.poll() is None:
                process.kill()
        assert process.returncode == 0, err
        lines = out.splitlines()
        handled += [line.split()[1] for line in lines if line.startswith("handled ")]
        stopped = lines[-1].split()
        assert stopped[0] == "stopped" and int(stopped[1]) == len(handled)
        assert len(set(handled)) == len(handled)  # none handled twice
        assert len(handled) < len(posted)  # it did stop early
        # Everything not handled is back in the queue, free at once: the
        # claim was released, not left to expire.
        stats = client.stats("work")
        assert (stats.claimed, stats.free) == (0, len(posted) - len(handled))
        left = sorted(set(posted) - set(handled))
        found = set()
        for start in range(0, len(left), 20):  # at most 20 ids per request
            found |= {m.id for m in client.get_messages("work", left[start:start + 20])}
        assert found == set(left)
