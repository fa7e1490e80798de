"""Hostile input: randomly corrupted copies of fixture files never make dump-log raise; every problem
comes out as a Finding event with a file and (where it has one) a byte position."""
from __future__ import annotations

import io
import shutil
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog_cli.engine.dump import Dumper, DumpOptions
from kafkalog_cli.engine.findings import Finding
from kafkalog_cli.render.jsonl import JsonRenderer
from kafkalog_cli.render.kafka_text import TextRenderer

from conftest import FIXTURES
from damage import CUT, damage_file, edits

SOURCES = [FIXTURES / "logdir/orders-1/00000000000000000000.log",      # every codec
           FIXTURES / "logdir/legacy-0/00000000000000000000.log",      # legacy wrappers
           FIXTURES / "logdir/payments-0/00000000000000000000.log",    # control batches
           FIXTURES / "logdir/payments-0/00000000000000000000.index",
           FIXTURES / "logdir/payments-0/00000000000000000000.timeindex",
           FIXTURES / "logdir/payments-0/00000000000000000000.txnindex",
           FIXTURES / "logdir/payments-0/00000000000000000013.snapshot",
           FIXTURES / "logdir/__cluster_metadata-0/00000000000000000003-0000000001.checkpoint"]


def _dump_everything(path: Path) -> list:
    events = []
    dumper = Dumper(DumpOptions(deep_iteration=True, print_data=True))
    text = TextRenderer(io.StringIO(), io.StringIO(), print_data=True)
    js = JsonRenderer(io.StringIO(), "json", "json", print_data=True)
    for ev in dumper.dump([str(path)]):
        text.emit(ev)
        js.emit(ev)
        events.append(ev)
    text.finish(dumper.report)
    js.finish(dumper.report)
    return events


@settings(max_examples=120, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(src=st.sampled_from(SOURCES),
       changes=edits(6), cut=CUT)
def test_corrupted_files_never_raise(tmp_path_factory, src, changes, cut):
    d = tmp_path_factory.mktemp("fuzz")
    for companion in src.parent.iterdir():
        if companion.name.split(".")[0] == src.name.split(".")[0]:
            shutil.copy(companion, d / companion.name)
    target = d / src.name                       # copied with its companions above
    damage_file(target, changes, cut)
    events = _dump_everything(target)
    for ev in events:
        if isinstance(ev, Finding):
            assert ev.file == str(target) and ev.message


def test_unknown_codec_id_is_a_problem_not_a_crash(tmp_path):
    src = FIXTURES / "logdir/orders-0/00000000000000000000.log"
    data = bytearray(src.read_bytes())
    data[22] = (data[22] & 0xF8) | 5          # attributes low byte: codec id 5 (CRC now fails too)
    f = tmp_path / src.name
    f.write_bytes(bytes(data))
    events = _dump_everything(f)
    kinds = {e.kind for e in events if isinstance(e, Finding)}
    assert {"codec", "crc_mismatch"} <= kinds


@settings(max_examples=80, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(src=st.sampled_from(SOURCES),
       changes=edits(6), cut=CUT)
def test_verify_never_raises_on_corrupted_files(tmp_path_factory, src, changes, cut):
    """verify (deep) on the same hostile copies: findings, never an exception."""
    from kafkalog_cli.engine.verify import Verifier
    d = tmp_path_factory.mktemp("vfuzz") / src.parent.name
    shutil.copytree(src.parent, d)
    damage_file(d / src.name, changes, cut)
    report = Verifier().run([str(d)])
    assert report.units
    for f in report.findings():
        assert f.kind and f.message and f.severity in ("error", "warning", "info")
