"""The container image checks of scripts/ci/docker.sh: runs the image that script built with podman
as `tablestore` (the name the docs use; podman's private configuration comes in CONTAINERS_CONF
and CONTAINERS_STORAGE_CONF) the way users run it, and prints one line per check,
"docker: ok <check> (…)" or "docker: FAILED <check>: <why>". Last line: "checks: N passed, N failed".

What runs:
- every `docker run` of the image in a shell block of README.md, docs/**/*.md or the Dockerfile's
  header, and every Compose service of the image in a yaml block of those files, plus the
  scenarios below written as `docker run` lines (a scenario that the docs also show runs once);
  each is translated only as far as CI needs: podman for docker, detached, the published port on
  a free loopback port, `--rm` applied by removing the container at the end, the shell's `$PWD`
  a scratch folder that holds `tests` (this repository's) and `certs` (the test certificate).
  Every run must become healthy (the image's own HEALTHCHECK through `podman healthcheck run`,
  and GET /_health through the published port), print the readiness line of the Azurite
  command it names (what log-watching waits look for), run as the user it should (10002 unless `--user`), answer a
  Python SDK round trip through the published port, keep its promises (a /seed folder is
  imported; with a /data volume the store is there, owned by that user) and stop on SIGTERM
  within the grace period with exit code 0;
- every `docker build` written there must be one of the two forms the Dockerfile supports;
- the image's configuration (user, volume, port, HEALTHCHECK, entrypoint);
- SIGTERM with writes in flight on the README's `-v tablestore-data:/data` command: exit 0
  within the grace period, then after `podman start` every acknowledged write is read back,
  and a new container on the same named volume reads them too.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shlex
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import urllib3
import yaml
from azure.data.tables import TableServiceClient

ROOT = Path(__file__).resolve().parents[2]
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
# The Cosmos DB emulator's published key (the `localhost` account of `--flavor cosmos`).
COSMOS_KEY = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="
IMAGE_UID = 10002
# `docker stop`'s default grace period; the checks stop every container with it.
GRACE_S = 10
HEALTHY_WITHIN_S = 30
# The readiness line of the Azurite command a run names (docs/configuration.md): the standalone
# `azurite-table` command's, else the all-in-one command's Table line, which the Testcontainers
# recipes and modules wait for.
READY_LINE = "Table service is successfully listening"
STANDALONE_READY_LINE = "Azurite Table service successfully started on"
# `--flavor cosmos`: its own words, then the Cosmos DB emulator's `Started` line (CRLF), which
# Testcontainers' Cosmos modules wait for (docs/containers.md).
COSMOS_READY_LINE = "Cosmos DB Table service is successfully listening at"
COSMOS_STARTED = b"\nStarted\r\n"

# Scenarios that are not a command of the docs (or not only), as `docker run` lines.
SCENARIOS = [
    ("--read-only with the /data volume",
     "docker run --rm --read-only -p 10002:10002 -v tablestore-data:/data tablestore"),
    # The Azurite image's own default command (its Dockerfile's CMD), which docs/configuration.md
    # quotes: a Compose file that keeps it works when only the image is swapped.
    ("the Azurite image's default command line",
     "docker run --rm -p 10002:10002 -v tablestore-data:/data tablestore "
     "azurite -l /data --blobHost 0.0.0.0 --queueHost 0.0.0.0 --tableHost 0.0.0.0"),
    # Testcontainers' Azurite modules for .NET, Node and Go replace the entrypoint with `azurite`
    # (docs/clients.md): the image's link runs tablestore, which prints that command's line.
    ("Testcontainers' `azurite` entrypoint",
     "docker run --rm -p 10002:10002 --entrypoint azurite tablestore "
     "--blobHost 0.0.0.0 --queueHost 0.0.0.0 --tableHost 0.0.0.0"),
]
# The run that the SIGTERM and persistence checks use: the README's.
README_RUN = "docker run --rm -p 10002:10002 -v tablestore-data:/data tablestore"
# The two builds the Dockerfile supports: from source, and from a built binary (this stage).
BUILD_FORMS = [
    re.compile(r"docker build -t tablestore \."),
    re.compile(r"docker build --target prebuilt -t tablestore -f Dockerfile \S+"),
]


class CheckFailed(Exception):
    """A check's one-line reason."""


