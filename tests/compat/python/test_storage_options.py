"""The on-disk store's start-up options through the SDK: an uncompressed data folder
(``--compression off``) and a RAM tier too small for the table (``--memory-budget``) answer
exactly as the default store does, keep what was acknowledged across a restart, and a folder
keeps the compression it was created with. Each test starts its own tablestore process on a
data folder of its own (``TABLESTORE_BIN``; ./test.sh sets it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Iterator, List, Optional

import pytest
from azure.data.tables import TableServiceClient, UpdateMode

from conftest import ACCOUNT_KEY, ACCOUNT_NAME, CLIENT_KWARGS
from support import ChildServer, child_servers


@pytest.fixture
def start_server(tmp_path) -> Iterator:
    """Factory: ``start_server(folder, *options)`` starts a quiet on-disk server on ``folder``."""

    def start(folder: Path, *args: str, env: Optional[Dict[str, str]] = None) -> ChildServer:
        return ChildServer(["--silent", "--location", str(folder), *args], tmp_path, env, in_memory=False)

    yield from child_servers(start)


def service_of(server: ChildServer) -> TableServiceClient:
    conn = (
        f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT_NAME};AccountKey={ACCOUNT_KEY};"
        f"TableEndpoint={server.endpoint}/{ACCOUNT_NAME};"
    )
    return TableServiceClient.from_connection_string(conn, **CLIENT_KWARGS)


def fill(service: TableServiceClient, name: str, rows: int) -> None:
    """`rows` entities in three partitions, written as batches of up to 100, then one merge
    and one delete."""
    table = service.create_table(name)
    for start in range(0, rows, 300):
        for partition in range(3):
            table.submit_transaction([
                ("upsert", {"PartitionKey": f"p{partition}", "RowKey": f"{n:05d}", "n": n, "text": "x" * 400})
                for n in range(start, min(start + 300, rows))
                if n % 3 == partition
            ])
    table.update_entity({"PartitionKey": "p0", "RowKey": "00000", "n": -1}, mode=UpdateMode.MERGE)
    table.delete_entity("p1", "00001")


def answers(service: TableServiceClient, name: str) -> List[tuple]:
    table = service.get_table_client(name)
    everything = sorted((e["PartitionKey"], e["RowKey"], e["n"]) for e in table.list_entities())
    filtered = sorted(e["RowKey"] for e in table.query_entities("n lt 10 and PartitionKey ne 'p2'"))
    point = table.get_entity("p0", "00000")
    return [len(everything), everything[:5], everything[-5:], filtered, point["n"], point["text"][:3]]


def conf(folder: Path) -> str:
    return (folder / "__tablestore__" / "conf").read_bytes().decode("latin-1")


def test_an_uncompressed_folder_answers_as_the_default_one_and_keeps_its_layout(start_server, tmp_path):
    plain, packed = tmp_path / "plain", tmp_path / "packed"
    results = {}
    for folder, options in ((plain, ["--compression", "off"]), (packed, [])):
        server = start_server(folder, *options)
        service = service_of(server)
        fill(service, "options", 600)
        results[folder] = answers(service, "options")
        server.stop()
    assert results[plain] == results[packed]
    assert results[plain][0] == 599 and results[plain][4] == -1
    assert "use_compression: false" in conf(plain)
    assert "use_compression: true" in conf(packed)
    # Restarted without the option, the folder stays uncompressed and holds every write.
    server = start_server(plain)
    assert "Compression: off (this data folder was created without it" in server.log()
    assert answers(service_of(server), "options") == results[packed]
    assert "use_compression: false" in conf(plain)


def test_a_ram_tier_smaller_than_the_table_answers_as_the_default_store(start_server, tmp_path):
    roomy = start_server(tmp_path / "roomy")
    tiny = start_server(tmp_path / "tiny", "--memory-budget", "1")
    expected = None
    for server in (roomy, tiny):
        service = service_of(server)
        fill(service, "budget", 3000)  # ~1.5 MB of rows: more than a 1 MiB budget
        got = [answers(service, "budget") for _ in range(3)]
        assert got[0] == got[1] == got[2]
        expected = expected or got[0]
        assert got[0] == expected
    assert "Memory budget: 1 MiB" in tiny.log()
