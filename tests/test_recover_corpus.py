"""``kafkalog recover`` on copies of real broker data (../shared/corpus/real).

1. Indexes rebuilt by recover are compared with the ones the broker wrote: for every real segment whose
   broker-written ``.index``/``.timeindex`` is in the corpus, both are deleted and recover rebuilds them.
   An independent model of Kafka's index rule (docs/kafka-on-disk.md §3.6, written here from the spec, not
   kafkalog's IndexBuilder) explains every difference: a broker restart resets the live byte counter and
   adds a final time-index entry at close, and the restarts are visible as the producer snapshots a clean
   shutdown writes at a non-base offset (§4.2).
2. Damage injected into copies (torn batch, flipped byte, zero tail, deleted .index, stale checkpoints,
   leftover swap files) is repaired: verify then exits 0, every batch before the damaged byte is kept with
   its bytes and offsets, and what was cut is in the backup.
"""
from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest
from conftest import CORPUS, needs_corpus, run_cli
from recover_helpers import brute_batches, expected_survivors, partition_batches, segment_logs, writable_copy

pytestmark = needs_corpus


def _logdirs() -> list[Path]:
    return sorted({p.parent for p in CORPUS.rglob("meta.properties")}) if CORPUS.is_dir() else []


def _logdir_of(path: Path) -> Path:
    return next(d for d in _logdirs() if d in path.parents)


def _copy_partition(tmp: Path, logdir: Path, partition: str) -> Path:
    """A writable log directory holding the root files and one partition of ``logdir``."""
    dst = tmp / "logdir"
    dst.mkdir()
    for f in logdir.iterdir():
        if f.is_file():
            shutil.copy(f, dst / f.name)
            (dst / f.name).chmod(0o644)
    writable_copy(logdir / partition, dst / partition)
    return dst


# --- an independent model of the broker's index appends -----------------------------------------------

def model_indexes(data: bytes, base: int, interval: int, restarts=()) -> tuple[bytes, bytes]:
    """Kafka's offset and time index for a segment written one batch per append (§3.6), with the broker
    restarted (cleanly) before each batch whose base offset is in ``restarts``: a final time entry at close
    (§3.6 "Final entry") and a byte counter starting again at 0 after the restart."""
    batches, _, _ = brute_batches(data)
    offsets, times = [], []
    since, max_ts, off_of_max, pos = 0, -1, base, 0

    def time_entry():
        if max_ts > (times[-1][0] if times else -1):
            times.append((max_ts, off_of_max))

    for first, last, _crc, raw in batches:
        if first in restarts:
            time_entry()
            since = 0
        ts = struct.unpack_from(">q", raw, 35)[0] if raw[16] >= 2 else (
            struct.unpack_from(">q", raw, 18)[0] if raw[16] == 1 else -1)
        if ts > max_ts:
            max_ts, off_of_max = ts, last
        if since > interval:
            offsets.append((last, pos))
            time_entry()
            since = 0
        since += len(raw)
        pos += len(raw)
    time_entry()
    return (b"".join(struct.pack(">ii", o - base, p) for o, p in offsets),
            b"".join(struct.pack(">qi", t, o - base) for t, o in times))


def _broker_indexed_segments() -> list[Path]:
    out = []
    for idx in sorted(list(CORPUS.rglob("*.index")) + list(CORPUS.rglob("*.timeindex"))):
        log = idx.with_suffix(".log")
        if idx.stat().st_size and log.exists() and log not in out:
            out.append(log)
    return out


def _restarts(pdir: Path, base: int, data: bytes) -> set[int]:
    """Offsets of producer snapshots that are not segment bases: written at clean shutdowns (§4.2)."""
    bases = {int(p.name[:20]) for p in segment_logs(pdir)}
    batches = brute_batches(data)[0]
    inside = {b[0] for b in batches[1:]}
    return {int(p.name[:20]) for p in pdir.glob("*.snapshot")
            if int(p.name[:20]) not in bases and int(p.name[:20]) in inside}


SEGMENTS = _broker_indexed_segments() if CORPUS.is_dir() else []


