//! Hostile and malformed HTTP: oversize request lines, heads and bodies, bodies shorter or
//! longer than their Content-Length, slow and idle clients, connection floods, garbage bytes,
//! bad percent-encoding. Each gets a clean 4xx (or the connection is closed by a deadline)
//! and the server keeps serving.

use crate::common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::child::Signer;
use common::raw::{self, exchange, healthy, read_response, Outcome};
use common::TestServer;
use tablestore::config::Config;
use tablestore::server::ServeLimits;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

const LIMIT: Duration = Duration::from_secs(10);

/// Test limits: short deadlines so slow clients are cut off quickly.
fn limits() -> ServeLimits {
    ServeLimits {
        header_read_timeout: Duration::from_millis(800),
        body_read_timeout: Duration::from_millis(800),
        max_connections: 64,
        connection_wait: Duration::from_millis(300),
        shutdown_grace: Duration::from_secs(2),
        ..ServeLimits::default()
    }
}

async fn start() -> (TestServer, SocketAddr) {
    let t = TestServer::start_with_limits(Config::for_tests(), limits()).await;
    let addr = t.server.addr();
    t.create_table("hostile").await;
    (t, addr)
}

async fn assert_healthy(addr: SocketAddr) {
    assert!(
        healthy(addr, Duration::from_secs(5)).await,
        "server stopped answering"
    );
}

/// A signed request head for the development account (`path` starts with the account).
fn signed_head(method: &str, path: &str, extra: &str) -> String {
    let (raw_path, raw_query) = match path.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (path, None),
    };
    let (date, auth) = Signer::dev().sign(raw_path, raw_query);
    format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nx-ms-date: {date}\r\nAuthorization: {auth}\r\nx-ms-version: 2019-02-02\r\nAccept: application/json;odata=minimalmetadata\r\n{extra}"
    )
}

#[tokio::test]
async fn oversize_request_line_is_414() {
    let (_t, addr) = start().await;
    let req = format!(
        "GET /devstoreaccount1/Tables?x={} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        "a".repeat(70_000)
    );
    let r = exchange(addr, req.as_bytes(), LIMIT).await.reply();
    assert_eq!(r.status, 414, "{}", r.head);
    assert_healthy(addr).await;
}

#[tokio::test]
async fn oversize_or_too_many_headers_are_431() {
    let (_t, addr) = start().await;
    let big = format!(
        "GET /_health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: {}\r\n\r\n",
        "b".repeat(200_000)
    );
    let r = exchange(addr, big.as_bytes(), LIMIT).await.reply();
    assert_eq!(r.status, 431, "{}", r.head);
    let mut many = String::from("GET /_health HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    for i in 0..150 {
        many.push_str(&format!("X-H{i}: v\r\n"));
    }
    many.push_str("\r\n");
    let r = exchange(addr, many.as_bytes(), LIMIT).await.reply();
    assert_eq!(r.status, 431, "{}", r.head);
    assert_healthy(addr).await;
}

#[tokio::test]
async fn declared_oversize_body_is_413_without_reading_it() {
    let (_t, addr) = start().await;
    let head = signed_head(
        "POST",
        "/devstoreaccount1/hostile",
        "Content-Type: application/json\r\nContent-Length: 10485760\r\n\r\n",
    );
    let started = Instant::now();
    let r = exchange(addr, head.as_bytes(), LIMIT).await.reply();
    assert_eq!(r.status, 413, "{}", r.text());
    assert_eq!(r.error_code().as_deref(), Some("RequestBodyTooLarge"));
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_healthy(addr).await;
}

