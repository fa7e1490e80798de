"""Hostile damage anywhere (random bytes changed, files cut) in copies of the fixture log directory:
``recover --all-segments`` never raises, and afterwards ``verify`` passes unless recover said which
problem it does not repair (offsets overflowing their segment)."""
from __future__ import annotations

import shutil

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import flat, FIXTURES, run_cli
from damage import CUT, damage_file, edits

TARGETS = ["orders-1/00000000000000000000.log", "legacy-0/00000000000000000000.log",
           "payments-0/00000000000000000000.log", "payments-0/00000000000000000000.index",
           "payments-0/00000000000000000000.timeindex", "payments-0/00000000000000000000.txnindex",
           "payments-0/00000000000000000013.snapshot", "orders-0/leader-epoch-checkpoint",
           "orders-0/00000000000000000025.log", "replication-offset-checkpoint"]


@settings(max_examples=30, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(target=st.sampled_from(TARGETS),
       changes=edits(5), cut=CUT)
def test_recover_then_verify(tmp_path_factory, target, changes, cut):
    d = tmp_path_factory.mktemp("rfuzz") / "logdir"
    shutil.copytree(FIXTURES / "logdir", d)
    damage_file(d / target, changes, cut)
    r = run_cli("recover", "--all-segments", str(d))          # run_cli asserts there was no traceback
    assert r.code in (0, 1)
    v = run_cli("verify", str(d))
    if v.code != 0:
        assert "it does not repair (below)" in flat(r.out), (target, v.out)
    assert run_cli("recover", "--all-segments", str(d)).code in (0, 1)     # and it can run again


def test_all_segments_repairs_corruption_below_the_recovery_point(tmp_path):
    """Kafka trusts segments below the recovery point; --all-segments goes further (bit rot in old data)."""
    d = tmp_path / "logdir"
    shutil.copytree(FIXTURES / "damaged" / "flipped-crc-byte", d)
    (d / "recovery-point-offset-checkpoint").write_text("0\n1\norders 0 91\n")
    (d / "replication-offset-checkpoint").write_text("0\n1\norders 0 91\n")
    plain = run_cli("recover", "--force", str(d))
    assert run_cli("verify", str(d)).code == 1                      # untouched: below the recovery point
    r = run_cli("recover", "--all-segments", str(d))
    assert r.code == 1 and "--all-segments" in r.out
    assert run_cli("verify", str(d)).code == 0
    assert plain.code in (0, 1)


def test_unreadable_leader_epoch_checkpoint_is_rebuilt_from_the_batches(tmp_path):
    """Beyond Kafka (whose broker refuses to start on it, user-needs #25): the cache is rebuilt from the
    batches' partition leader epochs, equal to what the broker had written; the damaged file is backed up."""
    d = tmp_path / "logdir"
    shutil.copytree(FIXTURES / "logdir", d)
    f = d / "orders-0" / "leader-epoch-checkpoint"
    original = f.read_bytes()
    f.write_bytes(b"0\n2\n\xff\xfe 0\n")
    r = run_cli("recover", "--backup-dir", str(tmp_path / "backup"), str(d))
    assert r.code == 1 and "does not repair" not in r.out
    assert f.read_bytes() == original
    assert (tmp_path / "backup" / "orders-0" / "leader-epoch-checkpoint").read_bytes() == b"0\n2\n\xff\xfe 0\n"
    assert run_cli("verify", str(d)).code == 0 and run_cli("recover", str(d)).code == 0


def test_unreadable_offset_checkpoint_is_reported_not_silently_kept(tmp_path):
    """Found by the fuzz test: a malformed checkpoint with nothing to lower must still be reported."""
    d = tmp_path / "logdir"
    shutil.copytree(FIXTURES / "logdir", d)
    (d / "replication-offset-checkpoint").write_bytes(b"0\n1\n\x00\n")
    r = run_cli("recover", str(d))
    assert r.code == 1 and "it does not repair (below)" in flat(r.out)
    assert "replication-offset-checkpoint" in r.out
