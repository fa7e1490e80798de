"""The fuzz suite's bounded CI portion (deterministic seeds, well under two minutes) and its long runs
behind the ``fuzz`` marker (``python -m pytest -m fuzz``).

* hypothesis: every text and binary file parser, on mutated bytes of real files, raises nothing but
  FormatError; v2 batches mutated *with their CRC recomputed* decode or raise FormatError naming the
  file position and offset;
* the harness (``tools/fuzz_harness.py``): every command on mutated copies of fixture and corpus
  partitions, each run in a limited child: exit status 0-3, no traceback, finished, peak RSS < 400 MiB.
"""
from __future__ import annotations

import os
import random
import struct
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import CORPUS, FIXTURES, REPO
from damage import fix_crc, v2_batches

sys.path.insert(0, str(REPO / "tools"))
import fuzz_harness  # noqa: E402

from kafkalog_formats import checkpoint, meta_properties, partition_metadata, producer_snapshot  # noqa: E402
from kafkalog_formats import quorum_state, txn_index  # noqa: E402
from kafkalog_formats.errors import FormatError  # noqa: E402
from kafkalog_formats.message_set import BatchReader  # noqa: E402


def _seeds(pattern: str, limit: int = 40) -> list[bytes]:
    out = []
    for root in (FIXTURES, CORPUS):
        if root.is_dir():
            out += [p.read_bytes() for p in sorted(root.rglob(pattern)) if p.is_file() and p.stat().st_size < 1 << 20]
    return out[:limit] or [b""]


PARSERS = {
    "offset checkpoint": (checkpoint.parse_offset_checkpoint, "*-offset-checkpoint"),
    "leader-epoch-checkpoint": (checkpoint.parse_leader_epoch_checkpoint, "leader-epoch-checkpoint"),
    "meta.properties": (meta_properties.parse_meta_properties, "meta.properties"),
    "quorum-state": (quorum_state.parse_quorum_state, "quorum-state"),
    "partition.metadata": (partition_metadata.parse_partition_metadata, "partition.metadata"),
    "producer snapshot": (producer_snapshot.parse_producer_snapshot, "*.snapshot"),
    "txn index": (lambda b: txn_index.parse_txn_index(b, "x"), "*.txnindex"),
}
SEEDS = {k: _seeds(pat) for k, (_fn, pat) in PARSERS.items()}
NUMBERS = st.sampled_from([b"9" * 5000, b"-" + b"1" * 4400, b"0" * 5000 + b"1", b"9223372036854775808",
                           b"2147483648", b"\xd9\xa3", b"1e999", b"[" * 5000])


def _mutations(max_edits: int = 6):
    return st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.one_of(st.integers(0, 255), NUMBERS)),
                    min_size=1, max_size=max_edits)


def _apply(data: bytes, edits, cut) -> bytes:
    buf = bytearray(data)
    for where, value in edits:
        i = int(where * len(buf)) if buf else 0
        if isinstance(value, int):
            if buf:
                buf[i] = value
            else:
                buf.append(value)
        else:
            buf[i:i + 1] = value
    return bytes(buf[:int(cut * len(buf))]) if cut is not None else bytes(buf)


def _parsers_never_raise(kind, seed, edits, cut):
    fn = PARSERS[kind][0]
    data = _apply(SEEDS[kind][seed % len(SEEDS[kind])], edits, cut)
    try:
        fn(data)
    except FormatError as e:
        assert e.reason and "\n" not in str(e).strip("\n")


@settings(max_examples=300, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(sorted(PARSERS)), seed=st.integers(0, 1000), edits=_mutations(),
       cut=st.none() | st.floats(0, 1))
def test_text_and_binary_parsers_raise_only_format_error(kind, seed, edits, cut):
    _parsers_never_raise(kind, seed, edits, cut)


LOGS = _seeds("*.log", 60)


def _batch_mutation_decodes_or_reports(seed, edits, cut):
    """A v2 batch's bytes mutated, its CRC recomputed: the walk and the records raise only FormatError,
    located at a file position and the batch's offset."""
    data = bytearray(LOGS[seed % len(LOGS)])
    batches = v2_batches(bytes(data))
    if not batches:
        return
    pos, size = batches[seed % len(batches)]
    chunk = bytearray(_apply(bytes(data[pos + 21:pos + size]), edits, cut))
    data[pos + 21:pos + size] = chunk
    struct.pack_into(">i", data, pos + 8, len(chunk) + 9)
    fix_crc(data, pos)
    for b in BatchReader(bytes(data)):
        try:
            for _ in b.records():
                pass
        except FormatError as e:
            assert e.position is not None and e.offset is not None


