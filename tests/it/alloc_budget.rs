//! The request path's allocation budget (docs/performance.md, "The request path's budget"):
//! a point read, an insert, an upsert, a merge, a delete and a `$batch` of 100 inserts, each
//! sent over a real socket to a server on the disk store with the default settings, and the
//! allocations its answer cost counted. A test that fails when someone adds allocations to
//! the request path: raise a budget only with the reason in the commit.
//!
//! Counting: this binary's global allocator wraps the system's and counts the calls that
//! allocate (`alloc`, `alloc_zeroed`, `realloc`) made on a thread while that thread has
//! counting on. The server runs on the test's own current-thread runtime, so everything the
//! request does on the async side (hyper, admission, decode, execute, encode, the layers) runs
//! on that thread; the client writes prepared bytes and reads into a prepared buffer, which
//! allocates nothing. Not counted: the store's own threads (the group commit's flusher, sled's
//! log writers) and the insight thread that tallies the report. Each kind is sent a few times
//! first (connection set-up, the RAM tier's load of the table, the per-second `Date` cache),
//! then the median of the measured requests is held to its budget.
//!
//! The budgets are the counts measured on 2026-12-06 plus a margin of about 5 % (counts move
//! a little with sled's page splits and whether the RAM tier holds the table yet); the counts
//! before the lean request path are beside them and in docs/performance.md.
// A global allocator is an `unsafe` trait: the only unsafe code of the test binary, each
// call handed unchanged to the system allocator.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::fmt::Write as _;

use tablestore::config::Config;
use tablestore::testing::TestServer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::child::Signer;

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<u64> = const { Cell::new(0) };
}

fn note() {
    let _ = COUNTING.try_with(|on| {
        if on.get() {
            let _ = COUNT.try_with(|n| n.set(n.get() + 1));
        }
    });
}

// SAFETY: every method hands its arguments unchanged to `System`, which upholds
// `GlobalAlloc`'s contract; counting touches only `const`-initialised thread-locals (no
// allocation, no destructor).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, as `System` requires.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, i.e. from `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        // SAFETY: `ptr` came from `System` with `layout`; the caller upholds the rest.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Allocations this thread makes while `f`'s future runs.
async fn counted<F: std::future::Future>(f: F) -> (F::Output, u64) {
    COUNT.with(|n| n.set(0));
    COUNTING.with(|on| on.set(true));
    let out = f.await;
    COUNTING.with(|on| on.set(false));
    (out, COUNT.with(Cell::get))
}

/// The most allocations each request may make (median of the measured ones). Measured on
/// 2026-12-06 (debug build): 67, 92, 86, 90, 60 and 7,506; with the table not yet in the RAM
/// tier (its load runs in the background) 70, 90, 83, 90, 61 and 7,388. Before the lean
/// request path: 130, 156, 145, 151, 118 and 9,556.
const BUDGETS: [(&str, u64); 6] = [
    ("point read", 72),
    ("insert", 97),
    ("upsert", 91),
    ("merge", 95),
    ("delete", 64),
    ("$batch of 100", 7_900),
];

const TABLE: &str = "budget";
const WARM_UP: usize = 8;
const MEASURED: usize = 15;
const PRELOADED: usize = 100;

/// A ~1 KiB entity of the benchmark's shape: ten properties of eight EDM types.
fn entity(pk: &str, rk: &str, i: usize) -> String {
    format!(
        "{{\"PartitionKey\":\"{pk}\",\"RowKey\":\"{rk}\",\"Name\":\"entity-{i}\",\
         \"Description\":\"{}\",\"Count\":{i},\"Bucket\":{},\
         \"Big@odata.type\":\"Edm.Int64\",\"Big\":\"{}\",\"Score\":{}.125,\"Active\":{},\
         \"Created@odata.type\":\"Edm.DateTime\",\"Created\":\"2024-02-29T12:34:56.000Z\",\
         \"Uid@odata.type\":\"Edm.Guid\",\"Uid\":\"12345678-1234-4234-8234-{i:012x}\",\
         \"Blob@odata.type\":\"Edm.Binary\",\"Blob\":\"{}\"}}",
        "lorem ipsum dolor sit amet ".repeat(22),
        i % 1000,
        (i as i64) * 1_000_003 + (1 << 40),
        i % 1000,
        i.is_multiple_of(2),
        "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0MTIz".repeat(3),
    )
}

