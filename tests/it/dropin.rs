//! Azurite switches that change request handling, in-process (issue 6):
//! `--skipApiVersionCheck` and `--disableProductStyleUrl`.

use crate::common;

use common::TestServer;
use reqwest::StatusCode;
use tablestore::config::Config;

#[tokio::test]
async fn version_check_is_on_by_default_and_can_be_skipped() {
    let strict = TestServer::start().await;
    let r = strict
        .send("GET", "/Tables", &[("x-ms-version", "yesterday")], None)
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.header("x-ms-error-code"), Some("InvalidHeaderValue"));

    let mut config = Config::for_tests();
    config.skip_api_version_check = true;
    let loose = TestServer::start_with(config).await;
    let r = loose
        .send("GET", "/Tables", &[("x-ms-version", "yesterday")], None)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
}

/// Sends `GET /Tables` with `Host: devstoreaccount1.table.localhost` (product style URL).
async fn host_style_query(t: &TestServer) -> StatusCode {
    // Host style: the canonicalized resource is /devstoreaccount1/Tables.
    let (date, authorization) = common::sign_lite("/Tables", None);
    let request = t
        .client
        .get(format!("{}/Tables", t.server.endpoint()))
        .header("Host", "devstoreaccount1.table.localhost")
        .header("x-ms-date", date)
        .header("Authorization", authorization)
        .header("Accept", common::JSON_NONE);
    t.exchange(request).await.status
}

#[tokio::test]
async fn product_style_urls_can_be_disabled() {
    let default = TestServer::start().await;
    assert_eq!(host_style_query(&default).await, StatusCode::OK);

    let mut config = Config::for_tests();
    config.disable_product_style_url = true;
    let path_only = TestServer::start_with(config).await;
    // `Tables` is now read as the account name, which is not known here.
    assert_eq!(host_style_query(&path_only).await, StatusCode::FORBIDDEN);
    // Path style still works.
    let r = path_only.send("GET", "/Tables", &[], None).await;
    assert_eq!(r.status, StatusCode::OK);
}
