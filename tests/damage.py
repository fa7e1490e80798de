"""Hostile damage for the fuzz tests and the fuzz harness (``tools/fuzz_harness.py``).

Two layers:

* hypothesis strategies over one file (``edits``/``CUT``/``damage_file``), used by the property tests;
* ``MUTATORS``: seeded, directory-level mutations an attacker would make to a copy of a real log
  directory — bit flips, truncations, hostile length/count fields and structural edits of v2 batches with
  the CRC recomputed (so the deep paths are reached), record-level damage inside compressed batches
  (recompressed, CRC fixed), decompression bombs in every codec, sparse huge files, huge numbers and
  garbage in every text file, hostile index entries, and FIFOs, devices and symlinks in place of files.

Every mutator is ``fn(logdir, partition_dir, rng, assets) -> str`` (a one-line description) and works
on real bytes; ``mutate`` picks one (or several) by name or at random. Nothing here imports kafkalog's
decoders except the batch writer and CRC, so a bug in the reader cannot hide a mutation.
"""
from __future__ import annotations

import mmap
import os
import random
import struct
import zlib
from pathlib import Path

from hypothesis import strategies as st

from kafkalog_formats import codecs
from kafkalog_formats.crc import crc32c

# --- hypothesis, one file ------------------------------------------------------------------------



#: the largest file a mutator reads and rewrites whole: an earlier mutation of the same case may have made
#: a file sparse and huge (``sparse_huge``, ``sparse_files``: 3-64 GiB), which must not be read into memory
WHOLE_FILE_BYTES = 64 << 20


def _whole(path: Path) -> bytes:
    """The bytes of ``path`` for a mutator that rewrites it; ValueError (the mutation is not applied) for a
    file above ``WHOLE_FILE_BYTES``."""
    size = path.stat().st_size
    if size > WHOLE_FILE_BYTES:
        raise ValueError(f"{path.name} is {size} bytes, too large to rewrite whole")
    return path.read_bytes()


def _head(path: Path, n: int) -> bytes:
    with open(path, "rb") as f:
        return f.read(n)

def edits(max_size: int):
    """(relative position in [0, 1), new byte value) pairs."""
    return st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), min_size=1,
                    max_size=max_size)


CUT = st.one_of(st.none(), st.floats(0, 1))


def damage_file(path: Path, changes, cut) -> None:
    """Overwrite ``path`` with its bytes changed as ``changes`` says, then cut at ``cut`` of its length."""
    data = bytearray(_whole(path))
    for where, value in changes:
        data[int(where * len(data))] = value
    if cut is not None:
        data = data[:int(cut * len(data))]
    path.write_bytes(bytes(data))


# --- v2 batch surgery ----------------------------------------------------------------------------

HEADER = struct.Struct(">qiibIhiqqqhii")        # DefaultRecordBatch header, 61 bytes
GIB = 1 << 30


def v2_batches(data: bytes) -> list[tuple[int, int]]:
    """(position, size) of the v2 batches a forward walk finds (stops at the first framing problem)."""
    out, pos, n = [], 0, len(data)
    while n - pos > 17:
        size = struct.unpack_from(">i", data, pos + 8)[0]
        if size < 14 or pos + 12 + size > n:
            break
        if data[pos + 16] >= 2 and size + 12 >= 61:
            out.append((pos, size + 12))
        pos += 12 + size
    return out


def fix_crc(buf: bytearray, pos: int) -> None:
    """Recompute the CRC-32C of the v2 batch at ``pos`` (its length field says where it ends)."""
    size = struct.unpack_from(">i", buf, pos + 8)[0] + 12
    struct.pack_into(">I", buf, pos + 17, crc32c(memoryview(buf)[pos + 21:pos + size]))


def make_batch(base_offset: int, records: bytes, count: int, codec: int = 0, *, last_delta: int | None = None,
               attributes: int = 0, timestamp: int = 1_700_000_000_000) -> bytes:
    """A v2 batch around an already encoded (maybe compressed) records section, CRC correct."""
    last = count - 1 if last_delta is None else last_delta
    head = HEADER.pack(base_offset, 49 + len(records), 0, 2, 0, attributes | codec, last, timestamp, timestamp,
                       -1, -1, -1, count)
    out = bytearray(head + records)
    fix_crc(out, 0)
    return bytes(out)


def tiny_records(n: int) -> bytes:
    """``n`` minimal valid records (null key and value, no headers), offset deltas 0..n-1."""
    parts = []
    for i in range(n):
        z = (i << 1) ^ (i >> 63)
        d = bytearray()
        while z >= 0x80:
            d.append((z & 0x7F) | 0x80)
            z >>= 7
        d.append(z)
        body = b"\x00\x00" + bytes(d) + b"\x01\x01\x00"
        parts.append(bytes(((len(body) << 1),)) + body)
    return b"".join(parts)


def _varint(z: int, out: bytearray) -> None:
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)


def keyed_records(keys: list, value: bytes = b"v") -> bytes:
    """One valid record per key (offset deltas 0.., timestamp delta 0, no headers): a records section."""
    parts = bytearray()
    for i, k in enumerate(keys):
        body = bytearray(b"\x00\x00")
        _varint(i << 1, body)
        _varint(len(k) << 1, body)
        body += k
        _varint(len(value) << 1, body)
        body += value + b"\x00"
        _varint(len(body) << 1, parts)
        parts += body
    return bytes(parts)


# --- assets built once (bombs, the CRC of a huge zero batch) --------------------------------------

def headers_record(n: int) -> bytes:
    """Two records, offset deltas 0 and 1: key "k", value "v" and ``n`` headers of an empty key and a null
    value (two bytes each: ten million fit a 2 KB zstd batch), then one of key "l", value "w" and no headers."""
    body = bytearray(b"\x00\x00\x00\x02k\x02v")
    _varint(n << 1, body)                    # zig-zag of a count >= 0
    body += b"\x00\x01" * n
    out = bytearray()
    _varint(len(body) << 1, out)
    out += body
    return bytes(out) + b"\x10\x00\x00\x02\x02l\x02w\x00"


