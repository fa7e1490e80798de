"""``kafkalog diff`` on replicas built by our writer with controlled divergence, and on the real corpus.

Expected truncation offsets are worked out from Kafka's protocol by hand (KIP-101, KIP-279,
``AbstractFetcherThread.getOffsetTruncationState``); expected record sets are computed from what each
test wrote, never taken from the command's output.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kafkalog_formats.checkpoint import build_offset_checkpoint
from kafkalog_formats.codecs import GZIP, LZ4, SNAPPY, ZSTD
from kafkalog_formats import control as ctl
from kafkalog_formats.legacy import build_message, build_wrapper
from kafkalog_formats.message_set import BatchReader
from kafkalog_formats.partition_metadata import build_partition_metadata
from kafkalog_formats.record_batch import RecordSpec, build_batch

from kafkalog_cli.repair.log_writer import PartitionWriter

from conftest import CORPUS, needs_corpus, run_cli

T0 = 1_700_000_000_000
TOPIC = "orders"


@pytest.fixture(autouse=True, params=[True, False], ids=["batch-counts", "record-walk"])
def _walks(request, monkeypatch):
    """Every test runs with batches counted whole where they can be and with the record-by-record walk
    (the reference; ``PairWalk.whole_batches``)."""
    from kafkalog_cli.engine.diff.compare import PairWalk
    monkeypatch.setattr(PairWalk, "whole_batches", request.param)


def records(base: int, n: int, tag: str, keys: int | None = None) -> list[RecordSpec]:
    return [RecordSpec(i, T0 + base + i, f"k{(base + i) % keys if keys else base + i}".encode(),
                       f"{tag}-{base + i}".encode()) for i in range(n)]


def write_replica(logdir: Path, broker_id: int, batches: list[bytes], *, hw: int | None = None,
                  log_start: int | None = None, segment_bytes: int = 1 << 20, topic: str = TOPIC,
                  topic_id: str | None = None) -> Path:
    """A broker's log directory holding one partition made of ``batches`` (and its checkpoints)."""
    logdir.mkdir(parents=True, exist_ok=True)
    (logdir / "meta.properties").write_text(f"version=0\nbroker.id={broker_id}\n")
    pdir = logdir / f"{topic}-0"
    w = PartitionWriter(pdir, segment_bytes=segment_bytes, index_interval_bytes=256)
    for b in batches:
        w.append(b)
    w.close()
    end = w.log_end_offset
    for name, value in (("replication-offset-checkpoint", end if hw is None else hw),
                        ("recovery-point-offset-checkpoint", end),
                        ("log-start-offset-checkpoint", 0 if log_start is None else log_start)):
        (logdir / name).write_text(build_offset_checkpoint({(topic, 0): value}))
    if topic_id:
        (pdir / "partition.metadata").write_text(build_partition_metadata(topic_id))
    return pdir


def data(base: int, n: int, epoch: int, tag: str, per_batch: int = 5, codec: int = 0,
         keys: int | None = None) -> list[bytes]:
    """Batches of ``per_batch`` records from ``base`` under leader ``epoch``; values name ``tag``."""
    out = []
    for off in range(base, base + n, per_batch):
        k = min(per_batch, base + n - off)
        out.append(build_batch(off, records(off, k, tag, keys), partition_leader_epoch=epoch, codec=codec))
    return out


def jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def pair_of(objs: list[dict]) -> dict:
    pairs = [o for o in objs if o["type"] == "pair"]
    assert len(pairs) == 1, pairs
    return pairs[0]


def truncation(pair: dict, follower: str) -> dict:
    (t,) = [t for t in pair["truncations"] if t["follower"].endswith(follower)]
    return t


def batch_bytes(pdir: Path, from_offset: int) -> list[bytes]:
    out = []
    for log in sorted(pdir.glob("*.log")):
        for b in BatchReader(log.read_bytes()):
            if b.last_offset >= from_offset:
                out.append(b.raw())
    return out


# --- agreement ------------------------------------------------------------------------------------

