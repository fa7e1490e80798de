"""Commands on the compiled record path give exactly what they give on the pure path: every output byte,
every message on stderr, the exit status.

Each case runs in-process twice: as installed (native) and with ``kafkalog_formats.native.ext`` set to
None (what KAFKALOG_PURE_PYTHON=1 does at start-up; one test also runs both through the environment
variable in subprocesses, output going to a real pipe). Inputs: the fixture log directory, every damaged
fixture, the byte samples, a segment with every codec and magic, generated and damaged segments, and the
real corpus.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog_formats import codecs, native

from conftest import CORPUS, FIXTURES, REPO, corpus_dirs, run_cli
from native_cases import every_codec_and_magic, segments

pytestmark = pytest.mark.skipif(native.ext is None, reason=f"native path not active: {native.reason}")


def both(monkeypatch, *args):
    fast = run_cli(*args)
    with monkeypatch.context() as m:
        m.setattr(native, "ext", None)
        pure = run_cli(*args)
    return fast, pure


def _timeless(text: str) -> str:
    """verify reports how long it took: the only thing allowed to differ."""
    text = re.sub(r"\b\d+\.\d+ s\b", "T s", text)
    return re.sub(r'"(seconds|elapsed|time)": ?[0-9.eE+-]+', r'"\1": T', text)


def assert_same(monkeypatch, *args):
    fast, pure = both(monkeypatch, *args)
    assert fast.code == pure.code
    assert _timeless(fast.err) == _timeless(pure.err)
    assert _timeless(fast.out) == _timeless(pure.out)
    return fast


@pytest.fixture(scope="module")
def every_codec(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("codecs") / "mixed-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(every_codec_and_magic())
    return d


DUMP_OPTIONS = [
    [],
    ["--deep-iteration"],
    ["--print-data-log"],
    ["--print-data-log", "--format", "json"],
    ["--deep-iteration", "--format", "json"],
    ["--print-data-log", "--skip-record-metadata"],
    ["--key-decoder", "hex", "--value-decoder", "base64"],
    ["--key-decoder", "none", "--value-decoder", "hex", "--format", "json"],
    ["--value-decoder", "json", "--format", "json"],
    ["--decoder", "auto", "--print-data-log"],
    ["--print-data-log", "--from-offset", "3", "--to-offset", "20"],
    ["--print-data-log", "--format", "json", "--from-offset", "10"],
    ["--deep-iteration", "--max-bytes", "1000"],
]
DAMAGED = sorted(p for p in (FIXTURES / "damaged").iterdir() if p.is_dir())


@pytest.mark.parametrize("opts", DUMP_OPTIONS, ids=" ".join)
def test_dump_log_fixtures(monkeypatch, opts, every_codec):
    r = assert_same(monkeypatch, "dump-log", *opts, str(FIXTURES / "logdir"), str(FIXTURES / "samples"),
                    str(every_codec))
    assert r.out


@pytest.mark.parametrize("opts", DUMP_OPTIONS[:5], ids=" ".join)
@pytest.mark.parametrize("d", DAMAGED, ids=lambda p: p.name)
def test_dump_log_damaged(monkeypatch, d, opts):
    assert_same(monkeypatch, "dump-log", *opts, str(d))


@pytest.mark.skipif(not CORPUS.is_dir(), reason="real corpus absent")
@pytest.mark.parametrize("opts", [["--print-data-log"], ["--print-data-log", "--format", "json"],
                                  ["--deep-iteration", "--key-decoder", "hex"]], ids=" ".join)
@pytest.mark.parametrize("d", corpus_dirs(), ids=lambda p: p.name)
def test_dump_log_real_corpus(monkeypatch, d, opts):
    assert_same(monkeypatch, "dump-log", *opts, str(d))


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(data=segments())
def test_dump_log_generated_segments(monkeypatch, tmp_path_factory, data):
    d = tmp_path_factory.mktemp("gen")
    f = d / "00000000000000000000.log"
    f.write_bytes(data)
    for opts in (["--print-data-log"], ["--print-data-log", "--format", "json", "--value-decoder", "hex"],
                 ["--deep-iteration", "--from-offset", "5"]):
        assert_same(monkeypatch, "dump-log", *opts, str(f))


def test_runs_of_many_windows(monkeypatch, tmp_path):
    """A segment longer than one RecordRun (several windows, pages released behind the reader)."""
    from kafkalog_formats.record_batch import RecordSpec, build_batch
    from kafkalog_cli.engine import dump, mapped
    monkeypatch.setattr(dump, "RUN_RECORDS", 7)
    monkeypatch.setattr(mapped, "RELEASE_STEP", 4096)
    parts = [build_batch(i * 5, [RecordSpec(j, 1000 + i, b"k%d" % j, b"v" * (i % 300), ()) for j in range(5)],
                         codec=i % 5) for i in range(400)]
    f = tmp_path / "00000000000000000000.log"
    f.write_bytes(b"".join(parts))
    for opts in (["--print-data-log"], ["--print-data-log", "--format", "json"], []):
        assert_same(monkeypatch, "dump-log", *opts, str(f))


def test_environment_variable_and_a_real_pipe(every_codec):
    """Through the entry point in subprocesses: stdout a pipe (the native lines go to its byte buffer)."""
    out = {}
    for pure in (False, True):
        env = {k: v for k, v in os.environ.items() if k != native.PURE_ENV}
        if pure:
            env[native.PURE_ENV] = "1"
        for fmt in ("text", "json"):
            r = subprocess.run([sys.executable, "-m", "kafkalog_cli", "dump-log", "--print-data-log", "--format", fmt,
                                str(FIXTURES / "logdir"), str(every_codec)], env=env, capture_output=True, cwd=REPO)
            out[pure, fmt] = (r.returncode, r.stdout, r.stderr)
    assert out[False, "text"] == out[True, "text"] and out[False, "json"] == out[True, "json"]
    assert out[False, "text"][1].count(b"\n") > 500


def test_the_native_path_is_the_one_taken(monkeypatch):
    from kafkalog_cli.engine.dump import Dumper, DumpOptions, RecordRun
    f = str(FIXTURES / "logdir/orders-0/00000000000000000000.log")
    evs = list(Dumper(DumpOptions(deep_iteration=True)).dump([f]))
    assert any(isinstance(e, RecordRun) for e in evs)
    monkeypatch.setattr(native, "ext", None)
    evs = list(Dumper(DumpOptions(deep_iteration=True)).dump([f]))
    assert evs and not any(isinstance(e, RecordRun) for e in evs)


# --- Spark rows (pyarrow, no JVM) ------------------------------------------------------------------

ROW_OPTIONS = [{}, {"isolation": "read_committed"}, {"fromOffset": "5", "toOffset": "40"},
               {"fromTimestamp": "1700000000010", "includeControl": "false"},
               {"isolation": "read_committed", "fromOffset": "3"}, {"splitBytes": "600"}]


def _rows(monkeypatch, paths, options: dict, pure: bool, rows_per_batch: int):
    """(rows, problems, quarantined rows) of both record paths, problems and quarantine kept by the sink."""
    pa = pytest.importorskip("pyarrow")
    from kafkalog_cli.spark.options import ReadOptions
    from kafkalog_cli.spark.plan import plan_ranges
    from kafkalog_cli.spark.problems import ReadSink
    from kafkalog_cli.spark.rows import read_range
    from kafkalog_cli.spark.schema import ARROW_SCHEMA
    opts = ReadOptions.from_options(options)
    sink = ReadSink("quarantine")
    with monkeypatch.context() as m:
        if pure:
            m.setattr(native, "ext", None)
        plan = plan_ranges([str(p) for p in paths], opts)
        batches = [b for r in plan.ranges for b in read_range(r, opts, rows_per_batch=rows_per_batch, sink=sink)]
    quarantined = pa.Table.from_batches([b for _k, b in sink.quarantined], schema=ARROW_SCHEMA).combine_chunks()
    return pa.Table.from_batches(batches, schema=ARROW_SCHEMA).combine_chunks(), sink.problems, quarantined


def assert_same_rows(monkeypatch, paths, options, rows_per_batch=65536):
    results = []
    for pure in (False, True):
        try:
            results.append(_rows(monkeypatch, paths, options, pure, rows_per_batch))
        except OverflowError as e:      # both paths: offsets beyond 64 bits do not fit Arrow's int64 (a known gap)
            results.append(repr(e))
    fast, pure = results
    if isinstance(fast, str) or isinstance(pure, str):
        assert fast == pure
        return None
    (fast, fast_problems, fast_q), (pure, pure_problems, pure_q) = fast, pure
    assert fast_problems == pure_problems
    assert fast_q.equals(pure_q)
    assert fast.num_rows == pure.num_rows
    for name in fast.column_names:
        assert fast.column(name).equals(pure.column(name)), name
    return fast


@pytest.mark.parametrize("options", ROW_OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "all")
def test_spark_rows_fixtures(monkeypatch, options, every_codec):
    t = assert_same_rows(monkeypatch, [FIXTURES / "logdir", every_codec], options, rows_per_batch=7)
    assert t.num_rows > 30


@pytest.mark.parametrize("options", ROW_OPTIONS[:3], ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "all")
def test_spark_rows_big_batches_are_read_in_parts(monkeypatch, options, every_codec):
    """A batch of more than ``BIG_BATCH`` records is left to the pure path, which yields it in Arrow
    batches of ``rows_per_batch`` rows (the compiled window would hold all of it: 500 MiB for a batch of
    a million keys); the rows are the same."""
    from kafkalog_cli.spark import rows_native
    monkeypatch.setattr(rows_native, "BIG_BATCH", 6)          # every_codec's batches hold 9 records
    t = assert_same_rows(monkeypatch, [FIXTURES / "logdir", every_codec], options, rows_per_batch=4)
    assert t.num_rows > 30
    from kafkalog_cli.spark.options import ReadOptions
    from kafkalog_cli.spark.plan import plan_ranges
    from kafkalog_cli.spark.rows import read_range
    opts = ReadOptions.from_options(options)
    sizes = [b.num_rows for r in plan_ranges([str(every_codec)], opts).ranges
             for b in read_range(r, opts, rows_per_batch=4)]
    # a window ends once it holds rows_per_batch records, its last batch whole (at most BIG_BATCH)
    assert sizes and max(sizes) <= 4 + 6 - 1
    monkeypatch.setattr(rows_native, "BIG_BATCH", 1 << 20)
    whole = [b.num_rows for r in plan_ranges([str(every_codec)], opts).ranges
             for b in read_range(r, opts, rows_per_batch=4)]
    assert max(whole) > max(sizes)                            # without the bound, 9-record batches are whole


def test_spark_rows_decompress_in_c_under_the_read_options_bound(monkeypatch, tmp_path):
    """Export's rows decompress every codec in C (as dump-log and verify do), under --max-decompressed-bytes:
    a batch that decompresses beyond the bound is the same problem on both paths, and the smaller ones the
    same rows; Python's decompressors are not called for a batch the C path decompresses."""
    from kafkalog_formats.record_batch import RecordSpec, build_batch
    d = tmp_path / "big-0"
    d.mkdir()
    out, offset = [], 0
    for codec in (codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD):
        for n in (3, 40):                        # about 600 and 8,000 bytes of records
            out.append(build_batch(offset, [RecordSpec(i, 1_700_000_000_000 + i, b"k%d" % i, bytes(range(200)))
                                            for i in range(n)], codec=codec))
            offset += n
    (d / "00000000000000000000.log").write_bytes(b"".join(out))
    t = assert_same_rows(monkeypatch, [d], {"maxDecompressedBytes": "4096"})
    assert t.num_rows == 4 * 3                   # the 40-record batches are over the bound on both paths
    calls = []
    real = codecs.decompress
    monkeypatch.setattr(codecs, "decompress", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    fast, problems, _q = _rows(monkeypatch, [d], {"maxDecompressedBytes": "4096"}, False, 65536)
    assert fast.num_rows == 4 * 3 and len(problems) == 4 and {p.kind for p in problems} == {"decompressed_too_large"}
    calls.clear()
    fast, problems, _q = _rows(monkeypatch, [d], {"maxDecompressedBytes": "1000000"}, False, 65536)
    assert fast.num_rows == 4 * 43 and problems == [] and calls == []


@pytest.mark.parametrize("d", DAMAGED, ids=lambda p: p.name)
def test_spark_rows_damaged(monkeypatch, d):
    assert_same_rows(monkeypatch, [d], {})
    assert_same_rows(monkeypatch, [d], {"isolation": "read_committed"}, rows_per_batch=5)


@pytest.mark.skipif(not CORPUS.is_dir(), reason="real corpus absent")
@pytest.mark.parametrize("d", corpus_dirs(), ids=lambda p: p.name)
def test_spark_rows_real_corpus(monkeypatch, d):
    assert_same_rows(monkeypatch, [d], {})
    assert_same_rows(monkeypatch, [d], {"isolation": "read_committed", "fromOffset": "10"}, rows_per_batch=100)


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(data=segments())
def test_spark_rows_generated_segments(monkeypatch, tmp_path_factory, data):
    d = tmp_path_factory.mktemp("gen") / "gen-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(data)
    assert_same_rows(monkeypatch, [d], {}, rows_per_batch=3)
    assert_same_rows(monkeypatch, [d], {"fromOffset": "4", "toTimestamp": "1800000000000"})


# --- verify ------------------------------------------------------------------------------------------

VERIFY_OPTIONS = [[], ["--shallow"], ["--format", "json"], ["--shallow", "--format", "json"]]


@pytest.mark.parametrize("opts", VERIFY_OPTIONS, ids=" ".join)
def test_verify_fixtures(monkeypatch, opts, every_codec):
    assert_same(monkeypatch, "verify", *opts, str(FIXTURES / "logdir"), str(FIXTURES / "samples"), str(every_codec))


@pytest.mark.parametrize("opts", VERIFY_OPTIONS[:3], ids=" ".join)
@pytest.mark.parametrize("d", DAMAGED, ids=lambda p: p.name)
def test_verify_damaged(monkeypatch, d, opts):
    assert_same(monkeypatch, "verify", *opts, str(d))


@pytest.mark.skipif(not CORPUS.is_dir(), reason="real corpus absent")
@pytest.mark.parametrize("opts", VERIFY_OPTIONS[:3], ids=" ".join)
@pytest.mark.parametrize("d", corpus_dirs(), ids=lambda p: p.name)
def test_verify_real_corpus(monkeypatch, d, opts):
    assert_same(monkeypatch, "verify", *opts, str(d))


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(data=segments())
def test_verify_generated_segments(monkeypatch, tmp_path_factory, data):
    """Generated batches, damaged or not, with the offset and time indexes Kafka's rule builds for them
    (so the index checks look batches up), native against pure."""
    from kafkalog_cli.engine.index_rules import IndexBuilder
    from kafkalog_formats.message_set import BatchReader
    from kafkalog_formats.offset_index import build_offset_index
    from kafkalog_formats.time_index import build_time_index
    d = tmp_path_factory.mktemp("gen") / "gen-0"
    d.mkdir()
    log = d / "00000000000000000000.log"
    log.write_bytes(data)
    ib = IndexBuilder(0, index_interval_bytes=50)
    for b in BatchReader(data):
        ib.add(b.position, b.last_offset, b.max_timestamp)
    ib.finish()
    try:
        (d / "00000000000000000000.index").write_bytes(build_offset_index(ib.offset_entries, 0))
        (d / "00000000000000000000.timeindex").write_bytes(build_time_index(ib.time_entries, 0))
    except Exception:                      # offsets a relative index cannot hold: verify without indexes
        pass
    for opts in ([], ["--shallow", "--format", "json"]):
        assert_same(monkeypatch, "verify", *opts, str(d))


def test_verify_keeps_only_the_batches_the_indexes_name(monkeypatch, tmp_path):
    """The batch table kept for the index checks holds the rows the indexes look up, not every batch, and
    gives the same findings as the full table (here with index entries that are wrong in several ways)."""
    from kafkalog_cli.engine import verify_segment as vs
    from kafkalog_cli.repair.log_writer import PartitionWriter
    from kafkalog_formats.record_batch import RecordSpec, build_batch
    d = tmp_path / "t-0"
    w = PartitionWriter(d, segment_bytes=1 << 30, index_interval_bytes=1000)
    for i in range(300):
        w.append(build_batch(i * 2, [RecordSpec(j, 1000 + i * 3 - (i % 7) * 5, b"k", b"v" * 20, ()) for j in range(2)]))
    w.close()
    idx = d / "00000000000000000000.index"
    raw = bytearray(idx.read_bytes())
    raw[8 * 3 + 7] ^= 0x10                 # an entry pointing inside a batch
    raw[8 * 5 + 3] ^= 0x01                 # an entry naming the wrong offset
    idx.write_bytes(bytes(raw))
    seen = {}
    real_table = vs._BatchTable

    class Spy(real_table):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            seen.setdefault("tables", []).append(self)
    monkeypatch.setattr(vs, "_BatchTable", Spy)
    reduced = run_cli("verify", "--format", "json", str(d))
    rows = [len(t.rows) // (8 * vs._BatchTable.FIELDS) for t in seen["tables"]]
    monkeypatch.setattr(vs, "_index_interest", lambda path, base: (None, None))
    full = run_cli("verify", "--format", "json", str(d))
    assert (reduced.code, _timeless(reduced.out)) == (full.code, _timeless(full.out))
    assert reduced.out.count('"kind":"index_') >= 2       # both damaged entries are reported
    assert 0 < rows[0] < 100                # 300 batches, about 30 entries in each index


# --- compact -----------------------------------------------------------------------------------------

def _tree(d: Path) -> dict:
    """Every file under ``d`` (name -> bytes; modification times of cleaned files included)."""
    return {str(p.relative_to(d)): (p.read_bytes(), p.stat().st_mtime_ns if p.suffix == ".log" else None)
            for p in sorted(d.rglob("*")) if p.is_file()}


def assert_same_compaction(monkeypatch, tmp_path, src: Path, *args, target: str | None = None):
    """compact on two copies of ``src`` (one on each path): same report, same files byte for byte."""
    results = []
    for pure in (False, True):
        d = tmp_path / ("pure" if pure else "native") / src.name
        shutil.copytree(src, d)
        for p in d.rglob("*"):
            os.chmod(p, 0o755 if p.is_dir() else 0o644)
        with monkeypatch.context() as m:
            if pure:
                m.setattr(native, "ext", None)
            r = run_cli("compact", *args, str(d / target if target else d))
        results.append((r.code, _timeless(r.out.replace(str(d), "D")), r.err.replace(str(d), "D"), _tree(d)))
    assert results[0][:3] == results[1][:3]
    assert results[0][3] == results[1][3]
    return results[0]


NOW_MS = "1700000050000"


@pytest.mark.parametrize("part", ["orders-0", "payments-0", "legacy-0", "compacted-0", "__consumer_offsets-0",
                                  "__transaction_state-0"])
@pytest.mark.parametrize("now", [NOW_MS, "1900000000000"])
def test_compact_fixtures(monkeypatch, tmp_path, part, now):
    code, out, _err, _files = assert_same_compaction(monkeypatch, tmp_path, FIXTURES / "logdir", "--force",
                                                     "--config", "cleanup.policy=compact", "--format", "json",
                                                     "--now", now, target=part)
    assert '"type"' in out


@pytest.mark.skipif(not CORPUS.is_dir(), reason="real corpus absent")
def test_compact_real_consumer_offsets(monkeypatch, tmp_path):
    root = CORPUS / "DonaldY__kafka-2.7.1" / "kafka-logs"
    for pdir in sorted(root.glob("__consumer_offsets-*")):
        if len(list(pdir.glob("*.log"))) >= 2:
            assert_same_compaction(monkeypatch, tmp_path / pdir.name, root, "--force", "--config",
                                   "cleanup.policy=compact", "--now", "1800000000000",
                                   "--high-watermark", str(10**9), target=pdir.name)


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(seed=st.integers(0, 2**32 - 1), codec=st.sampled_from([0, 0, 1, 3, 4]), slots=st.sampled_from([24 * 5, 24 * 40, 1 << 20]))
def test_compact_generated_partitions(monkeypatch, tmp_path_factory, seed, codec, slots):
    """Repeated keys, tombstones with and without a delete horizon, null keys, an offset map that fills up:
    the cleaned segments are the same bytes on both paths."""
    import random
    from kafkalog_cli.repair.log_writer import PartitionWriter
    from kafkalog_formats.record_batch import RecordSpec, build_batch
    rnd = random.Random(seed)
    root = tmp_path_factory.mktemp("compact")
    d = root / "logdir" / "topic-0"
    w = PartitionWriter(d, segment_bytes=1500, index_interval_bytes=200)
    off = 0
    for _ in range(60):
        n = rnd.randint(1, 6)
        specs = [RecordSpec(i, 1_700_000_000_000 + off + i, None if rnd.random() < 0.05 else b"k%d" % rnd.randint(0, 12),
                            None if rnd.random() < 0.15 else b"v" * rnd.randint(0, 30), ()) for i in range(n)]
        horizon = 1_700_000_040_000 if rnd.random() < 0.2 else None
        w.append(build_batch(off, specs, codec=codec if rnd.random() < 0.7 else 0, delete_horizon_ms=horizon))
        off += n
    w.close()
    code, out, _err, files = assert_same_compaction(
        monkeypatch, root, root / "logdir", "--force", "--config", "cleanup.policy=compact", "--now", NOW_MS,
        "--high-watermark", str(off),
        "--dedupe-buffer-bytes", str(slots), "--format", "json", target="topic-0")
    assert '"cleaned":1' in out and '"records_out"' in out, out        # segments were rewritten


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_compact_runs_dropped_in_c_between_batches_the_pure_code_decides(monkeypatch, tmp_path, seed):
    """``clean_run`` drops runs of plain batches of which nothing survives and stops before every batch
    Kafka's ``Cleaner.cleanInto`` rules treat apart: transactional data and COMMIT/ABORT markers (the
    ``CleanedTransactionMetadata`` must still see them), an idempotent producer's batches (its last batch
    is kept empty while the producer is active: ``MemoryRecords.filterTo``'s ``retainedEmpty``), and the
    batch ending just below the first uncleanable offset (kept empty, KAFKA-17076, 4.0). Both paths give
    the same report and the same files, and runs were really dropped in C."""
    import random
    from kafkalog_cli.repair.log_writer import PartitionWriter
    from kafkalog_formats import control as ctl
    from kafkalog_formats.checkpoint import build_offset_checkpoint
    from kafkalog_formats.record_batch import RecordSpec, build_batch
    rnd = random.Random(seed)
    root = tmp_path / "src"
    d = root / "t-0"
    w = PartitionWriter(d, segment_bytes=4000, index_interval_bytes=300)
    t0, off = 1_700_000_000_000, 0

    def add(specs_for, **kw):
        nonlocal off
        specs = specs_for(off)
        w.append(build_batch(off, specs, **kw))
        off += len(specs)

    for _ in range(120):
        roll = rnd.random()
        if roll < 0.08:                                  # a transaction of producer 7, then its marker
            add(lambda o: [RecordSpec(0, t0 + o, b"k%d" % rnd.randint(0, 5), b"t")], is_transactional=True,
                producer_id=7, producer_epoch=0, base_sequence=0)
            marker = ctl.COMMIT if rnd.random() < 0.5 else ctl.ABORT
            add(lambda o: [RecordSpec(0, t0 + o, ctl.build_control_key(marker), ctl.build_end_txn_marker(5))],
                is_transactional=True, is_control=True, producer_id=7, producer_epoch=0)
        elif roll < 0.15:                                # an idempotent producer
            add(lambda o: [RecordSpec(0, t0 + o, b"k%d" % rnd.randint(0, 5), b"i")], producer_id=9,
                producer_epoch=0, base_sequence=off)
        else:                                            # plain batches, keys soon overwritten
            n = rnd.randint(1, 4)
            add(lambda o: [RecordSpec(i, t0 + o + i, b"k%d" % rnd.randint(0, 5), b"v" * rnd.randint(0, 9))
                           for i in range(n)], codec=rnd.choice([0, 0, 1, 4]))
    add(lambda o: [RecordSpec(i, t0 + o + i, None, b"null key") for i in range(3)])   # nothing of it survives
    w.roll()
    add(lambda o: [RecordSpec(0, t0 + o, b"k0", b"active")])
    w.close()
    (root / "replication-offset-checkpoint").write_text(build_offset_checkpoint({("t", 0): off}))
    from kafkalog_cli.repair import native_clean
    calls = []
    real = native_clean.ext.clean_run

    def spy(*a):
        calls.append(real(*a))
        return calls[-1]
    monkeypatch.setattr(native_clean.ext, "clean_run", spy)
    code, out, _err, files = assert_same_compaction(monkeypatch, tmp_path, root, "--force", "--config",
                                                    "cleanup.policy=compact", "--now", NOW_MS, "--format", "json",
                                                    target="t-0")
    assert sum(c[2] for c in calls) > 20 and any(c[1] == "python" for c in calls)
    assert '"cleaned":1' in out


def test_compact_uses_the_c_offset_map(monkeypatch, tmp_path):
    from kafkalog_cli.repair import cleaner, native_clean
    built = []
    real = cleaner.build_offset_map

    def spy(*a, **kw):
        built.append(real(*a, **kw))
        return built[-1]
    monkeypatch.setattr(cleaner, "build_offset_map", spy)
    d = tmp_path / "logdir"
    shutil.copytree(FIXTURES / "logdir", d)
    assert run_cli("compact", "--force", "--config", "cleanup.policy=compact", "--now", NOW_MS,
                   str(d / "orders-0")).code in (0, 1)
    assert built and type(built[0]) is native_clean.ext.OffsetMap


@pytest.mark.parametrize("n", [pytest.param(262_145, marks=pytest.mark.slow), pytest.param("over", marks=pytest.mark.slow)])
def test_batches_the_compiled_path_leaves_to_the_pure_one_give_the_same_reports(tmp_path, monkeypatch, n):
    """A batch declaring more than NATIVE_MAX_RECORDS (``_native.MAX_RECORDS``, 1,048,576) records is
    decoded by the pure path, which streams it (the compiled path would hold 80 bytes a record as rows):
    dump-log, verify and compact report it exactly as with the pure path alone, before and after it in the
    same segment. 262,145 was the bound until a million-record batch of the fuzz harness took dump-log
    22 s on the pure path (1.0 s compiled); it is now the compiled path's, compared with the pure one."""
    from damage import make_batch, tiny_records
    from kafkalog_formats import codecs
    from kafkalog_formats.record_batch import RecordSpec, build_batch
    part = tmp_path / "big-0"
    part.mkdir()
    if n == "over":
        n = native.ext.MAX_RECORDS + 1
    before = build_batch(0, [RecordSpec(i, 1_700_000_000_000 + i, b"k%d" % (i % 3), b"v%d" % i) for i in range(5)])
    big = make_batch(5, codecs.compress(codecs.ZSTD, tiny_records(n)), n, codecs.ZSTD)
    after = build_batch(5 + n, [RecordSpec(i, 1_700_000_000_000, b"k1", None) for i in range(3)], codec=codecs.LZ4)
    (part / "00000000000000000000.log").write_bytes(before + big + after)
    (part / f"{5 + n + 3:020d}.log").touch()
    seg = str(part / "00000000000000000000.log")
    r = assert_same(monkeypatch, "dump-log", "--deep-iteration", "--format", "json", seg)
    assert r.out.count('"offset":') >= n + 8
    assert_same(monkeypatch, "dump-log", "--print-data-log", "--from-offset", "262000", "--to-offset", "262160", seg)
    assert_same(monkeypatch, "verify", "--format", "json", str(part))
    assert_same(monkeypatch, "compact", "--dry-run", "--force", "--config", "cleanup.policy=compact", "--now",
                "1800000000000", "--high-watermark", str(5 + n + 3), str(part))


@pytest.mark.parametrize("n", [270_000, pytest.param("over", marks=pytest.mark.slow)])
def test_a_batch_of_many_distinct_keys_fills_the_offset_map_inside_it(monkeypatch, tmp_path, n):
    """Issue 24: one zstd batch of 270,000 records (more than the columns scan's former 262,144 rows) is mapped and
    cleaned in chunks in C, its CRC and records checked in C; the map (Kafka's SkimpyOffsetMap, 1,600,008
    bytes: 66,667 slots, 60,000 keys at load factor 0.9) fills at the batch's 110,000th record, 50,000
    keys in after 100,000 records of repeats, so the pass ends inside the batch and the rebuilt batch
    drops the first 50,000 records. Files and report are those of the pure path."""
    from damage import keyed_records, make_batch
    from kafkalog_formats import codecs
    from kafkalog_formats.record_batch import RecordSpec, build_batch
    over = n == "over"              # more records than the columns scan takes: preflight's batch_sound
    if over:
        n = native.ext.MAX_RECORDS + 20_000
    keys = [b"%07d" % (i % 50_000 if i < 100_000 else i) for i in range(n)]
    root = tmp_path / "src"
    part = root / "keys-0"
    part.mkdir(parents=True)
    big = make_batch(0, codecs.compress(codecs.ZSTD, keyed_records(keys)), n, codecs.ZSTD)
    tail = build_batch(n, [RecordSpec(0, 1_700_000_000_000, b"z", b"tail")])
    (part / "00000000000000000000.log").write_bytes(big)
    (part / f"{n:020d}.log").write_bytes(tail)
    sound = []
    real = native.ext.batch_sound
    monkeypatch.setattr(native.ext, "batch_sound", lambda *a: sound.append(real(*a)) or sound[-1])
    code, out, _err, files = assert_same_compaction(
        monkeypatch, tmp_path, root, "--force", "--config", "cleanup.policy=compact", "--now", NOW_MS,
        "--high-watermark", str(n + 1), "--dedupe-buffer-bytes", str(66_667 * 24), "--format", "json",
        target="keys-0")
    if over:
        assert sound == [True]                        # preflight checked the batch in C
    assert '"offset_map_entries":60000' in out and '"offset_map_full":true' in out, out
    assert '"end_offset":110000' in out and f'"records_out":{n - 50_000}' in out, out


# --- coordinator records decoded by programs compiled from the schema (issue 24, item 4) -------------------

def _spy_coordinator(monkeypatch) -> list:
    calls = []
    real = native.ext.coordinator_texts

    def spy(*a):
        calls.append(real(*a))
        return calls[-1]
    monkeypatch.setattr(native.ext, "coordinator_texts", spy)
    return calls


@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize("decoder", [("--offsets-decoder",), ("--decoder", "auto"), ("--decoder", "offsets")])
def test_offsets_decoder_on_the_fixture_prints_what_the_pure_decoder_prints(monkeypatch, fmt, decoder):
    """The fixture holds offset commits of every value version, classic groups (left to the pure decoder:
    consumer-protocol members), KIP-848 and KIP-932 records and tombstones: the compiled decoder prints some,
    the pure one the rest, and the output is the pure path's byte for byte."""
    calls = _spy_coordinator(monkeypatch)
    assert_same(monkeypatch, "dump-log", *decoder, "--format", fmt, str(FIXTURES / "logdir" / "__consumer_offsets-0"))
    assert calls and any(len(c[2]) < len(memoryview(c[1]).cast("q")) // 4 for c in calls)   # some compiled


_GROUPS = [b"g", "gr\u00fcn-\u00e9t\u00e9".encode(), b"tab\there\n\"quoted\"\\", b"bad-\xff\xfe-utf8", b"\xed\xa0\x80",
           b"x" * 300]


def _raw_string(s: bytes) -> bytes:
    import struct
    return struct.pack(">h", len(s)) + s


@st.composite
def coordinator_records(draw):
    """(key, value) of __consumer_offsets as the coordinator writes them, and what it never writes: every
    record type and value version, strings that are not UTF-8, bytes after the fields, short values,
    unknown types and versions, tagged fields known and unknown, tombstones and null keys."""
    import struct

    from kafkalog_formats import group_coordinator as gc
    t = draw(st.sampled_from([0, 1, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]))
    if t in (0, 1):
        key = struct.pack(">h", t) + _raw_string(draw(st.sampled_from(_GROUPS))) + \
            _raw_string(draw(st.sampled_from(_GROUPS))) + struct.pack(">i", draw(st.integers(-2**31, 2**31 - 1)))
    elif t in gc.KEYS:
        key = gc.build_key(t, {"group": "g", "groupId": draw(st.sampled_from(["cg", "\u00e9", "a\"b"])),
                               "memberId": "m-1"})
    else:
        key = struct.pack(">h", t) + _raw_string(b"streams")
    msg = gc.VALUES.get(t)
    versions = list(range(msg.valid.hi + 1)) if msg is not None else [0]
    v = draw(st.sampled_from(versions + [versions[-1] + 1]))
    if msg is not None and t != 16:
        data = {"offset": draw(st.integers(-1, 2**62)), "metadata": draw(st.sampled_from(["", "m\u00e9ta", "x" * 40])),
                "commitTimestamp": 1_700_000_000_000, "leaderEpoch": draw(st.integers(-1, 9)),
                "protocolType": "consumer", "members": [], "epoch": 3,
                "topics": [{"topicId": "AAAAAAAAAAAAAAAAAAAAAA", "topicName": "t", "numPartitions": 2,
                            "partitionMetadata": [{"partition": 1, "racks": ["r1", "r2"]}]}],
                "subscribedTopicNames": ["a", "b"], "clientId": "c", "clientHost": "/h",
                "topicPartitions": [{"topicId": "AAAAAAAAAAAAAAAAAAAAAQ", "partitions": [0, 1, 7]}]}
        try:
            value = struct.pack(">h", v) + msg.build(data, min(v, msg.valid.hi))
        except Exception:                        # noqa: BLE001 - a field this type does not take
            value = struct.pack(">h", v) + msg.build({}, min(v, msg.valid.hi))
    else:
        value = struct.pack(">h", v) + b"\x00" * 8
    edit = draw(st.sampled_from(["none"] * 6 + ["tombstone", "extra", "short", "cut", "tag", "tag0", "nullkey",
                                                 "keyextra"]))
    if edit == "tombstone":
        value = None
    elif edit == "extra":
        value += b"\x01\x02"
    elif edit == "short":
        value = value[:1]
    elif edit == "cut":
        value = value[:max(2, len(value) - 3)]
    elif edit in ("tag", "tag0") and msg is not None and min(v, msg.valid.hi) in msg.flexible and value.endswith(b"\x00"):
        value = value[:-1] + (b"\x01\x07\x02ab" if edit == "tag" else b"\x01\x00\x02\x00\x00")
    elif edit == "nullkey":
        key = None
    elif edit == "keyextra":
        key += b"\x00"
    return key, value


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
@given(records=st.lists(st.lists(coordinator_records(), min_size=1, max_size=4), min_size=1, max_size=12),
       codec=st.sampled_from([0, 0, 4]))
def test_generated_coordinator_records_print_as_the_pure_decoder_prints(monkeypatch, tmp_path_factory, records, codec):
    from kafkalog_formats.record_batch import RecordSpec, build_batch
    d = tmp_path_factory.mktemp("co") / "__consumer_offsets-3"
    d.mkdir()
    off, data = 0, b""
    for batch in records:
        data += build_batch(off, [RecordSpec(i, 1_700_000_000_000 + i, k, v, ()) for i, (k, v) in enumerate(batch)],
                            codec=codec)
        off += len(batch)
    (d / "00000000000000000000.log").write_bytes(data)
    with monkeypatch.context() as m:
        calls = _spy_coordinator(m)
        for fmt in ("text", "json"):
            assert_same(m, "dump-log", "--decoder", "auto", "--format", fmt, str(d))
    assert calls                                     # the compiled path ran (and declined what it must)
    _COVERED[0] += sum(len(memoryview(c[1]).cast("q")) // 4 - len(c[2]) for c in calls)
    _COVERED[1] += sum(len(c[2]) for c in calls)


_COVERED = [0, 0]          # records the compiled decoder printed, records it left to the pure one


def test_generated_coordinator_records_took_both_paths(monkeypatch, tmp_path_factory):
    """Both the compiled and the pure decoder printed generated records: the counts of the property test when
    it ran before in this session, otherwise of its examples run here (it never skips)."""
    if _COVERED == [0, 0]:
        test_generated_coordinator_records_print_as_the_pure_decoder_prints(monkeypatch=monkeypatch,
                                                                           tmp_path_factory=tmp_path_factory)
    assert _COVERED[0] > 50 and _COVERED[1] > 50, _COVERED


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_share_group_state_decoder_prints_what_the_pure_decoder_prints(monkeypatch, tmp_path, fmt):
    from kafkalog_formats import share_group_state as sg
    from kafkalog_formats.record_batch import RecordSpec, build_batch
    d = tmp_path / "__share_group_state-0"
    d.mkdir()
    batch = {"firstOffset": 5, "lastOffset": 9, "deliveryState": 2, "deliveryCount": 1}
    recs = [(sg.build_key(0, {"groupId": "sg", "topicId": "AAAAAAAAAAAAAAAAAAAAAA", "partition": 3}),
             sg.build_value(0, {"snapshotEpoch": 1, "stateEpoch": 2, "leaderEpoch": 3, "startOffset": 4,
                                "stateBatches": [batch, batch]}, 0)),
            (sg.build_key(1, {"groupId": "sg", "topicId": "AAAAAAAAAAAAAAAAAAAAAA", "partition": 3}),
             sg.build_value(1, {"snapshotEpoch": 1, "leaderEpoch": 3, "startOffset": 4, "stateBatches": []}, 0)),
            (sg.build_key(1, {"groupId": "sg", "topicId": "AAAAAAAAAAAAAAAAAAAAAA", "partition": 3}), None)]
    (d / "00000000000000000000.log").write_bytes(
        build_batch(0, [RecordSpec(i, 1_700_000_000_000, k, v, ()) for i, (k, v) in enumerate(recs)]))
    calls = _spy_coordinator(monkeypatch)
    assert_same(monkeypatch, "dump-log", "--share-group-state-decoder", "--format", fmt, str(d))
    assert calls and not calls[0][2]                 # every record compiled


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_transaction_log_decoder_prints_what_the_pure_decoder_prints(monkeypatch, tmp_path, fmt):
    """Statuses by name (an unknown one: the pure decoder's warning), both value versions, v1's tagged
    fields (present: the pure decoder prints them), null partitions, tombstones."""
    from kafkalog_formats import transaction_log as tl
    from kafkalog_formats.record_batch import RecordSpec, build_batch
    d = tmp_path / "__transaction_state-7"
    d.mkdir()
    base = {"producerId": 9, "producerEpoch": 1, "transactionTimeoutMs": 60000, "transactionStatus": 1,
            "transactionPartitions": [{"topic": "orders", "partitionIds": [0, 3]}],
            "transactionLastUpdateTimestampMs": 5, "transactionStartTimestampMs": 4}
    recs = [(tl.build_key("t-1"), tl.build_value(dict(base, transactionStatus=s), v)) for s in range(8) for v in (0, 1)]
    recs += [(tl.build_key("t-2"), tl.build_value(dict(base, transactionStatus=9), 1)),
             (tl.build_key("t-3"), tl.build_value(dict(base, transactionPartitions=None), 0)),
             (tl.build_key("t-4"), tl.build_value(dict(base, nextProducerId=12, clientTransactionVersion=2), 1)),
             (tl.build_key("t-5"), None)]
    (d / "00000000000000000000.log").write_bytes(
        build_batch(0, [RecordSpec(i, 1_700_000_000_000, k, v, ()) for i, (k, v) in enumerate(recs)]))
    calls = _spy_coordinator(monkeypatch)
    r = assert_same(monkeypatch, "dump-log", "--transaction-log-decoder", "--format", fmt, str(d))
    assert "PrepareEpochFence" in r.out and calls and 0 < len(calls[0][2]) < len(recs)
    assert_same(monkeypatch, "dump-log", "--decoder", "auto", "--format", fmt,
                str(FIXTURES / "logdir" / "__transaction_state-0"))
