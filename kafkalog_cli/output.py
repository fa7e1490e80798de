"""Where a command's report goes: one ``Output`` that owns the file descriptor (standard output, or the file
``-o`` names), the only module that writes to standard output.

Every byte of a report goes down one path: the Python renderers write text to the ``Output`` (a text stream),
the format-string renderer bytes to ``Output.buffer``, the compiled line writers (render/_native_c) are handed
its file descriptor (``write_native``). Below them one loop writes the descriptor whole, as the C writer's
``write_all`` does: a short write is continued, EAGAIN (a non-blocking pipe whose reader is late) waits
until the descriptor is writable, EINTR is retried (PEP 475). Python's own ``sys.stdout`` does none of this:
a short write into a pipe was dropped with exit status 0, and EAGAIN lost bytes (issue 34).

What can go wrong ends the run as the README's exit-status table says:

* the reader went away (EPIPE): ``BrokenPipeError``, which ``app.main`` ends quietly with 141;
* anything else (ENOSPC, EDQUOT, EIO, EBADF ...): ``OutputFailed``, one line naming the file and the remedy,
  exit status 3, never 0 with half a report; after it nothing more is written, so nothing blocks or fails
  twice at exit.

A report file (``report_file``) is written beside its target and renamed into place once complete
(``fileops.ReportFile``); a failed one leaves the target as it was. ``refuse`` is the one check of a path
an option writes (``fileops.refuse_write_target``): never inside what the command reads, never into a Kafka
directory.

When ``sys.stdout`` is not a file descriptor (a test's ``redirect_stdout``), the same object writes its bytes
to that stream as text, and the compiled writers fill a buffer instead of the descriptor.
"""
from __future__ import annotations

import io
import os
import sys
from contextlib import contextmanager

from .errors import CannotRun, UsageProblem

CHUNK = 1 << 16               # bytes gathered before a write (the C writers flush at 1 MiB)


class OutputFailed(CannotRun):
    """The report could not be written whole: exit status 3 with one line (never 0 with half a report)."""


class _Descriptor(io.RawIOBase):
    """A file descriptor written whole (the loop above); errors as the module docstring says."""

    def __init__(self, fd: int, where, left: str = "the report there is incomplete") -> None:
        super().__init__()
        self.fd, self.where, self.left, self.dead = fd, where, left, False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def isatty(self) -> bool:
        try:
            return os.isatty(self.fd)
        except OSError:
            return False

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        n = len(view)
        if self.dead:
            return n                 # the run is ending on an error: what is left goes nowhere
        try:
            while view:
                try:
                    view = view[os.write(self.fd, view):]
                except BlockingIOError:
                    _wait_writable(self.fd)
        except OSError as e:
            raise self.failed(e) from None
        return n

    def failed(self, e: OSError) -> BaseException:
        """The exception that ends the run: a broken pipe as it is, any other error as ``OutputFailed``."""
        self.dead = True
        if isinstance(e, BrokenPipeError):
            return e
        from .fileops import remedy
        where = self.where() if callable(self.where) else self.where
        return OutputFailed(f"cannot write the report to {where}: {e.strerror or e} ({self.left}); "
                            f"{remedy(e.errno)} or send the report elsewhere, then run the command again")


def _wait_writable(fd: int) -> None:
    import select
    poll = select.poll()
    poll.register(fd, select.POLLOUT)
    poll.poll()


class _Stream(io.RawIOBase):
    """Bytes handed to a text stream that has no file descriptor (``redirect_stdout`` in tests), decoded as
    they were encoded (UTF-8, undecodable bytes as surrogate escapes), a character cut between two writes
    kept for the next."""

    def __init__(self, stream) -> None:
        import codecs
        super().__init__()
        self.stream, self.dead = stream, False
        self._decode = codecs.getincrementaldecoder("utf-8")("surrogateescape").decode

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        try:
            return bool(self.stream.isatty())
        except (AttributeError, ValueError, OSError):
            return False

    def write(self, data) -> int:
        b = bytes(data)
        if not self.dead:
            self.stream.write(self._decode(b))
        return len(b)

    def flush(self) -> None:
        if not self.dead:
            self.stream.flush()


class Output(io.TextIOWrapper):
    """A report's text stream (UTF-8, ``\\n``, line-buffered on a terminal), its byte stream ``buffer`` and,
    for the compiled writers, its file descriptor (``write_native``)."""

    def __init__(self, raw, stream=None, pending=None) -> None:
        self.raw_sink, self.stream, self.pending = raw, stream, pending
        super().__init__(io.BufferedWriter(raw, CHUNK), encoding="utf-8", errors="surrogateescape", newline="\n",
                         line_buffering=raw.isatty())

    def write_native(self, render) -> None:
        """``render(target)`` of a compiled writer: the file descriptor (what is buffered flushed first, so the
        order of everything written stays), or a bytearray written here when there is none."""
        raw = self.raw_sink
        if raw.dead:
            return
        self.flush()                         # the text before it goes first
        if isinstance(raw, _Descriptor):
            try:
                render(raw.fd)
            except OSError as e:
                raise raw.failed(e) from None
        else:
            buf = bytearray()
            render(buf)
            self.buffer.write(buf)

    def commit(self) -> None:
        """The report is complete: flushed, and a report file renamed into place."""
        self.flush()
        if self.pending is not None:
            try:
                self.pending.commit()
            except OSError as e:
                raise self.raw_sink.failed(e) from None

    def discard(self) -> None:
        """The run ends without the report: nothing more is written; a report file's temporary is removed."""
        self.raw_sink.dead = True
        if self.pending is not None:
            self.pending.abandon()


