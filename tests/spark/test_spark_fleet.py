"""``kafkalog export`` and the data source on a generated fleet (tests/fleet.py: several brokers' log
directories written by kafkalog's own writer, every codec), as a data engineer uses them: damage that
must never be lost silently, filters Spark pushes down, replicas, incremental runs, file layout and
decoders. Expected rows come from what the generator wrote (``Fleet.batches``), not from the reader.
"""
from __future__ import annotations

import json
import random
import shutil
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, ctrl_c_default, run_cli
from fleet import (CODECS, T0, batch_bytes, break_length, flip_crc, garbage_payload, make_fleet,
                   partition_batches, tear_tail)

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """3 log directories x 2 partitions, 3000 records each, 64 KiB segments, codecs none .. zstd."""
    root = tmp_path_factory.mktemp("fleet") / "fleet"
    return make_fleet(root, brokers=3, partitions_per_broker=2, records_per_partition=3000, segment_bytes=64 * 1024)


def copy_fleet(fleet, dest: Path):
    """A copy of the fleet whose batches name the copied files."""
    from dataclasses import replace
    shutil.copytree(fleet.root, dest)
    out = type(fleet)(dest, [dest / d.name for d in fleet.log_dirs])
    out.batches = [replace(b, segment=dest / b.segment.relative_to(fleet.root)) for b in fleet.batches]
    return out


def offsets_of(batches) -> set:
    return {(b.topic, b.partition, o) for b in batches for o in range(b.base_offset, b.base_offset + b.count)}


def read_table(out: Path, sub: str = ""):
    """An export's table read back by pyarrow (hive directories typed as exported)."""
    import pyarrow as pa
    import pyarrow.dataset as ds
    fields = [("topic", pa.string()), ("partition", pa.int32())]
    if list(out.glob(f"{sub}*/*/date=*")):
        fields.append(("date", pa.string()))
    part = ds.partitioning(pa.schema(fields), flavor="hive") if not sub else None
    return ds.dataset(str(out / sub) if sub else str(out), format="parquet", partitioning=part,
                      ignore_prefixes=["_", "."]).to_table()


def keys(table) -> list:
    return list(zip(table.column("topic").to_pylist(), table.column("partition").to_pylist(),
                    table.column("offset").to_pylist()))


