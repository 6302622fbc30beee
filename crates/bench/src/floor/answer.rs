//! The floor's responses: what Azure answers to each request the benchmark sends, in the shape
//! the benchmark checks (status, `ETag`, the entity of a point read, query pages with their
//! continuation headers, a `$batch` response with one sub-response per operation), written
//! without storing an entity. Only one number per table is kept: how many entities were
//! inserted, so that a query returns as many rows as the real table would hold.

use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE, ETAG};
use http::request::Parts;
use http::{Response, StatusCode};
use http_body_util::Full;

use super::route::{
    batch_operations, is_table_name, route, Filter, QueryParams, Route, TOKEN_PREFIX,
};
use crate::data::{entity_json, BUCKETS};

/// Most entities in one query page (Azure's own page limit).
pub const PAGE_ROWS: u64 = 1000;
/// Most tables the floor keeps a count for; a create beyond it is answered 503.
pub const MAX_TABLES: usize = 10_000;
/// Most operations in one change set (Azure's limit).
const MAX_BATCH_OPERATIONS: usize = 100;

/// One ETag for everything: the floor keeps no versions.
const FLOOR_ETAG: &str = "W/\"datetime'2026-01-01T00%3A00%3A00.0000000Z'\"";
const JSON_MINIMAL: &str = "application/json;odata=minimalmetadata;streaming=true;charset=utf-8";
const BATCH_BOUNDARY: &str = "batchresponse_floor";
const CHANGESET_BOUNDARY: &str = "changesetresponse_floor";
const BATCH_CONTENT_TYPE: &str = "multipart/mixed; boundary=batchresponse_floor";
const DEFAULT_VERSION: &str = "2019-02-02";

static X_MS_VERSION: HeaderName = HeaderName::from_static("x-ms-version");
static X_MS_ERROR_CODE: HeaderName = HeaderName::from_static("x-ms-error-code");
static DATA_SERVICE_VERSION: HeaderName = HeaderName::from_static("dataserviceversion");
static PREFERENCE_APPLIED: HeaderName = HeaderName::from_static("preference-applied");
static NEXT_PARTITION_KEY: HeaderName =
    HeaderName::from_static("x-ms-continuation-nextpartitionkey");
static NEXT_ROW_KEY: HeaderName = HeaderName::from_static("x-ms-continuation-nextrowkey");

/// The floor's state: entity counts per table, and the entity it answers with.
pub struct Floor {
    tables: RwLock<HashMap<String, AtomicU64>>,
    /// The benchmark's ~1 KiB entity after its keys: `"Name":...}`.
    entity_rest: String,
    /// One query row: that entity with its `odata.etag` and keys, as minimal metadata has it.
    query_row: Vec<u8>,
}

impl Default for Floor {
    fn default() -> Self {
        Floor::new()
    }
}

impl Floor {
    pub fn new() -> Floor {
        let keyless = entity_json("", "", 0, 0);
        let entity_rest = keyless
            .strip_prefix("{\"PartitionKey\":\"\",\"RowKey\":\"\",")
            .unwrap_or("\"Name\":\"entity-0\"}")
            .to_string();
        let mut query_row = Vec::with_capacity(keyless.len() + 128);
        query_row.push(b'{');
        entity_fields(
            &mut query_row,
            &crate::data::pk(0),
            &crate::data::rk(0),
            &entity_rest,
        );
        Floor {
            tables: RwLock::new(HashMap::new()),
            entity_rest,
            query_row,
        }
    }

    /// Entities inserted into `table` and not deleted since it was created.
    pub fn count(&self, table: &str) -> u64 {
        let tables = self.tables.read();
        tables.get(table).map_or(0, |n| n.load(Ordering::Relaxed))
    }

