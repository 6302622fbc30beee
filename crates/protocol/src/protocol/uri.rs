//! Request URIs: which account (path style or host style), which resource, and the query
//! parameters. Key predicates are parsed after percent-decoding the path, with `''` standing
//! for one `'` (Azure docs: "Querying tables and entities").

use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use super::error::{ApiError, ErrorCode};

/// The resource a request path names (below the account).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resource {
    /// `/` — service-level operations (`?restype=service&comp=…`).
    Service,
    /// `/Tables`
    Tables,
    /// `/Tables('name')`
    Table(String),
    /// `/name` — insert target, ACL target; GET is a query.
    EntitySet(String),
    /// `/name()` — query entities.
    EntityQuery(String),
    /// `/name(PartitionKey='…',RowKey='…')`
    Entity {
        table: String,
        partition_key: String,
        row_key: String,
    },
    /// `/$batch`
    Batch,
    /// `/name/…`: a table's name with more path after it, as when a service URL ends with a
    /// table name (`TableEndpoint=…/devstoreaccount1/people`) and the SDK appends `/Tables`.
    /// `rest` is the decoded path after the name's `/`.
    BelowTable { table: String, rest: String },
}

/// Where the account came from and what is left of the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountPath<'a> {
    pub account: String,
    /// True when the account is the first path segment.
    pub path_style: bool,
    /// The rest of the path, still percent-encoded, starting after the account segment.
    pub rest: &'a str,
}

/// Resolves the account (Azure docs: "Addressing Table service resources"): host style when the Host's first label, followed by
/// `.table.`, is a known account (e.g. `devstoreaccount1.table.localhost`); path style
/// otherwise (first path segment). IP literals and `localhost` always mean path style.
/// With `allow_host_style` false (`--disableProductStyleUrl`) the account is always the first
/// path segment.
pub fn split_account<'a>(
    host: Option<&str>,
    raw_path: &'a str,
    is_known_account: impl Fn(&str) -> bool,
    allow_host_style: bool,
) -> Option<AccountPath<'a>> {
    if let Some(host) = host.filter(|_| allow_host_style) {
        let host_only = strip_port(host);
        if let Some((label, rest)) = host_only.split_once('.') {
            let is_ip = host_only.parse::<std::net::IpAddr>().is_ok();
            if !is_ip && rest.starts_with("table.") {
                let base = label.strip_suffix("-secondary").unwrap_or(label);
                if is_known_account(base) {
                    return Some(AccountPath {
                        account: label.to_string(),
                        path_style: false,
                        rest: raw_path,
                    });
                }
            }
        }
    }
    let trimmed = raw_path.strip_prefix('/')?;
    let (account, rest) = match trimmed.find('/') {
        Some(i) => (&trimmed[..i], &trimmed[i..]),
        None => (trimmed, ""),
    };
    if account.is_empty() {
        return None;
    }
    Some(AccountPath {
        account: account.to_string(),
        path_style: true,
        rest,
    })
}

/// Resolves the account of a request to a Cosmos DB for Table endpoint, whose Table endpoint is
/// the root (`TableEndpoint=http://localhost:8902/`: the emulator's connection string has no
/// account segment): host style as [`split_account`]; path style when the first path segment
/// names a configured account (`AZURITE_ACCOUNTS` keep their URLs); otherwise `root_account`,
/// with the whole path below it. A root-style request is signed as host-style ones are
/// (`/<account><path>`), which is how the SDKs sign a Cosmos endpoint.
pub fn split_account_at_root<'a>(
    host: Option<&str>,
    raw_path: &'a str,
    is_known_account: impl Fn(&str) -> bool,
    allow_host_style: bool,
    root_account: &str,
) -> Option<AccountPath<'a>> {
    let resolved = split_account(host, raw_path, &is_known_account, allow_host_style);
    match resolved {
        Some(p) if !p.path_style => Some(p),
        Some(p) if is_known_account(p.account.strip_suffix("-secondary").unwrap_or(&p.account)) => {
            Some(p)
        }
        _ => Some(AccountPath {
            account: root_account.to_string(),
            path_style: false,
            rest: raw_path,
        }),
    }
}

/// The account a Shared Key or Shared Key Lite `Authorization` value names
/// (`SharedKey <account>:<signature>`), if it has that form.
pub fn authorization_account(value: &str) -> Option<&str> {
    let (scheme, credential) = value.trim().split_once(' ')?;
    if !matches!(scheme, "SharedKey" | "SharedKeyLite") {
        return None;
    }
    let (account, _) = credential.trim().split_once(':')?;
    (!account.is_empty()).then_some(account)
}

fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host.split(']').next().map(|h| &h[1..]).unwrap_or(host);
    }
    match host.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => host,
    }
}

fn invalid_uri() -> ApiError {
    ApiError::new(ErrorCode::InvalidUri)
}

