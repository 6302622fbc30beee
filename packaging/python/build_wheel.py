#!/usr/bin/env python3
"""Builds the tablestore-server wheel around an already built binary (standard library only).

    python3 packaging/python/build_wheel.py --binary target/release/tablestore \\
        --version 0.1.0 --out target/dist [--platform-tag manylinux_2_17_x86_64]

Why not maturin: its `bin` bindings run `cargo build` themselves, which in CI would be a
second full build of the binary the test command has just built. A wheel is a zip with
three metadata files; this writes exactly the layout maturin's `bin` bindings produce: the
binary as a *script* (`<name>.data/scripts/tablestore`, installed onto PATH by pip with no
Python wrapper in between), plus the `tablestore_server` Python module and its pytest plugin,
and `azurite` / `azurite-table` console scripts that run the binary with that word first.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import platform
import re
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The distribution's name on PyPI (`tablestore` there is Alibaba Cloud's SDK, whose module is
# `tablestore` too; docs/decisions.md), its normalized form in file names, and the Python module
# it installs.
DIST_NAME = "tablestore-server"
FILE_NAME = DIST_NAME.replace("-", "_")
MODULE = "tablestore_server"
SUMMARY = "An Azure Table storage-compatible server: a fast local endpoint for the Azure Tables SDKs"


# The pytest plugin, and Azurite's command names: `azurite-table …` and `azurite …` typed as they
# were for Azurite run `tablestore azurite-table …` / `tablestore azurite …`, as in the container
# image (a script cannot be a link, so a console script passes the word on).
ENTRY_POINTS = (
    "[console_scripts]\n"
    f"azurite = {MODULE}.__main__:azurite\n"
    f"azurite-table = {MODULE}.__main__:azurite_table\n"
    "\n"
    "[pytest11]\n"
    f"tablestore = {MODULE}.pytest_plugin\n"
)


def platform_tag(binary: bytes) -> str:
    """The wheel tag of the machine the binary was built on. For Linux, the glibc it needs
    (its newest GLIBC_2.N symbol version) gives the manylinux tag."""
    machine = platform.machine().lower()
    if sys.platform.startswith("linux"):
        arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
        needed = [int(m) for m in re.findall(rb"GLIBC_2\.(\d+)", binary)]
        return f"manylinux_2_{max(needed + [17])}_{arch}"
    if sys.platform == "darwin":
        return "macosx_11_0_arm64" if machine == "arm64" else "macosx_10_12_x86_64"
    if sys.platform == "win32":
        return "win_arm64" if machine == "arm64" else "win_amd64"
    raise SystemExit(f"build_wheel.py: no wheel tag known for {sys.platform}; pass --platform-tag")


def record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def metadata(version: str) -> str:
    readme = (HERE / "README.md").read_text(encoding="utf-8")
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {DIST_NAME}\n"
        f"Version: {version}\n"
        f"Summary: {SUMMARY}\n"
        "License: MIT\n"
        "Requires-Python: >=3.8\n"
        "Classifier: Framework :: Pytest\n"
        "Classifier: License :: OSI Approved :: MIT License\n"
        "Description-Content-Type: text/markdown\n"
        "\n" + readme
    )


def build(binary_path: Path, version: str, out: Path, tag: str | None) -> Path:
    binary = binary_path.read_bytes()
    tag = tag or platform_tag(binary)
    exe = "tablestore.exe" if binary_path.suffix == ".exe" else "tablestore"
    dist_info = f"{FILE_NAME}-{version}.dist-info"
    data_dir = f"{FILE_NAME}-{version}.data"
    files: list[tuple[str, bytes, int]] = []  # (path in the wheel, bytes, unix mode)
    for source in sorted((HERE / MODULE).glob("*.py")):
        files.append((f"{MODULE}/{source.name}", source.read_bytes(), 0o644))
    files.append((f"{data_dir}/scripts/{exe}", binary, 0o755))
    files.append((f"{dist_info}/METADATA", metadata(version).encode(), 0o644))
    files.append(
        (
            f"{dist_info}/WHEEL",
            f"Wheel-Version: 1.0\nGenerator: tablestore build_wheel.py\nRoot-Is-Purelib: false\nTag: py3-none-{tag}\n".encode(),
            0o644,
        )
    )
    files.append(
        (f"{dist_info}/entry_points.txt", ENTRY_POINTS.encode(), 0o644)
    )
    files.append((f"{dist_info}/licenses/LICENSE", (HERE.parent.parent / "LICENSE").read_bytes(), 0o644))
    record_path = f"{dist_info}/RECORD"
    record = "\n".join([record_line(p, d) for p, d, _ in files] + [f"{record_path},,", ""])
    files.append((record_path, record.encode(), 0o644))

    out.mkdir(parents=True, exist_ok=True)
    wheel = out / f"{FILE_NAME}-{version}-py3-none-{tag}.whl"
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as z:
        for path, data, mode in files:
            info = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return wheel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", required=True, type=Path)
    parser.add_argument("--version", required=True)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--platform-tag")
    a = parser.parse_args()
    if not a.binary.is_file():
        raise SystemExit(f"build_wheel.py: {a.binary} does not exist: build the binary first")
    print(build(a.binary, a.version, a.out, a.platform_tag))


if __name__ == "__main__":
    main()
