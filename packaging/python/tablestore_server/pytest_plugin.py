"""pytest plugin (registered by the wheel's ``pytest11`` entry point): a ``tablestore``
fixture serving a fresh in-memory server on a free loopback port.

Fixtures:

* ``tablestore`` — a running :class:`tablestore_server.Server` (``.connection_string``,
  ``.endpoint``, ``.table_endpoint``, ``.account``, ``.account_key``). One per session by
  default; ``--tablestore-scope function`` gives every test its own.
* ``tablestore_fresh_account`` — a server of its own for one test, serving only a newly made
  account (random name and key). Accounts are fixed when a server starts, so each fresh
  account is a short-lived in-memory server (ready in milliseconds).
* ``realism_server`` — a factory for servers with production realism (docs/realism.md):
  ``realism_server("--simulate-targets", ...)`` starts an in-memory server of this test's own
  with those options and returns it (``.connection_string``, ``.faults.put(rules)``,
  ``.faults.get()``, ``.faults.clear()``, ``.log()``); every server it started is stopped
  after the test.

Options: ``--tablestore-scope session|function``, ``--tablestore-binary PATH``,
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
