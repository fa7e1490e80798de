#!/usr/bin/env python3
"""Benchmark (not a test): does each command's cost grow linearly with its input? dump-log, verify, recover
and export's reader over one partition from 64 MiB to 4 GiB, and verify, recover and export's reader over a
log directory of 1,000 to 10,000 partitions; a table and a plot (PNG).

    python tools/bench_growth.py [--dir ~/.cache/kafkalog/bench/growth] [--sizes 64,256,1024,4096]
                                 [--partitions 1000,3000,10000] [--repeat 1] [--png docs/performance/growth.png]
                                 [--json FILE]

Data (built once into --dir, reused): a partition of SIZE MiB in segments of at most 1 GiB of 50-record
batches (10-byte keys, 100-byte values, one header: tools/bench.py's segment), checkpoints as after a clean
shutdown; a log directory of N partitions of one two-batch segment each (tools/bench_scale.py's). Commands,
each a whole process, output to /dev/null: ``dump-log --deep-iteration --print-data-log`` (partitions only),
``verify``, ``recover --dry-run --all-segments`` (recovery's full validation of every segment, nothing
written), and export's reader: what each Spark task of ``kafkalog export`` runs per range
(``spark.plan.plan_ranges`` + ``spark.rows.read_range`` into Arrow), without Spark itself, whose start-up
is a constant (see the Performance page). Measured: CPU time (user + system, wait4), wall time, peak RSS
(the child's VmHWM). The plot shows CPU seconds against input size on log-log axes, with the line of
exactly linear growth through the smallest point: a command on that line grows linearly.

Requires matplotlib for the PNG (``pip install matplotlib``; the table is printed without it).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _p in (ROOT / "tools", ROOT / "tests", ROOT):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from bench import ENV, RSS_WRAPPER, make_segment  # noqa: E402
from bench_scale import _logdir_files, build_partitions  # noqa: E402

MiB = 1 << 20
SEGMENT_MB = 1024

READER = """
import os, sys
from kafkalog_cli.spark import problems as P
from kafkalog_cli.spark.options import ReadOptions
from kafkalog_cli.spark.plan import plan_ranges
from kafkalog_cli.spark.rows import read_range
opts = ReadOptions(on_error="skip")
sink = P.ReadSink("skip")
rows = sum(b.num_rows for r in plan_ranges([sys.argv[1]], opts).ranges for b in read_range(r, opts, sink=sink))
with open("/proc/self/status") as f:
    kb = next(line.split()[1] for line in f if line.startswith("VmHWM"))
with open(os.environ["KAFKALOG_BENCH_RSS"], "w") as o:
    o.write(kb)
