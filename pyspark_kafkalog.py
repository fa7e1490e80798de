"""Registers kafkalog's PySpark data source in every Spark session, with no call needed.

Spark 4 imports each top-level module named ``pyspark_*`` found on the Python path of its workers when a
session first uses a Python data source, and registers its ``DefaultSource`` under the source's name, so
that ``spark.read.format("kafkalog").load(PATH)`` works wherever kafkalog is installed. Nothing here may
fail: an error while importing would break that lookup for every Python data source of the session.
"""
try:
    from kafkalog_cli.spark.datasource import KafkaLogDataSource as DefaultSource  # noqa: F401
except Exception:                     # noqa: BLE001 - no pyspark/pyarrow here: kafkalog's source is just absent
    pass
