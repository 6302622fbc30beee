//! (method, resource, query, headers) → the REST operation, one variant per operation.
//! Shared by top-level requests and `$batch` sub-requests.

use super::error::{ApiError, ErrorCode};
use super::uri::{QueryParams, Resource};
use crate::model::entity::parse_etag;
use crate::model::IfMatch;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntityRef {
    pub table: String,
    pub partition_key: String,
    pub row_key: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    GetServiceProperties,
    SetServiceProperties,
    GetServiceStats,
    QueryTables,
    GetTable { table: String },
    CreateTable,
    DeleteTable { table: String },
    GetTableAcl { table: String },
    SetTableAcl { table: String },
    QueryEntities { table: String },
    GetEntity(EntityRef),
    InsertEntity { table: String },
    UpdateEntity(EntityRef, IfMatch),
    MergeEntity(EntityRef, IfMatch),
    DeleteEntity(EntityRef, IfMatch),
    InsertOrReplaceEntity(EntityRef),
    InsertOrMergeEntity(EntityRef),
    Batch,
    BelowTable(Misplaced),
}

/// A request below a table's name (`/<table>/Tables`, …), [`Operation::BelowTable`]: a
/// service URL that ends with a table name. `target` is what the SDK meant, for the shapes
/// Azure's answers are known of ([`MisplacedOperation`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Misplaced {
    pub table: String,
    pub target: Option<MisplacedOperation>,
}

/// What a request below a table's name meant, for the shapes the SDKs send when their service
/// URL ends with a table name (`TableEndpoint=…/devstoreaccount1/people`). Recorded answers:
/// the Python `azure-data-tables` suite's `test_client_with_url_ends_with_table_name`
/// (Storage, 2024 and 2026: `POST /<t>/Tables`, `DELETE /<t>/Tables('<t>')`) and the .NET
/// suite's `ThrowsWithTableNameInUri` (`GET /<t>/Tables` too); the answers themselves are in
/// `protocol::dialect::below_table_refusal`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MisplacedOperation {
    /// `POST /<t>/Tables`.
    CreateTable,
    /// `GET /<t>/Tables`.
    QueryTables,
    /// `DELETE /<t>/Tables('<name>')`.
    DeleteTable,
}

impl MisplacedOperation {
    /// Table storage's answer once it found table `table` of `account` (a missing one is 404
    /// `TableNotFound`), as recorded by the Python suite's
    /// `test_client_with_url_ends_with_table_name` (2024-05-03) and, for Query Tables, the
    /// .NET suite's `ThrowsWithTableNameInUri`: Create Table reads its body as an entity of
    /// the table and finds no keys (400 `PropertiesNeedValue`), Delete Table finds a key
    /// predicate for a resource with two keys (400 `InvalidInput`, naming
    /// `<account>.<table>`), Query Tables navigates into an entity set (501 `NotImplemented`).
    /// The Python SDK adds its account-URL hint to the first two.
    pub fn storage_error(self, account: &str, table: &str) -> ApiError {
        let error = match self {
            MisplacedOperation::CreateTable => ApiError::new(ErrorCode::PropertiesNeedValue),
            MisplacedOperation::DeleteTable => ApiError::with_message(
                ErrorCode::InvalidInput,
                format!(
                    "The number of keys specified in the URI does not match number of key \
                     properties for the resource '{account}.{table}'."
                ),
            ),
            MisplacedOperation::QueryTables => ApiError::new(ErrorCode::NotImplemented),
        };
        error.with_cause(super::dialect::table_in_service_url_cause(table))
    }

    /// What `method` on `rest` (the path after the table's name) meant, if it is one of the
    /// recorded shapes.
    fn of(method: &str, rest: &str) -> Option<MisplacedOperation> {
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let tables = rest == "Tables" || rest == "Tables()";
        let table_entry = rest.starts_with("Tables('") && rest.ends_with("')");
        match method {
            "POST" if tables => Some(MisplacedOperation::CreateTable),
            "GET" if tables => Some(MisplacedOperation::QueryTables),
            "DELETE" if table_entry => Some(MisplacedOperation::DeleteTable),
            _ => None,
        }
    }
}