class Assets:
    """Expensive hostile payloads, built on first use and cached on disk (``directory``)."""

    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._mem: dict = {}

    def _cached(self, name: str, build) -> bytes:
        if name in self._mem:
            return self._mem[name]
        p = self.dir / name
        if not p.exists():
            tmp = p.with_suffix(f".{os.getpid()}.tmp")     # pytest-xdist's workers share the directory
            tmp.write_bytes(build())
            os.replace(tmp, p)
        data = p.read_bytes()
        self._mem[name] = data
        return data

    def bomb(self, codec: int) -> bytes:
        """A records section in ``codec`` that expands to about 2 GiB of zeros (snappy: 512 MiB)."""
        return self._cached(f"bomb-{codec}.bin", lambda: _bomb(codec))

    def record_bomb(self) -> bytes:
        """zstd records section of 3 million valid minimal records (about 25 MiB once decompressed)."""
        return self._cached("record-bomb.bin", lambda: codecs.compress(codecs.ZSTD, tiny_records(3_000_000)))

    def distinct_keys(self, n: int) -> bytes:
        """zstd records section of ``n`` records with distinct keys (``key-0000000``...)."""
        return self._cached(f"keys-{n}.bin", lambda: codecs.compress(
            codecs.ZSTD, keyed_records([b"key-%07d" % i for i in range(n)])))

    def many_headers(self, n: int) -> bytes:
        """zstd records section of two records: ``n`` two-byte headers (empty key, null value), then none."""
        return self._cached(f"headers-{n}.bin", lambda: codecs.compress(codecs.ZSTD, headers_record(n)))

    def huge_zero_batch_crc(self, size: int) -> int:
        """CRC-32C of a header template + zeros: a batch of ``size`` bytes whose records are a hole."""
        key = f"zcrc-{size}"
        if key not in self._mem:
            p = self.dir / f"{key}.txt"
            if not p.exists():
                head = _zero_batch_head(0, size)
                value = crc32c(head[21:])
                zero = bytes(1 << 24)
                left = size - len(head)
                while left:
                    n = min(left, len(zero))
                    from crc32c import crc32c as raw
                    value = raw(memoryview(zero)[:n], value)
                    left -= n
                tmp = p.with_suffix(f".{os.getpid()}.tmp")   # whole or absent for another worker
                tmp.write_text(str(value))
                os.replace(tmp, p)
            self._mem[key] = int(p.read_text())
        return self._mem[key]


def _zero_batch_head(base_offset: int, size: int) -> bytes:
    return HEADER.pack(base_offset, size - 12, 0, 2, 0, 0, 0, 1_700_000_000_000, 1_700_000_000_000, -1, -1,
                       -1, 1)


def _bomb(codec: int) -> bytes:
    zero = bytes(1 << 20)
    if codec == codecs.ZSTD:
        import zstandard
        c = zstandard.ZstdCompressor(level=3, write_content_size=False).compressobj()
        return b"".join([c.compress(zero) for _ in range(2048)] + [c.flush()])
    if codec == codecs.GZIP:
        c = zlib.compressobj(9, zlib.DEFLATED, 31)
        return b"".join([c.compress(zero) for _ in range(2048)] + [c.flush()])
    if codec == codecs.LZ4:        # one compressed 64 KiB block, repeated (Kafka's lz4 framing)
        one = codecs.compress(codecs.LZ4, bytes(65536))
        head, block_end = one[:7], one[:-4]
        block = block_end[7:]
        return head + block * 32768 + b"\x00\x00\x00\x00"
    one = codecs.compress(codecs.SNAPPY, bytes(32768))          # xerial header + one chunk
    return one[:16] + one[16:] * 16384


# --- the mutators --------------------------------------------------------------------------------

TEXT_FILES = ("recovery-point-offset-checkpoint", "replication-offset-checkpoint", "log-start-offset-checkpoint",
              "cleaner-offset-checkpoint", "meta.properties", "leader-epoch-checkpoint", "quorum-state",
              "partition.metadata")


def _files(root: Path, suffixes: tuple[str, ...] | None = None) -> list[Path]:
    out = []
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.is_symlink() and (suffixes is None or p.name.endswith(suffixes)):
            out.append(p)
    return out


def _pick(rng: random.Random, files: list[Path]) -> Path | None:
    return rng.choice(files) if files else None


def _logs(part: Path) -> list[Path]:
    return _files(part, (".log",)) + _files(part, (".checkpoint",))


def bit_flips(logdir, part, rng, assets) -> str:
    f = _pick(rng, _files(part) + _files(logdir, TEXT_FILES))
    if f is None or not f.stat().st_size:
        return "nothing to flip"
    data = bytearray(_whole(f))
    n = rng.choice((1, 1, 2, 3, 8, 32))
    for _ in range(n):
        i = rng.randrange(len(data))
        data[i] ^= 1 << rng.randrange(8)
    f.write_bytes(bytes(data))
    return f"{n} bit flips in {f.name}"


