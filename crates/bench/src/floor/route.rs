//! Which of the benchmark's requests the floor was sent, read from the method, the path and
//! the query string (and, for `$batch`, the request lines of its operations). Parsing only:
//! `answer` writes the responses.

use std::borrow::Cow;

use http::Method;
use percent_encoding::percent_decode_str;

/// The readiness path tablestore answers (its `--healthcheck` asks it too).
pub const HEALTH_PATH: &str = "/_health";

/// A request the floor answers, or why it does not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route<'a> {
    Health,
    ListTables,
    CreateTable,
    DeleteTable(Cow<'a, str>),
    Batch,
    Insert(Cow<'a, str>),
    Query {
        table: Cow<'a, str>,
        query: QueryParams,
    },
    ReadEntity {
        table: Cow<'a, str>,
        partition_key: String,
        row_key: String,
    },
    /// `PUT` (insert-or-replace, replace), `MERGE` or `PATCH` (insert-or-merge, merge).
    UpdateEntity,
    DeleteEntity(Cow<'a, str>),
    /// A path the benchmark never asks for.
    Unknown,
    /// A path the floor knows, with a method it does not answer there.
    UnsupportedVerb,
}

/// What a query asks for, as far as the floor needs to know it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryParams {
    pub filter: Filter,
    /// `$top`, if given.
    pub top: Option<u64>,
    /// The row offset carried by a continuation token of this floor (`NextPartitionKey`).
    pub offset: u64,
    /// `NextPartitionKey` was given but is not a token of this floor.
    pub bad_token: bool,
}

/// The `$filter`s the benchmark sends, recognised by shape; they decide how many rows a query
/// returns (the floor holds no rows to test them against).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Filter {
    /// No `$filter`: every entity of the table.
    #[default]
    All,
    /// `... RowKey ge 'r{from}' and RowKey lt 'r{to}'` over the benchmark's RowKeys.
    RowKeyRange { from: u64, to: u64 },
    /// `Bucket eq {n}`: one bucket of the benchmark's entities.
    Bucket(u64),
    /// Any other filter: no rows.
    Other,
}

/// Prefix of the continuation tokens the floor writes; the rest is a row offset.
pub const TOKEN_PREFIX: &str = "floor!";

/// The route of a request to `path` (raw, percent-encoded) with `query` (without the `?`).
pub fn route<'a>(method: &Method, path: &'a str, query: Option<&'a str>) -> Route<'a> {
    if path == HEALTH_PATH {
        return if method == Method::GET || method == Method::HEAD {
            Route::Health
        } else {
            Route::UnsupportedVerb
        };
    }
    // Path style, as the benchmark sends: /{account}/{resource}.
    let Some((account, resource)) = path.strip_prefix('/').and_then(|rest| rest.split_once('/'))
    else {
        return Route::Unknown;
    };
    if account.is_empty() || resource.is_empty() {
        return Route::Unknown;
    }
    let resource = decode(resource);
    let is = |m: &Method| method == m;
    let merge_like = method.as_str() == "MERGE" || is(&Method::PATCH);
    match resource.as_ref() {
        "Tables" | "Tables()" => {
            if is(&Method::GET) {
                Route::ListTables
            } else if is(&Method::POST) {
                Route::CreateTable
            } else {
                Route::UnsupportedVerb
            }
        }
        "$batch" => {
            if is(&Method::POST) {
                Route::Batch
            } else {
                Route::UnsupportedVerb
            }
        }
        r => {
            if let Some(name) = r
                .strip_prefix("Tables('")
                .and_then(|n| n.strip_suffix("')"))
            {
                return if is(&Method::DELETE) && is_table_name(name) {
                    Route::DeleteTable(sub(&resource, name))
                } else if is_table_name(name) {
                    Route::UnsupportedVerb
                } else {
                    Route::Unknown
                };
            }
            let (name, keys) = match r.find('(') {
                Some(i) => (&r[..i], Some(&r[i..])),
                None => (r, None),
            };
            if !is_table_name(name) {
                return Route::Unknown;
            }
            let table = sub(&resource, name);
            match keys {
                None | Some("()") => {
                    if is(&Method::GET) {
                        Route::Query {
                            table,
                            query: query_params(query.unwrap_or("")),
                        }
                    } else if is(&Method::POST) && keys.is_none() {
                        Route::Insert(table)
                    } else {
                        Route::UnsupportedVerb
                    }
                }
                Some(keys) => {
                    let Some((partition_key, row_key)) = entity_keys(keys) else {
                        return Route::Unknown;
                    };
                    if is(&Method::GET) {
                        Route::ReadEntity {
                            table,
                            partition_key,
                            row_key,
                        }
                    } else if is(&Method::PUT) || merge_like {
                        Route::UpdateEntity
                    } else if is(&Method::DELETE) {
                        Route::DeleteEntity(table)
                    } else {
                        Route::UnsupportedVerb
                    }
                }
            }
        }
    }
}

