"""docs/realism.md's pytest examples, run as written against the installed wheel (run by
scripts/ci/packages.sh in a fresh venv holding only the wheel, pytest and the SDK). Each
example is a whole test file: it is written to a folder of its own, away from this
repository, and run by pytest there, so it finds the `realism_server` fixture only through
the installed package's pytest plugin. The realism fixture and its `faults` handle are also
tested directly here."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from azure.data.tables import TableServiceClient

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "realism.md"
EXAMPLES = re.findall(r"^```python\n(.*?)^```", GUIDE.read_text(), re.S | re.M)
STARTED = []  # the servers of the test below, checked by the one after it


def test_the_guide_has_its_examples():
    # One per realism feature; a guide edit that loses the fences would otherwise pass.
    assert len(EXAMPLES) == 4, f"{len(EXAMPLES)} python examples in {GUIDE}"
    assert all("realism_server" in e for e in EXAMPLES)


@pytest.mark.parametrize("n", range(len(EXAMPLES)))
def test_the_guides_example_runs_as_written(n, tmp_path):
    example = tmp_path / f"test_guide_example_{n}.py"
    example.write_text(EXAMPLES[n])
    run = subprocess.run(
        [sys.executable, "-m", "pytest", str(example), "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, f"example {n}:\n{EXAMPLES[n]}\n{run.stdout}\n{run.stderr}"
    assert re.search(r"\b1 passed\b", run.stdout), run.stdout


def test_realism_server_and_its_faults(realism_server):
    server = realism_server("--page-breaks", "partition")
    assert server.process is not None and "--page-breaks" in server.process.args
    table = TableServiceClient.from_connection_string(server.connection_string).create_table("orders")
    # TOML text, as in a --faults file: the first insert is refused with 503 ServerBusy.
    report = server.faults.put(
        'seed = 7\n[[rules]]\nname = "first insert"\noperation = "InsertEntity"\nnth = 1\n'
        'action = "error"\nerror = "ServerBusy"\n'
    )
    assert report["seed"] == 7 and report["rules"][0]["name"] == "first insert"
    table.create_entity({"PartitionKey": "p", "RowKey": "1"})  # the default policy retries
    rules = server.faults.get()["rules"]
    assert rules[0]["fired"] == 1 and rules[0]["matched"] >= 2
    server.faults.clear()
    assert server.faults.get()["rules"] == []
    with pytest.raises(RuntimeError, match=r"400 .*unknown error code"):
        server.faults.put({"rules": [{"action": "error", "error": "Busy"}]})
    assert "Azurite Table service" in server.log()


def test_each_realism_server_is_its_own_and_stops_after_the_test(realism_server, tablestore):
    first = realism_server("--simulate-lifecycle")
    second = realism_server()
    assert len({first.endpoint, second.endpoint, tablestore.endpoint}) == 3
    STARTED.extend([first, second])


def test_the_previous_tests_servers_were_stopped():
    assert len(STARTED) == 2 and all(s.process is None for s in STARTED)
