#!/usr/bin/env python3
"""Benchmark (not a test): ``kafkalog dump-log`` against Kafka's own ``kafka-dump-log.sh``
(``DumpLogSegments``) on the same broker-written segment.

    python tools/bench_kafka.py [--mb 1024] [--version 3.9.2] [--repeat 3] [--dir /tmp/kafkalog-bench-kafka]

Once (reused by later runs, in --dir): a real broker of --version (jars resolved with Maven as the broker
tests do, tests/kafka) writes one segment of about --mb MiB to a topic with ``segment.bytes`` above that:
confluent-kafka producing batches of 50 records (10-byte key, 100-byte value, one header), uncompressed.
Then, interleaved (--repeat rounds), for each of ``--deep-iteration``, ``--print-data-log`` and
``--verify-index-only`` (the ``.index``), output to /dev/null:

* ``kafka-dump-log``: ``java ... DumpLogSegments`` as the script runs it, JVM start included (the JVM options
  of kafka-run-class.sh: G1, -Xmx256M... are not copied; the JVM's defaults with -Xmx1g);
* ``kafka-dump-log (warm JVM)``: the same ``main`` called repeatedly in one JVM (a tiny Java launcher); the
  median of the calls after the first two (JIT warmed up);
* ``kafkalog dump-log``: the command as a whole process (start-up included).

Wall time (median) and CPU time (user + system of the child; the JVM's JIT and GC threads included) are
reported, with the ratio of kafkalog's wall time to each Kafka figure.
"""
from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "kafka"))

import broker as kbroker  # noqa: E402
import jars  # noqa: E402

MiB = 1 << 20
OPTIONS = {"deep-iteration": ("--deep-iteration",), "print-data-log": ("--print-data-log",),
           "verify-index-only": ("--verify-index-only",)}

WARM = """
import java.io.*;
public class WarmDump {
  public static void main(String[] a) throws Exception {
    int n = Integer.parseInt(a[0]);
    String[] args = java.util.Arrays.copyOfRange(a, 2, a.length);
    Class<?> c = Class.forName(a[1]);
    java.lang.reflect.Method m = c.getMethod("main", String[].class);
    PrintStream real = System.out;
    System.setOut(new PrintStream(new FileOutputStream("/dev/null"), false));
    for (int i = 0; i < n; i++) {
      long t = System.nanoTime();
      m.invoke(null, (Object) args);
      System.out.flush();
      real.println((System.nanoTime() - t) / 1e9);
    }
  }
}
"""


def write_segment(d: Path, version: str, mb: int) -> Path:
    """The broker-written segment (and its indexes) of --mb MiB, copied out of the broker's directory."""
    out = d / f"kafka-{version}-{mb}"
    if (out / "done").is_file():
        return out
    import clients
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    b = kbroker.Broker(version, Path(tempfile.mkdtemp(prefix="bench-broker-", dir=d)))
    try:
        b.start()
        clients.create_topic(b.bootstrap, "bench", config={"segment.bytes": min(2**31 - 1, (mb + 64) * MiB),
                                                           "retention.ms": -1})
        p = clients.producer(b.bootstrap, batch_num_messages=50, linger_ms=20, batch_size=1 << 20,
                             queue_buffering_max_messages=1_000_000, acks=1)
        rng = random.Random(1)
        value = bytes(rng.randrange(256) for _ in range(100))
        headers = [("h", b"v")]
        t = time.perf_counter()
        target = mb * MiB
        i = 0
        while True:
            for _ in range(100_000):
                while True:
                    try:
                        p.produce("bench", key=b"key-%06d" % (i % 1_000_000), value=value, headers=headers,
                                  partition=0)
                        break
                    except BufferError:
                        p.poll(0.05)
                i += 1
            p.poll(0)
            if (b.log_dir / "bench-0" / "00000000000000000000.log").stat().st_size >= target:
                break
        p.flush(120)
        b.stop()
        print(f"  broker {version} wrote {i} records in {time.perf_counter() - t:.0f} s", file=sys.stderr)
        for f in (b.log_dir / "bench-0").glob("00000000000000000000.*"):
            shutil.copy2(f, out / f.name)
    finally:
        b.close()
        shutil.rmtree(b.home, ignore_errors=True)
    (out / "done").write_text("")
    return out


def timed(cmd: list[str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    with open(os.devnull, "wb") as null:
        subprocess.run(cmd, stdout=null, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=1024)
    ap.add_argument("--version", default=jars.DEFAULT_VERSION)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--warm-calls", type=int, default=6)
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "kafkalog-bench-kafka")
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    seg_dir = write_segment(args.dir, args.version, args.mb)
    log, index = seg_dir / "00000000000000000000.log", seg_dir / "00000000000000000000.index"
    size = log.stat().st_size
    main_class = kbroker.tool_main(args.version, "DumpLogSegments")
    cp = jars.classpath(args.version)
    java = [kbroker.java(), "-Xmx1g", "-Dlog4j.configuration=file:/dev/null",
            "-Dlog4j2.configurationFile=/dev/null", "-cp", cp]
    warm_src = args.dir / "WarmDump.java"
    warm_src.write_text(WARM)
    rows = []
    for name, opts in OPTIONS.items():
        target = index if name == "verify-index-only" else log
        kafka_cmd = [*java, main_class, "--files", str(target), *opts]
        ours_cmd = [sys.executable, "-m", "kafkalog_cli", "dump-log", *opts, str(target)]
        res = {"kafka": [], "ours": []}
        for _ in range(args.repeat):
            res["kafka"].append(timed(kafka_cmd))
            res["ours"].append(timed(ours_cmd))
        warm = subprocess.run([*java, str(warm_src), str(args.warm_calls), main_class, "--files", str(target),
                               *opts], capture_output=True, text=True, check=True)
        calls = [float(x) for x in warm.stdout.split()]
        rows.append((name, res, statistics.median(calls[2:] or calls)))
    print(f"segment: {size / MiB:.0f} MiB written by Kafka {args.version}, {args.repeat} rounds")
    print(f"{'option':<20} {'kafka-dump-log wall/CPU s':>26} {'warm JVM s':>11} {'kafkalog wall/CPU s':>20} "
          f"{'vs cold':>8} {'vs warm':>8}")
    for name, res, warm in rows:
        kw = statistics.median(w for w, _ in res["kafka"])
        kc = statistics.median(c for _, c in res["kafka"])
        ow = statistics.median(w for w, _ in res["ours"])
        oc = statistics.median(c for _, c in res["ours"])
        print(f"{name:<20} {kw:>14.2f} / {kc:>8.2f} {warm:>11.2f} {ow:>10.2f} / {oc:>7.2f} "
              f"{kw / ow:>7.1f}x {warm / ow:>7.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
