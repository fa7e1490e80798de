"""Coverage-guided fuzz targets (atheris / libFuzzer): one per file kind and one per command's read path.

    pip install -e '.[fuzz]'
    python tools/fuzz_atheris.py TARGET [libFuzzer options]     e.g. -atheris_runs=100000 -max_len=65536
    python tools/fuzz_atheris.py --list

Each target takes the fuzzer's bytes as one file of its kind; the seed corpus is every file of that kind
in ``fixtures/`` and ``../shared/corpus/real`` (written to ``.fuzz-corpus/TARGET`` on first use, git-ignored: never committed). A
custom mutator recomputes the CRC-32C of every v2 batch after libFuzzer's mutation, so mutations reach
record decoding instead of stopping at the CRC check. A target fails (libFuzzer reports a crash) on any
exception other than the documented ones: ``FormatError`` from the decoders, and for the command paths
nothing at all (their errors become findings, problems or ``LookupFailed``).
"""
from __future__ import annotations

import atexit
import os
import shutil
import struct
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KAFKALOG_SHARED", REPO.parent / "shared"))
SCRATCH = Path(tempfile.mkdtemp(prefix="kafkalog-atheris-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
atexit.register(shutil.rmtree, SCRATCH, True)


def _fix_crcs(data: bytearray) -> bytearray:
    pos, n = 0, len(data)
    while n - pos > 17:
        size = struct.unpack_from(">i", data, pos + 8)[0]
        if size < 14 or pos + 12 + size > n:
            break
        if data[pos + 16] == 2 and size + 12 >= 61:
            from kafkalog_formats.crc import crc32c
            struct.pack_into(">I", data, pos + 17, crc32c(memoryview(data)[pos + 21:pos + 12 + size]))
        pos += 12 + size
    return data


# --- targets: bytes -> exercise; FormatError is the documented failure ------------------------------

def _batches(data: bytes) -> None:
    from kafkalog_formats.errors import FormatError
    from kafkalog_formats.message_set import BatchReader
    for b in BatchReader(data):
        b.is_valid()
        try:
            for _ in b.records(max_output=1 << 24):
                pass
        except FormatError:
            pass


def _parse(fn):
    def run(data: bytes) -> None:
        from kafkalog_formats.errors import FormatError
        try:
            fn(data)
        except FormatError:
            pass
    return run


def _index(data: bytes) -> None:
    from kafkalog_formats import offset_index as oi
    arr = oi.offset_index_array(data)
    oi.real_entry_count(arr)
    oi.check_offset_index(data, 0, "x")
    log = bytes(64)
    for target in (0, 1, 100, 1 << 40):
        oi.checked_lookup(data, log, 0, target)


def _timeindex(data: bytes) -> None:
    from kafkalog_formats import time_index as ti
    ti.check_time_index(data, 0, "x")
    for target in (-1, 0, 1 << 41):
        ti.time_lookup(data, 0, target)


def _file_path(name: str, data: bytes, sub: str = "p-0") -> Path:
    d = SCRATCH / sub
    d.mkdir(parents=True, exist_ok=True)
    p = d / name
    p.write_bytes(data)
    return p


def _cmd_dump(data: bytes) -> None:
    import io
    from kafkalog_cli.engine.dump import Dumper, DumpOptions
    from kafkalog_cli.render.jsonl import JsonRenderer
    p = _file_path("00000000000000000000.log", data)
    d = Dumper(DumpOptions(deep_iteration=True, print_data=True))
    js = JsonRenderer(io.StringIO(), "json", "json", print_data=True)
    for ev in d.dump([str(p)]):
        js.emit(ev)


def _cmd_verify(data: bytes) -> None:
    from kafkalog_cli.engine.verify_segment import verify_segment
    p = _file_path("00000000000000000000.log", data)
    verify_segment(p, 0, active=True)


def _cmd_lookup(data: bytes) -> None:
    from kafkalog_cli.engine.lookup import LookupFailed, lookup_offset, lookup_time
    p = _file_path("00000000000000000000.log", data, "topic-0")
    for fn, target in ((lookup_offset, 0), (lookup_offset, 5), (lookup_time, -3), (lookup_time, 0)):
        try:
            fn(p.parent, target).close()
        except LookupFailed:
            pass
        except Exception as e:
            from kafkalog_formats.errors import FormatError
            if not isinstance(e, FormatError) or not e.file:
                raise


def _targets():
    from kafkalog_formats import checkpoint, meta_properties, partition_metadata, producer_snapshot, quorum_state
    from kafkalog_formats import txn_index
    return {
        # file kinds: (function, seed glob)
        "log": (_batches, "*.log"),
        "kraft-snapshot": (_batches, "*.checkpoint"),
        "index": (_index, "*.index"),
        "timeindex": (_timeindex, "*.timeindex"),
        "txnindex": (_parse(lambda b: txn_index.parse_txn_index(b, "x")), "*.txnindex"),
        "producer-snapshot": (_parse(producer_snapshot.parse_producer_snapshot), "*.snapshot"),
        "offset-checkpoint": (_parse(checkpoint.parse_offset_checkpoint), "*-offset-checkpoint"),
        "leader-epoch-checkpoint": (_parse(checkpoint.parse_leader_epoch_checkpoint), "leader-epoch-checkpoint"),
        "meta-properties": (_parse(meta_properties.parse_meta_properties), "meta.properties"),
        "quorum-state": (_parse(quorum_state.parse_quorum_state), "quorum-state"),
        "partition-metadata": (_parse(partition_metadata.parse_partition_metadata), "partition.metadata"),
        # commands' read paths
        "dump-log": (_cmd_dump, "*.log"),
        "verify-segment": (_cmd_verify, "*.log"),
        "lookup": (_cmd_lookup, "*.log"),
    }


def seed_corpus(name: str, pattern: str) -> Path:
    out = REPO / ".fuzz-corpus" / name
    if not out.is_dir():
        out.mkdir(parents=True)
        i = 0
        for root in (REPO / "fixtures", SHARED / "corpus" / "real"):
            for p in sorted(root.rglob(pattern)) if root.is_dir() else []:
                if p.is_file() and p.stat().st_size <= (1 << 20):
                    (out / f"seed-{i:05d}").write_bytes(p.read_bytes())
                    i += 1
    return out


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help", "--list"):
        print(__doc__)
        print("targets:", " ".join(_targets()))
        return
    name = sys.argv.pop(1)
    import atheris
    with atheris.instrument_imports(include=["kafkalog_formats", "kafkalog_cli"]):
        fn, pattern = _targets()[name]
        import kafkalog_cli.engine.dump  # noqa: F401
        import kafkalog_cli.engine.lookup  # noqa: F401
        import kafkalog_cli.engine.verify_segment  # noqa: F401
        import kafkalog_cli.render.jsonl  # noqa: F401
        import kafkalog_formats.codecs  # noqa: F401
    corpus = seed_corpus(name, pattern)

    def test_one(data: bytes) -> None:
        fn(data)

    def mutate(data: bytes, max_size: int, seed: int) -> bytes:
        out = bytearray(atheris.Mutate(data, max_size))
        return bytes(_fix_crcs(out)) if name in ("log", "kraft-snapshot", "dump-log", "verify-segment", "lookup") \
            else bytes(out)

    atheris.Setup(sys.argv + [str(corpus)], test_one, custom_mutator=mutate)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