def truncate(logdir, part, rng, assets) -> str:
    f = _pick(rng, _files(part) + _files(logdir, TEXT_FILES))
    if f is None:
        return "nothing to cut"
    size = f.stat().st_size
    at = rng.choice((0, 1, size // 2, max(0, size - 1), rng.randrange(size + 1) if size else 0))
    os.truncate(f, at)
    return f"{f.name} cut to {at} bytes"


def overwrite(logdir, part, rng, assets) -> str:
    f = _pick(rng, _files(part))
    if f is None or not f.stat().st_size:
        return "nothing to overwrite"
    data = bytearray(_whole(f))
    i = rng.randrange(len(data))
    n = rng.choice((1, 4, 8, 64))
    fill = rng.choice((b"\x00", b"\xff", b"\x7f", None))
    chunk = bytes(rng.randrange(256) for _ in range(n)) if fill is None else fill * n
    data[i:i + n] = chunk[:len(data) - i]
    f.write_bytes(bytes(data))
    return f"{n} bytes at {i} of {f.name} overwritten"


_HOSTILE_INTS32 = (-1, 0, 1, 0x7FFFFFFF, -0x80000000, 0x40000000, 61, 60, 13, 14)
_HOSTILE_INTS64 = (-1, 0, 0x7FFFFFFFFFFFFFFF, -0x8000000000000000, 1 << 40)


def batch_fields(logdir, part, rng, assets) -> str:
    """A hostile length/count/offset field in one v2 batch, CRC recomputed."""
    f = _pick(rng, _logs(part))
    if f is None:
        return "no log"
    data = bytearray(_whole(f))
    batches = v2_batches(bytes(data))
    if not batches:
        return f"no v2 batch in {f.name}"
    pos, _size = rng.choice(batches)
    field = rng.choice(("count", "count", "last_delta", "base_offset", "length", "attributes", "codec",
                        "timestamps", "sequence", "magic"))
    if field == "count":
        v = rng.choice(_HOSTILE_INTS32 + (struct.unpack_from(">i", data, pos + 57)[0] + rng.choice((-1, 1)),))
        struct.pack_into(">i", data, pos + 57, v)
    elif field == "last_delta":
        struct.pack_into(">i", data, pos + 23, rng.choice(_HOSTILE_INTS32))
    elif field == "base_offset":
        struct.pack_into(">q", data, pos, rng.choice(_HOSTILE_INTS64 + (rng.randrange(200),)))
    elif field == "length":
        v = rng.choice(_HOSTILE_INTS32 + (struct.unpack_from(">i", data, pos + 8)[0] + rng.choice((-1, 1, 7)),))
        struct.pack_into(">i", data, pos + 8, v)
    elif field == "attributes":
        struct.pack_into(">h", data, pos + 21, rng.randrange(-0x8000, 0x8000))
    elif field == "codec":
        a = struct.unpack_from(">h", data, pos + 21)[0]
        struct.pack_into(">h", data, pos + 21, (a & ~7) | rng.randrange(8))
    elif field == "timestamps":
        struct.pack_into(">qq", data, pos + 27, rng.choice(_HOSTILE_INTS64), rng.choice(_HOSTILE_INTS64))
    elif field == "sequence":
        struct.pack_into(">qhi", data, pos + 43, rng.choice(_HOSTILE_INTS64), rng.randrange(-3, 3),
                         rng.choice(_HOSTILE_INTS32))
    else:
        data[pos + 16] = rng.choice((0, 1, 3, 0x7F, 0xFF))
    try:
        fix_crc(data, pos)
    except struct.error:
        pass
    f.write_bytes(bytes(data))
    return f"batch at {pos} of {f.name}: hostile {field}, CRC fixed"


def record_damage(logdir, part, rng, assets) -> str:
    """Damage inside the records of one batch (decompressed, edited, recompressed), CRC fixed."""
    f = _pick(rng, _logs(part))
    if f is None:
        return "no log"
    data = bytes(_whole(f))
    batches = v2_batches(data)
    if not batches:
        return f"no v2 batch in {f.name}"
    pos, size = rng.choice(batches)
    attrs = struct.unpack_from(">h", data, pos + 21)[0]
    codec = attrs & 7
    section = data[pos + 61:pos + size]
    try:
        raw = bytearray(codecs.decompress(codec, section) if codec else section)
    except Exception:
        return f"batch at {pos} of {f.name} does not decompress"
    what = rng.choice(("flip", "cut", "varint", "extend", "drop"))
    if what == "flip" and raw:
        for _ in range(rng.choice((1, 2, 4))):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
    elif what == "cut" and raw:
        del raw[rng.randrange(len(raw)):]
    elif what == "varint" and raw:
        i = rng.randrange(len(raw))
        raw[i:i + 1] = rng.choice((b"\xff" * 6, b"\xff\xff\xff\xff\x0f", b"\x80" * 10, b"\xfe\xff\xff\xff\x0f"))
    elif what == "extend":
        raw += tiny_records(rng.randrange(1, 5))
    else:
        raw = raw[: len(raw) // 2]
    try:
        body = codecs.compress(codec, bytes(raw)) if codec in (1, 2, 3, 4) else bytes(raw)
    except Exception:
        body = bytes(raw)
    batch = bytearray(data[pos:pos + 61] + body)
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    fix_crc(batch, 0)
    f.write_bytes(data[:pos] + bytes(batch) + data[pos + size:])
    return f"records of the batch at {pos} of {f.name}: {what} ({codecs.CODEC_NAMES.get(codec, codec)}), CRC fixed"


def structure(logdir, part, rng, assets) -> str:
    """Batches swapped, duplicated, dropped or renumbered (each batch's CRC stays valid)."""
    f = _pick(rng, _logs(part))
    if f is None:
        return "no log"
    data = _whole(f)
    batches = v2_batches(data)
    if len(batches) < 2:
        return f"fewer than two batches in {f.name}"
    chunks = [data[p:p + s] for p, s in batches]
    end = batches[-1][0] + batches[-1][1]
    what = rng.choice(("swap", "duplicate", "drop", "renumber", "reverse"))
    i, j = rng.randrange(len(chunks)), rng.randrange(len(chunks))
    if what == "swap":
        chunks[i], chunks[j] = chunks[j], chunks[i]
    elif what == "duplicate":
        chunks.insert(j, chunks[i])
    elif what == "drop":
        del chunks[i]
    elif what == "reverse":
        chunks.reverse()
    else:
        b = bytearray(chunks[i])
        struct.pack_into(">q", b, 0, rng.choice((0, -1, 1 << 62, rng.randrange(1000))))
        chunks[i] = bytes(b)
    f.write_bytes(data[:batches[0][0]] + b"".join(chunks) + data[end:])
    return f"{what} batches in {f.name}"


def decompression_bomb(logdir, part, rng, assets) -> str:
    """A batch with a valid CRC whose records expand to ~2 GiB (every codec), or to millions of records."""
    f = _pick(rng, _files(part, (".log",)))
    if f is None:
        return "no log"
    data = _whole(f)
    batches = v2_batches(data)
    base = 0
    if batches:
        last = batches[-1]
        base = struct.unpack_from(">q", data, last[0])[0] + struct.unpack_from(">i", data, last[0] + 23)[0] + 1
    kind = rng.choice(("zstd", "gzip", "lz4", "snappy", "records"))
    if kind == "records":
        batch = make_batch(base, assets.record_bomb(), 3_000_000, codecs.ZSTD)
    else:
        codec = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}[kind]
        batch = make_batch(base, assets.bomb(codec), rng.choice((1, 1000, 0x7FFFFFFF)), codec)
    where = rng.choice(("end", "start"))
    if where == "end" or not batches:
        end = batches[-1][0] + batches[-1][1] if batches else 0
        f.write_bytes(data[:end] + batch + data[end:])
    else:
        f.write_bytes(batch + data)
    return f"{kind} bomb at the {where} of {f.name}"


def sparse_huge(logdir, part, rng, assets) -> str:
    """A 2 GiB hole: a zero tail, a batch header whose valid CRC covers a hole, or a huge index."""
    what = rng.choice(("batch", "batch", "tail", "index", "timeindex"))
    logs = _files(part, (".log",))
    if not logs:
        return "no log"
    f = rng.choice(logs)
    if what == "tail":
        with open(f, "r+b") as fh:
            fh.truncate(f.stat().st_size + 2 * GIB)
        return f"2 GiB zero tail after {f.name}"
    if what in ("index", "timeindex"):
        ix = f.with_suffix("." + what)
        with open(ix, "ab") as fh:
            fh.truncate(GIB)
            fh.seek(GIB - 16)
            fh.write(struct.pack(">qii", 5, 7, 9)[:16])
        return f"1 GiB sparse {ix.name}"
    size = 2 * GIB - 64
    data = _whole(f)
    batches = v2_batches(data)
    end = batches[-1][0] + batches[-1][1] if batches else 0
    head = bytearray(_zero_batch_head(0, size))
    struct.pack_into(">I", head, 17, assets.huge_zero_batch_crc(size))
    base = 0
    if batches:
        base = struct.unpack_from(">q", data, batches[-1][0])[0] + struct.unpack_from(">i", data, batches[-1][0] + 23)[0] + 1
    struct.pack_into(">q", head, 0, base)
    with open(f, "r+b") as fh:
        fh.truncate(end)
        fh.seek(end)
        fh.write(bytes(head))
        fh.truncate(end + size)
    return f"batch at {end} of {f.name} claims {size} bytes over a hole (valid CRC)"


def text_numbers(logdir, part, rng, assets) -> str:
    """Huge numbers, out-of-range values and garbage in a text file."""
    files = [p for p in _files(logdir) + _files(part) if p.name in TEXT_FILES]
    f = _pick(rng, files)
    if f is None:
        return "no text file"
    text = _whole(f)
    huge = rng.choice((b"9" * 5000, b"-" + b"1" * 4301, b"0" * 6000 + b"7", b"9223372036854775808",
                       b"2147483648", b"-2147483649", b"1e999", b"\xd9\xa3", b"+0x10", b"1_000"))
    import re
    nums = list(re.finditer(rb"-?\d+", text))
    what = rng.choice(("number", "number", "number", "garbage", "lines", "nesting", "empty"))
    if what == "number" and nums:
        m = rng.choice(nums)
        text = text[:m.start()] + huge + text[m.end():]
    elif what == "garbage":
        i = rng.randrange(len(text) + 1)
        text = text[:i] + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40))) + text[i:]
    elif what == "lines":
        text = text + b"t 0 1\n" * rng.choice((1, 1000, 200_000))
    elif what == "nesting":
        text = b"[" * 200_000 if f.name == "quorum-state" else text + b"\n" + b"=" * 100_000 + b"\n"
    else:
        text = b""
    f.write_bytes(text)
    return f"{f.name}: {what}"