@pytest.mark.parametrize("log", SEGMENTS, ids=[str(p.relative_to(CORPUS)) for p in SEGMENTS])
def test_rebuilt_indexes_match_the_brokers(log, tmp_path):
    pdir = log.parent
    logdir = _logdir_of(log)
    d = _copy_partition(tmp_path, logdir, pdir.name)
    for suffix in (".index", ".timeindex"):
        (d / pdir.name / log.with_suffix(suffix).name).unlink(missing_ok=True)
    extra = ["--include-metadata-log"] if pdir.name == "__cluster_metadata-0" else []
    res = run_cli("recover", *extra, "--partition", pdir.name, str(d))
    assert res.code == 1, res.out
    base = int(log.name[:20])
    data = log.read_bytes()
    rebuilt = [(d / pdir.name / log.with_suffix(s).name).read_bytes() for s in (".index", ".timeindex")]
    broker = [log.with_suffix(s).read_bytes() if log.with_suffix(s).exists() else None
              for s in (".index", ".timeindex")]
    restarts = _restarts(pdir, base, data)
    # kafkalog's rebuild is Kafka's recovery rule (no restarts), checked against the independent model
    assert tuple(rebuilt) == model_indexes(data, base, 4096)
    # and the broker's files are the same rule with the restarts its snapshots record
    model = model_indexes(data, base, 4096, restarts)
    for ours, theirs, expected in zip(rebuilt, broker, model):
        if theirs is None:
            continue
        assert theirs == expected, "broker index not explained by the index rule"
        if not restarts:
            assert ours == theirs, "no restart inside the segment, yet the rebuild differs from the broker's"


def test_which_real_indexes_differ_and_why():
    """The record of which broker-written indexes a rebuild does not reproduce byte for byte: exactly those
    of segments the broker was restarted in (William0423 __consumer_offsets-28 at 142, 1693, 1715;
    debug_topic-0 at 30). Every other one is byte-identical (test above)."""
    differ = {}
    for log in SEGMENTS:
        pdir = log.parent
        r = _restarts(pdir, int(log.name[:20]), log.read_bytes())
        if r and model_indexes(log.read_bytes(), int(log.name[:20]), 4096, r) != \
                model_indexes(log.read_bytes(), int(log.name[:20]), 4096):
            differ[str(log.relative_to(CORPUS))] = sorted(r)
    assert differ == {
        "William0423__kafka/kafka-logs/__consumer_offsets-28/00000000000000000000.log": [142, 1693, 1715],
        "William0423__kafka/kafka-logs/debug_topic-0/00000000000000000000.log": [30],
    }
    assert len(SEGMENTS) >= 8


# --- injected damage ---------------------------------------------------------------------------------

def _largest_partition(logdir: Path) -> str | None:
    best = None
    for pdir in logdir.iterdir():
        if not pdir.is_dir() or pdir.name == "__cluster_metadata-0":
            continue
        size = sum(p.stat().st_size for p in segment_logs(pdir))
        if size and (best is None or size > best[0]):
            best = (size, pdir.name)
    return best[1] if best else None


TARGETS = [(ld, _largest_partition(ld)) for ld in _logdirs()]
TARGETS = [(ld, p) for ld, p in TARGETS if p]


