//! A Table endpoint over HTTP as an [`Endpoint`]: tablestore, Azurite or an Azure account,
//! given as a connection string, a URL with a SAS, or a URL with an account key. Requests are
//! the documented REST operations (Query Tables, Create Table, Query Entities with
//! continuation headers, Entity Group Transactions, Get/Set Table ACL), signed with Shared Key
//! Lite through the crate's own signer, or carrying the SAS.

use std::time::Duration;

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use reqwest::blocking::{Client, Response};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::sentences::{status_text, unreachable, what_to_check};
use super::{jsonl, DataError, Endpoint, TableAcl, WriteError};
use crate::auth::canonical;
use crate::config::{DEV_ACCOUNT, DEV_ACCOUNT_KEY};
use crate::model::{EdmDateTime, Entity, EntityView, WriteKind, WriteOp};
use crate::protocol::json::write_entity_body;
use crate::protocol::uri::{entity_path, table_segment};

/// The service version requests are sent with.
const VERSION: &str = "2019-02-02";
const ACCEPT: &str = "application/json;odata=minimalmetadata";

/// Query values: everything but unreserved characters is percent-encoded.
const QUERY: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// How requests prove who they are.
#[derive(Clone)]
pub(crate) enum Credential {
    /// Shared Key Lite with the account key (decoded).
    Key(Vec<u8>),
    /// A SAS token (the query string, without `?`).
    Sas(String),
}

/// Where a Table endpoint is and how to sign for it.
#[derive(Clone)]
pub(crate) struct RemoteAccount {
    /// `scheme://host[:port]`.
    pub(crate) origin: String,
    /// The path before table names: `/devstoreaccount1` in path style, empty in host style.
    pub(crate) prefix: String,
    pub(crate) account: String,
    pub(crate) credential: Credential,
    /// The settings that gave the credential, for what to check after a refusal.
    pub(crate) given_by: String,
}

impl RemoteAccount {
    /// A connection string: `AccountName`, `AccountKey` or `SharedAccessSignature`,
    /// `TableEndpoint` or `DefaultEndpointsProtocol` + `EndpointSuffix`, or
    /// `UseDevelopmentStorage=true`.
    pub(crate) fn from_connection_string(text: &str) -> Result<RemoteAccount, DataError> {
        let mut get = std::collections::HashMap::new();
        for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, value) = part.split_once('=').ok_or_else(|| {
                DataError::new(format!(
                    "the connection string part {part:?} is not NAME=VALUE"
                ))
            })?;
            get.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
        }
        if get
            .get("usedevelopmentstorage")
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
        {
            return RemoteAccount::from_url(
                &format!("http://127.0.0.1:10002/{DEV_ACCOUNT}"),
                None,
                Some(DEV_ACCOUNT_KEY),
            );
        }
        let account = get.get("accountname").cloned();
        let endpoint = match (get.get("tableendpoint"), &account) {
            (Some(e), _) => e.clone(),
            (None, Some(account)) => format!(
                "{}://{account}.table.{}",
                get.get("defaultendpointsprotocol")
                    .map_or("https", String::as_str),
                get.get("endpointsuffix")
                    .map_or("core.windows.net", String::as_str)
            ),
            (None, None) => {
                return Err(DataError::new(
                    "the connection string names neither TableEndpoint nor AccountName",
                ))
            }
        };
        let mut target = RemoteAccount::from_url(
            &endpoint,
            get.get("sharedaccesssignature").map(String::as_str),
            get.get("accountkey").map(String::as_str),
        )?;
        if let Some(account) = account {
            target.account = account;
        }
        target.given_by = match target.credential {
            Credential::Key(_) => "the connection string's AccountName and AccountKey",
            Credential::Sas(_) => "the connection string's SharedAccessSignature",
        }
        .to_string();
        Ok(target)
    }

    /// A table service URL (`http://127.0.0.1:10002/devstoreaccount1`,
    /// `https://acct.table.core.windows.net`), possibly with a SAS as its query, and either a
    /// SAS or an account key. The account is the first path segment, or else the first label
    /// of the host name.
    pub(crate) fn from_url(
        url: &str,
        sas: Option<&str>,
        key: Option<&str>,
    ) -> Result<RemoteAccount, DataError> {
        let (url, url_sas) = match url.split_once('?') {
            Some((u, q)) => (u, Some(q)),
            None => (url, None),
        };
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| DataError::new(format!("{url:?} is not an http:// or https:// URL")))?;
        if !matches!(scheme, "http" | "https") {
            return Err(DataError::new(format!(
                "{url:?} is not an http:// or https:// URL"
            )));
        }
        let (host, path) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, ""),
        };
        // A URL naming a table (`…/account/Table`) is taken as the account's URL.
        let mut segments = path.split('/').filter(|s| !s.is_empty());
        let (prefix, account) = match segments.next() {
            Some(first) => (format!("/{first}"), first.to_string()),
            None => (
                String::new(),
                host.split('.').next().unwrap_or_default().to_string(),
            ),
        };
        let given_by = match (sas, url_sas, key) {
            (Some(_), _, _) => "--sas",
            (None, Some(_), _) => "the SAS in --url",
            _ => "--url and --account-key",
        }
        .to_string();
        let credential = match (sas.or(url_sas), key) {
            (Some(sas), _) => Credential::Sas(sas.trim_start_matches('?').to_string()),
            (None, Some(key)) => {
                use base64::Engine as _;
                Credential::Key(
                    base64::engine::general_purpose::STANDARD
                        .decode(key.trim())
                        .map_err(|_| DataError::new("the account key is not base64"))?,
                )
            }
            (None, None) => {
                return Err(DataError::new(
                    "no credential: give an account key or a SAS with the endpoint",
                ))
            }
        };
        Ok(RemoteAccount {
            origin: format!("{scheme}://{host}"),
            prefix,
            account,
            credential,
            given_by,
        })
    }
}

