"""tablestore-server: a local Azure Table storage-compatible server, packaged with its binary.

``pip install tablestore-server`` puts the ``tablestore`` command on PATH (the native binary
itself, no Python wrapper in between). This module starts it from Python::

    from tablestore_server import Server
    with Server() as server:                    # in memory, free loopback port
        client = TableServiceClient.from_connection_string(server.connection_string)

The pytest plugin in :mod:`tablestore_server.pytest_plugin` builds its fixtures on :class:`Server`,
``realism_server`` among them (docs/realism.md): a server with realism options, and
``server.faults`` to install fault rules while a test runs.
"""

from __future__ import annotations

import base64
import collections
import hashlib
import hmac
import json
import os
import secrets
import shutil
import subprocess
import sys
import sysconfig
import threading
import time
import urllib.error
import urllib.request
from email.utils import formatdate
from typing import Any, Iterable, Optional, Sequence

__all__ = ["Account", "Faults", "Server", "binary_path", "fresh_account"]

_EXE = "tablestore.exe" if os.name == "nt" else "tablestore"
# The readiness line's words, in both flavours ("Azurite Table service is successfully listening
# at URL", "Cosmos DB Table service is successfully listening at URL").
_READY = "Table service is successfully listening at "


def binary_path() -> str:
    """The ``tablestore`` binary this package installed (or ``$TABLESTORE_BINARY``)."""
    override = os.environ.get("TABLESTORE_BINARY")
    if override:
        return override
    # The wheel installs the binary as a script: next to this interpreter's other scripts.
    for scheme_dir in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        candidate = os.path.join(scheme_dir, _EXE)
        if os.path.isfile(candidate):
            return candidate
    found = shutil.which("tablestore")
    if found:
        return found
    raise FileNotFoundError(
        "the tablestore binary is not installed next to this Python: reinstall the "
        "tablestore wheel, or set TABLESTORE_BINARY to the binary's path"
    )


def fresh_account() -> tuple[str, str]:
    """A new account name (lower-case letters and digits, as Azure requires) and key."""
    name = "acct" + secrets.token_hex(6)
    key = base64.b64encode(secrets.token_bytes(32)).decode()
    return name, key


def _signed_call(
    endpoint: str,
    account: str,
    key: bytes,
    method: str,
    path: str,
    query: str = "",
    body: Optional[bytes] = None,
) -> Any:
    """A control call signed with the account key (Shared Key Lite over ``/{account}{path}``,
    as the ``/_tablestore/`` endpoints require); the answer's JSON, or ``None`` for none. A
    refusal raises ``RuntimeError`` with the status and the server's sentence."""
    date = formatdate(usegmt=True)
    string_to_sign = f"{date}\n/{account}{path}"
    signature = base64.b64encode(hmac.new(key, string_to_sign.encode(), hashlib.sha256).digest())
    url = endpoint + path + (f"?{query}" if query else "")
    request = urllib.request.Request(url, data=body, method=method)
    request.add_header("x-ms-date", date)
    request.add_header("Authorization", f"SharedKeyLite {account}:{signature.decode()}")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            text = response.read()
    except urllib.error.HTTPError as e:
        detail = e.read().decode("utf-8", "replace").strip()
        try:
            detail = json.loads(detail)["odata.error"]["message"]["value"].splitlines()[0]
        except (ValueError, KeyError, TypeError, IndexError):
            pass
        raise RuntimeError(f"{method} {path}: {e.code} {detail}") from None
    return json.loads(text) if text else None


class Account:
    """An account created on a running server (:meth:`Server.create_account`): ``name``,
    ``key``, ``connection_string``, ``table_endpoint``."""

    def __init__(self, server: "Server", info: dict) -> None:
        self._server = server
        self.name: str = info["name"]
        self.key: str = info["key"]
        self.connection_string: str = info["connectionString"]
        self.table_endpoint: str = info["tableEndpoint"]

    def reset(self) -> dict:
        """Empties this account (signed with its own key)."""
        return _signed_call(
            self._server.endpoint,
            self.name,
            base64.b64decode(self.key),
            "POST",
            "/_tablestore/reset",
            f"account={self.name}",
        )

    def delete(self) -> None:
        """Deletes the account and its data."""
        self._server.delete_account(self.name)

    def __repr__(self) -> str:
        return f"<tablestore_server.Account {self.name}>"


