"""The packages (discovered, with formats/ installed as ``kafkalog_formats``) and the builds of the optional
compiled paths, one extension per layer; everything else is in pyproject.toml.

* ``kafkalog_formats._native`` (formats/_native_c): the format layer's record path (batch walk, records,
  columns, CRC-32C, codecs, the coordinator decoder, the recovery walks, the salvage's resynchronisation scan),
  with the decompressors it builds in (formats/_native_c/vendor: libdeflate, zstd's decoder, LZ4; see
  vendor/README.md), which the other extensions reach through its capsule;
* ``kafkalog_cli.render._native_render`` (kafkalog_cli/render/_native_c): dump-log's line writers;
* ``kafkalog_cli.repair._native_clean`` (kafkalog_cli/repair/_native_c): the cleaner's offset map.

An upper layer's extension is built from its own sources and the format layer's shared ones (``SHARED``:
one source compiled into each extension that needs it, never a copy), so the format layer's C knows nothing
of rendering or cleaning (tests/test_architecture.py checks these lists). Every extension is optional: where
it cannot be compiled (no C compiler, no Python headers) the install still succeeds and kafkalog runs its
pure-Python path for that layer (``kafkalog --version`` says which is active). ``KAFKALOG_NATIVE_ASAN=1``
builds them with AddressSanitizer (see tests/test_native_asan.py).
"""
import os

from setuptools import Extension, find_packages, setup

# Discovered, never listed by hand (a hand list once left kafkalog_cli.engine.diff out of the wheel).
PACKAGE_DIR = {"kafkalog_formats": "formats"}
PACKAGES = ["kafkalog_formats", *(f"kafkalog_formats.{p}" for p in find_packages("formats")),
            *find_packages(include=["kafkalog_cli", "kafkalog_cli.*"])]

FORMATS_C = "formats/_native_c"
# the format layer's sources the upper layers' extensions are built with too
SHARED = {"records.c": "gbuf, varints, the batch header, the record cursor, the decompression call",
          "crc32c.c": "CRC-32C", "section.c": "a records section located for a per-record pass",
          "text.c": "JSON strings, UTF-8, hex, base64 and integers written into a gbuf"}
# extension -> (its directory, its own sources, the shared sources it needs)
EXTENSIONS = {
    "kafkalog_formats._native": (FORMATS_C, ["module.c", "scan.c", "recover.c", "coordinator.c", "batch.c",
                                             "codecs.c", "gather.c", "salvage.c", "lib_deflate.c", "lib_zstd.c",
                                             "lib_lz4.c"], ["records.c", "crc32c.c", "section.c", "text.c"]),
    "kafkalog_cli.render._native_render": ("kafkalog_cli/render/_native_c", ["render.c"],
                                           ["records.c", "crc32c.c", "text.c"]),
    "kafkalog_cli.repair._native_clean": ("kafkalog_cli/repair/_native_c", ["offset_map.c", "md5.c"],
                                          ["records.c", "section.c"]),
}

compile_args = ["-O3", "-std=gnu11", "-fvisibility=hidden"]
link_args = []
if os.environ.get("KAFKALOG_NATIVE_ASAN"):
    compile_args = ["-O1", "-g", "-std=gnu11", "-fsanitize=address,undefined", "-fno-omit-frame-pointer",
                    "-fno-sanitize-recover=undefined"]
    link_args = ["-fsanitize=address,undefined"]


def _extension(name: str, directory: str, own: list, shared: list) -> Extension:
    headers = [f"{FORMATS_C}/{h}" for h in ("native.h", "text.h", "codec_libs.h")]
    headers += [f"{directory}/{h}" for h in sorted(os.listdir(directory)) if h.endswith(".h")
                and directory != FORMATS_C] if os.path.isdir(directory) else []
    return Extension(name, sources=[f"{directory}/{s}" for s in own] + [f"{FORMATS_C}/{s}" for s in shared],
                     include_dirs=[FORMATS_C], depends=headers, extra_compile_args=compile_args,
                     extra_link_args=link_args, optional=True)


setup(packages=PACKAGES, package_dir=PACKAGE_DIR,
      ext_modules=[_extension(name, *spec) for name, spec in EXTENSIONS.items()])