fn key_count_error() -> ApiError {
    ApiError::with_message(
        ErrorCode::InvalidInput,
        "The number of keys specified in the URI does not match number of key properties for the resource.",
    )
}

/// Parses the path below the account (still percent-encoded) into a [`Resource`].
pub fn parse_resource(rest: &str) -> Result<Resource, ApiError> {
    let decoded = percent_decode_str(rest)
        .decode_utf8()
        .map_err(|_| invalid_uri())?;
    let path = decoded.strip_prefix('/').unwrap_or(&decoded);
    let path = path.strip_suffix('/').unwrap_or(path);
    if path.is_empty() {
        return Ok(Resource::Service);
    }
    if path == "$batch" {
        return Ok(Resource::Batch);
    }
    if path == "Tables" || path == "Tables()" {
        return Ok(Resource::Tables);
    }
    if let Some((table, rest)) = path.split_once('/') {
        if !table.is_empty() && table != "Tables" && !table.contains('(') && !table.starts_with('$')
        {
            return Ok(Resource::BelowTable {
                table: table.to_string(),
                rest: rest.to_string(),
            });
        }
    }
    let Some(open) = path.find('(') else {
        if path.contains('/') {
            return Err(invalid_uri());
        }
        return Ok(Resource::EntitySet(path.to_string()));
    };
    let name = &path[..open];
    let args = path[open..]
        .strip_prefix('(')
        .and_then(|a| a.strip_suffix(')'))
        .ok_or_else(|| {
            // An unterminated key predicate is a malformed predicate (Azure docs: "Querying tables and entities").
            if name == "Tables" || name.is_empty() || name.contains('/') {
                invalid_uri()
            } else {
                key_count_error()
            }
        })?;
    if name == "Tables" {
        let table = parse_quoted(args.trim())
            .filter(|(_, rest)| rest.trim().is_empty())
            .map(|(v, _)| v)
            .ok_or_else(invalid_uri)?;
        return Ok(Resource::Table(table));
    }
    if name.is_empty() || name.contains('/') {
        return Err(invalid_uri());
    }
    if args.trim().is_empty() {
        return Ok(Resource::EntityQuery(name.to_string()));
    }
    let (partition_key, row_key) = parse_key_predicate(args)?;
    Ok(Resource::Entity {
        table: name.to_string(),
        partition_key,
        row_key,
    })
}

/// Parses a `'…'` literal at the start of `s` (with `''` for `'`); returns it and the rest.
fn parse_quoted(s: &str) -> Option<(String, &str)> {
    let body = s.strip_prefix('\'')?;
    let mut out = String::with_capacity(body.len());
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        if c == '\'' {
            if body[i + 1..].starts_with('\'') {
                out.push('\'');
                chars.next();
            } else {
                return Some((out, &body[i + 1..]));
            }
        } else {
            out.push(c);
        }
    }
    None
}

/// `PartitionKey='…',RowKey='…'` in either order, spaces tolerated.
fn parse_key_predicate(args: &str) -> Result<(String, String), ApiError> {
    let mut partition_key = None;
    let mut row_key = None;
    let mut rest = args.trim_start();
    loop {
        let (name, after) = rest.split_once('=').ok_or_else(key_count_error)?;
        let (value, after) = parse_quoted(after.trim_start()).ok_or_else(key_count_error)?;
        let slot = match name.trim() {
            "PartitionKey" => &mut partition_key,
            "RowKey" => &mut row_key,
            _ => return Err(key_count_error()),
        };
        if slot.replace(value).is_some() {
            return Err(key_count_error());
        }
        let after = after.trim_start();
        if after.is_empty() {
            break;
        }
        rest = after
            .strip_prefix(',')
            .ok_or_else(key_count_error)?
            .trim_start();
    }
    match (partition_key, row_key) {
        (Some(pk), Some(rk)) => Ok((pk, rk)),
        _ => Err(key_count_error()),
    }
}

/// Query parameters, percent-decoded (`+` read as a space, as form encoding has it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryParams {
    pairs: Vec<(String, String)>,
}

