"""Starting Spark: the import guard and a session tuned for a laptop or a cluster."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

INSTALL_HINT = "pip install 'zq[spark]'"


class SparkMissing(RuntimeError):
    """pyspark (or Java) is not available."""


def require_pyspark() -> None:
    """Raise SparkMissing with the install hint when pyspark cannot be imported."""
    try:
        import pyspark  # noqa: F401
    except ImportError as exc:
        raise SparkMissing(
            f"zq stats needs PySpark, which is not installed: {INSTALL_HINT} "
            "(and a Java 17+ runtime)."
        ) from exc


def spark_session(
    master: str | None = None,
    *,
    app_name: str = "zq-stats",
    conf: Mapping[str, str] | None = None,
    log: str | None = None,
) -> SparkSession:
    """The active session, or a new one.

    With ``log``, a JVM started here writes its own output (log4j, JVM
    warnings, Java stack traces) to that file instead of the terminal: it
    inherits the file as its standard error. A JVM that already runs
    (spark-submit, an earlier session) keeps its own.

    ``master`` None keeps whatever ``spark-submit`` set, else ``local[*]``.
    Local runs get few shuffle partitions (the default 200 makes a laptop
    spend its time scheduling empty tasks) and no UI; every run uses UTC so
    that days mean the same thing as the export's partitions.
    """
    require_pyspark()
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    # Under spark-submit the JVM exists first and hands its gateway port to
    # Python; its --master must win, so only choose one when run directly.
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
    if master or not submitted:
        builder = builder.master(master or "local[*]")
    local = (master or ("" if submitted else "local")).startswith("local")
    settings = {"spark.sql.session.timeZone": "UTC"}
    if local:
        settings.update({"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"})
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    quiet = log if not submitted else None
    try:
        with _stderr_to(quiet) if quiet is not None else nullcontext():
            session = builder.getOrCreate()
    except Exception as exc:  # Java missing or broken shows up here
        where = f" (Spark's log: {quiet})" if quiet is not None else ""
        raise SparkMissing(f"Spark did not start ({exc}){where}; is Java 17+ installed?"
                           ) from exc
    session.sparkContext.setLogLevel("WARN")
    if session.sparkContext.master.startswith("local") and not (
        conf and "spark.sql.shuffle.partitions" in conf
    ):
        session.conf.set("spark.sql.shuffle.partitions", "4")
    return session


@contextmanager
def _stderr_to(path: str) -> Iterator[None]:
    """File descriptor 2 points at ``path`` inside the block (a child started there keeps it)."""
    sys.stderr.flush()
    saved = os.dup(2)
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.dup2(target, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(target)