    /// Adds `delta` to `table`'s count (a table the floor was not asked to create has none).
    fn add(&self, table: &str, delta: i64) {
        let tables = self.tables.read();
        if let Some(n) = tables.get(table) {
            if delta >= 0 {
                n.fetch_add(delta as u64, Ordering::Relaxed);
            } else {
                let _ = n.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                    Some(v.saturating_sub(delta.unsigned_abs()))
                });
            }
        }
    }

    /// The answer to a request whose head is `parts` and whose whole body is `body`.
    pub fn answer(&self, parts: &Parts, body: Bytes) -> Response<Full<Bytes>> {
        let route = route(&parts.method, parts.uri.path(), parts.uri.query());
        let reply = Reply::new(parts);
        match route {
            Route::Health => reply.status(StatusCode::OK).body("text/plain; charset=utf-8", "OK"),
            Route::ListTables => self.list_tables(reply, parts),
            Route::CreateTable => self.create_table(reply, parts, &body),
            Route::DeleteTable(table) => {
                let mut tables = self.tables.write();
                if tables.remove(table.as_ref()).is_some() {
                    reply.status(StatusCode::NO_CONTENT).empty()
                } else {
                    reply.error(
                        StatusCode::NOT_FOUND,
                        "ResourceNotFound",
                        "The specified resource does not exist.",
                    )
                }
            }
            Route::Batch => self.batch(reply, &body),
            Route::Insert(table) => {
                self.add(&table, 1);
                if prefers_no_content(parts) {
                    reply
                        .status(StatusCode::NO_CONTENT)
                        .etag()
                        .header(&PREFERENCE_APPLIED, "return-no-content")
                        .empty()
                } else {
                    // Azure echoes the entity it stored; the floor echoes what it was sent.
                    reply
                        .status(StatusCode::CREATED)
                        .etag()
                        .body_bytes(JSON_MINIMAL, body)
                }
            }
            Route::ReadEntity {
                table,
                partition_key,
                row_key,
            } => {
                let mut out = Vec::with_capacity(self.entity_rest.len() + 256);
                out.extend_from_slice(b"{\"odata.metadata\":\"");
                metadata_url(&mut out, parts, &table);
                out.extend_from_slice(b"/@Element\",");
                entity_fields(&mut out, &partition_key, &row_key, &self.entity_rest);
                reply
                    .status(StatusCode::OK)
                    .etag()
                    .body_bytes(JSON_MINIMAL, Bytes::from(out))
            }
            Route::UpdateEntity => reply.status(StatusCode::NO_CONTENT).etag().empty(),
            Route::DeleteEntity(table) => {
                self.add(&table, -1);
                reply.status(StatusCode::NO_CONTENT).empty()
            }
            Route::Query { table, query } => self.query(reply, parts, &table, &query),
            Route::Unknown => reply.error(
                StatusCode::BAD_REQUEST,
                "InvalidUri",
                "The tablestore-bench floor answers only the requests the benchmark sends; this is not one of them.",
            ),
            Route::UnsupportedVerb => reply.error(
                StatusCode::METHOD_NOT_ALLOWED,
                "UnsupportedHttpVerb",
                "The resource doesn't support the specified HTTP verb.",
            ),
        }
    }

    fn list_tables(&self, reply: Reply, parts: &Parts) -> Response<Full<Bytes>> {
        let names: Vec<String> = {
            let tables = self.tables.read();
            tables.keys().take(PAGE_ROWS as usize).cloned().collect()
        };
        let mut out = Vec::with_capacity(64 + names.len() * 32);
        out.extend_from_slice(b"{\"odata.metadata\":\"");
        metadata_url(&mut out, parts, "Tables");
        out.extend_from_slice(b"\",\"value\":[");
        for (i, name) in names.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"TableName\":");
            json_string(&mut out, name);
            out.push(b'}');
        }
        out.extend_from_slice(b"]}");
        reply
            .status(StatusCode::OK)
            .body_bytes(JSON_MINIMAL, Bytes::from(out))
    }

    fn create_table(&self, reply: Reply, parts: &Parts, body: &[u8]) -> Response<Full<Bytes>> {
        #[derive(serde::Deserialize)]
        struct CreateTable {
            #[serde(rename = "TableName")]
            table_name: String,
        }
        let Ok(CreateTable { table_name }) = serde_json::from_slice::<CreateTable>(body) else {
            return reply.error(
                StatusCode::BAD_REQUEST,
                "InvalidInput",
                "The body is not a JSON object with a TableName.",
            );
        };
        if !is_table_name(&table_name) {
            return reply.error(
                StatusCode::BAD_REQUEST,
                "InvalidResourceName",
                "The specifed resource name contains invalid characters.",
            );
        }
        {
            let mut tables = self.tables.write();
            if tables.len() >= MAX_TABLES && !tables.contains_key(&table_name) {
                return reply.error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "ServerBusy",
                    "The tablestore-bench floor keeps counts for at most 10,000 tables; restart it.",
                );
            }
            // A fresh table each time: the floor never answers 409, so a benchmark run always
            // loads its tables.
            tables.insert(table_name.clone(), AtomicU64::new(0));
        }
        if prefers_no_content(parts) {
            return reply
                .status(StatusCode::NO_CONTENT)
                .header(&PREFERENCE_APPLIED, "return-no-content")
                .empty();
        }
        let mut out = Vec::with_capacity(128);
        out.extend_from_slice(b"{\"odata.metadata\":\"");
        metadata_url(&mut out, parts, "Tables/@Element");
        out.extend_from_slice(b"\",\"TableName\":");
        json_string(&mut out, &table_name);
        out.push(b'}');
        reply
            .status(StatusCode::CREATED)
            .body_bytes(JSON_MINIMAL, Bytes::from(out))
    }

    fn batch(&self, reply: Reply, body: &[u8]) -> Response<Full<Bytes>> {
        let operations = batch_operations(body);
        if operations.is_empty() || operations.len() > MAX_BATCH_OPERATIONS {
            return reply.error(
                StatusCode::BAD_REQUEST,
                "InvalidInput",
                "A change set holds 1 to 100 operations.",
            );
        }
        if operations.iter().any(|op| op.method == "GET") {
            return reply.error(
                StatusCode::NOT_IMPLEMENTED,
                "NotImplemented",
                "The tablestore-bench floor answers change sets only, not query batches.",
            );
        }
        const PART_HEAD: &str =
            "Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n";
        let mut out = Vec::with_capacity(160 + operations.len() * 260);
        for piece in [
            "--",
            BATCH_BOUNDARY,
            "\r\nContent-Type: multipart/mixed; boundary=",
            CHANGESET_BOUNDARY,
            "\r\n\r\n",
        ] {
            out.extend_from_slice(piece.as_bytes());
        }
        // Every operation of a change set touches one table (Azure's rule).
        let mut delta = 0i64;
        for op in &operations {
            for piece in ["--", CHANGESET_BOUNDARY, "\r\n", PART_HEAD] {
                out.extend_from_slice(piece.as_bytes());
            }
            // As Azure answers the benchmark's inserts, which ask for return-no-content.
            out.extend_from_slice(b"HTTP/1.1 204 No Content\r\n");
            match op.method {
                "POST" => {
                    delta += 1;
                    out.extend_from_slice(b"Preference-Applied: return-no-content\r\n");
                }
                "DELETE" => delta -= 1,
                _ => {}
            }
            out.extend_from_slice(b"DataServiceVersion: 3.0;\r\n");
            if op.method != "DELETE" {
                out.extend_from_slice(b"ETag: ");
                out.extend_from_slice(FLOOR_ETAG.as_bytes());
                out.extend_from_slice(b"\r\n");
            }
            out.extend_from_slice(b"\r\n\r\n");
        }
        for piece in [
            "--",
            CHANGESET_BOUNDARY,
            "--\r\n--",
            BATCH_BOUNDARY,
            "--\r\n",
        ] {
            out.extend_from_slice(piece.as_bytes());
        }
        if let Some(first) = operations.first() {
            self.add(first.table, delta);
        }
        reply
            .status(StatusCode::ACCEPTED)
            .body_bytes(BATCH_CONTENT_TYPE, Bytes::from(out))
    }

    fn query(
        &self,
        reply: Reply,
        parts: &Parts,
        table: &str,
        query: &QueryParams,
    ) -> Response<Full<Bytes>> {
        if query.bad_token {
            return reply.error(
                StatusCode::BAD_REQUEST,
                "InvalidInput",
                "NextPartitionKey is not a continuation token of this floor.",
            );
        }
        let total = match query.filter {
            Filter::All => self.count(table),
            Filter::RowKeyRange { from, to } => to.saturating_sub(from),
            Filter::Bucket(b) => {
                let n = self.count(table);
                n / BUCKETS + u64::from(b < n % BUCKETS)
            }
            Filter::Other => 0,
        };
        let page = query.top.unwrap_or(PAGE_ROWS).clamp(1, PAGE_ROWS);
        let rows = total.saturating_sub(query.offset).min(page);
        let mut out = Vec::with_capacity(128 + rows as usize * (self.query_row.len() + 1));
        out.extend_from_slice(b"{\"odata.metadata\":\"");
        metadata_url(&mut out, parts, table);
        out.extend_from_slice(b"\",\"value\":[");
        for i in 0..rows {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(&self.query_row);
        }
        out.extend_from_slice(b"]}");
        let next = query.offset + rows;
        let mut reply = reply.status(StatusCode::OK);
        if next < total {
            let token = format!("{TOKEN_PREFIX}{next}");
            reply = reply
                .header(&NEXT_PARTITION_KEY, &token)
                .header(&NEXT_ROW_KEY, &token);
        }
        reply.body_bytes(JSON_MINIMAL, Bytes::from(out))
    }
}

