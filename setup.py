"""The packages (discovered, with formats/ installed as ``kafkalog_formats``) and the build of the optional
compiled record path (``kafkalog_formats._native``); everything else is in pyproject.toml.

The extension is optional: where it cannot be compiled (no C compiler, no Python headers) the install
still succeeds and kafkalog runs its pure-Python path (``kafkalog --version`` says which is active).
``KAFKALOG_NATIVE_ASAN=1`` builds it with AddressSanitizer (see tests/test_native_asan.py).
"""
import os

from setuptools import Extension, find_packages, setup

# Discovered, never listed by hand (a hand list once left kafkalog_cli.engine.diff out of the wheel).
PACKAGE_DIR = {"kafkalog_formats": "formats"}
PACKAGES = ["kafkalog_formats", *(f"kafkalog_formats.{p}" for p in find_packages("formats")),
            *find_packages(include=["kafkalog_cli", "kafkalog_cli.*"])]

SOURCES = ["module.c", "crc32c.c", "md5.c", "records.c", "scan.c", "render.c", "offset_map.c", "recover.c",
           "coordinator.c", "batch.c", "codecs.c"]

compile_args = ["-O3", "-std=gnu11", "-fvisibility=hidden"]
link_args = []
if os.environ.get("KAFKALOG_NATIVE_ASAN"):
    compile_args = ["-O1", "-g", "-std=gnu11", "-fsanitize=address,undefined", "-fno-omit-frame-pointer",
                    "-fno-sanitize-recover=undefined"]
    link_args = ["-fsanitize=address,undefined"]

setup(packages=PACKAGES, package_dir=PACKAGE_DIR, ext_modules=[Extension(
    "kafkalog_formats._native",
    sources=[f"formats/_native_c/{s}" for s in SOURCES],
    depends=["formats/_native_c/native.h"],
    extra_compile_args=compile_args,
    extra_link_args=link_args,
    optional=True,
)])
