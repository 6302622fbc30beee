//! JSON payloads (Azure docs: "Payload format for Table service operations"): decoding entity request bodies into typed properties with every
//! validation the service applies, and encoding entities and tables at the three metadata
//! levels, written straight into one output buffer.

use std::borrow::Cow;
use std::fmt;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::error::{ApiError, ErrorCode};
use super::headers::Metadata;
use super::uri::entity_path;
use crate::model::edm::{parse_guid, utf16_len, write_guid, DateTimeError};
use crate::model::entity::etag_datetime_pieces;
use crate::model::limits::{
    check_entity_as, EntityLimitError, EntityLimits, MAX_BINARY_BYTES, MAX_KEY_UTF16,
    MAX_PROPERTY_NAME, MAX_STRING_UTF16,
};
use crate::model::{
    EdmDateTime, EdmType, EdmValue, EdmValueRef, Entity, EntityView, FractionDigits, Property,
};
use crate::protocol::dialect::{Dialect, EntityLayout};

/// A member value as parsed. Strings stay borrowed from the request body when they contain
/// no escapes, so decoding an entity copies each string once, into the entity.
#[derive(Debug)]
enum Json<'a> {
    Null,
    Bool(bool),
    /// A JSON integer that fits in i64.
    Int(i64),
    /// A JSON integer above i64::MAX.
    UInt(u64),
    /// A JSON number written with a fraction or exponent.
    Float(f64),
    Str(Cow<'a, str>),
    /// An array or object (never valid as a property value).
    Other,
}