fn prefers_no_content(parts: &Parts) -> bool {
    parts
        .headers
        .get("prefer")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("return-no-content"))
}

/// `"odata.etag":"...","PartitionKey":"pk","RowKey":"rk",` + `rest` (which closes the object).
fn entity_fields(out: &mut Vec<u8>, partition_key: &str, row_key: &str, rest: &str) {
    out.extend_from_slice(b"\"odata.etag\":");
    json_string(out, FLOOR_ETAG);
    out.extend_from_slice(b",\"PartitionKey\":");
    json_string(out, partition_key);
    out.extend_from_slice(b",\"RowKey\":");
    json_string(out, row_key);
    out.push(b',');
    out.extend_from_slice(rest.as_bytes());
}

/// `http://{host}/{account}/$metadata#{what}` from the request's `Host` and path.
fn metadata_url(out: &mut Vec<u8>, parts: &Parts, what: &str) {
    let host = parts
        .headers
        .get(http::header::HOST)
        .map_or(&b"127.0.0.1"[..], HeaderValue::as_bytes);
    let account = parts
        .uri
        .path()
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or("");
    out.extend_from_slice(b"http://");
    out.extend_from_slice(host);
    out.push(b'/');
    out.extend_from_slice(account.as_bytes());
    out.extend_from_slice(b"/$metadata#");
    out.extend_from_slice(what.as_bytes());
}