def one_line(text: str, limit: int = 300) -> str:
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    line = lines[-1] if lines else "(nothing)"
    return line if len(line) <= limit else line[: limit - 1] + "…"


# Podman schedules HEALTHCHECKs with systemd timers; without systemd it logs that on every run and
# stop. The checks run the HEALTHCHECK themselves (`podman healthcheck run`), so those lines go.
SYSTEMD_TIMER_NOISE = re.compile(r"^.*unable to get systemd connection.*\n?", re.M)


def podman(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    try:
        done = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise CheckFailed(f"`podman {' '.join(args)}` did not finish within {timeout:.0f} s")
    done.stderr = SYSTEMD_TIMER_NOISE.sub("", done.stderr)
    return done


def podman_ok(*args: str, timeout: float = 60) -> str:
    done = podman(*args, timeout=timeout)
    if done.returncode != 0:
        raise CheckFailed(f"`podman {' '.join(args[:2])} …` failed: {one_line(done.stderr or done.stdout)}")
    return done.stdout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- What the documentation runs ------------------------------------------------------------

@dataclass
class Run:
    """One `docker run` of the image: where it is written and what it asks for."""
    text: str
    where: list[str]
    publish: list[str] = field(default_factory=list)   # container ports
    volumes: list[str] = field(default_factory=list)   # SOURCE:TARGET[:MODE]
    env: list[str] = field(default_factory=list)
    user: str | None = None
    read_only: bool = False
    entrypoint: str | None = None
    command: list[str] = field(default_factory=list)

    def key(self) -> tuple:
        return (tuple(self.publish), tuple(self.volumes), tuple(self.env), self.user,
                self.read_only, self.entrypoint, tuple(self.command))

    def label(self) -> str:
        places = ", ".join(self.where[:3]) + (f" and {len(self.where) - 3} more" if len(self.where) > 3 else "")
        return f"{places}: {self.text if self.text.startswith('Compose') else f'`{self.text}`'}"

    def mount(self, target: str) -> tuple[str, str] | None:
        for volume in self.volumes:
            source, dest = volume.split(":")[:2]
            if dest == target:
                return source, volume
        return None

    def in_memory(self) -> bool:
        return any(arg in ("--inMemoryPersistence", "--in-memory") for arg in self.command)

    def scheme(self) -> str:
        return "https" if "--cert" in self.command else "http"

    def cosmos(self) -> bool:
        """Whether it serves the Cosmos DB for Table flavour (`--flavor cosmos`)."""
        flags = [f"{a}={b}" for a, b in zip(self.command, self.command[1:])] + self.command
        return "--flavor=cosmos" in flags or "TABLESTORE_FLAVOR=cosmos" in self.env

    def ready_line(self) -> str:
        if self.cosmos():
            return COSMOS_READY_LINE
        standalone = self.entrypoint == "azurite-table" or self.command[:1] == ["azurite-table"]
        return STANDALONE_READY_LINE if standalone else READY_LINE

    def uid(self) -> int:
        return int(self.user.split(":")[0]) if self.user else IMAGE_UID


def expand(words: str, cwd: Path) -> list[str]:
    """The shell's words of a documented command line, with its `$PWD` and `$(…)` expanded."""
    done = subprocess.run(["bash", "-c", 'eval "set -- $1"; printf "%s\\0" "$@"', "bash", words],
                          cwd=cwd, capture_output=True, text=True, timeout=10)
    if done.returncode != 0:
        raise ValueError(f"the shell cannot read it: {one_line(done.stderr)}")
    return done.stdout.split("\0")[:-1]


def parse_docker_run(text: str, where: str, cwd: Path) -> Run | None:
    """A Run from a `docker run …` line, or None when it runs another image."""
    argv = expand(text[len("docker "):], cwd)
    assert argv[0] == "run"
    run = Run(text=text, where=[where])
    args = argv[1:]
    while args and args[0].startswith("-"):
        option = args.pop(0)
        value = None
        if "=" in option and option.startswith("--"):
            option, value = option.split("=", 1)
        if option in ("--rm", "-d", "--detach", "-i", "-t", "-it"):
            continue
        if option == "--read-only":
            run.read_only = True
            continue
        if option not in ("-p", "--publish", "-v", "--volume", "-e", "--env", "-u", "--user", "--name",
                          "--entrypoint"):
            raise ValueError(f"it uses `{option}`, which scripts/ci/docker_checks.py does not translate yet")
        if value is None:
            if not args:
                raise ValueError(f"`{option}` has no value")
            value = args.pop(0)
        if option in ("-p", "--publish"):
            run.publish.append(value.split(":")[-1])
        elif option in ("-v", "--volume"):
            run.volumes.append(value)
        elif option in ("-e", "--env"):
            run.env.append(value)
        elif option in ("-u", "--user"):
            run.user = value
        elif option == "--entrypoint":
            run.entrypoint = value
    if not args:
        raise ValueError("it names no image")
    if args[0] not in ("tablestore", "tablestore:latest"):
        return None
    run.command = args[1:]
    return run


def compose_runs(block: str, where: str) -> list[Run]:
    """Runs for the services of a Compose snippet that use the image."""
    document = yaml.safe_load(block)
    runs = []
    services = document.get("services") if isinstance(document, dict) else None
    if not isinstance(services, dict):
        # Not a Compose file (a CI file's job list, GitLab's `services:` list, …).
        return runs
    for name, service in services.items():
        if not str(service.get("image", "")).startswith("tablestore"):
            continue
        # `networks` (a network alias, docs/cosmos.md) names the service to the other
        # containers of its network; the checks reach it through its published port.
        unknown = set(service) - {"image", "command", "ports", "volumes", "environment", "user",
                                  "read_only", "depends_on", "networks"}
        if unknown:
            raise ValueError(f"service `{name}` uses {sorted(unknown)}, which scripts/ci/docker_checks.py "
                             "does not translate yet")
        if str(service["image"]) not in ("tablestore", "tablestore:latest"):
            continue
        command = service.get("command", [])
        command = shlex.split(command) if isinstance(command, str) else [str(word) for word in command]
        environment = service.get("environment") or []
        if isinstance(environment, dict):
            environment = [f"{key}={value}" for key, value in environment.items()]
        run = Run(text=f"Compose service `{name}`" + (f" with `command: {' '.join(command)}`" if command else ""),
                  where=[where],
                  publish=[str(port).split(":")[-1] for port in service.get("ports") or []],
                  volumes=[str(volume) for volume in service.get("volumes") or []],
                  env=list(environment), user=service.get("user"),
                  read_only=bool(service.get("read_only")), command=command)
        if any(volume.startswith((".", "/", "~")) for volume in run.volumes):
            raise ValueError(f"service `{name}` mounts a host folder, which scripts/ci/docker_checks.py "
                             "does not translate yet")
        runs.append(run)
    return runs


def documented(cwd: Path) -> tuple[list[Run], list[tuple[str, str]], list[str]]:
    """The image's runs and builds written in the docs, and the problems found reading them."""
    runs, builds, problems = [], [], []

    def shell_line(text: str, where: str) -> None:
        for part in (part.strip() for part in text.split("&&")):
            if part.startswith("docker build"):
                builds.append((where, part.split("#")[0].strip()))
            elif part.startswith("docker run"):
                try:
                    run = parse_docker_run(part, where, cwd)
                except ValueError as e:
                    problems.append(f"{where}: `{part}`: {e}")
                    continue
                if run:
                    runs.append(run)

    files = [ROOT / "README.md", *sorted(Path(p) for p in glob.glob(str(ROOT / "docs/**/*.md"), recursive=True))]
    for path in files:
        rel = path.relative_to(ROOT)
        lines = path.read_text().splitlines()
        i = 0
        while i < len(lines):
            fence = lines[i].strip()
            if not fence.startswith("```"):
                i += 1
                continue
            lang, start = fence[3:].strip().lower(), i + 1
            end = start
            while end < len(lines) and not lines[end].strip().startswith("```"):
                end += 1
            body = lines[start:end]
            if lang in ("yaml", "yml"):
                try:
                    runs.extend(compose_runs("\n".join(body), f"{rel}:{start + 1}"))
                except (ValueError, yaml.YAMLError) as e:
                    problems.append(f"{rel}:{start + 1}: {one_line(e)}")
            elif lang in ("", "sh", "bash", "shell", "console"):
                j = 0
                while j < len(body):
                    first, text = j, body[j].strip()
                    while text.endswith("\\") and j + 1 < len(body):
                        j += 1
                        text = text[:-1].rstrip() + " " + body[j].strip()
                    shell_line(text, f"{rel}:{start + first + 1}")
                    j += 1
            i = end + 1
    # The Dockerfile's header comment.
    for number, line in enumerate((ROOT / "Dockerfile").read_text().splitlines(), 1):
        if not line.startswith("#"):
            break
        shell_line(line.lstrip("#").strip(), f"Dockerfile:{number}")
    return runs, builds, problems


# --- Running one ------------------------------------------------------------------------------

@dataclass
class Container:
    name: str
    port: int
    scheme: str
    cosmos: bool = False

    def endpoint(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"


def start(run: Run, name: str) -> Container:
    """`podman run -d` for a Run, its first published port on a free loopback port."""
    if not run.publish:
        raise CheckFailed("it publishes no port")
    port = free_port()
    args = ["run", "-d", "--name", name]
    for i, container_port in enumerate(run.publish):
        args += ["-p", f"127.0.0.1:{port if i == 0 else free_port()}:{container_port}"]
    for volume in run.volumes:
        source = volume.split(":")[0]
        if source.startswith("/"):
            # Docker makes a missing bind source (as root); podman refuses it.
            Path(source).mkdir(parents=True, exist_ok=True)
        args += ["-v", volume]
    for variable in run.env:
        args += ["-e", variable]
    if run.user:
        args += ["--user", run.user]
    if run.read_only:
        # Docker's --read-only mounts no tmpfs anywhere; podman's adds /tmp, /run and /var/tmp.
        args += ["--read-only", "--read-only-tmpfs=false"]
    if run.entrypoint:
        args += ["--entrypoint", run.entrypoint]
    done = podman(*args, "localhost/tablestore:latest", *run.command, timeout=60)
    if done.returncode != 0:
        raise CheckFailed(f"podman run failed: {one_line(done.stderr)}")
    return Container(name, port, run.scheme(), run.cosmos())


def state(name: str) -> dict:
    return json.loads(podman_ok("inspect", "--format", "{{json .State}}", name))


def last_log_line(name: str) -> str:
    done = podman("logs", name)
    return one_line((done.stdout or "") + (done.stderr or ""))


def http_status(url: str) -> int | str:
    context = ssl._create_unverified_context() if url.startswith("https") else None
    try:
        with urllib.request.urlopen(url, timeout=3, context=context) as response:
            return response.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError as e:
        return one_line(e)


def wait_healthy(c: Container) -> float:
    """Seconds until the image's HEALTHCHECK and GET /_health through the published port pass."""
    t0 = time.monotonic()
    why = "nothing answered yet"
    while time.monotonic() - t0 < HEALTHY_WITHIN_S:
        s = state(c.name)
        if s.get("Status") not in ("running", "created", "configured", "initialized"):
            raise CheckFailed(f"the container {s.get('Status')} with code {s.get('ExitCode')} before it was "
                              f"healthy; its log: {last_log_line(c.name)}")
        check = podman("healthcheck", "run", c.name, timeout=20)
        if check.returncode == 0:
            status = http_status(f"{c.endpoint()}/_health")
            if status == 200:
                return time.monotonic() - t0
            why = f"the HEALTHCHECK passes but GET /_health through 127.0.0.1:{c.port} answered {status}"
        else:
            why = f"`podman healthcheck run` says {one_line(check.stdout or check.stderr)}"
        time.sleep(0.3)
    raise CheckFailed(f"not healthy within {HEALTHY_WITHIN_S} s ({why}); its log: {last_log_line(c.name)}")


def process_uid(c: Container) -> tuple[list[str], list[str]]:
    pid = state(c.name)["Pid"]
    status = Path(f"/proc/{pid}/status").read_text()
    uids = re.search(r"^Uid:\s+(.*)$", status, re.M).group(1).split()
    gids = re.search(r"^Gid:\s+(.*)$", status, re.M).group(1).split()
    return uids, gids


def stop(c: Container) -> float:
    """`podman stop` (SIGTERM, then SIGKILL after the grace period): seconds it took."""
    t0 = time.monotonic()
    podman_ok("stop", "--time", str(GRACE_S), c.name, timeout=GRACE_S + 30)
    took = time.monotonic() - t0
    code = state(c.name).get("ExitCode")
    if code != 0 or took >= GRACE_S:
        raise CheckFailed(f"SIGTERM did not end it cleanly within the {GRACE_S} s grace period: exit code {code} "
                          f"after {took:.1f} s (137 is the SIGKILL at the end of the grace period); its log: "
                          f"{last_log_line(c.name)}")
    return took


def remove(name: str, run: Run) -> None:
    podman("rm", "--force", "--volumes", "--time", "0", name)
    for volume in run.volumes:
        source = volume.split(":")[0]
        if not source.startswith("/"):
            podman("volume", "rm", "--force", source)


def service(c: Container, retries: int = 2) -> TableServiceClient:
    if c.cosmos:
        # The Cosmos DB emulator's connection string, as the server prints it: the account
        # `localhost`, the Table endpoint at the root of `localhost`.
        connection_string = (f"DefaultEndpointsProtocol={c.scheme};AccountName=localhost;AccountKey={COSMOS_KEY};"
                             f"TableEndpoint={c.scheme}://localhost:{c.port}/;")
    else:
        connection_string = (f"DefaultEndpointsProtocol={c.scheme};AccountName=devstoreaccount1;AccountKey={KEY};"
                             f"TableEndpoint={c.endpoint()}/devstoreaccount1;")
    options = {"retry_total": retries, "connection_timeout": 5, "read_timeout": 20}
    if c.scheme == "https":
        options["connection_verify"] = False  # the test certificate; the server is on loopback
    return TableServiceClient.from_connection_string(connection_string, **options)


def sdk(what: str, action):
    try:
        return action()
    except CheckFailed:
        raise
    except Exception as e:  # the SDK's errors, connection errors
        raise CheckFailed(f"{what}: {type(e).__name__}: {one_line(e)}")


def round_trip(c: Container, table: str) -> None:
    entity = {"PartitionKey": "docker", "RowKey": "r1", "Name": "round trip", "Count": 3, "Ratio": 0.5,
              "Ok": True, "When": datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)}

    def go():
        svc = service(c)
        client = svc.create_table(table)
        client.create_entity(entity)
        got = client.get_entity("docker", "r1")
        for key, value in entity.items():
            if got[key] != value:
                raise CheckFailed(f"SDK round trip: {key} read back as {got[key]!r}, written {value!r}")
        found = list(client.query_entities("Count eq 3"))
        if len(found) != 1:
            raise CheckFailed(f"SDK round trip: the query Count eq 3 found {len(found)} entities, not 1")
        svc.delete_table(table)
    sdk("SDK round trip", go)


def seed_expected(folder: Path) -> dict[str, int]:
    """Entities per table of a plain seed folder (one .jsonl or typed .csv file per table)."""
    counts = {}
    for path in sorted(folder.iterdir()):
        rows = [line for line in path.read_text().splitlines() if line.strip()]
        for suffix, header in ((".jsonl", 0), (".typed.csv", 1), (".csv", 1)):
            if path.name.endswith(suffix):
                counts[path.name[: -len(suffix)]] = len(rows) - header
                break
    if not counts:
        raise CheckFailed(f"{folder} holds no .jsonl or .csv table to seed")
    return counts


def check_seed(c: Container, folder: Path) -> str:
    expected = seed_expected(folder)

    def go():
        svc = service(c)
        tables = {t.name for t in svc.list_tables()}
        for table, count in expected.items():
            if table not in tables:
                raise CheckFailed(f"/seed was not imported: no table {table} (tables: {sorted(tables) or 'none'})")
            got = len(list(svc.get_table_client(table).list_entities()))
            if got != count:
                raise CheckFailed(f"/seed was not imported whole: {table} has {got} entities, the seed {count}")
    sdk("seed", go)
    return f"/seed imported ({', '.join(f'{t}: {n}' for t, n in expected.items())})"


def exercise(run: Run, name: str) -> str:
    """The checks every run passes; returns what was seen."""
    seen = []
    c = start(run, name)
    try:
        seen.append(f"HEALTHCHECK and /_health pass after {wait_healthy(c):.1f} s")
        logs = podman("logs", c.name)
        ready = run.ready_line()
        if ready not in logs.stdout + logs.stderr:
            raise CheckFailed(f"no `{ready}` line in its log (log-watching waits look for it)")
        # As bytes: text mode would read the CRLF as a line end.
        raw = subprocess.run(["podman", "logs", c.name], capture_output=True, timeout=60,
                             stdin=subprocess.DEVNULL)
        if run.cosmos() and COSMOS_STARTED not in raw.stdout:
            raise CheckFailed("no `Started` line ending in CRLF in its log (Testcontainers' Cosmos modules wait for it)")
        uids, _ = process_uid(c)
        if set(uids) != {str(run.uid())}:
            raise CheckFailed(f"the server runs as uid {'/'.join(sorted(set(uids)))}, not {run.uid()}")
        seen.append(f"uid {run.uid()}")
        round_trip(c, f"check{name.rsplit('-', 1)[-1]}")
        seen.append(f"SDK round trip over {c.scheme}")
        seed = run.mount("/seed")
        if seed:
            if not seed[0].startswith("/"):
                raise CheckFailed("/seed is a named volume: the checks know only a host folder's seed")
            seen.append(check_seed(c, Path(seed[0])))
        if run.mount("/data") and not run.in_memory():
            owner = podman("exec", c.name, "stat", "-c", "%u", "/data/__tablestore__")
            if owner.returncode != 0:
                raise CheckFailed(f"no store in /data/__tablestore__: {one_line(owner.stderr)}")
            if owner.stdout.strip() != str(run.uid()):
                raise CheckFailed(f"/data/__tablestore__ is owned by {owner.stdout.strip()}, not {run.uid()}")
            seen.append(f"store in /data owned by {run.uid()}")
        seen.append(f"stopped by SIGTERM in {stop(c):.1f} s")
    finally:
        remove(name, run)
    return ", ".join(seen)


# --- The checks -------------------------------------------------------------------------------

class Report:
    def __init__(self) -> None:
        self.passed = self.failed = 0

    def fail(self, name: str, reason: str) -> None:
        print(f"docker: FAILED {name}: {reason}", flush=True)
        self.failed += 1

    def check(self, name: str, action) -> bool:
        try:
            detail = action()
        except CheckFailed as e:
            self.fail(name, str(e))
            return False
        except Exception as e:  # a bug of this script: still one line, and counted
            self.fail(name, f"{type(e).__name__}: {one_line(e)}")
            return False
        print(f"docker: ok {name}{f' ({detail})' if detail else ''}", flush=True)
        self.passed += 1
        return True


def image_config() -> str:
    image = json.loads(podman_ok("image", "inspect", "localhost/tablestore:latest"))[0]
    config = image.get("Config") or {}
    # podman shows a docker-format image's HEALTHCHECK beside its Config.
    health = (config.get("Healthcheck") or image.get("HealthCheck") or image.get("Healthcheck") or {}).get("Test")
    wanted = {
        "User": ("tablestore:tablestore", config.get("User")),
        "Healthcheck": (["CMD", "tablestore", "--healthcheck"], health),
        "Entrypoint": (["tablestore"], config.get("Entrypoint")),
        "Volumes": (["/data"], sorted(config.get("Volumes") or {})),
        "ExposedPorts": (["10002/tcp", "8902/tcp"], sorted(config.get("ExposedPorts") or {})),
    }
    for key, (want, got) in wanted.items():
        if want != got:
            raise CheckFailed(f"the image's {key} is {got!r}, not {want!r}")
    return "user tablestore, /data volume, ports 10002 and 8902, HEALTHCHECK tablestore --healthcheck"


def builds_documented(builds: list[tuple[str, str]]) -> str:
    if not builds:
        raise CheckFailed("no `docker build` is written in README.md or docs/")
    for where, text in builds:
        if not any(form.fullmatch(text) for form in BUILD_FORMS):
            raise CheckFailed(f"{where}: `{text}` is neither `docker build -t tablestore .` nor "
                              "`docker build --target prebuilt -t tablestore -f Dockerfile DIR`")
    return f"{len(builds)} commands; `--target prebuilt` is the one run here"


def sigterm_and_persistence(report: Report, run: Run) -> None:
    """Writes in flight when SIGTERM comes; every acknowledged one read back after start, and by a
    new container on the same named volume."""
    names = ["process runs as user 10002",
             f"SIGTERM (`podman stop`) with writes in flight ends it within the {GRACE_S} s grace period, exit 0",
             "stop and start with a named volume: every acknowledged write is read back",
             "the named volume: a new container reads every acknowledged write"]
    name = "tablestore-check-sigterm"
    outcome: dict[str, object] = {}
    try:
        c = start(run, name)
        wait_healthy(c)
    except CheckFailed as e:
        remove(name, run)
        for check in names:
            report.fail(check, f"the container did not become healthy: {e}")
        return

    def user() -> str:
        uids, gids = process_uid(c)
        if set(uids) != {str(IMAGE_UID)} or set(gids) != {str(IMAGE_UID)}:
            raise CheckFailed(f"PID 1 runs as uid {'/'.join(sorted(set(uids)))} gid {'/'.join(sorted(set(gids)))}, "
                              f"not {IMAGE_UID}")
        return f"uid and gid {IMAGE_UID}"
    report.check(names[0], user)

    acked: dict[str, dict] = {}

    def write_then_stop() -> str:
        svc = service(c)
        table = svc.create_table("durability")
        batch = [("upsert", {"PartitionKey": "batch", "RowKey": f"{i:04d}", "N": i}) for i in range(100)]
        sdk("writing a batch", lambda: table.submit_transaction(batch))
        for _, entity in batch:
            acked[f"batch/{entity['RowKey']}"] = entity
        # One writer with no retries: a write counts once the server answered it.
        writer_table = service(c, retries=0).get_table_client("durability")
        stop_writing = threading.Event()

        def writer() -> None:
            i = 0
            while not stop_writing.is_set():
                entity = {"PartitionKey": "inflight", "RowKey": f"{i:06d}", "N": i, "Text": "x" * 200}
                try:
                    writer_table.upsert_entity(entity)
                except Exception:
                    return
                acked[f"inflight/{entity['RowKey']}"] = entity
                i += 1
        thread = threading.Thread(target=writer)
        thread.start()
        time.sleep(1.0)
        before = len(acked)
        try:
            took = stop(c)
        finally:
            stop_writing.set()
            thread.join(timeout=30)
        outcome["stopped"] = True
        return f"stopped in {took:.1f} s; {len(acked)} writes acknowledged, {len(acked) - before} of them during the stop"

    report.check(names[1], write_then_stop)

    def read_back(container: Container) -> int:
        def go():
            table = service(container).get_table_client("durability")
            stored = {f"{e['PartitionKey']}/{e['RowKey']}": e for e in table.list_entities()}
            lost = [key for key in acked if key not in stored]
            if lost:
                raise CheckFailed(f"{len(lost)} of {len(acked)} acknowledged writes are gone (first: {lost[0]})")
            for key, entity in acked.items():
                for prop, value in entity.items():
                    if stored[key].get(prop) != value:
                        raise CheckFailed(f"{key} read back {prop}={stored[key].get(prop)!r}, written {value!r}")
            return len(acked)
        return sdk("reading back", go)

    def restart() -> str:
        if not acked:
            raise CheckFailed("nothing was written")
        if not outcome.get("stopped"):
            podman("stop", "--time", str(GRACE_S), c.name, timeout=GRACE_S + 30)
        podman_ok("start", c.name)
        took = wait_healthy(c)
        return f"healthy {took:.1f} s after start; {read_back(c)} entities"
    report.check(names[2], restart)

    def new_container() -> str:
        if not acked:
            raise CheckFailed("nothing was written")
        podman("rm", "--force", "--time", str(GRACE_S), c.name, timeout=GRACE_S + 30)
        fresh = start(run, name)
        wait_healthy(fresh)
        count = read_back(fresh)
        stop(fresh)
        return f"{count} entities"
    try:
        report.check(names[3], new_container)
    finally:
        remove(name, run)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", required=True, type=Path, help="the stage's scratch folder")
    args = parser.parse_args()
    urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)

    # The `$PWD` of the documented commands: this repository's tests and the test certificate.
    cwd = args.work / "pwd"
    (cwd / "certs").mkdir(parents=True, exist_ok=True)
    os.symlink(ROOT / "tests", cwd / "tests")
    for name in ("cert", "key"):
        target = cwd / "certs" / f"{name}.pem"
        shutil.copyfile(ROOT / f"tests/fixtures/tls/v1-{name}.pem", target)
        target.chmod(0o644)  # readable by uid 10002, as docs/tls.md asks

    report = Report()
    report.check("the image's configuration", image_config)
    runs, builds, problems = documented(cwd)
    report.check("the documented `docker build` commands", lambda: builds_documented(builds))
    for problem in problems:
        report.fail("reading the documented commands", problem)

    unique: dict[tuple, Run] = {}
    for label, text in SCENARIOS:
        run = parse_docker_run(text, label, cwd)
        unique[run.key()] = run
    for run in runs:
        if run.key() in unique:
            unique[run.key()].where += run.where
        else:
            unique[run.key()] = run
    t0 = time.monotonic()
    for n, run in enumerate(unique.values(), 1):
        report.check(run.label(), lambda run=run, n=n: exercise(run, f"tablestore-check-{n}"))
    print(f"docker: {len(unique)} runs ({len(runs)} documented) took {time.monotonic() - t0:.0f} s", flush=True)

    readme = parse_docker_run(README_RUN, "README.md", cwd)
    if readme.key() not in {run.key() for run in runs}:
        report.fail("the README's command", f"`{README_RUN}` is no longer written in the docs; update README_RUN")
    sigterm_and_persistence(report, readme)

    print(f"checks: {report.passed} passed, {report.failed} failed", flush=True)
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
