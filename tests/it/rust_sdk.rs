//! The Rust client a user reaches for, driven against a real server: `azure_data_tables` 0.21
//! (the last Tables crate of the Azure SDK for Rust) runs one scenario, step by step, as a new
//! user would write it: tables, typed struct entities, ETags, both upserts, paged queries and
//! entity group transactions (batches). Each step asserts what Azure answers.

use azure_core::{error::Error, RetryOptions, StatusCode};
use azure_data_tables::{
    clients::TableServiceClientBuilder, operations::InsertEntityResponse, prelude::*,
};
use azure_storage::{prelude::*, CloudLocation};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use tablestore::testing::TestServer;

/// A typed entity as a user declares it: the keys are renamed, the rest map to EDM types
/// (`String` to Edm.String, `i32` to Edm.Int32, `f64` to Edm.Double, `bool` to Edm.Boolean).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Player {
    #[serde(rename = "PartitionKey")]
    team: String,
    #[serde(rename = "RowKey")]
    id: String,
    #[serde(rename = "Name")]
    name: String,
    #[serde(rename = "Goals")]
    goals: i32,
    #[serde(rename = "Rating")]
    rating: f64,
    #[serde(rename = "Active")]
    active: bool,
}

/// A partial entity for merges: only the properties it names change.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Nickname {
    #[serde(rename = "PartitionKey")]
    team: String,
    #[serde(rename = "RowKey")]
    id: String,
    #[serde(rename = "Nickname")]
    nickname: String,
}

/// What a read of a merged entity sees: the original properties plus the merged one.
#[derive(Debug, Clone, Deserialize)]
struct PlayerWithNickname {
    #[serde(rename = "Name")]
    name: String,
    #[serde(rename = "Goals")]
    goals: i32,
    #[serde(rename = "Nickname")]
    nickname: Option<String>,
}

/// A projection for `$select`.
#[derive(Debug, Clone, Deserialize)]
struct NameOnly {
    #[serde(rename = "Name")]
    name: String,
    #[serde(rename = "Goals")]
    goals: Option<i32>,
}

fn player(team: &str, id: &str, name: &str, goals: i32) -> Player {
    Player {
        team: team.into(),
        id: id.into(),
        name: name.into(),
        goals,
        rating: 7.5,
        active: true,
    }
}

fn service_client(server: &TestServer, key: &str) -> TableServiceClient {
    let location = CloudLocation::Custom {
        account: server.account_name().to_owned(),
        uri: server.account_url(),
    };
    TableServiceClientBuilder::with_location(
        location,
        StorageCredentials::access_key(server.account_name().to_owned(), key.to_owned()),
    )
    .retry(RetryOptions::none())
    .build()
}

/// The HTTP status and Azure error code an SDK call failed with.
fn failure<T: std::fmt::Debug>(result: Result<T, Error>) -> (StatusCode, String) {
    let err = result.expect_err("the call should fail");
    let http = err
        .as_http_error()
        .unwrap_or_else(|| panic!("not an HTTP error: {err}"));
    (
        http.status(),
        http.error_code().unwrap_or_default().to_owned(),
    )
}

async fn query_all<T>(builder: azure_data_tables::operations::QueryEntityBuilder) -> Vec<Vec<T>>
where
    T: serde::de::DeserializeOwned + Send + Sync,
{
    let mut pages = builder.into_stream::<T>();
    let mut out = Vec::new();
    while let Some(page) = pages.next().await {
        out.push(page.expect("query page").entities);
    }
    out
}

async fn table_names(service: &TableServiceClient) -> Vec<String> {
    let mut names = Vec::new();
    let mut pages = service.list().into_stream();
    while let Some(page) = pages.next().await {
        names.extend(
            page.expect("list tables")
                .tables
                .into_iter()
                .map(|t| t.name),
        );
    }
    names
}

