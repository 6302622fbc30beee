//! JSON Lines: one entity per line, in the typed form of a request body
//! ([`crate::protocol::json::write_entity_body`]): `@odata.type` annotations wherever JSON does
//! not imply the type (Int64, Binary, Guid, DateTime, Double's NaN and infinities), so every
//! Edm type and value reads back exactly. Lines carry the Timestamp for reading; an import
//! ignores it (the target stamps its own, as on any write).

use std::io::BufRead;

use super::DataError;
use crate::model::limits::EntityLimits;
use crate::model::{EdmDateTime, Entity, EntityView};
use crate::protocol::json::{check_entity_limits_as, decode_entity_as, write_entity_body};

/// Appends one entity and its newline to `out`.
pub(crate) fn write_line(out: &mut Vec<u8>, entity: &Entity) {
    write_entity_body(out, &EntityView::of(entity), true);
    out.push(b'\n');
}

/// Decodes one line (without its newline) with every check Insert Entity applies.
pub(crate) fn decode_line(line: &[u8]) -> Result<Entity, String> {
    decode_line_as(line, EntityLimits::Accounted)
}

/// [`decode_line`] against `limits`.
pub(crate) fn decode_line_as(line: &[u8], limits: EntityLimits) -> Result<Entity, String> {
    let body = decode_entity_as(line, limits)
        .map_err(|e| e.detail.unwrap_or_else(|| e.message.into_owned()))?;
    let partition_key = body.partition_key.ok_or("the entity has no PartitionKey")?;
    let row_key = body.row_key.ok_or("the entity has no RowKey")?;
    check_entity_limits_as(limits, &partition_key, &row_key, &body.properties)
        .map_err(|e| e.message.into_owned())?;
    Ok(Entity {
        partition_key,
        row_key,
        timestamp: EdmDateTime(0),
        properties: body.properties,
    })
}

/// Entities of a JSON Lines stream, in file order; blank lines are skipped. An error names
/// the line.
pub(crate) struct Reader<R> {
    input: R,
    line: Vec<u8>,
    number: u64,
    name: String,
    limits: EntityLimits,
}

impl<R: BufRead> Reader<R> {
    /// `name` is the file, for messages.
    pub(crate) fn new(input: R, name: impl Into<String>) -> Reader<R> {
        Reader {
            input,
            line: Vec::with_capacity(2048),
            number: 0,
            name: name.into(),
            limits: EntityLimits::Accounted,
        }
    }

    /// The reader checking entities against `limits`.
    pub(crate) fn with_limits(self, limits: EntityLimits) -> Reader<R> {
        Reader { limits, ..self }
    }
}

impl<R: BufRead> Iterator for Reader<R> {
    type Item = Result<Entity, DataError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            self.line.clear();
            match self.input.read_until(b'\n', &mut self.line) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => {
                    return Some(Err(DataError::new(format!(
                        "cannot read {}: {e}",
                        self.name
                    ))))
                }
            }
            self.number += 1;
            let text = self.line.trim_ascii();
            if text.is_empty() {
                continue;
            }
            return Some(decode_line_as(text, self.limits).map_err(|message| {
                DataError::new(format!("{} line {}: {message}", self.name, self.number))
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{EdmValue, Property};

    #[test]
    fn typed_values_survive_a_line() {
        let entity = Entity {
            partition_key: "p'%~ü".into(),
            row_key: String::new(),
            timestamp: EdmDateTime(0),
            properties: vec![
                Property {
                    name: "Big".into(),
                    value: EdmValue::Int64(i64::MIN),
                },
                Property {
                    name: "Nan".into(),
                    value: EdmValue::Double(f64::NAN),
                },
                Property {
                    name: "Whole".into(),
                    value: EdmValue::Double(5.0),
                },
                Property {
                    name: "Bytes".into(),
                    value: EdmValue::Binary(vec![0, 255]),
                },
            ],
        };
        let mut line = Vec::new();
        write_line(&mut line, &entity);
        let back = decode_line(line.trim_ascii()).unwrap();
        assert_eq!(back.partition_key, entity.partition_key);
        assert_eq!(back.row_key, "");
        assert_eq!(back.properties[0], entity.properties[0]);
        assert!(matches!(back.properties[1].value, EdmValue::Double(d) if d.is_nan()));
        assert_eq!(back.properties[2].value, EdmValue::Double(5.0));
        assert_eq!(back.properties[3], entity.properties[3]);
    }

    #[test]
    fn a_bad_line_is_named() {
        let input = b"{\"PartitionKey\":\"a\",\"RowKey\":\"b\"}\n\n{\"PartitionKey\":\"a\"}\n";
        let mut reader = Reader::new(&input[..], "t.jsonl");
        assert!(reader.next().unwrap().is_ok());
        let e = reader.next().unwrap().unwrap_err();
        assert_eq!(e.0, "t.jsonl line 3: the entity has no RowKey");
        assert!(reader.next().is_none());
    }
}
