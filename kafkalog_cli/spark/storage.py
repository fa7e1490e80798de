"""Object storage in and out of export (and the data source): S3 (``s3://``, ``s3a://``), GCS (``gs://``),
Azure (``abfs://``, ``abfss://``) and HDFS (``hdfs://``) through pyarrow's filesystems (``pyarrow.fs``).

Credentials and endpoints are those of each filesystem's own configuration: for S3 the AWS variables
(``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_DEFAULT_REGION``,
``AWS_ENDPOINT_URL`` for an S3-compatible server), ``~/.aws`` profiles or the instance's role; options
can also ride in the URI's query (``s3://bucket/path?endpoint_override=host:9000&scheme=http``), as pyarrow
reads them. Every executor resolves the URI itself, so the variables must be set there too
(``--spark-conf spark.executorEnv.AWS_...``, or the nodes' role).

Reading: the driver lists the objects (``plan_remote``) and builds the same ``SegmentRange``s as for local
files, with the URIs as paths. A task then stages what it reads into a sparse local file the size of the
segment (``local_view``): the bytes of its range and of the batch that starts in it and ends after it,
read by ranged GETs, and the small index files beside it; the segment's first range, which also runs
verify's segment checks over the whole segment, reads all of it, and a range where Kafka's reader stops
early (damage) reads on to the end of the segment, which is where the mmap path reads too. The records
are then read by the unchanged record path; file names in the rows and problems are given back as URIs.

Writing: each task writes its files locally and uploads each completed one under the output prefix; the
driver writes ``_kafkalog_manifest.json`` and ``_SUCCESS`` last (Spark's marker of a complete output on
object stores). A failed or interrupted run deletes the objects it wrote (their names carry the run's
token). The prefix must be empty (``--mode new``); ``--mode append`` is not offered on object storage.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shutil
import struct
import tempfile
from urllib.parse import urlsplit, urlunsplit

from ..errors import UsageProblem

SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
#: schemes pyarrow names differently
ALIASES = {"s3a": "s3", "s3n": "s3", "gcs": "gs"}
SIDE_FILES = (".index", ".timeindex", ".txnindex")
_FILESYSTEMS: dict = {}


class StorageError(UsageProblem):
    """An object-storage location that cannot be used; the message says which and why."""


def is_remote(path: str) -> bool:
    m = SCHEME.match(str(path))
    return bool(m) and m.group(1).lower() != "file"


#: query options of pyarrow's filesystems that carry a secret
SECRET_OPTIONS = ("access_key", "secret_key", "session_token", "account_key", "sas_token", "client_secret")


def credentials_problem(uri: str) -> str | None:
    """Why ``uri`` is refused, or None: credentials inside it (``s3://KEY:SECRET@bucket/...``, which pyarrow
    accepts, or a secret in its query). They would travel in the plan and every task, and be printed in
    messages; kafkalog takes them only as each filesystem reads them from its environment. The message
    shows the URI without them."""
    from urllib.parse import parse_qsl
    parts = urlsplit(uri)
    scheme = ALIASES.get(parts.scheme.lower(), parts.scheme.lower())
    in_userinfo = "@" in parts.netloc and (parts.password is not None or scheme == "s3")
    in_query = any(k.lower() in SECRET_OPTIONS for k, _v in parse_qsl(parts.query, keep_blank_values=True))
    if not (in_userinfo or in_query):
        return None
    return (f"{redact(uri)}: credentials in the URI are not accepted (they would be copied into every Spark task "
            "and into messages); give them as the filesystem reads them from the environment, e.g. "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY for S3, or a profile or role (README: object storage)")


def redact(uri: str) -> str:
    """``uri`` without what may be a secret: the user information and the values of secret query options."""
    from urllib.parse import parse_qsl, urlencode
    parts = urlsplit(uri)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rpartition("@")[2]
    query = parts.query
    if query:
        query = urlencode([(k, "***" if k.lower() in SECRET_OPTIONS else v)
                           for k, v in parse_qsl(query, keep_blank_values=True)], safe="*:/")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def resolve(uri: str):
    """(pyarrow filesystem, path inside it) for a URI; filesystems are cached per scheme, host and query."""
    import pyarrow.fs as pfs
    problem = credentials_problem(uri)
    if problem:
        raise StorageError(problem)
    parts = urlsplit(uri)
    scheme = ALIASES.get(parts.scheme.lower(), parts.scheme.lower())
    key = (scheme, parts.netloc, parts.query)
    if key not in _FILESYSTEMS:
        try:
            fs, _path = pfs.FileSystem.from_uri(urlunsplit((scheme, parts.netloc, "/", parts.query, "")))
        except Exception as e:                     # noqa: BLE001 - pyarrow's ArrowInvalid/OSError say why
            raise StorageError(f"{redact(uri)}: {e}") from None
        _FILESYSTEMS[key] = fs
    path = (parts.netloc + parts.path).rstrip("/") if scheme not in ("hdfs", "viewfs") else parts.path.rstrip("/")
    return _FILESYSTEMS[key], path


def to_uri(uri: str, path: str) -> str:
    """The URI of ``path`` (inside the filesystem of ``uri``), in ``uri``'s spelling (scheme and query kept)."""
    parts = urlsplit(uri)
    if parts.scheme.lower() in ("hdfs", "viewfs"):
        return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))
    bucket, _, key = path.partition("/")
    return urlunsplit((parts.scheme, bucket, "/" + key, parts.query, ""))


