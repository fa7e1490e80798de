"""The scenario generator's own rules (no broker): a seed always draws the same scenario, a scenario survives
its JSON, every shrink candidate is smaller and still runnable, and the drawing stays inside what each
release accepts (issue 36; tests/kafka/scenarios/plan.py)."""
from __future__ import annotations

import pytest

from scenarios import plan
from scenarios.runner import ALL_VERSIONS


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_a_seed_draws_the_same_scenario_and_survives_json(version):
    for seed in range(40):
        s = plan.draw(seed, version)
        assert s.to_json() == plan.draw(seed, version).to_json()
        assert plan.Scenario.from_json(s.to_json()).to_json() == s.to_json()


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_draws_stay_inside_what_the_release_accepts(version):
    major = int(version.split(".")[0])
    for seed in range(200):
        s = plan.draw(seed, version)
        assert s.mode == ("zk" if major < 3 else "kraft")
        compact = {t["name"]: "compact" in t["config"]["cleanup.policy"] for t in s.topics}
        for t in s.topics:
            if major >= 4:                                   # 4.x: segment.bytes of at least 1 MiB
                assert t["config"]["segment.bytes"] >= plan.MIB
        for st in s.steps:
            if st["op"] == "alter_config":
                if st["key"] == "segment.bytes" and major >= 4:
                    assert st["value"] >= plan.MIB
                if st["key"] == "cleanup.policy" and "compact" in st["value"]:
                    compact[st["topic"]] = True
            if st["op"] == "produce" and compact[st["topic"]]:
                assert st["null_keys"] == 0.0                # a compacted topic refuses records without a key
            if st["op"] == "commit_offsets" and st["protocol"] == "consumer":
                assert major >= 4                            # KIP-848 groups: 4.x
        assert any(st["op"] == "produce" for st in s.steps)
        assert 0 <= s.fault["at"] < len(s.steps)
        if s.fault["kind"] == "clean":
            assert all(d["kind"] != "flip_bit" for d in s.fault["damage"])


def test_every_shrink_candidate_is_runnable_and_shrinking_ends():
    for seed in range(30):
        s = plan.draw(seed, "3.9.2")
        names = {t["name"] for t in s.topics}
        smaller = 0
        for c in plan.shrink_candidates(s):
            assert c.to_json() != s.to_json()
            assert c.steps and any(st["op"] == "produce" for st in c.steps)
            assert 0 <= c.fault["at"] < len(c.steps)
            cnames = {t["name"] for t in c.topics}
            assert cnames <= names and all(d["topic"] in cnames for d in c.fault["damage"])
            smaller += c.size() < s.size()
        assert smaller > 0
        # the greedy shrink, taking the first smaller candidate each time, reaches a fixed point
        best, rounds = s, 0
        while (nxt := next((c for c in plan.shrink_candidates(best) if c.size() < best.size()), None)) is not None:
            best, rounds = nxt, rounds + 1
            assert rounds < 500
        assert best.size() <= s.size()