impl<'a> Json<'a> {
    fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The number as an i64, if it is an integer that fits (as serde_json's `as_i64`).
    fn as_i64(&self) -> Option<i64> {
        match *self {
            Json::Int(i) => Some(i),
            _ => None,
        }
    }

    fn as_f64(&self) -> Option<f64> {
        match *self {
            Json::Int(i) => Some(i as f64),
            Json::UInt(u) => Some(u as f64),
            Json::Float(f) => Some(f),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Json<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json<'de>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Json<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<Json<'de>, E> {
                Ok(Json::Null)
            }
            fn visit_none<E>(self) -> Result<Json<'de>, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E>(self, b: bool) -> Result<Json<'de>, E> {
                Ok(Json::Bool(b))
            }
            fn visit_i64<E>(self, i: i64) -> Result<Json<'de>, E> {
                Ok(Json::Int(i))
            }
            fn visit_u64<E>(self, u: u64) -> Result<Json<'de>, E> {
                Ok(i64::try_from(u).map_or(Json::UInt(u), Json::Int))
            }
            fn visit_f64<E>(self, f: f64) -> Result<Json<'de>, E> {
                Ok(Json::Float(f))
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Json<'de>, E> {
                Ok(Json::Str(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Json<'de>, E> {
                Ok(Json::Str(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E>(self, s: String) -> Result<Json<'de>, E> {
                Ok(Json::Str(Cow::Owned(s)))
            }
            // Nested values are parsed as `Json` (and dropped), not skipped, so serde_json's
            // nesting limit still refuses absurdly deep bodies as invalid JSON.
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
                while seq.next_element::<Json<'de>>()?.is_some() {}
                Ok(Json::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
                while map.next_entry::<Name<'de>, Json<'de>>()?.is_some() {}
                Ok(Json::Other)
            }
        }
        d.deserialize_any(V)
    }
}

/// A member name, borrowed from the body when it has no escapes.
struct Name<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Name<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Name<'de>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Name<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Name<'de>, E> {
                Ok(Name(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Name<'de>, E> {
                Ok(Name(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E>(self, s: String) -> Result<Name<'de>, E> {
                Ok(Name(Cow::Owned(s)))
            }
        }
        d.deserialize_str(V)
    }
}

/// A JSON object's members in document order, duplicates kept (so they can be refused).
struct Members<'a>(Vec<(Cow<'a, str>, Json<'a>)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Members<'de>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut members = Vec::with_capacity(map.size_hint().unwrap_or(16));
                while let Some((Name(k), v)) = map.next_entry::<Name<'de>, Json<'de>>()? {
                    members.push((k, v));
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(V)
    }
}

fn invalid(message: &'static str) -> ApiError {
    ApiError::with_message(ErrorCode::InvalidInput, message)
}

fn parse_members(body: &[u8]) -> Result<Vec<(Cow<'_, str>, Json<'_>)>, ApiError> {
    let members: Members = serde_json::from_slice(body).map_err(|_| {
        ApiError::with_message(
            ErrorCode::InvalidInput,
            "The request body is not a valid JSON object.",
        )
    })?;
    if has_duplicate_names(&members.0) {
        return Err(ApiError::new(ErrorCode::DuplicatePropertiesSpecified));
    }
    Ok(members.0)
}

fn has_duplicate_names(members: &[(Cow<'_, str>, Json<'_>)]) -> bool {
    // Entities have a few dozen members: comparing pairs beats sorting them.
    if members.len() <= 32 {
        return members
            .iter()
            .enumerate()
            .any(|(i, (a, _))| members[i + 1..].iter().any(|(b, _)| a == b));
    }
    let mut names: Vec<&str> = members.iter().map(|(k, _)| k.as_ref()).collect();
    names.sort_unstable();
    names.windows(2).any(|w| w[0] == w[1])
}

/// An entity body as decoded: keys if present, custom properties in body order.
#[derive(Debug, Clone, PartialEq)]
pub struct EntityBody {
    pub partition_key: Option<String>,
    pub row_key: Option<String>,
    pub properties: Vec<Property>,
}

/// Decodes and validates an entity request body (Azure docs: "Payload format for Table service operations", "Understanding the Table service data model").
pub fn decode_entity(body: &[u8]) -> Result<EntityBody, ApiError> {
    decode_entity_as(body, EntityLimits::Accounted)
}

/// [`decode_entity`] held to `limits`: Cosmos DB limits neither a property name's length
/// nor a value's size on its own.
pub fn decode_entity_as(body: &[u8], limits: EntityLimits) -> Result<EntityBody, ApiError> {
    let members = parse_members(body)?;
    let annotations: Vec<(&str, &Json)> = members
        .iter()
        .filter_map(|(k, v)| k.strip_suffix("@odata.type").map(|base| (base, v)))
        .collect();
    let annotation = |name: &str| -> Option<&Json> {
        annotations
            .iter()
            .find_map(|(base, v)| (*base == name).then_some(*v))
    };
    let mut out = EntityBody {
        partition_key: None,
        row_key: None,
        properties: Vec::with_capacity(members.len()),
    };
    for (name, value) in &members {
        if name.starts_with("odata.") || name.ends_with("@odata.type") {
            continue;
        }
        let declared = match annotation(name) {
            Some(Json::Str(t)) => Some(EdmType::parse(t).ok_or_else(|| {
                ApiError::with_message(
                    ErrorCode::InvalidInput,
                    format!("The type '{t}' of property '{name}' is not supported."),
                )
            })?),
            Some(_) => return Err(invalid("An @odata.type annotation must be a string.")),
            None => None,
        };
        if name == "PartitionKey" || name == "RowKey" {
            let key = match (value, declared) {
                (Json::Null, _) => continue,
                (Json::Str(s), None | Some(EdmType::String)) => s.to_string(),
                _ => return Err(invalid("PartitionKey and RowKey must be strings.")),
            };
            validate_key(&key)?;
            if name == "PartitionKey" {
                out.partition_key = Some(key);
            } else {
                out.row_key = Some(key);
            }
            continue;
        }
        if name == "Timestamp" {
            // Server-owned; clients echo it back and it is ignored.
            continue;
        }
        validate_property_name_as(name, limits)?;
        if matches!(value, Json::Null) {
            continue;
        }
        let value = decode_value(name, value, declared, limits)?;
        out.properties.push(Property {
            name: name.to_string(),
            value,
        });
    }
    Ok(out)
}

/// Checks the whole-entity limits of a decoded body (property count, total size).
pub fn check_entity_limits(
    partition_key: &str,
    row_key: &str,
    properties: &[Property],
) -> Result<(), ApiError> {
    check_entity_limits_as(EntityLimits::Accounted, partition_key, row_key, properties)
}

/// [`check_entity_limits`] held to `limits`.
pub fn check_entity_limits_as(
    limits: EntityLimits,
    partition_key: &str,
    row_key: &str,
    properties: &[Property],
) -> Result<(), ApiError> {
    check_entity_as(limits, partition_key, row_key, properties).map_err(entity_limit_error)
}

/// The text of Cosmos DB's answer to an item over 2 MB (413; the code is Storage's for a
/// body over its limit, as Cosmos's own code and text are not recorded).
pub const COSMOS_ITEM_TOO_LARGE: &str = "The entity is larger than the maximum item size of 2 MB.";

pub fn entity_limit_error(e: EntityLimitError) -> ApiError {
    match e {
        EntityLimitError::TooManyProperties => ApiError::new(ErrorCode::TooManyProperties),
        EntityLimitError::EntityTooLarge => ApiError::new(ErrorCode::EntityTooLarge),
        EntityLimitError::KeysTooLongForStore => ApiError::new(ErrorCode::KeyValueTooLarge),
        EntityLimitError::ItemTooLarge => {
            ApiError::with_message(ErrorCode::RequestBodyTooLarge, COSMOS_ITEM_TOO_LARGE)
        }
    }
}

/// Key values: ≤ 1024 UTF-16 units and none of `/ \ # ?` or control characters (Azure docs: "Understanding the Table service data model").
pub fn validate_key(key: &str) -> Result<(), ApiError> {
    if utf16_len(key) > MAX_KEY_UTF16 {
        return Err(ApiError::new(ErrorCode::KeyValueTooLarge));
    }
    let forbidden = |c: char| {
        matches!(c, '/' | '\\' | '#' | '?')
            || ('\u{0}'..='\u{1F}').contains(&c)
            || ('\u{7F}'..='\u{9F}').contains(&c)
    };
    if key.chars().any(forbidden) {
        return Err(ApiError::with_message(
            ErrorCode::InvalidInput,
            "The key value contains a character that is not allowed (/, \\, #, ? or a control character).",
        ));
    }
    Ok(())
}

/// Property names: ≤ 255 characters, a letter or `_` first, then letters, digits or `_`
/// (C# identifier rules, Unicode classes) [emu; Azure docs: "Understanding the Table service data model"].
pub fn validate_property_name(name: &str) -> Result<(), ApiError> {
    validate_property_name_as(name, EntityLimits::Accounted)
}

/// [`validate_property_name`] held to `limits` (Cosmos DB: no length limit but the item's).
fn validate_property_name_as(name: &str, limits: EntityLimits) -> Result<(), ApiError> {
    if limits.limits_each_property() && name.chars().count() > MAX_PROPERTY_NAME {
        return Err(ApiError::new(ErrorCode::PropertyNameTooLong));
    }
    let mut chars = name.chars();
    let valid = match chars.next() {
        Some(first) => {
            (first.is_alphabetic() || first == '_')
                && chars.all(|c| c.is_alphanumeric() || c == '_')
        }
        None => false,
    };
    if !valid {
        return Err(ApiError::new(ErrorCode::PropertyNameInvalid));
    }
    Ok(())
}

/// A value that does not read as its type: Azure's 400 `InvalidInput` "An error occurred while
/// processing this request." (Azurite's commit ad3114ce checked `"1.797693134862316e308"` as
/// `Edm.Double` against Azure; Storage Explorer #1855 quotes the same text from a batch); which
/// property and type follow as a detail line after `Time:`, where Azure puts its details.
fn type_mismatch(name: &str, ty: EdmType) -> ApiError {
    ApiError::with_message(ErrorCode::InvalidInput, UNREADABLE_VALUE_MESSAGE).with_detail(Some(
        format!(
            "The value of property '{name}' is not a valid {}.",
            ty.name()
        ),
    ))
}

/// Azure's message for a property value it cannot read as the declared type.
pub(crate) const UNREADABLE_VALUE_MESSAGE: &str =
    "An error occurred while processing this request.";

/// Decodes a property value given as text with its type (a CSV cell, where every value is
/// text): the rules of an annotated JSON string, and `true` / `false` (any case) for Boolean.
pub fn decode_text_value(name: &str, text: &str, ty: EdmType) -> Result<EdmValue, ApiError> {
    match ty {
        EdmType::Boolean if text.eq_ignore_ascii_case("true") => Ok(EdmValue::Boolean(true)),
        EdmType::Boolean if text.eq_ignore_ascii_case("false") => Ok(EdmValue::Boolean(false)),
        EdmType::Boolean => Err(type_mismatch(name, ty)),
        _ => decode_value(
            name,
            &Json::Str(Cow::Borrowed(text)),
            Some(ty),
            EntityLimits::Accounted,
        ),
    }
}

fn decode_value(
    name: &str,
    value: &Json,
    declared: Option<EdmType>,
    limits: EntityLimits,
) -> Result<EdmValue, ApiError> {
    let too_large = |over: bool| over && limits.limits_each_property();
    let ty = match declared {
        Some(t) => t,
        None => match value {
            Json::Str(_) => EdmType::String,
            Json::Bool(_) => EdmType::Boolean,
            Json::Float(_) | Json::UInt(_) => EdmType::Double,
            Json::Int(i) => match i32::try_from(*i) {
                Ok(_) => EdmType::Int32,
                // Unannotated integers outside Int32 are stored as Double [emu, Azure docs: "Payload format for Table service operations"].
                Err(_) => EdmType::Double,
            },
            _ => {
                return Err(ApiError::with_message(
                    ErrorCode::InvalidInput,
                    format!("The value of property '{name}' must be a string, number or boolean."),
                ))
            }
        },
    };
    let bad = || type_mismatch(name, ty);
    let v = match ty {
        EdmType::String => {
            let s = value.as_str().ok_or_else(bad)?;
            if too_large(utf16_len(s) > MAX_STRING_UTF16) {
                return Err(ApiError::new(ErrorCode::PropertyValueTooLarge));
            }
            EdmValue::String(s.to_string())
        }
        EdmType::Boolean => match value {
            Json::Bool(b) => EdmValue::Boolean(*b),
            // The Azure CLI and Storage Explorer send annotated booleans as strings
            // ("true", "FALSE" from a CSV import); Azure takes them in any letter case.
            Json::Str(s) => EdmValue::Boolean(parse_bool_text(s).ok_or_else(bad)?),
            _ => return Err(bad()),
        },
        EdmType::Int32 => {
            let n = match value {
                Json::Str(s) => s.parse::<i64>().map_err(|_| bad())?,
                number => number.as_i64().ok_or_else(bad)?,
            };
            EdmValue::Int32(i32::try_from(n).map_err(|_| bad())?)
        }
        EdmType::Int64 => match value {
            Json::Str(s) => EdmValue::Int64(s.parse::<i64>().map_err(|_| bad())?),
            number => EdmValue::Int64(number.as_i64().ok_or_else(bad)?),
        },
        EdmType::Double => match value {
            Json::Str(s) => EdmValue::Double(match s.as_ref() {
                "NaN" => f64::NAN,
                "Infinity" | "INF" => f64::INFINITY,
                "-Infinity" | "-INF" => f64::NEG_INFINITY,
                other => other
                    .parse::<f64>()
                    .ok()
                    .filter(|d| d.is_finite())
                    .ok_or_else(bad)?,
            }),
            number => EdmValue::Double(number.as_f64().ok_or_else(bad)?),
        },
        EdmType::DateTime => {
            let s = value.as_str().ok_or_else(bad)?;
            EdmValue::DateTime(EdmDateTime::parse(s).map_err(|e| match e {
                DateTimeError::Syntax => bad(),
                DateTimeError::OutOfRange => ApiError::new(ErrorCode::OutOfRangeInput),
            })?)
        }
        EdmType::Guid => EdmValue::Guid(value.as_str().and_then(parse_guid).ok_or_else(bad)?),
        EdmType::Binary => {
            let s = value.as_str().ok_or_else(bad)?;
            let bytes = BASE64.decode(s).map_err(|_| bad())?;
            if too_large(bytes.len() > MAX_BINARY_BYTES) {
                return Err(ApiError::new(ErrorCode::PropertyValueTooLarge));
            }
            EdmValue::Binary(bytes)
        }
    };
    Ok(v)
}

/// `true` or `false` in any letter case: the text form of an `Edm.Boolean` value.
fn parse_bool_text(s: &str) -> Option<bool> {
    if s.eq_ignore_ascii_case("true") {
        Some(true)
    } else if s.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

/// Decodes a Create Table body: `{"TableName":"…"}`.
pub fn decode_table_name(body: &[u8]) -> Result<String, ApiError> {
    let members = parse_members(body)?;
    match members.iter().find(|(k, _)| k == "TableName") {
        Some((_, Json::Str(s))) => Ok(s.to_string()),
        Some(_) => Err(invalid("TableName must be a string.")),
        None => Err(ApiError::new(ErrorCode::PropertiesNeedValue)),
    }
}

// ---------------------------------------------------------------------------------------
// Encoding

/// What entity encoding needs to know beyond the entity.
#[derive(Debug, Clone, Copy)]
pub struct EntityContext<'a> {
    pub metadata: Metadata,
    /// `{base}`: the account URL as the client addressed it, without a trailing slash.
    pub base_url: &'a str,
    pub account: &'a str,
    /// The table name as created.
    pub table: &'a str,
    /// The `$select` list, parsed; `None` for all properties.
    pub select: Option<&'a [String]>,
    /// The `$select` text as sent, appended to `odata.metadata`.
    pub select_raw: Option<&'a str>,
    /// The dialect whose wire form is written (DateTime text, member order).
    pub dialect: &'static Dialect,
}

fn push_str(out: &mut Vec<u8>, s: &str) {
    // Most text needs no escaping: a branch-free scan (which the compiler vectorises) lets it
    // be copied whole. Otherwise serde_json's writer escapes it; writing to a Vec cannot fail.
    let clean = s
        .bytes()
        .fold(true, |ok, b| ok & (b >= 0x20) & (b != b'"') & (b != b'\\'));
    if clean {
        push_plain_str(out, s.as_bytes());
    } else {
        let _ = serde_json::to_writer(&mut *out, s);
    }
}

/// A JSON string of text that needs no escaping (digits, dates, GUIDs, base64).
fn push_plain_str(out: &mut Vec<u8>, text: &[u8]) {
    out.push(b'"');
    out.extend_from_slice(text);
    out.push(b'"');
}

/// `name@odata.type` as a member name, then the type name as its value.
fn push_type_annotation(out: &mut Vec<u8>, first: &mut bool, name: &str, ty: &str) {
    if !*first {
        out.push(b',');
    }
    *first = false;
    push_str(out, name);
    out.pop(); // the closing quote: the annotation suffix goes inside the name
    out.extend_from_slice(b"@odata.type\":");
    push_plain_str(out, ty.as_bytes());
}

/// The entity's ETag as a JSON string (`"W/\"datetime'…'\""`), written in place.
fn push_etag(out: &mut Vec<u8>, timestamp: EdmDateTime, dialect: &Dialect) {
    out.extend_from_slice(b"\"W/\\\"datetime'");
    etag_datetime_pieces(timestamp, dialect.datetime_digits, |piece| {
        out.extend_from_slice(piece.as_bytes())
    });
    out.extend_from_slice(b"'\\\"\"");
}

fn push_int(out: &mut Vec<u8>, value: impl fmt::Display) {
    use std::io::Write as _;
    // Writing to a Vec cannot fail.
    let _ = write!(out, "{value}");
}

fn push_member(out: &mut Vec<u8>, first: &mut bool, name: &str) {
    if !*first {
        out.push(b',');
    }
    *first = false;
    push_str(out, name);
    out.push(b':');
}

fn metadata_url(ctx: &EntityContext, element: bool) -> String {
    let mut url = String::with_capacity(ctx.base_url.len() + 2 * ctx.table.len() + 32);
    url.push_str(ctx.base_url);
    url.push('/');
    // Cosmos DB names the table as a path segment of a single entity's metadata URL and
    // does not echo `$select` (`EntityLayout`).
    let cosmos = ctx.dialect.entity_layout == EntityLayout::Cosmos;
    if cosmos && element {
        url.push_str(ctx.table);
        url.push('/');
    }
    url.push_str("$metadata#");
    url.push_str(ctx.table);
    if element {
        url.push_str("/@Element");
    }
    if let Some(raw) = ctx.select_raw.filter(|_| !cosmos) {
        url.push_str("&$select=");
        url.extend(utf8_percent_encode(raw.trim(), SELECT_ECHO_SET));
    }
    url
}

/// Characters re-encoded when the `$select` list is echoed into `odata.metadata`. Interop:
/// Azure answers `$select=age%2C%20sex` with `…#table&$select=age,%20sex` (decoded, then written
/// back as URL text: the space encoded, the comma raw) [rec: Py
/// `test_table_entity.test_query_entities_with_select.yaml`], and a lone space with
/// `&$select=` (Azure docs: "Querying tables and entities"), hence the trim.
const SELECT_ECHO_SET: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'`')
    .add(b'{')
    .add(b'}');

fn is_selected(ctx: &EntityContext, name: &str) -> bool {
    match ctx.select {
        None => true,
        Some(list) => list.iter().any(|s| s == name),
    }
}

/// Writes one entity object. `element` adds the single-entity `odata.metadata` member.
pub(crate) fn write_entity(out: &mut Vec<u8>, entity: &Entity, ctx: &EntityContext, element: bool) {
    write_entity_view(out, &EntityView::of(entity), ctx, element);
}

fn write_entity_view(out: &mut Vec<u8>, entity: &EntityView, ctx: &EntityContext, element: bool) {
    let mut first = true;
    out.push(b'{');
    let full = ctx.metadata == Metadata::Full;
    write_odata_members(out, &mut first, entity, ctx, element);
    if is_selected(ctx, "PartitionKey") {
        push_member(out, &mut first, "PartitionKey");
        push_str(out, &entity.partition_key);
    }
    if is_selected(ctx, "RowKey") {
        push_member(out, &mut first, "RowKey");
        push_str(out, &entity.row_key);
    }
    let write_timestamp = |out: &mut Vec<u8>, first: &mut bool| {
        if is_selected(ctx, "Timestamp") {
            if full {
                push_member(out, first, "Timestamp@odata.type");
                push_str(out, "Edm.DateTime");
            }
            push_member(out, first, "Timestamp");
            push_plain_str(
                out,
                ctx.dialect
                    .datetime_text(entity.timestamp)
                    .as_str()
                    .as_bytes(),
            );
        }
    };
    // Storage writes Timestamp after the keys, Cosmos DB after every other property
    // (`EntityLayout`).
    let timestamp_last = ctx.dialect.entity_layout == EntityLayout::Cosmos;
    if !timestamp_last {
        write_timestamp(out, &mut first);
    }
    let digits = ctx.dialect.datetime_digits;
    for (name, value) in &entity.properties {
        if is_selected(ctx, name) {
            write_property(out, &mut first, name, *value, ctx.metadata, digits);
        }
    }
    if timestamp_last {
        write_timestamp(out, &mut first);
    }
    if let Some(list) = ctx.select {
        // Selected properties the entity lacks come back as null [emu, Azure docs: "Querying tables and entities"].
        for name in list {
            let system = matches!(name.as_str(), "PartitionKey" | "RowKey" | "Timestamp");
            if !system && !entity.properties.iter().any(|(n, _)| n == name) {
                push_member(out, &mut first, name);
                out.extend_from_slice(b"null");
            }
        }
    }
    out.push(b'}');
}

/// An entity's `odata.*` members, in the dialect's order ([`EntityLayout`]).
fn write_odata_members(
    out: &mut Vec<u8>,
    first: &mut bool,
    entity: &EntityView,
    ctx: &EntityContext,
    element: bool,
) {
    if ctx.metadata == Metadata::None {
        return;
    }
    let full = ctx.metadata == Metadata::Full;
    let path = if full {
        entity_path(ctx.table, &entity.partition_key, &entity.row_key)
    } else {
        String::new()
    };
    let write_metadata = |out: &mut Vec<u8>, first: &mut bool| {
        if element {
            push_member(out, first, "odata.metadata");
            push_str(out, &metadata_url(ctx, true));
        }
    };
    let write_type_and_id = |out: &mut Vec<u8>, first: &mut bool| {
        push_member(out, first, "odata.type");
        push_str(out, &format!("{}.{}", ctx.account, ctx.table));
        push_member(out, first, "odata.id");
        push_str(out, &format!("{}/{}", ctx.base_url, path));
    };
    let write_etag = |out: &mut Vec<u8>, first: &mut bool| {
        push_member(out, first, "odata.etag");
        push_etag(out, entity.timestamp, ctx.dialect);
    };
    let write_edit_link = |out: &mut Vec<u8>, first: &mut bool| {
        push_member(out, first, "odata.editLink");
        push_str(out, &path);
    };
    match (ctx.dialect.entity_layout, full) {
        (_, false) => {
            write_metadata(out, first);
            write_etag(out, first);
        }
        (EntityLayout::Storage, true) => {
            write_metadata(out, first);
            write_type_and_id(out, first);
            write_etag(out, first);
            write_edit_link(out, first);
        }
        (EntityLayout::Cosmos, true) => {
            write_type_and_id(out, first);
            write_edit_link(out, first);
            write_metadata(out, first);
            write_etag(out, first);
        }
    }
}

fn write_property(
    out: &mut Vec<u8>,
    first: &mut bool,
    name: &str,
    value: EdmValueRef,
    metadata: Metadata,
    digits: FractionDigits,
) {
    let annotate = |out: &mut Vec<u8>, first: &mut bool, ty: &str| {
        if metadata != Metadata::None {
            push_type_annotation(out, first, name, ty);
        }
    };
    match value {
        EdmValueRef::String(s) => {
            push_member(out, first, name);
            push_str(out, s);
        }
        EdmValueRef::Boolean(b) => {
            push_member(out, first, name);
            out.extend_from_slice(if b { b"true" } else { b"false" });
        }
        EdmValueRef::Int32(i) => {
            push_member(out, first, name);
            push_int(out, i);
        }
        EdmValueRef::Int64(i) => {
            annotate(out, first, "Edm.Int64");
            push_member(out, first, name);
            out.push(b'"');
            push_int(out, i);
            out.push(b'"');
        }
        EdmValueRef::Double(d) => {
            if d.is_finite() {
                push_member(out, first, name);
                // serde_json writes the shortest round-trip form, integral values as `5.0`.
                let _ = serde_json::to_writer(&mut *out, &d);
            } else {
                annotate(out, first, "Edm.Double");
                push_member(out, first, name);
                push_str(
                    out,
                    if d.is_nan() {
                        "NaN"
                    } else if d > 0.0 {
                        "Infinity"
                    } else {
                        "-Infinity"
                    },
                );
            }
        }
        EdmValueRef::DateTime(t) => {
            annotate(out, first, "Edm.DateTime");
            push_member(out, first, name);
            push_plain_str(out, t.text_with(digits).as_str().as_bytes());
        }
        EdmValueRef::Guid(g) => {
            annotate(out, first, "Edm.Guid");
            push_member(out, first, name);
            push_plain_str(out, write_guid(&g, &mut [0u8; 36]).as_bytes());
        }
        EdmValueRef::Binary(b) => {
            annotate(out, first, "Edm.Binary");
            push_member(out, first, name);
            out.push(b'"');
            let start = out.len();
            out.resize(start + base64::encoded_len(b.len(), true).unwrap_or(0), 0);
            let written = BASE64.encode_slice(b, &mut out[start..]).unwrap_or(0);
            out.truncate(start + written);
            out.push(b'"');
        }
    }
}

/// An entity in the typed form a request body carries (Insert, Update, Merge and `$batch`
/// operations): the keys, optionally the Timestamp (which decoding ignores), and every property
/// with an `@odata.type` annotation wherever JSON does not imply its type. Exports write one of
/// these per line, so every Edm type and value reads back exactly.
pub fn write_entity_body(out: &mut Vec<u8>, entity: &EntityView, timestamp: bool) {
    let mut first = true;
    out.push(b'{');
    push_member(out, &mut first, "PartitionKey");
    push_str(out, &entity.partition_key);
    push_member(out, &mut first, "RowKey");
    push_str(out, &entity.row_key);
    if timestamp {
        push_type_annotation(out, &mut first, "Timestamp", "Edm.DateTime");
        push_member(out, &mut first, "Timestamp");
        push_plain_str(out, entity.timestamp.text().as_str().as_bytes());
    }
    for (name, value) in &entity.properties {
        write_property(
            out,
            &mut first,
            name,
            *value,
            Metadata::Minimal,
            FractionDigits::Trimmed,
        );
    }
    out.push(b'}');
}

/// A single-entity response body (Get Entity, Insert Entity).
pub fn encode_entity(entity: &Entity, ctx: &EntityContext) -> Vec<u8> {
    let mut out = Vec::with_capacity(encoded_len_estimate(entity, ctx));
    write_entity(&mut out, entity, ctx, true);
    out
}

/// About the length of an entity's JSON (metadata URL, keys, each property with its type
/// annotation), so that the body is allocated once rather than grown three or four times.
fn encoded_len_estimate(entity: &Entity, ctx: &EntityContext) -> usize {
    let per_property: usize = entity
        .properties
        .iter()
        .map(|p| {
            let value = match &p.value {
                EdmValue::String(s) => s.len(),
                EdmValue::Binary(b) => b.len().div_ceil(3) * 4,
                _ => 40,
            };
            2 * p.name.len() + value + 32
        })
        .sum();
    let keys = entity.partition_key.len() + entity.row_key.len();
    256 + ctx.base_url.len() + ctx.table.len() + keys + per_property
}

/// A query response body: `{"odata.metadata":…,"value":[…]}` (Cosmos DB: `value` first).
pub fn encode_entity_page(entities: &[EntityView], ctx: &EntityContext) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + entities.len() * 256);
    let url = (ctx.metadata != Metadata::None).then(|| metadata_url(ctx, false));
    write_feed(&mut out, url.as_deref(), ctx.dialect, |out| {
        for (i, e) in entities.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_entity_view(out, e, ctx, false);
        }
    });
    out
}