def join(uri: str, *names: str) -> str:
    parts = urlsplit(uri)
    return urlunsplit((parts.scheme, parts.netloc, "/".join([parts.path.rstrip("/"), *names]), parts.query, ""))


def read_at(uri: str, start: int, length: int) -> bytes:
    fs, path = resolve(uri)
    with fs.open_input_file(path) as f:
        return f.read_at(length, start)


def read_all(uri: str, limit: int) -> bytes | None:
    """The whole object (at most ``limit`` bytes), None when there is none."""
    import pyarrow.fs as pfs
    fs, path = resolve(uri)
    info = fs.get_file_info(path)
    if info.type != pfs.FileType.File:
        return None
    with fs.open_input_file(path) as f:
        return f.read_at(min(info.size, limit), 0)


# --- planning: the objects of a fleet as partitions and segments -------------------------------------------

def plan_remote(uris: list[str], opts):
    """``plan.plan_ranges`` for object storage: the same ranges, the segments named by URI."""
    import pyarrow.fs as pfs

    from ..layout import classify_file, parse_partition_dir
    from .ranges import Plan, SegmentRange
    plan = Plan([], findings=[])
    if opts.empty():
        return plan
    partitions: dict[str, dict[int, tuple[str, int]]] = {}     # partition dir URI -> base -> (uri, size)
    meta_files: set[str] = set()
    for uri in uris:
        fs, root = resolve(uri)
        info = fs.get_file_info(root)
        if info.type == pfs.FileType.NotFound:
            raise FileNotFoundError(2, "No such file or directory", uri)
        infos = [info] if info.type == pfs.FileType.File else fs.get_file_info(pfs.FileSelector(root, recursive=True))
        for f in infos:
            if f.type != pfs.FileType.File:
                continue
            parent, _, name = f.path.rpartition("/")
            if name == "meta.properties":
                meta_files.add(parent)
                continue
            fn = classify_file(name)
            if fn.kind == "log" and fn.state is None and parse_partition_dir(parent.rpartition("/")[2]):
                partitions.setdefault(parent, {})[fn.offset] = (to_uri(uri, f.path), f.size)
    identities: dict = {}
    for pdir in sorted(partitions):
        name = parse_partition_dir(pdir.rpartition("/")[2])
        topic, partition = name.topic, name.partition
        if (not opts.wants_topic(topic) or not opts.wants_partition(partition)
                or not opts.wants_assigned(topic, partition)):
            continue
        parent = pdir.rpartition("/")[0]
        bases = sorted(partitions[pdir])
        some_uri = partitions[pdir][bases[0]][0]
        log_dir = to_uri(some_uri, parent) if parent in meta_files else None
        if log_dir not in identities:
            identities[log_dir] = _identity(log_dir, plan.findings)
        cluster_id, node_id = identities[log_dir]
        if not opts.wants_log_dir(cluster_id, node_id):
            continue
        popts = opts.for_partition(topic, partition)
        if popts.empty():
            continue
        bounds = None if popts is opts else (popts.from_offset, popts.to_offset)
        for i, base in enumerate(bases):
            seg_uri, size = partitions[pdir][base]
            nxt = bases[i + 1] if i + 1 < len(bases) else None
            if popts.from_offset is not None and nxt is not None and nxt <= popts.from_offset:
                continue
            if popts.to_offset is not None and base > popts.to_offset:
                continue
            if size == 0:
                continue
            cuts = _remote_cuts(seg_uri, base, size, popts)
            if len(cuts) < 2:
                continue
            plan.segments += 1
            for k, (start, end) in enumerate(zip(cuts, cuts[1:])):
                plan.ranges.append(SegmentRange(log_dir, topic, partition, seg_uri, base, start, end, size, None,
                                                cluster_id, node_id, k == 0, nxt is None, False, bounds))
                plan.bytes += end - start
    return plan