def index_entries(logdir, part, rng, assets) -> str:
    """Hostile .index / .timeindex entries: negative or past-the-end positions, non-increasing offsets."""
    files = _files(part, (".index", ".timeindex"))
    f = _pick(rng, files)
    if f is None:
        return "no index"
    # edited in place through a map: an index an earlier mutation made sparse (gigabytes of hole) is
    # neither read whole nor written back dense (it took a fuzz worker to 21 GB and the OOM killer)
    es = 8 if f.name.endswith(".index") else 12
    n = f.stat().st_size // es
    if n == 0:
        with open(f, "ab") as out:
            out.write(bytes(es))
        n = 1
    with open(f, "r+b") as fh, mmap.mmap(fh.fileno(), 0) as data:
        return _index_entry(f, data, es, n, rng)


def _index_entry(f, data, es: int, n: int, rng) -> str:
    slot = rng.randrange(n)
    at = slot * es
    choice = rng.choice(("neg_pos", "small_neg_pos", "far_pos", "rel", "swap", "ts"))
    if es == 8:
        if choice == "neg_pos":
            struct.pack_into(">i", data, at + 4, -0x7FFFFFF0)
        elif choice == "small_neg_pos":
            struct.pack_into(">i", data, at + 4, -rng.randrange(1, 200))
        elif choice == "far_pos":
            struct.pack_into(">i", data, at + 4, 0x7FFFFFFF - rng.randrange(100))
        elif choice == "rel":
            struct.pack_into(">i", data, at, rng.choice((-1, 0, 0x7FFFFFFF, -0x80000000)))
        elif n > 1:
            j = rng.randrange(n)
            data[at:at + 8], data[j * 8:j * 8 + 8] = data[j * 8:j * 8 + 8], data[at:at + 8]
        else:
            struct.pack_into(">i", data, at + 4, rng.randrange(0, 4096))
    else:
        if choice in ("ts", "neg_pos"):
            struct.pack_into(">q", data, at, rng.choice(_HOSTILE_INTS64))
        else:
            struct.pack_into(">i", data, at + 8, rng.choice(_HOSTILE_INTS32))
    return f"{f.name} slot {slot}: {choice}"


def special_files(logdir, part, rng, assets) -> str:
    """A FIFO, a device, a dangling or looping symlink, or a directory in place of a file."""
    f = _pick(rng, _files(part) + _files(logdir, TEXT_FILES))
    if f is None:
        return "no file"
    what = rng.choice(("fifo", "fifo", "dev_zero", "dangling", "loop", "directory", "socket_like"))
    f.unlink()
    if what in ("fifo", "socket_like"):
        os.mkfifo(f)
    elif what == "dev_zero":
        os.symlink("/dev/zero", f)
    elif what == "dangling":
        os.symlink(f.name + ".nowhere", f)
    elif what == "loop":
        os.symlink(f.name, f)
    else:
        f.mkdir()
    return f"{f.name} replaced by {what}"


# --- generators of what the first fuzz rounds never made (issue 24) ---------------------------------
#
# Each writes valid data where it can (the log stays readable), so the harness can also hold the writers to
# "no committed record lost" (``ADDED``: the batches a generator appended, recorded beside the case).

#: topic names a filesystem accepts and Kafka does not: bytes that are not UTF-8, control characters,
#: terminal escapes, a newline, valid non-ASCII
ODD_TOPICS = (b"t\xff\xfe", b"t\xc3", b"\xed\xa0\x80x", b"t\x1b[31mred\x1b[0m", b"t\nnext", b"t\rback", b"t\x07\x08",
              b"t\x7f\x01", b"t\t<&\">", b"caf\xc3\xa9", b"t]]>", b"\x1b]0;title\x07t")