def test_identical_replicas_with_different_segment_boundaries_agree(tmp_path):
    batches = data(0, 200, 0, "v") + data(200, 100, 3, "w")
    write_replica(tmp_path / "b0", 0, batches, segment_bytes=1 << 20)
    pdir = write_replica(tmp_path / "b1", 1, batches, segment_bytes=700)
    assert len(list(pdir.glob("*.log"))) > 5          # the boundaries really differ
    r = run_cli("diff", str(tmp_path / "b0"), str(tmp_path / "b1"))
    assert r.code == 0, r.out
    assert "AGREE" in r.out and "neither would truncate" in r.out
    p = pair_of(jsonl(run_cli("diff", "--format", "json", str(tmp_path / "b0"), str(tmp_path / "b1")).out))
    assert p["identical_batches"] == len(batches) and p["identical_records"] == 300
    assert p["common_prefix"] == [0, 299] and p["first_difference"] is None
    assert all(t["discarded_records"] == 0 for t in p["truncations"])
    assert max(len(line) for line in r.out.splitlines()) <= 80
    assert r.out.rstrip().endswith("1 pair compared: 1 agree, 0 diverge or have problems")


def test_text_fits_80_columns_whatever_the_paths(tmp_path):
    """Replicas are named once beside their (possibly very long) path, then by a short name."""
    deep = tmp_path / ("a-rather-long-backup-folder-name-" * 4) / "restored"
    batches = data(0, 20, 0, "v")
    write_replica(deep / "b0", 0, batches)
    write_replica(deep / "b1", 1, batches + data(20, 5, 1, "x"))
    r = run_cli("diff", str(deep / "b0"), str(deep / "b1"))
    assert r.code == 0, r.out
    assert max(len(line) for line in r.out.splitlines()) <= 80
    assert "broker 0 vs broker 1: AGREE" in r.out


def test_a_lagging_replica_agrees_and_is_not_truncated(tmp_path):
    batches = data(0, 50, 0, "v")
    write_replica(tmp_path / "b0", 0, batches)
    write_replica(tmp_path / "b1", 1, batches[:6])                  # offsets 0-29
    r = run_cli("diff", "--format", "json", str(tmp_path / "b0"), str(tmp_path / "b1"))
    assert r.code == 0
    p = pair_of(jsonl(r.out))
    assert p["agree"] and p["only"] == [{"on": str(tmp_path / "b0"), "reason": "beyond", "records": 20,
                                         "first_offset": 30, "last_offset": 49}]
    assert truncation(p, "b1")["truncation_offset"] == 30 and truncation(p, "b1")["discarded_records"] == 0
    # with the lagging replica as the reference (the leader), the one ahead loses offsets 30-49
    r = run_cli("diff", "--format", "json", "--reference", str(tmp_path / "b1"), str(tmp_path / "b0"),
                str(tmp_path / "b1"))
    assert r.code == 1
    t = truncation(pair_of(jsonl(r.out)), "b0")
    assert (t["truncation_offset"], t["lost"], t["first_offset"], t["last_offset"]) == (30, 20, 30, 49)
    discarded = [o["offset"] for o in jsonl(r.out) if o["type"] == "discarded"]
    assert discarded == list(range(30, 50))


# --- KIP-101: two leaders writing under different epochs at the same offsets -------------------------

