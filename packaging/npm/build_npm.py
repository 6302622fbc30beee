#!/usr/bin/env python3
"""Builds the npm packages around already built binaries: one platform package per binary
(`tablestore-server-<os>-<cpu>`, only the binary and `os`/`cpu` fields) and the
`tablestore-server` package (the `tablestore` command's launcher, the JS helper) that lists
them as optionalDependencies, as esbuild and the other native CLIs on npm do. `npm pack`
writes the tarballs into --out. (`tablestore` on npm is Alibaba Cloud's SDK:
docs/decisions.md.)

    python3 packaging/npm/build_npm.py --version 0.1.0 --out target/dist \\
        --binary linux-x64=target/release/tablestore [--binary darwin-arm64=… …]

The main package lists exactly the platforms given, so a package built for this machine
alone installs without looking up the others on the registry; the release workflow passes
all five.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
NAME = "tablestore-server"
DESCRIPTION = "An Azure Table storage-compatible server: a fast local endpoint for the Azure Tables SDKs"


def pack(folder: Path, out: Path) -> Path:
    result = subprocess.run(
        ["npm", "pack", "--silent", "--pack-destination", str(out.resolve())],
        cwd=folder, check=True, capture_output=True, text=True,
    )
    return out / result.stdout.strip().splitlines()[-1]


def platform_package(key: str, binary: Path, version: str, work: Path, out: Path) -> Path:
    os_name, cpu = key.split("-")
    folder = work / key
    (folder / "bin").mkdir(parents=True)
    exe = "tablestore.exe" if os_name == "win32" else "tablestore"
    shutil.copy2(binary, folder / "bin" / exe)
    (folder / "bin" / exe).chmod(0o755)
    shutil.copy2(ROOT / "LICENSE", folder / "LICENSE")
    manifest = {
        "name": f"{NAME}-{key}",
        "version": version,
        "description": f"The {key} binary of tablestore",
        "license": "MIT",
        "os": [os_name],
        "cpu": [cpu],
        "files": ["bin/", "LICENSE"],
        "preferUnplugged": True,
    }
    (folder / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return pack(folder, out)


def main_package(keys: list[str], version: str, work: Path, out: Path) -> Path:
    folder = work / "tablestore"
    shutil.copytree(HERE / "tablestore", folder)
    shutil.copy2(ROOT / "LICENSE", folder / "LICENSE")
    manifest = {
        "name": NAME,
        "version": version,
        "description": DESCRIPTION,
        "license": "MIT",
        # Azurite's command names too: `azurite-table …` / `azurite …` typed as they were for
        # Azurite run tablestore as that command, as in the container image. With several bins,
        # `npx tablestore-server` runs the one named after the package: the server.
        "bin": {
            "tablestore": "bin/tablestore",
            "tablestore-server": "bin/tablestore",
            "azurite": "bin/azurite",
            "azurite-table": "bin/azurite-table",
        },
        "scripts": {"postinstall": "node lib/install.cjs"},
        "exports": {".": "./index.mjs"},
        "files": ["bin/", "lib/", "index.mjs", "README.md", "LICENSE"],
        "engines": {"node": ">=18"},
        "optionalDependencies": {f"{NAME}-{k}": version for k in sorted(keys)},
    }
    (folder / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return pack(folder, out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--version", required=True)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--binary", action="append", required=True, metavar="OS-CPU=PATH")
    a = parser.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    binaries = dict(b.split("=", 1) for b in a.binary)
    for key, path in binaries.items():
        if not Path(path).is_file():
            raise SystemExit(f"build_npm.py: {path} ({key}) does not exist: build the binary first")
    with tempfile.TemporaryDirectory() as work_dir:
        work = Path(work_dir)
        for key, path in binaries.items():
            print(platform_package(key, Path(path), a.version, work, a.out))
        print(main_package(list(binaries), a.version, work, a.out))


if __name__ == "__main__":
    main()
