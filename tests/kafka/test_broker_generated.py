"""Generated scenarios against a real broker (issue 36; the generator, comparisons and runner are in
``tests/kafka/scenarios/``, the long run is ``python tools/kafka_scenarios.py --hours N --versions all``).

* ``test_generated_scenario_agrees``: a fixed set of seeds per version (``SEEDS``; ``KAFKALOG_SCENARIO_SEEDS``
  replaces it, comma-separated): the workload, the fault and the damage the seed draws, then every comparison
  of ``scenarios/compare.py``; any disagreement fails, with the seed and the scenario.
* ``test_regression``: each minimal scenario a disagreement was shrunk to (``scenarios/regressions/*.json``),
  run with the one comparison that disagreed. Those still open in another helper's area are strict xfails
  whose reason names the area; they flip to passing when the fix lands.

Marker ``scenarios`` (with ``kafka``): skipped unless ``-m`` names it (``.ci/run``'s broker step does), so the
default run stays fast; about 3-4 minutes a scenario on a quiet machine.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import jars
from scenarios import plan, runner

pytestmark = pytest.mark.scenarios
REGRESSIONS = Path(__file__).resolve().parent / "scenarios" / "regressions"

SEEDS = {"3.9.2": [1, 2, 3], "3.7.0": [1, 2], "4.4.0": [1, 2], "2.8.2": [1, 2]}


def _seeds() -> list[int] | None:
    spec = os.environ.get("KAFKALOG_SCENARIO_SEEDS")
    return [int(s) for s in spec.split(",") if s] if spec else None


def pytest_generate_tests(metafunc):
    """``case``: (version, seed) for every selected version (``--kafka-versions all`` adds 2.8.2 here) and its
    fixed seeds, or the seeds of ``KAFKALOG_SCENARIO_SEEDS``."""
    if "case" in metafunc.fixturenames and metafunc.function.__name__ == "test_generated_scenario_agrees":
        from conftest import selected_versions
        spec = metafunc.config.getoption("--kafka-versions") or os.environ.get("KAFKALOG_KAFKA_VERSIONS") or ""
        versions = list(runner.ALL_VERSIONS) if spec.strip() == "all" else selected_versions(metafunc.config)
        cases = [(v, s) for v in versions for s in (_seeds() or SEEDS.get(v, SEEDS[jars.DEFAULT_VERSION]))]
        metafunc.parametrize("case", cases, ids=[f"{v}-seed{s}" for v, s in cases])


def _report(out) -> str:
    lines = [f"{d['check']}: {d['detail']}" for d in out.disagreements]
    if out.harness_error:
        lines.append("harness error:\n" + out.harness_error)
    lines.append(f"step errors (the broker's refusals): {out.step_errors}")
    lines.append(f"damage: {out.damage}")
    lines.append("scenario: " + json.dumps(out.scenario))
    return "\n".join(lines)


def test_generated_scenario_agrees(case):
    """The scenario of a seed at a version: every comparison agrees with the broker."""
    version, seed = case
    if reason := jars.unavailable_reason(version):
        pytest.skip(reason)
    out = runner.run_scenario(plan.draw(seed, version))
    assert not out.harness_error and not out.disagreements, _report(out)


def _regressions():
    out = []
    for path in sorted(REGRESSIONS.glob("*.json")):
        case = json.loads(path.read_text())
        marks = [pytest.mark.xfail(strict=True, reason=case["xfail"])] if case.get("xfail") else []
        out.append(pytest.param(path, marks=marks, id=path.stem))
    return out


@pytest.mark.parametrize("case", _regressions())
def test_regression(case):
    """A minimal scenario a disagreement was shrunk to (its file says the seed, version, check and fix)."""
    spec = json.loads(case.read_text())
    s = plan.Scenario.from_json(spec["scenario"])
    if reason := jars.unavailable_reason(s.version):
        pytest.skip(reason)
    out = runner.run_scenario(s, only={spec["check"]})
    assert not out.harness_error, out.harness_error
    assert spec["check"] not in out.checks_failed(), _report(out)
