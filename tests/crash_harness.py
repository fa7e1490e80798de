"""Kill a write command at every file operation (``KAFKALOG_FAULT_AFTER``: the process exits at once,
as under SIGKILL), then ``recover`` and re-run it, and compare with an undisturbed run."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO, run_cli

_COUNT = ("import sys; from kafkalog_cli import fileops; from kafkalog_cli.app import main\n"
          "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\nprint(fileops.operations())")


def kill_at_every_operation(tmp_path: Path, source: Path, args: list[str], observe) -> int:
    """Run ``kafkalog ARGS DIR`` on copies of ``source`` killed after 0, 1, … file operations; after each,
    ``recover`` then ``ARGS`` again must leave ``observe(DIR)`` equal to an undisturbed run's and a
    directory that ``verify`` passes. Returns the number of operations of the undisturbed run."""
    clean = tmp_path / "clean"
    shutil.copytree(source, clean)
    assert run_cli(*args, str(clean)).code in (0, 1)
    expected = observe(clean)
    probe = tmp_path / "probe"
    shutil.copytree(source, probe)
    ops = int(subprocess.run([sys.executable, "-c", _COUNT, *args, str(probe)], cwd=REPO, capture_output=True,
                             text=True).stdout.strip().splitlines()[-1])
    assert ops > 10
    env = dict(os.environ)
    for n in range(1, ops + 1):
        d = tmp_path / f"kill-{n}"
        shutil.copytree(source, d)
        env["KAFKALOG_FAULT_AFTER"] = str(n - 1)
        killed = subprocess.run([sys.executable, "-m", "kafkalog_cli", *args, str(d)], cwd=REPO, env=env,
                                capture_output=True)
        assert killed.returncode == 137, (n, killed.stderr)
        assert run_cli("recover", str(d)).code in (0, 1), n
        assert run_cli(*args, str(d)).code in (0, 1), n
        assert observe(d) == expected, n
        assert run_cli("verify", str(d)).code == 0, n
    return ops