/// One account of a Table endpoint.
pub(crate) struct RemoteEndpoint {
    target: RemoteAccount,
    client: Client,
    /// Whether the service's table names are case-sensitive, as Cosmos DB for Table's are:
    /// learnt from its first Query Tables answer (Cosmos answers without the `x-ms-version`
    /// header every Table storage answer carries; docs/cosmos.md, "Response headers").
    case_sensitive_names: std::cell::Cell<bool>,
}

#[derive(Deserialize)]
struct Page<'a> {
    #[serde(borrow)]
    value: Vec<&'a RawValue>,
}

#[derive(Deserialize)]
struct TableEntry {
    #[serde(rename = "TableName")]
    table_name: String,
}

#[derive(Deserialize)]
struct TablePage {
    value: Vec<TableEntry>,
}

#[derive(Deserialize)]
struct Stamp<'a> {
    #[serde(rename = "Timestamp", borrow)]
    timestamp: Option<&'a str>,
}

impl RemoteEndpoint {
    pub(crate) fn new(target: RemoteAccount) -> Result<RemoteEndpoint, DataError> {
        let client = Client::builder()
            .timeout(Duration::from_secs(120))
            .build()
            .map_err(|e| DataError::new(format!("cannot start the HTTP client: {e}")))?;
        Ok(RemoteEndpoint {
            target,
            client,
            case_sensitive_names: std::cell::Cell::new(false),
        })
    }

    /// Sends a request to `path` (below the account, already percent-encoded) with the
    /// query pairs (encoded here).
    fn send(
        &self,
        method: &str,
        path: &str,
        query: &[(&str, &str)],
        content_type: Option<&str>,
        body: Vec<u8>,
    ) -> Result<(u16, reqwest::header::HeaderMap, Vec<u8>), DataError> {
        let mut raw_query: Vec<String> = query
            .iter()
            .map(|(k, v)| format!("{k}={}", utf8_percent_encode(v, QUERY)))
            .collect();
        if let Credential::Sas(sas) = &self.target.credential {
            raw_query.push(sas.clone());
        }
        let raw_query = raw_query.join("&");
        let raw_path = format!("{}{path}", self.target.prefix);
        let mut url = format!("{}{raw_path}", self.target.origin);
        if !raw_query.is_empty() {
            url.push('?');
            url.push_str(&raw_query);
        }
        let method = reqwest::Method::from_bytes(method.as_bytes())
            .map_err(|_| DataError::new(format!("bad method {method}")))?;
        let date = chrono::Utc::now()
            .format("%a, %d %b %Y %H:%M:%S GMT")
            .to_string();
        let mut request = self
            .client
            .request(method, &url)
            .header("x-ms-version", VERSION)
            .header("x-ms-date", &date)
            .header("Accept", ACCEPT)
            .header("DataServiceVersion", "3.0")
            .header("MaxDataServiceVersion", "3.0;NetFx");
        if let Some(ct) = content_type {
            request = request.header("Content-Type", ct);
        }
        if let Credential::Key(key) = &self.target.credential {
            let query = (!raw_query.is_empty()).then_some(raw_query.as_str());
            request = request.header(
                "Authorization",
                canonical::shared_key_lite_authorization(
                    &self.target.account,
                    key,
                    &date,
                    &raw_path,
                    query,
                ),
            );
        }
        let response: Response = request
            .body(body)
            .send()
            .map_err(|e| self.unreachable(&e))?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.bytes().map_err(|e| self.unreachable(&e))?.to_vec();
        Ok((status, headers, body))
    }

