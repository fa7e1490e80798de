#!/usr/bin/env python3
"""Benchmark (not a test): kafkalog against Kafka's own ``kafka-dump-log.sh`` (``DumpLogSegments``) on the
same broker-written segment, side by side in one run.

    python tools/bench_kafka.py [--mb 128] [--codecs none,gzip,snappy,lz4,zstd] [--version 3.9.2]
                                [--repeat 3] [--paths print-data-log,verify] [--dir ~/.cache/kafkalog/bench]

The segment (written once, reused by later runs; cached outside the repository in --dir): a real broker of
--version (jars resolved with Maven as the broker tests do, tests/kafka) and Kafka's own Java producer
(``KafkaProducer`` of the same release, its defaults: idempotent, acks=all, batch.size 16384; linger.ms 5),
one producer per codec of --codecs sending in turn to partition 0 of a topic whose ``segment.bytes`` is
above --mb, until the segment holds --mb MiB. Records: a key (``user-NNNNNNN``), a JSON value of 90-400
bytes, and on every third record one or two headers.

The paths (--paths), each run interleaved --repeat rounds, output to /dev/null:

* ``print-data-log``: ``kafkalog dump-log --deep-iteration --print-data-log`` against ``DumpLogSegments
  --deep-iteration --print-data-log`` (both print a line per record with its key and value);
* ``verify``: ``kafkalog verify`` (deep: every record decoded and checked) against ``DumpLogSegments
  --deep-iteration`` (Kafka's deepest read: every batch decompressed and every record's metadata printed);
* ``deep-iteration``: ``kafkalog dump-log --deep-iteration`` against the same;
* ``verify-index-only``: the ``.index`` file, both with ``--verify-index-only``.

Kafka's tool is timed as ``kafka-dump-log.sh`` runs it (the JVM options of kafka-run-class.sh: -Xmx256M,
G1...), JVM start-up included, and as ``main`` called again in one warm JVM (a tiny Java launcher; the
median of the calls after the first two: no start-up, JIT warmed up). kafkalog is timed as the whole
command (Python start-up and imports included; its modules byte-compiled first, as pip installs them). Wall and CPU time (user + system of the process and its
threads: the JVM's JIT and GC threads included) are the medians of the rounds; the ratios are Kafka's
figure over kafkalog's. The load average is printed before and after: on a shared machine compare CPU.
"""
from __future__ import annotations

import argparse
import os
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
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
# path -> (kafka-dump-log options, kafkalog's arguments before the file, the file: log or index)
PATHS = {
    "print-data-log": (("--deep-iteration", "--print-data-log"),
                       ("dump-log", "--deep-iteration", "--print-data-log"), "log"),
    "verify": (("--deep-iteration",), ("verify",), "log"),
    "deep-iteration": (("--deep-iteration",), ("dump-log", "--deep-iteration"), "log"),
    "verify-index-only": (("--verify-index-only",), ("dump-log", "--verify-index-only"), "index"),
}
# kafka-run-class.sh's defaults (KAFKA_HEAP_OPTS, KAFKA_JVM_PERFORMANCE_OPTS), as kafka-dump-log.sh runs
KAFKA_JVM = ["-Xmx256M", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
             "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
             "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true"]

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

