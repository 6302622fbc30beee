#!/usr/bin/env python3
"""CI stage (called by test.sh): runs the commands of README.md and docs/ against a binary, so
the guides cannot drift from the program.

Only shell blocks marked on the line before them run; prose examples that cannot run here
(Docker, Azure accounts, other machines) stay unmarked:

    <!-- docs-walk -->            the next ```sh block runs with bash -euo pipefail and must
                                  exit 0 (within 120 s)
    <!-- docs-walk: server -->    the next ```sh block starts a server: it must print a readiness
                                  line within 30 s, then keeps running for the document's later
                                  blocks; at the next server block or the document's end it gets
                                  SIGTERM and must exit 0

Each document runs in a fresh temporary folder with `tablestore` (the binary under test) first
on PATH and a free port of its own: every `10002` (and `8902`, the port of `--flavor cosmos`) in
its marked blocks is replaced by that port, and TABLESTORE_PORT names it, so the guides' default
ports need no change and walks may run side by side. A marker not followed by a shell block fails.

    scripts/ci/docs-walk.py --binary PATH [FILE.md …]

Last line: "docs: N passed, N failed, N skipped"; exit 1 when a block failed.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^<!--\s*docs-walk(?::\s*(\w+))?\s*-->\s*$")
FENCE = re.compile(r"^```(sh|bash|shell)\s*$")
READY = (
    "Azurite Table service is successfully listening at",
    "Azurite Table service successfully started on",
    "Cosmos DB Table service is successfully listening at",
)
RUN_TIMEOUT = 120
READY_TIMEOUT = 30


class Block:
    def __init__(self, path: Path, line: int, mode: str, text: str):
        self.path, self.line, self.mode, self.text = path, line, mode, text

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks_of(path: Path) -> tuple[list[Block], list[str]]:
    """The marked blocks of a document, and its misplaced markers."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, errors = [], []
    i = 0
    while i < len(lines):
        marker = MARKER.match(lines[i])
        if not marker:
            i += 1
            continue
        mode = marker.group(1) or "run"
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        if mode not in ("run", "server") or j >= len(lines) or not FENCE.match(lines[j]):
            errors.append(f"{path.relative_to(ROOT)}:{i + 1}: a docs-walk marker ({mode}) not before a ```sh block")
            i += 1
            continue
        k = j + 1
        while k < len(lines) and not lines[k].startswith("```"):
            k += 1
        blocks.append(Block(path, j + 1, mode, "\n".join(lines[j + 1 : k]) + "\n"))
        i = k + 1
    return blocks, errors


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A server block's process (its own process group) and its log."""

    def __init__(self, block: Block, script: str, cwd: Path, env: dict[str, str]):
        self.block = block
        self.log = cwd / f".docs-walk-server-{block.line}.log"
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(
                ["bash", "-c", script], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def wait_ready(self) -> str | None:
        """None when ready; else why not."""
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if any(line.startswith(READY) for line in self.output().splitlines()):
                return None
            if self.process.poll() is not None:
                return f"exited with status {self.process.returncode} before its readiness line"
            time.sleep(0.05)
        return f"no readiness line within {READY_TIMEOUT} s"

    def stop(self) -> str | None:
        """SIGTERM to the group; None when it exited 0."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
                return "did not stop within 15 s of SIGTERM"
        code = self.process.returncode
        return None if code == 0 else f"exited with status {code} after SIGTERM"


def tail(text: str, n: int = 15) -> str:
    return "\n".join("    | " + line for line in text.rstrip().splitlines()[-n:])


def walk(path: Path, bindir: Path, results: dict[str, int]) -> None:
    blocks, errors = blocks_of(path)
    for error in errors:
        print(f"FAIL {error}")
        results["failed"] += 1
    if not blocks:
        return
    port = free_port()
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", TABLESTORE_PORT=str(port))
    server: Server | None = None

    def stop_server() -> None:
        nonlocal server
        if server is None:
            return
        why = server.stop()
        if why:
            print(f"FAIL {server.block.where} (server): {why}\n{tail(server.output())}")
            results["failed"] += 1
        server = None

    with tempfile.TemporaryDirectory(prefix="docs-walk-") as work:
        cwd = Path(work)
        for block in blocks:
            script = block.text.replace("10002", str(port)).replace("8902", str(port))
            if block.mode == "server":
                stop_server()
                server = Server(block, script, cwd, env)
                why = server.wait_ready()
                if why:
                    print(f"FAIL {block.where} (server): {why}\n{tail(server.output())}")
                    results["failed"] += 1
                    server.stop()
                    server = None
                else:
                    print(f"ok   {block.where} (server)")
                    results["passed"] += 1
                continue
            try:
                done = subprocess.run(
                    ["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT,
                )
                why = None if done.returncode == 0 else f"exit status {done.returncode}"
                output = done.stdout.decode(errors="replace")
            except subprocess.TimeoutExpired as e:
                why = f"still running after {RUN_TIMEOUT} s"
                output = (e.stdout or b"").decode(errors="replace")
            if why:
                print(f"FAIL {block.where}: {why}\n{tail(script, 40)}\n    output:\n{tail(output)}")
                results["failed"] += 1
            else:
                print(f"ok   {block.where}")
                results["passed"] += 1
        stop_server()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", required=True, type=Path)
    parser.add_argument("files", nargs="*", type=Path)
    args = parser.parse_args()
    binary = args.binary.resolve()
    if not os.access(binary, os.X_OK):
        print(f"docs-walk: {args.binary} is not an executable: build it first", file=sys.stderr)
        print("docs: 0 passed, 1 failed, 0 skipped")
        return 1
    files = [f.resolve() for f in args.files] or [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    results = {"passed": 0, "failed": 0, "skipped": 0}
    with tempfile.TemporaryDirectory(prefix="docs-walk-bin-") as bindir:
        os.symlink(binary, Path(bindir) / "tablestore")
        for path in files:
            walk(path, Path(bindir), results)
    if results["passed"] + results["failed"] == 0:
        print("docs-walk: no marked blocks found")
        results["failed"] += 1
    print(f"docs: {results['passed']} passed, {results['failed']} failed, {results['skipped']} skipped")
    return 0 if results["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
