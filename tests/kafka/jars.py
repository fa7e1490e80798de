"""Kafka releases' jars, resolved with Maven into a cache outside the repository.

``jars(version)`` returns the directory ``~/.cache/kafkalog/kafka-<version>/`` (``KAFKALOG_KAFKA_CACHE`` moves
the parent) holding every jar a broker, its tools and an in-process ZooKeeper need: a ``pom.xml`` is
generated into a temporary directory and ``mvn dependency:copy-dependencies`` copies the artifacts there. A
``.complete`` file marks a finished resolution; later calls reuse the directory. Nothing is committed.

Logging: Kafka 3.x logs through slf4j + reload4j (``slf4j-reload4j``, a runtime dependency of
``kafka_2.13`` 3.x); Kafka 4.x through log4j2 behind slf4j 1.7 (its pom declares ``slf4j-api`` 1.7.36), whose
binding (``log4j-slf4j-impl``) and ``log4j-core`` are added here, as the 4.x distribution ships them.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

VERSIONS = ("3.7.0", "3.9.2", "4.4.0")
"""The releases the broker tests know: 3.7.0 (time-index offsets inside a batch), the newest 3.9.x (the last
3.x rules; ZooKeeper mode still present), the newest 4.x."""

DEFAULT_VERSION = "3.9.2"

_LOG4J2 = "2.24.3"


class Unavailable(Exception):
    """Java or Maven is missing, or the artifacts could not be resolved (the tests skip with this line)."""


def cache_root() -> Path:
    return Path(os.environ.get("KAFKALOG_KAFKA_CACHE", Path.home() / ".cache" / "kafkalog"))


def major(version: str) -> int:
    return int(version.split(".")[0])


def _dependency(group: str, artifact: str, version: str, scope: str = "runtime") -> str:
    return (f"<dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
            f"<version>{version}</version><scope>{scope}</scope></dependency>")


def pom(version: str) -> str:
    """The throw-away project whose dependencies are the release's broker, tools and logging binding."""
    deps = [_dependency("org.apache.kafka", "kafka_2.13", version),
            _dependency("org.apache.kafka", "kafka-tools", version)]
    if major(version) >= 4:
        deps += [_dependency("org.apache.logging.log4j", "log4j-slf4j-impl", _LOG4J2),
                 _dependency("org.apache.logging.log4j", "log4j-core", _LOG4J2)]
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kafkalog.tests</groupId><artifactId>kafka-{version}</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>{''.join(deps)}</dependencies>
</project>
"""


def jars(version: str, timeout: float = 900) -> Path:
    """The directory of the release's jars, resolving them on first use (about 40 s per release)."""
    dest = cache_root() / f"kafka-{version}"
    if (dest / ".complete").is_file():
        return dest
    if shutil.which("java") is None:
        raise Unavailable("java is not on PATH")
    if shutil.which("mvn") is None:
        raise Unavailable("mvn (Maven) is not on PATH")
    dest.parent.mkdir(parents=True, exist_ok=True)
    import fcntl
    # one resolver a release at a time: the test workers (pytest -n 2) may reach here together, and the
    # second must not replace the directory the first one's broker is reading
    with open(dest.parent / f"kafka-{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (dest / ".complete").is_file():
            return dest
        return _resolve(version, dest, timeout)


def _resolve(version: str, dest: Path, timeout: float) -> Path:
    with tempfile.TemporaryDirectory(prefix=f"kafka-{version}-pom-") as tmp:
        Path(tmp, "pom.xml").write_text(pom(version))
        staging = Path(tmp, "lib")
        cmd = ["mvn", "-q", "-B", "dependency:copy-dependencies", "-DincludeScope=runtime",
               f"-DoutputDirectory={staging}"]
        try:
            proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Unavailable(f"Maven did not resolve Kafka {version} within {timeout:.0f} s") from None
        if proc.returncode != 0 or not any(staging.glob("kafka_2.13-*.jar")):
            last = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or ["no output"]
            raise Unavailable(f"Maven could not resolve Kafka {version}: {last[0][:200]}")
        if dest.exists():
            shutil.rmtree(dest)
        shutil.move(str(staging), dest)
    (dest / ".complete").write_text(version + "\n")
    return dest


def unavailable_reason(version: str) -> str | None:
    """One line saying why the broker tests of ``version`` cannot run here, or None."""
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        return "broker tests need confluent-kafka (pip install -e '.[test]')"
    if shutil.which("java") is None:
        return "broker tests need Java 17+ on PATH"
    try:
        jars(version)
    except Unavailable as e:
        return f"broker tests: {e}"
    return None


def classpath(version: str) -> str:
    return os.pathsep.join(sorted(str(p) for p in jars(version).glob("*.jar")))


if __name__ == "__main__":
    import sys
    for v in sys.argv[1:] or [DEFAULT_VERSION]:
        print(v, jars(v))
