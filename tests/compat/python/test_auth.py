"""Authorization through the SDK (Azure docs: "Authorize requests to Azure Storage"): account key (connection string and
AzureNamedKeyCredential), SDK-generated table and account SAS, key ranges, stored access
policies and their revocation, and the errors Azure answers when a credential falls short.

Runs against the server ./test.sh started (plain HTTP). HTTPS, bearer tokens and extra
accounts need their own server processes: see test_auth_https.py.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential
from azure.core.exceptions import ClientAuthenticationError, HttpResponseError
from azure.data.tables import (
    AccountSasPermissions,
    ResourceTypes,
    TableAccessPolicy,
    TableClient,
    TableSasPermissions,
    TableServiceClient,
    generate_account_sas,
    generate_table_sas,
)

from conftest import ACCOUNT_KEY, ACCOUNT_NAME, CLIENT_KWARGS, endpoint, unique_table_name
from support import keys_of, wire_error

# A valid base64 key that is not the account's.
WRONG_KEY = "d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXktd3Jvbmc="


def account_url() -> str:
    return f"{endpoint()}/{ACCOUNT_NAME}"


def named_key() -> AzureNamedKeyCredential:
    return AzureNamedKeyCredential(ACCOUNT_NAME, ACCOUNT_KEY)


def soon(hours: float = 1) -> datetime:
    return datetime.now(timezone.utc) + timedelta(hours=hours)


def sas_table(table_name: str, sas: str) -> TableClient:
    return TableClient(account_url(), table_name, credential=AzureSasCredential(sas), **CLIENT_KWARGS)


def sas_service(sas: str) -> TableServiceClient:
    return TableServiceClient(account_url(), credential=AzureSasCredential(sas), **CLIENT_KWARGS)


def assert_refused(exc: BaseException, status: int, code: str) -> None:
    got_status, got_code, message = wire_error(exc)
    assert (got_status, got_code) == (status, code), message


GRID = [(pk, rk) for pk in "abc" for rk in "123"]


@pytest.fixture
def filled(table):
    """The test's table with entities a..c × 1..3."""
    for pk, rk in GRID:
        table.create_entity({"PartitionKey": pk, "RowKey": rk, "v": f"{pk}{rk}"})
    return table


def test_connection_string_with_account_key(table):
    table.create_entity({"PartitionKey": "p", "RowKey": "r", "v": 1})
    assert table.get_entity("p", "r")["v"] == 1


def test_named_key_credential():
    name = unique_table_name("NamedKey")
    with TableServiceClient(account_url(), credential=named_key(), **CLIENT_KWARGS) as client:
        table = client.create_table(name)
        try:
            table.create_entity({"PartitionKey": "p", "RowKey": "r", "v": 2})
            assert table.get_entity("p", "r")["v"] == 2
            assert name in [t.name for t in client.list_tables()]
        finally:
            client.delete_table(name)


def test_wrong_key_is_a_client_authentication_error(table):
    wrong = AzureNamedKeyCredential(ACCOUNT_NAME, WRONG_KEY)
    with TableClient(account_url(), table.table_name, credential=wrong, **CLIENT_KWARGS) as client:
        # Reads and table operations decode the error: ClientAuthenticationError.
        for call in (
            lambda: list(client.list_entities()),
            lambda: client.get_entity("p", "r"),
            lambda: client.create_table(),
        ):
            with pytest.raises(ClientAuthenticationError) as info:
                call()
            assert_refused(info.value, 403, "AuthenticationFailed")
        # azure-data-tables 12.7 re-raises the undecoded error from create_entity (a plain
        # HttpResponseError, whatever the service), with the same status and code.
        with pytest.raises(HttpResponseError) as info:
            client.create_entity({"PartitionKey": "p", "RowKey": "r"})
        assert_refused(info.value, 403, "AuthenticationFailed")


def test_read_only_table_sas_cannot_write(filled):
    sas = generate_table_sas(
        named_key(), filled.table_name, permission=TableSasPermissions(read=True), expiry=soon()
    )
    with sas_table(filled.table_name, sas) as reader:
        assert sorted(keys_of(reader.list_entities())) == GRID
        assert reader.get_entity("a", "1")["v"] == "a1"
        for write in (
            lambda: reader.create_entity({"PartitionKey": "z", "RowKey": "z"}),
            lambda: reader.upsert_entity({"PartitionKey": "a", "RowKey": "1", "v": "x"}),
            lambda: reader.delete_entity("a", "1"),
        ):
            with pytest.raises(HttpResponseError) as info:
                write()
            assert_refused(info.value, 403, "AuthorizationPermissionMismatch")
    # Nothing was changed.
    assert filled.get_entity("a", "1")["v"] == "a1"
    # A service SAS never reaches table-level operations.
    with sas_service(sas) as service:
        with pytest.raises(HttpResponseError) as info:
            list(service.list_tables())
        assert_refused(info.value, 403, "AuthorizationFailure")


def test_table_sas_permissions_are_enforced_per_operation(table):
    add_only = generate_table_sas(named_key(), table.table_name, permission="a", expiry=soon())
    with sas_table(table.table_name, add_only) as adder:
        adder.create_entity({"PartitionKey": "p", "RowKey": "r", "v": 1})
        with pytest.raises(HttpResponseError) as info:
            adder.update_entity({"PartitionKey": "p", "RowKey": "r", "v": 2})
        assert_refused(info.value, 403, "AuthorizationPermissionMismatch")
        with pytest.raises(HttpResponseError) as info:
            adder.get_entity("p", "r")
        assert_refused(info.value, 403, "AuthorizationPermissionMismatch")
    full = generate_table_sas(named_key(), table.table_name, permission="raud", expiry=soon())
    with sas_table(table.table_name, full) as writer:
        writer.update_entity({"PartitionKey": "p", "RowKey": "r", "v": 3})
        assert writer.get_entity("p", "r")["v"] == 3
        writer.delete_entity("p", "r")
        assert list(writer.list_entities()) == []


