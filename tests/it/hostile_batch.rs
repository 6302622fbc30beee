//! Hostile and malformed `$batch` bodies: broken, missing or mismatched boundaries, garbage
//! parts, inner requests that lie about their length, too many operations, oversize bodies.
//! Each is answered with an Azure error (400/413 at the top level, or a 202 whose change set
//! reports one failed operation), nothing of the change set is applied, and the server stays
//! healthy.

use crate::common;

use common::batch::BatchBody;
use common::TestServer;
use rand::{RngExt as _, SeedableRng as _};
use rand_pcg::Pcg64;
use tablestore::config::FlavorArg;

const CT: &str = "multipart/mixed; boundary=batch_h";

/// Boundaries `batch_h` / `changeset_h`, sub-requests below `base`.
fn framing(base: &str) -> BatchBody {
    BatchBody::with_boundaries(base, "batch_h", "changeset_h")
}

fn insert_part(base: &str, rk: &str) -> String {
    let entity = format!(r#"{{"PartitionKey":"p","RowKey":"{rk}"}}"#);
    framing(base).part(
        "POST",
        "/hbatch",
        &[("Prefer", "return-no-content")],
        Some(&entity),
    )
}

fn wrap(changeset: &str) -> String {
    framing("").wrap(changeset)
}

async fn count(t: &TestServer) -> usize {
    let r = t.send("GET", "/hbatch()", &[], None).await;
    r.json()["value"]
        .as_array()
        .map(Vec::len)
        .unwrap_or(usize::MAX)
}

/// The answer is an Azure error at the top level, or a 202 reporting a failed operation.
fn assert_refused(what: &str, r: &common::Reply) {
    let status = r.status.as_u16();
    let text = r.text();
    if status == 202 {
        assert!(
            text.contains("\"odata.error\""),
            "{what}: 202 without a failure: {text}"
        );
        let failed = text
            .lines()
            .filter_map(|l| l.strip_prefix("HTTP/1.1 "))
            .any(|l| l.starts_with('4'));
        assert!(failed, "{what}: {text}");
    } else {
        assert!((400..500).contains(&status), "{what}: {status} {text}");
        assert!(
            !r.error_code().is_empty(),
            "{what}: not an Azure error: {text}"
        );
    }
}

#[tokio::test]
async fn malformed_multipart_is_refused_and_nothing_is_applied() {
    let t = TestServer::with_table("hbatch").await;
    let client = t.dev_client();
    let base = format!("{}/devstoreaccount1", t.server.endpoint());
    let good = insert_part(&base, "a") + &insert_part(&base, "b");
    let many: String = (0..150)
        .map(|i| insert_part(&base, &format!("m{i}")))
        .collect();
    let deep_nesting = (0..200)
        .map(|i| {
            format!(
                "--b{i}\r\nContent-Type: multipart/mixed; boundary=b{}\r\n\r\n",
                i + 1
            )
        })
        .collect::<String>();
    let cases: Vec<(&str, String, String)> = vec![
        ("empty body", CT.into(), String::new()),
        ("no boundary parameter", "multipart/mixed".into(), wrap(&good)),
        ("empty boundary", "multipart/mixed; boundary=".into(), wrap(&good)),
        ("boundary not in body", "multipart/mixed; boundary=other".into(), wrap(&good)),
        ("not multipart", "application/json".into(), wrap(&good)),
        ("boundary of 1000 chars", format!("multipart/mixed; boundary={}", "x".repeat(1000)), wrap(&good)),
        ("garbage", CT.into(), "\u{0}\u{1}garbage\r\n\r\n--".repeat(100)),
        ("only closing delimiter", CT.into(), "--batch_h--\r\n".into()),
        (
            "changeset without boundary",
            CT.into(),
            format!("--batch_h\r\nContent-Type: multipart/mixed\r\n\r\n{good}--changeset_h--\r\n--batch_h--\r\n"),
        ),
        (
            "changeset boundary missing from body",
            CT.into(),
            format!("--batch_h\r\nContent-Type: multipart/mixed; boundary=cs_other\r\n\r\n{good}--changeset_h--\r\n--batch_h--\r\n"),
        ),
        (
            "changeset boundary equal to batch boundary",
            CT.into(),
            format!("--batch_h\r\nContent-Type: multipart/mixed; boundary=batch_h\r\n\r\n{good}--batch_h--\r\n"),
        ),
        ("nested multipart 200 deep", "multipart/mixed; boundary=b0".into(), deep_nesting),
        (
            "part without http content type",
            CT.into(),
            wrap("--changeset_h\r\nContent-Type: text/plain\r\n\r\nPOST /hbatch HTTP/1.1\r\n\r\n{}\r\n"),
        ),
        (
            "garbage request line",
            CT.into(),
            wrap("--changeset_h\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\nTHIS IS NOT HTTP\r\n\r\n"),
        ),
        (
            "request line without version",
            CT.into(),
            wrap(&format!("--changeset_h\r\nContent-Type: application/http\r\n\r\nPOST {base}/hbatch\r\n\r\n")),
        ),
        (
            "GET inside a change set",
            CT.into(),
            wrap(&(good.clone() + &format!("--changeset_h\r\nContent-Type: application/http\r\n\r\nGET {base}/hbatch(PartitionKey='p',RowKey='a') HTTP/1.1\r\n\r\n\r\n"))),
        ),
        (
            "bad JSON in the last operation",
            CT.into(),
            wrap(&(good.clone() + &format!("--changeset_h\r\nContent-Type: application/http\r\n\r\nPOST {base}/hbatch HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{{\"PartitionKey\":\"p\",\r\n"))),
        ),
        (
            "duplicate property in an operation",
            CT.into(),
            wrap(&(good.clone() + &format!("--changeset_h\r\nContent-Type: application/http\r\n\r\nPOST {base}/hbatch HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{{\"PartitionKey\":\"p\",\"RowKey\":\"d\",\"x\":1,\"x\":2}}\r\n"))),
        ),
        (
            "bad percent-encoding in an inner URL",
            CT.into(),
            wrap(&(good.clone() + &format!("--changeset_h\r\nContent-Type: application/http\r\n\r\nDELETE {base}/hbatch(PartitionKey='%ZZ',RowKey='%FF') HTTP/1.1\r\nIf-Match: *\r\n\r\n\r\n"))),
        ),
        (
            "inner URL to another table",
            CT.into(),
            wrap(&(good.clone() + &format!("--changeset_h\r\nContent-Type: application/http\r\n\r\nPOST {base}/othertable HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{{\"PartitionKey\":\"p\",\"RowKey\":\"o\"}}\r\n"))),
        ),
        ("150 operations", CT.into(), wrap(&many)),
        (
            "two change sets",
            CT.into(),
            format!("--batch_h\r\nContent-Type: multipart/mixed; boundary=changeset_h\r\n\r\n{good}--changeset_h--\r\n--batch_h\r\nContent-Type: multipart/mixed; boundary=changeset_h\r\n\r\n{good}--changeset_h--\r\n--batch_h--\r\n"),
        ),
        ("CR-only line endings", CT.into(), wrap(&good).replace("\r\n", "\r")),
    ];
    for (what, ct, body) in cases {
        let r = client
            .send(
                "POST",
                "/$batch",
                &[("Content-Type", ct.as_str())],
                Some(body.into_bytes()),
            )
            .await
            .expect("answered");
        assert_refused(what, &r);
        assert_eq!(count(&t).await, 0, "{what}: something was applied");
    }
    // The well-formed change set still works afterwards.
    let r = client
        .send(
            "POST",
            "/$batch",
            &[("Content-Type", CT)],
            Some(wrap(&good).into_bytes()),
        )
        .await
        .unwrap();
    assert_eq!(r.status.as_u16(), 202, "{}", r.text());
    assert_eq!(count(&t).await, 2);
    assert!(client.healthy().await);
}

#[tokio::test]
async fn random_mutations_of_a_valid_batch_never_apply_half() {
    let t = TestServer::with_table("hbatch").await;
    let client = t.dev_client();
    let base = format!("{}/devstoreaccount1", t.server.endpoint());
    let mut rng = Pcg64::seed_from_u64(3);
    let mut next = || rng.random::<u64>();
    let mut applied = 0;
    for round in 0..150 {
        let parts: String = (0..5)
            .map(|i| insert_part(&base, &format!("r{round}-{i}")))
            .collect();
        let mut b = wrap(&parts).into_bytes();
        for _ in 0..(1 + next() % 4) {
            let at = (next() as usize) % b.len();
            match next() % 3 {
                0 => b[at] = next() as u8,
                1 => {
                    b.remove(at);
                }
                _ => b.insert(at, next() as u8),
            }
        }
        let before = count(&t).await;
        let r = client
            .send("POST", "/$batch", &[("Content-Type", CT)], Some(b))
            .await
            .expect("answered");
        assert!(
            !r.status.is_server_error(),
            "round {round}: {} {}",
            r.status,
            r.text()
        );
        let delta = count(&t).await - before;
        assert!(
            delta == 0 || delta == 5,
            "round {round}: {delta} of 5 entities applied: {} {}",
            r.status,
            r.text()
        );
        if delta == 5 {
            applied += 1;
        }
    }
    println!("150 mutated batches, {applied} still applied whole");
    assert!(client.healthy().await);
}

async fn oversize_batch_is_413(flavor: FlavorArg) {
    let t = TestServer::with_table_as(flavor, "hbatch").await;
    let client = t.signed_client();
    let base = t.base();
    let big = "y".repeat(30_000);
    let parts: String = (0..100)
        .map(|i| {
            format!(
                "--changeset_h\r\nContent-Type: application/http\r\n\r\nPOST {base}/hbatch HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{{\"PartitionKey\":\"p\",\"RowKey\":\"{i}\",\"a\":\"{big}\",\"b\":\"{big}\"}}\r\n"
            )
        })
        .collect();
    let body = wrap(&parts);
    assert!(body.len() > 4 * 1024 * 1024);
    let r = client
        .send(
            "POST",
            "/$batch",
            &[("Content-Type", CT)],
            Some(body.into_bytes()),
        )
        .await
        .unwrap();
    assert_eq!(r.status.as_u16(), 413, "{}", r.text());
    assert_eq!(r.error_code(), "RequestBodyTooLarge");
    assert_eq!(count(&t).await, 0);
    assert!(client.healthy().await);
}

// The cases above whose behaviour is the same under both flavours, run under each.
both_flavours!(oversize_batch_is_413,);
