//! Percent-encoding for request URLs, as a well-behaved client writes them: everything but
//! RFC 3986's unreserved characters is encoded (query values, continuation tokens, SAS fields),
//! and keys in `Table(PartitionKey='…',RowKey='…')` keep their quotes, doubled.

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

/// Encoded: everything but ALPHA / DIGIT / `-` / `.` / `_` / `~`.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// [`COMPONENT`] less `'`, which key predicates keep as is.
const KEY: &AsciiSet = &COMPONENT.remove(b'\'');

/// A query value or path segment.
pub fn encode(s: &str) -> String {
    utf8_percent_encode(s, COMPONENT).to_string()
}

/// A key inside a key predicate: quotes doubled (OData string literal), `'` itself kept.
pub fn encode_key(key: &str) -> String {
    utf8_percent_encode(&key.replace('\'', "''"), KEY).to_string()
}

/// `/Table(PartitionKey='…',RowKey='…')` below the account.
pub fn entity_url(table: &str, pk: &str, rk: &str) -> String {
    format!(
        "/{table}(PartitionKey='{}',RowKey='{}')",
        encode_key(pk),
        encode_key(rk)
    )
}