def _inject(kind: str, d: Path, pdir: Path) -> None:
    last = segment_logs(pdir)[-1]
    data = last.read_bytes()
    batches = brute_batches(data)[0]
    positions, pos = [], 0
    for b in batches:
        positions.append(pos)
        pos += len(b[3])
    leo = batches[-1][1] + 1
    marker = d / ".kafka_cleanshutdown"
    if kind in ("torn-batch", "flipped-byte", "zero-tail"):
        marker.unlink(missing_ok=True)              # an unclean shutdown leaves no marker (§4.7)
    if kind == "torn-batch":
        last.write_bytes(data[:positions[-1] + len(batches[-1][3]) // 2])
    elif kind == "flipped-byte":
        i = len(batches) // 2
        raw = bytearray(data)
        raw[positions[i] + len(batches[i][3]) - 3] ^= 0x40       # inside the records: CRC no longer matches
        last.write_bytes(bytes(raw))
    elif kind == "zero-tail":
        last.write_bytes(data + bytes(4096))
    elif kind == "deleted-index":
        last.with_suffix(".index").unlink(missing_ok=True)
    elif kind == "stale-checkpoints":
        from kafkalog_formats.checkpoint import build_offset_checkpoint, parse_offset_checkpoint
        topic, part = pdir.name.rsplit("-", 1)
        for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                     "cleaner-offset-checkpoint"):
            path = d / name
            values = parse_offset_checkpoint(path.read_bytes()) if path.exists() and path.stat().st_size else {}
            values[(topic, int(part))] = leo + 100
            path.write_text(build_offset_checkpoint(values))
        (pdir / f"{leo + 100:020d}.snapshot").write_bytes(b"\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00")
        epochs = pdir / "leader-epoch-checkpoint"
        lines = [x for x in epochs.read_text().splitlines()[2:]] if epochs.exists() and epochs.stat().st_size \
            else []
        top = max([int(x.split()[0]) for x in lines] + [0])
        lines.append(f"{top + 1} {leo + 50}")
        epochs.write_text(f"0\n{len(lines)}\n" + "".join(x + "\n" for x in lines))
    elif kind == "leftover-swap":
        shutil.copy(last, last.with_name(last.name + ".swap"))
        shutil.copy(last, last.with_name(last.name[:20] + ".log.cleaned").with_name(
            f"{int(last.name[:20]) + 10**6:020d}.log.cleaned"))


KINDS = ["torn-batch", "flipped-byte", "zero-tail", "deleted-index", "stale-checkpoints", "leftover-swap"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("logdir,partition", TARGETS, ids=[str(ld.relative_to(CORPUS)) for ld, _ in TARGETS])
def test_injected_damage_is_repaired(logdir, partition, kind, tmp_path):
    d = _copy_partition(tmp_path, logdir, partition)
    pdir = d / partition
    _inject(kind, d, pdir)
    damaged = writable_copy(pdir, tmp_path / "damaged")
    backup = tmp_path / "backup"
    res = run_cli("recover", "--partition", partition, "--backup-dir", str(backup), str(d))
    assert res.code == 1, res.out
    verify = run_cli("verify", str(d))
    assert verify.code == 0, verify.out
    assert run_cli("recover", "--partition", partition, str(d)).code == 0
    # every batch before the first damaged byte is still there, same bytes, same offsets
    survivors, cuts = expected_survivors(damaged)
    after = partition_batches(pdir)
    if kind in ("torn-batch", "flipped-byte", "zero-tail"):
        assert [b[3] for b in after] == [b[3] for b in survivors]
        for name, cut in cuts.items():
            data = (damaged / name).read_bytes()
            assert (backup / partition / f"{name}.truncated-at-{cut}").read_bytes() == data[cut:]
    else:
        original = [b for log in segment_logs(logdir / partition) for b in brute_batches(log.read_bytes())[0]]
        assert [b[3] for b in after] == [b[3] for b in original]
    if kind == "deleted-index":
        last = segment_logs(pdir)[-1]
        assert last.with_suffix(".index").exists()
    if kind == "stale-checkpoints":
        leo = after[-1][1] + 1
        from kafkalog_formats.checkpoint import parse_offset_checkpoint
        topic, part = partition.rsplit("-", 1)
        for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
            assert parse_offset_checkpoint((d / name).read_bytes())[(topic, int(part))] == leo
        # LogCleanerManager.cleanableOffsets (2.4+): a first dirty offset above the log end is reset to the log
        # start offset = max(log-start-offset-checkpoint entry or 0, first segment base) (LogLoader.load)
        ls_file = d / "log-start-offset-checkpoint"
        ls_cp = (parse_offset_checkpoint(ls_file.read_bytes()).get((topic, int(part)), 0)
                 if ls_file.exists() and ls_file.stat().st_size else 0)
        log_start = max(ls_cp, int(segment_logs(pdir)[0].name[:20]))
        assert parse_offset_checkpoint((d / "cleaner-offset-checkpoint").read_bytes())[(topic, int(part))] == \
            log_start
        assert not (pdir / f"{leo + 100:020d}.snapshot").exists()
        assert (backup / partition / f"{leo + 100:020d}.snapshot").exists()
    if kind == "leftover-swap":
        assert not any(p.name.endswith((".swap", ".cleaned")) for p in pdir.iterdir())