# Kafka's own producer: one KafkaProducer per codec, in turn, until the segment file reaches its size
PRODUCE = """
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArraySerializer;
public class BenchProduce {
  static final String[] ACTIONS = {"view", "click", "add_to_cart", "checkout", "search", "login"};
  public static void main(String[] a) throws Exception {
    String bootstrap = a[0], topic = a[1];
    Path segment = Paths.get(a[2]);
    long target = Long.parseLong(a[3]);
    String[] codecs = a[4].split(",");
    List<KafkaProducer<byte[], byte[]>> producers = new ArrayList<>();
    for (String codec : codecs) {
      Properties p = new Properties();
      p.put("bootstrap.servers", bootstrap);
      p.put("compression.type", codec);
      p.put("linger.ms", "5");
      p.put("client.id", "bench-" + codec);
      producers.add(new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer()));
    }
    Random rng = new Random(1);
    long n = 0;
    StringBuilder sb = new StringBuilder();
    while (Files.size(segment) < target) {
      for (KafkaProducer<byte[], byte[]> producer : producers) {
        for (int i = 0; i < 400; i++, n++) {
          byte[] key = String.format("user-%07d", rng.nextInt(2_000_000)).getBytes(StandardCharsets.UTF_8);
          sb.setLength(0);
          sb.append("{\\"event_id\\":\\"").append(Long.toHexString(rng.nextLong())).append(Long.toHexString(n))
            .append("\\",\\"action\\":\\"").append(ACTIONS[rng.nextInt(ACTIONS.length)])
            .append("\\",\\"page\\":\\"/products/").append(rng.nextInt(50_000))
            .append("\\",\\"ts\\":").append(1_700_000_000_000L + n * 7)
            .append(",\\"amount\\":").append(rng.nextInt(100_000) / 100.0)
            .append(",\\"note\\":\\"");
          int words = rng.nextInt(40);
          for (int w = 0; w < words; w++)
            sb.append(ACTIONS[rng.nextInt(ACTIONS.length)]).append(w % 5 == 4 ? ". " : " ");
          sb.append("\\"}");
          ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, 0, key,
              sb.toString().getBytes(StandardCharsets.UTF_8));
          if (n % 3 == 0) {
            r.headers().add(new RecordHeader("trace-id", Long.toHexString(rng.nextLong()).getBytes(StandardCharsets.UTF_8)));
            if (n % 2 == 0)
              r.headers().add(new RecordHeader("source", "web".getBytes(StandardCharsets.UTF_8)));
          }
          producer.send(r);
        }
      }
      if (n % 20_000 == 0)
        for (KafkaProducer<byte[], byte[]> producer : producers)
          producer.flush();
    }
    for (KafkaProducer<byte[], byte[]> producer : producers)
      producer.close();
    System.out.println(n);
  }
}
"""


def default_dir() -> Path:
    return jars.cache_root() / "bench"


