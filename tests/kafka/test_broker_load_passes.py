"""Broker scenario ``leftovers``: the log loader's passes 1-3 on files an interrupted deletion, cleaning,
split or swap leaves behind, with the broker as the oracle (docs/kafka-rules.md, "Recover": the rows on
passes 1, 2 and 3).

A broker writes topic ``passes`` (two partitions of four or more 1 MiB segments) and stops cleanly. Into
its directory go, as a crash would leave them:

* partition 0, pass 1 (``LogLoader.removeTempFilesAndCollectSwapFiles``): a second segment's ``.log`` and
  ``.index`` renamed ``.deleted`` copies (an asynchronous delete that did not run), a ``.cleaned`` segment
  at the first base offset (a cleaning that did not reach its swap) and a ``.swap`` at or above that
  offset (an incomplete split, KAFKA-6264: deleted, not completed); pass 3
  (``LogLoader.loadSegmentFiles``): an offset and a time index whose ``.log`` does not exist, and a segment
  whose ``.index`` is missing (``LogSegment.sanityCheck``: NoSuchFileException, the segment is recovered
  after a clean shutdown too, with an ERROR line).
* partition 1, pass 2 (``LogLoader.load``): a ``.swap`` of the second segment (its bytes, as a cleaning
  that wrote nothing away would leave it) whose rename did not happen: the files in its offset range are
  deleted and the swap renamed. Opening the swap to read its next offset (``LogSegment.readNextOffset``)
  created an empty, preallocated ``.index.swap``, renamed with it: pass 3 loads the segment with that
  index (no entries, 10 MiB of zero slots, which verify warns of) and no time index entries, without
  recovering it. kafkalog rebuilds both indexes (beyond Kafka: the same offsets and positions a lookup
  would scan for; the ``.log`` bytes are the broker's).

Copy B: the broker loads it (its only ERROR line: the missing index). Copy A: ``kafkalog recover`` first,
then the broker, which must log no ERROR line and find nothing of the passes left to do. Both must serve
the same records and leave the same files and the same ``.log`` bytes.
"""
from __future__ import annotations

import random
import shutil

import clients
import crash
import scenarios
from conftest import run_cli

TOPIC = "passes"
#: the ERROR line of a segment without its offset index (LogLoader.loadSegmentFiles, 3.7-4.x)
NO_INDEX = "Could not find offset index file corresponding to log file"
#: what a broker logs at INFO or above when a pass finds something to do (LogLoader, 3.7-4.x; pass 1's
#: deletions are logged at DEBUG only)
PASS_LINES = (r"(from interrupted swap operation|that is compacted but has not been deleted yet|"
              r"by renaming from \.swap files|Found an orphaned index file)")


def _write(broker) -> None:
    rng = random.Random(7)
    clients.create_topic(broker.bootstrap, TOPIC, partitions=2,
                         config={"segment.bytes": scenarios.SEGMENT_BYTES, "retention.ms": -1})
    p = clients.producer(broker.bootstrap, linger_ms=0, batch_num_messages=8)
    for part in (0, 1):
        clients.deliver(p, TOPIC, [(b"k%d" % i, scenarios.payload(rng, 900), [], scenarios.T0 + i)
                                   for i in range(4500)], partition=part)


def _bases(pdir) -> list[str]:
    return sorted(p.name[:-4] for p in pdir.glob("*.log"))


def _leave_leftovers(log_dir) -> None:
    p0, p1 = log_dir / f"{TOPIC}-0", log_dir / f"{TOPIC}-1"
    b0, b1 = _bases(p0), _bases(p1)
    assert len(b0) >= 4 and len(b1) >= 4, (b0, b1)
    # partition 0, pass 1
    for suffix in (".log", ".index"):
        shutil.copyfile(p0 / f"{b0[1]}{suffix}", p0 / f"{b0[1]}{suffix}.deleted")
    shutil.copyfile(p0 / f"{b0[0]}.log", p0 / f"{b0[0]}.log.cleaned")
    shutil.copyfile(p0 / f"{b0[2]}.log", p0 / f"{b0[2]}.log.swap")
    # partition 0, pass 3: indexes of a segment that is not there (between the second and third bases),
    # and a segment whose offset index is missing (recovered at every start, its indexes rebuilt)
    orphan = f"{int(b0[1]) + 1:020d}"
    shutil.copyfile(p0 / f"{b0[1]}.index", p0 / f"{orphan}.index")
    shutil.copyfile(p0 / f"{b0[1]}.timeindex", p0 / f"{orphan}.timeindex")
    (p0 / f"{b0[3]}.index").unlink()
    # partition 1, pass 2
    shutil.copyfile(p1 / f"{b1[1]}.log", p1 / f"{b1[1]}.log.swap")


def _files(log_dir) -> dict[str, list[str]]:
    return {p.name: sorted(f.name for f in p.iterdir()) for p in sorted(log_dir.glob(f"{TOPIC}-*"))}