def test_key_range_sas_sees_and_writes_only_its_range(filled):
    sas = generate_table_sas(
        named_key(),
        filled.table_name,
        permission="ra",
        expiry=soon(),
        start_pk="b",
        start_rk="2",
        end_pk="c",
        end_rk="1",
    )
    inside = [("b", "2"), ("b", "3"), ("c", "1")]
    with sas_table(filled.table_name, sas) as ranged:
        assert sorted(keys_of(ranged.list_entities())) == inside
        # A filter reaching outside the range is clipped to it.
        found = ranged.query_entities("PartitionKey ge @pk", parameters={"pk": "a"})
        assert sorted(keys_of(found)) == inside
        assert sorted(keys_of(ranged.query_entities("PartitionKey eq 'a'"))) == []
        assert ranged.get_entity("b", "3")["v"] == "b3"
        with pytest.raises(HttpResponseError) as info:
            ranged.get_entity("a", "1")
        assert_refused(info.value, 403, "AuthorizationFailure")
        ranged.create_entity({"PartitionKey": "b", "RowKey": "25"})
        with pytest.raises(HttpResponseError) as info:
            ranged.create_entity({"PartitionKey": "c", "RowKey": "2"})
        assert_refused(info.value, 403, "AuthorizationFailure")


def test_account_sas_read_list_only(filled):
    sas = generate_account_sas(
        named_key(),
        resource_types=ResourceTypes(service=True, container=True, object=True),
        permission=AccountSasPermissions(read=True, list=True),
        expiry=soon(),
    )
    with sas_service(sas) as service:
        assert filled.table_name in [t.name for t in service.list_tables()]
        with pytest.raises(HttpResponseError) as info:
            service.create_table(unique_table_name("NotAllowed"))
        assert_refused(info.value, 403, "AuthorizationPermissionMismatch")
    with sas_table(filled.table_name, sas) as reader:
        assert sorted(keys_of(reader.list_entities())) == GRID
        with pytest.raises(HttpResponseError) as info:
            reader.create_entity({"PartitionKey": "z", "RowKey": "z"})
        assert_refused(info.value, 403, "AuthorizationPermissionMismatch")


def test_account_sas_resource_types_and_write_permissions(service):
    objects_only = generate_account_sas(
        named_key(),
        resource_types=ResourceTypes(object=True),
        permission=AccountSasPermissions(read=True, list=True),
        expiry=soon(),
    )
    with sas_service(objects_only) as limited:
        with pytest.raises(HttpResponseError) as info:
            list(limited.list_tables())
        assert_refused(info.value, 403, "AuthorizationResourceTypeMismatch")

    writer_sas = generate_account_sas(
        named_key(),
        resource_types=ResourceTypes(container=True, object=True),
        permission=AccountSasPermissions(read=True, write=True, create=True, add=True, delete=True, list=True),
        expiry=soon(),
    )
    name = unique_table_name("AccountSas")
    with sas_service(writer_sas) as writer:
        table = writer.create_table(name)
        try:
            table.create_entity({"PartitionKey": "p", "RowKey": "r", "v": 5})
            assert table.get_entity("p", "r")["v"] == 5
        finally:
            writer.delete_table(name)
    assert name not in [t.name for t in service.list_tables()]


def test_stored_access_policy_sas_and_revocation(filled):
    now = datetime.now(timezone.utc)
    policy = TableAccessPolicy(start=now - timedelta(minutes=5), expiry=now + timedelta(hours=1), permission="r")
    filled.set_table_access_policy(signed_identifiers={"readers": policy})
    stored = filled.get_table_access_policy()
    assert list(stored) == ["readers"] and stored["readers"].permission == "r"

    sas = generate_table_sas(named_key(), filled.table_name, policy_id="readers")
    assert "si=readers" in sas and "sp=" not in sas
    with sas_table(filled.table_name, sas) as reader:
        assert sorted(keys_of(reader.list_entities())) == GRID
        # The permissions come from the policy.
        with pytest.raises(HttpResponseError) as info:
            reader.create_entity({"PartitionKey": "z", "RowKey": "z"})
        assert_refused(info.value, 403, "AuthorizationPermissionMismatch")

        # Removing the policy revokes every token that names it.
        filled.set_table_access_policy(signed_identifiers={})
        assert filled.get_table_access_policy() == {}
        with pytest.raises(ClientAuthenticationError) as info:
            list(reader.list_entities())
        assert_refused(info.value, 403, "AuthenticationFailed")


def test_expired_and_not_yet_valid_sas_are_refused(table):
    for start, expiry in [
        (None, datetime.now(timezone.utc) - timedelta(minutes=5)),
        (soon(1), soon(2)),
    ]:
        sas = generate_table_sas(named_key(), table.table_name, permission="r", start=start, expiry=expiry)
        with sas_table(table.table_name, sas) as reader:
            with pytest.raises(ClientAuthenticationError) as info:
                list(reader.list_entities())
            assert_refused(info.value, 403, "AuthenticationFailed")


def test_https_only_sas_is_refused_over_http(table):
    if not endpoint().startswith("http://"):
        pytest.skip("the harness server speaks HTTPS")
    sas = generate_table_sas(named_key(), table.table_name, permission="r", expiry=soon(), protocol="https")
    with sas_table(table.table_name, sas) as reader:
        with pytest.raises(HttpResponseError) as info:
            list(reader.list_entities())
        assert_refused(info.value, 403, "AuthorizationProtocolMismatch")