/// A feed object: its `odata.metadata` member (when there is one) and its `value` array,
/// whose items `write_items` writes. Storage writes `odata.metadata` first, Cosmos DB after
/// `value`, for entities and tables alike ([`EntityLayout`]).
fn write_feed(
    out: &mut Vec<u8>,
    metadata_url: Option<&str>,
    dialect: &Dialect,
    write_items: impl FnOnce(&mut Vec<u8>),
) {
    let write_metadata = |out: &mut Vec<u8>| {
        if let Some(url) = metadata_url {
            push_str(out, "odata.metadata");
            out.push(b':');
            push_str(out, url);
        }
    };
    let metadata_last = dialect.entity_layout == EntityLayout::Cosmos;
    out.push(b'{');
    if !metadata_last && metadata_url.is_some() {
        write_metadata(out);
        out.push(b',');
    }
    out.extend_from_slice(b"\"value\":[");
    write_items(out);
    out.push(b']');
    if metadata_last && metadata_url.is_some() {
        out.push(b',');
        write_metadata(out);
    }
    out.push(b'}');
}

fn write_table(
    out: &mut Vec<u8>,
    name: &str,
    metadata: Metadata,
    base_url: &str,
    account: &str,
    element: bool,
) {
    let mut first = true;
    out.push(b'{');
    if element && metadata != Metadata::None {
        push_member(out, &mut first, "odata.metadata");
        push_str(out, &format!("{base_url}/$metadata#Tables/@Element"));
    }
    if metadata == Metadata::Full {
        push_member(out, &mut first, "odata.type");
        push_str(out, &format!("{account}.Tables"));
        push_member(out, &mut first, "odata.id");
        push_str(out, &format!("{base_url}/Tables('{name}')"));
        push_member(out, &mut first, "odata.editLink");
        push_str(out, &format!("Tables('{name}')"));
    }
    push_member(out, &mut first, "TableName");
    push_str(out, name);
    out.push(b'}');
}