/// One signed request, ready to write.
fn request(host: &str, method: &str, path: &str, extra: &[(&str, &str)], body: &str) -> Vec<u8> {
    let (date, authorization) = Signer::dev().sign(path, None);
    let mut r = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nx-ms-date: {date}\r\n\
         x-ms-version: 2019-02-02\r\nAuthorization: {authorization}\r\n\
         Accept: application/json;odata=minimalmetadata\r\nDataServiceVersion: 3.0\r\n\
         MaxDataServiceVersion: 3.0;NetFx\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in extra {
        let _ = write!(r, "{name}: {value}\r\n");
    }
    r.push_str("\r\n");
    r.push_str(body);
    r.into_bytes()
}

fn entity_path(pk: &str, rk: &str) -> String {
    format!("/devstoreaccount1/{TABLE}(PartitionKey='{pk}',RowKey='{rk}')")
}

const JSON: (&str, &str) = ("Content-Type", "application/json");
const MATCH_ANY: (&str, &str) = ("If-Match", "*");

/// A `$batch` of one change set inserting `rks` into partition `pk`.
fn batch(host: &str, pk: &str, rks: impl Iterator<Item = usize>) -> Vec<u8> {
    let mut body =
        String::from("--batch_b\r\nContent-Type: multipart/mixed; boundary=changeset_c\r\n\r\n");
    for i in rks {
        let e = entity(pk, &format!("r{i:05}"), i);
        let _ = write!(
            body,
            "--changeset_c\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n\
             POST http://{host}/devstoreaccount1/{TABLE} HTTP/1.1\r\nContent-Type: application/json\r\n\
             Accept: application/json;odata=minimalmetadata\r\nPrefer: return-no-content\r\n\
             DataServiceVersion: 3.0;\r\n\r\n{e}\r\n"
        );
    }
    body.push_str("--changeset_c--\r\n--batch_b--\r\n");
    let content_type = ("Content-Type", "multipart/mixed; boundary=batch_b");
    request(
        host,
        "POST",
        "/devstoreaccount1/$batch",
        &[content_type],
        &body,
    )
}

/// A keep-alive connection that reads each response into one buffer allocated up front.
struct Client {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    /// Sends `request` and reads its whole response; returns the status code.
    async fn exchange(&mut self, request: &[u8]) -> u16 {
        self.stream.write_all(request).await.expect("request sent");
        let mut filled = 0;
        loop {
            if let Some(end) = response_end(&self.buf[..filled]) {
                assert_eq!(end, filled, "one response per request");
                return status(&self.buf);
            }
            assert!(filled < self.buf.len(), "response larger than the buffer");
            let n = self
                .stream
                .read(&mut self.buf[filled..])
                .await
                .expect("response read");
            assert!(n > 0, "the server closed the connection");
            filled += n;
        }
    }
}

fn status(response: &[u8]) -> u16 {
    response[9..12]
        .iter()
        .fold(0, |s, d| s * 10 + u16::from(d - b'0'))
}

/// The length of the complete response at the start of `buf` (`Content-Length` framed, as
/// every answer of the server is), if it has all arrived. Allocates nothing.
fn response_end(buf: &[u8]) -> Option<usize> {
    let head = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let length = buf[..head]
        .split(|b| *b == b'\n')
        .find_map(|line| {
            let colon = line.iter().position(|b| *b == b':')?;
            let (name, value) = line.split_at(colon);
            name.eq_ignore_ascii_case(b"content-length").then(|| {
                value[1..]
                    .iter()
                    .filter(|b| b.is_ascii_digit())
                    .fold(0usize, |n, d| n * 10 + usize::from(d - b'0'))
            })
        })
        .unwrap_or(0);
    (buf.len() >= head + length).then_some(head + length)
}