@settings(max_examples=300, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), edits=_mutations(4), cut=st.none() | st.floats(0.5, 1))
def test_batches_with_recomputed_crc_decode_or_raise_located_format_error(seed, edits, cut):
    _batch_mutation_decodes_or_reports(seed, edits, cut)


class _Args:
    """The harness's options for an in-test run."""

    def __init__(self, **kw) -> None:
        self.timeout, self.rss_mib, self.as_mib = 120.0, 400.0, 6144
        self.mutator, self.commands, self.keep = None, None, None
        self.__dict__.update(kw)


def _harness(tmp_path: Path, first_seed: int, cases: int, **kw) -> list[dict]:
    from damage import Assets
    seeds = fuzz_harness.find_seeds([FIXTURES, CORPUS])
    assets = Assets((Path("/dev/shm") if Path("/dev/shm").is_dir() else tmp_path) / "kafkalog-fuzz-assets")
    results = []
    for s in range(first_seed, first_seed + cases):
        results += fuzz_harness.run_case(s, seeds, assets, tmp_path, _Args(**kw))
    return results


def _assert_clean(results: list[dict]) -> None:
    bad = [(r["case"], r["command"], r["problems"], r["mutations"], r["stderr_tail"][-600:])
           for r in results if r["problems"]]
    assert not bad, bad


@pytest.mark.parametrize("seed", range(6))
def test_harness_index_mutator_keeps_a_sparse_index_sparse(tmp_path, seed):
    """Found when a fuzz worker (the harness's own process, no limit on it) reached 21 GB and the OOM
    killer took it, losing its 4,000 runs: the index-entry mutator read a 2.7 GiB sparse .index (made so by
    the sparse-file mutator before it) whole and wrote it back dense. It edits the file in place."""
    import random
    from damage import index_entries
    part = tmp_path / "t-0"
    part.mkdir()
    (part / f"{0:020d}.log").write_bytes(b"")
    ix = part / f"{0:020d}.index"
    with open(ix, "wb") as f:
        f.write(struct.pack(">ii", 0, 0))
        f.truncate(4 << 30)
    said = index_entries(tmp_path, part, random.Random(seed), None)
    assert "slot" in said
    st = ix.stat()
    assert st.st_size == 4 << 30 and st.st_blocks * 512 < 1 << 20, (said, st.st_blocks)


def test_harness_every_command_on_mutated_copies(tmp_path):
    """12 cases x 15 command runs of cheap mutations (bounded CI portion)."""
    cheap = ["bit_flips", "truncate", "overwrite", "batch_fields", "record_damage", "structure",
             "text_numbers", "index_entries", "special_files"]
    results = []
    for i, m in enumerate(cheap):
        results += _harness(tmp_path, 7000 + 10 * i, 1 + (i % 2), mutator=[m])
    assert len(results) >= 100 and {r["command"] for r in results} >= {"dump-log", "verify", "lookup-offset",
                                                                          "recover", "compact", "retain",
                                                                          "export-reader", "scan-reader"}
    _assert_clean(results)


SMOKE_COMMANDS = {"dump-log-json", "verify", "recover-dry-run", "recover", "retain", "compact-dry-run", "compact"}


@pytest.mark.parametrize("generator", ["odd_names", "giant_config", "many_segments", "sparse_files",
                                       "distinct_keys", "many_headers"])
def test_harness_generators_of_issue_24(tmp_path, generator, monkeypatch):
    """Each generator the first rounds lacked, on one case, smaller than in the long runs (300 segments
    under a file limit of 64 to 256, 20,000 distinct keys, a record of 70,000 headers): no traceback, a documented exit status,
    bounded memory, read-only commands and dry runs change no file, and on a clean seed the writers keep
    every record they must. The long runs (``-m fuzz`` and the harness itself) use the full sizes."""
    import damage
    monkeypatch.setattr(damage, "SEGMENT_COUNTS", (300,))
    monkeypatch.setattr(damage, "KEY_COUNTS", (20_000,))
    monkeypatch.setattr(damage, "HEADER_COUNTS", (70_000,))
    from damage import Assets
    seeds = fuzz_harness.find_seeds([FIXTURES])
    assets = Assets(tmp_path / "assets")
    args = _Args(mutator=[generator], commands=None, slow=60.0)
    results = fuzz_harness.run_case(3, seeds, assets, tmp_path, args, only=SMOKE_COMMANDS)
    assert len(results) == len(SMOKE_COMMANDS)
    assert all(r["mutations"][0].startswith(generator) for r in results)
    _assert_clean(results)


