"""Exit statuses, the same for every command (documented in the README and man pages)."""
from enum import IntEnum


class Status(IntEnum):
    OK = 0            # everything read was valid / nothing to repair
    PROBLEMS = 1      # problems found, or (recover) repairs made or planned; retain/compact: problems only
    USAGE = 2         # bad command line
    CANNOT_RUN = 3    # lock held, I/O error, missing input: the command could not do its job
    INTERRUPTED = 130   # Ctrl-C (128 + SIGINT, the shell's convention)
    BROKEN_PIPE = 141   # standard output closed early, e.g. piped into head (128 + SIGPIPE)
