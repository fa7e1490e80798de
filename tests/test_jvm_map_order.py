"""jvm_map_order against the JVM itself: the order Scala 2.13's ``mutable.HashMap`` (DumpLogSegments' report
maps in the Scala tool, 3.x and 4.0) iterates seeded sets of path-like keys in, sizes 1-40 (the table
doubling at 12 and 24 entries), ASCII and non-ASCII (UTF-16 surrogate pairs) alike; Java's ``HashMap``
(the later Java tool) gives the same order where no two keys share a bucket and the table did not grow.

Run with the ``scala-library`` jar of a Kafka release the broker tests resolved (``~/.cache/kafkalog``);
skipped with the reason where Java or the jar is missing."""
from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from kafkalog_cli.render.jvm_map_order import _improved, path_hash, scala_hash_map_order
from kafkalog_formats.java_text import java_string_hash

JAVA_SOURCE = """
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
public class MapOrder {
  public static void main(String[] a) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, "UTF-8");
    List<String> keys = new ArrayList<>();
    for (String line; (line = in.readLine()) != null; ) {
      if (!line.isEmpty()) { keys.add(line); continue; }
      scala.collection.mutable.HashMap<String, Object> scala = new scala.collection.mutable.HashMap<>();
      HashMap<String, Object> java = new HashMap<>();
      for (String k : keys) { scala.put(k, 1); java.put(k, 1); }
      StringBuilder s = new StringBuilder("S");
      scala.collection.Iterator<String> it = scala.keysIterator();
      while (it.hasNext()) s.append('\\t').append(it.next());
      StringBuilder j = new StringBuilder("J");
      for (String k : java.keySet()) j.append('\\t').append(k);
      out.println(s); out.println(j); out.println("H\\t" + (keys.isEmpty() ? 0 : keys.get(0).hashCode()));
      keys.clear();
    }
    out.flush();
  }
}
"""


def _scala_library() -> Path | None:
    home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kafkalog"
    jars = sorted(home.glob("kafka-*/scala-library-2.13.*.jar"))
    return jars[-1] if jars else None


def _groups() -> list[list[str]]:
    rng = random.Random(41)
    words = ["v0", "v1", "v1-appendtime", "orders", "__consumer_offsets", "tëst", "日本", "😀emoji", "a.b_c"]
    out = []
    for n in list(range(1, 41)) * 6:
        keys: list[str] = []
        while len(keys) < n:
            k = (f"/tmp/pytest-of-root/pytest-{rng.randrange(1000)}/legacy-3.7.0-{rng.randrange(9)}/data/"
                 f"{rng.choice(words)}-{rng.randrange(50)}/{rng.randrange(10**6):020d}"
                 f"{rng.choice(['.index', '.timeindex', '.log'])}")
            if k not in keys:
                keys.append(k)
        out.append(keys)
    return out


def test_hash_of_known_strings():
    # String.hashCode values every Java programmer can check by hand
    assert java_string_hash("") == 0 and java_string_hash("a") == 97 and java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -2**31
    assert java_string_hash("😀") == 0xD83D * 31 + 0xDE00                # two UTF-16 code units
    assert _improved(-1) == -65536                                      # 0xFFFFFFFF ^ 0x0000FFFF, signed


@pytest.mark.skipif(shutil.which("java") is None, reason="needs Java (java on PATH)")
def test_order_equals_scala_hash_map(tmp_path):
    jar = _scala_library()
    if jar is None:
        pytest.skip("needs scala-library 2.13 from a Kafka release the broker tests resolved (~/.cache/kafkalog)")
    src = tmp_path / "MapOrder.java"
    src.write_text(JAVA_SOURCE)
    groups = _groups()
    text = "".join("\n".join(g) + "\n\n" for g in groups)
    res = subprocess.run(["java", "-cp", str(jar), str(src)], input=text.encode(), capture_output=True, timeout=300)
    assert res.returncode == 0, res.stderr.decode()[-3000:]
    lines = res.stdout.decode("utf-8").splitlines()
    assert len(lines) == 3 * len(groups)
    agree = differ = 0
    for i, keys in enumerate(groups):
        scala, java, hashed = (lines[3 * i + j].split("\t")[1:] for j in range(3))
        assert int(hashed[0]) == java_string_hash(keys[0])
        assert scala_hash_map_order(keys) == scala, (len(keys), keys)
        buckets = {_improved(path_hash(k)) & 15 for k in keys}
        if len(keys) <= 11 and len(buckets) == len(keys):
            assert java == scala
            agree += 1
        differ += java != scala
    # the cases reach both: orders Java shares and orders it does not (collisions, growth)
    assert agree > 10 and differ > 10


def test_dump_log_prints_its_reports_in_the_maps_order():
    """The text renderer's end-of-run reports: files in the hash map's order, whatever order they were read
    in (two index files read in the reverse of that order)."""
    import io

    from kafkalog_cli.engine.dump import DumpReport
    from kafkalog_cli.render.kafka_text import TextRenderer
    a, b = "/data/v0-0/00000000000000000000.index", "/data/v1-appendtime-0/00000000000000000000.index"
    first, second = scala_hash_map_order([a, b])
    report = DumpReport()
    report.index_mismatches = {second: [(3, 4)], first: [(1, 2), (5, 6)]}
    report.non_consecutive = {second.replace(".index", ".log"): [(7, 9)], first.replace(".index", ".log"): [(1, 3)]}
    err = io.StringIO()
    TextRenderer(io.StringIO(), err).finish(report)
    lines = err.getvalue().splitlines()
    assert lines[:5] == [f"Mismatches in :{first}", "  Index offset: 5, log offset: 6",
                         "  Index offset: 1, log offset: 2", f"Mismatches in :{second}",
                         "  Index offset: 3, log offset: 4"]
    logs = [ln for ln in lines if ln.startswith("Non-consecutive")]
    assert logs == [f"Non-consecutive offsets in {k}" for k in scala_hash_map_order(report.non_consecutive)]