@pytest.mark.parametrize("generator", ["huge_text_inputs", "metadata_topics", "huge_batch"])
def test_harness_generators_of_issue_39(tmp_path, generator, monkeypatch):
    """Issue 39's generators on one case, smaller than in the long runs (20 MiB text inputs, above the 16 MiB
    limit; a metadata log of 50,000 topics; one batch of 60,000 records): the commands reading them end with a
    documented status, no traceback, bounded memory, no file changed by a dry run."""
    import damage
    monkeypatch.setattr(damage, "TEXT_SIZES", (20 << 20,))
    monkeypatch.setattr(damage, "TOPIC_COUNTS", (50_000,))
    monkeypatch.setattr(damage, "HUGE_BATCH_KEYS", (60_000,))
    from damage import Assets
    seeds = fuzz_harness.find_seeds([FIXTURES])
    args = _Args(mutator=[generator], commands=None, slow=60.0)
    only = {"retain-dry-run", "compact-dry-run", "delete-records-dry-run", "describe", "verify"}
    results = fuzz_harness.run_case(5, seeds, Assets(tmp_path / "assets"), tmp_path, args, only=only)
    assert len(results) == len(only)
    assert all(r["mutations"][0].startswith(generator) for r in results)
    _assert_clean(results)


VIEW_COMMANDS = {"describe", "consumer-groups", "transactions", "dump-log-json"}


@pytest.mark.parametrize("case", range(4))
def test_harness_coordinator_payloads(tmp_path, case):
    """Issue 35, item 7: CRC-valid mutations of __consumer_offsets and __transaction_state records (versions
    negative or unknown, lengths past the end, escape sequences in names, transactional batches and markers),
    replayed by the state views: no traceback (a negative OffsetCommitValue or TransactionLogValue version was
    a KeyError in consumer-groups and transactions), a documented exit status, bounded memory, nothing raw of
    Python in the reports, no file changed."""
    from damage import Assets
    seeds = fuzz_harness.find_seeds([FIXTURES])
    args = _Args(mutator=["coordinator_payloads"], commands=None, slow=60.0)
    results = fuzz_harness.run_case(11 + case, seeds, Assets(tmp_path / "assets"), tmp_path, args,
                                    only=VIEW_COMMANDS)
    assert len(results) == len(VIEW_COMMANDS)
    assert all("records mutated" in r["mutations"][0] for r in results), results[0]["mutations"]
    _assert_clean(results)


@pytest.mark.fuzz
@pytest.mark.parametrize("generator", ["odd_names", "giant_config", "many_segments", "sparse_files",
                                       "distinct_keys", "many_headers"])
def test_long_harness_generators_of_issue_24(tmp_path, generator):
    """Each generator at its full sizes (1,500 segments, 64 GiB holes, a million keys, ten million headers),
    every command."""
    _assert_clean(_harness(tmp_path, 200_000, 12, mutator=[generator]))


@pytest.mark.fuzz
@settings(max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(sorted(PARSERS)), seed=st.integers(0, 1000), edits=_mutations(12),
       cut=st.none() | st.floats(0, 1))
def test_long_parsers(kind, seed, edits, cut):
    _parsers_never_raise(kind, seed, edits, cut)


@pytest.mark.fuzz
@settings(max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 100_000), edits=_mutations(8), cut=st.none() | st.floats(0.3, 1))
def test_long_batches(seed, edits, cut):
    _batch_mutation_decodes_or_reports(seed, edits, cut)


@pytest.mark.fuzz
def test_long_harness_every_mutator(tmp_path):
    """200 random cases (about 3,000 command runs), bombs and sparse files included."""
    _assert_clean(_harness(tmp_path, 100_000, 200))


def test_the_harness_flags_our_internals_not_the_input_a_message_quotes():
    """A report naming our spec's sections or Python's None fails a harness run; a "§" inside damaged
    input that a message quotes (Kafka's Uuid error names the bad string of meta.properties) does not."""
    assert fuzz_harness.unkafka_words("rule: time index (§4.4, §10.5)")
    assert fuzz_harness.unkafka_words("log-start-offset-checkpoint: None -> 5000")
    assert fuzz_harness.unkafka_words("see kafka-on-disk.md")
    assert fuzz_harness.unkafka_words("Failed to read directory.id as a Uuid: Input string with prefix "
                                      "`XHhkr4tkSsD\u00c7\\x9f\u00a70\"` is too long to be decoded") is None


