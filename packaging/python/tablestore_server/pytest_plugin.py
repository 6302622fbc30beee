"""pytest plugin (registered by the wheel's ``pytest11`` entry point): a ``tablestore``
fixture serving a fresh in-memory server on a free loopback port.

Fixtures:

* ``tablestore`` — a running :class:`tablestore_server.Server` (``.connection_string``,
  ``.endpoint``, ``.table_endpoint``, ``.account``, ``.account_key``). One per session by
  default; ``--tablestore-scope function`` gives every test its own.
* ``tablestore_fresh_account`` — a server of its own for one test, serving only a newly made
  account (random name and key). Accounts are fixed when a server starts, so each fresh
  account is a short-lived in-memory server (ready in milliseconds).
* ``tablestore_account`` — a fresh account on the shared ``tablestore`` server for one test
  (random name and key; ``.connection_string``), deleted after it: isolation without a
  server per test (docs/test-isolation.md).
* ``tablestore_worker_account`` — one account per pytest-xdist worker (per session without
  xdist) on the shared server, emptied before each test that uses it.
* ``realism_server`` — a factory for servers with production realism (docs/realism.md):
  ``realism_server("--simulate-targets", ...)`` starts an in-memory server of this test's own
  with those options and returns it (``.connection_string``, ``.faults.put(rules)``,
  ``.faults.get()``, ``.faults.clear()``, ``.log()``); every server it started is stopped
  after the test.

Test state: ``tablestore.reset()`` brings the server back to its start-up state;
``with tablestore.snapshot("seeded"):`` restores the data as it was on entry when the block
ends; ``--tablestore-reset`` (ini ``tablestore_reset = true``) resets the shared server before
every test that uses ``tablestore``.

Options: ``--tablestore-reset``, ``--tablestore-scope session|function``, ``--tablestore-binary PATH``,
``--tablestore-arg ARG`` (repeatable, passed to the server), ``--tablestore-location DIR``
(store on disk instead of in memory), ``--tablestore-timeout SECONDS``. The same settings can
go in the ini file as ``tablestore_scope``, ``tablestore_binary``, ``tablestore_args``.
"""

from __future__ import annotations

import shlex

import pytest

from . import Server, fresh_account

_SCOPES = ("session", "package", "module", "class", "function")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tablestore", "tablestore server fixture")
    group.addoption(
        "--tablestore-scope",
        choices=_SCOPES,
        default=None,
        help="how long one tablestore server lives (default: session)",
    )
    group.addoption("--tablestore-binary", default=None, help="the tablestore binary to run")
    group.addoption(
        "--tablestore-arg",
        action="append",
        default=[],
        help="an extra argument for the server (repeatable), e.g. --tablestore-arg=--loose",
    )
    group.addoption(
        "--tablestore-location",
        default=None,
        help="store in this folder instead of in memory",
    )
    group.addoption(
        "--tablestore-timeout",
        type=float,
        default=20.0,
        help="seconds to wait for the server's ready line (default 20)",
    )
    group.addoption(
        "--tablestore-reset",
        action="store_true",
        default=None,
        help="reset the tablestore server to its start-up state before every test that uses it",
    )
    parser.addini("tablestore_reset", "default for --tablestore-reset", type="bool", default=False)
    parser.addini("tablestore_scope", "default for --tablestore-scope", default="session")
    parser.addini("tablestore_binary", "default for --tablestore-binary", default="")
    parser.addini("tablestore_args", "extra server arguments (shell words)", default="")


def _scope(fixture_name: str, config: pytest.Config) -> str:
    scope = config.getoption("--tablestore-scope") or config.getini("tablestore_scope")
    if scope not in _SCOPES:
        raise pytest.UsageError(f"tablestore_scope must be one of {', '.join(_SCOPES)}, not {scope!r}")
    return scope


def _server_kwargs(config: pytest.Config) -> dict:
    args = shlex.split(config.getini("tablestore_args")) + list(config.getoption("--tablestore-arg"))
    return {
        "binary": config.getoption("--tablestore-binary") or config.getini("tablestore_binary") or None,
        "location": config.getoption("--tablestore-location"),
        "args": args,
        "timeout": config.getoption("--tablestore-timeout"),
    }


@pytest.fixture(scope=_scope)
def tablestore(request: pytest.FixtureRequest):
    """A running tablestore server (in memory, free loopback port)."""
    with Server(**_server_kwargs(request.config)) as server:
        yield server


def _reset_between_tests(config: pytest.Config) -> bool:
    option = config.getoption("--tablestore-reset")
    return bool(option) if option is not None else bool(config.getini("tablestore_reset"))


@pytest.fixture(autouse=True)
def _tablestore_reset_before_test(request: pytest.FixtureRequest):
    """With ``--tablestore-reset``: the shared server back in its start-up state before each
    test that uses it."""
    if "tablestore" in request.fixturenames and _reset_between_tests(request.config):
        request.getfixturevalue("tablestore").reset()


@pytest.fixture
def tablestore_account(tablestore: Server):
    """A new account on the shared server for this test, deleted after it."""
    account = tablestore.create_account()
    yield account
    account.delete()


@pytest.fixture(scope=_scope)
def _tablestore_worker_account(request: pytest.FixtureRequest, tablestore: Server):
    worker = getattr(request.config, "workerinput", {}).get("workerid", "main")
    name = "worker" + "".join(c for c in worker.lower() if c.isalnum())[:18]
    account = tablestore.create_account(name)
    yield account
    account.delete()


@pytest.fixture
def tablestore_worker_account(_tablestore_worker_account):
    """This pytest-xdist worker's own account on the shared server, empty at the start of
    the test."""
    _tablestore_worker_account.reset()
    return _tablestore_worker_account


@pytest.fixture
def realism_server(request: pytest.FixtureRequest):
    """Factory: ``realism_server(*options)`` starts an in-memory server with those options
    (for example ``"--page-breaks", "random"``); each is stopped after the test."""
    started = []

    def start(*options: str) -> Server:
        kwargs = _server_kwargs(request.config)
        kwargs["location"] = None  # each test's realism starts from an empty store
        kwargs["args"] = [*kwargs["args"], *options]
        server = Server(**kwargs)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def tablestore_fresh_account(request: pytest.FixtureRequest):
    """A server of this test's own, serving only a new account with a random name and key."""
    kwargs = _server_kwargs(request.config)
    kwargs["location"] = None  # a fresh account never sees stored data
    with Server(account=fresh_account(), **kwargs) as server:
        yield server