#: integer settings Kafka parses with Long.parseLong / Integer.parseInt, and what Python's int() would
#: take that Java's does not (underscores, non-ASCII digits, surrounding blanks)
GIANT_NUMBERS = ("9" * 5000, "-" + "1" * 4400, "0" * 6000 + "7", "9223372036854775808", "-9223372036854775809",
                 "2147483648", "1e999", "\u0663\u0663", "1_000", " 5", "+0x10", "NaN", "-0", "9" * 300)
CONFIG_KEYS = ("retention.ms", "retention.bytes", "segment.ms", "segment.bytes", "delete.retention.ms",
               "min.compaction.lag.ms", "max.compaction.lag.ms", "min.cleanable.dirty.ratio",
               "file.delete.delay.ms", "message.timestamp.difference.max.ms", "max.message.bytes",
               "index.interval.bytes", "local.retention.ms", "local.retention.bytes")
SERVER_KEYS = ("log.retention.ms", "log.retention.hours", "log.retention.minutes", "log.retention.bytes",
               "log.segment.bytes", "log.cleaner.dedupe.buffer.size", "log.cleaner.threads",
               "log.cleaner.delete.retention.ms", "log.cleaner.min.compaction.lag.ms",
               "log.cleaner.min.cleanable.ratio", "log.cleaner.io.buffer.load.factor", "log.roll.ms",
               "log.index.interval.bytes")


def _last_offset(data: bytes) -> int | None:
    """The last offset of the last well-framed entry of a segment (v0/v1 message sets too)."""
    pos, n, last = 0, len(data), None
    while n - pos > 17:
        size = struct.unpack_from(">i", data, pos + 8)[0]
        if size < 14 or pos + 12 + size > n:
            break
        off = struct.unpack_from(">q", data, pos)[0]
        last = off + struct.unpack_from(">i", data, pos + 23)[0] if data[pos + 16] >= 2 and size >= 49 else off
        pos += 12 + size
    return last


def _log_end(part: Path) -> int:
    """The offset after the partition's last record (the last segment's base offset when it is empty)."""
    logs = sorted((p for p in part.iterdir() if p.name.endswith(".log") and p.name[:-4].isdigit()),
                  key=lambda p: int(p.name[:-4]))
    if not logs:
        return 0
    last = _last_offset(_whole(logs[-1]))
    return int(logs[-1].name[:-4]) if last is None else last + 1


def _record_added(part: Path, name: str, batch: bytes) -> None:
    """Note a batch a generator appended (segment, base offset, CRC) beside the case: ``added.txt``."""
    base = struct.unpack_from(">q", batch, 0)[0]
    crc = struct.unpack_from(">I", batch, 17)[0]
    with open(part.parent.parent / "added.txt", "a") as f:
        f.write(f"{name} {base} {crc}\n")


def _new_segment(part: Path, base: int, batches: list[bytes], keyed: bool = False) -> None:
    """A segment of ``batches`` at ``base`` with empty indexes (a broker's rebuild fills them); ``keyed``:
    noted in ``added.txt`` (records with keys no later record supersedes, which compact must keep)."""
    name = f"{base:020d}"
    (part / f"{name}.log").write_bytes(b"".join(batches))
    (part / f"{name}.index").write_bytes(b"")
    (part / f"{name}.timeindex").write_bytes(b"")
    for b in batches if keyed else ():
        _record_added(part, f"{name}.log", b)


#: how many segments ``many_segments`` adds, how many keys ``distinct_keys`` writes (the smoke test uses less)
SEGMENT_COUNTS = (300, 700, 1500)
KEY_COUNTS = (50_000, 200_000, 1_000_000)


def odd_names(logdir, part, rng, assets) -> str:
    """The partition directory renamed to a topic of odd bytes (the checkpoints may name it too)."""
    topic = rng.choice(ODD_TOPICS)
    num = os.fsencode(part.name).rpartition(b"-")[2] or b"0"
    new = Path(os.fsdecode(os.path.join(os.fsencode(part.parent), topic + b"-" + num)))
    os.rename(part, new)
    if rng.random() < 0.5:
        old = os.fsencode(part.name).rpartition(b"-")[0]
        for f in _files(logdir, TEXT_FILES):
            if f.parent == logdir and old:
                data = _whole(f)
                f.write_bytes(data.replace(old + b" ", topic + b" "))
    return f"partition directory renamed to {os.fsencode(new.name)!r}"


def giant_config(logdir, part, rng, assets) -> str:
    """Huge and non-Java integers in --config values, a server.properties and a --topic-configs directory
    (files beside the log directory; the harness passes them to retain and compact)."""
    base = logdir.parent
    topic = os.fsencode(part.name).rpartition(b"-")[0]
    what = rng.sample(("config", "server", "topic-configs"), rng.randrange(1, 4))
    for w in what:
        value = rng.choice(GIANT_NUMBERS)
        if w == "config":
            key = rng.choice(CONFIG_KEYS)
            (base / "config-args.txt").write_text(f"{key}={value}\n", errors="surrogateescape")
        elif w == "server":
            lines = [f"{rng.choice(SERVER_KEYS)}={rng.choice(GIANT_NUMBERS)}" for _ in range(rng.randrange(1, 4))]
            (base / "server.properties").write_text("\n".join(lines) + "\n")
        else:
            d = base / "topic-configs"
            d.mkdir(exist_ok=True)
            (d / os.fsdecode(topic + b".properties")).write_text(f"{rng.choice(CONFIG_KEYS)}={value}\n")
    return f"giant integers in {', '.join(what)}"


def many_segments(logdir, part, rng, assets) -> str:
    """Hundreds to thousands of one-batch segments after the log end (the harness runs the case under a
    low ``ulimit -n``)."""
    n = rng.choice(SEGMENT_COUNTS)
    base = _log_end(part)
    ts = 1_700_000_000_000
    for i in range(n):
        _new_segment(part, base + i, [make_batch(base + i, tiny_records(1), 1, timestamp=ts + i)])
    return f"{n} one-batch segments from offset {base}"


