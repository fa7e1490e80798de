"""java_text.java_utf8 against Java itself: the replacements of malformed UTF-8 that Kafka's tools print
(``new String(bytes, UTF_8)``), on every sequence of up to three bytes of a set that reaches each branch
of the decoder plus seeded random strings; and the compiled text path against the pure one."""
from __future__ import annotations

import itertools
import os
import random
import shutil
import subprocess
import sys

import pytest

from kafkalog_formats.java_text import java_utf8

ALPHABET = [0x41, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC2, 0xDF, 0xE0, 0xE1, 0xED, 0xEF,
            0xF0, 0xF1, 0xF4, 0xF5, 0xF8, 0xFF]

JAVA_SOURCE = """
import java.io.*;
import java.nio.charset.StandardCharsets;
public class Utf8Lines {
  public static void main(String[] a) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
    PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, "US-ASCII");
    for (String line; (line = in.readLine()) != null; ) {
      byte[] b = new byte[line.length() / 2];
      for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(line.substring(2 * i, 2 * i + 2), 16);
      StringBuilder sb = new StringBuilder();
      for (byte x : new String(b, StandardCharsets.UTF_8).getBytes(StandardCharsets.UTF_8))
        sb.append(String.format("%02x", x & 0xff));
      out.println(sb);
    }
    out.flush();
  }
}
"""


def _cases() -> list[bytes]:
    out = [bytes(t) for n in (1, 2, 3) for t in itertools.product(ALPHABET, repeat=n)]
    rng = random.Random(22)
    out += [bytes(rng.choice(ALPHABET + [rng.randrange(256)]) for _ in range(rng.randrange(1, 10)))
            for _ in range(5000)]
    return out


@pytest.mark.skipif(shutil.which("java") is None, reason="needs Java (java on PATH)")
def test_java_utf8_equals_java(tmp_path):
    src = tmp_path / "Utf8Lines.java"
    src.write_text(JAVA_SOURCE)
    cases = _cases()
    res = subprocess.run(["java", str(src)], input="\n".join(c.hex() for c in cases) + "\n",
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    java = res.stdout.split()
    wrong = [(c.hex(), j, java_utf8(c).encode().hex()) for c, j in zip(cases, java)
             if java_utf8(c).encode().hex() != j]
    assert len(java) == len(cases) and not wrong, wrong[:5]
    # the cases do tell Java's replacement from Python's own
    assert any(c.decode("utf-8", "replace").encode().hex() != j for c, j in zip(cases, java))


def test_compiled_text_path_equals_pure(tmp_path):
    from kafkalog_formats.record_batch import RecordSpec, build_batch
    cases = _cases()[::7]
    specs = [RecordSpec(i, 1_700_000_000_000 + i, c, c, ((c, c),)) for i, c in enumerate(cases)]
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(build_batch(0, specs))
    cmd = [sys.executable, "-m", "kafkalog_cli", "dump-log", "--print-data-log", str(seg)]
    native = subprocess.run(cmd, capture_output=True, env=dict(os.environ, KAFKALOG_PURE_PYTHON="0"))
    pure = subprocess.run(cmd, capture_output=True, env=dict(os.environ, KAFKALOG_PURE_PYTHON="1"))
    assert native.returncode == pure.returncode == 0, native.stderr + pure.stderr
    assert native.stdout == pure.stdout
    lines = pure.stdout.decode().splitlines()[2:]
    assert lines[1].endswith(" key: " + java_utf8(cases[0]) + " payload: " + java_utf8(cases[0]))
