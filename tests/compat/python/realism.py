"""The realism fixture this suite uses is the one the wheel's pytest plugin ships
(packaging/python/tablestore_server/pytest_plugin.py, ``realism_server`` and ``server.faults``),
registered from the source tree in conftest.py so there is one copy. This override only
points it at the binary under test (``TABLESTORE_BIN``, else target/*/tablestore), and skips
when there is none (for example against Azurite)::

    def test_my_retries(realism_server):
        server = realism_server("--simulate-targets")
        server.faults.put({"seed": 1, "rules": [
            {"operation": "write", "probability": 0.3, "action": "error", "error": "ServerBusy"}]})
        ...
"""

from __future__ import annotations

import pytest

from support import server_binary


@pytest.fixture
def realism_server(realism_server, monkeypatch):
    """The shipped factory, running the binary under test."""
    monkeypatch.setenv("TABLESTORE_BINARY", server_binary())
    return realism_server