# --- standard output ------------------------------------------------------------------------------------

_stdout: Output | None = None
_done: int | None = None                 # the exit status of a command whose work is complete (work_done)


def stdout() -> Output:
    """This run's standard output (bound to ``sys.stdout`` as it is now: a new one after a test redirects it)."""
    global _stdout
    stream = sys.stdout
    if _stdout is None or _stdout.stream is not stream:
        _stdout = _bind(stream)
    return _stdout


def _bind(stream) -> Output:
    if stream is None:                       # Python found descriptor 1 closed (kafkalog ... >&-)
        return Output(_Descriptor(1, "standard output"), stream)
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return Output(_Stream(stream), stream)
    stream.flush()                           # what click wrote before stays before the report
    return Output(_Descriptor(fd, lambda: _name(fd)), stream)


def _name(fd: int) -> str:
    """Standard output as a message names it: with its file when it is one (``> /mnt/full/report``)."""
    import stat
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return f"standard output ({os.readlink(f'/proc/self/fd/{fd}')})"
    except OSError:
        pass
    return "standard output"


def finish() -> None:
    """End of a run: the report on standard output flushed (its errors as while writing), then forgotten."""
    global _stdout
    out = _stdout
    if out is not None:
        out.flush()
    _stdout = None
    if sys.stdout is not None:
        sys.stdout.flush()                   # click's own lines (--help)


def settle() -> BaseException | None:
    """``finish`` on the way out after an error: the error writing the report raised (a broken pipe or
    ``OutputFailed``), or None; the report is dropped after one."""
    try:
        finish()
    except (BrokenPipeError, OutputFailed) as e:
        abandon()
        return e
    return None


def abandon() -> None:
    """The run stops (Ctrl-C, an error): nothing more is written to standard output; a pending report is
    dropped, so that exit neither blocks on a full pipe nor writes after the message that ended the run."""
    global _stdout
    if _stdout is not None:
        _stdout.discard()
    _stdout = None


def silence() -> None:
    """The reader went away: standard output goes to /dev/null, so nothing at exit writes into the dead pipe."""
    abandon()
    try:
        fd = sys.stdout.fileno() if sys.stdout is not None else 1
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def begin() -> None:
    """A run starts: nothing of an earlier in-process run is written now or remembered."""
    global _done
    abandon()
    _done = None


def work_done(status: int) -> None:
    """A command that changes files has made every change (durably) and knows its exit status: what is left is
    its report, and a Ctrl-C from now on stops only the report (``app.main`` then exits with ``status`` and
    says so) instead of reading as an interrupted run (issue 34)."""
    global _done
    _done = int(status)


def done_status() -> int | None:
    """The exit status ``work_done`` recorded in this run, or None."""
    return _done


def has_no_reader() -> bool:
    """True when standard output is a pipe or socket whose reader is gone (``| head`` that already exited): a
    command that changes files checks it before the first change, so that a report nobody can read never
    comes with changes (block-buffered output would only notice at the end)."""
    import select
    import stat
    raw = stdout().raw_sink
    if not isinstance(raw, _Descriptor):
        return False                         # not a file descriptor (in-process runs)
    try:
        mode = os.fstat(raw.fd).st_mode
    except OSError:
        return False
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return False
    poll = select.poll()
    poll.register(raw.fd, select.POLLOUT)
    return any(ev & (select.POLLERR | select.POLLHUP) for _fd, ev in poll.poll(0))


def check_reader() -> None:
    """Raise BrokenPipeError (exit 141, quietly) when nobody reads standard output any more."""
    if has_no_reader():
        raise BrokenPipeError(32, "standard output has no reader")


# --- report files ---------------------------------------------------------------------------------------

def refuse(path, reads=(), option: str = "--output") -> None:
    """A usage error (exit 2, nothing written) when ``path`` may not be written: inside what the command reads
    (``reads``) or in a Kafka directory (``fileops.refuse_write_target``, the check of every writing option)."""
    from .fileops import refuse_write_target
    why = refuse_write_target(path, reads)
    if why:
        raise UsageProblem(f"{option}: {why}")


@contextmanager
def report_file(path):
    """An ``Output`` to the file ``path`` (checked with ``refuse`` first): renamed into place when the block
    ends normally, removed when it raises."""
    from .fileops import ReportFile
    try:
        pending = ReportFile(path)
    except OSError as e:
        raise OutputFailed(f"cannot write the report to {path}: {e.strerror or e}") from None
    out = Output(_Descriptor(pending.fd, str(path), f"{path} is left as it was"), pending=pending)
    try:
        yield out
        out.commit()
    except BaseException:
        out.discard()
        raise