def check_supported(opts, dedupe: bool = False) -> None:
    """What object-storage reads do not offer yet: a clear refusal instead of a different answer."""
    if opts.read_committed:
        raise StorageError("read_committed needs the partitions' producer snapshots and transaction indexes "
                           "on the driver: not offered for object storage yet (copy the log directories, or read "
                           "read_uncommitted)")
    if opts.starting_timestamp is not None:
        raise StorageError("startingTimestamp on object storage is not offered yet (use fromTimestamp, or "
                           "startingOffsets)")
    if dedupe:
        raise StorageError("--dedupe-replicas on object storage is not offered yet")


def _identity(log_dir_uri: str | None, findings: list):
    """(cluster id, node id) of a log directory's meta.properties object."""
    if log_dir_uri is None:
        return None, None
    from kafkalog_formats.errors import FormatError
    from kafkalog_formats.meta_properties import parse_meta_properties
    raw = read_all(join(log_dir_uri, "meta.properties"), 1 << 20)
    if raw is None:
        return None, None
    try:
        meta = parse_meta_properties(raw)
        return meta.cluster_id, meta.node_id
    except FormatError:
        return None, None


def _remote_cuts(seg_uri: str, base: int, size: int, opts) -> list[int]:
    """``ranges.segment_cuts`` over ranged reads: the index object read whole, each candidate batch fetched
    into a sparse local copy before ``ranges._batch_starts_at`` checks it."""
    from .ranges import segment_cuts
    need_start = opts.from_offset is not None and opts.from_offset > base
    if size <= opts.split_bytes and not need_start:
        return [0, size]
    with tempfile.TemporaryDirectory(prefix="kafkalog-cuts-") as tmp:
        local = os.path.join(tmp, os.path.basename(urlsplit(seg_uri).path))
        sparse = _Sparse(seg_uri, local, size)
        index = _side(seg_uri, local, ".index")
        return segment_cuts(local, index, base, size, opts, before_check=sparse.fetch_batch)


def _side(seg_uri: str, local_log: str, suffix: str):
    """Fetch a segment's side file (``.index`` ...) beside its local copy; its local path (absent when none)."""
    from pathlib import Path
    from kafkalog_formats.limits import MAX_BINARY_SIDE_FILE_BYTES
    target = Path(local_log).with_suffix(suffix)
    parts = urlsplit(seg_uri)
    uri = urlunsplit((parts.scheme, parts.netloc, parts.path[: -len(".log")] + suffix, parts.query, ""))
    data = read_all(uri, MAX_BINARY_SIDE_FILE_BYTES + 1)
    if data is not None:
        target.write_bytes(data)
    return target


class _Sparse:
    """A local file the size of a remote segment, holding the byte ranges fetched so far (zeros elsewhere,
    never read: every read position is fetched first)."""

    def __init__(self, uri: str, path: str, size: int) -> None:
        self.uri, self.path, self.size = uri, path, size
        self.have: list[tuple[int, int]] = []
        with open(path, "wb") as f:
            f.truncate(size)

    def fetch(self, start: int, end: int) -> None:
        start, end = max(0, start), min(self.size, end)
        for a, b in self.have:
            if a <= start and end <= b:
                return
        if end <= start:
            return
        fs, path = resolve(self.uri)
        with fs.open_input_file(path) as src, open(self.path, "r+b") as dst:
            pos = start
            while pos < end:
                n = min(end - pos, 8 << 20)
                data = src.read_at(n, pos)
                if not data:
                    break
                dst.seek(pos)
                dst.write(data)
                pos += len(data)
        self.have.append((start, end))

    def fetch_batch(self, position: int) -> None:
        """The batch starting at ``position`` (its length from the first 12 bytes), for a cut's check."""
        self.fetch(position, position + 12)
        with open(self.path, "rb") as f:
            f.seek(position)
            head = f.read(12)
        if len(head) == 12:
            length = struct.unpack(">i", head[8:12])[0]
            if 0 < length <= self.size - position:
                self.fetch(position, position + 12 + length)


# --- reading on the executors --------------------------------------------------------------------------