impl Operation {
    /// The table an operation addresses, if any.
    pub fn table(&self) -> Option<&str> {
        match self {
            Operation::GetTable { table }
            | Operation::DeleteTable { table }
            | Operation::GetTableAcl { table }
            | Operation::SetTableAcl { table }
            | Operation::QueryEntities { table }
            | Operation::InsertEntity { table }
            | Operation::BelowTable(Misplaced { table, .. }) => Some(table),
            Operation::GetEntity(e)
            | Operation::UpdateEntity(e, _)
            | Operation::MergeEntity(e, _)
            | Operation::DeleteEntity(e, _)
            | Operation::InsertOrReplaceEntity(e)
            | Operation::InsertOrMergeEntity(e) => Some(&e.table),
            _ => None,
        }
    }

    /// Whether the operation changes anything (refused on the read-only secondary endpoint).
    pub fn is_write(&self) -> bool {
        !matches!(
            self,
            Operation::GetServiceProperties
                | Operation::GetServiceStats
                | Operation::QueryTables
                | Operation::GetTable { .. }
                | Operation::GetTableAcl { .. }
                | Operation::QueryEntities { .. }
                | Operation::GetEntity(_)
                | Operation::BelowTable(Misplaced {
                    target: Some(MisplacedOperation::QueryTables) | None,
                    ..
                })
        )
    }
}

/// The request headers operation parsing looks at.
#[derive(Debug, Clone, Copy, Default)]
pub struct OperationHeaders<'a> {
    pub x_http_method: &'a [&'a str],
    pub if_match: Option<&'a str>,
    pub if_none_match: Option<&'a str>,
}

fn method_not_allowed() -> ApiError {
    ApiError::new(ErrorCode::MethodNotAllowed)
}

fn parse_if_match(value: &str) -> Result<IfMatch, ApiError> {
    let v = value.trim();
    if v == "*" {
        return Ok(IfMatch::Any);
    }
    if let Some(timestamp) = parse_etag(v) {
        return Ok(IfMatch::ETag(timestamp));
    }
    // Any other weak ETag is well formed but never current: 412 when the write runs. Only
    // values that are not ETags at all are refused here.
    if is_weak_etag(v) {
        return Ok(IfMatch::Unmatchable);
    }
    Err(ApiError::with_message(
            ErrorCode::InvalidInput,
            format!("The etag value '{v}' specified in one of the request headers is not valid. Please make sure only one etag value is specified and is valid."),
    ))
}

/// `W/"…"` (either letter case of the `W`) whose quoted part is visible ASCII other than `"`
/// (RFC 9110 `etagc` without obs-text: a value that is not text is no ETag).
fn is_weak_etag(v: &str) -> bool {
    let Some(rest) = v.strip_prefix("W/").or_else(|| v.strip_prefix("w/")) else {
        return false;
    };
    rest.len() >= 2
        && rest.starts_with('"')
        && rest.ends_with('"')
        && rest[1..rest.len() - 1]
            .bytes()
            .all(|b| b == 0x21 || (0x23..=0x7E).contains(&b))
}

