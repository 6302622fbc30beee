"""HTTPS, bearer tokens and extra accounts through the SDK. Each test starts its own
tablestore process (the binary in ``TABLESTORE_BIN``; ./test.sh sets it), because these need
start-up options the shared server does not have: ``--cert/--key --oauth basic`` with a
self-signed certificate made here by ``openssl``, or ``AZURITE_ACCOUNTS``.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time
from typing import Dict, Iterator, Optional

import pytest
from azure.core.credentials import AccessToken, AzureNamedKeyCredential, AzureSasCredential
from azure.core.exceptions import ClientAuthenticationError, ServiceRequestError
from azure.data.tables import TableClient, TableServiceClient, generate_table_sas
from datetime import datetime, timedelta, timezone

from conftest import ACCOUNT_KEY, ACCOUNT_NAME, CLIENT_KWARGS
from support import ChildServer, child_servers, wire_error

KEY2 = "c2Vjb25kLWFjY291bnQta2V5LW9uZS0xMjM0NTY3OA=="


@pytest.fixture
def start_server(tmp_path) -> Iterator:
    """Factory: ``start_server(*options, env=...)`` starts a quiet server, stopped after the test."""

    def start(*args: str, env: Optional[Dict[str, str]] = None) -> ChildServer:
        return ChildServer(["--silent", *args], tmp_path, env)

    yield from child_servers(start)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    """A self-signed certificate for localhost and 127.0.0.1: (cert.pem, key.pem)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is needed to make a test certificate")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2",
            "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def unsigned_jwt(audience: str = "https://storage.azure.com") -> str:
    """A well-formed JWT nobody signed: tablestore checks its form, audience and lifetime."""

    def part(value) -> str:
        raw = json.dumps(value, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    now = int(time.time())
    claims = {
        "aud": audience,
        "iss": "https://sts.windows.net/00000000-0000-0000-0000-000000000000/",
        "iat": now - 60,
        "nbf": now - 60,
        "exp": now + 3600,
        "oid": "11111111-1111-1111-1111-111111111111",
    }
    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part(claims)}.bm90LXNpZ25lZA"


class StaticTokenCredential:
    """A TokenCredential (azure.core protocol) handing out one unsigned token."""

    def __init__(self, audience: str = "https://storage.azure.com") -> None:
        self.token = unsigned_jwt(audience)
        self.scopes = []

    def get_token(self, *scopes: str, **kwargs) -> AccessToken:
        self.scopes.append(scopes)
        return AccessToken(self.token, int(time.time()) + 3600)


def test_token_credential_over_https_with_a_self_signed_certificate(start_server, certificate):
    cert, key = certificate
    server = start_server("--cert", str(cert), "--key", str(key), "--oauth", "basic")
    assert server.endpoint.startswith("https://127.0.0.1:")
    credential = StaticTokenCredential()
    url = f"{server.endpoint}/{ACCOUNT_NAME}"
    with TableServiceClient(url, credential=credential, connection_verify=str(cert), **CLIENT_KWARGS) as service:
        table = service.create_table("tokens")
        table.create_entity({"PartitionKey": "p", "RowKey": "r", "v": 42})
        assert table.get_entity("p", "r")["v"] == 42
        assert [t.name for t in service.list_tables()] == ["tokens"]
    # The SDK asked for the storage scope, and the token is what authorized the calls.
    assert ("https://storage.azure.com/.default",) in credential.scopes

    # A token for another audience is refused (401 → ClientAuthenticationError).
    wrong = StaticTokenCredential("https://management.azure.com")
    with TableClient(url, "tokens", credential=wrong, connection_verify=str(cert), **CLIENT_KWARGS) as other:
        with pytest.raises(ClientAuthenticationError) as info:
            other.get_entity("p", "r")
        assert wire_error(info.value)[0] == 401

    # The certificate must be trusted: without connection_verify the handshake fails.
    with TableClient(url, "tokens", credential=credential, **CLIENT_KWARGS) as untrusted:
        with pytest.raises(ServiceRequestError):
            untrusted.get_entity("p", "r")


def test_account_key_and_https_only_sas_over_https(start_server, certificate):
    cert, key = certificate
    server = start_server("--cert", str(cert), "--key", str(key))
    printed = [l for l in server.log().splitlines() if l.startswith("Connection string: ")]
    connection_string = printed[0].split(": ", 1)[1]
    assert connection_string.startswith("DefaultEndpointsProtocol=https;")
    with TableServiceClient.from_connection_string(
        connection_string, connection_verify=str(cert), **CLIENT_KWARGS
    ) as service:
        table = service.create_table("keyed")
        table.create_entity({"PartitionKey": "p", "RowKey": "r", "v": 1})
    sas = generate_table_sas(
        AzureNamedKeyCredential(ACCOUNT_NAME, ACCOUNT_KEY),
        "keyed",
        permission="r",
        expiry=datetime.now(timezone.utc) + timedelta(hours=1),
        protocol="https",
    )
    url = f"{server.endpoint}/{ACCOUNT_NAME}"
    with TableClient(
        url, "keyed", credential=AzureSasCredential(sas), connection_verify=str(cert), **CLIENT_KWARGS
    ) as reader:
        assert reader.get_entity("p", "r")["v"] == 1

    # Without --oauth, bearer tokens are refused even over HTTPS (as Azurite).
    with TableClient(
        url, "keyed", credential=StaticTokenCredential(), connection_verify=str(cert), **CLIENT_KWARGS
    ) as bearer:
        with pytest.raises(ClientAuthenticationError) as info:
            bearer.get_entity("p", "r")
        status, code, _ = wire_error(info.value)
        assert (status, code) == (403, "AuthenticationFailed")


def test_second_account_from_azurite_accounts(start_server):
    accounts = f"{ACCOUNT_NAME}:{ACCOUNT_KEY};acct2:{KEY2}"
    server = start_server(env={"AZURITE_ACCOUNTS": accounts})
    base = server.endpoint

    def service(account: str, key: str) -> TableServiceClient:
        return TableServiceClient(
            f"{base}/{account}", credential=AzureNamedKeyCredential(account, key), **CLIENT_KWARGS
        )

    with service("acct2", KEY2) as second, service(ACCOUNT_NAME, ACCOUNT_KEY) as dev:
        second.create_table("onlysecond")
        second.get_table_client("onlysecond").create_entity({"PartitionKey": "p", "RowKey": "r", "who": "acct2"})
        dev.create_table("both")
        second.create_table("both")
        dev.get_table_client("both").create_entity({"PartitionKey": "p", "RowKey": "r", "who": "dev"})
        assert sorted(t.name for t in second.list_tables()) == ["both", "onlysecond"]
        assert [t.name for t in dev.list_tables()] == ["both"]
        assert list(second.get_table_client("both").list_entities()) == []
        assert second.get_table_client("onlysecond").get_entity("p", "r")["who"] == "acct2"

    # With only acct2 listed, the development account is not served (Azurite behaviour).
    only = start_server(env={"AZURITE_ACCOUNTS": f"acct2:{KEY2}"})
    assert "AccountName=acct2;" in only.log()
    base = only.endpoint
    with service(ACCOUNT_NAME, ACCOUNT_KEY) as dev:
        with pytest.raises(ClientAuthenticationError):
            list(dev.list_tables())
    with service("acct2", KEY2) as second:
        assert list(second.list_tables()) == []