@pytest.mark.parametrize("codec", [0, GZIP, SNAPPY, LZ4, ZSTD], ids=["none", "gzip", "snappy", "lz4", "zstd"])
def test_unclean_election(tmp_path, codec):
    common = data(0, 10, 0, "v", codec=codec)
    a_tail = data(10, 5, 0, "old-leader", codec=codec)            # written by A, never replicated
    b_tail = data(10, 8, 1, "new-leader", per_batch=4, codec=codec)  # B elected with epoch 1 at 10
    write_replica(tmp_path / "b0", 0, common + a_tail, hw=10)
    pb = write_replica(tmp_path / "b1", 1, common + b_tail, hw=10)
    r = run_cli("diff", "--format", "json", str(tmp_path / "b0"), str(tmp_path / "b1"))
    assert r.code == 1
    objs = jsonl(r.out)
    p = pair_of(objs)
    assert p["diverged"] and p["first_difference"] == 10 and p["common_prefix"] == [0, 9]
    assert p["differing_records"] == 5
    assert p["only"] == [{"on": str(tmp_path / "b1"), "reason": "beyond", "records": 3, "first_offset": 15,
                          "last_offset": 17}]
    ta, tb = truncation(p, "b0"), truncation(p, "b1")
    # A rejoins B: B answers epoch 0 ends at 10 (where its epoch 1 starts); A cuts 10-14
    assert (ta["truncation_offset"], ta["rule"], ta["lost"], ta["discarded_records"]) == (10, "leader-epoch", 5, 5)
    # B rejoins A (which leads with a new epoch 2 at 15): A answers epoch 0 ends at 15; B's epoch 0 ends at 10
    assert (tb["truncation_offset"], tb["lost"], tb["discarded_records"]) == (10, 8, 8)
    assert [(s["follower_epoch"], s["leader_epoch"], s["leader_end_offset"]) for s in tb["steps"]] == [(1, 0, 15)]
    from_b = [o for o in objs if o["type"] == "discarded" and o["follower"].endswith("b1")]
    assert [o["offset"] for o in from_b] == list(range(10, 18))
    assert {o["partition_leader_epoch"] for o in from_b} == {1} and not any(o["on_leader"] for o in from_b)
    assert [o["timestamp"] for o in from_b] == [T0 + o for o in range(10, 18)]
    diffs = [o for o in objs if o["type"] == "difference"]
    assert [d["offset"] for d in diffs] == list(range(10, 15))
    assert all(d["leader_epochs"] == [0, 1] and "value" in d["fields"] for d in diffs)

    # the text report says the same in words, within 80 columns
    t = run_cli("diff", str(tmp_path / "b0"), str(tmp_path / "b1"))
    assert t.code == 1 and "DIVERGE" in t.out and "first difference at offset 10" in t.out
    assert "truncates by leader epochs to offset 10" in " ".join(t.out.split())    # wrapped at 80
    assert max(len(line) for line in t.out.splitlines()) <= 80

    # --save-discarded: B's batches from offset 10 on, byte for byte, in a segment dump-log and verify read
    save = tmp_path / "saved"
    r = run_cli("diff", "--reference", str(tmp_path / "b0"), "--save-discarded", str(save),
                str(tmp_path / "b0"), str(tmp_path / "b1"))
    assert r.code == 1 and "saved to" in r.out
    (saved_pdir,) = [p for p in save.glob("*/orders-0")]
    saved = batch_bytes(saved_pdir, 0)
    assert saved == batch_bytes(pb, 10) and saved
    assert (saved_pdir / "00000000000000000010.log").is_file()
    assert run_cli("verify", str(saved_pdir)).code == 0
    dumped = run_cli("dump-log", "--deep-iteration", str(saved_pdir / "00000000000000000010.log"))
    assert dumped.code == 0 and "offset: 17" in dumped.out and "offset: 9 " not in dumped.out


def test_kafka_fetcher_test_truncation_on_disk(tmp_path):
    # AbstractFetcherThreadTest.testTruncation: same records "a", "b", "c", follower epochs 0/2/4, leader
    # epochs 1/3/5: the follower truncates to 0 in three rounds and fetches the leader's copies.
    def log(epochs):
        return [build_batch(i, [RecordSpec(0, T0, None, v)], partition_leader_epoch=e)
                for i, (v, e) in enumerate(zip((b"a", b"b", b"c"), epochs))]
    write_replica(tmp_path / "leader", 0, log((1, 3, 5)), hw=2)
    write_replica(tmp_path / "follower", 1, log((0, 2, 4)), hw=0)
    r = run_cli("diff", "--format", "json", "--reference", str(tmp_path / "leader"), str(tmp_path / "leader"),
                str(tmp_path / "follower"))
    p = pair_of(jsonl(r.out))
    t = truncation(p, "follower")
    assert t["truncation_offset"] == 0 and [s["truncate_to"] for s in t["steps"]] == [2, 1, 0]
    # the records are the same (only the leader epochs differ): the three are fetched again, none lost
    assert (t["discarded_records"], t["refetched"], t["lost"]) == (3, 3, 0)
    assert p["agree"] and p["same_records_other_epoch_batches"] == 3
    assert r.code == 0


