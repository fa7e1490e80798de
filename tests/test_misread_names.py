"""Files whose names Kafka's log loader misreads (issue 21, item 6), on the write side.

Kafka (``LogFileUtils.offsetFromFileName`` = ``Long.parseLong`` of the text before the first '.', called by
``LogLoader`` on every ``.log``/index/``.cleaned``/``.swap`` file and by ``ProducerStateManager`` on every
``.snapshot``, 2.0–4.x): ``notes.log`` or ``old.snapshot`` makes the load throw and the broker does not
start; ``12.log`` opens segment 12 as an empty ``00000000000000000012.log``. verify reports them
(tests/test_verify.py); recover moves them aside into ``--backup-dir`` and reports them otherwise (and
writes no clean-shutdown marker while one stays); retain and compact leave such a partition unchanged.
"""
from __future__ import annotations

import json

import pytest

from conftest import copy_logdir, json_objects, run_cli

NOW = 1_700_000_050_000


def _json(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


@pytest.mark.parametrize("name, kind", [("notes.log", "unparsable_file_name"), ("old.snapshot", "unparsable_file_name"),
                                        ("foo.cleaned", "unparsable_file_name"), ("foo.log.swap", "unparsable_file_name"),
                                        ("12.log", "phantom_segment")])
def test_recover_reports_a_misread_name_and_moves_it_aside_only_into_a_backup(tmp_path, name, kind):
    ld = copy_logdir(tmp_path / "logdir")
    (ld / ".kafka_cleanshutdown").unlink()
    odd = ld / "orders-0" / name
    odd.write_bytes(b"kept by an operator")
    res = run_cli("recover", "--format", "json", str(ld))
    assert res.code == 1
    probs = [o for o in _json(res.out) if o["type"] == "problem" and o["kind"] == kind]
    assert probs and "--backup-dir" in probs[0]["message"], res.out
    assert odd.read_bytes() == b"kept by an operator"                 # never deleted without a backup
    res = run_cli("recover", "--mark-clean", str(ld))
    assert res.code == 1 and not (ld / ".kafka_cleanshutdown").exists()
    backup = tmp_path / "backup"
    res = run_cli("recover", "--backup-dir", str(backup), str(ld))
    assert res.code == 1, res.out
    assert not odd.exists() and (backup / "orders-0" / name).read_bytes() == b"kept by an operator"
    assert run_cli("verify", str(ld)).code == 0
    assert run_cli("recover", str(ld)).code == 0


def test_retain_and_compact_leave_a_partition_with_a_misread_name_unchanged(tmp_path):
    ld = copy_logdir(tmp_path / "logdir")
    pdir = ld / "orders-0"
    (pdir / "notes.log").write_bytes(b"x")
    before = sorted(p.name for p in pdir.iterdir())
    r = run_cli("retain", "--retention-ms", "0", "--now", str(NOW + 10**9), "--format", "json", str(pdir))
    assert r.code == 1
    assert any(p["kind"] == "unparsable_file_name" for p in json_objects(r.out)[0]["problems"])
    r = run_cli("compact", "--force", "--config", "cleanup.policy=compact", "--now", str(NOW), str(pdir))
    assert r.code == 1 and "recover --backup-dir" in r.out
    assert sorted(p.name for p in pdir.iterdir()) == before
