"""zq and OpenStack Zaqar side by side: the same workloads, the same run.

    python -m benchmarks.zaqar_side_by_side [--repeat 2] [--duration 10]

What it does, all on this machine and on loopback addresses only:

1. installs OpenStack Zaqar 23.x from PyPI into its own virtualenv
   (``--venv``, default /tmp/zaqar-venv) unless it is there already;
2. writes a zaqar.conf (Redis message and management stores on their own
   Redis db, no auth) into a scratch HOME, where oslo.config finds it;
3. starts Zaqar under gunicorn (gthread, ``--workers`` processes x
   ``--threads`` threads, Zaqar's documented WSGI entry point), zq under
   ``zq serve`` (Redis driver, the same worker and thread counts; and again
   on a fresh PostgreSQL database unless ``--skip-postgres``), and the
   minimal falcon app on zq's server (the HTTP ceiling);
4. runs every workload against each target in turn (the order alternates
   between repeats, so slow drifts in the machine's load hit both), then
   the open-loop runs of post b10 and claim-delete at each of
   ``--open-loop-fractions`` (0.5 and 0.8) of zq's own maximum rate, on
   Redis and on PostgreSQL;
4b. unless ``--skip-rabbitmq``, the RabbitMQ already running at
   ``--rabbitmq-url`` (loopback) with the same workloads through an AMQP
   client (benchmarks/amqp_load.py: quorum queues, persistent messages,
   publisher confirms, ``x-delivery-limit`` and at-least-once dead
   lettering for poison), alternating with zq on PostgreSQL, its durable
   counterpart;
5. unless ``--skip-scaling``, the scaling cases over HTTP on zq on Redis
   and on PostgreSQL (benchmarks/scaling_http.py): claim p50/p99 on queues
   of ``--scaling-sizes`` messages and behind ``--scaling-held`` held ones,
   and listing, stats and health with ``--scaling-queues`` queues in a
   project, each with its ratio to the base case;
6. prints every result as a JSON line, then a Markdown table of medians,
   spreads and zq/Zaqar ratios, and the scaling table (also written to
   ``--out``).

Every run also reports the server's CPU per 1,000 messages
(``server_cpu_ms_per_1k_msgs``): the CPU time (user + system, from
/proc) spent during the run's window by the target's whole process tree
(the server and its workers) plus its backend's processes (redis-server for
zq on Redis and for Zaqar; for zq on PostgreSQL the backends connected to
its database and PostgreSQL's WAL writer, checkpointer and background
writer; for RabbitMQ its Erlang VM, beam.smp, and the processes under it,
found by name), divided by the messages the run counted; the parts are in
``server_cpu_s`` and ``backend_cpu_s``. The load generator is in neither;
its own CPU is ``generator_cpu_s`` (the AMQP client spends far more per
message than the HTTP one, which sends 10 messages a request).
Redis and PostgreSQL are shared with whatever else runs on the machine: on
a busy machine the backend's part includes others' work.

Everything it creates is removed at the end: the servers (by their pids),
zq's Redis keys (by their prefix), Zaqar's keys for the run's project, the
PostgreSQL database, and (amqp_load does it per run) RabbitMQ's queues and
exchanges.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from benchmarks import scaling_http
from benchmarks.loadgen.stats import WINDOW_MARK

ROOT = Path(__file__).resolve().parents[1]
REDIS = "127.0.0.1:6379"
POSTGRES_URL = os.environ.get("ZQ_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
ZAQAR_SPEC = "zaqar==23.*"

ZAQAR_CONF = """\
[DEFAULT]
auth_strategy =
unreliable = true
pooling = false

[drivers]
transport = wsgi
message_store = redis
management_store = redis

[drivers:message_store:redis]
uri = redis://{redis}?dbid={db}

