"""``kafkalog export`` from and to object storage: a real S3 API server on 127.0.0.1 (moto's server mode)
and pyarrow's S3 filesystem. A fleet of two log directories and a damaged partition is uploaded, listed,
read by ranged GETs (segments split at offset-index entries into several tasks' ranges) and exported to
another prefix; the rows read back from S3 are dump-log's records of the same files, the problems of the
damaged segment are ``_errors`` rows naming the S3 objects, and an existing output prefix is refused.
The export runs as its own process with the AWS variables in its environment (executors inherit them in
local mode; README: what to pass on a cluster).
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys

import pytest

from conftest import FIXTURES, assert_same_records, dump_log_records, table_records

pytestmark = pytest.mark.spark

LOGDIR = FIXTURES / "logdir"
DAMAGED = FIXTURES / "damaged" / "flipped-crc-byte"


class _Requests(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture(scope="module")
def s3():
    pytest.importorskip("moto", reason="moto (S3 API server) is not installed: pip install -e '.[test]'")
    from moto.server import ThreadedMotoServer
    requests = _Requests()
    wz = logging.getLogger("werkzeug")
    wz.addHandler(requests)
    wz.propagate = False
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        port = server.get_host_and_port()[1]
        env = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1",
               "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_EC2_METADATA_DISABLED": "true"}
        import pyarrow.fs as pfs
        fs = pfs.S3FileSystem(endpoint_override=f"127.0.0.1:{port}", scheme="http", access_key="test",
                              secret_key="test", region="us-east-1", allow_bucket_creation=True)
        fs.create_dir("fleet")
        yield env, fs, requests
    finally:
        server.stop()
        wz.removeHandler(requests)


def upload_fleet(fs, tmp_path):
    """Two brokers' log directories and a damaged partition, locally (for dump-log) and on S3."""
    import pyarrow.fs as pfs
    local = tmp_path / "fleet"
    shutil.copytree(LOGDIR, local / "broker-1")
    shutil.copytree(LOGDIR, local / "broker-2")
    shutil.copytree(DAMAGED, local / "damaged")
    pfs.copy_files(str(local), "fleet/backups", source_filesystem=pfs.LocalFileSystem(), destination_filesystem=fs)
    return local


def kafkalog(env: dict, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkalog_cli", *args], env=dict(os.environ, **env),
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)


@pytest.mark.slow        # 20-35 s with moto's server (docs/testing.md: the default suite in minutes)
def test_export_from_s3_to_s3(s3, tmp_path):
    env, fs, requests = s3
    local = upload_fleet(fs, tmp_path)
    plan = kafkalog(env, "export", "s3a://fleet/backups", "--dry-run", "--split-bytes", "4096", "--format", "json")
    assert plan.returncode == 0, plan.stderr
    ranges = [json.loads(line) for line in plan.stdout.splitlines() if json.loads(line)["type"] == "range"]
    assert any(r["start"] > 0 for r in ranges)             # segments cut at checked index entries
    assert {r["cluster_id"] for r in ranges} - {None}      # meta.properties read from the bucket
    requests.lines.clear()
    r = kafkalog(env, "export", "s3a://fleet/backups", "-o", "s3://fleet/export", "--split-bytes", "4096",
                 "--format", "json")
    assert r.returncode == 1, r.stderr[-3000:]             # the damaged partition's bad CRC: problems found
    assert "Traceback" not in r.stderr
    summary = json.loads(r.stdout.splitlines()[0])
    assert summary["problems"] >= 1 and summary["ranges"] == len(ranges)
    assert any(" 206 " in line or '" 206' in line for line in requests.lines if ".log" in line), \
        "no ranged GET of a segment"

    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    table = ds.dataset("fleet/export", filesystem=fs, format="parquet", partitioning="hive",
                       ignore_prefixes=["_", "."]).to_table()
    assert table.column("segment")[0].as_py().startswith("s3a://fleet/backups/")
    local_segments = pc.replace_substring(table.column("segment"), "s3a://fleet/backups", str(local))
    table = table.set_column(table.schema.get_field_index("segment"), "segment", local_segments)
    got = table_records(table)
    want = dump_log_records(str(local / "broker-1"), str(local / "broker-2"))
    assert_same_records([g for g in got if "/damaged/" not in g[0]], want)
    # the damaged partition: dump-log prints the records of the batch whose CRC fails, the export leaves
    # them out and says so in an _errors row naming the S3 object
    errors = ds.dataset("fleet/export/_errors", filesystem=fs, format="parquet").to_table().to_pylist()
    bad = [e for e in errors if e["kind"] == "crc_mismatch"]
    assert bad and all(e["file"].startswith("s3a://fleet/backups/damaged/") for e in bad)
    damaged = [g for g in got if "/damaged/" in g[0]]
    assert len(damaged) == len(dump_log_records(str(local / "damaged"))) - sum(e["records"] for e in bad)
    import pyarrow.fs as pfs
    names = {f.path.rpartition("/")[2] for f in fs.get_file_info(pfs.FileSelector("fleet/export"))}
    assert {"_SUCCESS", "_kafkalog_manifest.json"} <= names

    again = kafkalog(env, "export", "s3a://fleet/backups/broker-1", "-o", "s3://fleet/export")
    assert again.returncode == 2 and "already holds objects" in again.stderr


