"""The installed pytest plugin's test state (docs/test-isolation.md), run by
scripts/ci/packages.sh in a fresh venv holding only the wheel, pytest and the SDK: the
``tablestore`` fixture's ``reset()`` and ``snapshot()``, ``--tablestore-reset`` between
tests, and the account fixtures. Option and fixture behaviour is checked by running small
test files with pytest in a folder of their own, away from this repository."""

import re
import subprocess
import sys

from azure.data.tables import TableServiceClient

FILE = '''
from azure.data.tables import TableServiceClient

def test_first_leaves_a_table(tablestore):
    TableServiceClient.from_connection_string(tablestore.connection_string).create_table("left")

def test_second_sees(tablestore):
    names = [t.name for t in TableServiceClient.from_connection_string(tablestore.connection_string).list_tables()]
    print("TABLES", names)
    assert names == []

def test_accounts(tablestore_account, tablestore_worker_account):
    assert tablestore_account.name != tablestore_worker_account.name
    assert tablestore_worker_account.name == "workermain"
    service = TableServiceClient.from_connection_string(tablestore_account.connection_string)
    service.create_table("own")
    assert [t.name for t in service.list_tables()] == ["own"]
'''


def run(tmp_path, *args):
    (tmp_path / "test_reset_example.py").write_text(FILE)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), *args],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )


def test_reset_between_tests_is_one_option(tmp_path):
    with_reset = run(tmp_path, "--tablestore-reset")
    assert with_reset.returncode == 0, with_reset.stdout + with_reset.stderr
    assert re.search(r"\b3 passed\b", with_reset.stdout), with_reset.stdout
    # Without it the shared server keeps the first test's table: the option is what helps.
    without = run(tmp_path)
    assert without.returncode == 1, without.stdout
    assert "TABLES ['left']" in without.stdout


def test_reset_and_snapshot_on_the_fixture(tablestore):
    service = TableServiceClient.from_connection_string(tablestore.connection_string)
    tablestore.reset()
    service.create_table("base")
    with tablestore.snapshot("base"):
        service.create_table("during")
        assert sorted(t.name for t in service.list_tables()) == ["base", "during"]
    assert [t.name for t in service.list_tables()] == ["base"]
    tablestore.reset()
    assert list(service.list_tables()) == []