def test_kip279_epoch_gap_on_disk(tmp_path):
    # leader 0@0 1@5 2@8 (end 20); follower 0@0 1@5 3@10 (end 15): rounds cut to 10, then 8
    lead = data(0, 5, 0, "v") + data(5, 3, 1, "v", per_batch=3) + data(8, 12, 2, "l", per_batch=4)
    fol = data(0, 5, 0, "v") + data(5, 5, 1, "v", per_batch=3) + data(10, 5, 3, "f")
    write_replica(tmp_path / "b0", 0, lead)
    write_replica(tmp_path / "b1", 1, fol)
    r = run_cli("diff", "--format", "json", "--reference", "0", str(tmp_path))
    p = pair_of(jsonl(r.out))
    t = truncation(p, "b1")
    assert [s["truncate_to"] for s in t["steps"]] == [10, 8] and t["truncation_offset"] == 8
    # follower batch 5-7 holds offsets 5-7 (kept), its batch 8-9 (epoch 1) differs from the leader's (epoch 2)
    assert t["discarded_records"] == 7 and t["first_offset"] == 8 and t["lost"] == 7
    assert p["first_difference"] == 8 and r.code == 1


# --- high watermark fallback, missing and damaged checkpoints ----------------------------------------

def test_follower_without_epochs_truncates_to_its_high_watermark(tmp_path):
    batches = data(0, 10, 0, "v")
    write_replica(tmp_path / "b0", 0, batches)
    pdir = write_replica(tmp_path / "b1", 1, batches, hw=5)
    (pdir / "leader-epoch-checkpoint").write_text("0\n0\n")    # an empty cache: Kafka uses the high watermark
    r = run_cli("diff", "--format", "json", "--reference", "0", str(tmp_path))
    t = truncation(pair_of(jsonl(r.out)), "b1")
    assert (t["truncation_offset"], t["rule"], t["refetched"], t["lost"]) == (5, "high-watermark", 5, 0)
    assert r.code == 0


def test_legacy_follower_truncates_to_its_high_watermark(tmp_path):
    msgs = [build_message(i, b"k", f"v{i}".encode(), magic=1, timestamp=T0 + i) for i in range(6)]
    msgs.append(build_wrapper([(6 + j, b"k", f"v{6 + j}".encode(), T0 + 6 + j) for j in range(3)], GZIP))
    write_replica(tmp_path / "b0", 0, msgs)
    pdir = write_replica(tmp_path / "b1", 1, msgs[:5], hw=3)
    (pdir / "leader-epoch-checkpoint").unlink()
    r = run_cli("diff", "--format", "json", "--reference", "0", str(tmp_path))
    p = pair_of(jsonl(r.out))
    t = truncation(p, "b1")
    assert (t["truncation_offset"], t["rule"], t["discarded_records"], t["refetched"]) == (3, "high-watermark", 2, 2)
    assert p["agree"] and p["identical_records"] == 5 and r.code == 0