fn json_string(out: &mut Vec<u8>, s: &str) {
    // Writing into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// A response being built: the status, then headers, then the body.
struct Reply {
    builder: http::response::Builder,
}

impl Reply {
    fn new(parts: &Parts) -> Reply {
        let version = parts
            .headers
            .get(&X_MS_VERSION)
            .cloned()
            .unwrap_or(HeaderValue::from_static(DEFAULT_VERSION));
        Reply {
            builder: Response::builder().header(&X_MS_VERSION, version),
        }
    }

    fn status(self, status: StatusCode) -> Reply {
        Reply {
            builder: self.builder.status(status),
        }
    }

    fn header(self, name: &HeaderName, value: &str) -> Reply {
        Reply {
            builder: self.builder.header(name, value),
        }
    }

    fn etag(self) -> Reply {
        Reply {
            builder: self
                .builder
                .header(ETAG, HeaderValue::from_static(FLOOR_ETAG)),
        }
    }

    fn finish(self, body: Bytes) -> Response<Full<Bytes>> {
        self.builder
            .body(Full::new(body))
            .unwrap_or_else(|_| Response::new(Full::new(Bytes::new())))
    }

    fn empty(self) -> Response<Full<Bytes>> {
        self.finish(Bytes::new())
    }

    fn body(self, content_type: &'static str, body: &'static str) -> Response<Full<Bytes>> {
        self.body_bytes(content_type, Bytes::from_static(body.as_bytes()))
    }

    fn body_bytes(self, content_type: &'static str, body: Bytes) -> Response<Full<Bytes>> {
        Reply {
            builder: self
                .builder
                .header(CONTENT_TYPE, HeaderValue::from_static(content_type))
                .header(&DATA_SERVICE_VERSION, HeaderValue::from_static("3.0;")),
        }
        .finish(body)
    }

    /// Azure's error shape: `x-ms-error-code` and an `odata.error` body.
    fn error(self, status: StatusCode, code: &'static str, message: &str) -> Response<Full<Bytes>> {
        let mut out = Vec::with_capacity(128 + message.len());
        out.extend_from_slice(b"{\"odata.error\":{\"code\":");
        json_string(&mut out, code);
        out.extend_from_slice(b",\"message\":{\"lang\":\"en-US\",\"value\":");
        json_string(&mut out, message);
        out.extend_from_slice(b"}}}");
        self.status(status)
            .header(&X_MS_ERROR_CODE, code)
            .body_bytes(JSON_MINIMAL, Bytes::from(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{batch_insert_body, batch_statuses, count_entities, entity_json};
    use http::{Method, Request};
    use http_body_util::BodyExt;

    fn parts(method: &str, uri: &str, headers: &[(&str, &str)]) -> Parts {
        let mut b = Request::builder()
            .method(Method::from_bytes(method.as_bytes()).unwrap())
            .uri(uri)
            .header("host", "127.0.0.1:10002");
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap().into_parts().0
    }

    struct Answer {
        status: u16,
        headers: http::HeaderMap,
        body: Bytes,
    }

    fn ask(
        floor: &Floor,
        method: &str,
        uri: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Answer {
        let r = floor.answer(&parts(method, uri, headers), Bytes::copy_from_slice(body));
        let (p, b) = r.into_parts();
        let body = futures::executor::block_on(b.collect()).unwrap().to_bytes();
        Answer {
            status: p.status.as_u16(),
            headers: p.headers,
            body,
        }
    }

    fn header<'a>(a: &'a Answer, name: &str) -> &'a str {
        a.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// The status and `x-ms-error-code` of an error answer.
    fn failure(a: &Answer) -> (u16, &str) {
        (a.status, header(a, "x-ms-error-code"))
    }

    fn json(a: &Answer) -> serde_json::Value {
        serde_json::from_slice(&a.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&a.body)))
    }

    const NO_CONTENT: (&str, &str) = ("prefer", "return-no-content");

    fn create(floor: &Floor, table: &str) {
        let body = format!("{{\"TableName\":\"{table}\"}}");
        let a = ask(
            floor,
            "POST",
            "/devstoreaccount1/Tables",
            &[NO_CONTENT],
            body.as_bytes(),
        );
        assert_eq!(a.status, 204);
    }

    /// `n` entities into `table` with `$batch`es of up to 100.
    fn load(floor: &Floor, table: &str, n: u64) {
        let mut done = 0;
        while done < n {
            let es: Vec<String> = (done..n.min(done + 100))
                .map(|i| entity_json("p", &format!("r{i:08}"), i, 0))
                .collect();
            let (ct, body) =
                batch_insert_body("http://127.0.0.1:10002/devstoreaccount1", table, &es);
            let a = ask(
                floor,
                "POST",
                "/devstoreaccount1/$batch",
                &[("content-type", &ct)],
                body.as_bytes(),
            );
            assert_eq!(a.status, 202);
            done += es.len() as u64;
        }
    }

    #[test]
    fn tables_are_created_listed_and_deleted() {
        let floor = Floor::new();
        create(&floor, "bench1");
        let a = ask(
            &floor,
            "POST",
            "/devstoreaccount1/Tables",
            &[],
            br#"{"TableName":"bench2"}"#,
        );
        assert_eq!(a.status, 201);
        assert_eq!(json(&a)["TableName"], "bench2");
        assert_eq!(
            json(&a)["odata.metadata"],
            "http://127.0.0.1:10002/devstoreaccount1/$metadata#Tables/@Element"
        );
        let a = ask(&floor, "GET", "/devstoreaccount1/Tables", &[], b"");
        assert_eq!(a.status, 200);
        let mut names: Vec<String> = json(&a)["value"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["TableName"].as_str().unwrap().to_string())
            .collect();
        names.sort();
        assert_eq!(names, ["bench1", "bench2"]);
        // Deleted once; the second time it is not there.
        let delete = || {
            ask(
                &floor,
                "DELETE",
                "/devstoreaccount1/Tables('bench1')",
                &[],
                b"",
            )
        };
        assert_eq!(delete().status, 204);
        assert_eq!(failure(&delete()), (404, "ResourceNotFound"));
        for bad in [&b"not json"[..], br#"{"TableName":"1x"}"#] {
            let a = ask(&floor, "POST", "/devstoreaccount1/Tables", &[], bad);
            assert_eq!(a.status, 400, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn single_writes_answer_with_an_etag_and_count_inserts() {
        let floor = Floor::new();
        create(&floor, "bench1");
        let entity = entity_json("p00001", "r00000001", 1, 0);
        let json_ct = ("content-type", "application/json");
        let a = ask(
            &floor,
            "POST",
            "/devstoreaccount1/bench1",
            &[json_ct, NO_CONTENT],
            entity.as_bytes(),
        );
        assert_eq!(a.status, 204);
        assert!(header(&a, "etag").starts_with("W/\"datetime'"));
        assert_eq!(header(&a, "preference-applied"), "return-no-content");
        assert!(a.body.is_empty());
        // Without the preference, the entity comes back.
        let a = ask(
            &floor,
            "POST",
            "/devstoreaccount1/bench1",
            &[json_ct],
            entity.as_bytes(),
        );
        assert_eq!(a.status, 201);
        assert_eq!(a.body, entity.as_bytes());
        assert_eq!(floor.count("bench1"), 2);
        let path = "/devstoreaccount1/bench1(PartitionKey='p00001',RowKey='r00000001')";
        for method in ["PUT", "MERGE", "PATCH"] {
            let a = ask(
                &floor,
                method,
                path,
                &[json_ct, ("if-match", "*")],
                entity.as_bytes(),
            );
            assert_eq!(a.status, 204, "{method}");
            assert!(!header(&a, "etag").is_empty(), "{method}");
        }
        assert_eq!(floor.count("bench1"), 2, "updates add nothing");
        let a = ask(&floor, "DELETE", path, &[("if-match", "*")], b"");
        assert_eq!(a.status, 204);
        assert_eq!(floor.count("bench1"), 1);
        assert_eq!(header(&a, "x-ms-version"), "2019-02-02");
        let a = ask(
            &floor,
            "DELETE",
            path,
            &[("x-ms-version", "2021-12-02")],
            b"",
        );
        assert_eq!(header(&a, "x-ms-version"), "2021-12-02");
    }

    #[test]
    fn a_point_read_answers_one_kib_entity_with_its_keys() {
        let floor = Floor::new();
        let a = ask(
            &floor,
            "GET",
            "/devstoreaccount1/bench1(PartitionKey='p00007',RowKey='it''s')",
            &[],
            b"",
        );
        assert_eq!(a.status, 200);
        assert!(header(&a, "etag").starts_with("W/\"datetime'"));
        assert!(header(&a, "content-type").starts_with("application/json;odata=minimalmetadata"));
        assert_eq!(count_entities(&a.body), 1);
        assert!((1000..1400).contains(&a.body.len()), "{}", a.body.len());
        let v = json(&a);
        assert_eq!(
            v["odata.metadata"],
            "http://127.0.0.1:10002/devstoreaccount1/$metadata#bench1/@Element"
        );
        assert_eq!(v["odata.etag"], header(&a, "etag"));
        assert_eq!(
            (v["PartitionKey"].as_str(), v["RowKey"].as_str()),
            (Some("p00007"), Some("it's"))
        );
        assert_eq!(v["Big@odata.type"], "Edm.Int64");
        assert!(v["Description"].as_str().is_some());
    }

    #[test]
    fn batch_answers_one_sub_response_per_operation_and_counts_them() {
        let floor = Floor::new();
        create(&floor, "bench1");
        let es: Vec<String> = (0..37)
            .map(|i| entity_json("p", &format!("r{i:08}"), i, 0))
            .collect();
        let (ct, body) =
            batch_insert_body("http://127.0.0.1:10002/devstoreaccount1", "bench1", &es);
        let a = ask(
            &floor,
            "POST",
            "/devstoreaccount1/$batch",
            &[("content-type", &ct)],
            body.as_bytes(),
        );
        assert_eq!(a.status, 202);
        assert_eq!(
            header(&a, "content-type"),
            "multipart/mixed; boundary=batchresponse_floor"
        );
        assert_eq!(batch_statuses(&a.body), vec![204; 37]);
        let text = String::from_utf8(a.body.to_vec()).unwrap();
        assert!(text.starts_with("--batchresponse_floor\r\nContent-Type: multipart/mixed; boundary=changesetresponse_floor\r\n\r\n"));
        assert!(text.ends_with("--changesetresponse_floor--\r\n--batchresponse_floor--\r\n"));
        assert_eq!(text.matches("\r\nETag: W/\"datetime'").count(), 37);
        assert_eq!(text.matches("--changesetresponse_floor\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\nHTTP/1.1 204 No Content\r\n").count(), 37);
        assert_eq!(floor.count("bench1"), 37);

        let deletes = "--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c\r\nContent-Type: application/http\r\n\r\nDELETE http://h/a/bench1(PartitionKey='p',RowKey='r') HTTP/1.1\r\nIf-Match: *\r\n\r\n\r\n--c--\r\n--b--\r\n";
        let a = ask(&floor, "POST", "/a/$batch", &[], deletes.as_bytes());
        assert_eq!(batch_statuses(&a.body), vec![204]);
        assert!(!String::from_utf8_lossy(&a.body).contains("ETag"));
        assert_eq!(floor.count("bench1"), 36);

        let a = ask(&floor, "POST", "/a/$batch", &[], b"--b\r\n--b--\r\n");
        assert_eq!(failure(&a), (400, "InvalidInput"));
        let query = "--b\r\nContent-Type: application/http\r\n\r\nGET http://h/a/bench1() HTTP/1.1\r\n\r\n--b--\r\n";
        let a = ask(&floor, "POST", "/a/$batch", &[], query.as_bytes());
        assert_eq!(failure(&a), (501, "NotImplemented"));
    }

    #[test]
    fn queries_return_as_many_rows_as_the_table_would_in_pages() {
        let floor = Floor::new();
        create(&floor, "bench1");
        load(&floor, "bench1", 2500);
        let q = |query: &str| {
            ask(
                &floor,
                "GET",
                &format!("/devstoreaccount1/bench1()?{query}"),
                &[],
                b"",
            )
        };
        // 2500 entities: bucket 7 holds entities 7, 1007 and 2007; bucket 700 two.
        let a = q("$filter=Bucket%20eq%207");
        assert_eq!(a.status, 200);
        assert_eq!(count_entities(&a.body), 3);
        assert_eq!(json(&a)["value"].as_array().unwrap().len(), 3);
        assert_eq!(
            json(&a)["odata.metadata"],
            "http://127.0.0.1:10002/devstoreaccount1/$metadata#bench1"
        );
        assert!(a
            .headers
            .get("x-ms-continuation-nextpartitionkey")
            .is_none());
        assert_eq!(count_entities(&q("$filter=Bucket%20eq%20700").body), 2);
        let a = q("$filter=PartitionKey%20eq%20%27p00001%27%20and%20RowKey%20ge%20%27r00000010%27%20and%20RowKey%20lt%20%27r00000110%27");
        assert_eq!(count_entities(&a.body), 100);
        assert_eq!(count_entities(&q("$filter=Name%20eq%20%27x%27").body), 0);
        // No filter: every entity, 1000 a page, with Azure's continuation headers between.
        let mut rows = Vec::new();
        let mut query = String::new();
        for _ in 0..10 {
            let a = q(&query);
            assert_eq!(a.status, 200);
            rows.push(count_entities(&a.body));
            let (Some(npk), Some(nrk)) = (
                a.headers.get("x-ms-continuation-nextpartitionkey"),
                a.headers.get("x-ms-continuation-nextrowkey"),
            ) else {
                break;
            };
            query = format!(
                "NextPartitionKey={}&NextRowKey={}",
                crate::data::encode_query_value(npk.to_str().unwrap()),
                crate::data::encode_query_value(nrk.to_str().unwrap())
            );
        }
        assert_eq!(rows, [1000, 1000, 500]);
        assert_eq!(count_entities(&q("$top=7").body), 7);
        let a = q("NextPartitionKey=1%214%21cDAx");
        assert_eq!(failure(&a), (400, "InvalidInput"));
    }

    #[test]
    fn health_and_anything_else() {
        let floor = Floor::new();
        let a = ask(&floor, "GET", "/_health", &[], b"");
        assert_eq!((a.status, &a.body[..]), (200, &b"OK"[..]));
        let a = ask(&floor, "GET", "/metrics", &[], b"");
        assert_eq!(failure(&a), (400, "InvalidUri"));
        assert_eq!(json(&a)["odata.error"]["code"], "InvalidUri");
        let a = ask(&floor, "PUT", "/devstoreaccount1/Tables", &[], b"");
        assert_eq!(failure(&a), (405, "UnsupportedHttpVerb"));
    }
}
