"""Fixtures of the broker tests (marker ``kafka``): Kafka releases resolved with Maven, brokers that cannot
outlive the test that started them, and the choice of versions.

Versions: ``--kafka-versions`` or ``KAFKALOG_KAFKA_VERSIONS`` (comma-separated, or ``all`` for 3.7.0, 3.9.2
and 4.4.0); the default is 3.9.2 alone, the newest release that runs every scenario (its ZooKeeper mode
still writes message formats v0/v1, which 4.x cannot). Jars are resolved on first use into
``~/.cache/kafkalog/kafka-<version>/`` (about 40 s each, then cached). Where Java, Maven, confluent-kafka or
the artifacts cannot be reached, every broker test is skipped with one line saying which.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def _reexport_root_conftest() -> None:
    """pytest imports every conftest.py outside a package as the module ``conftest``; offer the helpers of
    tests/conftest.py (``run_cli``, ...) from this one too, as tests/spark/conftest.py does."""
    from importlib.util import module_from_spec, spec_from_file_location
    spec = spec_from_file_location("kafkalog_tests_conftest_k", HERE.parent / "conftest.py")
    root = module_from_spec(spec)
    spec.loader.exec_module(root)
    for name, value in vars(root).items():
        if name.startswith("__") or name.startswith("pytest_") or hasattr(value, "_pytestfixturefunction") \
                or type(value).__name__ in ("FixtureFunctionDefinition", "FixtureFunctionMarker"):
            continue
        globals().setdefault(name, value)


_reexport_root_conftest()
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import jars  # noqa: E402


def pytest_addoption(parser):
    parser.addoption("--kafka-versions", default=None,
                     help="Kafka releases the broker tests run: comma-separated, or 'all' "
                          f"({', '.join(jars.VERSIONS)}); default {jars.DEFAULT_VERSION} "
                          "(or KAFKALOG_KAFKA_VERSIONS)")


def selected_versions(config) -> list[str]:
    spec = config.getoption("--kafka-versions") or os.environ.get("KAFKALOG_KAFKA_VERSIONS") \
        or jars.DEFAULT_VERSION
    if spec.strip() == "all":
        return list(jars.VERSIONS)
    return [v.strip() for v in spec.split(",") if v.strip()]


def pytest_generate_tests(metafunc):
    """``kafka_version`` takes every selected release; ``zk_version`` the selected 3.x ones (ZooKeeper mode)."""
    versions = selected_versions(metafunc.config)
    if "kafka_version" in metafunc.fixturenames:
        metafunc.parametrize("kafka_version", versions, scope="session")
    if "zk_version" in metafunc.fixturenames:
        metafunc.parametrize("zk_version", [v for v in versions if jars.major(v) < 4], scope="session")


#: the fixtures that start brokers: a test using one runs only when selected (-m kafka)
BROKER_FIXTURES = {"make_broker", "kafka_jars", "kafka_version", "zk_version"}


def pytest_collection_modifyitems(config, items):
    """Every test here is marked ``kafka``; those that start brokers (minutes each: ``python -m pytest -m
    kafka tests/kafka``, .ci/run's broker step) run only when the marker expression names ``kafka``, the
    generated scenarios only when it names ``scenarios``; the rest (the scenario generator's own rules) run
    in the default suite."""
    ours = []
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.kafka)
            if BROKER_FIXTURES & set(getattr(item, "fixturenames", ())) and not item.get_closest_marker("scenarios"):
                ours.append(item)
    # not "broker tests ...": KAFKALOG_REQUIRE=kafka turns that reason (a missing tool) into a failure
    skip_unless_selected(config, ours, "kafka", "real Kafka brokers, minutes each: select with -m kafka")
    # the generated scenarios (minutes each) run when -m names them (.ci/run's broker step)
    skip_unless_selected(config, items, "scenarios", "generated broker scenarios: select with -m scenarios")


unavailable_reason = jars.unavailable_reason


@pytest.fixture(scope="session")
def kafka_jars(kafka_version) -> Path:
    reason = unavailable_reason(kafka_version)
    if reason:
        pytest.skip(reason)
    return jars.jars(kafka_version)


@pytest.fixture
def make_broker(tmp_path_factory):
    """``make_broker(version, name, **kw)``: a ``Broker`` in a fresh directory, killed at teardown (with
    its ZooKeeper) whatever the test did."""
    from broker import Broker
    made: list[Broker] = []

    def make(version: str, name: str = "broker", **kw) -> Broker:
        reason = unavailable_reason(version)
        if reason:
            pytest.skip(reason)
        b = Broker(version, tmp_path_factory.mktemp(f"{name}-{version}-"), **kw)
        made.append(b)
        return b
    yield make
    for b in made:
        b.close()
