"""The on-disk store's start-up options through the SDK: data folders of every compression
(``--compression lz4``, the default; ``zstd``; ``off``) and a RAM tier too small for the table
(``--memory-budget``) answer exactly as the default store does, keep what was acknowledged
across a restart, and a folder keeps the compression it was created with. Each test starts its own tablestore process on a
data folder of its own (``TABLESTORE_BIN``; ./test.sh sets it).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import pytest
from azure.data.tables import TableServiceClient, UpdateMode

from conftest import ACCOUNT_KEY, ACCOUNT_NAME, CLIENT_KWARGS
from support import ChildServer, child_servers, server_binary


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


def store_format(folder: Path) -> str:
    return (folder / "__tablestore__" / "tablestore-format").read_text().splitlines()[0]


# (--compression, sled's log compressed, store format): lz4 compresses each entity on its own.
LAYOUTS = (("lz4", "false", "2"), ("zstd", "true", "1"), ("off", "false", "1"))


def test_every_compression_answers_as_the_default_one_and_keeps_its_layout(start_server, tmp_path):
    results = {}
    for name, _, _ in LAYOUTS:
        server = start_server(tmp_path / name, "--compression", name)
        service = service_of(server)
        fill(service, "options", 600)
        results[name] = answers(service, "options")
        server.stop()
    assert results["lz4"] == results["zstd"] == results["off"]
    assert results["lz4"][0] == 599 and results["lz4"][4] == -1
    for name, log_compressed, fmt in LAYOUTS:
        assert f"use_compression: {log_compressed}" in conf(tmp_path / name)
        assert store_format(tmp_path / name) == f"tablestore data folder, store format {fmt}"
    # Restarted without the option (lz4 by default), a folder keeps its layout and every write.
    for name in ("zstd", "off"):
        server = start_server(tmp_path / name)
        assert f"Compression: {name} (this data folder was created with it" in server.log()
        assert answers(service_of(server), "options") == results["lz4"]
        server.stop()
    server = start_server(tmp_path / "lz4", "--compression", "off")
    assert "Compression: lz4 (this data folder was created with it" in server.log()
    assert answers(service_of(server), "options") == results["lz4"]


def test_an_import_into_a_new_folder_takes_the_compression_asked_for(start_server, tmp_path):
    """Export a table, import it into new folders of each compression with
    ``tablestore import --location … --compression …``, and serve them: the SDK reads the same."""
    source = start_server(tmp_path / "source")
    fill(service_of(source), "moved", 600)
    expected = answers(service_of(source), "moved")
    source.stop()
    binary = server_binary()
    dump = tmp_path / "dump"
    subprocess.run([binary, "export", "--location", str(tmp_path / "source"), "-q", "--out", str(dump)],
                   check=True, stdin=subprocess.DEVNULL, capture_output=True)
    for name, log_compressed, fmt in LAYOUTS:
        folder = tmp_path / f"imported-{name}"
        subprocess.run([binary, "import", "--location", str(folder), "--compression", name, "-q", str(dump)],
                       check=True, stdin=subprocess.DEVNULL, capture_output=True)
        assert f"use_compression: {log_compressed}" in conf(folder)
        assert store_format(folder) == f"tablestore data folder, store format {fmt}"
        server = start_server(folder)
        assert f"Compression: {name} (" in server.log()
        assert answers(service_of(server), "moved") == expected
        server.stop()


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