"""


def default_dir() -> Path:
    sys.path.insert(0, str(ROOT / "tests" / "kafka"))
    import jars
    return jars.cache_root() / "bench" / "growth"


def build_partition(root: Path, mb: int) -> dict:
    """A log directory holding partition ``big-0`` of ``mb`` MiB in segments of at most SEGMENT_MB."""
    d = root / "big-0"
    d.mkdir(parents=True)
    base, left = 0, mb
    while left > 0:
        part = min(left, SEGMENT_MB)
        _size, records = make_segment(d / f"{base:020d}.log", part, base_offset=base)
        base += records
        left -= part
    _logdir_files(root, {("big", 0): base})
    (root / ".kafka_cleanshutdown").write_bytes(b"")
    return {"records": base}


def ensure(base: Path, name: str, build) -> tuple[Path, dict]:
    root, stamp = base / name / "logdir", base / name / "done.json"
    if stamp.exists():
        return root, json.loads(stamp.read_text())
    shutil.rmtree(base / name, ignore_errors=True)
    root.mkdir(parents=True)
    t = time.perf_counter()
    info = build(root) or {}
    info["bytes"] = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    stamp.write_text(json.dumps(info))
    print(f"  built {name}: {info['bytes'] / MiB:,.0f} MiB in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    return root, info


def measure(argv: list[str]) -> dict:
    """wall, CPU (wait4) and peak RSS (VmHWM) of one run; ``argv`` is kafkalog's arguments, or
    ["<export-reader>", PATH]."""
    rss_file = tempfile.NamedTemporaryFile(prefix="kafkalog-growth-rss", delete=False).name
    env = dict(ENV, KAFKALOG_BENCH_RSS=rss_file)
    if argv[0] == "<export-reader>":
        cmd = [sys.executable, "-c", READER, argv[1]]
    else:
        cmd = [sys.executable, "-c", RSS_WRAPPER, *argv]
    with open(os.devnull, "w") as out:
        t = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, env=env)
        _pid, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
    try:
        rss = int(Path(rss_file).read_text() or 0) * 1024
    finally:
        os.unlink(rss_file)
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss": rss, "code": os.waitstatus_to_exitcode(status)}


def commands(kind: str, root: Path) -> list[tuple[str, list[str]]]:
    if kind == "size":
        p = str(root / "big-0")
        return [("dump-log --deep-iteration --print-data-log", ["dump-log", "--deep-iteration", "--print-data-log", p]),
                ("verify", ["verify", p]),
                ("recover --dry-run --all-segments", ["recover", "--dry-run", "--all-segments", str(root)]),
                ("export's reader", ["<export-reader>", p])]
    return [("verify", ["verify", str(root)]),
            ("recover --dry-run --all-segments", ["recover", "--dry-run", "--all-segments", str(root)]),
            ("export's reader", ["<export-reader>", str(root)])]


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def run(args) -> dict:
    base = args.dir
    base.mkdir(parents=True, exist_ok=True)
    results = {"load_before": loadavg(), "size": {}, "partitions": {}}
    axes = [("size", mb, f"partition-{mb}mib", lambda r, mb=mb: build_partition(r, mb)) for mb in args.sizes] + \
           [("partitions", n, f"partitions-{n}", lambda r, n=n: {"partitions": build_partitions(r, n)})
            for n in args.partitions]
    for kind, x, name, build in axes:
        root, info = ensure(base, name, build)
        for label, argv in commands(kind, root):
            runs = [measure(argv) for _ in range(args.repeat)]
            r = {k: statistics.median(v[k] for v in runs) for k in ("wall", "cpu", "rss")}
            r.update(code=runs[-1]["code"], bytes=info["bytes"], load=loadavg())
            results[kind].setdefault(label, {})[str(x)] = r
            unit = "MiB" if kind == "size" else "partitions"
            print(f"{kind:10} {x:>6} {unit:10} {label:44} cpu {r['cpu']:8.2f} s  wall {r['wall']:8.2f} s  "
                  f"rss {r['rss'] / MiB:6.1f} MiB  exit {r['code']}  load {r['load']}", flush=True)
    results["load_after"] = loadavg()
    return results


def growth_table(results: dict) -> str:
    """Markdown: CPU seconds at each point and the CPU per input unit at the largest point over the smallest
    (1.00: exactly linear)."""
    lines = []
    for kind, unit in (("size", "MiB per partition"), ("partitions", "partitions per log directory")):
        data = results[kind]
        if not data:
            continue
        xs = sorted({int(x) for d in data.values() for x in d})
        lines.append(f"| {unit} | " + " | ".join(f"{x:,}" for x in xs) + " | growth |")
        lines.append("|---|" + "---:|" * (len(xs) + 1))
        for label, d in data.items():
            cells = [f"{d[str(x)]['cpu']:.2f} s" if str(x) in d else "" for x in xs]
            lo, hi = d.get(str(xs[0])), d.get(str(xs[-1]))
            g = (hi["cpu"] / xs[-1]) / (lo["cpu"] / xs[0]) if lo and hi and lo["cpu"] else float("nan")
            lines.append(f"| `{label}` CPU | " + " | ".join(cells) + f" | {g:.2f} |")
            peak = max(v["rss"] for v in d.values())
            lines.append(f"| `{label}` peak RSS | " + " | ".join(f"{d[str(x)]['rss'] / MiB:.0f} MiB" if str(x) in d
                                                                  else "" for x in xs) + f" | max {peak / MiB:.0f} MiB |")
        lines.append("")
    return "\n".join(lines)


def plot(results: dict, png: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    for ax, (kind, xlabel) in zip(axes, (("size", "partition size (MiB)"),
                                          ("partitions", "partitions in the log directory"))):
        data = results[kind]
        for label, d in data.items():
            xs = sorted(int(x) for x in d)
            ys = [d[str(x)]["cpu"] for x in xs]
            line, = ax.plot(xs, ys, marker="o", label=label)
            if ys[0] > 0:                           # exactly linear growth through the smallest point
                ax.plot(xs, [ys[0] * x / xs[0] for x in xs], linestyle=":", color=line.get_color(), alpha=0.6)
        ax.set_xscale("log")
        ax.set_yscale("log")
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _p: f"{v:,g}"))
        ax.set_xlabel(xlabel)
        ax.set_ylabel("CPU seconds (user + system)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("kafkalog: CPU time against input size (dotted: exactly linear growth)", fontsize=11)
    fig.text(0.01, 0.01, f"load average {results['load_before']} before, {results['load_after']} after; "
             "2 cores shared with other work", fontsize=7)
    fig.tight_layout(rect=(0, 0.03, 1, 0.95))
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--sizes", default="64,256,1024,4096", help="partition sizes in MiB")
    ap.add_argument("--partitions", default="1000,3000,10000", help="partition counts")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--png", type=Path, default=ROOT / "docs" / "performance" / "growth.png")
    ap.add_argument("--json", type=Path, default=None, help="write the figures here too")
    ap.add_argument("--from-json", type=Path, default=None, help="plot and tabulate an earlier run's figures")
    args = ap.parse_args()
    args.sizes = [int(x) for x in args.sizes.split(",") if x]
    args.partitions = [int(x) for x in args.partitions.split(",") if x]
    args.dir = args.dir or default_dir()
    results = json.loads(args.from_json.read_text()) if args.from_json else run(args)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print()
    print(growth_table(results))
    try:
        plot(results, args.png)
        print(f"plot: {args.png}")
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