def sparse_files(logdir, part, rng, assets) -> str:
    """A huge apparent size over a few real bytes: an index, a time index, a transaction index, a producer
    snapshot or a leader-epoch checkpoint of up to 64 GiB."""
    what = rng.choice(("index", "timeindex", "txnindex", "snapshot", "snapshot", "leader-epoch-checkpoint"))
    size = rng.choice((3 * GIB, 10 * GIB, 64 * GIB))
    logs = sorted(_files(part, (".log",)))
    if what == "leader-epoch-checkpoint":
        f = part / what
    elif what == "snapshot":
        f = part / f"{_log_end(part):020d}.snapshot"
    elif logs:
        f = rng.choice(logs).with_suffix("." + what)
    else:
        return "no log"
    head = _head(f, 4096) if f.is_file() else b""
    with open(f, "wb") as fh:
        fh.write(head)
        fh.truncate(size)
        if rng.random() < 0.5:                     # a few bytes at the far end as well
            fh.seek(size - 24)
            fh.write(struct.pack(">qiiq", 5, 7, 9, 11))
    return f"{f.name}: {size >> 30} GiB apparent, {len(head)} bytes of data"


def distinct_keys(logdir, part, rng, assets) -> str:
    """One valid zstd batch of up to a million distinct keys in its own segment, then an active segment of
    one record (so compact cleans it)."""
    n = rng.choice(KEY_COUNTS)
    base = _log_end(part)
    batch = make_batch(base, assets.distinct_keys(n), n, codecs.ZSTD)
    _new_segment(part, base, [batch], keyed=True)
    _new_segment(part, base + n, [make_batch(base + n, tiny_records(1), 1)])
    return f"{n} distinct keys in one zstd batch at offset {base}"


def many_headers(logdir, part, rng, assets) -> str:
    """One valid zstd batch whose first record carries up to ten million headers (its dump-log line and
    export row are the ones to hold them all), in its own segment, then an active segment of one record."""
    n = rng.choice(HEADER_COUNTS)
    base = _log_end(part)
    _new_segment(part, base, [make_batch(base, assets.many_headers(n), 2, codecs.ZSTD)], keyed=True)
    _new_segment(part, base + 2, [make_batch(base + 2, tiny_records(1), 1)])
    return f"a record of {n} headers at offset {base}"


HEADER_COUNTS = (70_000, 1_100_000, 3_000_000, 10_000_000)


# --- generators of issue 39's bounds: huge text inputs, a metadata log of millions of topics -------------

#: sizes of ``huge_text_inputs``' files (the one limit of every text input is 16 MiB; below and above it)
TEXT_SIZES = (12 << 20, 42 << 20, 75 << 20)
#: topics in ``metadata_topics``' metadata log
TOPIC_COUNTS = (200_000, 1_000_000, 2_000_000)


def huge_server_properties(path: Path, size: int) -> None:
    """A ``server.properties`` of ``size`` bytes: a few real keys, then distinct keys no broker knows."""
    with open(path, "w") as f:
        f.write("log.retention.hours=168\nlog.segment.bytes=1073741824\n")
        i = 0
        while f.tell() < size:
            f.write("".join(f"custom.setting.number{j}=value-{j}\n" for j in range(i, i + 10_000)))
            i += 10_000


