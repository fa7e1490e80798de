"""dump-log's exit status follows verify's grading (engine/dump_grade): Kafka's DumpLogSegments prints its
index reports and exits 0; so does dump-log where verify passes the same files, and it exits 1 where verify
finds an error in them, or where something could not be read."""
from __future__ import annotations

import json
import shutil

from kafkalog_cli.repair.log_writer import PartitionWriter

from conftest import FIXTURES, run_cli
from test_verify_kafka_writers import T0, cleaned_chunk, trusted

NOT_AN_ERROR = "kafkalog: not an error by verify's grading (healthy brokers write this): exit 0\n"
WARNINGS = "kafkalog: warnings by verify's grading (Kafka's next start repairs them): exit 0\n"


def _compacted(tmp_path):
    """A __consumer_offsets partition as the cleaner leaves it (Cleaner.cleanInto: one offset-index entry
    per chunk naming its largest retained offset, inside a batch; the March-2024 builds' time-index entries
    naming a removed offset): DumpLogSegments reports index mismatches and indexed offsets not found."""
    d = tmp_path / "logdir"
    w = PartitionWriter(d / "__consumer_offsets-7", segment_bytes=1 << 20, index_interval_bytes=60,
                        index_model="append")
    w.append_set([cleaned_chunk(0, [0, 1], 2, T0 - 50)])
    w.append_set([cleaned_chunk(3, [4], 5, T0), cleaned_chunk(6, [6, 8], 9, T0 + 100)], largest_offset=8)
    w.append_set([cleaned_chunk(10, [12], 14, T0 + 200), cleaned_chunk(15, [15, 19], 19, T0 + 300)])
    w.append_set([cleaned_chunk(20, [23, 24], 24, T0 + 400, lat=True)], offset_of_max_timestamp=20)
    w.append_set([cleaned_chunk(30, [31], 33, T0 + 500)], offset_of_max_timestamp=27)
    w.close()
    return trusted(d, {"__consumer_offsets-7": w.log_end_offset})


def test_a_compacted_topic_whose_indexes_kafkas_tool_reports_exits_0_as_verify_passes_it(tmp_path):
    d = _compacted(tmp_path)
    assert run_cli("verify", str(d)).code == 0
    r = run_cli("dump-log", str(d))
    assert "Mismatches in :" in r.err and "The following indexed offsets are not found in the log." in r.err
    assert "Indexed offset: 20, found log offset: 24" in r.err
    assert r.code == 0 and r.err.endswith(NOT_AN_ERROR)
    j = run_cli("dump-log", "--format", "json", str(d / "__consumer_offsets-7"))
    kinds = {o["type"] for o in map(json.loads, j.out.splitlines())}
    assert {"index_mismatch", "offset_not_found"} <= kinds and j.code == 0
    quiet = run_cli("--quiet", "dump-log", str(d))
    assert quiet.code == 0 and "verify's grading" not in quiet.err and "Mismatches in :" in quiet.err


def test_a_torn_tail_fails_where_kafka_trusts_the_segment_and_not_where_it_recovers_it(tmp_path):
    """The same torn tail: a warning in a log directory without a clean-shutdown marker (the next start
    cuts it), an error under the marker (the broker loads the segment as it is): dump-log's status follows."""
    d = tmp_path / "torn"
    shutil.copytree(FIXTURES / "damaged" / "truncated-last-batch", d)
    r = run_cli("dump-log", str(d))
    assert "Found 40 invalid bytes at the end of 00000000000000000078.log" in r.out
    assert r.code == 0 == run_cli("verify", str(d)).code and r.err.endswith(WARNINGS)
    (d / ".kafka_cleanshutdown").write_bytes(b"")
    assert run_cli("verify", str(d)).code == 1
    r = run_cli("dump-log", str(d))
    assert r.code == 1 and "verify's grading" not in r.err
    assert run_cli("dump-log", "--format", "json", str(d)).code == 1


def test_what_could_not_be_read_fails_whatever_verify_says(tmp_path):
    """An index without its segment: nothing to verify it by (verify: an orphan index, a warning); the
    message gives the form that prints its entries unverified."""
    src = FIXTURES / "logdir" / "payments-0" / "00000000000000000013.timeindex"
    f = tmp_path / src.name
    shutil.copy(src, f)
    r = run_cli("dump-log", str(f))
    assert r.code == 1 and run_cli("verify", str(f)).code == 0
    assert ("its segment 00000000000000000013.log does not exist, so it cannot be verified; to print its entries "
            "unverified: kafkalog dump-log --type timeindex --base-offset 13 - < 00000000000000000013.timeindex"
            ) in r.err


def test_a_time_index_without_its_offset_index_is_read_from_the_segment_start(tmp_path):
    """Kafka's tool creates an empty offset index and looks every entry up from position 0; dump-log
    creates nothing and reads the same way (it reported a missing companion and exited 1)."""
    d = tmp_path / "orders-0"
    shutil.copytree(FIXTURES / "damaged" / "missing-index-clean" / "orders-0", d)
    missing = [p for p in d.glob("*.timeindex") if not p.with_suffix(".index").exists()]
    assert missing
    before = sorted(p.name for p in d.iterdir())
    r = run_cli("dump-log", str(missing[0]))
    assert r.code == 0, r.err
    assert "timestamp: " in r.out and "does not exist" not in r.err
    assert sorted(p.name for p in d.iterdir()) == before