DS_PROGRAM = """
import json, sys
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.sql.python.filterPushdown.enabled", "true").getOrCreate())
spark.sparkContext.setLogLevel("OFF")
from kafkalog_cli.spark.datasource import register
register(spark)
df = spark.read.format("kafkalog").option("subscribe", "orders").option("splitBytes", "4096").load(sys.argv[1])
rows = sorted((r.segment, r.offset) for r in df.select("segment", "offset").collect())
errors = spark.read.format("kafkalog").option("table", "errors").load(sys.argv[2]).collect()
print(json.dumps({"rows": rows, "errors": sorted({e.file for e in errors})}))
spark.stop()
"""


@pytest.mark.slow
def test_data_source_reads_s3(s3, tmp_path):
    """The data source reads the same objects (a PySpark program of its own: the AWS variables must be in
    its environment before Spark starts its Python workers)."""
    env, fs, _requests = s3
    import pyarrow.fs as pfs
    if fs.get_file_info("fleet/backups").type != pfs.FileType.Directory:
        upload_fleet(fs, tmp_path)
    r = subprocess.run([sys.executable, "-c", DS_PROGRAM, "s3a://fleet/backups/broker-1",
                        "s3a://fleet/backups/damaged"], env=dict(os.environ, **env, SPARK_LOCAL_IP="127.0.0.1"),
                       capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert r.returncode == 0, "\n".join(ln for ln in r.stderr.splitlines() if not ln.lstrip().startswith("at "))[-4000:]
    got = json.loads(r.stdout.splitlines()[-1])
    want = sorted(("s3a://fleet/backups/broker-1" + seg[len(str(LOGDIR)):], off)      # broker-1 is LOGDIR's copy
                  for seg, off, _d in dump_log_records(*(str(p) for p in sorted(LOGDIR.glob("orders-*")))))
    assert [tuple(x) for x in got["rows"]] == want and want
    assert got["errors"] and all(f.startswith("s3a://fleet/backups/damaged/") for f in got["errors"])


SECRET = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"


@pytest.mark.parametrize("args", [
    ["export", f"s3://AKIAIOSFODNN7EXAMPLE:{SECRET}@fleet/backups", "--dry-run"],
    ["export", f"s3a://AKIAIOSFODNN7EXAMPLE:{SECRET}@fleet/backups", "-o", "out"],
    ["export", str(LOGDIR), "-o", f"s3://AKIAIOSFODNN7EXAMPLE:{SECRET}@lake/kafka"],
    ["export", f"s3://fleet/backups?endpoint_override=127.0.0.1:9&secret_key={SECRET}", "--dry-run"],
])
def test_credentials_in_a_uri_are_refused_without_printing_them(args, tmp_path):
    """pyarrow accepts ``s3://KEY:SECRET@bucket/...``; export crashed on it with a 30-line traceback that
    printed the secret. Now: a usage error naming the URI without its credentials and saying where they go;
    nothing is contacted and nothing written."""
    args = [str(tmp_path / "out") if a == "out" else a for a in args]
    r = kafkalog({"AWS_EC2_METADATA_DISABLED": "true"}, *args)
    assert r.returncode == 2, r.stderr[-3000:]
    assert "Traceback" not in r.stderr
    assert SECRET not in r.stdout + r.stderr and "AKIAIOSFODNN7EXAMPLE" not in r.stdout + r.stderr
    assert "credentials in the URI are not accepted" in r.stderr and "AWS_SECRET_ACCESS_KEY" in r.stderr
    assert "***" in r.stderr
    assert not (tmp_path / "out").exists()


def test_the_data_source_refuses_credentials_in_a_uri_too():
    from kafkalog_cli.spark import storage
    with pytest.raises(storage.StorageError) as e:
        storage.resolve(f"s3://AKIAIOSFODNN7EXAMPLE:{SECRET}@fleet/backups")
    assert SECRET not in str(e.value) and "s3://***@fleet/backups" in str(e.value)
    # a container@account name (Azure) is not a credential
    assert storage.credentials_problem("abfss://data@account.dfs.core.windows.net/kafka") is None
    assert storage.credentials_problem("s3://fleet/backups?endpoint_override=minio:9000&scheme=http") is None