def damage(f) -> dict:
    """The four kinds of damage of the issue, each in another partition: a batch whose CRC fails, a batch
    length running past the file, garbage in an lz4 payload (CRC fixed: it passes its checksum), a torn
    tail. Returns the damaged batches by kind."""
    def batches(codec: str, segment_index: int):
        segs = sorted({b.segment for b in f.batches if b.codec == codec})
        seg = segs[segment_index]
        return [b for b in f.batches if b.segment == seg]
    crc = flip_crc(batches("none", 0)[3])
    bs = batches("gzip", 1)
    length = break_length(bs[len(bs) // 2])
    lz4 = garbage_payload(batches("lz4", 0)[5])
    seg = sorted({b.segment for b in f.batches if b.codec == "snappy"})[-1]
    torn_view = tear_tail(seg)
    torn = next(b for b in f.batches if b.segment == seg and b.position == torn_view.position)
    return {"crc": crc, "length": length, "lz4": lz4, "torn": torn}


def test_a_damaged_fleet_loses_nothing_silently(spark, fleet, tmp_path):
    """The issue's damaged fleet: export exits 1 and prints the count; every problem is a row of _errors
    with its file and position; the bad-CRC batch's rows are not among the exported rows; every other
    record is exported; the rows and the errors do not depend on --split-bytes."""
    f = copy_fleet(fleet, tmp_path / "fleet")
    hurt = damage(f)
    out = tmp_path / "out"
    r = run_cli("export", str(f.root), "-o", str(out))
    assert r.code == 1, r.err
    errors = read_table(out, "_errors").to_pylist()
    by_kind = {}
    for e in errors:
        by_kind.setdefault((e["kind"], e["severity"]), []).append(e)
    n_errors = sum(e["severity"] == "error" for e in errors)
    n_warnings = len(errors) - n_errors
    assert f"{n_errors} problems, {n_warnings} warning" in r.out and f"{out}/_errors" in r.out

    [crc] = by_kind[("crc_mismatch", "error")]
    assert (crc["file"], crc["position"], crc["offset"], crc["records"]) == (
        str(hurt["crc"].segment), hurt["crc"].position, hurt["crc"].base_offset, hurt["crc"].count)
    [lz4] = [e for e in errors if e["file"] == str(hurt["lz4"].segment) and e["severity"] == "error"]
    assert lz4["position"] == hurt["lz4"].position and "lz4" in lz4["message"] and lz4["records"] == hurt["lz4"].count
    [length] = [e for e in errors if e["file"] == str(hurt["length"].segment) and e["severity"] == "error"]
    assert length["position"] == hurt["length"].position and length["bytes"] > 0
    resumed = length["position"] + length["bytes"]
    in_seg = [b for b in f.batches if b.segment == hurt["length"].segment]
    assert resumed in {b.position for b in in_seg} and resumed > hurt["length"].position
    [torn] = [e for e in errors if e["file"] == str(hurt["torn"].segment) and e["severity"] == "error"]
    assert torn["kind"] == "trailing_bytes" and torn["position"] == hurt["torn"].position
    assert n_errors == 4

    lost = [hurt["crc"], hurt["lz4"], hurt["torn"]]
    lost += [b for b in in_seg if hurt["length"].position <= b.position < resumed]
    got = keys(read_table(out))
    assert len(got) == len(set(got))
    assert set(got) == offsets_of(f.batches) - offsets_of(lost)
    assert not set(got) & offsets_of([hurt["crc"]])
    summary_lost = sum(b.count for b in (hurt["crc"], hurt["lz4"]))
    assert f"{summary_lost:,} records and " in r.out

    out2 = tmp_path / "out-small-splits"
    r2 = run_cli("export", str(f.root), "-o", str(out2), "--split-bytes", "4096", "--format", "json")
    assert r2.code == 1
    summary = json.loads(r2.out.splitlines()[0])
    assert summary["ranges"] > summary["segments"]        # segments really were cut
    assert sorted(keys(read_table(out2))) == sorted(got)

    def rows(t):
        return sorted(json.dumps(e, sort_keys=True) for e in t)
    a, b = rows(read_table(out2, "_errors").to_pylist()), rows(errors)
    assert a == b, (set(a) - set(b), set(b) - set(a))


def test_on_error_fail_and_quarantine(spark, fleet, tmp_path):
    f = copy_fleet(fleet, tmp_path / "fleet")
    seg = sorted({b.segment for b in f.batches if b.codec == "zstd"})[0]
    bad = flip_crc([b for b in f.batches if b.segment == seg][2])
    r = run_cli("export", str(f.root), "-o", str(tmp_path / "failed"), "--on-error", "fail")
    assert r.code == 1 and not (tmp_path / "failed").exists()
    assert "nothing was written" in r.out and f"position {bad.position}" in r.err and "crc_mismatch" in r.err
    assert [p.name for p in tmp_path.iterdir()] == ["fleet"]      # no staging left behind

    out = tmp_path / "q"
    r = run_cli("export", str(f.root), "-o", str(out), "--on-error", "quarantine")
    assert r.code == 1
    q = read_table(out, "_quarantine")
    assert sorted(q.column("offset").to_pylist()) == list(range(bad.base_offset, bad.base_offset + bad.count))
    assert set(q.column("problem").to_pylist()) == {"crc_mismatch"}
    assert not set(keys(read_table(out))) & offsets_of([bad])


def test_pushdown_pruning_and_the_source_by_name(spark, fleet):
    """``spark.read.format("kafkalog")`` works by name, in a session where nobody called ``register`` (a
    new session of the suite's context: sources registered by hand are per session, those Spark finds
    in installed ``pyspark_*`` modules are in every session), with the pushdown setting users put in
    their own sessions (tests/spark/conftest.py). Conditions on topic, partition, offset and timestamp are
    pushed down: the scan produces only the matching rows (Spark's numOutputRows of the source node). Only
    the columns named with the ``columns`` option are built."""
    spark = spark.newSession()
    df = spark.read.format("kafkalog").load(str(fleet.root))
    q = df.where("topic = 'topic-0' and partition in (1, 2) and offset > 2500 and "
                 "timestamp >= timestamp'2023-11-14 22:13:45'").select("offset", "value")
    rows = q.collect()
    want = {(b.topic, b.partition, o) for b in fleet.batches for o in range(b.base_offset, b.base_offset + b.count)
            if b.topic == "topic-0" and b.partition in (1, 2) and o > 2500 and T0 + o * 10 >= T0 + 25_000}
    assert sorted(r.offset for r in rows) == sorted(o for _t, _p, o in want) and rows
    scan = _scan_metrics(q)
    assert scan["numOutputRows"] == len(want)

    # pruning: Spark checks every Arrow batch a Python source returns against the scan's schema, field for
    # field, so a scan of two columns proves the reader built those two only
    narrow = (spark.read.format("kafkalog").option("columns", "topic,offset").load(str(fleet.root))
              .where("topic = 'topic-1'"))
    assert narrow.count() == 6000
    names, metrics = _scan(narrow, collect=True)
    assert names == ["topic", "offset"] and metrics["numOutputRows"] == 6000
    full_names, _ = _scan(spark.read.format("kafkalog").load(str(fleet.root)).select("offset"), collect=True)
    assert len(full_names) == 20            # without the option, every column (the API names none)


def _scan_metrics(df, collect: bool = False) -> dict:
    return _scan(df, collect)[1]


def _scan(df, collect: bool = False) -> tuple[list, dict]:
    """The output columns and the metrics of the kafkalog scan node of ``df``'s executed plan (after
    running it)."""
    if collect:
        df.collect()
    plan = df._jdf.queryExecution().executedPlan()
    todo = [plan]
    while todo:
        p = todo.pop()
        if "kafkalog" in p.nodeName():
            it = p.metrics().iterator()
            out = {}
            while it.hasNext():
                kv = it.next()
                out[kv._1()] = kv._2().value()
            attrs = p.output()
            return [attrs.apply(i).name() for i in range(attrs.size())], out
        ch = p.children()
        todo.extend(ch.apply(i) for i in range(ch.size()))
    raise AssertionError(f"no kafkalog scan in {plan.toString()}")


def _replica(root: Path, node: int, cluster: str = "c1") -> Path:
    d = root / f"{cluster}-broker-{node}"
    d.mkdir(parents=True)
    (d / "meta.properties").write_text(f"version=1\nnode.id={node}\ncluster.id={cluster}\n")
    return d


def _write(pdir: Path, batches) -> None:
    from kafkalog_cli.repair.log_writer import PartitionWriter
    w = PartitionWriter(pdir, segment_bytes=16 * 1024, index_interval_bytes=2048)
    for data, _base, _count in batches:
        w.append(data)
    w.close()


def test_dedupe_replicas_prefers_a_valid_batch_then_the_higher_leader_epoch(spark, tmp_path):
    """Two replicas of events-0: 400 records in common (epoch 0), then each its own 200 records at the same
    offsets (a leader at epoch 0 wrote snappy batches the followers never got; the new leader, epoch 1,
    wrote uncompressed ones). One common batch's CRC fails in each copy. Kafka keeps the epoch-1 copy; a
    batch whose CRC fails is taken from the other copy. Every offset comes out once."""
    root = tmp_path / "fleet"
    b0, b1 = _replica(root, 0), _replica(root, 1)
    common = partition_batches(random.Random(1), 400, CODECS["none"])
    old = partition_batches(random.Random(2), 200, CODECS["snappy"], leader_epoch=0, first_offset=400)
    new = partition_batches(random.Random(3), 200, CODECS["none"], leader_epoch=1, first_offset=400)
    _write(b0 / "events-0", common + old)
    _write(b1 / "events-0", common + new)
    _write(b0 / "solo-0", partition_batches(random.Random(4), 100, CODECS["gzip"]))
    from fleet import _describe
    d0 = _describe(b0 / "events-0", "c1", 0, "events", 0, "none")
    d1 = _describe(b1 / "events-0", "c1", 1, "events", 0, "none")
    bad0, bad1 = flip_crc(d0[2]), flip_crc(d1[5])
    assert bad0.base_offset + bad0.count <= 400 and bad1.base_offset + bad1.count <= 400   # in the common part
    out = tmp_path / "out"
    r = run_cli("export", str(root), "-o", str(out), "--dedupe-replicas", "--format", "json")
    assert r.code == 0, r.err                       # every offset was exported from a valid copy
    t = read_table(out)
    got = keys(t)
    assert len(got) == len(set(got)) == 600 + 100
    rows = {(tp, p, o): (ld, ep, codec) for (tp, p, o), ld, ep, codec in zip(
        got, t.column("log_dir").to_pylist(), t.column("partition_leader_epoch").to_pylist(),
        t.column("codec").to_pylist())}
    for o in range(400, 600):
        assert rows[("events", 0, o)] == (str(b1), 1, "none")
    for o in range(bad0.base_offset, bad0.base_offset + bad0.count):
        assert rows[("events", 0, o)][0] == str(b1)
    for o in range(bad1.base_offset, bad1.base_offset + bad1.count):
        assert rows[("events", 0, o)][0] == str(b0)
    summary = json.loads(r.out.splitlines()[0])
    assert summary["problems"] == 0 and summary["warnings"] >= 2
    errors = [e for e in read_table(out, "_errors").to_pylist() if e["kind"] == "crc_mismatch"]
    assert sorted((e["file"], e["position"], e["severity"]) for e in errors) == sorted(
        [(str(bad0.segment), bad0.position, "warning"), (str(bad1.segment), bad1.position, "warning")])
    plain = tmp_path / "plain"
    assert run_cli("export", str(root), "-o", str(plain)).code == 1    # without dedupe: both copies, 2 bad CRCs
    assert len(keys(read_table(plain))) == 2 * 600 + 100 - bad0.count - bad1.count


def test_append_exports_only_what_is_new_and_is_idempotent(spark, fleet, tmp_path):
    f = copy_fleet(fleet, tmp_path / "fleet")
    out = tmp_path / "out"
    r = run_cli("export", str(f.root), "-o", str(out), "--mode", "append", "--format", "json")
    assert r.code == 0, r.err
    assert json.loads(r.out.splitlines()[0])["rows"] == f.records
    files = sorted(p.relative_to(out) for p in out.rglob("*.parquet"))

    r = run_cli("export", str(f.root), "-o", str(out), "--mode", "append")
    assert r.code == 0 and r.out.startswith("nothing new to export")
    assert sorted(p.relative_to(out) for p in out.rglob("*.parquet")) == files

    # the active segment of one partition grows by a batch; a new partition appears
    last = max((b for b in f.batches if (b.topic, b.partition) == ("topic-0", 0)), key=lambda b: b.base_offset)
    nxt = last.base_offset + last.count
    recs = [(i, i * 10, b"k%d" % i, b"grown %d" % i, ()) for i in range(7)]
    with open(last.segment, "ab") as fh:
        fh.write(batch_bytes(nxt, T0 + nxt * 10, recs))
    _write(f.log_dirs[1] / "late-0", partition_batches(random.Random(9), 50, CODECS["lz4"]))
    r = run_cli("export", str(f.root), "-o", str(out), "--mode", "append", "--format", "json")
    assert r.code == 0, r.err
    assert json.loads(r.out.splitlines()[0])["rows"] == 7 + 50
    got = keys(read_table(out))
    assert len(got) == len(set(got)) == f.records + 57
    assert {("topic-0", 0, nxt + i) for i in range(7)} <= set(got)
    manifest = json.loads((out / "_kafkalog_manifest.json").read_text())
    assert manifest["segments"][str(last.segment)]["through"] == last.segment.stat().st_size
    r = run_cli("export", str(f.root), "-o", str(out), "--mode", "append")
    assert r.code == 0 and r.out.startswith("nothing new to export")


def test_partitioned_by_date_with_files_of_the_target_size(spark, fleet, tmp_path):
    root = tmp_path / "fleet"
    shutil.copytree(fleet.root, root)
    day_ms = 86_400_000
    batches = [(batch_bytes(i * 10, T0 + i * day_ms // 3, [(k, k, b"k", b"v" * 50, ()) for k in range(10)]), i * 10, 10)
               for i in range(12)]
    _write(root / "cluster-a-broker-0" / "days-0", batches)
    out = tmp_path / "out"
    target = 64 * 1024
    r = run_cli("export", str(root), "-o", str(out), "--partition-by", "topic,partition,date",
                "--target-file-size", "64K")
    assert r.code == 0, r.err
    t = read_table(out)
    assert len(t) == fleet.records + 120
    import datetime
    for row in t.select(["timestamp", "date"]).to_pylist():
        assert row["date"] == row["timestamp"].astimezone(datetime.timezone.utc).date().isoformat()
    assert sorted({p.name for p in (out / "topic=days" / "partition=0").iterdir()}) == [
        "date=2023-11-14", "date=2023-11-15", "date=2023-11-16", "date=2023-11-17", "date=2023-11-18"]
    files = list(out.glob("topic=topic-*/partition=*/date=*/*.parquet"))
    per_dir: dict = {}
    for p in files:
        assert p.stat().st_size <= target * 1.2, (p, p.stat().st_size)
        per_dir.setdefault(p.parent, []).append(p.stat().st_size)
    assert all(len(v) >= sum(v) // target for v in per_dir.values())
    assert max(len(v) for v in per_dir.values()) > 2        # big partitions really were rolled


def test_decoders_give_dump_logs_text(spark, tmp_path):
    """--decoder auto: Kafka's internal topics decoded as dump-log decodes them (JSON), other topics as
    text; --value-decoder hex as dump-log's hex."""
    logdir = FIXTURES / "logdir"
    out = tmp_path / "out"
    r = run_cli("export", str(logdir / "__consumer_offsets-0"), str(logdir / "__transaction_state-0"),
                str(logdir / "orders-0"), "-o", str(out), "--decoder", "auto")
    assert r.code == 0, r.err
    t = read_table(out).to_pylist()
    got = {(Path(x["segment"]).parent.name, x["offset"]): x for x in t}
    assert {"key_decoded", "value_decoded"} <= set(t[0])
    n = 0
    for d in ("__consumer_offsets-0", "__transaction_state-0", "orders-0"):
        dump = run_cli("dump-log", "--format", "json", "--deep-iteration", "--print-data-log", "--decoder", "auto",
                       str(logdir / d))
        for o in map(json.loads, dump.out.splitlines()):
            if o["type"] != "record" or "control" in o:
                continue
            row = got[(d, o["offset"])]
            for col, field in (("key_decoded", "key"), ("value_decoded", "value")):
                want = o[field]
                have = row[col]
                if isinstance(want, (dict, list)):
                    assert json.loads(have) == want, (d, o["offset"], col)
                else:
                    assert have == want, (d, o["offset"], col)
            n += 1
    assert n > 20
    out2 = tmp_path / "hex"
    assert run_cli("export", str(logdir / "orders-0"), "-o", str(out2), "--value-decoder", "hex").code == 0
    for x in read_table(out2).to_pylist():
        assert x["value_decoded"] == (None if x["value"] is None else x["value"].hex())


def test_elapsed_times_add_up(spark, fleet, tmp_path):
    t0 = time.perf_counter()
    r = run_cli("export", str(fleet.root), "-o", str(tmp_path / "out"), "--format", "json")
    wall = time.perf_counter() - t0
    s = json.loads(r.out.splitlines()[0])
    assert r.code == 0
    assert s["startup_seconds"] + s["job_seconds"] <= s["seconds"] <= wall
    assert s["job_seconds"] > 0


def _no_java_env(tmp_path: Path) -> dict:
    """This environment without Java: a command that tried to start Spark would stop with exit status 3."""
    import os
    import sys
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(Path(sys.executable).parent)
    return env


@pytest.mark.parametrize("case", ["empty", "not-kafka", "no-match"])
def test_nothing_to_read_starts_no_spark(case, tmp_path):
    """An empty directory, a directory of other files, and filters matching no segment: exit status 1 with
    the reason, no output, and Spark never started (Java is absent here: trying would be exit status 3)."""
    import subprocess
    import sys
    d = tmp_path / "in"
    d.mkdir()
    args = []
    if case == "not-kafka":
        (d / "notes.txt").write_text("hello\n")
        (d / "photos").mkdir()
        (d / "photos" / "a.jpg").write_bytes(b"\xff\xd8\xff" * 100)
    elif case == "no-match":
        shutil.copytree(FIXTURES / "logdir", d, dirs_exist_ok=True)
        args = ["--topic", "no-such-topic*"]
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "kafkalog_cli", "export", str(d), "-o", str(out), *args],
                       env=_no_java_env(tmp_path), capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 1, r.stderr
    assert "nothing to read" in r.stderr and "Spark was not started" in r.stderr
    assert ("no segment of" in r.stderr) == (case == "no-match")
    assert "Traceback" not in r.stderr and not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["in"]


def test_ctrl_c_stops_spark_with_one_line(tmp_path):
    """A real export process: its first line says at once that Spark starts, on which master; Ctrl-C
    (SIGINT) while its tasks write ends it with status 130 and one line, no traceback, no py4j noise,
    nothing at the output path, nothing staged, and no process of it left (the JVM included)."""
    import os
    import signal
    import subprocess
    import sys
    from conftest import require_spark
    require_spark()
    root = tmp_path / "fleet"
    make_fleet(root, brokers=1, partitions_per_broker=4, records_per_partition=100_000, segment_bytes=8 << 20,
               codecs=("none",), seed=5)
    out = tmp_path / "out"
    # a per-record decoder makes the tasks slow enough (seconds) to be interrupted while they write
    p = subprocess.Popen([sys.executable, "-m", "kafkalog_cli", "export", str(root), "-o", str(out), "--master",
                          "local[1]", "--value-decoder", "hex", "--key-decoder", "hex"],
                         env=dict(os.environ, SPARK_LOCAL_IP="127.0.0.1"), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, start_new_session=True,
                         preexec_fn=ctrl_c_default)
    try:
        first = p.stderr.readline()
        assert first.startswith("kafkalog: starting Spark (master local[1]) to export 12 segments"), first
        deadline = time.monotonic() + 240
        while not list(tmp_path.glob(".out.kafkalog-tmp-*/topic=*")):
            assert p.poll() is None, p.stderr.read()
            assert time.monotonic() < deadline, "the export never started writing"
            time.sleep(0.02)
        os.kill(p.pid, signal.SIGINT)
        rest, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert p.returncode == 130, err
    assert lines == ["kafkalog: interrupted"], err
    assert rest == ""
    assert not out.exists() and [x.name for x in tmp_path.iterdir()] == ["fleet"]
    deadline = time.monotonic() + 30
    while True:                                  # the JVM and Python workers end with the command
        try:
            os.killpg(p.pid, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline, "processes of the interrupted export are still running"
        time.sleep(0.2)


def test_cluster_id_and_node_id_from_meta_properties_of_every_era(spark, tmp_path):
    """meta.properties as Kafka writes it: version 1 (KRaft, node.id and cluster.id; MetaProperties 3.x),
    version 0 with cluster.id (ZooKeeper brokers from 2.4, BrokerMetadataCheckpoint) and without it (up
    to 2.3): node_id is node.id or broker.id, cluster_id null where the file has none; a partition
    directory copied alone into a folder without meta.properties has neither."""
    root = tmp_path / "fleet"
    f = make_fleet(root, clusters=("c9",), brokers=3, partitions_per_broker=1, records_per_partition=30)
    metas = ["version=1\nnode.id=7\ncluster.id=KRaftClusterId0001\n",
             "#Wed Apr 22 11:14:59 CDT 2020\nversion=0\nbroker.id=1001\ncluster.id=ZkCluster2x4\n",
             "#Mon Jan 07 10:00:00 UTC 2019\nversion=0\nbroker.id=12\n"]
    for d, text in zip(f.log_dirs, metas):
        (d / "meta.properties").write_text(text)
    part = next(p for p in f.log_dirs[0].iterdir() if p.is_dir())
    alone = tmp_path / "bare" / part.name          # a partition copied alone: no meta.properties beside it
    shutil.copytree(part, alone)
    out = tmp_path / "out"
    assert run_cli("export", *map(str, f.log_dirs), str(alone), "-o", str(out)).code == 0
    t = read_table(out)
    got = set(zip(t.column("log_dir").to_pylist(), t.column("cluster_id").to_pylist(), t.column("node_id").to_pylist()))
    assert got == {(str(f.log_dirs[0]), "KRaftClusterId0001", 7), (str(f.log_dirs[1]), "ZkCluster2x4", 1001),
                   (str(f.log_dirs[2]), None, 12), (str(alone.parent), None, None)}
