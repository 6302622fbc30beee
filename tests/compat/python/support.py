"""Helpers shared by the compatibility tests: wire-level error inspection and child servers."""

from __future__ import annotations

import json
import os
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[3]

# ---------------------------------------------------------------------------
# Helpers for looking at what actually went over the wire.
# ---------------------------------------------------------------------------


def _parse_error_body(text: str) -> Tuple[Optional[str], Optional[str]]:
    """(code, message) from an OData JSON or XML error body."""
    if not text:
        return None, None
    try:
        body = json.loads(text)
        err = body.get("odata.error") or body.get("error") or {}
        message = err.get("message")
        if isinstance(message, dict):
            message = message.get("value")
        return err.get("code"), message
    except (ValueError, AttributeError):
        pass
    try:
        root = ET.fromstring(text.lstrip("\ufeff").encode("utf-8"))
    except ET.ParseError:
        return None, None
    code = message = None
    for el in root.iter():
        tag = el.tag.rsplit("}", 1)[-1].lower()
        if tag == "code" and code is None:
            code = el.text
        elif tag == "message" and message is None:
            message = el.text
    return code, message


def _response_text(response) -> str:
    try:
        return response.text()
    except Exception:
        try:
            return response.body().decode("utf-8", "replace")
        except Exception:
            return ""


def wire_error(exc: BaseException) -> Tuple[Optional[int], Optional[str], Optional[str]]:
    """(status, error code, message) of the HTTP response behind an SDK exception.

    Walks the exception chain, because the SDK sometimes re-raises a
    ValueError (e.g. for invalid table names) with the HTTP error as context.
    The code comes from the body first, then from ``x-ms-error-code``.
    """
    pending: List[Optional[BaseException]] = [exc]
    seen = set()
    while pending:
        e = pending.pop(0)
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        response = getattr(e, "response", None)
        if response is not None:
            code, message = _parse_error_body(_response_text(response))
            if code is None:
                code = response.headers.get("x-ms-error-code")
            if code is None and getattr(e, "error_code", None):
                code = str(getattr(e.error_code, "value", e.error_code))
            return response.status_code, code, message
        pending.extend([e.__cause__, e.__context__])
    return None, None, None


def error_code_of(exc: BaseException) -> Optional[str]:
    code = getattr(exc, "error_code", None)
    if code:
        return str(getattr(code, "value", code))
    return wire_error(exc)[1]


class ResponseCapture:
    """Collects raw HTTP responses through the SDK's ``raw_response_hook``.

    Useful where the SDK deliberately hides a status (e.g. ``delete_table``
    and ``delete_entity`` swallow 404).
    """

    def __init__(self) -> None:
        self.responses: List[Any] = []

    def __call__(self, pipeline_response) -> None:
        self.responses.append(pipeline_response.http_response)

    @property
    def kwargs(self) -> Dict[str, Any]:
        return {"raw_response_hook": self}

    @property
    def last(self):
        assert self.responses, "no HTTP response was captured"
        return self.responses[-1]

    def last_error(self) -> Tuple[int, Optional[str], Optional[str]]:
        response = self.last
        code, message = _parse_error_body(_response_text(response))
        if code is None:
            code = response.headers.get("x-ms-error-code")
        return response.status_code, code, message


def bulk_insert(connection_string: str, table_name: str, entities, workers: int = 8, **client_kwargs) -> None:
    """Insert entities one request each, from a small thread pool.

    Deliberately not a batch: the paging and query suites must not depend on
    $batch support. Each worker thread uses its own client.
    """
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from azure.data.tables import TableClient

    local = threading.local()
    clients: List[Any] = []
    lock = threading.Lock()

    def client() -> Any:
        c = getattr(local, "client", None)
        if c is None:
            c = TableClient.from_connection_string(connection_string, table_name, **client_kwargs)
            local.client = c
            with lock:
                clients.append(c)
        return c

    def insert(entity) -> None:
        client().create_entity(entity)

    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for _ in pool.map(insert, entities):
                pass
    finally:
        for c in clients:
            c.close()


def utf16_key(text: str) -> bytes:
    """Sort key matching the service's ordinal UTF-16 code unit order."""
    return text.encode("utf-16-be")


def custom_properties(entity) -> dict:
    """The entity's properties without the keys."""
    return {k: v for k, v in entity.items() if k not in ("PartitionKey", "RowKey")}


def keys_of(entities) -> list:
    """(PartitionKey, RowKey) of each entity, in the order given."""
    return [(e["PartitionKey"], e["RowKey"]) for e in entities]


# ---------------------------------------------------------------------------
# Child servers: tests that need start-up options the shared server lacks.
# ---------------------------------------------------------------------------


def server_binary() -> str:
    """The tablestore binary: ``TABLESTORE_BIN`` (./test.sh sets it), else target/*/tablestore."""
    import pytest

    explicit = os.environ.get("TABLESTORE_BIN")
    if explicit:
        return explicit
    if os.environ.get("TABLESTORE_TEST_TARGET") == "azurite":
        pytest.skip("this test starts tablestore processes; the target is azurite")
    for profile in ("release", "debug"):
        candidate = ROOT / "target" / profile / "tablestore"
        if candidate.is_file():
            return str(candidate)
    pytest.skip("TABLESTORE_BIN is not set and no target/*/tablestore was built")


class ChildServer:
    """A tablestore process of its own, in memory (or, with ``in_memory=False``, on the data
    folder its ``args`` name) on a free loopback port.

    Port 0: the server prints the port it got, and the endpoint is read from that line
    once Azurite's ready line has been printed. ``stop`` sends SIGTERM, then SIGKILL
    after 10 s. The environment holds only PATH plus ``env``.
    """

    def __init__(
        self,
        args: List[str],
        workdir: Path,
        env: Optional[Dict[str, str]] = None,
        in_memory: bool = True,
    ) -> None:
        self.log_path = workdir / f"server-{time.monotonic_ns()}.log"
        self._log = open(self.log_path, "wb")
        storage = ["--in-memory"] if in_memory else []
        self.process = subprocess.Popen(
            [server_binary(), "--host", "127.0.0.1", "--port", "0", *storage, *args],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={"PATH": os.environ.get("PATH", ""), **(env or {})},
        )
        self.endpoint = self._wait_for_endpoint()

    def _wait_for_endpoint(self) -> str:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            text = self.log()
            if "Table service is successfully listening" in text:
                for line in text.splitlines():
                    if line.startswith("tablestore listening on "):
                        return line.split()[-1]
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise AssertionError(f"tablestore did not start:\n{self.log()}")

    def log(self) -> str:
        """Everything the server printed so far (stdout and stderr)."""
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


def child_servers(start: Callable[..., ChildServer]) -> Iterator[Callable[..., ChildServer]]:
    """Body of a factory fixture: yields ``start``, then stops every server it started."""
    started: List[ChildServer] = []

    def _start(*args: Any, **kwargs: Any) -> ChildServer:
        server = start(*args, **kwargs)
        started.append(server)
        return server

    yield _start
    for server in started:
        server.stop()
