//! Entity writes from the wire: an entity operation (its URL, `If-Match` and method) and its
//! JSON body become the [`WriteOp`] the store executes. One decoder for the single-entity
//! requests and the operations of a `$batch` change set, so both answer a bad body alike.

use super::error::{ApiError, ErrorCode};
use super::headers::check_json_content_type;
use super::json;
use super::operation::Operation;
use crate::model::limits::EntityLimits;
use crate::model::{EntityKey, IfMatch, WriteKind, WriteOp};

/// Insert Entity: the keys come from the body, which must have both. The entity is held to
/// `limits`, and so is what a later merge into it makes.
pub fn decode_insert(
    body: &[u8],
    content_type: Option<&str>,
    limits: EntityLimits,
) -> Result<WriteOp, ApiError> {
    check_json_content_type(content_type)?;
    let body = json::decode_entity_as(body, limits)?;
    let (Some(partition_key), Some(row_key)) = (body.partition_key, body.row_key) else {
        return Err(ApiError::new(ErrorCode::PropertiesNeedValue));
    };
    json::check_entity_limits_as(limits, &partition_key, &row_key, &body.properties)?;
    Ok(WriteOp {
        kind: WriteKind::Insert,
        key: EntityKey {
            partition_key,
            row_key,
        },
        properties: body.properties,
        if_match: IfMatch::Any,
        limits,
    })
}

/// Update, Merge, Delete, Insert Or Replace and Insert Or Merge: the keys come from the URL
/// (keys in the body must match them), held to `limits`. Returns the table the operation
/// addresses and the write.
pub fn decode_write(
    operation: Operation,
    body: &[u8],
    content_type: Option<&str>,
    limits: EntityLimits,
) -> Result<(String, WriteOp), ApiError> {
    let (entity, kind, if_match) = match operation {
        Operation::UpdateEntity(e, m) => (e, WriteKind::Update, m),
        Operation::MergeEntity(e, m) => (e, WriteKind::Merge, m),
        Operation::DeleteEntity(e, m) => (e, WriteKind::Delete, m),
        Operation::InsertOrReplaceEntity(e) => (e, WriteKind::InsertOrReplace, IfMatch::Any),
        Operation::InsertOrMergeEntity(e) => (e, WriteKind::InsertOrMerge, IfMatch::Any),
        _ => return Err(ApiError::new(ErrorCode::MethodNotAllowed)),
    };
    json::validate_key(&entity.partition_key)?;
    json::validate_key(&entity.row_key)?;
    let properties = if kind == WriteKind::Delete {
        Vec::new()
    } else {
        check_json_content_type(content_type)?;
        // Some legacy clients send MERGE without a body: an empty property set.
        let decoded = if body.iter().all(u8::is_ascii_whitespace) {
            json::EntityBody {
                partition_key: None,
                row_key: None,
                properties: Vec::new(),
            }
        } else {
            json::decode_entity_as(body, limits)?
        };
        let mismatched = |k: &Option<String>, url: &str| k.as_deref().is_some_and(|k| k != url);
        if mismatched(&decoded.partition_key, &entity.partition_key)
            || mismatched(&decoded.row_key, &entity.row_key)
        {
            return Err(ApiError::with_message(
                ErrorCode::InvalidInput,
                "The keys in the request body do not match the keys in the request URI.",
            ));
        }
        let (pk, rk) = (&entity.partition_key, &entity.row_key);
        json::check_entity_limits_as(limits, pk, rk, &decoded.properties)?;
        decoded.properties
    };
    Ok((
        entity.table,
        WriteOp {
            kind,
            key: EntityKey {
                partition_key: entity.partition_key,
                row_key: entity.row_key,
            },
            properties,
            if_match,
            limits,
        },
    ))
}

/// Insert Entity or one of the other entity writes, whichever `operation` is; any other
/// operation is refused with `not_a_write`.
pub(crate) fn decode_any_write(
    operation: Operation,
    body: &[u8],
    content_type: Option<&str>,
    limits: EntityLimits,
    not_a_write: impl FnOnce() -> ApiError,
) -> Result<(String, WriteOp), ApiError> {
    match operation {
        Operation::InsertEntity { table } => {
            Ok((table, decode_insert(body, content_type, limits)?))
        }
        op @ (Operation::UpdateEntity(..)
        | Operation::MergeEntity(..)
        | Operation::DeleteEntity(..)
        | Operation::InsertOrReplaceEntity(_)
        | Operation::InsertOrMergeEntity(_)) => decode_write(op, body, content_type, limits),
        _ => Err(not_a_write()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::operation::EntityRef;

    const STORAGE: EntityLimits = EntityLimits::Accounted;

    fn entity(pk: &str, rk: &str) -> EntityRef {
        EntityRef {
            table: "t".into(),
            partition_key: pk.into(),
            row_key: rk.into(),
        }
    }

    #[test]
    fn insert_takes_keys_from_the_body() {
        let op =
            decode_insert(br#"{"PartitionKey":"p","RowKey":"r","n":1}"#, None, STORAGE).unwrap();
        assert_eq!((op.kind, op.key.row_key.as_str()), (WriteKind::Insert, "r"));
        assert_eq!(op.properties.len(), 1);
        let err = decode_insert(br#"{"PartitionKey":"p"}"#, None, STORAGE).unwrap_err();
        assert_eq!(err.code, ErrorCode::PropertiesNeedValue);
        let err = decode_insert(b"{}", Some("application/atom+xml"), STORAGE).unwrap_err();
        assert_eq!(err.code, ErrorCode::AtomFormatNotSupported);
    }

    #[test]
    fn writes_take_keys_from_the_url() {
        let (table, op) = decode_write(
            Operation::MergeEntity(entity("p", "r"), IfMatch::Any),
            b"  ",
            Some("application/json"),
            STORAGE,
        )
        .unwrap();
        assert_eq!((table.as_str(), op.kind), ("t", WriteKind::Merge));
        assert!(
            op.properties.is_empty(),
            "an empty MERGE body is no properties"
        );
        let err = decode_write(
            Operation::UpdateEntity(entity("p", "r"), IfMatch::Any),
            br#"{"PartitionKey":"other"}"#,
            None,
            STORAGE,
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidInput);
        let err = decode_write(
            Operation::InsertOrReplaceEntity(entity("p/", "r")),
            b"{}",
            None,
            STORAGE,
        )
        .unwrap_err();
        assert_eq!(
            err.code,
            ErrorCode::InvalidInput,
            "a forbidden key character"
        );
        let (_, delete) = decode_write(
            Operation::DeleteEntity(entity("p", "r"), IfMatch::Any),
            b"not json",
            Some("text/plain"),
            STORAGE,
        )
        .unwrap();
        assert_eq!(delete.kind, WriteKind::Delete, "a delete's body is ignored");
    }

    #[test]
    fn only_writes_decode() {
        let refused = || ApiError::new(ErrorCode::InvalidInput);
        let err =
            decode_any_write(Operation::QueryTables, b"", None, STORAGE, refused).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidInput);
        let (table, op) = decode_any_write(
            Operation::InsertEntity { table: "t".into() },
            br#"{"PartitionKey":"p","RowKey":"r"}"#,
            None,
            STORAGE,
            refused,
        )
        .unwrap();
        assert_eq!((table.as_str(), op.kind), ("t", WriteKind::Insert));
    }
}