@contextlib.contextmanager
def local_view(rng, scratch: str | None = None):
    """``rng`` as a range of a local file holding what its read needs (see the module docstring); for a
    local range, ``rng`` itself. Yields (range to read, function giving problems' file names back)."""
    if not is_remote(rng.segment):
        yield rng, (lambda name: name)
        return
    tmp = tempfile.mkdtemp(prefix="kafkalog-range-", dir=scratch)
    try:
        seg_path = urlsplit(rng.segment).path
        pdir = os.path.basename(os.path.dirname(seg_path))
        os.makedirs(os.path.join(tmp, pdir))
        local = os.path.join(tmp, pdir, os.path.basename(seg_path))
        sparse = _Sparse(rng.segment, local, rng.file_size)
        for suffix in SIDE_FILES:
            _side(rng.segment, local, suffix)
        if rng.first:
            sparse.fetch(0, rng.file_size)               # verify's segment checks walk the whole segment
        else:
            sparse.fetch(rng.start, rng.end)
            _fetch_straddle(sparse, rng)
            if _reader_stops(local, rng):
                sparse.fetch(rng.start, rng.file_size)    # damage: the read resumes as far as the file goes
        remote_dir = rng.segment.rsplit("/", 1)[0]
        local_dir = os.path.join(tmp, pdir)

        def back(name):
            if isinstance(name, str) and name.startswith(local_dir + "/"):
                return remote_dir + name[len(local_dir):]
            return name
        yield dataclasses.replace(rng, segment=local, source=rng.segment), back
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _fetch_straddle(sparse: _Sparse, rng) -> None:
    """The rest of the batch that starts inside the range and ends after it (a task owns the batches that
    start in its range)."""
    pos = rng.start
    with open(sparse.path, "rb") as f:
        while pos < rng.end:
            f.seek(pos)
            head = f.read(12)
            if len(head) < 12:
                return
            length = struct.unpack(">i", head[8:12])[0]
            if length <= 0:
                return
            nxt = pos + 12 + length
            if nxt > rng.end:
                sparse.fetch(rng.end, nxt)
                return
            pos = nxt


def _reader_stops(local: str, rng) -> bool:
    """Would Kafka's batch reader stop inside the range (a broken size, a torn batch)?"""
    from kafkalog_formats.message_set import BatchReader

    from ..engine.mapped import MappedFile
    with MappedFile(local) as mf:
        reader = BatchReader(mf.buf, rng.start, len(mf.buf))
        for b in reader:
            if b.position >= rng.end:
                return False
        return reader.stop is not None and reader.stop.position < rng.end + 1


# --- writing the export ------------------------------------------------------------------------------

def upload(local_root: str, files: list[str], output_uri: str) -> None:
    """Copy ``files`` (relative to ``local_root``) under ``output_uri``, each removed locally once copied."""
    fs, base = resolve(output_uri)
    for rel in files:
        src = os.path.join(local_root, rel)
        with open(src, "rb") as f, fs.open_output_stream(f"{base}/{rel}") as out:
            shutil.copyfileobj(f, out, 8 << 20)
        os.unlink(src)


def write_object(uri: str, data: bytes) -> None:
    fs, path = resolve(uri)
    with fs.open_output_stream(path) as out:
        out.write(data)


def require_empty(output_uri: str) -> None:
    import pyarrow.fs as pfs
    fs, base = resolve(output_uri)
    info = fs.get_file_info(base)
    if info.type == pfs.FileType.File:
        raise StorageError(f"{output_uri} already exists; kafkalog never replaces an output")
    if info.type == pfs.FileType.Directory:
        if fs.get_file_info(pfs.FileSelector(base, recursive=True)):
            raise StorageError(f"{output_uri} already holds objects; kafkalog never replaces an output (choose "
                               "a new prefix)")


def delete_run(output_uri: str, run: str) -> None:
    """Remove the objects a run wrote (their names hold its token; the prefix was empty when it started, so
    a manifest or ``_SUCCESS`` there is its own too), quietly."""
    import pyarrow.fs as pfs
    try:
        fs, base = resolve(output_uri)
        for f in fs.get_file_info(pfs.FileSelector(base, recursive=True, allow_not_found=True)):
            name = f.path.rpartition("/")[2]
            if f.type == pfs.FileType.File and (run in name or name in ("_kafkalog_manifest.json", "_SUCCESS")):
                fs.delete_file(f.path)
    except Exception:                         # noqa: BLE001 - best effort after a failure
        pass