def test_harness_stops_a_run_whose_output_passes_the_cap_without_calling_it_a_failure(tmp_path, monkeypatch):
    """A listing of millions of records must not fill the scratch file system: the run is stopped once
    its standard output passes ``OUTPUT_BYTES``, counted as capped, not as a failure or a hang."""
    monkeypatch.setattr(fuzz_harness, "OUTPUT_BYTES", 4096)
    seg = sorted((FIXTURES / "logdir").rglob("*.log"), key=lambda p: p.stat().st_size)[-1]
    argv = ["dump-log", "--print-data-log", "--format", "json", str(seg)]
    # a listing that does not stop by itself: the same segment named many times
    res = fuzz_harness.run_one(argv + [str(seg)] * 20000, tmp_path, 60, 4 << 30)
    assert res["output_capped"] and not res["timed_out"]
    assert (tmp_path / "stdout").stat().st_size > 4096
    assert fuzz_harness.check(res, 400) == []
    small = fuzz_harness.run_one(["verify", str(seg)], tmp_path, 60, 4 << 30)
    assert not small["output_capped"] and small["code"] == 0


def test_mutators_leave_a_huge_sparse_file_alone(tmp_path):
    """A case's earlier mutation may make a file sparse and huge: the mutators that rewrite a file whole
    do not read it (a harness worker died of MemoryError reading one), the mutation is not applied."""
    import resource
    from damage import Assets, mutate
    part = tmp_path / "logdir" / "t-0"
    part.mkdir(parents=True)
    with open(part / "00000000000000000000.log", "wb") as f:
        f.truncate(8 << 30)
    rng = random.Random(1)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for name in ("overwrite", "bit_flips", "batch_fields", "record_damage", "structure", "index_entries"):
        out = mutate(tmp_path / "logdir", part, rng, Assets(tmp_path / "assets"), [name])
        assert len(out) == 1 and out[0].startswith(name), out
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200 << 10     # KiB


def test_a_seed_recover_would_cut_is_not_checked_for_lost_records(tmp_path):
    """Fuzz case 7000974: a seed verify passes (its torn tail is Kafka's to cut) got a valid segment
    appended; recover cut the torn write and, as Kafka's ``LogLoader.recoverLog`` does, deleted every later
    segment: the harness called it lost data. Such a seed is not clean for the no-loss check; an intact
    one is."""
    import argparse
    args = argparse.Namespace(timeout=120, as_mib=6144)
    torn = FIXTURES / "damaged" / "torn-transaction-segment"
    assert fuzz_harness.seed_is_clean(torn, torn / "payments-0", tmp_path, args) is False
    intact = FIXTURES / "logdir"
    assert fuzz_harness.seed_is_clean(intact, intact / "orders-0", tmp_path, args) is True


def test_the_harness_does_not_open_a_fifo_named_like_a_segment(tmp_path):
    """A worker hung for good in fuzz run 3 (case 9001044): the no-loss check read a FIFO that
    ``special_files`` had put in place of a segment (opening it waits for a writer)."""
    part = tmp_path / "t-0"
    part.mkdir()
    os.mkfifo(part / "00000000000000000000.log")
    assert fuzz_harness.log_batches(part) == []


def test_a_run_waiting_for_a_cpu_is_not_stopped_as_hung():
    """Runs of dump-log --offsets-decoder on 3 M records (43 s alone) were stopped at 120 s, with 8-19 s of CPU,
    while a test suite ran beside the niced harness: past its limit a run that had less than half of it on a
    CPU goes on (up to STARVED_FACTOR times the limit); one that used its time is stopped."""
    import subprocess
    import time
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        assert fuzz_harness._starved(idle.pid, 1.0, 1.5)
        assert not fuzz_harness._starved(idle.pid, 1.0, 1.0 + fuzz_harness.STARVED_FACTOR)
        deadline = time.monotonic() + 60
        while fuzz_harness._starved(busy.pid, 1.0, 1.5):       # until it has had half a second of CPU
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert not fuzz_harness._starved(busy.pid, 1.0, 1.5)
    finally:
        for p in (idle, busy):
            p.kill()
            p.wait()


def test_a_forked_run_counts_its_own_memory_not_the_pages_of_the_process_that_forked_it(tmp_path):
    """Found by CI: the suite's process, 600 MiB after the Spark tests, forked every run, and each then
    reported a peak of 600 MiB (the pages it shares with its parent), over the 400 MiB bound for every
    command. The run's RSS is its growth above what it inherited."""
    held = bytearray(300 << 20)
    for i in range(0, len(held), 4096):       # resident, not only reserved
        held[i] = 1
    seg = sorted((FIXTURES / "logdir").rglob("*.log"), key=lambda p: p.stat().st_size)[0]
    res = fuzz_harness.run_one(["verify", str(seg)], tmp_path, 60, 8 << 30)
    assert res["code"] == 0
    assert res["rss_mib"] < 200, res
    del held