impl QueryParams {
    pub fn parse(raw: Option<&str>) -> Result<QueryParams, ApiError> {
        let mut pairs = Vec::new();
        for part in raw.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=').unwrap_or((part, ""));
            pairs.push((decode_query_component(k)?, decode_query_component(v)?));
        }
        Ok(QueryParams { pairs })
    }

    /// The first value of a parameter (names are case-sensitive, as `$filter` is).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Like [`QueryParams::get`] but ignoring ASCII case of the name (`restype`, `comp`).
    pub(crate) fn get_ignore_case(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn decode_query_component(s: &str) -> Result<String, ApiError> {
    let spaced = s.replace('+', " ");
    percent_decode_str(&spaced)
        .decode_utf8()
        .map(|c| c.into_owned())
        .map_err(|_| {
            ApiError::with_message(
                ErrorCode::InvalidQueryParameterValue,
                "A query parameter is not valid UTF-8 after percent-decoding.",
            )
        })
}

/// Characters kept raw when the server writes keys into URLs (`Location`, `odata.id`):
/// everything but `A–Z a–z 0–9 - _ . ~ '` is percent-encoded, as observed in Azure's headers.
const KEY_ENCODE_SET: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~')
    .remove(b'\'');

/// A table name as a URL path segment: percent-encoded like keys (a Storage name, letters
/// and digits, is unchanged; a Cosmos name may hold spaces and any other character).
pub fn table_segment(table: &str) -> String {
    utf8_percent_encode(table, KEY_ENCODE_SET).to_string()
}

/// `table(PartitionKey='…',RowKey='…')` with `'` doubled and the table and keys
/// percent-encoded.
pub fn entity_path(table: &str, partition_key: &str, row_key: &str) -> String {
    // Written in one buffer sized up front: every insert's `Location` and every `$batch`
    // insert's sub-response take one.
    let mut path = String::with_capacity(
        table.len() + partition_key.len() + row_key.len() + "(PartitionKey='',RowKey='')".len() + 8,
    );
    path.extend(utf8_percent_encode(table, KEY_ENCODE_SET));
    path.push_str("(PartitionKey='");
    push_key(&mut path, partition_key);
    path.push_str("',RowKey='");
    push_key(&mut path, row_key);
    path.push_str("')");
    path
}

/// A key in an entity path: `'` doubled, then percent-encoded.
fn push_key(path: &mut String, key: &str) {
    let mut pieces = key.split('\'');
    if let Some(first) = pieces.next() {
        path.extend(utf8_percent_encode(first, KEY_ENCODE_SET));
    }
    for piece in pieces {
        // `''`, percent-encoded as the doubled quote would have been.
        path.extend(utf8_percent_encode("''", KEY_ENCODE_SET));
        path.extend(utf8_percent_encode(piece, KEY_ENCODE_SET));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entity(t: &str, pk: &str, rk: &str) -> Resource {
        Resource::Entity {
            table: t.into(),
            partition_key: pk.into(),
            row_key: rk.into(),
        }
    }

    #[test]
    fn resources() {
        assert_eq!(parse_resource("").unwrap(), Resource::Service);
        assert_eq!(parse_resource("/").unwrap(), Resource::Service);
        assert_eq!(parse_resource("/Tables").unwrap(), Resource::Tables);
        assert_eq!(
            parse_resource("/Tables('abc')").unwrap(),
            Resource::Table("abc".into())
        );
        assert_eq!(
            parse_resource("/Tables(%27abc%27)").unwrap(),
            Resource::Table("abc".into())
        );
        assert_eq!(parse_resource("/$batch").unwrap(), Resource::Batch);
        assert_eq!(
            parse_resource("/t1").unwrap(),
            Resource::EntitySet("t1".into())
        );
        assert_eq!(
            parse_resource("/t1()").unwrap(),
            Resource::EntityQuery("t1".into())
        );
        assert_eq!(
            parse_resource("/t1(PartitionKey='a',RowKey='b')").unwrap(),
            entity("t1", "a", "b")
        );
        assert_eq!(
            parse_resource("/t1(RowKey='b', PartitionKey='a')").unwrap(),
            entity("t1", "a", "b")
        );
        assert_eq!(
            parse_resource("/t1(PartitionKey=%27o''clock%27,RowKey=%27%3A%40+%27)").unwrap(),
            entity("t1", "o'clock", ":@+")
        );
        assert_eq!(
            parse_resource("/t1(PartitionKey='',RowKey='')").unwrap(),
            entity("t1", "", "")
        );
    }

    #[test]
    fn bad_key_predicates() {
        for bad in [
            "/t1(PartitionKey='a')",
            "/t1(PartitionKey='a',RowKey='b',RowKey='c')",
            "/t1(PartitionKey=a,RowKey='b')",
            "/t1(PartitionKey='a',Foo='b')",
            "/t1(PartitionKey='a,RowKey='b')",
        ] {
            let e = parse_resource(bad).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidInput, "{bad}");
        }
        for unterminated in [
            "/t1(PartitionKey='a',RowKey='b'",
            "/t1(PartitionKey='a',RowKey='b')x",
        ] {
            assert_eq!(
                parse_resource(unterminated).unwrap_err().code,
                ErrorCode::InvalidInput,
                "{unterminated}"
            );
        }
        assert_eq!(
            parse_resource("/Tables('a'").unwrap_err().code,
            ErrorCode::InvalidUri
        );
        assert_eq!(
            parse_resource("/a/%FF").unwrap_err().code,
            ErrorCode::InvalidUri
        );
    }

    /// A service URL ending with a table name: the SDK's paths below it name the table first.
    #[test]
    fn a_table_name_before_the_resource_is_its_own_resource() {
        let below = |table: &str, rest: &str| Resource::BelowTable {
            table: table.into(),
            rest: rest.into(),
        };
        assert_eq!(
            parse_resource("/people/Tables"),
            Ok(below("people", "Tables"))
        );
        assert_eq!(
            parse_resource("/people/Tables('people')"),
            Ok(below("people", "Tables('people')"))
        );
        assert_eq!(
            parse_resource("/people/$batch"),
            Ok(below("people", "$batch"))
        );
        for still_invalid in ["/Tables/x", "/Tables('t')/x", "/$batch/x"] {
            assert_eq!(
                parse_resource(still_invalid).unwrap_err().code,
                ErrorCode::InvalidUri,
                "{still_invalid}"
            );
        }
    }

    #[test]
    fn accounts() {
        let known = |a: &str| a == "devstoreaccount1";
        let p = split_account(
            Some("127.0.0.1:10002"),
            "/devstoreaccount1/Tables",
            known,
            true,
        )
        .unwrap();
        assert_eq!(
            (p.account.as_str(), p.path_style, p.rest),
            ("devstoreaccount1", true, "/Tables")
        );
        let h = split_account(
            Some("devstoreaccount1.table.localhost:10002"),
            "/Tables",
            known,
            true,
        )
        .unwrap();
        assert_eq!(
            (h.account.as_str(), h.path_style, h.rest),
            ("devstoreaccount1", false, "/Tables")
        );
        let s = split_account(
            Some("localhost"),
            "/devstoreaccount1-secondary",
            known,
            true,
        )
        .unwrap();
        assert_eq!(
            (s.account.as_str(), s.rest),
            ("devstoreaccount1-secondary", "")
        );
        assert!(split_account(Some("localhost"), "/", known, true).is_none());
        // --disableProductStyleUrl: the first path segment, whatever the Host says.
        let p = split_account(
            Some("devstoreaccount1.table.localhost:10002"),
            "/devstoreaccount1/Tables",
            known,
            false,
        )
        .unwrap();
        assert_eq!(
            (p.account.as_str(), p.path_style, p.rest),
            ("devstoreaccount1", true, "/Tables")
        );
    }

    #[test]
    fn cosmos_root_addressing() {
        let known = |a: &str| a == "localhost" || a == "acct2";
        let root =
            |path| split_account_at_root(Some("localhost:8902"), path, known, true, "localhost");
        let p = root("/Tables").unwrap();
        assert_eq!(
            (p.account.as_str(), p.path_style, p.rest),
            ("localhost", false, "/Tables")
        );
        let p = root("/").unwrap();
        assert_eq!((p.account.as_str(), p.rest), ("localhost", "/"));
        // A configured account in the path keeps its path-style URL.
        let p = root("/acct2/people()").unwrap();
        assert_eq!(
            (p.account.as_str(), p.path_style, p.rest),
            ("acct2", true, "/people()")
        );
        let p = root("/acct2-secondary/people()").unwrap();
        assert_eq!(p.account, "acct2-secondary");
        // A table that is not an account name is a table at the root.
        let p = root("/people(PartitionKey='a',RowKey='b')").unwrap();
        assert_eq!(
            (p.account.as_str(), p.rest),
            ("localhost", "/people(PartitionKey='a',RowKey='b')")
        );
        // Host style still wins.
        let p = split_account_at_root(
            Some("acct2.table.localhost"),
            "/t",
            known,
            true,
            "localhost",
        )
        .unwrap();
        assert_eq!((p.account.as_str(), p.path_style), ("acct2", false));
        assert_eq!(
            authorization_account("SharedKey localhost:abc="),
            Some("localhost")
        );
        assert_eq!(
            authorization_account("SharedKeyLite acct2:abc="),
            Some("acct2")
        );
        assert_eq!(authorization_account("Bearer x.y.z"), None);
        assert_eq!(authorization_account("SharedKey :sig"), None);
    }

    #[test]
    fn query_params_decode() {
        let q = QueryParams::parse(Some("$filter=PartitionKey%20eq%20'a+b'&$top=5&x")).unwrap();
        assert_eq!(q.get("$filter"), Some("PartitionKey eq 'a b'"));
        assert_eq!(q.get("$top"), Some("5"));
        assert_eq!(q.get("x"), Some(""));
        assert_eq!(q.get("$TOP"), None);
    }

    #[test]
    fn entity_paths_encode_like_azure() {
        assert_eq!(
            entity_path("t", ":@", "=& "),
            "t(PartitionKey='%3A%40',RowKey='%3D%26%20')"
        );
        assert_eq!(
            entity_path("t", "A'aaa", "x"),
            "t(PartitionKey='A''aaa',RowKey='x')"
        );
    }
}