/// Requests refused before their body is read (by the version check, the account, the URL,
/// authentication, or the insight endpoint's verb check), each with a 200 KiB body on a
/// kept-alive connection: the refusal arrives whole and the same connection then answers the
/// next request, as Azure does (the SDKs reuse a connection after an error answer).
#[tokio::test]
async fn refusals_before_the_body_is_read_leave_the_connection_usable() {
    let (_t, addr) = start().await;
    let body = "x".repeat(200 * 1024);
    let framing = format!(
        "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let unsigned = |method: &str, path: &str, version: &str| {
        format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nx-ms-version: {version}\r\n{framing}"
        )
    };
    let cases = [
        (
            "an unknown account",
            signed_head("POST", "/nosuchaccount/hostile", &framing),
            403,
            "AuthenticationFailed",
        ),
        (
            "no account in the path",
            unsigned("POST", "/", "2019-02-02"),
            400,
            "InvalidUri",
        ),
        (
            "a bad x-ms-version",
            unsigned("POST", "/devstoreaccount1/hostile", "yesterday"),
            400,
            "InvalidHeaderValue",
        ),
        (
            "a query that is not UTF-8",
            signed_head("POST", "/devstoreaccount1/hostile?x=%FF", &framing),
            400,
            "InvalidQueryParameterValue",
        ),
        (
            "a path that names no resource",
            signed_head(
                "POST",
                "/devstoreaccount1/hostile(PartitionKey='a',RowKey='b')/extra",
                &framing,
            ),
            400,
            "InvalidInput",
        ),
        (
            "no signature",
            unsigned("POST", "/devstoreaccount1/hostile", "2019-02-02"),
            403,
            "AuthenticationFailed",
        ),
        (
            "a POST to the insight endpoint",
            unsigned("POST", "/_tablestore/insight", "2019-02-02"),
            405,
            "UnsupportedHttpVerb",
        ),
    ];
    for (what, head, status, code) in cases {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let request = format!("{head}{body}");
        // Written whole before reading, as the SDKs do: a server that stopped reading
        // makes this time out or fail.
        let sent = tokio::time::timeout(LIMIT, stream.write_all(request.as_bytes())).await;
        assert!(
            matches!(sent, Ok(Ok(()))),
            "{what}: the body could not be sent: {sent:?}"
        );
        let mut pipeline = raw::Pipeline::default();
        let refusal = match pipeline.read(&mut stream, LIMIT).await {
            Outcome::Reply(r) => r,
            other => panic!("{what}: no whole answer: {other:?}"),
        };
        assert_eq!(refusal.status, status, "{what}: {}", refusal.whole());
        assert_eq!(refusal.error_code().as_deref(), Some(code), "{what}");
        let next = signed_head("GET", "/devstoreaccount1/Tables", "\r\n");
        let sent = stream.write_all(next.as_bytes()).await;
        assert!(sent.is_ok(), "{what}: the connection was closed: {sent:?}");
        match pipeline.read(&mut stream, LIMIT).await {
            Outcome::Reply(r) => assert_eq!(r.status, 200, "{what}: next request: {}", r.whole()),
            other => panic!("{what}: the next request on the connection got {other:?}"),
        }
    }
    assert_healthy(addr).await;
}