def huge_offset_json(path: Path, size: int, topic: str = "t") -> None:
    """A ``kafka-delete-records.sh --offset-json-file`` of ``size`` bytes: one partition of ``topic`` (offset 0),
    then partitions of distinct topics."""
    with open(path, "w") as f:
        f.write('{"version":1,"partitions":[{"topic":"%s","partition":0,"offset":0}' % topic)
        i = 0
        while f.tell() < size:
            f.write("".join(',{"topic":"topic-%d","partition":%d,"offset":100}' % (j // 8, j % 8)
                            for j in range(i, i + 10_000)))
            i += 10_000
        f.write("]}")


def huge_topic_configs(path: Path, size: int, topic: str = "t") -> None:
    """``kafka-configs.sh --describe --all`` output of ``size`` bytes: ``topic``'s, then distinct topics'."""
    entry = ("  {k}={v} sensitive=false synonyms={{DYNAMIC_TOPIC_CONFIG:{k}={v}, "
             "DEFAULT_CONFIG:log.{k}=1}}\n")
    with open(path, "w") as f:
        f.write(f"Dynamic configs for topic {topic} are:\n" + entry.format(k="retention.ms", v="86400000"))
        i = 0
        while f.tell() < size:
            f.write("".join(f"All configs for topic topic-{j} are:\n" + entry.format(k="retention.ms", v="1000")
                            + entry.format(k="cleanup.policy", v="delete") for j in range(i, i + 2_000)))
            i += 2_000


def huge_text_inputs(logdir, part, rng, assets) -> str:
    """A server.properties, a --topic-configs file and a delete-records offset file of 12-75 MB beside the log
    directory (the harness passes them: the first two to retain and compact, the last to delete-records)."""
    base = logdir.parent
    topic = os.fsdecode(os.fsencode(part.name).rpartition(b"-")[0])
    what = rng.sample(("server", "topic-configs", "offsets"), rng.randrange(1, 4))
    sizes = []
    for w in what:
        size = rng.choice(TEXT_SIZES)
        sizes.append(f"{w} {size >> 20} MiB")
        if w == "server":
            huge_server_properties(base / "server.properties", size)
        elif w == "topic-configs":
            huge_topic_configs(base / "topic-configs.txt", size, topic)
        else:
            huge_offset_json(base / "offsets.json", size, topic)
    return ", ".join(sizes)


def _metadata_section(values: list) -> bytes:
    """A records section of metadata record values (null keys, no headers)."""
    out = bytearray()
    for i, v in enumerate(values):
        body = bytearray(b"\x00\x00")
        _varint(i << 1, body)
        body += b"\x01"                                # a null key
        _varint(len(v) << 1, body)
        body += v + b"\x00"
        _varint(len(body) << 1, out)
        out += body
    return bytes(out)


def metadata_log(md: Path, n: int, per_batch: int = 20_000) -> None:
    """``__cluster_metadata-0`` of ``n`` distinct topics: a TopicRecord (``topic-NNNNNNN``) and a ConfigRecord
    (retention.ms) each, in zstd batches, written straight as their bytes (a few seconds for millions)."""
    md.mkdir(parents=True, exist_ok=True)
    off, values = 0, []
    with open(md / "00000000000000000000.log", "wb") as f:
        for i in range(n):
            name = b"topic-%07d" % i
            values.append(b"\x01\x02\x00" + bytes([len(name) + 1]) + name + struct.pack(">QQ", 0x4B4C, i + 1) + b"\x00")
            values.append(b"\x01\x04\x00\x02" + bytes([len(name) + 1]) + name + b"\x0dretention.ms\x051000\x00")
            if len(values) >= per_batch or i == n - 1:
                f.write(make_batch(off, codecs.compress(codecs.ZSTD, _metadata_section(values)), len(values),
                                   codecs.ZSTD))
                off += len(values)
                values = []
    for suffix in ("index", "timeindex"):
        (md / f"00000000000000000000.{suffix}").write_bytes(b"")


#: records in ``huge_batch``'s one batch
HUGE_BATCH_KEYS = (2_100_000,)


def huge_batch_records(n: int) -> bytes:
    """The records section of ``huge_batch``: ``n`` distinct keys with 40-byte values, the last key repeating
    the first (so the cleaner drops one record and rebuilds the batch): about 124 MB decompressed, just under
    the 128 MiB bound of one batch."""
    return keyed_records([b"key-%07d" % i for i in range(n - 1)] + [b"key-0000000"], b"v" * 40)


def huge_batch(logdir, part, rng, assets) -> str:
    """One valid zstd batch of millions of records (about 124 MB decompressed) in its own segment, one key
    twice (compact rebuilds the batch), then an active segment of one record."""
    n = rng.choice(HUGE_BATCH_KEYS)
    base = _log_end(part)
    section = assets._cached(f"huge-batch-{n}.bin", lambda: codecs.compress(codecs.ZSTD, huge_batch_records(n)))
    _new_segment(part, base, [make_batch(base, section, n, codecs.ZSTD)])
    _new_segment(part, base + n, [make_batch(base + n, tiny_records(1), 1)])
    return f"one batch of {n} records ({n - 1} keys) at offset {base}"


def metadata_topics(logdir, part, rng, assets) -> str:
    """The log directory's KRaft metadata log replaced by one of up to two million distinct topics (a few MB
    on disk), none of them the partition's: every command resolving configurations replays it."""
    import shutil
    n = rng.choice(TOPIC_COUNTS)
    md = logdir / "__cluster_metadata-0"
    shutil.rmtree(md, ignore_errors=True)
    metadata_log(md, n)
    return f"a metadata log of {n} topics"


# --- coordinator payloads (issue 35, item 7) ---------------------------------------------------------------------
# Records of __consumer_offsets and __transaction_state encoded here by hand (Kafka's schemas: OffsetCommitKey/
# Value, GroupMetadataKey/Value with a classic consumer subscription, ConsumerGroupMetadataKey/Value,
# TransactionLogKey/Value), then mutated: versions negative, unknown or huge, lengths negative or past the end,
# bytes flipped, cut or added, names holding escape sequences, null keys and values; in batches that are plain,
# transactional (with COMMIT, ABORT and unknown control markers) or carry a producer id. Every batch's CRC is
# valid, so the views' deep paths (the coordinators' replay) are reached.

HOSTILE_NAMES = ("orders", "g\x1b]0;t\x07\x1b[2J", "t\x7f\x9b\u202e", "new\nline", "", "x" * 300)


def _s16(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    raw = text.encode("utf-8", "surrogatepass")
    return struct.pack(">h", len(raw)) + raw


def _b32(raw: bytes | None) -> bytes:
    return struct.pack(">i", -1) if raw is None else struct.pack(">i", len(raw)) + raw


def _count(rng: random.Random, n: int) -> int:
    """An array's count: ``n``, or now and then one that disagrees with what follows."""
    return n if rng.random() < 0.8 else rng.choice((-1, n + 1, 1 << 30))


def _coordinator_record(rng: random.Random, txn_state: bool) -> tuple[bytes | None, bytes | None]:
    name = rng.choice(HOSTILE_NAMES)
    if txn_state:
        key = struct.pack(">h", 0) + _s16(name)
        n = rng.randrange(3)
        parts = b"".join(_s16(rng.choice(HOSTILE_NAMES)) + struct.pack(">ii", 1, rng.randrange(4)) for _ in range(n))
        value = struct.pack(">hqhib", rng.choice((0, 1)), rng.randrange(1 << 20), 0, 60_000, rng.randrange(9)) + \
            struct.pack(">i", _count(rng, n)) + parts + struct.pack(">qq", 1, 1)
        return key, value
    kind = rng.choice(("offset", "offset", "group", "kip848", "unknown"))
    if kind == "offset":
        key = struct.pack(">h", rng.choice((0, 1))) + _s16(name) + _s16(rng.choice(HOSTILE_NAMES)) + \
            struct.pack(">i", rng.randrange(4))
        version = rng.choice((0, 1, 2, 3))
        value = struct.pack(">hq", version, rng.randrange(-2, 1000)) + (struct.pack(">i", 0) if version >= 3 else b"")
        value += _s16(rng.choice(HOSTILE_NAMES)) + struct.pack(">q", rng.randrange(1 << 41))
        value += struct.pack(">q", rng.choice((-1, -5, 0, 1 << 41))) if version == 1 else b""
        return key, value
    if kind == "group":
        topics = [rng.choice(HOSTILE_NAMES) for _ in range(rng.randrange(3))]
        sub = struct.pack(">hi", rng.choice((0, 1, 3, 9, -1)), len(topics)) + b"".join(map(_s16, topics)) + _b32(None)
        n = rng.randrange(3)
        members = b"".join(_s16(f"m{i}") + _s16(None) + _s16(name) + _s16("/h") + struct.pack(">ii", 1, 1) +
                           _b32(sub) + _b32(b"") for i in range(n))
        key = struct.pack(">h", 2) + _s16(name)
        value = struct.pack(">h", 3) + _s16(rng.choice(("consumer", "connect", name))) + struct.pack(">i", 1) + \
            _s16(rng.choice(("range", None, name))) + _s16(None) + struct.pack(">q", 1) + \
            struct.pack(">i", _count(rng, n)) + members
        return key, value
    if kind == "kip848":
        return struct.pack(">h", 3) + _s16(name), struct.pack(">hi", 0, 1) + b"\x00"
    rtype = rng.choice((4, 5, 9, 15, 16, 17, 300, -1))
    return struct.pack(">h", rtype) + _s16(name), bytes(rng.randrange(256) for _ in range(rng.randrange(40)))


def _mutate_payload(rng: random.Random, data: bytes | None) -> bytes | None:
    if data is None or rng.random() < 0.1:
        return rng.choice((None, b"", b"\x00"))
    buf = bytearray(data)
    how = rng.choice(("version", "version", "length", "flip", "cut", "extend"))
    if how == "version" and len(buf) >= 2:
        struct.pack_into(">h", buf, 0, rng.choice((-32768, -3, -1, 2, 4, 5, 7, 16, 32767, rng.randrange(-99, 99))))
    elif how == "length" and len(buf) >= 6:
        pos = rng.randrange(2, len(buf) - 3)
        if rng.random() < 0.5:
            struct.pack_into(">h", buf, pos, rng.choice((-5, -1, 0x7FFF)))
        else:
            struct.pack_into(">i", buf, pos, rng.choice((-5, -1, 0x7FFFFFFF, 1 << 20)))
    elif how == "flip" and buf:
        for _ in range(rng.randrange(1, 4)):
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
    elif how == "cut":
        del buf[rng.randrange(len(buf) + 1):]
    else:
        buf += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 20)))
    return bytes(buf)


