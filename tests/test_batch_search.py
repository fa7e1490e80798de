"""``batch_search``: where intact v2 batches resume inside damaged bytes (verify's intact-batch test and the
Spark reader's chain search share it), within its CRC budget."""
from __future__ import annotations

from kafkalog_formats.batch_search import CrcBudget, intact_batches, valid_batch_end
from kafkalog_formats.record_batch import RecordSpec, build_batch


def _batches(n: int) -> list[bytes]:
    return [build_batch(i * 2, [RecordSpec(0, 1_700_000_000_000, b"k", b"v" * 40), RecordSpec(1, 1_700_000_000_001,
                                                                                            None, b"w")])
            for i in range(n)]


def test_every_intact_batch_after_garbage_is_found_in_order():
    bs = _batches(3)
    buf = b"\xff\x02" * 50 + bs[0] + b"\x00\x02\x00" + bs[1] + bs[2]
    starts = [100, 100 + len(bs[0]) + 3, 100 + len(bs[0]) + 3 + len(bs[1])]
    found = list(intact_batches(buf, 0, len(buf), CrcBudget(100, 1 << 30)))
    assert found == [(s, s + len(b)) for s, b in zip(starts, bs)]
    assert list(intact_batches(buf, starts[0] + 1, len(buf), CrcBudget(100, 1 << 30)))[0][0] == starts[1]


def test_a_batch_with_a_flipped_byte_or_past_the_limit_is_not_intact():
    b = bytearray(_batches(1)[0])
    budget = CrcBudget(100, 1 << 30)
    assert valid_batch_end(bytes(b), 0, len(b), budget) == len(b)
    assert valid_batch_end(bytes(b), 0, len(b) - 1, budget) is None
    b[-1] ^= 1
    assert valid_batch_end(bytes(b), 0, len(b), budget) is None
    assert budget.tried == 2                    # the batch past the limit cost no CRC


def test_the_search_stops_when_the_budget_is_spent():
    bs = _batches(5)
    buf = b"".join(bs)
    assert len(list(intact_batches(buf, 0, len(buf), CrcBudget(2, 1 << 30)))) == 2
    assert len(list(intact_batches(buf, 0, len(buf), CrcBudget(100, len(bs[0]) * 3)))) == 3
