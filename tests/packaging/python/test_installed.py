"""The installed wheel as a user meets it (run by scripts/ci/packages.sh in a fresh venv
where only the wheel, pytest and the Azure SDK are installed): `tablestore` on PATH, the
`tablestore` fixture of its pytest plugin, and a fresh account per test."""

import os
import shutil
import subprocess
import sys
import uuid

import pytest
from azure.core.exceptions import HttpResponseError
from azure.data.tables import TableServiceClient

import tablestore_server


def scenario(connection_string: str) -> None:
    """A short SDK round trip: table, upsert, point read, query, delete."""
    service = TableServiceClient.from_connection_string(connection_string)
    name = "pkg" + uuid.uuid4().hex[:10]
    table = service.create_table_if_not_exists(name)
    table.upsert_entity({"PartitionKey": "nl", "RowKey": "1", "Name": "Ada", "Age": 36})
    table.upsert_entity({"PartitionKey": "nl", "RowKey": "2", "Name": "Bob", "Age": 41})
    assert table.get_entity("nl", "1")["Name"] == "Ada"
    found = [e["Name"] for e in table.query_entities("Age gt 40")]
    assert found == ["Bob"]
    service.delete_table(name)
    assert name not in [t.name for t in service.list_tables()]


def test_the_command_is_on_path_in_the_venv():
    venv_bin = os.path.dirname(sys.executable)
    found = shutil.which("tablestore", path=venv_bin)
    assert found is not None, f"tablestore missing from {venv_bin}"
    assert tablestore_server.binary_path() == found
    out = subprocess.run([found, "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("tablestore ")
    # The installed command is the native binary itself, not a Python wrapper.
    with open(found, "rb") as f:
        assert f.read(4) in (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"MZ\x90\x00")


def test_the_installed_command_serves_an_sdk_scenario():
    """Started the way a user would: the command from PATH, reading its printed lines."""
    process = subprocess.Popen(
        ["tablestore", "--inMemoryPersistence", "--tableHost", "127.0.0.1", "--tablePort", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]},
    )
    try:
        connection_string = None
        for line in process.stdout:
            if line.startswith("Connection string: "):
                connection_string = line.split(": ", 1)[1].strip()
            if line.startswith("Azurite Table service is successfully listening at "):
                break
        assert connection_string, "no connection string printed"
        scenario(connection_string)
    finally:
        process.terminate()
        assert process.wait(10) == 0


def serve_and_check(command: list, ready: str) -> None:
    """Starts `command` from the venv's PATH, waits for the readiness line starting with
    `ready`, runs the SDK scenario and stops it with SIGTERM."""
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]},
    )
    try:
        connection_string, readiness = None, None
        for line in process.stdout:
            if line.startswith("Connection string: "):
                connection_string = line.split(": ", 1)[1].strip()
            if line.startswith(ready):
                readiness = line
                break
        assert readiness, f"{command[0]}: no line starting {ready!r}"
        scenario(connection_string)
    finally:
        process.terminate()
        assert process.wait(10) == 0


def test_azurite_commands_run_tablestore_as_those_commands():
    """`azurite-table …` and `azurite …` typed as they were for Azurite: each runs tablestore as
    that command (its readiness line), as the container image does."""
    venv_bin = os.path.dirname(sys.executable)
    for name in ("azurite", "azurite-table"):
        assert shutil.which(name, path=venv_bin), f"{name} missing from {venv_bin}"
    common = ["--tableHost", "127.0.0.1", "--tablePort", "0", "--inMemoryPersistence"]
    serve_and_check(["azurite-table", *common], "Azurite Table service successfully started on 127.0.0.1:")
    serve_and_check(
        ["azurite", "--blobHost", "127.0.0.1", *common],
        "Azurite Table service is successfully listening at http://127.0.0.1:",
    )
    out = subprocess.run(["azurite-table", "--version"], capture_output=True, text=True,
                         env={**os.environ, "PATH": venv_bin + os.pathsep + os.environ["PATH"]})
    assert out.returncode == 0 and out.stdout.startswith("tablestore "), out


def test_a_cosmos_flavoured_server_from_python():
    """docs/cosmos.md's `Server(args=["--flavor", "cosmos"])`: the emulator's account and a
    connection string the SDK takes for Cosmos (localhost on a port other than 10002)."""
    with tablestore_server.Server(args=["--flavor", "cosmos"]) as server:
        assert server.account == "localhost"
        assert "TableEndpoint=http://localhost:" in server.connection_string
        assert "Cosmos DB Table service is successfully listening at" in server.log()
        scenario(server.connection_string)


def test_python_dash_m_runs_the_binary():
    out = subprocess.run([sys.executable, "-m", "tablestore_server", "--version"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("tablestore ")


def test_the_fixture_serves_an_sdk_scenario(tablestore):
    assert tablestore.endpoint.startswith("http://127.0.0.1:")
    assert tablestore.account == "devstoreaccount1"
    scenario(tablestore.connection_string)


def test_the_session_fixture_is_shared(tablestore, request):
    # Default scope: the same server as the previous test (its process is still running).
    assert request.config.getoption("--tablestore-scope") in (None, "session")
    assert tablestore.process is not None and tablestore.process.poll() is None
    assert request.getfixturevalue("tablestore") is tablestore


def test_a_fresh_account_is_its_own(tablestore, tablestore_fresh_account):
    fresh = tablestore_fresh_account
    assert fresh.account.startswith("acct") and fresh.account != "devstoreaccount1"
    assert fresh.endpoint != tablestore.endpoint
    scenario(fresh.connection_string)
    # The development account is not served by the fresh account's server.
    service = TableServiceClient.from_connection_string(
        tablestore.connection_string.replace(tablestore.endpoint, fresh.endpoint)
    )
    with pytest.raises(HttpResponseError) as denied:
        list(service.list_tables())
    assert denied.value.status_code == 403


def test_a_server_started_from_python_stops_cleanly():
    with tablestore_server.Server(args=["--silent"]) as server:
        scenario(server.connection_string)
        process = server.process
    assert process.returncode == 0


def test_a_server_that_cannot_start_says_why(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(RuntimeError, match="is a file, not a folder"):
        tablestore_server.Server(location=str(blocker), timeout=10)