def test_recover_does_the_load_passes_as_the_broker_does(kafka_version, kafka_jars, make_broker):
    """Scenario leftovers; rules: ``LogLoader.removeTempFilesAndCollectSwapFiles`` (pass 1), the swap
    completion in ``LogLoader.load`` (pass 2), ``LogLoader.loadSegmentFiles`` (pass 3: orphaned indexes,
    a segment without an index recovered)."""
    writer = make_broker(kafka_version, "writer")
    writer.start()
    _write(writer)
    writer.stop()
    _leave_leftovers(writer.log_dir)

    b = crash.adopt(writer.log_dir, make_broker(kafka_version, "b"))
    a = crash.adopt(writer.log_dir, make_broker(kafka_version, "a"))

    rec = run_cli("recover", str(a.log_dir))
    assert rec.code == 1, rec.out + rec.err                       # repairs made
    assert run_cli("verify", str(a.log_dir)).code == 0
    assert run_cli("recover", "--dry-run", str(a.log_dir)).code == 0   # nothing left to do

    served, files, logs = {}, {}, {}
    for name, broker in (("b", b), ("a", a)):
        broker.start()
        served[name] = [[(r.offset, r.key, r.value) for r in clients.consume(broker.bootstrap, TOPIC, part)]
                        for part in (0, 1)]
        broker.stop()
        files[name], logs[name] = _files(broker.log_dir), crash.log_bytes(broker.log_dir)
    assert a.errors() == [], a.errors()
    assert [e for e in b.errors() if NO_INDEX not in e] == [] and len(b.errors()) == 1, b.errors()
    assert len(b.grep(PASS_LINES)) >= 4, "the broker found nothing to do: the scenario is void"
    assert not a.grep(PASS_LINES), a.grep(PASS_LINES)
    assert files["a"] == files["b"]
    assert logs["a"] == logs["b"]
    assert served["a"] == served["b"]
    assert [len(s) for s in served["a"]] == [4500, 4500]
    # what the broker left passes verify (its untrimmed index of zero slots is a warning, not an error)
    assert run_cli("verify", str(b.log_dir)).code == 0


def test_a_log_start_beyond_the_log_end_empties_the_log_as_the_broker_does(kafka_version, kafka_jars,
                                                                           make_broker, tmp_path):
    """Scenario log-start-beyond-end; rule: ``LogLoader.recoverLog`` (3.x; 4.x
    ``deleteSegmentsIfLogStartGreaterThanLogEnd``, KAFKA-8306): a log ending below the checkpointed log
    start loses every segment, its leader epochs and producer state, and starts empty at the log start.
    kafkalog refuses it unless told to trust the checkpoint (a damaged entry looks the same), then does
    what the broker does."""
    writer = make_broker(kafka_version, "writer")
    writer.start()
    clients.create_topic(writer.bootstrap, "ahead", config={"retention.ms": -1})
    idem = clients.producer(writer.bootstrap, enable_idempotence=True)
    clients.deliver(idem, "ahead", [(b"k%d" % i, b"v", [], scenarios.T0 + i) for i in range(200)])
    writer.stop()
    # a broker writes an entry only for a log start above the first segment's base
    crash.set_checkpoint_entry(writer.log_dir, "log-start-offset-checkpoint", "ahead", 0, 300)

    b = crash.adopt(writer.log_dir, make_broker(kafka_version, "b"))
    a = crash.adopt(writer.log_dir, make_broker(kafka_version, "a"))
    assert run_cli("verify", str(a.log_dir)).code == 1                # log_start_beyond_log_end
    before = crash.log_bytes(a.log_dir, ["ahead-0"])
    refused = run_cli("recover", str(a.log_dir))
    assert refused.code == 1 and "log_start_beyond_log_end" in run_cli(
        "recover", "--dry-run", "--format", "json", str(a.log_dir)).out
    assert crash.log_bytes(a.log_dir, ["ahead-0"]) == before           # left unchanged
    rec = run_cli("recover", "--trust-checkpoints", "--backup-dir", str(tmp_path / "backup"), str(a.log_dir))
    assert rec.code == 1, rec.out + rec.err
    assert run_cli("verify", str(a.log_dir)).code == 0

    seen = {}
    for name, broker in (("b", b), ("a", a)):
        broker.start()
        marks = clients.watermarks(broker.bootstrap, "ahead", 0)
        values = clients.consume(broker.bootstrap, "ahead", 0)
        idem = clients.producer(broker.bootstrap, enable_idempotence=True)
        after = clients.deliver(idem, "ahead", [(b"next", b"v", [], scenarios.T0)])
        broker.stop()
        assert broker.errors() == [], broker.errors()
        seen[name] = (marks, values, after, crash.log_bytes(broker.log_dir, ["ahead-0"]))
    assert b.grep(r"Deleting all segments because logEndOffset"), "the broker kept the log: the scenario is void"
    assert not a.grep(r"Deleting all segments because logEndOffset")
    assert seen["a"] == seen["b"]
    assert seen["a"][0] == (300, 300) and seen["a"][1] == [] and seen["a"][2] == [300]
