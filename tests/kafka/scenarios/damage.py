"""The file damage of a scenario's fault plan, done to the stopped broker's log directory before the restart
(issue 36): a torn tail (the last bytes of a partition's newest segment cut), a zero tail (zeros appended,
as a crash leaves a preallocated or unwritten block), a flipped bit inside the newest segment's batches
(only after a kill: the broker then recovers that segment and finds it), a removed offset or time index,
and a stale checkpoint (the checkpoint files saved during the run put back, or an entry set back).

Each item draws its own bytes from its seed; an item whose partition or file is missing does nothing and
says so. Returns one line per item saying what was done.
"""
from __future__ import annotations

import random
import shutil
from pathlib import Path

import crash

from .workload import CHECKPOINTS


def _segments(part: Path) -> list[Path]:
    return sorted(p for p in part.glob("*.log") if p.name[:20].isdigit())


def apply(log_dir: Path, saved: Path | None, damage: list[dict]) -> list[str]:
    done = []
    for d in damage:
        rng = random.Random(d["seed"])
        part = log_dir / f"{d['topic']}-{d['partition']}"
        segs = _segments(part) if part.is_dir() else []
        logs = [s for s in segs if s.stat().st_size > 0]
        kind = d["kind"]
        if kind == "stale_checkpoint":
            if saved is not None and saved.is_dir() and any(saved.iterdir()):
                for name in CHECKPOINTS:
                    if (saved / name).is_file():
                        shutil.copy2(saved / name, log_dir / name)
                done.append("stale_checkpoint: the checkpoints saved during the run put back")
            elif segs:
                name = rng.choice(["recovery-point-offset-checkpoint", "replication-offset-checkpoint"])
                base = int(segs[rng.randrange(len(segs))].name[:20])
                crash.set_checkpoint_entry(log_dir, name, d["topic"], d["partition"], base)
                done.append(f"stale_checkpoint: {name} {part.name} set to {base}")
            continue
        if not logs:
            done.append(f"{kind}: {part.name} has no data, nothing done")
            continue
        last = logs[-1]
        size = last.stat().st_size
        if kind == "torn_tail":
            cut = rng.randint(1, min(size, 300))
            with open(last, "r+b") as f:
                f.truncate(size - cut)
            done.append(f"torn_tail: {last.parent.name}/{last.name} cut by {cut} bytes")
        elif kind == "zero_tail":
            target = rng.choice([last, last.with_suffix(".index"), last.with_suffix(".timeindex")])
            if not target.is_file():
                target = last
            n = rng.choice([1, 12, 61, 4096])
            with open(target, "ab") as f:
                f.write(b"\0" * n)
            done.append(f"zero_tail: {n} zero bytes after {target.parent.name}/{target.name}")
        elif kind == "flip_bit":
            pos = rng.randrange(size)
            with open(last, "r+b") as f:
                f.seek(pos)
                b = f.read(1)[0]
                f.seek(pos)
                f.write(bytes([b ^ (1 << rng.randrange(8))]))
            done.append(f"flip_bit: {last.parent.name}/{last.name} byte {pos}")
        elif kind == "remove_index":
            seg = rng.choice(segs)
            target = seg.with_suffix(rng.choice([".index", ".timeindex"]))
            if target.is_file():
                target.unlink()
                done.append(f"remove_index: {target.parent.name}/{target.name}")
            else:
                done.append(f"remove_index: {target.name} absent, nothing done")
    return done
