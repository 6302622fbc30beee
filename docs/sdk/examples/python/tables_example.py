"""Point azure-data-tables at tablestore and do a round trip.

Reads the connection string from TABLESTORE_CONNECTION_STRING (default: the local server on
port 10002) and exits non-zero on any failure.

    pip install azure-data-tables
    TABLESTORE_CONNECTION_STRING='DefaultEndpointsProtocol=http;...' python tables_example.py
"""

import os
import sys
import uuid

from azure.core.exceptions import ResourceNotFoundError
from azure.data.tables import TableServiceClient, UpdateMode

DEFAULT_CONNECTION_STRING = (
    "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
    "AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;"
    "TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;"
)


def check(condition, message):
    if not condition:
        print(f"python example: FAILED: {message}", file=sys.stderr)
        sys.exit(1)


def main():
    connection_string = os.environ.get("TABLESTORE_CONNECTION_STRING", DEFAULT_CONNECTION_STRING)
    service = TableServiceClient.from_connection_string(connection_string)

    name = "example" + uuid.uuid4().hex[:8]
    table = service.create_table_if_not_exists(name)
    try:
        table.create_entity({"PartitionKey": "nl", "RowKey": "1", "Name": "Ada", "Age": 36})
        table.upsert_entity(
            {"PartitionKey": "nl", "RowKey": "2", "Name": "Bob", "Age": 41},
            mode=UpdateMode.REPLACE,
        )

        ada = table.get_entity(partition_key="nl", row_key="1")
        check(ada["Name"] == "Ada", f"get_entity returned {ada!r}")

        older = list(
            table.query_entities(
                "PartitionKey eq @pk and Age gt @age", parameters={"pk": "nl", "age": 40}
            )
        )
        check([e["RowKey"] for e in older] == ["2"], f"query returned {older!r}")

        # An entity group transaction: all or nothing, one partition.
        table.submit_transaction(
            [
                ("upsert", {"PartitionKey": "nl", "RowKey": "3", "Name": "Cy"}),
                ("delete", {"PartitionKey": "nl", "RowKey": "1"}),
            ]
        )
        try:
            table.get_entity(partition_key="nl", row_key="1")
            check(False, "entity 1 still exists after the transaction")
        except ResourceNotFoundError:
            pass

        names = {t.name for t in service.list_tables()}
        check(name in names, f"list_tables returned {sorted(names)!r}")
    finally:
        service.delete_table(name)

    print("python example: OK")


if __name__ == "__main__":
    main()