class _Snapshot:
    """``with server.snapshot(name):`` saves the data on entry and restores it on exit."""

    def __init__(self, server: "Server", name: str, account: Optional[str]) -> None:
        self._server, self.name, self._account = server, name, account

    def __enter__(self) -> "_Snapshot":
        self._server.save_snapshot(self.name, account=self._account)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.restore_snapshot(self.name, account=self._account)


class Faults:
    """The fault-injection rules of one server (``/_tablestore/faults``, docs/realism.md),
    signed with the account key as the endpoint requires (Shared Key Lite over
    ``/{account}/_tablestore/faults``)."""

    PATH = "/_tablestore/faults"

    def __init__(self, endpoint: str, account: str, account_key: str) -> None:
        self.url = endpoint + self.PATH
        self._account = account
        self._key = base64.b64decode(account_key)

    def _call(self, method: str, body: Optional[bytes] = None) -> Any:
        endpoint = self.url[: -len(self.PATH)]
        return _signed_call(endpoint, self._account, self._key, method, self.PATH, body=body)

    def put(self, rules: Any) -> Any:
        """Replaces the rules (counters and the seed's generator restart): a dict such as
        ``{"seed": 1, "rules": [...]}`` (sent as JSON), or TOML or JSON text. Returns the
        report; a bad rule raises ``RuntimeError`` with the server's sentence."""
        body = rules if isinstance(rules, str) else json.dumps(rules)
        return self._call("PUT", body.encode())

    def get(self) -> Any:
        """The rules with their ``matched`` and ``fired`` counters."""
        return self._call("GET")

    def clear(self) -> None:
        """Removes every rule."""
        self._call("DELETE")


