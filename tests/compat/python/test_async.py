"""The async client (azure.data.tables.aio over aiohttp) against the server.

The async client has its own transport (aiohttp instead of requests), its own paging
(AsyncItemPaged) and its own batch serialisation path, so it is driven through the same
kinds of steps as the sync suite: tables, typed entities, ETags, both upserts, paged and
filtered queries, a transaction and its rollback.
"""

from __future__ import annotations

import asyncio

import pytest
from azure.core import MatchConditions
from azure.core.exceptions import (
    ResourceExistsError,
    ResourceModifiedError,
    ResourceNotFoundError,
)
from azure.data.tables import EdmType, EntityProperty, TableTransactionError, UpdateMode
from azure.data.tables.aio import TableServiceClient

from conftest import CLIENT_KWARGS, connection_string, unique_table_name


def run(coro):
    return asyncio.run(coro)


async def _service():
    return TableServiceClient.from_connection_string(connection_string(), **CLIENT_KWARGS)


def test_async_transport_is_aiohttp():
    async def go():
        async with await _service() as service:
            return type(service._client._client._pipeline._transport).__name__

    assert run(go()) == "AioHttpTransport"


def test_async_tables_create_list_delete():
    name = unique_table_name("asynctables")

    async def go():
        async with await _service() as service:
            await service.create_table(name)
            with pytest.raises(ResourceExistsError):
                await service.create_table(name)
            listed = [t.name async for t in service.list_tables()]
            assert name in listed
            filtered = [t.name async for t in service.query_tables(f"TableName eq '{name}'")]
            assert filtered == [name]
            await service.delete_table(name)
            listed = [t.name async for t in service.list_tables()]
            assert name not in listed

    run(go())


def test_async_entities_etags_and_upserts():
    name = unique_table_name("asyncentities")

    async def go():
        async with await _service() as service:
            table = await service.create_table(name)
            try:
                entity = {
                    "PartitionKey": "p",
                    "RowKey": "r",
                    "Name": "Ada",
                    "Big": EntityProperty(2**40, EdmType.INT64),
                    "Ok": True,
                }
                created = await table.create_entity(entity)
                with pytest.raises(ResourceExistsError):
                    await table.create_entity(entity)
                got = await table.get_entity("p", "r")
                assert got["Name"] == "Ada" and got["Ok"] is True
                assert got["Big"] == EntityProperty(2**40, EdmType.INT64)
                assert got.metadata["etag"] == created["etag"]

                # Replace with the current ETag, then a stale one is 412.
                await table.update_entity(
                    {"PartitionKey": "p", "RowKey": "r", "Name": "Bea"},
                    mode=UpdateMode.REPLACE,
                    etag=created["etag"],
                    match_condition=MatchConditions.IfNotModified,
                )
                with pytest.raises(ResourceModifiedError) as stale:
                    await table.update_entity(
                        {"PartitionKey": "p", "RowKey": "r", "Name": "Cy"},
                        mode=UpdateMode.MERGE,
                        etag=created["etag"],
                        match_condition=MatchConditions.IfNotModified,
                    )
                assert stale.value.status_code == 412
                got = await table.get_entity("p", "r")
                assert got["Name"] == "Bea" and "Big" not in got

                # Both upserts: merge keeps, replace drops.
                await table.upsert_entity({"PartitionKey": "p", "RowKey": "r", "Extra": 1}, mode=UpdateMode.MERGE)
                got = await table.get_entity("p", "r")
                assert (got["Name"], got["Extra"]) == ("Bea", 1)
                await table.upsert_entity({"PartitionKey": "p", "RowKey": "r", "Only": "x"}, mode=UpdateMode.REPLACE)
                got = await table.get_entity("p", "r")
                assert {k: v for k, v in got.items() if k not in ("PartitionKey", "RowKey")} == {"Only": "x"}

                await table.delete_entity("p", "r")
                with pytest.raises(ResourceNotFoundError):
                    await table.get_entity("p", "r")
            finally:
                await service.delete_table(name)

    run(go())


@pytest.mark.query
def test_async_paged_filtered_query():
    name = unique_table_name("asyncquery")

    async def go():
        async with await _service() as service:
            table = await service.create_table(name)
            try:
                for i in range(7):
                    await table.create_entity({"PartitionKey": "p", "RowKey": f"{i:02d}", "n": i})
                pages = []
                async for page in table.list_entities(results_per_page=3).by_page():
                    pages.append([e["RowKey"] async for e in page])
                assert pages == [["00", "01", "02"], ["03", "04", "05"], ["06"]]
                hits = [
                    e["n"]
                    async for e in table.query_entities(
                        "n ge @low", parameters={"low": 4}, select=["n"]
                    )
                ]
                assert hits == [4, 5, 6]
            finally:
                await service.delete_table(name)

    run(go())


@pytest.mark.batch
def test_async_transaction_commits_and_rolls_back():
    name = unique_table_name("asyncbatch")

    async def go():
        async with await _service() as service:
            table = await service.create_table(name)
            try:
                await table.create_entity({"PartitionKey": "p", "RowKey": "gone", "v": 0})
                result = await table.submit_transaction(
                    [
                        ("create", {"PartitionKey": "p", "RowKey": "a", "v": 1}),
                        ("upsert", {"PartitionKey": "p", "RowKey": "b", "v": 2}),
                        ("delete", {"PartitionKey": "p", "RowKey": "gone"}),
                    ]
                )
                assert len(result) == 3
                keys = sorted([e["RowKey"] async for e in table.list_entities()])
                assert keys == ["a", "b"]

                with pytest.raises(TableTransactionError) as failed:
                    await table.submit_transaction(
                        [
                            ("create", {"PartitionKey": "p", "RowKey": "c", "v": 3}),
                            ("create", {"PartitionKey": "p", "RowKey": "a", "v": 9}),
                        ]
                    )
                assert str(getattr(failed.value.error_code, "value", failed.value.error_code)) == "EntityAlreadyExists"
                keys = sorted([e["RowKey"] async for e in table.list_entities()])
                assert keys == ["a", "b"]
            finally:
                await service.delete_table(name)

    run(go())