[drivers:management_store:redis]
uri = redis://{redis}?dbid={db}
"""

# (workload, batch) pairs; the same for every target.
CASES = [("post", 1), ("post", 10), ("claim-delete", 10), ("cycle", 10), ("poison", 10)]
MINIMAL_CASES = [("ping", 10), ("post", 10), ("claim-delete", 10)]
# cycle against zq on Redis; post b10, claim-delete and poison against RabbitMQ.
POSTGRES_CASES = [("post", 10), ("claim-delete", 10), ("cycle", 10), ("poison", 10)]
RABBITMQ_URL = "amqp://guest:guest@127.0.0.1:5672/"
# Issue 31's open-loop latency targets at 50% of a backend's own maximum (p99, ms).
OPEN_LOOP_P99_TARGETS = {"zq": 10.0, "zq-postgresql": 25.0}


@dataclass
class Target:
    name: str
    url: str
    command: list[str]  # empty: a server already running (RabbitMQ), not started here
    env: dict[str, str]
    process: subprocess.Popen | None = None
    log: Path | None = None
    cwd: Path = ROOT  # where the server starts (python -m finds its code there first)
    results: dict[str, list[dict]] = field(default_factory=dict)
    # The backend's processes whose CPU counts as this target's (pids, read per run).
    backend: Callable[[], list[int]] = list
    # The server's own processes; None: the tree of the process started here.
    servers: Callable[[], list[int]] | None = None
    generator: str = "benchmarks.loadgen"  # the module run with python -m
    cases: list[tuple[str, int]] = field(default_factory=lambda: list(CASES))
    about: str = ""  # a line of the report's header
    generator_args: list[str] = field(default_factory=list)

    def server_pids(self) -> list[int]:
        if self.servers is not None:
            return self.servers()
        assert self.process is not None
        return process_tree(self.process.pid)


TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name; None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


def process_tree(root: int) -> list[int]:
    """``root`` and every process descending from it (a server and its workers)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) is not None:
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo += children.get(pid, [])
    return tree


def cpu_seconds(pids: list[int]) -> dict[int, float]:
    """User + system CPU seconds of each live process of ``pids`` (its threads included)."""
    spent = {}
    for pid in pids:
        fields = _stat(pid)
        if fields is not None:  # utime and stime are fields 14 and 15 of stat
            spent[pid] = (int(fields[11]) + int(fields[12])) / TICK
    return spent


def spent_since(before: dict[int, float], pids: list[int]) -> float:
    """CPU seconds ``pids`` spent since ``before`` (a process new since: all of its)."""
    return sum(now - before.get(pid, 0.0) for pid, now in cpu_seconds(pids).items())


def redis_server_pids() -> list[int]:
    """The redis-server serving REDIS (the one every Redis target uses)."""
    import redis

    client = redis.Redis.from_url(f"redis://{REDIS}")
    try:
        return [int(client.info("server")["process_id"])]
    finally:
        client.close()


def postgres_pids(uri: str) -> Callable[[], list[int]]:
    """The PostgreSQL processes of a run on ``uri``: its database's backends, and
    the WAL writer, checkpointer and background writer that every commit uses."""
    database = urlsplit(uri).path.lstrip("/")

    def pids() -> list[int]:
        import psycopg

        with psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=10) as admin:
            rows = admin.execute(
                "SELECT pid FROM pg_stat_activity WHERE (datname = %s AND pid <> "
                "pg_backend_pid()) OR backend_type IN ('walwriter', 'checkpointer', "
                "'background writer')", (database,)).fetchall()
        return [int(row[0]) for row in rows]

    return pids


def rabbitmq_pids() -> list[int]:
    """RabbitMQ's Erlang VM (the beam.smp booting ``rabbit``) and its children.

    Found by process name: the broker runs as a system service, not started
    here. A ``rabbitmqctl`` call starts a beam.smp of its own, which is left
    out (its command line does not boot ``rabbit``)."""
    roots = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() != "beam.smp":
                continue
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(pair == (b"-s", b"rabbit") for pair in itertools.pairwise(argv)):
            roots.append(int(entry.name))
    return [pid for root in roots for pid in process_tree(root)]


def redact(url: str) -> str:
    """``url`` without its password (for the report)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", "@")))


def rabbitmq_target(args: argparse.Namespace) -> Target:
    """RabbitMQ as a target: the broker already running at ``--rabbitmq-url`` (checked
    here, with its version), driven by benchmarks/amqp_load.py; its CPU is the
    beam.smp tree's."""
    from benchmarks import amqp_load

    try:
        version, client = amqp_load.broker_version(args.rabbitmq_url)
    except Exception as exc:  # any failure to reach it says the same
        raise SystemExit(f"RabbitMQ at {redact(args.rabbitmq_url)} cannot be reached "
                         f"({type(exc).__name__}: {exc}); --skip-rabbitmq leaves it "
                         "out") from exc
    if not rabbitmq_pids():
        raise SystemExit("no beam.smp process booting rabbit on this machine: its CPU "
                         "cannot be measured; --skip-rabbitmq leaves RabbitMQ out")
    extra = [] if args.delivery_limit is None else ["--delivery-limit",
                                                     str(args.delivery_limit)]
    limit = amqp_load.MAX_CLAIM_COUNT - 1 if args.delivery_limit is None \
        else args.delivery_limit
    about = (f"RabbitMQ {version} at {redact(args.rabbitmq_url)} (not started here), quorum "
             "queues, persistent messages, publisher confirms, poison x-delivery-limit "
             f"{limit}; benchmarks/amqp_load.py on aio-pika {client}, one connection per "
             "worker")
    return Target("rabbitmq", args.rabbitmq_url, [], {}, servers=rabbitmq_pids,
                  generator="benchmarks.amqp_load", generator_args=extra, about=about)


