"""Fixtures for the azure-data-tables compatibility suite.

The suite talks to a running server: set ``TABLESTORE_CONNECTION_STRING`` to a
full connection string, or ``TABLESTORE_ENDPOINT`` to the server's base URL
(``http://127.0.0.1:<port>``; the dev account ``devstoreaccount1`` is used with
path-style addressing). ``./test.sh`` starts a server and sets these for you.

Every test gets its own uniquely named table, so tests may run in parallel
against one server (pytest-xdist) and may be re-run against a long-lived one.
"""

from __future__ import annotations

import os
import re
import sys
import uuid
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
from azure.data.tables import TableClient, TableServiceClient

# The wheel's pytest plugin, from the source tree: its `realism_server` fixture is the one
# test_realism.py uses (realism.py), so the suite and the package share one copy.
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "packaging" / "python"))
pytest_plugins = ["tablestore_server.pytest_plugin"]

ACCOUNT_NAME = "devstoreaccount1"
ACCOUNT_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


def endpoint() -> str:
    return os.environ.get("TABLESTORE_ENDPOINT", "http://127.0.0.1:10002").rstrip("/")


def connection_string() -> str:
    explicit = os.environ.get("TABLESTORE_CONNECTION_STRING")
    if explicit:
        return explicit
    return (
        "DefaultEndpointsProtocol=http;"
        f"AccountName={ACCOUNT_NAME};"
        f"AccountKey={ACCOUNT_KEY};"
        f"TableEndpoint={endpoint()}/{ACCOUNT_NAME};"
    )


# No SDK retries: a failing request must fail the test at once instead of being
# retried with back-off (which would also hide 5xx answers from the server).
CLIENT_KWARGS: Dict[str, Any] = {"retry_total": 0, "connection_timeout": 10, "read_timeout": 60}


def unique_table_name(hint: str = "t") -> str:
    """A valid table name (letter first, alphanumeric, 3..63 chars), unique per call."""
    cleaned = re.sub(r"[^A-Za-z0-9]", "", hint)
    if not cleaned or not cleaned[0].isalpha():
        cleaned = "t" + cleaned
    return f"{cleaned[:40]}{uuid.uuid4().hex[:16]}"


@pytest.fixture(scope="session")
def service() -> TableServiceClient:
    client = TableServiceClient.from_connection_string(connection_string(), **CLIENT_KWARGS)
    yield client
    client.close()


@pytest.fixture
def table_name(request) -> str:
    return unique_table_name(request.node.name.replace("test_", "", 1))


@pytest.fixture
def make_table(service):
    """Factory creating tables that are deleted after the test."""
    created: List[str] = []

    def _make(name: Optional[str] = None) -> TableClient:
        name = name or unique_table_name("tbl")
        client = service.create_table(name)
        created.append(name)
        return client

    yield _make
    for name in created:
        try:
            service.delete_table(name)
        except Exception:  # cleanup only; the test result is what matters
            pass


@pytest.fixture
def table(make_table, table_name) -> TableClient:
    """A freshly created, empty table for this test."""
    return make_table(table_name)
