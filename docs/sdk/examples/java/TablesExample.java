// Point azure-data-tables (com.azure:azure-data-tables) at tablestore and do a round trip.
// Reads the connection string from TABLESTORE_CONNECTION_STRING (default: the local server on
// port 10002); exits non-zero on any failure.

import com.azure.core.exception.HttpResponseException;
import com.azure.data.tables.TableClient;
import com.azure.data.tables.TableServiceClient;
import com.azure.data.tables.TableServiceClientBuilder;
import com.azure.data.tables.models.ListEntitiesOptions;
import com.azure.data.tables.models.TableEntity;
import com.azure.data.tables.models.TableTransactionAction;
import com.azure.data.tables.models.TableTransactionActionType;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

public final class TablesExample {
    private static final String DEFAULT_CONNECTION_STRING =
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
            + "AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;"
            + "TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;";

    private static void check(boolean condition, String message) {
        if (!condition) {
            throw new IllegalStateException(message);
        }
    }

    public static void main(String[] args) {
        String connectionString = System.getenv().getOrDefault(
            "TABLESTORE_CONNECTION_STRING", DEFAULT_CONNECTION_STRING);
        TableServiceClient service = new TableServiceClientBuilder()
            .connectionString(connectionString)
            .buildClient();

        String name = "example" + UUID.randomUUID().toString().replace("-", "").substring(0, 8);
        TableClient table = service.createTableIfNotExists(name);
        try {
            table.createEntity(new TableEntity("nl", "1").addProperty("Name", "Ada").addProperty("Age", 36));
            table.upsertEntity(new TableEntity("nl", "2").addProperty("Name", "Bob").addProperty("Age", 41));

            TableEntity ada = table.getEntity("nl", "1");
            check("Ada".equals(ada.getProperty("Name")), "getEntity returned " + ada.getProperties());

            List<String> older = new ArrayList<>();
            ListEntitiesOptions query = new ListEntitiesOptions().setFilter("PartitionKey eq 'nl' and Age gt 40");
            for (TableEntity entity : table.listEntities(query, null, null)) {
                older.add(entity.getRowKey());
            }
            check(older.equals(List.of("2")), "query returned " + older);

            // An entity group transaction: all or nothing, one partition.
            table.submitTransaction(List.of(
                new TableTransactionAction(TableTransactionActionType.UPSERT_REPLACE,
                    new TableEntity("nl", "3").addProperty("Name", "Cy")),
                new TableTransactionAction(TableTransactionActionType.DELETE, new TableEntity("nl", "1"))));
            try {
                table.getEntity("nl", "1");
                check(false, "entity 1 still exists after the transaction");
            } catch (HttpResponseException e) {
                check(e.getResponse().getStatusCode() == 404, "expected 404, got " + e.getMessage());
            }
        } finally {
            service.deleteTable(name);
        }
        System.out.println("java example: OK");
    }
}