def write_segment(d: Path, version: str, mb: int, codecs: tuple[str, ...]) -> Path:
    """The broker-written segment (and its indexes) of --mb MiB, copied out of the broker's directory."""
    out = d / f"kafka-{version}-{mb}-{'-'.join(codecs)}"
    if (out / "done").is_file():
        return out
    import clients
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    b = kbroker.Broker(version, Path(tempfile.mkdtemp(prefix="bench-broker-", dir=d)))
    try:
        b.start()
        clients.create_topic(b.bootstrap, "bench", config={"segment.bytes": min(2**31 - 1, (mb + 64) * MiB),
                                                           "retention.ms": -1, "compression.type": "producer"})
        src = Path(b.home, "BenchProduce.java")
        src.write_text(PRODUCE)
        t = time.perf_counter()
        seg = b.log_dir / "bench-0" / "00000000000000000000.log"
        res = subprocess.run([kbroker.java(), "-Xmx512m", "-Dlog4j.configuration=file:/dev/null",
                              "-cp", jars.classpath(version), str(src), b.bootstrap, "bench", str(seg),
                              str(mb * MiB), ",".join(codecs)], capture_output=True, text=True, timeout=3600)
        if res.returncode != 0:
            raise RuntimeError(f"the producer failed: {res.stderr[-2000:]}")
        b.stop()
        print(f"  Kafka {version}'s producer and broker wrote {res.stdout.strip()} records in "
              f"{time.perf_counter() - t:.0f} s", file=sys.stderr)
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
        subprocess.run(cmd, stdout=null, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def byte_compile() -> None:
    """kafkalog's modules compiled to bytecode once, as pip does when it installs a package: with
    PYTHONDONTWRITEBYTECODE set (as in the test environment) every run would compile them again."""
    import compileall
    import importlib.util
    for name in ("kafkalog_cli", "kafkalog_formats"):
        spec = importlib.util.find_spec(name)
        if spec and spec.submodule_search_locations:
            for d in spec.submodule_search_locations:
                compileall.compile_dir(d, quiet=2)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=128)
    ap.add_argument("--codecs", default=",".join(CODECS), help="the producers' codecs, in turn")
    ap.add_argument("--version", default=jars.DEFAULT_VERSION)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--paths", default="print-data-log,verify", help=f"of {', '.join(PATHS)}")
    ap.add_argument("--warm-calls", type=int, default=6, help="0: no warm-JVM figure")
    ap.add_argument("--dir", type=Path, default=default_dir())
    args = ap.parse_args()
    codecs = tuple(c for c in args.codecs.split(",") if c)
    if not codecs or set(codecs) - set(CODECS):
        ap.error(f"--codecs: of {', '.join(CODECS)}")
    paths = [p for p in args.paths.split(",") if p]
    if not paths or set(paths) - set(PATHS):
        ap.error(f"--paths: of {', '.join(PATHS)}")
    args.dir.mkdir(parents=True, exist_ok=True)
    seg_dir = write_segment(args.dir, args.version, args.mb, codecs)
    files = {"log": seg_dir / "00000000000000000000.log", "index": seg_dir / "00000000000000000000.index"}
    size = files["log"].stat().st_size
    main_class = kbroker.tool_main(args.version, "DumpLogSegments")
    cp = jars.classpath(args.version)
    java = [kbroker.java(), *KAFKA_JVM, "-Dlog4j.configuration=file:/dev/null",
            "-Dlog4j2.configurationFile=/dev/null", "-cp", cp]
    warm_src = args.dir / "WarmDump.java"
    warm_src.write_text(WARM)
    byte_compile()
    load = [loadavg()]
    rows = []
    for name in paths:
        kafka_opts, ours, which = PATHS[name]
        target = str(files[which])
        kafka_cmd = [*java, main_class, "--files", target, *kafka_opts]
        ours_cmd = [sys.executable, "-m", "kafkalog_cli", *ours, target]
        res = {"kafka": [], "ours": []}
        for _ in range(args.repeat):
            res["kafka"].append(timed(kafka_cmd))
            res["ours"].append(timed(ours_cmd))
        warm = None
        if args.warm_calls:
            out = subprocess.run([*java, str(warm_src), str(args.warm_calls), main_class, "--files", target,
                                  *kafka_opts], capture_output=True, text=True, check=True)
            calls = [float(x) for x in out.stdout.split()]
            warm = statistics.median(calls[2:] or calls)
        rows.append((name, kafka_opts, ours, res, warm))
    load.append(loadavg())
    print(f"segment: {size / MiB:.0f} MiB written by Kafka {args.version} ({', '.join(codecs)}), "
          f"{args.repeat} rounds; load average {load[0]} before, {load[1]} after")
    print(f"{'path':<16} {'kafka-dump-log wall / CPU s':>27} {'warm JVM s':>10} {'kafkalog wall / CPU s':>22} "
          f"{'ratio wall':>10} {'ratio CPU':>10} {'vs warm':>8}")
    for name, kafka_opts, ours, res, warm in rows:
        kw = statistics.median(w for w, _ in res["kafka"])
        kc = statistics.median(c for _, c in res["kafka"])
        ow = statistics.median(w for w, _ in res["ours"])
        oc = statistics.median(c for _, c in res["ours"])
        warm_s = f"{warm:>10.2f}" if warm is not None else f"{'':>10}"
        vs_warm = f"{warm / ow:>7.1f}x" if warm is not None else f"{'':>8}"
        print(f"{name:<16} {kw:>15.2f} / {kc:>8.2f} {warm_s} {ow:>12.2f} / {oc:>6.2f} "
              f"{kw / ow:>9.1f}x {kc / oc:>9.1f}x {vs_warm}")
    print("kafka-dump-log: java ... DumpLogSegments " + "; ".join(
        f"{n}: {' '.join(k)}" for n, k, *_ in rows))
    print("kafkalog: " + "; ".join(f"{n}: kafkalog {' '.join(o)}" for n, _, o, *_ in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