class Server:
    """A ``tablestore`` process on a free loopback port; ready when the constructor returns
    (or on ``start()``), stopped by ``stop()`` or at the end of a ``with`` block.

    ``in_memory`` (default) keeps nothing after exit; ``location`` stores in a folder instead.
    ``account`` is a ``(name, key)`` pair to serve instead of the development account.
    ``args`` are passed to the binary as they are (for example ``["--loose"]``).
    """

    def __init__(
        self,
        *,
        binary: Optional[str] = None,
        in_memory: bool = True,
        location: Optional[str] = None,
        account: Optional[tuple[str, str]] = None,
        args: Sequence[str] = (),
        host: str = "127.0.0.1",
        port: int = 0,
        timeout: float = 20.0,
        start: bool = True,
    ) -> None:
        self.binary = binary or binary_path()
        self._argv = [self.binary, "--tableHost", host, "--tablePort", str(port)]
        if location is not None:
            self._argv += ["--location", location]
        elif in_memory:
            self._argv.append("--inMemoryPersistence")
        if account is not None:
            self._argv += ["--accounts", f"{account[0]}:{account[1]}"]
        self._argv += list(args)
        self.timeout = timeout
        self.process: Optional[subprocess.Popen] = None
        self.endpoint = ""
        self.table_endpoint = ""
        self.connection_string = ""
        self.account = ""
        self.account_key = ""
        # Fault rules of this server (docs/realism.md), once it is ready.
        self.faults: Optional[Faults] = None
        # The last lines the server printed (its access log included), for error messages.
        self.output: collections.deque[str] = collections.deque(maxlen=200)
        if start:
            self.start()

    @property
    def port(self) -> int:
        return int(self.endpoint.rsplit(":", 1)[1])

    def start(self) -> "Server":
        """Starts the process and waits for its ready line."""
        self.process = subprocess.Popen(
            self._argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
        ready = threading.Event()
        reader = threading.Thread(target=self._read, args=(self.process.stdout, ready), daemon=True)
        reader.start()
        if not ready.wait(self.timeout) or not self.connection_string:
            self.stop()
            reader.join(1)
            raise RuntimeError(
                f"tablestore did not become ready within {self.timeout} s; its output:\n"
                + "\n".join(self.output)
            )
        self.faults = Faults(self.endpoint, self.account, self.account_key)
        return self

    def log(self) -> str:
        """The last lines the server printed (stdout and stderr), its warnings included."""
        return "\n".join(self.output)

    # Test state (docs/test-isolation.md): reset, snapshots and accounts on demand, signed
    # with the server's account key.

    def _control(self, method: str, path: str, query: str = "") -> Any:
        return _signed_call(
            self.endpoint, self.account, base64.b64decode(self.account_key), method, path, query
        )

    @staticmethod
    def _scope(account: Optional[str]) -> str:
        return f"account={account}" if account else ""

    def reset(self, account: Optional[str] = None) -> dict:
        """Brings the server (or one account) back to the state it started with: every
        table, entity, ACL and service property removed, the ``--seed`` data back."""
        return self._control("POST", "/_tablestore/reset", self._scope(account))

    def save_snapshot(self, name: str, account: Optional[str] = None) -> dict:
        """Saves the data (of the whole server, or of one account) as snapshot ``name``."""
        return self._control("PUT", f"/_tablestore/snapshots/{name}", self._scope(account))

    def restore_snapshot(self, name: str, account: Optional[str] = None) -> dict:
        """Puts snapshot ``name`` back, atomically for every client."""
        return self._control("POST", f"/_tablestore/snapshots/{name}/restore", self._scope(account))

    def delete_snapshot(self, name: str) -> None:
        self._control("DELETE", f"/_tablestore/snapshots/{name}")

    def snapshots(self) -> list:
        """The snapshots: name, scope, tables, entities, created."""
        return self._control("GET", "/_tablestore/snapshots")["snapshots"]

    def snapshot(self, name: str, account: Optional[str] = None) -> "_Snapshot":
        """``with server.snapshot("seeded"):`` saves the data on entry and restores it on
        exit, whatever the block did."""
        return _Snapshot(self, name, account)

    def create_account(self, name: Optional[str] = None) -> "Account":
        """A new account on this running server, with a random key (and a random name
        unless given): for parallel workers sharing one server."""
        return Account(self, self._control("POST", "/_tablestore/accounts", f"name={name}" if name else ""))

    def delete_account(self, name: str) -> None:
        """Deletes an account created at run time, with its data."""
        self._control("DELETE", f"/_tablestore/accounts/{name}")

    def _read(self, stream: Iterable[str], ready: threading.Event) -> None:
        # Keeps draining the output after start-up: a full pipe would block the server.
        for line in stream:
            line = line.rstrip("\n")
            self.output.append(line)
            if line.startswith("Table endpoint: "):
                self.table_endpoint = line[len("Table endpoint: "):]
                self.account = self.table_endpoint.rsplit("/", 1)[1]
            elif line.startswith("Connection string: "):
                self.connection_string = line[len("Connection string: "):]
                for part in self.connection_string.split(";"):
                    if part.startswith("AccountKey="):
                        self.account_key = part[len("AccountKey="):]
                    # `--flavor cosmos` prints a Table endpoint at the root: the account is
                    # the connection string's.
                    elif part.startswith("AccountName=") and not self.account:
                        self.account = part[len("AccountName="):]
            elif _READY in line:
                self.endpoint = self.table_endpoint.rsplit("/", 1)[0]
                ready.set()
        ready.set()  # the process ended: start() reports it

    def stop(self, timeout: float = 10.0) -> Optional[int]:
        """Stops the server (SIGTERM: it finishes requests and flushes) and returns its exit
        status."""
        process, self.process = self.process, None
        if process is None:
            return None
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        return process.returncode

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<tablestore_server.Server {self.endpoint or 'not started'}>"