def _kv_records(pairs: list) -> bytes:
    """Records of (key, value) with null support (offset deltas 0.., timestamp delta 0, no headers)."""
    parts = bytearray()
    for i, (k, v) in enumerate(pairs):
        body = bytearray(b"\x00\x00")
        _varint(i << 1, body)
        for field in (k, v):
            if field is None:
                body += b"\x01"
            else:
                _varint(len(field) << 1, body)
                body += field
        body += b"\x00"
        _varint(len(body) << 1, parts)
        parts += body
    return bytes(parts)


def _producer_batch(base: int, records: bytes, count: int, pid: int, attributes: int) -> bytes:
    out = bytearray(HEADER.pack(base, 49 + len(records), 0, 2, 0, attributes, count - 1, 1_750_000_000_000,
                                1_750_000_000_000, pid, 0 if pid >= 0 else -1, 0 if pid >= 0 else -1, count) + records)
    fix_crc(out, 0)
    return bytes(out)


def coordinator_payloads(logdir, part, rng, assets) -> str:
    """A segment of CRC-valid, mutated coordinator records appended to ``__consumer_offsets-0`` and
    ``__transaction_state-0`` of the log directory (made when absent): what the state views replay."""
    said = []
    for topic in ("__consumer_offsets", "__transaction_state"):
        target = logdir / f"{topic}-0"
        target.mkdir(exist_ok=True)
        base, batches, mutated = _log_end(target), [], 0
        for _ in range(rng.randrange(3, 12)):
            pairs = []
            for _ in range(rng.randrange(1, 5)):
                k, v = _coordinator_record(rng, topic == "__transaction_state")
                if rng.random() < 0.6:
                    k, v = (_mutate_payload(rng, k), v) if rng.random() < 0.3 else (k, _mutate_payload(rng, v))
                    mutated += 1
                pairs.append((k, v))
            style = rng.choice(("plain", "plain", "transactional", "producer", "marker"))
            pid = rng.randrange(1, 6) if style != "plain" else -1
            if style == "marker":
                marker = struct.pack(">hh", rng.choice((0, -1)), rng.choice((0, 1, 5)))
                batches.append(_producer_batch(base, _kv_records([(marker, struct.pack(">hi", 0, 3))]), 1, pid,
                                               0x30))
                base += 1
                continue
            attributes = 0x10 if style == "transactional" else 0
            batches.append(_producer_batch(base, _kv_records(pairs), len(pairs), pid, attributes))
            base += len(pairs)
        _new_segment(target, _log_end(target), batches)
        said.append(f"{topic}-0: {len(batches)} batches, {mutated} records mutated")
    return "; ".join(said)

#: the generators whose output a healthy reader accepts: on a clean seed, writers must keep every batch
VALID_GENERATORS = ("odd_names", "giant_config", "many_segments", "sparse_files", "distinct_keys", "many_headers",
                    "huge_text_inputs")


MUTATORS = {
    "bit_flips": bit_flips, "truncate": truncate, "overwrite": overwrite, "batch_fields": batch_fields,
    "record_damage": record_damage, "structure": structure, "decompression_bomb": decompression_bomb,
    "sparse_huge": sparse_huge, "text_numbers": text_numbers, "index_entries": index_entries,
    "special_files": special_files, "odd_names": odd_names, "giant_config": giant_config,
    "many_segments": many_segments, "sparse_files": sparse_files, "distinct_keys": distinct_keys,
    "many_headers": many_headers, "coordinator_payloads": coordinator_payloads,
    "huge_text_inputs": huge_text_inputs, "metadata_topics": metadata_topics, "huge_batch": huge_batch,
}
#: How often each is picked by ``mutate`` (cheap byte damage most, the expensive huge inputs least).
WEIGHTS = {"bit_flips": 14, "truncate": 8, "overwrite": 8, "batch_fields": 14, "record_damage": 14,
           "structure": 8, "decompression_bomb": 2, "sparse_huge": 2, "text_numbers": 12, "index_entries": 10,
           "special_files": 5, "odd_names": 6, "giant_config": 6, "many_segments": 2, "sparse_files": 4,
           "distinct_keys": 2, "many_headers": 2, "coordinator_payloads": 10, "huge_text_inputs": 2,
           "metadata_topics": 1, "huge_batch": 1}


def mutate(logdir: Path, part: Path, rng: random.Random, assets: Assets, names: list[str] | None = None) -> list[str]:
    """Apply one to three mutations (random unless ``names`` is given); their descriptions."""
    if names is None:
        k = rng.choice((1, 1, 1, 2, 3))
        names = rng.choices(list(WEIGHTS), weights=list(WEIGHTS.values()), k=k)
    out = []
    for n in names:
        try:
            out.append(f"{n}: {MUTATORS[n](logdir, part, rng, assets)}")
        except (OSError, ValueError, IndexError) as e:
            out.append(f"{n}: not applied ({type(e).__name__}: {e})")
        part = partition_dir(logdir, part)
    return out


def partition_dir(logdir: Path, part: Path) -> Path:
    """The case's partition directory after the mutations (``odd_names`` renames it)."""
    if part.is_dir():
        return part
    dirs = [d for d in logdir.iterdir() if d.is_dir() and not d.is_symlink() and d.name not in TEXT_FILES
            and "-" in d.name]
    return dirs[0] if dirs else part