#[tokio::test]
async fn chunked_oversize_body_is_413() {
    let (_t, addr) = start().await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let head = signed_head(
        "POST",
        "/devstoreaccount1/hostile",
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let chunk = format!("{:x}\r\n{}\r\n", 64 * 1024, "x".repeat(64 * 1024));
    // 5 MiB in 64 KiB chunks; the server may stop reading (and close) after 4 MiB.
    for _ in 0..80 {
        if stream.write_all(chunk.as_bytes()).await.is_err() {
            break;
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n").await;
    let r = read_response(&mut stream, LIMIT).await.reply();
    assert_eq!(r.status, 413, "{}", r.text());
    assert_eq!(r.error_code().as_deref(), Some("RequestBodyTooLarge"));
    assert_healthy(addr).await;
}

#[tokio::test]
async fn body_shorter_than_content_length_times_out_with_408() {
    let (_t, addr) = start().await;
    let body = r#"{"PartitionKey":"p","#;
    let req = signed_head(
        "POST",
        "/devstoreaccount1/hostile",
        &format!("Content-Type: application/json\r\nContent-Length: 200\r\n\r\n{body}"),
    );
    let started = Instant::now();
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(req.as_bytes()).await.unwrap();
    let r = read_response(&mut stream, LIMIT).await.reply();
    assert_eq!(r.status, 408, "{} {}", r.head, r.text());
    assert_eq!(r.error_code().as_deref(), Some("OperationTimedOut"));
    assert_eq!(r.header("connection"), Some("close"));
    assert!(started.elapsed() < Duration::from_secs(5));
    // The connection is closed after the answer.
    assert!(matches!(
        read_response(&mut stream, Duration::from_secs(3)).await,
        Outcome::Closed(_)
    ));
    assert_healthy(addr).await;
}

#[tokio::test]
async fn body_longer_than_content_length_is_framed_by_the_length() {
    let (t, addr) = start().await;
    let entity = r#"{"PartitionKey":"p","RowKey":"long"}"#;
    // The bytes after the declared length are read as a next request, which is garbage.
    let req = signed_head(
        "POST",
        "/devstoreaccount1/hostile",
        &format!(
            "Content-Type: application/json\r\nPrefer: return-no-content\r\nContent-Length: {}\r\n\r\n{entity}GARBAGE TRAILING BYTES\r\n\r\n",
            entity.len()
        ),
    );
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut pipeline = raw::Pipeline::default();
    let first = pipeline.read(&mut stream, LIMIT).await.reply();
    assert_eq!(first.status, 204, "{}", first.text());
    match pipeline.read(&mut stream, LIMIT).await {
        Outcome::Reply(r) => assert_eq!(r.status, 400, "{}", r.head),
        Outcome::Closed(_) => {}
        Outcome::TimedOut(b) => panic!("no answer to the trailing bytes: {b:?}"),
    }
    let r = t
        .send("GET", "/hostile(PartitionKey='p',RowKey='long')", &[], None)
        .await;
    assert_eq!(r.status, 200);
    assert_healthy(addr).await;
}

#[tokio::test]
async fn malformed_content_length_and_framing_are_400() {
    let (_t, addr) = start().await;
    for extra in [
        "Content-Length: abc\r\n\r\n",
        "Content-Length: -5\r\n\r\n",
        "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
        "Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
    ] {
        let req = signed_head("POST", "/devstoreaccount1/hostile", extra);
        match exchange(addr, req.as_bytes(), LIMIT).await {
            Outcome::Reply(r) => assert!(
                (400..500).contains(&r.status),
                "{extra:?}: {} {}",
                r.head,
                r.text()
            ),
            Outcome::Closed(_) => {}
            Outcome::TimedOut(_) => panic!("{extra:?}: no answer"),
        }
    }
    assert_healthy(addr).await;
}

#[tokio::test]
async fn garbage_and_binary_request_lines_are_refused() {
    let (_t, addr) = start().await;
    let cases: Vec<Vec<u8>> = vec![
        b"\x00\x01\x02\x03\r\n\r\n".to_vec(),
        b"HELLO\r\n\r\n".to_vec(),
        b"GET\r\n\r\n".to_vec(),
        b"GET / HTTP/9.9\r\n\r\n".to_vec(),
        b"GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: \xff\xfe\r\nX-Bad\r\n\r\n".to_vec(),
        b"GET /devstoreaccount1/Tab\xc3\x28les HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".to_vec(),
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03".to_vec(), // a TLS ClientHello
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec(),
    ];
    for req in cases {
        match exchange(addr, &req, Duration::from_secs(3)).await {
            Outcome::Reply(r) => assert!(
                (400..500).contains(&r.status),
                "{:?}: {} {}",
                String::from_utf8_lossy(&req),
                r.head,
                r.text()
            ),
            Outcome::Closed(_) | Outcome::TimedOut(_) => {}
        }
    }
    assert_healthy(addr).await;
}

#[tokio::test]
async fn bad_percent_encoding_and_invalid_utf8_in_urls_are_azure_errors() {
    let (_t, addr) = start().await;
    let paths = [
        "/devstoreaccount1/hostile(PartitionKey='%ZZ',RowKey='a')",
        "/devstoreaccount1/hostile(PartitionKey='%E0%A4',RowKey='a')",
        "/devstoreaccount1/hostile(PartitionKey='%',RowKey='a')",
        "/devstoreaccount1/hostile(PartitionKey='%FF%FE',RowKey='%C0%AF')",
        "/devstoreaccount1/hostile(PartitionKey=%27a,RowKey='a')",
        "/devstoreaccount1/hos%74ile()?$top=%ZZ",
        "/devstoreaccount1/hostile()?$top=%FF",
        "/devstoreaccount1/hostile()?%FF=1&$select=%E0",
        "/devstoreaccount1/%FF%FE()",
        "/devstoreaccount1/hostile(PartitionKey='a',RowKey='b',RowKey='c')",
        "/devstoreaccount1/hostile(PartitionKey='a'",
        "/devstoreaccount1/hostile(PartitionKey='a''',RowKey='b')",
        "/devstoreaccount1/hostile(PartitionKey='a',RowKey='b')/extra",
        "/devstoreaccount1/Tables('%00')",
        "/%FF/Tables",
        "/devstoreaccount1/../../etc/passwd",
    ];
    for path in paths {
        let req = signed_head("GET", path, "\r\n");
        let r = exchange(addr, req.as_bytes(), LIMIT).await.reply();
        assert!(
            (400..500).contains(&r.status),
            "{path}: {} {}",
            r.head,
            r.text()
        );
        if r.status != 404 || r.error_code().is_some() {
            assert!(
                r.error_code().is_some(),
                "{path}: not an Azure error: {}",
                r.text()
            );
        }
    }
    assert_healthy(addr).await;
}

#[tokio::test]
async fn slow_header_client_is_disconnected() {
    let (_t, addr) = start().await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /_health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    let started = Instant::now();
    // One byte every 200 ms would never finish the head within the deadline.
    let mut closed = false;
    for _ in 0..30 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        if stream.write_all(b"X").await.is_err() {
            closed = true;
            break;
        }
        if let Outcome::Closed(_) | Outcome::Reply(_) =
            read_response(&mut stream, Duration::from_millis(1)).await
        {
            closed = true;
            break;
        }
    }
    assert!(closed, "a slow head was not cut off");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert_healthy(addr).await;
}

#[tokio::test]
async fn idle_keep_alive_connections_are_closed() {
    let (_t, addr) = start().await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /_health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let r = read_response(&mut stream, LIMIT).await.reply();
    assert_eq!(r.status, 200);
    let started = Instant::now();
    let outcome = read_response(&mut stream, Duration::from_secs(5)).await;
    assert!(matches!(outcome, Outcome::Closed(_)), "{outcome:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
}

/// Thousands of idle (and half-sent) connections: the server closes the longest-idle ones to
/// make room, so a new client is still served promptly.
#[tokio::test]
async fn thousands_of_idle_connections_do_not_starve_new_clients() {
    let (_t, addr) = start().await;
    let mut idle = Vec::new();
    for i in 0..2000 {
        match TcpStream::connect(addr).await {
            Ok(mut s) => {
                if i % 2 == 0 {
                    let _ = s.write_all(b"GET /_health HTTP/1.1\r\n").await;
                }
                idle.push(s);
            }
            Err(e) => panic!("connect {i}: {e}"),
        }
    }
    let started = Instant::now();
    assert_healthy(addr).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "new client waited {:?}",
        started.elapsed()
    );
    drop(idle);
    for _ in 0..20 {
        assert_healthy(addr).await;
    }
}

/// When every connection is busy (here: all stuck sending a body), a newcomer is answered
/// 503 ServerBusy after a short wait instead of hanging, and service resumes afterwards.
#[tokio::test]
async fn connection_cap_with_all_busy_answers_503() {
    let t = TestServer::start_with_limits(
        Config::for_tests(),
        ServeLimits {
            max_connections: 4,
            connection_wait: Duration::from_millis(300),
            body_read_timeout: Duration::from_secs(2),
            ..limits()
        },
    )
    .await;
    let addr = t.server.addr();
    let mut busy = Vec::new();
    for _ in 0..4 {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let head = signed_head(
            "POST",
            "/devstoreaccount1/Tables",
            "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{",
        );
        s.write_all(head.as_bytes()).await.unwrap();
        busy.push(s);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let r = exchange(
        addr,
        b"GET /_health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        LIMIT,
    )
    .await
    .reply();
    assert_eq!(r.status, 503, "{}", r.head);
    assert_eq!(r.error_code().as_deref(), Some("ServerBusy"));
    // The stuck bodies time out (408), freeing the slots.
    for mut s in busy {
        let r = read_response(&mut s, LIMIT).await.reply();
        assert_eq!(r.status, 408);
    }
    assert_healthy(addr).await;
}

#[tokio::test]
async fn pipelined_requests_are_answered_in_order() {
    let (_t, addr) = start().await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let mut reqs = Vec::new();
    for _ in 0..20 {
        reqs.extend_from_slice(b"GET /_health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    }
    reqs.extend_from_slice(
        b"GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n",
    );
    stream.write_all(&reqs).await.unwrap();
    let mut pipeline = raw::Pipeline::default();
    for _ in 0..20 {
        let r = pipeline.read(&mut stream, LIMIT).await.reply();
        assert_eq!(r.status, 200);
    }
    let r = pipeline.read(&mut stream, LIMIT).await.reply();
    assert_eq!(r.status, 403, "unsigned: {}", r.text());
}

#[tokio::test]
async fn clients_vanishing_mid_request_do_not_hurt() {
    let (_t, addr) = start().await;
    for i in 0..50 {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let head = signed_head(
            "POST",
            "/devstoreaccount1/hostile",
            "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"PartitionKey\":",
        );
        let cut = (i * 37) % head.len();
        let _ = s.write_all(&head.as_bytes()[..cut.max(1)]).await;
        drop(s);
    }
    assert_healthy(addr).await;
}

#[test]
fn raw_reply_helpers_parse() {
    let r = raw::RawReply {
        status: 400,
        head: "HTTP/1.1 400 Bad Request\r\nContent-Length: 2".into(),
        body: b"{}".to_vec(),
    };
    assert_eq!(r.header("content-length"), Some("2"));
}

/// Graceful shutdown is bounded: idle connections close at once and a request stuck on a
/// slow body is dropped after the grace period.
#[tokio::test]
async fn shutdown_is_not_held_up_by_slow_or_idle_clients() {
    let t = TestServer::start_with_limits(
        Config::for_tests(),
        ServeLimits {
            body_read_timeout: Duration::from_secs(60),
            header_read_timeout: Duration::from_secs(60),
            shutdown_grace: Duration::from_millis(500),
            ..limits()
        },
    )
    .await;
    let addr = t.server.addr();
    let mut idle = TcpStream::connect(addr).await.unwrap();
    idle.write_all(b"GET /_health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    assert_eq!(read_response(&mut idle, LIMIT).await.reply().status, 200);
    let mut slow = TcpStream::connect(addr).await.unwrap();
    let head = signed_head(
        "POST",
        "/devstoreaccount1/Tables",
        "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{",
    );
    slow.write_all(head.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(5), t.server.shutdown())
        .await
        .expect("shutdown finished in time")
        .expect("clean shutdown");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

/// Regression (found by `tests/it/arbitrary_input.rs`): a stored-access-policy time with a
/// multi-byte character made the ISO 8601 parser slice inside the character and panic,
/// dropping the connection without an answer.
#[tokio::test]
async fn non_ascii_policy_times_are_refused_not_panicked_on() {
    let (t, addr) = start().await;
    for time in [
        "2020-01-0\u{e9}T00:00:00Z",
        "2020-01-01T00:00:00\u{1F600}Z",
        "\u{20AC}\u{20AC}\u{20AC}\u{20AC}",
    ] {
        let body = format!(
            "<?xml version=\"1.0\" encoding=\"utf-8\"?><SignedIdentifiers><SignedIdentifier><Id>p1</Id><AccessPolicy><Start>{time}</Start><Expiry>{time}</Expiry><Permission>r</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>"
        );
        let r = t
            .send(
                "PUT",
                "/hostile?comp=acl",
                &[("Content-Type", "application/xml")],
                Some(&body),
            )
            .await;
        assert_eq!(r.status.as_u16(), 400, "{time}: {}", r.text());
    }
    assert_healthy(addr).await;
}