/// Create Table response body.
pub fn encode_table(name: &str, metadata: Metadata, base_url: &str, account: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    write_table(&mut out, name, metadata, base_url, account, true);
    out
}

/// Query Tables response body.
pub fn encode_table_page<'a>(
    names: impl Iterator<Item = &'a str>,
    metadata: Metadata,
    base_url: &str,
    account: &str,
    dialect: &Dialect,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    let url = (metadata != Metadata::None).then(|| format!("{base_url}/$metadata#Tables"));
    write_feed(&mut out, url.as_deref(), dialect, |out| {
        for (i, name) in names.enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_table(out, name, metadata, base_url, account, false);
        }
    });
    out
}

/// Parses `$select` (comma-separated, spaces tolerated). `None` means all properties: absent,
/// empty, blank or `*`.
pub fn parse_select(raw: Option<&str>) -> Option<Vec<String>> {
    let raw = raw?.trim();
    if raw.is_empty() || raw == "*" {
        return None;
    }
    Some(
        raw.split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::dialect::{COSMOS, STORAGE};

    fn decode(s: &str) -> Result<EntityBody, ApiError> {
        decode_entity(s.as_bytes())
    }

    #[test]
    fn decodes_all_eight_types() {
        let body = r#"{"PartitionKey":"mypartitionkey","RowKey":"myrowkey",
 "DateTimeProperty@odata.type":"Edm.DateTime","DateTimeProperty":"2013-08-02T17:37:43.9004348Z",
 "BoolProperty":false,
 "BinaryProperty@odata.type":"Edm.Binary","BinaryProperty":"AQIDBA==",
 "DoubleProperty":1234.1234,
 "GuidProperty@odata.type":"Edm.Guid","GuidProperty":"4185404a-5818-48c3-b9be-f217df0dba6f",
 "Int32Property":1234,
 "Int64Property@odata.type":"Edm.Int64","Int64Property":"123456789012",
 "StringProperty":"test"}"#;
        let e = decode(body).unwrap();
        assert_eq!(e.partition_key.as_deref(), Some("mypartitionkey"));
        assert_eq!(e.row_key.as_deref(), Some("myrowkey"));
        let types: Vec<EdmType> = e.properties.iter().map(|p| p.value.edm_type()).collect();
        assert_eq!(
            types,
            vec![
                EdmType::DateTime,
                EdmType::Boolean,
                EdmType::Binary,
                EdmType::Double,
                EdmType::Guid,
                EdmType::Int32,
                EdmType::Int64,
                EdmType::String
            ]
        );
        assert_eq!(e.properties[6].value, EdmValue::Int64(123456789012));
        assert_eq!(e.properties[2].value, EdmValue::Binary(vec![1, 2, 3, 4]));
    }

    #[test]
    fn encodes_all_eight_types_in_place_exactly() {
        let body = r#"{"PartitionKey":"p\"k","RowKey":"r\"k",
 "When@odata.type":"Edm.DateTime","When":"2013-08-02T17:37:43.9004000Z",
 "Midnight@odata.type":"Edm.DateTime","Midnight":"1601-01-01T00:00:00Z",
 "Flag":false,"Bin@odata.type":"Edm.Binary","Bin":"AQIDBA==",
 "Empty@odata.type":"Edm.Binary","Empty":"","D":1234.5,
 "G@odata.type":"Edm.Guid","G":"4185404A-5818-48C3-B9BE-F217DF0DBA6F",
 "I":-1234,"L@odata.type":"Edm.Int64","L":"-123456789012","S":"t\u00e9st\n"}"#;
        let decoded = decode(body).unwrap();
        let entity = Entity {
            partition_key: decoded.partition_key.unwrap(),
            row_key: decoded.row_key.unwrap(),
            timestamp: EdmDateTime::parse("2021-02-12T08:28:27.47468Z").unwrap(),
            properties: decoded.properties,
        };
        let ctx = EntityContext {
            metadata: Metadata::Minimal,
            base_url: "http://h/acct",
            account: "acct",
            table: "t",
            select: None,
            select_raw: None,
            dialect: &STORAGE,
        };
        let mut out = Vec::new();
        write_entity(&mut out, &entity, &ctx, false);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"odata.etag":"W/\"datetime'2021-02-12T08%3A28%3A27.47468Z'\"","PartitionKey":"p\"k","RowKey":"r\"k","Timestamp":"2021-02-12T08:28:27.47468Z","When@odata.type":"Edm.DateTime","When":"2013-08-02T17:37:43.9004Z","Midnight@odata.type":"Edm.DateTime","Midnight":"1601-01-01T00:00:00Z","Flag":false,"Bin@odata.type":"Edm.Binary","Bin":"AQIDBA==","Empty@odata.type":"Edm.Binary","Empty":"","D":1234.5,"G@odata.type":"Edm.Guid","G":"4185404a-5818-48c3-b9be-f217df0dba6f","I":-1234,"L@odata.type":"Edm.Int64","L":"-123456789012","S":"tést\n"}"#
        );
        assert_eq!(
            entity.etag(),
            "W/\"datetime'2021-02-12T08%3A28%3A27.47468Z'\""
        );
    }

    #[test]
    fn annotations_after_value_and_special_doubles() {
        let e = decode(r#"{"a":"NaN","a@odata.type":"Edm.Double","b":5,"b@odata.type":"Edm.Double","c":"1.23456789012346e+24","c@odata.type":"Edm.Double"}"#).unwrap();
        assert!(matches!(e.properties[0].value, EdmValue::Double(d) if d.is_nan()));
        assert_eq!(e.properties[1].value, EdmValue::Double(5.0));
        assert_eq!(e.properties[2].value, EdmValue::Double(1.23456789012346e24));
    }

    #[test]
    fn nulls_control_members_and_timestamp_are_dropped() {
        let e = decode(r#"{"PartitionKey":"a","RowKey":"b","odata.etag":"x","Timestamp":"2020-01-01T00:00:00Z","n":null}"#).unwrap();
        assert!(e.properties.is_empty());
    }

    #[test]
    fn rejections() {
        let code = |s: &str| decode(s).unwrap_err().code;
        assert_eq!(
            code(r#"{"a":1,"a":2}"#),
            ErrorCode::DuplicatePropertiesSpecified
        );
        assert_eq!(code("[1]"), ErrorCode::InvalidInput);
        assert_eq!(code("{"), ErrorCode::InvalidInput);
        assert_eq!(code(r#"{"a":[1]}"#), ErrorCode::InvalidInput);
        assert_eq!(code(r#"{"a":{"b":1}}"#), ErrorCode::InvalidInput);
        assert_eq!(
            code(r#"{"a":"x","a@odata.type":"Edm.Int64"}"#),
            ErrorCode::InvalidInput
        );
        assert_eq!(
            code(r#"{"a":1,"a@odata.type":"Edm.Single"}"#),
            ErrorCode::InvalidInput
        );
        assert_eq!(
            code(r#"{"a":3000000000,"a@odata.type":"Edm.Int32"}"#),
            ErrorCode::InvalidInput
        );
        assert_eq!(
            code(r#"{"a":"1600-01-01T00:00:00Z","a@odata.type":"Edm.DateTime"}"#),
            ErrorCode::OutOfRangeInput
        );
        assert_eq!(code(r#"{"1a":1}"#), ErrorCode::PropertyNameInvalid);
        assert_eq!(code(r#"{"a-b":1}"#), ErrorCode::PropertyNameInvalid);
        assert_eq!(
            code(&format!(r#"{{"{}":1}}"#, "a".repeat(256))),
            ErrorCode::PropertyNameTooLong
        );
        assert_eq!(
            code(&format!(r#"{{"s":"{}"}}"#, "a".repeat(32 * 1024 + 1))),
            ErrorCode::PropertyValueTooLarge
        );
        assert_eq!(code(r#"{"PartitionKey":1}"#), ErrorCode::InvalidInput);
        assert_eq!(code(r#"{"PartitionKey":"a/b"}"#), ErrorCode::InvalidInput);
        assert_eq!(
            code(&format!(r#"{{"RowKey":"{}"}}"#, "k".repeat(1025))),
            ErrorCode::KeyValueTooLarge
        );
        assert!(decode(&format!(r#"{{"s":"{}"}}"#, "a".repeat(32 * 1024))).is_ok());
        assert!(decode(r#"{"啊齄丂狛狜":1,"_x":2}"#).is_ok());
    }

    #[test]
    fn unannotated_large_integer_is_double() {
        let e = decode(r#"{"a":3000000000,"b":-7}"#).unwrap();
        assert_eq!(e.properties[0].value, EdmValue::Double(3e9));
        assert_eq!(e.properties[1].value, EdmValue::Int32(-7));
    }

    fn sample() -> Entity {
        Entity {
            partition_key: "pk".into(),
            row_key: "rk".into(),
            timestamp: EdmDateTime::parse("2013-08-22T01:12:06.2608595Z").unwrap(),
            properties: vec![
                Property {
                    name: "Age".into(),
                    value: EdmValue::Int32(23),
                },
                Property {
                    name: "Big".into(),
                    value: EdmValue::Int64(255),
                },
                Property {
                    name: "D".into(),
                    value: EdmValue::Double(5.0),
                },
                Property {
                    name: "N".into(),
                    value: EdmValue::Double(f64::NEG_INFINITY),
                },
            ],
        }
    }

    fn ctx(metadata: Metadata) -> EntityContext<'static> {
        EntityContext {
            metadata,
            base_url: "http://h/acct",
            account: "acct",
            table: "mytable",
            select: None,
            select_raw: None,
            dialect: &STORAGE,
        }
    }

    #[test]
    fn encodes_three_metadata_levels() {
        let e = sample();
        let full = String::from_utf8(encode_entity(&e, &ctx(Metadata::Full))).unwrap();
        assert_eq!(
            full,
            r#"{"odata.metadata":"http://h/acct/$metadata#mytable/@Element","odata.type":"acct.mytable","odata.id":"http://h/acct/mytable(PartitionKey='pk',RowKey='rk')","odata.etag":"W/\"datetime'2013-08-22T01%3A12%3A06.2608595Z'\"","odata.editLink":"mytable(PartitionKey='pk',RowKey='rk')","PartitionKey":"pk","RowKey":"rk","Timestamp@odata.type":"Edm.DateTime","Timestamp":"2013-08-22T01:12:06.2608595Z","Age":23,"Big@odata.type":"Edm.Int64","Big":"255","D":5.0,"N@odata.type":"Edm.Double","N":"-Infinity"}"#
        );
        let minimal = String::from_utf8(encode_entity(&e, &ctx(Metadata::Minimal))).unwrap();
        assert_eq!(
            minimal,
            r#"{"odata.metadata":"http://h/acct/$metadata#mytable/@Element","odata.etag":"W/\"datetime'2013-08-22T01%3A12%3A06.2608595Z'\"","PartitionKey":"pk","RowKey":"rk","Timestamp":"2013-08-22T01:12:06.2608595Z","Age":23,"Big@odata.type":"Edm.Int64","Big":"255","D":5.0,"N@odata.type":"Edm.Double","N":"-Infinity"}"#
        );
        let none = String::from_utf8(encode_entity_page(
            &[EntityView::of(&e)],
            &ctx(Metadata::None),
        ))
        .unwrap();
        assert_eq!(
            none,
            r#"{"value":[{"PartitionKey":"pk","RowKey":"rk","Timestamp":"2013-08-22T01:12:06.2608595Z","Age":23,"Big":"255","D":5.0,"N":"-Infinity"}]}"#
        );
    }

    /// Member order under Cosmos, as recorded (`test_get_entity_full_metadata`,
    /// `test_query_entities_full_metadata`): `odata.type`, `odata.id`, `odata.editLink`,
    /// `odata.metadata`, `odata.etag`, the properties, Timestamp last; feeds `value` first.
    #[test]
    fn cosmos_member_order() {
        let e = sample();
        let mut c = ctx(Metadata::Full);
        c.dialect = &COSMOS;
        assert_eq!(
            String::from_utf8(encode_entity(&e, &c)).unwrap(),
            r#"{"odata.type":"acct.mytable","odata.id":"http://h/acct/mytable(PartitionKey='pk',RowKey='rk')","odata.editLink":"mytable(PartitionKey='pk',RowKey='rk')","odata.metadata":"http://h/acct/mytable/$metadata#mytable/@Element","odata.etag":"W/\"datetime'2013-08-22T01%3A12%3A06.2608595Z'\"","PartitionKey":"pk","RowKey":"rk","Age":23,"Big@odata.type":"Edm.Int64","Big":"255","D":5.0,"N@odata.type":"Edm.Double","N":"-Infinity","Timestamp@odata.type":"Edm.DateTime","Timestamp":"2013-08-22T01:12:06.2608595Z"}"#
        );
        let text = String::from_utf8(encode_entity_page(&[EntityView::of(&e)], &c)).unwrap();
        assert!(
            text.starts_with(r#"{"value":[{"odata.type":"acct.mytable","odata.id":"http://h/acct/mytable(PartitionKey='pk',RowKey='rk')","odata.editLink":"mytable(PartitionKey='pk',RowKey='rk')","odata.etag":"#),
            "{text}"
        );
        assert!(
            text.ends_with(r#"}],"odata.metadata":"http://h/acct/$metadata#mytable"}"#),
            "{text}"
        );
        c.metadata = Metadata::Minimal;
        let minimal = String::from_utf8(encode_entity(&e, &c)).unwrap();
        assert!(
            minimal.starts_with(
                r#"{"odata.metadata":"http://h/acct/mytable/$metadata#mytable/@Element","odata.etag":"#
            ),
            "{minimal}"
        );
        c.metadata = Metadata::None;
        assert_eq!(encode_entity_page(&[], &c), br#"{"value":[]}"#);
        let tables = |dialect: &Dialect| {
            let names = ["a"].into_iter();
            String::from_utf8(encode_table_page(
                names,
                Metadata::Minimal,
                "http://h",
                "x",
                dialect,
            ))
            .unwrap()
        };
        assert_eq!(
            tables(&COSMOS),
            r#"{"value":[{"TableName":"a"}],"odata.metadata":"http://h/$metadata#Tables"}"#
        );
        assert_eq!(
            tables(&STORAGE),
            r#"{"odata.metadata":"http://h/$metadata#Tables","value":[{"TableName":"a"}]}"#
        );
    }

    #[test]
    fn select_projection() {
        let e = sample();
        let list = parse_select(Some("Age, Missing")).unwrap();
        let mut c = ctx(Metadata::Minimal);
        c.select = Some(&list);
        c.select_raw = Some("Age, Missing");
        let s = String::from_utf8(encode_entity_page(&[EntityView::of(&e)], &c)).unwrap();
        assert_eq!(
            s,
            r#"{"odata.metadata":"http://h/acct/$metadata#mytable&$select=Age,%20Missing","value":[{"odata.etag":"W/\"datetime'2013-08-22T01%3A12%3A06.2608595Z'\"","Age":23,"Missing":null}]}"#
        );
        assert_eq!(parse_select(Some(" ")), None);
        assert_eq!(parse_select(Some("*")), None);
    }

    #[test]
    fn annotated_boolean_strings_in_any_case() {
        let e = decode(r#"{"a":"true","a@odata.type":"Edm.Boolean","b@odata.type":"Edm.Boolean","b":"FALSE","c":"True","c@odata.type":"Edm.Boolean","d":false,"d@odata.type":"Edm.Boolean"}"#).unwrap();
        let values: Vec<&EdmValue> = e.properties.iter().map(|p| &p.value).collect();
        assert_eq!(
            values,
            [
                &EdmValue::Boolean(true),
                &EdmValue::Boolean(false),
                &EdmValue::Boolean(true),
                &EdmValue::Boolean(false)
            ]
        );
        for bad in [r#""yes""#, r#""1""#, r#""""#, r#"" true""#, "1", "0"] {
            let body = format!(r#"{{"a":{bad},"a@odata.type":"Edm.Boolean"}}"#);
            assert_eq!(
                decode(&body).unwrap_err().code,
                ErrorCode::InvalidInput,
                "{body}"
            );
        }
        // Without an annotation a string stays a string.
        let e = decode(r#"{"a":"true"}"#).unwrap();
        assert_eq!(e.properties[0].value, EdmValue::String("true".into()));
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            /// An annotated Edm.Boolean string decodes to a boolean exactly when it spells
            /// true or false in some letter case; anything else is 400 InvalidInput.
            #[test]
            fn annotated_boolean_text(text in "(?i:true|false)|[a-zA-Z0-9 ]{0,6}") {
                let body = serde_json::json!({"v": text, "v@odata.type": "Edm.Boolean"}).to_string();
                let lower = text.to_ascii_lowercase();
                match decode(&body) {
                    Ok(e) => {
                        prop_assert!(lower == "true" || lower == "false");
                        prop_assert_eq!(&e.properties[0].value, &EdmValue::Boolean(lower == "true"));
                    }
                    Err(err) => {
                        prop_assert!(lower != "true" && lower != "false");
                        prop_assert_eq!(err.code, ErrorCode::InvalidInput);
                    }
                }
            }
        }
    }
}