/// Percent-decodes a path or query part (borrowed when it holds no escapes).
fn decode(s: &str) -> Cow<'_, str> {
    percent_decode_str(s).decode_utf8_lossy()
}

/// `part` (a slice of `whole`) as a `Cow` that borrows when `whole` does.
fn sub<'a>(whole: &Cow<'a, str>, part: &str) -> Cow<'a, str> {
    match whole {
        Cow::Borrowed(w) => {
            let start = part.as_ptr() as usize - w.as_ptr() as usize;
            Cow::Borrowed(&w[start..start + part.len()])
        }
        Cow::Owned(_) => Cow::Owned(part.to_string()),
    }
}

/// Azure's table name rule: 3-63 letters or digits, starting with a letter.
pub fn is_table_name(name: &str) -> bool {
    (3..=63).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric())
}

/// `(PartitionKey='a',RowKey='b')` → (`a`, `b`), with `''` read as one quote.
fn entity_keys(keys: &str) -> Option<(String, String)> {
    let inner = keys.strip_prefix('(')?.strip_suffix(')')?;
    let rest = inner.strip_prefix("PartitionKey=")?;
    let (partition_key, rest) = quoted(rest)?;
    let rest = rest.strip_prefix(",RowKey=")?;
    let (row_key, rest) = quoted(rest)?;
    rest.is_empty().then_some((partition_key, row_key))
}

/// A single-quoted OData string at the start of `s`: its value and what follows it.
fn quoted(s: &str) -> Option<(String, &str)> {
    let mut rest = s.strip_prefix('\'')?;
    let mut value = String::new();
    loop {
        let i = rest.find('\'')?;
        value.push_str(&rest[..i]);
        rest = &rest[i + 1..];
        match rest.strip_prefix('\'') {
            Some(after) => {
                value.push('\'');
                rest = after;
            }
            None => return Some((value, rest)),
        }
    }
}

fn query_params(query: &str) -> QueryParams {
    let mut params = QueryParams::default();
    for pair in query.split('&') {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        match name {
            "$filter" => params.filter = filter(&decode(value)),
            "$top" => params.top = decode(value).trim().parse().ok(),
            "NextPartitionKey" => match decode(value)
                .strip_prefix(TOKEN_PREFIX)
                .and_then(|n| n.parse().ok())
            {
                Some(offset) => params.offset = offset,
                None => params.bad_token = true,
            },
            _ => {}
        }
    }
    params
}

/// Recognises the benchmark's two filter shapes (`data::BUCKETS` buckets, RowKeys `r%08d`).
fn filter(f: &str) -> Filter {
    let f = f.trim();
    if f.is_empty() {
        return Filter::All;
    }
    if let Some(n) = f.strip_prefix("Bucket eq ") {
        return n.trim().parse().map_or(Filter::Other, Filter::Bucket);
    }
    let bound = |op: &str| -> Option<u64> {
        let start = f.find(op)? + op.len();
        let (value, _) = quoted(&f[start..])?;
        value.strip_prefix('r')?.parse().ok()
    };
    match (bound("RowKey ge "), bound("RowKey lt ")) {
        (Some(from), Some(to)) => Filter::RowKeyRange { from, to },
        _ => Filter::Other,
    }
}

/// One operation of a `$batch` change set, from its request line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchOperation<'a> {
    pub method: &'a str,
    pub table: &'a str,
}

