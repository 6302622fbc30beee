#!/usr/bin/env python3
"""Start-up and shutdown of tablestore through its packages (issue: ready <= 100 ms and stop
<= 100 ms when idle, through every installed command and helper).

    python3 scripts/bench-package-startup.py [--binary target/release/tablestore] [--runs 20]

Builds the wheel and the npm packages of the binary (scripts/package.sh --binary), installs
them into a fresh venv and a fresh npm project (nothing from a registry), then for each way of
starting a server measures, --runs times, an in-memory server on a free loopback port:

  ready  from spawning the command to reading its ready line
         ("Azurite Table service is successfully listening at ..."; the port is bound by then)
  stop   from SIGTERM to the process's exit, with no request in flight

Ways: the binary itself; the pip-installed `tablestore` command; `python -m tablestore_server`; the
npm-installed command (node_modules/.bin/tablestore, a node launcher); `npx tablestore`;
the Python API `tablestore_server.Server()` (what the pytest fixture calls) and the JS `start()`
helper, both timed inside their own interpreter (interpreter start-up excluded, as in a test
run). Prints a table of medians and 90th percentiles in milliseconds, and for commands the
CPU time (user + system, all their processes) one start and stop costs — the figure that holds
on a busy machine, where wall-clock times mostly measure waiting for a core. A benchmark, not a test:
it asserts nothing; docs/performance.md records a run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
READY = "Azurite Table service is successfully listening at "
SERVER_ARGS = ["--inMemoryPersistence", "--tableHost", "127.0.0.1", "--tablePort", "0"]


def children_cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


def time_command(argv: list[str], runs: int, cwd: Path | None = None) -> tuple[list[float], list[float], list[float]]:
    ready, stop, cpu = [], [], []
    for _ in range(runs):
        c0 = children_cpu_ms()
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=cwd)
        for line in p.stdout:
            if line.startswith(READY):
                break
        else:
            raise SystemExit(f"{argv[0]} exited without a ready line")
        t1 = time.perf_counter()
        p.send_signal(signal.SIGTERM)
        p.wait(10)
        t2 = time.perf_counter()
        p.stdout.close()
        ready.append((t1 - t0) * 1000)
        stop.append((t2 - t1) * 1000)
        cpu.append(children_cpu_ms() - c0)
    return ready, stop, cpu


PY_API = """
import json, sys, time, tablestore_server
ready, stop = [], []
for _ in range(int(sys.argv[1])):
    t0 = time.perf_counter(); s = tablestore_server.Server(); t1 = time.perf_counter()
    s.stop(); t2 = time.perf_counter()
    ready.append((t1 - t0) * 1000); stop.append((t2 - t1) * 1000)
print(json.dumps([ready, stop]))
"""

JS_API = """
import { start } from "tablestore-server";
const ready = [], stop = [];
for (let i = 0; i < Number(process.argv[2]); i++) {
  const t0 = performance.now(); const s = await start(); const t1 = performance.now();
  await s.stop(); const t2 = performance.now();
  ready.push(t1 - t0); stop.push(t2 - t1);
}
console.log(JSON.stringify([ready, stop]));
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", default=str(ROOT / "target/release/tablestore"))
    parser.add_argument("--runs", type=int, default=20)
    a = parser.parse_args()
    binary = Path(a.binary).resolve()
    with tempfile.TemporaryDirectory(prefix="tablestore-bench-") as tmp:
        work = Path(tmp)
        dist = work / "dist"
        subprocess.run([str(ROOT / "scripts/package.sh"), "--binary", str(binary), "--out", str(dist)],
                       check=True, stdout=subprocess.DEVNULL)
        venv = work / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        wheel = next(dist.glob("tablestore_server-*.whl"))
        subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin/python"), "install",
                        "--quiet", "--disable-pip-version-check", "--no-index", str(wheel)], check=True)
        project = work / "npm"
        project.mkdir()
        (project / "package.json").write_text('{"name":"bench","version":"0.0.0","private":true,"type":"module"}\n')
        tarballs = sorted(str(t) for t in dist.glob("*.tgz"))
        subprocess.run(["npm", "install", "--offline", "--no-audit", "--no-fund", "--loglevel=error", *tarballs],
                       cwd=project, check=True)

        rows: list[tuple[str, list[float], list[float], list[float]]] = []
        ways = [
            ("binary itself", [str(binary)]),
            ("pip: tablestore (venv/bin)", [str(venv / "bin/tablestore")]),
            ("pip: python -m tablestore_server", [str(venv / "bin/python"), "-m", "tablestore_server"]),
            ("npm: node_modules/.bin/tablestore", [str(project / "node_modules/.bin/tablestore")]),
            ("npm: npx tablestore", ["npx", "--offline", "--no-install", "tablestore"]),
        ]
        for name, argv in ways:
            runs = max(3, a.runs // 4) if "npx" in name else a.runs
            rows.append((name, *time_command(argv + SERVER_ARGS, runs, cwd=project)))
        out = subprocess.run([str(venv / "bin/python"), "-c", PY_API, str(a.runs)],
                             check=True, capture_output=True, text=True).stdout
        rows.append(("pytest fixture: tablestore_server.Server()", *json.loads(out), []))
        (project / "bench.mjs").write_text(JS_API)
        out = subprocess.run(["node", "bench.mjs", str(a.runs)], cwd=project,
                             check=True, capture_output=True, text=True).stdout
        rows.append(("JS helper: start()", *json.loads(out), []))

    def p90(xs: list[float]) -> float:
        return sorted(xs)[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))]

    print(f"binary: {binary} ({binary.stat().st_size // 1024} KiB); runs: {a.runs}; "
          f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"| {'way':38} | ready median | ready p90 | stop median | stop p90 | CPU per start+stop |")
    print(f"|{'-' * 40}|-------------:|----------:|------------:|---------:|-------------------:|")
    for name, ready, stop, cpu in rows:
        cpu_text = f"{statistics.median(cpu):15.1f} ms" if cpu else f"{'(in-process)':>18}"
        print(f"| {name:38} | {statistics.median(ready):9.1f} ms | {p90(ready):6.1f} ms "
              f"| {statistics.median(stop):8.1f} ms | {p90(stop):5.1f} ms | {cpu_text} |")


if __name__ == "__main__":
    main()
