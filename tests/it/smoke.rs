//! The server starts in this process on a loopback port and answers its readiness probe and a
//! table round trip over a real connection.

use crate::common;

use common::TestServer;
use reqwest::StatusCode;

#[tokio::test]
async fn health_and_table_round_trip() {
    let t = TestServer::listening().await;
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
