"""Fixtures for testing client code against tablestore's production realism (docs/realism.md).

``realism_server`` starts a tablestore process with realism options (the binary in
``TABLESTORE_BIN``, which ./test.sh sets, else target/*/tablestore) and gives you its
connection string and a ``faults`` handle that installs fault rules through
``PUT /_tablestore/faults`` (signed with the account key, Shared Key Lite)::

    def test_my_retries(realism_server):
        server = realism_server("--simulate-targets")
        server.faults.put({"seed": 1, "rules": [
            {"operation": "write", "probability": 0.3, "action": "error", "error": "ServerBusy"}]})
        client = TableServiceClient.from_connection_string(server.connection_string)
        ...
        assert server.faults.get()["rules"][0]["fired"] > 0
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import subprocess
import time
import urllib.request
from email.utils import formatdate
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import pytest

from conftest import ACCOUNT_KEY, ACCOUNT_NAME

ROOT = Path(__file__).resolve().parents[3]
FAULTS_PATH = "/_tablestore/faults"


def server_binary() -> str:
    explicit = os.environ.get("TABLESTORE_BIN")
    if explicit:
        return explicit
    if os.environ.get("TABLESTORE_TEST_TARGET") == "azurite":
        pytest.skip("realism needs a tablestore process; the target is azurite")
    for profile in ("release", "debug"):
        candidate = ROOT / "target" / profile / "tablestore"
        if candidate.is_file():
            return str(candidate)
    pytest.skip("TABLESTORE_BIN is not set and no target/*/tablestore was built")


class Faults:
    """The fault-rules endpoint of one server, signed with the account key."""

    def __init__(self, endpoint: str) -> None:
        self.url = endpoint + FAULTS_PATH

    def _call(self, method: str, body: Optional[bytes] = None) -> Any:
        date = formatdate(usegmt=True)
        string_to_sign = f"{date}\n/{ACCOUNT_NAME}{FAULTS_PATH}"
        key = base64.b64decode(ACCOUNT_KEY)
        signature = base64.b64encode(
            hmac.new(key, string_to_sign.encode(), hashlib.sha256).digest()
        ).decode()
        request = urllib.request.Request(self.url, data=body, method=method)
        request.add_header("x-ms-date", date)
        request.add_header("Authorization", f"SharedKeyLite {ACCOUNT_NAME}:{signature}")
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read()
            return json.loads(text) if text else None

    def put(self, rules: Any) -> Any:
        """Replaces the rules: a dict (sent as JSON) or TOML text."""
        body = rules if isinstance(rules, str) else json.dumps(rules)
        return self._call("PUT", body.encode())

    def get(self) -> Any:
        return self._call("GET")

    def clear(self) -> None:
        self._call("DELETE")


class RealismServer:
    """A tablestore process with realism options on a free port."""

    def __init__(self, args: List[str], workdir: Path) -> None:
        self.log_path = workdir / f"realism-{time.monotonic_ns()}.log"
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            [server_binary(), "--host", "127.0.0.1", "--port", "0", "--in-memory", *args],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={"PATH": os.environ.get("PATH", "")},
        )
        self.endpoint = self._wait_for_endpoint()
        self.faults = Faults(self.endpoint)
        self.connection_string = (
            "DefaultEndpointsProtocol=http;"
            f"AccountName={ACCOUNT_NAME};AccountKey={ACCOUNT_KEY};"
            f"TableEndpoint={self.endpoint}/{ACCOUNT_NAME};"
        )

    def _wait_for_endpoint(self) -> str:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            text = self.log_path.read_text(errors="replace")
            if "Table service is successfully listening" in text:
                for line in text.splitlines():
                    if line.startswith("tablestore listening on "):
                        return line.split()[-1]
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise AssertionError(f"tablestore did not start:\n{self.log_path.read_text(errors='replace')}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


@pytest.fixture
def realism_server(tmp_path) -> Iterator:
    """Factory: ``realism_server(*options)`` starts a server, stopped after the test."""
    started: List[RealismServer] = []

    def _start(*args: str) -> RealismServer:
        server = RealismServer(list(args), tmp_path)
        started.append(server)
        return server

    yield _start
    for server in started:
        server.stop()
