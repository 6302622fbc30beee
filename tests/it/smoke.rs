//! The server starts in-process and answers its readiness probe and a table round trip.

use crate::common;

use common::TestServer;
use reqwest::StatusCode;

#[tokio::test]
async fn health_and_table_round_trip() {
    let t = TestServer::start().await;
    let health = t
        .client
        .get(format!("{}/_health", t.server.endpoint()))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    t.create_table("smoke").await;
    let r = t.send("GET", "/Tables", &[], None).await;
    assert_eq!(r.json()["value"][0]["TableName"], "smoke");
}