pub fn parse_operation(
    method: &str,
    resource: Resource,
    query: &QueryParams,
    headers: OperationHeaders<'_>,
) -> Result<Operation, ApiError> {
    let method = match headers.x_http_method {
        [] => method.to_ascii_uppercase(),
        [tunnelled] => {
            if !method.eq_ignore_ascii_case("POST") {
                return Err(ApiError::new(ErrorCode::XMethodNotUsingPost));
            }
            let t = tunnelled.trim().to_ascii_uppercase();
            if !matches!(t.as_str(), "MERGE" | "PUT" | "DELETE" | "PATCH") {
                return Err(ApiError::new(ErrorCode::XMethodIncorrectValue));
            }
            // Tunnelling applies to entity URLs only; POST /{table} is always an insert.
            if matches!(resource, Resource::Entity { .. }) {
                t
            } else {
                "POST".to_string()
            }
        }
        _ => return Err(ApiError::new(ErrorCode::XMethodIncorrectCount)),
    };
    if !matches!(
        method.as_str(),
        "GET" | "HEAD" | "PUT" | "POST" | "DELETE" | "MERGE" | "PATCH" | "OPTIONS"
    ) {
        return Err(ApiError::new(ErrorCode::UnsupportedHttpVerb));
    }
    let comp = query.get_ignore_case("comp");
    let restype = query.get_ignore_case("restype");
    Ok(match resource {
        Resource::Service => match (method.as_str(), restype, comp) {
            ("GET", Some("service"), Some("properties")) => Operation::GetServiceProperties,
            ("PUT", Some("service"), Some("properties")) => Operation::SetServiceProperties,
            ("GET", Some("service"), Some("stats")) => Operation::GetServiceStats,
            (_, Some("service"), Some("properties" | "stats")) => return Err(method_not_allowed()),
            (_, Some(_), None) => {
                return Err(ApiError::new(ErrorCode::MissingRequiredQueryParameter))
            }
            (_, Some(_), Some(_)) | (_, None, Some(_)) => {
                return Err(ApiError::new(ErrorCode::InvalidQueryParameterValue))
            }
            (_, None, None) => return Err(ApiError::new(ErrorCode::InvalidUri)),
        },
        Resource::Tables => match method.as_str() {
            "GET" => Operation::QueryTables,
            "POST" => Operation::CreateTable,
            _ => return Err(method_not_allowed()),
        },
        Resource::Table(table) => match method.as_str() {
            "GET" => Operation::GetTable { table },
            "DELETE" => Operation::DeleteTable { table },
            _ => return Err(method_not_allowed()),
        },
        Resource::EntitySet(table) => match (method.as_str(), comp) {
            ("GET" | "HEAD", Some(c)) if c.eq_ignore_ascii_case("acl") => {
                Operation::GetTableAcl { table }
            }
            ("PUT", Some(c)) if c.eq_ignore_ascii_case("acl") => Operation::SetTableAcl { table },
            ("POST", _) => Operation::InsertEntity { table },
            ("GET", None) => Operation::QueryEntities { table },
            _ => return Err(method_not_allowed()),
        },
        Resource::EntityQuery(table) => match method.as_str() {
            "GET" => Operation::QueryEntities { table },
            // Interop: the legacy .NET libraries (WindowsAzure.Storage,
            // Microsoft.Azure.Cosmos.Table) address Insert Entity as `POST /{table}()`
            // (`TableOperation.GenerateRequestURI` appends "()" for inserts).
            "POST" => Operation::InsertEntity { table },
            _ => return Err(method_not_allowed()),
        },
        Resource::Entity {
            table,
            partition_key,
            row_key,
        } => {
            let entity = EntityRef {
                table,
                partition_key,
                row_key,
            };
            let writes = matches!(method.as_str(), "PUT" | "MERGE" | "PATCH" | "DELETE");
            if writes && headers.if_none_match.is_some() {
                return Err(ApiError::with_message(
                    ErrorCode::InvalidInput,
                    format!(
                        "If-None-Match HTTP header cannot be specified for {method} operations."
                    ),
                ));
            }
            let if_match = headers.if_match.map(parse_if_match).transpose()?;
            match (method.as_str(), if_match) {
                ("GET", _) => Operation::GetEntity(entity),
                ("PUT", Some(m)) => Operation::UpdateEntity(entity, m),
                ("PUT", None) => Operation::InsertOrReplaceEntity(entity),
                ("MERGE" | "PATCH", Some(m)) => Operation::MergeEntity(entity, m),
                ("MERGE" | "PATCH", None) => Operation::InsertOrMergeEntity(entity),
                ("DELETE", Some(m)) => Operation::DeleteEntity(entity, m),
                // [emu] Azure docs: "Delete Entity" make If-Match required; Azure's code for
                // a DELETE without it is unverified; the table service reports request
                // errors as InvalidInput.
                ("DELETE", None) => {
                    return Err(ApiError::with_message(
                        ErrorCode::InvalidInput,
                        "The If-Match header is required for DELETE operations.",
                    ))
                }
                _ => return Err(method_not_allowed()),
            }
        }
        Resource::Batch => match method.as_str() {
            "POST" => Operation::Batch,
            _ => return Err(method_not_allowed()),
        },
        Resource::BelowTable { table, rest } => Operation::BelowTable(Misplaced {
            target: MisplacedOperation::of(&method, &rest),
            table,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::uri::parse_resource;

    fn op(
        method: &str,
        path: &str,
        query: &str,
        h: OperationHeaders,
    ) -> Result<Operation, ErrorCode> {
        let q = QueryParams::parse(Some(query)).unwrap();
        parse_operation(method, parse_resource(path).unwrap(), &q, h).map_err(|e| e.code)
    }

    fn e(t: &str) -> EntityRef {
        EntityRef {
            table: t.into(),
            partition_key: "a".into(),
            row_key: "b".into(),
        }
    }

    #[test]
    fn routing_table() {
        let none = OperationHeaders::default();
        let star = OperationHeaders {
            if_match: Some("*"),
            ..Default::default()
        };
        let ent = "/t(PartitionKey='a',RowKey='b')";
        type Case<'a> = (
            &'a str,
            &'a str,
            &'a str,
            OperationHeaders<'a>,
            Result<Operation, ErrorCode>,
        );
        let cases: Vec<Case> = vec![
            ("GET", "/Tables", "", none, Ok(Operation::QueryTables)),
            ("POST", "/Tables", "", none, Ok(Operation::CreateTable)),
            ("PUT", "/Tables", "", none, Err(ErrorCode::MethodNotAllowed)),
            (
                "POST",
                "/people/Tables",
                "",
                none,
                Ok(Operation::BelowTable(Misplaced {
                    table: "people".into(),
                    target: Some(MisplacedOperation::CreateTable),
                })),
            ),
            (
                "GET",
                "/people/Tables()",
                "",
                none,
                Ok(Operation::BelowTable(Misplaced {
                    table: "people".into(),
                    target: Some(MisplacedOperation::QueryTables),
                })),
            ),
            (
                "DELETE",
                "/people/Tables('people')",
                "",
                none,
                Ok(Operation::BelowTable(Misplaced {
                    table: "people".into(),
                    target: Some(MisplacedOperation::DeleteTable),
                })),
            ),
            (
                "PUT",
                "/people/Tables",
                "",
                none,
                Ok(Operation::BelowTable(Misplaced {
                    table: "people".into(),
                    target: None,
                })),
            ),
            (
                "DELETE",
                "/Tables('t')",
                "",
                none,
                Ok(Operation::DeleteTable { table: "t".into() }),
            ),
            (
                "POST",
                "/t",
                "",
                none,
                Ok(Operation::InsertEntity { table: "t".into() }),
            ),
            (
                "GET",
                "/t()",
                "",
                none,
                Ok(Operation::QueryEntities { table: "t".into() }),
            ),
            (
                "POST",
                "/t()",
                "",
                none,
                Ok(Operation::InsertEntity { table: "t".into() }),
            ),
            ("PUT", "/t()", "", none, Err(ErrorCode::MethodNotAllowed)),
            (
                "GET",
                "/t",
                "",
                none,
                Ok(Operation::QueryEntities { table: "t".into() }),
            ),
            (
                "GET",
                "/t",
                "comp=acl",
                none,
                Ok(Operation::GetTableAcl { table: "t".into() }),
            ),
            (
                "PUT",
                "/t",
                "comp=acl",
                none,
                Ok(Operation::SetTableAcl { table: "t".into() }),
            ),
            ("GET", ent, "", none, Ok(Operation::GetEntity(e("t")))),
            (
                "PUT",
                ent,
                "",
                none,
                Ok(Operation::InsertOrReplaceEntity(e("t"))),
            ),
            (
                "PUT",
                ent,
                "",
                star,
                Ok(Operation::UpdateEntity(e("t"), IfMatch::Any)),
            ),
            (
                "MERGE",
                ent,
                "",
                none,
                Ok(Operation::InsertOrMergeEntity(e("t"))),
            ),
            (
                "PATCH",
                ent,
                "",
                star,
                Ok(Operation::MergeEntity(e("t"), IfMatch::Any)),
            ),
            (
                "DELETE",
                ent,
                "",
                star,
                Ok(Operation::DeleteEntity(e("t"), IfMatch::Any)),
            ),
            ("DELETE", ent, "", none, Err(ErrorCode::InvalidInput)),
            (
                "POST",
                ent,
                "",
                OperationHeaders {
                    x_http_method: &["MERGE"],
                    ..star
                },
                Ok(Operation::MergeEntity(e("t"), IfMatch::Any)),
            ),
            (
                "PUT",
                ent,
                "",
                OperationHeaders {
                    x_http_method: &["MERGE"],
                    ..star
                },
                Err(ErrorCode::XMethodNotUsingPost),
            ),
            (
                "POST",
                ent,
                "",
                OperationHeaders {
                    x_http_method: &["GET"],
                    ..star
                },
                Err(ErrorCode::XMethodIncorrectValue),
            ),
            (
                "POST",
                ent,
                "",
                OperationHeaders {
                    x_http_method: &["MERGE", "PUT"],
                    ..star
                },
                Err(ErrorCode::XMethodIncorrectCount),
            ),
            (
                "PUT",
                ent,
                "",
                OperationHeaders {
                    if_match: Some("bogus"),
                    ..none
                },
                Err(ErrorCode::InvalidInput),
            ),
            (
                "DELETE",
                ent,
                "",
                OperationHeaders {
                    if_none_match: Some("*"),
                    ..star
                },
                Err(ErrorCode::InvalidInput),
            ),
            ("POST", "/$batch", "", none, Ok(Operation::Batch)),
            (
                "GET",
                "/",
                "restype=service&comp=properties",
                none,
                Ok(Operation::GetServiceProperties),
            ),
            ("GET", "/", "", none, Err(ErrorCode::InvalidUri)),
            (
                "FOO",
                "/Tables",
                "",
                none,
                Err(ErrorCode::UnsupportedHttpVerb),
            ),
        ];
        for (method, path, query, headers, expected) in cases {
            assert_eq!(
                op(method, path, query, headers),
                expected,
                "{method} {path}?{query}"
            );
        }
    }

    #[test]
    fn if_match_forms() {
        let ok = |v: &str| parse_if_match(v).unwrap();
        assert_eq!(ok("*"), IfMatch::Any);
        assert!(matches!(
            ok("W/\"datetime'2020-01-01T00%3A00%3A00Z'\""),
            IfMatch::ETag(_)
        ));
        for weak in ["W/\"wrong\"", "w/\"wrong\"", "W/\"\"", "W/\"datetime'x'\""] {
            assert_eq!(ok(weak), IfMatch::Unmatchable, "{weak}");
        }
        for bad in [
            "bogus",
            "\"0x8D\"",
            "W/wrong",
            "W/\"a\"b\"",
            "W/\"",
            "W/\"\u{e9}\"",
            "",
        ] {
            assert_eq!(
                parse_if_match(bad).unwrap_err().code,
                ErrorCode::InvalidInput,
                "{bad}"
            );
        }
    }

    proptest::proptest! {
        /// Every weak ETag of visible ASCII is accepted (it may only fail to match, 412);
        /// anything without the `W/"…"` form, other than `*`, is 400 InvalidInput.
        #[test]
        fn if_match_is_a_weak_etag_or_invalid(inner in "[!#-~]{0,40}", other in "[ -~]{0,40}") {
            for w in ["W/", "w/"] {
                let value = format!("{w}\"{inner}\"");
                proptest::prop_assert!(parse_if_match(&value).is_ok(), "{}", value);
            }
            let weak_form = other.trim().len() >= 4
                && (other.trim().starts_with("W/\"") || other.trim().starts_with("w/\""));
            if !weak_form && other.trim() != "*" {
                proptest::prop_assert!(parse_if_match(&other).is_err());
            }
        }
    }
}
