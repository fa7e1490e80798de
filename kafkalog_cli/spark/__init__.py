"""The Spark pipeline: a PySpark data source (``kafkalog``) and the ``export`` and ``scan`` jobs.

Modules, in the direction of data:

  options.py     read options (topic globs, partitions, offset and time ranges, isolation) from strings
  plan.py        which byte ranges of which segments each Spark task reads (pure Python, no Spark)
  rows.py        one range of a segment -> Arrow record batches (pyarrow, no Spark)
  datasource.py  the Python Data Source ``kafkalog`` (Spark 4's ``pyspark.sql.datasource``)
  session.py     a SparkSession for ``--master``, quiet logging, the project shipped to executors
  jobs.py        export (read -> Parquet/JSON lines) and scan (verify distributed over segments)

pyspark is imported only inside this package, and only by ``datasource``, ``session`` and ``jobs``;
nothing here is imported by the rest of the CLI except the ``export`` and ``scan`` commands.

Use from PySpark::

    from kafkalog_cli.spark.datasource import register
    register(spark)
    df = spark.read.format("kafkalog").option("isolation", "read_committed").load("/var/lib/kafka/data")
"""
