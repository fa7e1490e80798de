"""The files an export task writes (spark/writer.py), without a JVM: what pyarrow reads back from them, and a
disk that fills while they are written.

These need pyarrow (the ``spark`` extra) but not Java; they are not marked ``spark``.
"""
from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed: pip install -e '.[spark]'")
pq = pytest.importorskip("pyarrow.parquet")

from kafkalog_cli.spark.writer import TableWriter  # noqa: E402


def _incompressible(rows: int, size: int) -> pa.RecordBatch:
    values = [os.urandom(size) for _ in range(rows)]
    return pa.RecordBatch.from_arrays([pa.array(["orders"] * rows, pa.string()), pa.array([0] * rows, pa.int32()),
                                       pa.array(range(rows), pa.int64()), pa.array(values, pa.binary())],
                                      names=["topic", "partition", "offset", "value"])


def test_a_full_disk_names_the_temporary_file_in_the_systems_words_and_leaves_nothing(tmp_path):
    """pyarrow writes a Parquet file through its own handle: its ENOSPC (``Error writing bytes to file.
    Detail: [errno 28] ...``, no file named) reaches the task as Python's ``OSError`` for the file, which the
    driver prints as ``FILE: No space left on device``; the task's abandon leaves no temporary file."""
    from mounts import tmpfs
    with tmpfs(tmp_path / "small", "256k") as small:
        w = TableWriter(str(small / "out"), "parquet", ("topic", "partition"), 1 << 30, "part-x-00000")
        with pytest.raises(OSError) as e:
            try:
                for _ in range(4):
                    w.write(_incompressible(64, 4096))
                w.close()
            except BaseException:
                w.abandon()               # what run_task does
                raise
        assert (e.value.errno, e.value.strerror) == (errno.ENOSPC, "No space left on device")
        name = Path(e.value.filename).name
        assert name.startswith(".part-x-00000-0001.parquet.") and name.endswith(".tmp"), name
        assert [p for p in (small / "out").rglob("*") if not p.is_dir()] == []


def test_a_disk_already_full_when_a_file_starts_leaves_no_temporary_file(tmp_path):
    """pyarrow writes the Parquet magic when its writer is made, straight to the file (nothing buffered in
    Python any more): on a full disk that first write fails, before the file is one the task abandons. Found
    by this test: the empty temporary file stayed behind."""
    from mounts import fill, tmpfs
    with tmpfs(tmp_path / "small", "256k") as small:
        (small / "out" / "topic=orders" / "partition=0").mkdir(parents=True)
        fill(small)
        w = TableWriter(str(small / "out"), "parquet", ("topic", "partition"), 1 << 30, "part-x-00000")
        with pytest.raises(OSError) as e:
            try:
                w.write(_incompressible(4, 16))
                w.close()
            except BaseException:
                w.abandon()
                raise
        assert (e.value.errno, e.value.strerror) == (errno.ENOSPC, "No space left on device")
        assert [p for p in (small / "out").rglob("*") if not p.is_dir()] == []
