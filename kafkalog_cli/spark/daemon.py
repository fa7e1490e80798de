"""Spark's Python daemon for the sessions kafkalog starts on a local master, with the task modules imported
once before it forks its workers (``spark.python.daemon.module``; run as ``python -m``).

Each Python worker of a local executor is forked from one daemon process. pyspark's own daemon imports its
worker module and everything a task needs after the fork, in every worker: pyspark.worker, pyarrow, pandas
(which pyarrow imports the first time it converts an array) and kafkalog's record path, about a second of
CPU per worker on this kind of machine. Imported here, before the fork, the workers share them: the imports
are paid once, and their pages once. Nothing here starts a thread of Python's, runs a pyarrow computation
or opens a file before the fork (numpy's and jemalloc's own threads are handled across fork by their
libraries, as with any forking server that imports them); the daemon itself is pyspark's
(``pyspark.daemon.manager``).

Used only where the executors run this installation (local masters): a cluster's executors run Spark's
default daemon.
"""
from __future__ import annotations

import importlib

#: what every export or scan task imports (``bootstrap.probe`` imports the same, as the warm-up)
PRELOAD = ("pyspark.worker", "numpy", "pyarrow", "pyarrow.parquet", "pandas", "kafkalog_formats.native",
           "kafkalog_cli.engine.verify_segment", "kafkalog_cli.spark.export", "kafkalog_cli.spark.rows",
           "kafkalog_cli.spark.writer", "kafkalog_cli.spark.jobs")


def preload() -> None:
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:              # a worker then imports it (or says why it cannot) as it would anyway
            pass
    from . import bootstrap
    bootstrap.ensure(None)               # where kafkalog comes from and its record path, for every worker


def main() -> None:
    preload()
    from pyspark.daemon import manager
    manager()


if __name__ == "__main__":
    main()