def sh(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(args, check=True, text=True, capture_output=True, **kwargs)


def ensure_zaqar(venv: Path) -> str:
    """Zaqar's version in ``venv``, installing it there first if needed."""
    python = venv / "bin" / "python"
    probe = [str(python), "-c", "import zaqar.version as v, gunicorn; "
             "print(v.version_info.version_string())"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return sh(*probe).stdout.strip()
    print(f"installing {ZAQAR_SPEC} into {venv} ...", file=sys.stderr)
    sh(sys.executable, "-m", "venv", str(venv))
    sh(str(python), "-m", "pip", "install", "--quiet", ZAQAR_SPEC, "gunicorn", "redis")
    return sh(*probe).stdout.strip()


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def ping(url: str) -> bool:
    request = urllib.request.Request(f"{url}/v2/ping", headers={
        "Client-ID": str(uuid.uuid4()), "X-Project-ID": "side-by-side"})
    try:
        with urllib.request.urlopen(request, timeout=2) as answer:
            return answer.status in (200, 204)
    except OSError:
        return False


@contextlib.contextmanager
def running(target: Target, scratch: Path) -> Iterator[Target]:
    """Start a target's server, wait for /v2/ping, stop it (by pid) afterwards.

    A target without a command is a server already running: nothing to do."""
    if not target.command:
        yield target
        return
    target.log = scratch / f"{target.name}.log"
    with open(target.log, "wb") as log:
        target.process = subprocess.Popen(target.command, env=target.env, cwd=target.cwd,
                                          stdin=subprocess.DEVNULL, stdout=log,
                                          stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not ping(target.url):
            if target.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{target.name} did not start:\n{target.log.read_text()}")
            time.sleep(0.2)
        yield target
    finally:
        if target.process.poll() is None:
            os.killpg(target.process.pid, signal.SIGTERM)
            try:
                target.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(target.process.pid, signal.SIGKILL)
                target.process.wait(10)


def loadgen(target: Target, workload: str, batch: int, args: argparse.Namespace,
            rate: float = 0.0) -> dict:
    command = [sys.executable, "-m", target.generator, "--url", target.url,
               "--workload", workload, "--batch", str(batch),
               "--duration", str(args.duration), "--requests", str(args.requests),
               "--concurrency", str(args.concurrency), *target.generator_args]
    if rate:
        command += ["--rate", f"{rate:.1f}"]
    command.append("--mark-window")
    generator = subprocess.Popen(command, cwd=ROOT, text=True, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE)
    assert generator.stderr is not None and generator.stdout is not None
    before: dict[int, float] = {}
    server = backend = 0.0
    problems = []
    # The window the generator times (after a claim-delete's backlog is posted):
    # the CPU of the server's tree and of its backend from its start to its end.
    for line in generator.stderr:
        if line.strip() == f"{WINDOW_MARK} start":
            servers, backends = target.server_pids(), target.backend()
            before = cpu_seconds(servers + backends)
        elif line.strip() == f"{WINDOW_MARK} end":
            server = spent_since(before, target.server_pids())
            backend = spent_since(before, target.backend())
        else:
            problems.append(line)
    output = generator.stdout.read()
    if generator.wait() != 0:
        raise RuntimeError(f"loadgen against {target.name} failed: {''.join(problems)}")
    result = json.loads(output.strip().splitlines()[-1])
    result["target"] = target.name
    result.update(server_cpu_s=round(server, 2), backend_cpu_s=round(backend, 2))
    messages = int(result.get("messages") or 0) or int(result.get("requests") or 0)
    result["server_cpu_ms_per_1k_msgs"] = (
        round((server + backend) / messages * 1e6, 1) if messages else None)
    generator_cpu = result.get("generator_cpu_s")
    result["generator_cpu_ms_per_1k_msgs"] = (
        round(float(generator_cpu) / messages * 1e6, 1)
        if messages and generator_cpu is not None else None)
    print(json.dumps(result), flush=True)
    return result


def case_key(workload: str, batch: int, fraction: float = 0.0) -> str:
    """``post b10``; an open-loop run at a fraction of the maximum: ``post b10 @80%``."""
    return f"{workload} b{batch}" + (f" @{fraction:.0%}" if fraction else "")


def open_loop(target: Target, args: argparse.Namespace) -> None:
    """post b10 and claim-delete, open loop at fractions of ``target``'s own maximum.

    The maximum is the target's median closed-loop rate in this run; the
    rate asked of the generator is in operations (a claim-delete is 2
    requests). Each repeat runs every fraction and workload once, so the
    fractions' runs interleave as the targets' do.
    """
    for _ in range(args.repeat):
        for fraction in args.open_loop_fractions:
            for workload, requests_per_op in (("post", 1), ("claim-delete", 2)):
                closed = target.results.get(case_key(workload, 10))
                if not closed:
                    continue
                rate = median(closed, "req_per_s") / requests_per_op * fraction
                target.results.setdefault(case_key(workload, 10, fraction), []).append(
                    loadgen(target, workload, 10, args, rate=rate))


def scaling(target: Target, uri: str, backend: str, args: argparse.Namespace) -> list[dict]:
    rows = scaling_http.run(target.url, uri, backend, sizes=args.scaling_sizes,
                            held=args.scaling_held, queues=args.scaling_queues,
                            rounds=args.scaling_rounds)
    for line in rows:
        print(json.dumps(line), flush=True)
    return rows


CPU_KEY = "server_cpu_ms_per_1k_msgs"
GENERATOR_KEY = "generator_cpu_ms_per_1k_msgs"


def median(results: list[dict], metric: str) -> float:
    return statistics.median(float(r[metric]) for r in results)


def cpu_median(results: list[dict]) -> float | None:
    """The median server CPU per 1,000 messages; None when no run counted one."""
    values = [float(r[CPU_KEY]) for r in results if r.get(CPU_KEY) is not None]
    return statistics.median(values) if values else None


def spread(results: list[dict], metric: str) -> str:
    values = [float(r[metric]) for r in results if r.get(metric) is not None]
    return f"{min(values):g}-{max(values):g}" if values else "n/a"


def ratios(ours: list[dict], theirs: list[dict] | None) -> tuple[str, str]:
    """Our median msgs/s over theirs, and their median CPU per message over ours."""
    if not theirs:
        return "", ""
    rate = median(theirs, "msgs_per_s")
    ratio = f"{median(ours, 'msgs_per_s') / rate:.2f}x" if rate else "n/a"
    cpu_theirs, cpu_ours = cpu_median(theirs), cpu_median(ours)
    cpu = f"{cpu_theirs / cpu_ours:.2f}x" if cpu_theirs and cpu_ours else "n/a"
    return ratio, cpu


def table(targets: dict[str, Target]) -> str:
    """Markdown: per case, each target's median msgs/s (spread), p50/p99, server CPU
    per 1,000 messages and the generator's, zq's ratios to Zaqar (throughput, and
    Zaqar's CPU / zq's) and zq on PostgreSQL's to RabbitMQ; then the open-loop runs."""
    zq, zaqar = targets.get("zq"), targets.get("zaqar")
    rabbit = targets.get("rabbitmq")
    lines = ["| case | target | msgs/s median (min-max) | req/s | p50 ms | p99 ms | errors "
             "| server CPU ms / 1k msgs (min-max) | generator CPU ms / 1k msgs "
             "| zq/Zaqar msgs/s | Zaqar/zq CPU | zq-postgresql/RabbitMQ msgs/s "
             "| RabbitMQ/zq-postgresql CPU |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    cases = dict.fromkeys(key for t in targets.values() for key in t.results if "@" not in key)
    for key in cases:
        for name, target in targets.items():
            runs = target.results.get(key)
            if not runs:
                continue
            ratio = cpu_ratio = rabbit_ratio = rabbit_cpu = ""
            if name == "zq" and zaqar:
                ratio, cpu_ratio = ratios(runs, zaqar.results.get(key))
            if name == "zq-postgresql" and rabbit:
                rabbit_ratio, rabbit_cpu = ratios(runs, rabbit.results.get(key))
            metric = "msgs_per_s" if key != "ping b10" else "req_per_s"
            cpu = (f"{cpu_median(runs):g} ({spread(runs, CPU_KEY)})"
                   if cpu_median(runs) is not None else "")
            generator = [float(r[GENERATOR_KEY]) for r in runs
                         if r.get(GENERATOR_KEY) is not None]
            generator_cpu = f"{statistics.median(generator):g}" if generator else ""
            lines.append(
                f"| {key} | {name} | {median(runs, metric):g} ({spread(runs, metric)}) "
                f"| {median(runs, 'req_per_s'):g} | {median(runs, 'p50_ms'):g} "
                f"| {median(runs, 'p99_ms'):g} | {sum(int(r['errors']) for r in runs)} "
                f"| {cpu} | {generator_cpu} "
                f"| {ratio} | {cpu_ratio} | {rabbit_ratio} | {rabbit_cpu} |")
        extras = []
        for name, target in targets.items():
            runs = target.results.get(key, [])
            if runs and "dead_letter_moves_per_s" in runs[0]:
                extras.append(f"{name}: dead letter moves/s "
                              f"{median(runs, 'dead_letter_moves_per_s'):g}")
            if runs and "e2e_p50_ms" in runs[0]:
                extras.append(f"{name}: post->claim p50 {median(runs, 'e2e_p50_ms'):g} ms, "
                              f"p99 {median(runs, 'e2e_p99_ms'):g} ms")
        if extras:
            lines.append(f"| {key} | | {'; '.join(extras)} | | | | | | | | | | |")
    lines.append("")
    for name in ("zq", "zaqar", "zq-postgresql", "rabbitmq"):
        target = targets.get(name)
        cycle = target.results.get("cycle b10") if target else None
        poison = target.results.get("poison b10") if target else None
        if cycle and poison:
            share = median(poison, "msgs_per_s") / median(cycle, "msgs_per_s")
            lines.append(f"{name} poison good-message rate / cycle rate: {share:.2f}")
    pg = targets.get("zq-postgresql")
    for other, label in ((zq, "zq Redis / PostgreSQL"), (rabbit, "zq PostgreSQL / RabbitMQ")):
        if not (other and pg):
            continue
        for key in pg.results:
            if key not in other.results or "@" in key:  # open-loop rates are the ones asked
                continue
            ours, theirs = median(pg.results[key], "msgs_per_s"), median(other.results[key],
                                                                        "msgs_per_s")
            ratio = theirs / ours if other is zq else ours / theirs
            lines.append(f"{label} msgs/s on {key}: {ratio:.2f}")
            ours_cpu, theirs_cpu = cpu_median(pg.results[key]), cpu_median(other.results[key])
            if ours_cpu and theirs_cpu:
                lines.append(f"server CPU per message on {key}, zq PostgreSQL / "
                             f"{'zq Redis' if other is zq else 'RabbitMQ'}: "
                             f"{ours_cpu / theirs_cpu:.2f}")
    open_rows = open_loop_table(targets)
    verdicts = issue_targets(targets)
    return "\n".join(lines) + ("\n\n" + open_rows if open_rows else "") + \
        ("\n\n" + verdicts if verdicts else "")


def issue_targets(targets: dict[str, Target]) -> str:
    """Issue 31's throughput and CPU targets against this run's medians, met or not
    (the open-loop ones are in the open-loop table)."""
    def ratio(ours: str, theirs: str, key: str, cpu: bool = False) -> float | None:
        a, b = targets.get(ours), targets.get(theirs)
        if not (a and b and a.results.get(key) and b.results.get(key)):
            return None
        if cpu:  # how many times less CPU per message ``ours`` spends
            mine, other = cpu_median(a.results[key]), cpu_median(b.results[key])
            return other / mine if mine and other else None
        other = median(b.results[key], "msgs_per_s")
        return median(a.results[key], "msgs_per_s") / other if other else None

    checks = []
    for workload, batch in CASES:
        key = case_key(workload, batch)
        checks.append((f"zq / Zaqar msgs/s on {key} >= 5x", ratio("zq", "zaqar", key), 5.0))
        checks.append((f"Zaqar / zq server CPU per message on {key} >= 5x",
                       ratio("zq", "zaqar", key, cpu=True), 5.0))
    for key in ("post b10", "claim-delete b10", "cycle b10"):
        # within 2x: PostgreSQL's rate at least half Redis's
        checks.append((f"zq PostgreSQL / zq Redis msgs/s on {key} >= 0.5 (within 2x)",
                       ratio("zq-postgresql", "zq", key), 0.5))
    for key in ("post b10", "claim-delete b10", "poison b10"):
        checks.append((f"zq PostgreSQL / RabbitMQ msgs/s on {key} >= 1",
                       ratio("zq-postgresql", "rabbitmq", key), 1.0))
    rows = [f"| {name} | {value:.2f} | {'met' if value >= goal else 'not met'} |"
            for name, value, goal in checks if value is not None]
    if not rows:
        return ""
    return ("Issue 31's targets in this run (medians):\n\n| target | this run | |\n"
            "|---|---|---|\n" + "\n".join(rows))


def open_loop_table(targets: dict[str, Target]) -> str:
    """Markdown: every open-loop case, p50 and p99 of each run, and issue 31's p99 target
    at 50% (10 ms on Redis, 25 ms on PostgreSQL) with whether the median meets it."""
    lines = []
    for name, target in targets.items():
        for key, runs in target.results.items():
            if "@" not in key:
                continue
            fraction = float(key.rsplit("@", 1)[1].rstrip("%")) / 100
            goal = OPEN_LOOP_P99_TARGETS.get(name)
            verdict = ""
            if goal is not None and abs(fraction - 0.5) < 1e-9:
                met = median(runs, "p99_ms") < goal
                verdict = f"p99 < {goal:g} ms: {'met' if met else 'not met'}"
            p50s = ", ".join(f"{float(run['p50_ms']):g}" for run in runs)
            p99s = ", ".join(f"{float(run['p99_ms']):g}" for run in runs)
            lines.append(
                f"| {key.split(' @')[0]} | {name} | {fraction:.0%} "
                f"| {runs[0].get('rate') or ''} | {median(runs, 'msgs_per_s'):g} "
                f"| {p50s} | {p99s} "
                f"| {median(runs, 'p99_ms'):g} | {sum(int(r['errors']) for r in runs)} "
                f"| {verdict} |")
    if not lines:
        return ""
    return ("Open loop (rate asked in operations/s: posts of 10, or claims + deletes):\n\n"
            "| case | target | of own max | rate asked | msgs/s median | p50 ms per run "
            "| p99 ms per run | p99 median | errors | target |\n"
            "|---|---|---|---|---|---|---|---|---|---|\n" + "\n".join(lines))


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in
                Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    memory = next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines()
                  if line.startswith("MemTotal"))
    load = os.getloadavg()
    return (f"nproc {os.cpu_count()}, {int(memory) // 1024 // 1024} GiB, {cpu}, "
            f"Python {platform.python_version()}, load average at start "
            f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


@contextlib.contextmanager
def postgres_database() -> Iterator[str]:
    import psycopg
    from psycopg import sql

    name = f"zq_bench_{uuid.uuid4().hex[:12]}"
    admin = psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=10)
    admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        uri = urlunsplit(urlsplit(POSTGRES_URL)._replace(path=f"/{name}"))
        sh(sys.executable, "-m", "zq", "db", "upgrade", "--storage", uri, cwd=ROOT)
        yield uri
    finally:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                      .format(sql.Identifier(name)))
        admin.close()


def redis_keys(db: int, pattern: str = "*") -> set[bytes]:
    import redis

    client = redis.Redis.from_url(f"redis://{REDIS}/{db}")
    try:
        return set(client.scan_iter(match=pattern, count=1000))
    finally:
        client.close()


def remove_redis_keys(db: int, keys: set[bytes]) -> None:
    """Delete the keys this run wrote, never anything else."""
    import redis

    client = redis.Redis.from_url(f"redis://{REDIS}/{db}")
    batch = sorted(keys)
    for start in range(0, len(batch), 500):
        client.delete(*batch[start:start + 500])
    client.close()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="examples:\n"
               "  python -m benchmarks.zaqar_side_by_side --repeat 3 --duration 10 "
               "--out side-by-side.md\n"
               "  python -m benchmarks.zaqar_side_by_side --skip-zaqar --skip-scaling",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--venv", type=Path, default=Path("/tmp/zaqar-venv"),
                        help="Zaqar's virtualenv, installed there if missing "
                             "(default: %(default)s)")
    parser.add_argument("--workers", type=int, default=2,
                        help="worker processes of each server (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=4,
                        help="threads per worker (default: %(default)s)")
    parser.add_argument("--concurrency", type=int, default=8,
                        help="the generator's requests in flight (default: %(default)s)")
    parser.add_argument("--duration", type=float, default=10.0,
                        help="at most this many seconds per run (default: %(default)s)")
    parser.add_argument("--requests", type=int, default=20000,
                        help="at most this many requests per run (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=2,
                        help="runs of each case on each target, alternating the order "
                             "(default: %(default)s)")
    parser.add_argument("--zq-db", type=int, default=11,
                        help="Redis db of zq's keys (default: %(default)s)")
    parser.add_argument("--zaqar-db", type=int, default=12,
                        help="Redis db of Zaqar's keys (default: %(default)s)")
    parser.add_argument("--metadata-cache", type=float, default=0.0, metavar="SECONDS",
                        help="also run zq on PostgreSQL with [server] metadata_cache = "
                             "SECONDS (target zq-postgresql-cache); the Redis driver "
                             "versions metadata and needs no cache setting (default: 0, "
                             "no such run)")
    parser.add_argument("--skip-zaqar", action="store_true",
                        help="leave out Zaqar (neither installed nor started)")
    parser.add_argument("--skip-postgres", action="store_true",
                        help="leave out zq on PostgreSQL")
    parser.add_argument("--skip-rabbitmq", action="store_true",
                        help="leave out RabbitMQ (benchmarks/amqp_load.py)")
    parser.add_argument("--rabbitmq-url", default=RABBITMQ_URL,
                        help="the RabbitMQ to compare, on a loopback address; it is not "
                             "started here (default: %(default)s)")
    parser.add_argument("--delivery-limit", type=int, default=None,
                        help="RabbitMQ poison queue's x-delivery-limit (default: "
                             "amqp_load's, 2: three deliveries, as zq's _max_claim_count 3)")
    parser.add_argument("--cases", type=lambda text: set(text.split(",")), default=None,
                        metavar="WORKLOADS", help="only these workloads, a comma list "
                        "(e.g. post,claim-delete; default: all)")
    parser.add_argument("--open-loop-fractions", default=[0.5, 0.8], metavar="F,F",
                        type=lambda text: [float(f) for f in text.split(",") if f.strip()],
                        help="open-loop runs at each of these fractions of each zq's own "
                             "maximum rate; an empty list: none (default: 0.5,0.8)")
    parser.add_argument("--open-loop-fraction", type=float, default=None, metavar="F",
                        help="one fraction only (same as --open-loop-fractions F)")
    parser.add_argument("--skip-scaling", action="store_true",
                        help="leave out the scaling cases (benchmarks/scaling_http.py)")
    parser.add_argument("--scaling-sizes", default="1000,100000",
                        type=lambda text: [int(n) for n in text.split(",")],
                        help="claim on queues of these many messages; the first is the "
                             "base (default: %(default)s; add 1000000 for 1M)")
    parser.add_argument("--scaling-held", type=int, default=10000,
                        help="claim behind this many held messages (default: %(default)s)")
    parser.add_argument("--scaling-queues", type=int, default=10000,
                        help="queues in the listed project (default: %(default)s)")
    parser.add_argument("--scaling-rounds", type=int, default=200,
                        help="timed requests per scaling case (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=None, help="also write the table here")
    args = parser.parse_args(argv)
    if args.delivery_limit is not None and args.delivery_limit < 0:
        parser.error("--delivery-limit must not be negative")
    if args.open_loop_fraction is not None:
        args.open_loop_fractions = [args.open_loop_fraction]
    if not all(0 < fraction <= 1 for fraction in args.open_loop_fractions):
        parser.error("open-loop fractions must be more than 0 and at most 1")
    if min(args.scaling_sizes) < 10 or args.scaling_held < 0 or args.scaling_rounds < 1 \
            or args.scaling_queues <= scaling_http.queue_paging.PAGE:
        parser.error("--scaling-sizes must be at least 10 each, --scaling-rounds positive, "
                     "--scaling-queues more than 10")
    return args


def chosen(cases: list[tuple[str, int]], args: argparse.Namespace) -> list[tuple[str, int]]:
    return [case for case in cases if args.cases is None or case[0] in args.cases]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="zq-side-by-side-"))
    run_id = uuid.uuid4().hex[:8]
    zq_prefix = f"zqbench-{run_id}"
    header = [f"date: {time.strftime('%Y-%m-%d %H:%M:%S %z')}", f"machine: {machine()}",
              f"command: python -m benchmarks.zaqar_side_by_side {' '.join(argv or sys.argv[1:])}"]
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("ZQ_", "OS_"))}
    zq_server = [sys.executable, "-m", "zq", "serve", "--workers", str(args.workers)]
    zq_env = {**base_env, "ZQ_SERVER_THREADS": str(args.threads)}
    targets: dict[str, Target] = {}
    scaling_rows: list[dict] = []
    zq_uri = f"redis://{REDIS}/{args.zq_db}?prefix={zq_prefix}"
    zaqar_keys_before = redis_keys(args.zaqar_db)

    def add(name: str, command: list[str], env: dict[str, str], port: int,
            backend: Callable[[], list[int]] = list) -> None:
        targets[name] = Target(name, f"http://127.0.0.1:{port}", command, env,
                               backend=backend)

    port = free_port()
    add("zq", [*zq_server, "--port", str(port), "--storage", zq_uri], zq_env, port,
        redis_server_pids)
    if not args.skip_zaqar:
        version = ensure_zaqar(args.venv)
        home = scratch / "zaqar-home"
        (home / ".zaqar").mkdir(parents=True)
        (home / ".zaqar" / "zaqar.conf").write_text(
            ZAQAR_CONF.format(redis=REDIS, db=args.zaqar_db))
        port = free_port()
        add("zaqar", [str(args.venv / "bin" / "gunicorn"), "-w", str(args.workers),
                      "-k", "gthread", "--threads", str(args.threads), "--log-level", "warning",
                      "-b", f"127.0.0.1:{port}", "zaqar.transport.wsgi.app:app"],
            {**base_env, "HOME": str(home)}, port, redis_server_pids)
        header.append(f"Zaqar {version} under gunicorn gthread, Redis db {args.zaqar_db}")
    import granian

    port = free_port()
    add("minimal", [sys.executable, "-m", "granian", "--interface", "wsgi",
                    "--workers", str(args.workers), "--blocking-threads", str(args.threads),
                    "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning",
                    "benchmarks.minimal_app:app"], {**base_env, "PYTHONPATH": str(ROOT)}, port)
    header.append(f"zq on granian {granian.__version__}, {args.workers} workers x "
                  f"{args.threads} threads, Redis db {args.zq_db} prefix {zq_prefix}; "
                  f"loadgen concurrency {args.concurrency}, {args.duration:g} s or "
                  f"{args.requests} requests per run, {args.repeat} repeats")
    rabbit = None
    if not args.skip_rabbitmq:
        rabbit = rabbitmq_target(args)
        header.append(rabbit.about)
    print("\n".join(header), flush=True)

    try:
        with contextlib.ExitStack() as stack:
            for target in targets.values():
                stack.enter_context(running(target, scratch))
            order = [t for t in targets.values() if t.name != "minimal"]
            for repeat in range(args.repeat):
                for workload, batch in chosen(CASES, args):
                    for target in (order if repeat % 2 == 0 else order[::-1]):
                        target.results.setdefault(case_key(workload, batch), []).append(
                            loadgen(target, workload, batch, args))
                for workload, batch in chosen(MINIMAL_CASES, args):
                    minimal = targets["minimal"]
                    minimal.results.setdefault(case_key(workload, batch), []).append(
                        loadgen(minimal, workload, batch, args))
            open_loop(targets["zq"], args)
            if not args.skip_scaling:
                scaling_rows += scaling(targets["zq"], zq_uri, "zq on Redis", args)
        # The durable targets: zq on PostgreSQL (fsync, synchronous_commit on) and
        # RabbitMQ's quorum queues, alternating as the Redis targets do.
        with contextlib.ExitStack() as stack:
            pgs: list[Target] = []
            uri = ""
            if not args.skip_postgres:
                uri = stack.enter_context(postgres_database())
                variants = [("zq-postgresql", zq_env)]
                if args.metadata_cache > 0:  # SQL does not version metadata: the TTL cache
                    variants.append(("zq-postgresql-cache", {
                        **zq_env, "ZQ_SERVER_METADATA_CACHE": str(args.metadata_cache)}))
                for name, env in variants:
                    port = free_port()
                    pgs.append(Target(name, f"http://127.0.0.1:{port}",
                                      [*zq_server, "--port", str(port), "--storage", uri], env,
                                      backend=postgres_pids(uri), cases=POSTGRES_CASES))
                    targets[name] = pgs[-1]
            durable = pgs + ([rabbit] if rabbit else [])
            if rabbit:
                targets[rabbit.name] = rabbit
            for target in durable:
                stack.enter_context(running(target, scratch))
            cases = [case for case in chosen(CASES, args)
                     if any(case in target.cases for target in durable)]
            for repeat in range(args.repeat):
                for workload, batch in cases:
                    for target in (durable if repeat % 2 == 0 else durable[::-1]):
                        if (workload, batch) in target.cases:
                            target.results.setdefault(case_key(workload, batch), []).append(
                                loadgen(target, workload, batch, args))
            for pg in pgs:
                open_loop(pg, args)
            if pgs and not args.skip_scaling:
                scaling_rows += scaling(pgs[0], uri, "zq on PostgreSQL", args)
    finally:
        remove_redis_keys(args.zq_db, redis_keys(args.zq_db, f"{zq_prefix}:*"))
        if "zaqar" in targets:  # Zaqar has no key prefix: what was not there before
            remove_redis_keys(args.zaqar_db, redis_keys(args.zaqar_db) - zaqar_keys_before)
    report = "\n".join(header) + "\n\n" + table(targets) + "\n"
    if scaling_rows:
        report += "\nScaling (over HTTP, one request at a time):\n\n" + \
            scaling_http.table(scaling_rows) + "\n"
    print("\n" + report)
    if args.out:
        args.out.write_text(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
