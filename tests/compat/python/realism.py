"""Fixtures for testing client code against tablestore's production realism (docs/realism.md).

``realism_server`` starts a tablestore process with realism options (``support.ChildServer``:
the binary in ``TABLESTORE_BIN``, which ./test.sh sets, else target/*/tablestore) and gives you its
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
import urllib.request
from email.utils import formatdate
from pathlib import Path
from typing import Any, Iterator, List, Optional

import pytest

from conftest import ACCOUNT_KEY, ACCOUNT_NAME
from support import ChildServer, child_servers

FAULTS_PATH = "/_tablestore/faults"


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


class RealismServer(ChildServer):
    """A tablestore process with realism options, its connection string and fault rules."""

    def __init__(self, args: List[str], workdir: Path) -> None:
        super().__init__(args, workdir)
        self.faults = Faults(self.endpoint)
        self.connection_string = (
            "DefaultEndpointsProtocol=http;"
            f"AccountName={ACCOUNT_NAME};AccountKey={ACCOUNT_KEY};"
            f"TableEndpoint={self.endpoint}/{ACCOUNT_NAME};"
        )


@pytest.fixture
def realism_server(tmp_path) -> Iterator:
    """Factory: ``realism_server(*options)`` starts a server, stopped after the test."""
    yield from child_servers(lambda *args: RealismServer(list(args), tmp_path))