    fn check(
        &self,
        what: &str,
        (status, headers, body): (u16, reqwest::header::HeaderMap, Vec<u8>),
    ) -> Result<(reqwest::header::HeaderMap, Vec<u8>), DataError> {
        if (200..300).contains(&status) {
            Ok((headers, body))
        } else {
            Err(DataError::new(self.refused(what, status, &body)))
        }
    }

    /// One sentence for a request that got no answer: the endpoint, why, what to check.
    fn unreachable(&self, e: &reqwest::Error) -> DataError {
        DataError::new(format!(
            "cannot reach {}: {}: check that the server runs and that the endpoint is right \
             (TableEndpoint in the connection string, or --url)",
            self.describe(),
            unreachable(e)
        ))
    }

    /// One sentence for an error answer to `what`: the endpoint, the service's status, code
    /// and message, and what to check.
    fn refused(&self, what: &str, status: u16, body: &[u8]) -> String {
        let mut sentence = format!(
            "{what} at {} failed: {}",
            self.describe(),
            status_text(status, body)
        );
        if let Some(check) = what_to_check(status, body, &self.target.given_by) {
            sentence.push_str("; ");
            sentence.push_str(&check);
        }
        sentence
    }

    fn batch_body(&self, table: &str, ops: &[WriteOp], boundary: &str) -> Vec<u8> {
        let changeset = format!("changeset_{boundary}");
        let mut out = Vec::with_capacity(ops.len() * 1200);
        out.extend_from_slice(
            format!(
                "--batch_{boundary}\r\nContent-Type: multipart/mixed; boundary={changeset}\r\n\r\n"
            )
            .as_bytes(),
        );
        let base = format!("{}{}", self.target.origin, self.target.prefix);
        for op in ops {
            let (method, url) = match op.kind {
                WriteKind::Insert => ("POST", format!("{base}/{}", table_segment(table))),
                WriteKind::InsertOrMerge | WriteKind::Merge => (
                    "MERGE",
                    format!(
                        "{base}/{}",
                        entity_path(table, &op.key.partition_key, &op.key.row_key)
                    ),
                ),
                _ => (
                    "PUT",
                    format!(
                        "{base}/{}",
                        entity_path(table, &op.key.partition_key, &op.key.row_key)
                    ),
                ),
            };
            out.extend_from_slice(
                format!(
                    "--{changeset}\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n\
                     {method} {url} HTTP/1.1\r\nContent-Type: application/json\r\nAccept: {ACCEPT}\r\n\
                     Prefer: return-no-content\r\nDataServiceVersion: 3.0\r\n\r\n"
                )
                .as_bytes(),
            );
            let entity = Entity {
                partition_key: op.key.partition_key.clone(),
                row_key: op.key.row_key.clone(),
                timestamp: EdmDateTime(0),
                properties: op.properties.clone(),
            };
            write_entity_body(&mut out, &EntityView::of(&entity), false);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(format!("--{changeset}--\r\n--batch_{boundary}--\r\n").as_bytes());
        out
    }
}

fn header(headers: &reqwest::header::HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// `'text'` as an OData string literal.
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

impl Endpoint for RemoteEndpoint {
    fn account(&self) -> &str {
        &self.target.account
    }

    fn describe(&self) -> String {
        format!("{}{}", self.target.origin, self.target.prefix)
    }

    fn list_tables(&self) -> Result<Vec<String>, DataError> {
        let mut names = Vec::new();
        let mut next: Option<String> = None;
        loop {
            let mut query = vec![];
            if let Some(n) = &next {
                query.push(("NextTableName", n.as_str()));
            }
            let (headers, body) = self.check(
                "listing tables",
                self.send("GET", "/Tables", &query, None, Vec::new())?,
            )?;
            let page: TablePage = serde_json::from_slice(&body).map_err(|e| {
                DataError::new(format!(
                    "the table list from {} is not JSON: {e}",
                    self.describe()
                ))
            })?;
            names.extend(page.value.into_iter().map(|t| t.table_name));
            self.case_sensitive_names
                .set(!headers.contains_key("x-ms-version"));
            next = header(&headers, "x-ms-continuation-NextTableName");
            if next.is_none() {
                return Ok(names);
            }
        }
    }

    fn find_table(&self, name: &str) -> Result<Option<String>, DataError> {
        let tables = self.list_tables()?;
        if tables.iter().any(|t| t == name) {
            return Ok(Some(name.to_string()));
        }
        if self.case_sensitive_names.get() {
            return Ok(None);
        }
        Ok(tables.into_iter().find(|t| t.eq_ignore_ascii_case(name)))
    }

    fn scan(
        &self,
        table: &str,
        filter: Option<&str>,
        after: Option<(&str, &str)>,
        visit: &mut dyn FnMut(Entity) -> Result<bool, DataError>,
    ) -> Result<(), DataError> {
        let resume = after.map(|(pk, rk)| {
            format!(
                "(PartitionKey gt {pk}) or (PartitionKey eq {pk} and RowKey gt {rk})",
                pk = literal(pk),
                rk = literal(rk)
            )
        });
        let filter = match (filter, resume) {
            (Some(f), Some(r)) => Some(format!("({f}) and ({r})")),
            (Some(f), None) => Some(f.to_string()),
            (None, r) => r,
        };
        let path = format!("/{}()", table_segment(table));
        let mut next: Option<(String, Option<String>)> = None;
        loop {
            let mut query: Vec<(&str, &str)> = Vec::new();
            if let Some(f) = &filter {
                query.push(("$filter", f));
            }
            if let Some((pk, rk)) = &next {
                query.push(("NextPartitionKey", pk));
                if let Some(rk) = rk {
                    query.push(("NextRowKey", rk));
                }
            }
            let (headers, body) = self.check(
                &format!("reading {table}"),
                self.send("GET", &path, &query, None, Vec::new())?,
            )?;
            let page: Page = serde_json::from_slice(&body)
                .map_err(|e| DataError::new(format!("a page of {table} is not JSON: {e}")))?;
            for raw in page.value {
                let mut entity = jsonl::decode_line(raw.get().as_bytes()).map_err(|m| {
                    DataError::new(format!(
                        "an entity of {table} from {}: {m}",
                        self.describe()
                    ))
                })?;
                if let Ok(Stamp { timestamp: Some(t) }) = serde_json::from_str::<Stamp>(raw.get()) {
                    entity.timestamp = EdmDateTime::parse(t).unwrap_or(EdmDateTime(0));
                }
                if !visit(entity)? {
                    return Ok(());
                }
            }
            next = header(&headers, "x-ms-continuation-NextPartitionKey")
                .map(|pk| (pk, header(&headers, "x-ms-continuation-NextRowKey")));
            if next.is_none() {
                return Ok(());
            }
        }
    }

    fn ensure_table(&self, table: &str) -> Result<(), DataError> {
        let body =
            serde_json::to_vec(&serde_json::json!({ "TableName": table })).unwrap_or_default();
        let response = self.send("POST", "/Tables", &[], Some("application/json"), body)?;
        if response.0 == 409 {
            return Ok(());
        }
        self.check(&format!("creating table {table}"), response)
            .map(|_| ())
    }

    fn table_acl(&self, table: &str) -> Result<TableAcl, DataError> {
        let response = self.send(
            "GET",
            &format!("/{}", table_segment(table)),
            &[("comp", "acl")],
            None,
            Vec::new(),
        )?;
        if response.0 == 501 {
            // Cosmos DB for Table has no stored access policies (docs/cosmos.md).
            return Ok(TableAcl::Unsupported(format!(
                "{} has no stored access policies (Get Table ACL answered {}, as Cosmos DB \
                 for Table does), so the export holds none",
                self.describe(),
                status_text(response.0, &response.2)
            )));
        }
        let (_, body) = self.check(&format!("reading the access policies of {table}"), response)?;
        let xml = String::from_utf8_lossy(&body).into_owned();
        Ok(if xml.contains("<SignedIdentifier>") {
            TableAcl::Policies(xml)
        } else {
            TableAcl::Empty
        })
    }

    fn set_table_acl(&self, table: &str, xml: &str) -> Result<(), DataError> {
        self.check(
            &format!("setting the access policies of {table}"),
            self.send(
                "PUT",
                &format!("/{}", table_segment(table)),
                &[("comp", "acl")],
                Some("application/xml"),
                xml.as_bytes().to_vec(),
            )?,
        )
        .map(|_| ())
    }

    fn write_batch(&self, table: &str, ops: &[WriteOp]) -> Result<(), WriteError> {
        let boundary = uuid::Uuid::new_v4().to_string();
        let body = self.batch_body(table, ops, &boundary);
        let (status, _, response) = self
            .send(
                "POST",
                "/$batch",
                &[],
                Some(&format!("multipart/mixed; boundary=batch_{boundary}")),
                body,
            )
            .map_err(|e| WriteError::Other(e.0))?;
        if !(200..300).contains(&status) {
            return Err(WriteError::Other(self.refused(
                &format!("writing to {table}"),
                status,
                &response,
            )));
        }
        // The change set answers with one failed operation, or every operation's success.
        let text = String::from_utf8_lossy(&response);
        let failed = text.split("HTTP/1.1 ").skip(1).find_map(|part| {
            let code: u16 = part.get(..3)?.parse().ok()?;
            (code >= 300).then_some((code, part))
        });
        match failed {
            None => Ok(()),
            Some((code, part)) => {
                // The operation's answer: status line, headers, then its error body.
                let body = match (part.find('{'), part.rfind('}')) {
                    (Some(open), Some(close)) if open < close => &part[open..=close],
                    _ => "",
                };
                let detail = status_text(code, body.as_bytes());
                if detail.contains("EntityAlreadyExists") {
                    // The message starts with the failed operation's index: "3:The specified…".
                    let index = part
                        .split("\"value\":\"")
                        .nth(1)
                        .and_then(|v| v.split(':').next())
                        .and_then(|i| i.parse().ok())
                        .unwrap_or(0);
                    Err(WriteError::Exists { index })
                } else {
                    Err(WriteError::Other(self.refused(
                        &format!("writing to {table}"),
                        code,
                        body.as_bytes(),
                    )))
                }
            }
        }
    }

    fn sync(&self) -> Result<(), DataError> {
        // Every acknowledged write of the service is durable.
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_strings_and_urls() {
        let t = RemoteAccount::from_connection_string(
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=AAAA;\
             TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;",
        )
        .unwrap();
        assert_eq!(t.origin, "http://127.0.0.1:10002");
        assert_eq!(t.prefix, "/devstoreaccount1");
        assert_eq!(t.account, "devstoreaccount1");
        let t = RemoteAccount::from_connection_string(
            "AccountName=acct;SharedAccessSignature=sv=2019&sig=x",
        )
        .unwrap();
        assert_eq!(t.origin, "https://acct.table.core.windows.net");
        assert_eq!(t.prefix, "");
        assert!(matches!(t.credential, Credential::Sas(ref s) if s == "sv=2019&sig=x"));
        let t = RemoteAccount::from_url(
            "https://acct.table.core.windows.net/?sv=1&sig=2",
            None,
            None,
        )
        .unwrap();
        assert_eq!(t.account, "acct");
        assert!(RemoteAccount::from_url("ftp://x", None, Some("AAAA")).is_err());
        assert!(RemoteAccount::from_url("http://x/a", None, None).is_err());
        let dev = RemoteAccount::from_connection_string("UseDevelopmentStorage=true").unwrap();
        assert_eq!(dev.account, DEV_ACCOUNT);
    }
}