#[tokio::test]
async fn azure_data_tables_scenario() {
    let server = TestServer::start().await.expect("server starts");
    let service = service_client(&server, server.account_key());
    let table = service.table_client("RustPlayers");

    // 1. Create a table; 2. creating it again is 409 TableAlreadyExists.
    table.create().await.expect("create table");
    assert_eq!(
        failure(table.create().await),
        (StatusCode::Conflict, "TableAlreadyExists".into())
    );
    // 3. The listing has it, with its case kept.
    assert!(table_names(&service)
        .await
        .contains(&"RustPlayers".to_owned()));

    // 4. Insert a typed entity and read it back through the insert response (return_entity).
    let ada = player("red", "001", "Ada", 3);
    let inserted: InsertEntityResponse<Player> = table
        .insert(&ada)
        .unwrap()
        .return_entity(true)
        .await
        .expect("insert");
    let echoed = inserted.entity_with_metadata.expect("entity echoed");
    assert_eq!(echoed.entity, ada);
    assert_eq!(echoed.metadata.etag, inserted.etag.to_string());
    // 5. A second insert of the same keys is 409 EntityAlreadyExists.
    assert_eq!(
        failure(table.insert::<_, Player>(&ada).unwrap().await),
        (StatusCode::Conflict, "EntityAlreadyExists".into())
    );

    // 6. Point read: the same struct and the same ETag.
    let ada_client = table.partition_key_client("red").entity_client("001");
    let got = ada_client.get::<Player>().await.expect("get");
    assert_eq!(got.entity, ada);
    assert_eq!(got.etag, inserted.etag);
    let first_etag = got.etag.clone();

    // 7. Update with the current ETag succeeds and changes the ETag.
    let mut ada2 = ada.clone();
    ada2.goals = 4;
    let updated = ada_client
        .update(&ada2, first_etag.clone().into())
        .unwrap()
        .await
        .expect("update with current etag");
    assert_ne!(updated.etag, first_etag);
    // 8. Update with the stale ETag is 412 UpdateConditionNotSatisfied and changes nothing.
    let mut stale = ada.clone();
    stale.goals = 99;
    assert_eq!(
        failure(
            ada_client
                .update(&stale, first_etag.clone().into())
                .unwrap()
                .await
        ),
        (
            StatusCode::PreconditionFailed,
            "UpdateConditionNotSatisfied".into()
        )
    );
    assert_eq!(ada_client.get::<Player>().await.unwrap().entity.goals, 4);

    // 9. Merge (If-Match: *) adds a property and keeps the others.
    let nick = Nickname {
        team: "red".into(),
        id: "001".into(),
        nickname: "Countess".into(),
    };
    ada_client
        .merge(&nick, IfMatchCondition::Any)
        .unwrap()
        .await
        .expect("merge");
    let merged = ada_client.get::<PlayerWithNickname>().await.unwrap().entity;
    assert_eq!(
        (
            merged.name.as_str(),
            merged.goals,
            merged.nickname.as_deref()
        ),
        ("Ada", 4, Some("Countess"))
    );
    // 10. Merge with the stale ETag is 412.
    assert_eq!(
        failure(
            ada_client
                .merge(&nick, first_etag.clone().into())
                .unwrap()
                .await
        )
        .0,
        StatusCode::PreconditionFailed
    );

    // 11. Insert-or-replace of an existing entity replaces it whole: the merged property goes.
    ada_client
        .insert_or_replace(&ada2)
        .unwrap()
        .await
        .expect("insert or replace (existing)");
    let replaced = ada_client.get::<PlayerWithNickname>().await.unwrap().entity;
    assert_eq!(replaced.nickname, None);
    // 12. Insert-or-replace of a missing entity inserts it.
    let bob = player("red", "002", "Bob", 1);
    let bob_client = table.partition_key_client("red").entity_client("002");
    bob_client
        .insert_or_replace(&bob)
        .unwrap()
        .await
        .expect("insert or replace (new)");
    assert_eq!(bob_client.get::<Player>().await.unwrap().entity, bob);
    // 13. Insert-or-merge of an existing entity keeps the properties it does not name.
    let bob_nick = Nickname {
        team: "red".into(),
        id: "002".into(),
        nickname: "Builder".into(),
    };
    bob_client
        .insert_or_merge(&bob_nick)
        .unwrap()
        .await
        .expect("insert or merge (existing)");
    let bob_merged = bob_client.get::<PlayerWithNickname>().await.unwrap().entity;
    assert_eq!(
        (bob_merged.name.as_str(), bob_merged.nickname.as_deref()),
        ("Bob", Some("Builder"))
    );
    // 14. Insert-or-merge of a missing entity inserts exactly what it names.
    let cy_client = table.partition_key_client("red").entity_client("003");
    cy_client
        .insert_or_merge(Nickname {
            team: "red".into(),
            id: "003".into(),
            nickname: "Cy".into(),
        })
        .unwrap()
        .await
        .expect("insert or merge (new)");
    assert_eq!(
        cy_client.get::<Nickname>().await.unwrap().entity.nickname,
        "Cy"
    );

    // 15. Delete with a stale ETag is 412; 16. with the current one it goes; 17. then 404.
    let cy_etag = cy_client.get::<Nickname>().await.unwrap().etag;
    assert_eq!(
        failure(cy_client.delete().if_match(first_etag.clone()).await).0,
        StatusCode::PreconditionFailed
    );
    cy_client
        .delete()
        .if_match(cy_etag)
        .await
        .expect("delete with etag");
    assert_eq!(
        failure(cy_client.get::<Nickname>().await),
        (StatusCode::NotFound, "ResourceNotFound".into())
    );

    // 18. A batch of 5 inserts in one partition commits together.
    let blue = table.partition_key_client("blue");
    let mut batch = blue.transaction();
    for i in 0..5 {
        batch = batch
            .insert(player("blue", &format!("{i:03}"), &format!("B{i}"), i))
            .unwrap();
    }
    let committed = batch.await.expect("batch of inserts");
    assert_eq!(committed.operation_responses.len(), 5);
    assert!(committed
        .operation_responses
        .iter()
        .all(|r| r.status_code == StatusCode::Created || r.status_code == StatusCode::NoContent));
    // 19. A mixed batch: update, merge, upsert, delete.
    let mixed = blue
        .transaction()
        .update("000", player("blue", "000", "B0", 10), None)
        .unwrap()
        .merge(
            "001",
            Nickname {
                team: "blue".into(),
                id: "001".into(),
                nickname: "one".into(),
            },
            None,
        )
        .unwrap()
        .insert_or_replace("005", player("blue", "005", "B5", 5))
        .unwrap()
        .delete("004", None)
        .unwrap();
    let mixed = mixed.await.expect("mixed batch");
    assert_eq!(mixed.operation_responses.len(), 4);
    assert!(mixed
        .operation_responses
        .iter()
        .all(|r| r.status_code == StatusCode::NoContent));
    assert_eq!(
        blue.entity_client("000")
            .get::<Player>()
            .await
            .unwrap()
            .entity
            .goals,
        10
    );
    assert_eq!(
        failure(blue.entity_client("004").get::<Player>().await).0,
        StatusCode::NotFound
    );
    // 20. A batch whose second insert collides fails as a whole: its first insert is not kept.
    let failing = blue
        .transaction()
        .insert(player("blue", "100", "New", 0))
        .unwrap()
        .insert(player("blue", "001", "Dup", 0))
        .unwrap();
    // The crate hands back the changeset's answer as is: one operation, the failing insert's 409.
    let failed = failing
        .await
        .expect("the $batch request itself succeeds (202)");
    let statuses: Vec<StatusCode> = failed
        .operation_responses
        .iter()
        .map(|r| r.status_code)
        .collect();
    assert_eq!(statuses, [StatusCode::Conflict]);
    assert_eq!(
        failure(blue.entity_client("100").get::<Player>().await).0,
        StatusCode::NotFound
    );

    // 21. A filtered query returns exactly the matching typed entities.
    let red: Vec<Player> = query_all(table.query().filter("PartitionKey eq 'red'"))
        .await
        .concat();
    assert_eq!(
        red.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(),
        ["001", "002"]
    );
    // 22. A typed comparison (Edm.Int32) across partitions.
    let scorers: Vec<Player> = query_all(table.query().filter("Goals ge 4")).await.concat();
    assert_eq!(
        scorers
            .iter()
            .map(|p| (p.team.as_str(), p.id.as_str()))
            .collect::<Vec<_>>(),
        [("blue", "000"), ("blue", "005"), ("red", "001")]
    );
    // 23. $select projects: the unselected property is absent.
    let names: Vec<NameOnly> = query_all(
        table
            .query()
            .filter("PartitionKey eq 'blue'")
            .select("Name"),
    )
    .await
    .concat();
    assert_eq!(names.len(), 5);
    assert!(names
        .iter()
        .all(|n| n.goals.is_none() && n.name.starts_with('B')));
    // 24. $top pages: 7 entities at 2 a page is 4 pages, followed through continuation tokens,
    //     in key order, each entity once.
    let pages: Vec<Vec<Player>> = query_all(table.query().top(2)).await;
    assert_eq!(pages.iter().map(Vec::len).collect::<Vec<_>>(), [2, 2, 2, 1]);
    let keys: Vec<(String, String)> = pages.concat().into_iter().map(|p| (p.team, p.id)).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(keys, sorted);
    assert_eq!(keys.len(), 7);

    // 25. A client signing with the wrong key is refused with 403 AuthenticationFailed.
    let intruder = service_client(&server, "d3Jvbmcga2V5IHdyb25nIGtleSB3cm9uZyBrZXk=");
    assert_eq!(
        failure(
            intruder
                .table_client("RustPlayers")
                .partition_key_client("red")
                .entity_client("001")
                .get::<Player>()
                .await
        ),
        (StatusCode::Forbidden, "AuthenticationFailed".into())
    );

    // 26. Delete the table; 27. it is gone from the listing and its entities with it.
    table.delete().await.expect("delete table");
    assert!(!table_names(&service)
        .await
        .contains(&"RustPlayers".to_owned()));
    assert_eq!(
        failure(ada_client.get::<Player>().await),
        (StatusCode::NotFound, "TableNotFound".into())
    );

    server.shutdown().await.expect("shutdown");
}