def test_missing_and_damaged_checkpoints_fall_back_to_the_batches(tmp_path):
    common = data(0, 10, 0, "v")
    write_replica(tmp_path / "b0", 0, common + data(10, 5, 0, "a"))
    pdir = write_replica(tmp_path / "b1", 1, common + data(10, 8, 1, "b"))
    (pdir / "leader-epoch-checkpoint").unlink()
    r = run_cli("diff", "--reference", "0", str(tmp_path))
    assert "no leader-epoch-checkpoint: leader epochs taken from the batches" in " ".join(r.out.split())
    assert "truncates by leader epochs to offset 10" in " ".join(r.out.split()) and r.code == 1
    (pdir / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n")     # count mismatch
    r = run_cli("diff", "--format", "json", "--reference", "0", str(tmp_path))
    p = pair_of(jsonl(r.out))
    assert truncation(p, "b1")["truncation_offset"] == 10
    assert [x["kind"] for x in p["problems"]] == ["checkpoint_count"]
    assert p["replicas"][1]["leader_epochs"] == [[0, 0], [1, 10]]


# --- retention and compaction: explained differences ----------------------------------------------------

def test_retention_below_the_other_log_start_is_explained(tmp_path):
    batches = data(0, 100, 0, "v")
    write_replica(tmp_path / "b0", 0, batches, segment_bytes=800)
    write_replica(tmp_path / "b1", 1, batches, segment_bytes=800)
    assert run_cli("retain", "--log-start-offset", "40", "--config", "cleanup.policy=delete", str(tmp_path / "b0" / "orders-0")).code == 0
    r = run_cli("diff", "--format", "json", str(tmp_path / "b0"), str(tmp_path / "b1"))
    p = pair_of(jsonl(r.out))
    assert r.code == 0 and p["agree"]
    (only,) = p["only"]
    assert (only["reason"], only["first_offset"], only["last_offset"], only["records"]) == ("retention", 0, 39, 40)


def test_compaction_is_explained_by_the_cleaner_checkpoint(tmp_path):
    batches = data(0, 120, 0, "v", keys=7)
    write_replica(tmp_path / "b0", 0, batches, segment_bytes=600)
    write_replica(tmp_path / "b1", 1, batches, segment_bytes=600)
    c = run_cli("compact", "--force", "--now", str(T0 + 10**6), "--config", "cleanup.policy=compact",
                str(tmp_path / "b1" / "orders-0"))
    assert c.code == 0, c.out + c.err
    cleaned = {b.last_offset for log in (tmp_path / "b1" / "orders-0").glob("*.log")
               for b in BatchReader(log.read_bytes())}
    r = run_cli("diff", "--format", "json", str(tmp_path / "b0"), str(tmp_path / "b1"))
    p = pair_of(jsonl(r.out))
    assert r.code == 0 and p["agree"], r.out
    kept = sum(1 for log in (tmp_path / "b1" / "orders-0").glob("*.log") for b in BatchReader(log.read_bytes())
               for _ in b.records())
    assert [(o["reason"], o["records"]) for o in p["only"]] == [("compaction", 120 - kept)] and cleaned
    # without the cleaner checkpoint the same holes are unexplained: divergence
    (tmp_path / "b1" / "cleaner-offset-checkpoint").write_text(build_offset_checkpoint({}))
    r = run_cli("diff", "--format", "json", str(tmp_path / "b0"), str(tmp_path / "b1"))
    p = pair_of(jsonl(r.out))
    assert r.code == 1 and [o["reason"] for o in p["only"]] == ["missing"]


# --- transactions, topic ids, inputs ---------------------------------------------------------------------

def test_commit_and_abort_markers_at_the_same_offset_differ(tmp_path):
    def log(marker):
        txn = build_batch(10, records(10, 3, "t"), producer_id=7, producer_epoch=0, base_sequence=0,
                          is_transactional=True)
        m = build_batch(13, [RecordSpec(0, T0 + 13, ctl.build_control_key(marker), ctl.build_end_txn_marker(4))],
                        producer_id=7, producer_epoch=0, is_transactional=True, is_control=True)
        return data(0, 10, 0, "v") + [txn, m] + data(14, 6, 0, "v")
    write_replica(tmp_path / "b0", 0, log(ctl.COMMIT))
    write_replica(tmp_path / "b1", 1, log(ctl.ABORT))
    r = run_cli("diff", "--format", "json", str(tmp_path / "b0"), str(tmp_path / "b1"))
    objs = jsonl(r.out)
    (d,) = [o for o in objs if o["type"] == "difference"]
    assert d["offset"] == 13 and d["markers"] == ["COMMIT", "ABORT"] and r.code == 1
    assert pair_of(objs)["identical_records"] == 19
    t = run_cli("diff", str(tmp_path / "b0"), str(tmp_path / "b1"))
    assert "COMMIT vs ABORT" in t.out


def test_a_recreated_topic_is_reported_not_compared(tmp_path):
    batches = data(0, 10, 0, "v")
    write_replica(tmp_path / "b0", 0, batches, topic_id="AAAAAAAAAAAAAAAAAAAAAQ")
    write_replica(tmp_path / "b1", 1, batches, topic_id="AAAAAAAAAAAAAAAAAAAAAg")
    r = run_cli("diff", str(tmp_path / "b0"), str(tmp_path / "b1"))
    assert r.code == 1 and "deleted and recreated" in r.out


def test_two_partition_directories_are_compared_whatever_their_names(tmp_path):
    batches = data(0, 10, 0, "v")
    a = write_replica(tmp_path / "b0", 0, batches)
    b = write_replica(tmp_path / "b1", 1, batches, topic="restored")
    r = run_cli("diff", str(a), str(b))
    assert r.code == 0 and "AGREE" in r.out


def test_usage_errors(tmp_path):
    batches = data(0, 10, 0, "v")
    write_replica(tmp_path / "b0", 0, batches)
    write_replica(tmp_path / "b1", 1, batches)
    assert run_cli("diff", str(tmp_path / "b0")).code == 2                         # nothing to compare
    inside = tmp_path / "b0" / "saved"
    r = run_cli("diff", "--save-discarded", str(inside), str(tmp_path / "b0"), str(tmp_path / "b1"))
    assert r.code == 2 and not inside.exists()
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("x")
    assert run_cli("diff", "--save-discarded", str(full), str(tmp_path / "b0"), str(tmp_path / "b1")).code == 2
    assert run_cli("diff", "--reference", str(tmp_path), str(tmp_path)).code == 2  # names both replicas
    assert run_cli("diff", "--partition", "nonsense", str(tmp_path)).code == 2


# --- bounded memory ------------------------------------------------------------------------------------

def _peak(tmp_path: Path, n: int, diverge: bool) -> int:
    import tracemalloc
    from kafkalog_cli.engine.diff.compare import PairWalk
    from kafkalog_cli.engine.diff.replica import collect
    root = tmp_path / f"n{n}{diverge}"
    write_replica(root / "b0", 0, data(0, n, 0, "v", per_batch=10), segment_bytes=1 << 16)
    write_replica(root / "b1", 1, data(0, n, 0, "w" if diverge else "v", per_batch=10), segment_bytes=1 << 15)
    (reps,) = collect([str(root)]).groups.values()
    tracemalloc.start()
    res = PairWalk(reps[0], reps[1]).run()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert res.differing_records == (n if diverge else 0)
    return peak


@pytest.mark.parametrize("diverge", [False, True], ids=["identical", "every-record-differs"])
def test_memory_does_not_grow_with_the_partition(tmp_path, diverge):
    small, big = _peak(tmp_path, 2_000, diverge), _peak(tmp_path, 16_000, diverge)
    assert big < small * 1.5 + 64_000, (small, big)


# --- the real corpus: three brokers of one cluster -------------------------------------------------------

POS = CORPUS / "anujparmar545__kafka-pos-simulator" / "tmp"


@needs_corpus
def test_real_three_broker_cluster_agrees(tmp_path):
    dirs = [str(POS / f"kafka-logs-{i}") for i in range(3)]
    r = run_cli("diff", "--format", "json", *dirs)
    assert r.code == 0, r.out
    objs = jsonl(r.out)
    pairs = [o for o in objs if o["type"] == "pair"]
    # pos-0, pos-1, pos-2 are on all three brokers: 3 pairs each; __consumer_offsets partitions and
    # _confluent-license-0 are on one broker each
    assert sorted({p["partition"] for p in pairs}) == ["pos-0", "pos-1", "pos-2"] and len(pairs) == 9
    for p in pairs:
        (a, b) = p["replicas"]
        n = sum(1 for log in Path(a["directory"]).glob("*.log") for _ in BatchReader(log.read_bytes()))
        assert p["agree"] and p["identical_batches"] == n and p["common_prefix"] == [0, a["log_end_offset"] - 1]
        assert all(t["discarded_records"] == 0 for t in p["truncations"])
    # a broker whose leader-epoch-checkpoint names an epoch that starts at its log end (it became leader,
    # wrote nothing): the loader drops it, and the note says so
    for i, part in ((2, "pos-0"), (1, "pos-2")):
        lines = (POS / f"kafka-logs-{i}" / part / "leader-epoch-checkpoint").read_text().split("\n")
        assert lines[1] == "2"
        notes = [n for p in pairs if p["partition"] == part for rep in p["replicas"]
                 if rep["label"].endswith(f"kafka-logs-{i}") for n in rep["notes"]]
        assert notes and f"epoch {lines[3].split()[0]} from {lines[3].split()[1]}" in notes[0]


@needs_corpus
def test_real_replica_against_a_lagging_copy(tmp_path):
    src = POS / "kafka-logs-1" / "pos-1"
    copy = tmp_path / "copy" / "pos-1"
    copy.mkdir(parents=True)
    raw = (src / "00000000000000000000.log").read_bytes()
    cut = [b.position for b in BatchReader(raw)][500]
    (copy / "00000000000000000000.log").write_bytes(raw[:cut])
    shutil.copy(src / "leader-epoch-checkpoint", copy / "leader-epoch-checkpoint")
    r = run_cli("diff", "--format", "json", str(src), str(copy))
    p = pair_of(jsonl(r.out))
    assert r.code == 0 and p["agree"] and p["common_prefix"] == [0, 499]
    assert p["only"][0]["reason"] == "beyond" and p["only"][0]["first_offset"] == 500


def test_a_corrupt_byte_under_an_intact_stored_crc_is_not_agreement(tmp_path):
    batches = data(0, 20, 0, "v")
    write_replica(tmp_path / "b0", 0, batches)
    pdir = write_replica(tmp_path / "b1", 1, batches)
    log = pdir / "00000000000000000000.log"
    raw = bytearray(log.read_bytes())
    third = [b for b in BatchReader(bytes(raw))][2]                  # offsets 10-14
    at = bytes(raw).index(b"v-12", third.position)
    raw[at + 2] ^= 0x01                                               # "v-12" -> "v-02", CRC left alone
    log.write_bytes(bytes(raw))
    r = run_cli("diff", "--format", "json", str(tmp_path / "b0"), str(tmp_path / "b1"))
    p = pair_of(jsonl(r.out))
    assert r.code == 1 and p["first_difference"] == 12 and p["differing_records"] == 1
    assert [x["kind"] for x in p["problems"]] == ["crc_mismatch"] and p["problems"][0]["position"] == third.position


# --- batches a replica would discard whole: counted per batch, listed from the record columns ---------

def _discarding_pair(tmp_path: Path) -> tuple[Path, Path]:
    """b1 is the reference (leader) and holds offsets 0-29; b0 also holds batches of every codec and one
    of 70,000 records (more than one chunk of the batch path), which it would lose on rejoining, and
    a legacy-format tail is not written (one partition keeps one format)."""
    big = build_batch(80, [RecordSpec(i, T0 + i, None if i % 3 else b"k", b"v" * (i % 5), ())
                           for i in range(70_000)], partition_leader_epoch=2, codec=ZSTD,
                      producer_id=7, producer_epoch=1, base_sequence=0)
    b0 = (data(0, 30, 0, "v") + data(30, 10, 1, "g", codec=GZIP) + data(40, 10, 1, "s", codec=SNAPPY)
          + data(50, 10, 1, "l", codec=LZ4) + data(60, 20, 1, "n", per_batch=7) + [big])
    write_replica(tmp_path / "b0", 0, b0)
    write_replica(tmp_path / "b1", 1, data(0, 30, 0, "v"))
    return tmp_path / "b0", tmp_path / "b1"


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_whole_batch_discards_match_the_record_by_record_walk(tmp_path, monkeypatch, fmt):
    from kafkalog_cli.engine.diff.compare import PairWalk
    b0, b1 = _discarding_pair(tmp_path)
    args = ("diff", "--format", fmt, "--reference", str(b1), str(b0), str(b1))
    fast = run_cli(*args)
    monkeypatch.setattr(PairWalk, "whole_batches", False)
    slow = run_cli(*args)
    assert (fast.code, fast.out, fast.err) == (slow.code, slow.out, slow.err)
    assert fast.code == 1
    if fmt == "json":
        objs = jsonl(fast.out)
        gone = [o for o in objs if o["type"] == "discarded"]
        assert [o["offset"] for o in gone] == list(range(30, 70_080))
        last = gone[-1]
        assert (last["producer_id"], last["producer_epoch"], last["sequence"], last["key_size"],
                last["value_size"], last["partition_leader_epoch"]) == (7, 1, 69_999, 1, 69_999 % 5, 2)
        t = truncation(pair_of(objs), "b0")
        assert (t["discarded_records"], t["lost"], t["first_offset"], t["last_offset"]) == (70_050, 70_050, 30, 70_079)
    else:
        assert "discards 70050 records" in fast.out