/// The operations of a `$batch` body, in order: one per `METHOD URL HTTP/1.1` request line of
/// its parts (the entity bodies are JSON on one line and never end that way).
pub fn batch_operations(body: &[u8]) -> Vec<BatchOperation<'_>> {
    const REQUEST_LINE_END: &[u8] = b" HTTP/1.1\r\n";
    memchr::memmem::find_iter(body, REQUEST_LINE_END)
        .filter_map(|end| {
            let start = memchr::memrchr(b'\n', &body[..end]).map_or(0, |i| i + 1);
            let line = std::str::from_utf8(&body[start..end]).ok()?;
            let (method, url) = line.split_once(' ')?;
            let path = url.split(['?', '(']).next().unwrap_or("");
            let table = path.rsplit('/').next().unwrap_or("");
            Some(BatchOperation { method, table })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merge() -> Method {
        Method::from_bytes(b"MERGE").unwrap()
    }

    #[test]
    fn routes_every_request_the_benchmark_sends() {
        let r = |m: &Method, p: &'static str, q: Option<&'static str>| route(m, p, q);
        assert_eq!(r(&Method::GET, "/_health", None), Route::Health);
        assert_eq!(
            r(&Method::POST, "/devstoreaccount1/Tables", None),
            Route::CreateTable
        );
        assert_eq!(
            r(&Method::GET, "/devstoreaccount1/Tables", None),
            Route::ListTables
        );
        assert_eq!(
            r(
                &Method::DELETE,
                "/devstoreaccount1/Tables('benchins1')",
                None
            ),
            Route::DeleteTable("benchins1".into())
        );
        assert_eq!(
            r(&Method::POST, "/devstoreaccount1/$batch", None),
            Route::Batch
        );
        assert_eq!(
            r(&Method::POST, "/devstoreaccount1/benchins1", None),
            Route::Insert("benchins1".into())
        );
        let entity = "/devstoreaccount1/tb1(PartitionKey='p00001',RowKey='r00000002')";
        assert_eq!(
            r(&Method::GET, entity, None),
            Route::ReadEntity {
                table: "tb1".into(),
                partition_key: "p00001".into(),
                row_key: "r00000002".into()
            }
        );
        assert_eq!(r(&Method::PUT, entity, None), Route::UpdateEntity);
        assert_eq!(r(&merge(), entity, None), Route::UpdateEntity);
        assert_eq!(r(&Method::PATCH, entity, None), Route::UpdateEntity);
        assert_eq!(
            r(&Method::DELETE, entity, None),
            Route::DeleteEntity("tb1".into())
        );
        // Percent-encoded quotes and escaped quotes in keys.
        assert_eq!(
            r(
                &Method::GET,
                "/a/tb1(PartitionKey=%27it''s%27,RowKey=%27x%27)",
                None
            ),
            Route::ReadEntity {
                table: "tb1".into(),
                partition_key: "it's".into(),
                row_key: "x".into()
            }
        );
        let Route::Query { table, query } = r(
            &Method::GET,
            "/devstoreaccount1/tb1()",
            Some("$filter=Bucket%20eq%207&NextPartitionKey=floor%211000&NextRowKey=floor%211000"),
        ) else {
            panic!("not a query");
        };
        assert_eq!(table, "tb1");
        assert_eq!(query.filter, Filter::Bucket(7));
        assert_eq!(query.offset, 1000);
        assert!(!query.bad_token);
    }

    #[test]
    fn anything_else_is_unknown_or_an_unsupported_verb() {
        let cases = [
            (Method::GET, "/metrics", Route::Unknown),
            (Method::GET, "/", Route::Unknown),
            (Method::GET, "/a/", Route::Unknown),
            (Method::GET, "/a/1bad", Route::Unknown),
            (Method::GET, "/a/tb1(PartitionKey='p')", Route::Unknown),
            (Method::PUT, "/a/Tables", Route::UnsupportedVerb),
            (Method::GET, "/a/$batch", Route::UnsupportedVerb),
            (Method::POST, "/a/tb1()", Route::UnsupportedVerb),
            (Method::POST, "/_health", Route::UnsupportedVerb),
        ];
        for (method, path, expected) in cases {
            assert_eq!(route(&method, path, None), expected, "{method} {path}");
        }
        let Route::Query { query, .. } =
            route(&Method::GET, "/a/tb1()", Some("NextPartitionKey=1!8!cDAx"))
        else {
            panic!("not a query");
        };
        assert!(query.bad_token);
    }

    #[test]
    fn recognises_the_benchmarks_filters() {
        assert_eq!(filter(""), Filter::All);
        assert_eq!(filter("Bucket eq 42"), Filter::Bucket(42));
        assert_eq!(
            filter("PartitionKey eq 'p00003' and RowKey ge 'r00000010' and RowKey lt 'r00000110'"),
            Filter::RowKeyRange { from: 10, to: 110 }
        );
        assert_eq!(filter("Name eq 'x'"), Filter::Other);
        assert_eq!(filter("RowKey ge 'a' and RowKey lt 'b'"), Filter::Other);
        assert_eq!(filter("Bucket eq x"), Filter::Other);
        let q = query_params("$top=5&$filter=Bucket%20eq%201&other=1");
        assert_eq!((q.top, q.filter, q.offset), (Some(5), Filter::Bucket(1), 0));
    }

    #[test]
    fn finds_each_operation_of_a_change_set() {
        let es = vec![
            crate::data::entity_json("p", "1", 1, 0),
            crate::data::entity_json("p", "2", 2, 0),
            crate::data::entity_json("p", "3", 3, 0),
        ];
        let (_, body) =
            crate::data::batch_insert_body("http://127.0.0.1:1/devstoreaccount1", "tbl1", &es);
        let ops = batch_operations(body.as_bytes());
        assert_eq!(
            ops,
            vec![
                BatchOperation {
                    method: "POST",
                    table: "tbl1"
                };
                3
            ]
        );
        let body = b"--b\r\n\r\nDELETE http://h/a/tb9(PartitionKey='p',RowKey='r') HTTP/1.1\r\nIf-Match: *\r\n\r\n\r\n--b--\r\n";
        assert_eq!(
            batch_operations(body),
            vec![BatchOperation {
                method: "DELETE",
                table: "tb9"
            }]
        );
        assert!(batch_operations(b"no operations here").is_empty());
    }
}
