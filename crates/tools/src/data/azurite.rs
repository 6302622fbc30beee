//! Azurite's table database: the LokiJS file `__azurite_db_table__.json` that `azurite-table`
//! keeps in its `--location`. Its `$TABLES_COLLECTION$` lists each table with its account and
//! stored access policies (`tableAcl`); the collection `account$Table` holds the table's
//! entities, each with its properties in the wire's typed form under `properties`.
//!
//! Azurite 3.35 stores an `Edm.Guid` value base64-encoded (the GUID's text, encoded); it is
//! decoded back here. The file is read whole: Azurite itself keeps the whole database in memory,
//! so it is as large as Azurite could hold.

use std::path::{Path, PathBuf};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde_json::{Map, Value};

use super::{jsonl, DataError};
use crate::auth::acl::{encode_signed_identifiers, AccessPolicy, SignedIdentifier};
use crate::model::edm::parse_guid;
use crate::model::Entity;

/// The database file's name in Azurite's location.
pub const DB_FILE: &str = "__azurite_db_table__.json";
const TABLES_COLLECTION: &str = "$TABLES_COLLECTION$";

/// One table of the database with its entities.
pub(crate) struct Table {
    pub(crate) account: String,
    pub(crate) name: String,
    /// The stored access policies as a Set Table ACL body, if any.
    pub(crate) acl: Option<String>,
    pub(crate) entities: Vec<Entity>,
}

/// The database file of an Azurite location (or the file itself).
pub(crate) fn db_path(dir: &Path) -> PathBuf {
    if dir.is_file() {
        dir.to_path_buf()
    } else {
        dir.join(DB_FILE)
    }
}

/// Reads every table of the database.
pub(crate) fn read(dir: &Path) -> Result<Vec<Table>, DataError> {
    let path = db_path(dir);
    let text = std::fs::read(&path).map_err(|e| {
        DataError::new(format!(
            "cannot read Azurite's table database {}: {e} (give the folder Azurite ran with --location)",
            path.display()
        ))
    })?;
    let db: Value = serde_json::from_slice(&text).map_err(|e| {
        DataError::new(format!(
            "{} is not an Azurite table database (not JSON: {e})",
            path.display()
        ))
    })?;
    let collections = db
        .get("collections")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            DataError::new(format!(
                "{} is not an Azurite table database (no collections)",
                path.display()
            ))
        })?;
    let collection = |name: &str| {
        collections
            .iter()
            .find(|c| c.get("name").and_then(Value::as_str) == Some(name))
            .and_then(|c| c.get("data"))
            .and_then(Value::as_array)
    };
    let mut tables = Vec::new();
    for doc in collection(TABLES_COLLECTION).into_iter().flatten() {
        let (Some(account), Some(name)) = (
            doc.get("account").and_then(Value::as_str),
            doc.get("table").and_then(Value::as_str),
        ) else {
            continue;
        };
        let acl = doc
            .get("tableAcl")
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty())
            .map(|a| acl_xml(a));
        let mut entities = Vec::new();
        for (i, row) in collection(&format!("{account}${name}"))
            .into_iter()
            .flatten()
            .enumerate()
        {
            let properties = row
                .get("properties")
                .and_then(Value::as_object)
                .ok_or_else(|| {
                    DataError::new(format!("entity {i} of {account}/{name} has no properties"))
                })?;
            let body = serde_json::to_vec(&Value::Object(guids_as_text(properties)))
                .map_err(|e| DataError::new(e.to_string()))?;
            let entity = jsonl::decode_line(&body).map_err(|m| {
                DataError::new(format!(
                    "entity {i} of {account}/{name} in Azurite's database: {m}"
                ))
            })?;
            entities.push(entity);
        }
        tables.push(Table {
            account: account.to_string(),
            name: name.to_string(),
            acl,
            entities,
        });
    }
    Ok(tables)
}

/// The properties with every `Edm.Guid` value as GUID text (Azurite keeps it base64-encoded).
fn guids_as_text(properties: &Map<String, Value>) -> Map<String, Value> {
    let mut out = properties.clone();
    for (name, ty) in properties {
        let Some(base) = name.strip_suffix("@odata.type") else {
            continue;
        };
        if ty.as_str() != Some("Edm.Guid") {
            continue;
        }
        if let Some(Value::String(stored)) = out.get(base) {
            if parse_guid(stored).is_none() {
                if let Some(text) = BASE64
                    .decode(stored)
                    .ok()
                    .and_then(|b| String::from_utf8(b).ok())
                {
                    out.insert(base.to_string(), Value::String(text));
                }
            }
        }
    }
    out
}

/// `tableAcl` entries as a Set Table ACL body.
fn acl_xml(entries: &[Value]) -> String {
    let field = |policy: Option<&Value>, name: &str| {
        policy
            .and_then(|p| p.get(name))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let identifiers: Vec<SignedIdentifier> = entries
        .iter()
        .filter_map(|e| {
            let id = e.get("id")?.as_str()?.to_string();
            let policy = e.get("accessPolicy");
            let access_policy = AccessPolicy {
                start: field(policy, "start"),
                expiry: field(policy, "expiry"),
                permission: field(policy, "permission"),
            };
            Some(SignedIdentifier {
                id,
                access_policy: (!access_policy.is_empty()).then_some(access_policy),
            })
        })
        .collect();
    String::from_utf8_lossy(&encode_signed_identifiers(&identifiers)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_guids_are_decoded() {
        let mut props = Map::new();
        props.insert(
            "Id".into(),
            Value::String("MTIzNDU2NzgtMTIzNC01Njc4LTlhYmMtZGVmMDEyMzQ1Njc4".into()),
        );
        props.insert("Id@odata.type".into(), Value::String("Edm.Guid".into()));
        let fixed = guids_as_text(&props);
        assert_eq!(fixed["Id"], "12345678-1234-5678-9abc-def012345678");
    }
}