/// The same crate cannot talk to Cosmos DB for Table, and so not to `--flavor cosmos` either:
/// `azure_storage` 0.21 requires `x-ms-version` and `Server` on every response
/// (`CommonStorageResponseHeaders`; Azure/azure-sdk-for-rust#4489), and Cosmos sends neither
/// (the Python SDK's Cosmos recordings: 0 of 1,305 responses). The server does the request;
/// the crate then refuses the answer, as it would refuse Cosmos's (docs/cosmos.md).
#[tokio::test]
async fn azure_data_tables_cannot_read_cosmos_answers() {
    let server = TestServer::start_cosmos().await.expect("server starts");
    let port = server.endpoint().rsplit(':').next().unwrap().to_owned();
    let location = CloudLocation::Custom {
        account: "localhost".to_owned(),
        uri: format!("http://localhost:{port}"),
    };
    let service = TableServiceClientBuilder::with_location(
        location,
        StorageCredentials::access_key("localhost".to_owned(), server.account_key().to_owned()),
    )
    .retry(RetryOptions::none())
    .build();
    let err = service
        .table_client("CosmosPlayers")
        .create()
        .await
        .expect_err("the crate refuses a Cosmos answer");
    assert!(
        err.to_string().contains("header not found x-ms-version"),
        "{err}"
    );
    // The table was created: the server answered, the crate could not read the answer (its
    // error path reads no headers, so the second create's 409 comes through).
    let again = service.table_client("CosmosPlayers").create().await;
    assert_eq!(failure(again).0, StatusCode::Conflict);
}
