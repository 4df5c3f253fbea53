"""Where an export writes: a local directory or a pyarrow filesystem.

Every file, data or state, is written whole-or-not-at-all:

- local directory: a temporary file (a name starting with ``.``, which
  Parquet readers ignore) is written and fsynced, renamed over the final
  name, and the directory is fsynced, so the rename itself survives a crash;
- HDFS and other pyarrow filesystems with an atomic rename: temporary file,
  then rename (pyarrow exposes no fsync; closing an HDFS file flushes it to
  the datanodes);
- S3 (``s3://`` or Spark's ``s3a://``): one PUT per file, which S3 makes
  visible whole or not at all; there is no rename to rely on.
"""

from __future__ import annotations

import os
import uuid
from abc import ABC, abstractmethod
from pathlib import Path
from urllib.parse import urlsplit

import pyarrow.fs as pafs


class Sink(ABC):
    """A dataset root that files are written to atomically."""

    uri: str  # the root as the user gave it (what Spark reads)

    @abstractmethod
    def write_atomic(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path`` (relative to the root) durably, all or nothing."""

    @abstractmethod
    def read(self, path: str) -> bytes | None:
        """The content of ``path``, or None when it does not exist."""


class LocalSink(Sink):
    """A local directory, with fsync of files and directories."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.uri = str(root)

    def write_atomic(self, path: str, data: bytes) -> None:
        final = self.root / path
        self._make_dirs(final.parent)
        temp = final.parent / f".{final.name}.{uuid.uuid4().hex}.tmp"
        try:
            with open(temp, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(temp, final)
        finally:
            temp.unlink(missing_ok=True)
        _fsync_dir(final.parent)

    def read(self, path: str) -> bytes | None:
        try:
            return (self.root / path).read_bytes()
        except FileNotFoundError:
            return None

    def _make_dirs(self, directory: Path) -> None:
        # A new directory is durable only once its parent is fsynced too.
        missing = []
        current = directory
        while not current.exists():
            missing.append(current)
            current = current.parent
        for new in reversed(missing):
            new.mkdir(exist_ok=True)
            _fsync_dir(new.parent)


class ArrowSink(Sink):
    """Any pyarrow filesystem (HDFS, S3, ...)."""

    def __init__(self, filesystem: pafs.FileSystem, root: str, uri: str) -> None:
        self.fs = filesystem
        self.root = root.rstrip("/")
        self.uri = uri
        # S3 has no atomic rename, but a single PUT is atomic.
        self._rename = filesystem.type_name != "s3"

    def write_atomic(self, path: str, data: bytes) -> None:
        final = f"{self.root}/{path}"
        parent = final.rsplit("/", 1)[0]
        self.fs.create_dir(parent, recursive=True)
        if not self._rename:
            with self.fs.open_output_stream(final) as out:
                out.write(data)
            return
        temp = f"{parent}/.{final.rsplit('/', 1)[1]}.{uuid.uuid4().hex}.tmp"
        with self.fs.open_output_stream(temp) as out:
            out.write(data)
        self.fs.move(temp, final)

    def read(self, path: str) -> bytes | None:
        try:
            with self.fs.open_input_stream(f"{self.root}/{path}") as fh:
                return fh.read()
        except FileNotFoundError:
            return None


def open_sink(uri: str) -> Sink:
    """The sink for a dataset root: a local path, ``file://``, ``s3a://``, ``hdfs://``..."""
    scheme = urlsplit(uri).scheme.lower()
    if scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt"):
        return LocalSink(urlsplit(uri).path if scheme == "file" else uri)
    # Spark spells S3 "s3a"; pyarrow knows it as "s3".
    arrow_uri = "s3" + uri[len(scheme):] if scheme in ("s3a", "s3n") else uri
    try:
        filesystem, root = pafs.FileSystem.from_uri(arrow_uri)
    except Exception as exc:  # pyarrow raises ArrowInvalid / OSError by scheme
        raise ValueError(f"Cannot open {uri!r} with pyarrow: {exc}") from exc
    return ArrowSink(filesystem, root, uri)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
