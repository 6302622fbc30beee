//! Point the community `azure_data_tables` crate (0.21, the last release of the Azure SDK for
//! Rust's first generation; no newer Tables crate exists) at tablestore and do a round trip.
//! Reads the port from TABLESTORE_PORT (default 10002); exits non-zero on any failure.
//!
//! Cargo.toml: azure_data_tables = "0.21", azure_storage = "0.21", azure_core = "0.21",
//!             futures = "0.3", serde = { version = "1", features = ["derive"] },
//!             tokio = { version = "1", features = ["full"] }

use azure_data_tables::{operations::InsertEntityResponse, prelude::*};
use azure_storage::{prelude::*, CloudLocation};
use futures::StreamExt;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Person {
    #[serde(rename = "PartitionKey")]
    country: String,
    #[serde(rename = "RowKey")]
    id: String,
    #[serde(rename = "Name")]
    name: String,
}

#[tokio::main]
async fn main() -> azure_core::Result<()> {
    let port = std::env::var("TABLESTORE_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(10002);
    // The emulator location is http://{address}:{port}/devstoreaccount1 with the well-known key.
    let location = CloudLocation::Emulator {
        address: "127.0.0.1".to_owned(),
        port,
    };
    let service = TableServiceClientBuilder::with_location(location, StorageCredentials::emulator())
        .build();

    let table = service.table_client(format!("example{}", std::process::id()));
    table.create().await?;

    let ada = Person {
        country: "nl".into(),
        id: "1".into(),
        name: "Ada".into(),
    };
    let _: InsertEntityResponse<Person> = table.insert(&ada)?.await?;

    let mut pages = table
        .query()
        .filter("PartitionKey eq 'nl'")
        .into_stream::<Person>();
    let mut found = Vec::new();
    while let Some(page) = pages.next().await {
        found.extend(page?.entities.into_iter().map(|p| p.name));
    }
    if found != ["Ada"] {
        eprintln!("rust example: FAILED: query returned {found:?}");
        std::process::exit(1);
    }

    table.delete().await?;
    println!("rust example: OK");
    Ok(())
}