/// Sends every request of `requests`, the first [`WARM_UP`] uncounted; the median count of
/// the rest, and every count (for the failure message).
async fn measure(client: &mut Client, requests: &[Vec<u8>], expect: u16) -> (u64, Vec<u64>) {
    let mut counts = Vec::new();
    for (i, r) in requests.iter().enumerate() {
        let (status, n) = counted(client.exchange(r)).await;
        assert_eq!(
            status,
            expect,
            "request {i}: {}",
            String::from_utf8_lossy(&client.buf[..200])
        );
        if i >= WARM_UP {
            counts.push(n);
        }
    }
    let mut sorted = counts.clone();
    sorted.sort_unstable();
    (sorted[sorted.len() / 2], counts)
}

#[test]
fn each_request_stays_within_its_allocation_budget() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let dir = tempfile::tempdir().expect("temporary folder");
        let location = dir.path().to_str().expect("utf-8 path");
        let args = [
            "tablestore",
            "--location",
            location,
            "--host",
            "127.0.0.1",
            "--port",
            "0",
        ];
        let config = Config::try_parse_args(args, |_| None).expect("default configuration");
        let server = TestServer::start_with(config).await.expect("server");
        let host = server.addr().to_string();
        let stream = TcpStream::connect(server.addr()).await.expect("connected");
        let mut client = Client {
            stream,
            buf: vec![0; 1 << 20],
        };
        let n = WARM_UP + MEASURED;

        let create = request(
            &host,
            "POST",
            "/devstoreaccount1/Tables",
            &[JSON],
            r#"{"TableName":"budget"}"#,
        );
        assert_eq!(client.exchange(&create).await, 201);
        let preload = batch(&host, "p", 0..PRELOADED);
        assert_eq!(client.exchange(&preload).await, 202);
        let doomed = batch(&host, "d", 0..n);
        assert_eq!(client.exchange(&doomed).await, 202);

        let rk = |i: usize| format!("r{:05}", i % PRELOADED);
        let no_content = ("Prefer", "return-no-content");
        let kinds: Vec<(&str, Vec<Vec<u8>>, u16)> = vec![
            (
                "point read",
                (0..n)
                    .map(|i| request(&host, "GET", &entity_path("p", &rk(i)), &[], ""))
                    .collect(),
                200,
            ),
            (
                "insert",
                (0..n)
                    .map(|i| {
                        let body = entity("i", &format!("r{i:05}"), i);
                        request(
                            &host,
                            "POST",
                            &format!("/devstoreaccount1/{TABLE}"),
                            &[JSON, no_content],
                            &body,
                        )
                    })
                    .collect(),
                204,
            ),
            (
                "upsert",
                (0..n)
                    .map(|i| {
                        request(
                            &host,
                            "PUT",
                            &entity_path("p", &rk(i)),
                            &[JSON],
                            &entity("p", &rk(i), i + 7),
                        )
                    })
                    .collect(),
                204,
            ),
            (
                "merge",
                (0..n)
                    .map(|i| {
                        let body = format!(r#"{{"Count":{i},"Name":"merged-{i}"}}"#);
                        request(
                            &host,
                            "MERGE",
                            &entity_path("p", &rk(i)),
                            &[JSON, MATCH_ANY],
                            &body,
                        )
                    })
                    .collect(),
                204,
            ),
            (
                "delete",
                (0..n)
                    .map(|i| {
                        request(
                            &host,
                            "DELETE",
                            &entity_path("d", &format!("r{i:05}")),
                            &[MATCH_ANY],
                            "",
                        )
                    })
                    .collect(),
                204,
            ),
            (
                "$batch of 100",
                (0..n)
                    .map(|i| batch(&host, &format!("b{i}"), 0..100))
                    .collect(),
                202,
            ),
        ];

        let mut report = String::from("allocations per request (median; every measured count):\n");
        let mut over = Vec::new();
        for ((name, requests, expect), (budget_name, budget)) in kinds.iter().zip(BUDGETS) {
            assert_eq!(*name, budget_name);
            let (median, counts) = measure(&mut client, requests, *expect).await;
            let _ = writeln!(report, "  {name}: {median} (budget {budget}); {counts:?}");
            if median > budget {
                over.push(format!("{name}: {median} > {budget}"));
            }
        }
        println!("{report}");
        assert!(over.is_empty(), "over budget: {over:?}\n{report}");
        drop(client);
        server.shutdown().await.expect("shutdown");
    });
}
