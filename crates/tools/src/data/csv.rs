//! CSV in the layout Azure Storage Explorer exports and imports (its `.typed.csv`): a header
//! row `PartitionKey,RowKey,Timestamp,Name,Name@type,…`, then one row per entity with each
//! property's text and its type name beside it. Storage Explorer writes the bare type name
//! (`Int32`, `String`; issue microsoft/AzureStorageExplorer#8772 shows an export); older
//! versions wrote `Edm.String` (#4212), and both are read. Storage Explorer 1.40 writes the
//! type on the first row only (same issue), so an empty type cell takes the column's last
//! type. An empty cell with an empty type is an absent property; a cell with a type is
//! present, so an empty String survives.
//!
//! Values are written as the wire writes them: Int64 and Int32 in decimal, Double in the
//! shortest form that reads back (`NaN`, `Infinity`, `-Infinity`), DateTime with 7 fraction
//! digits, Guid in hyphenated form, Binary in base64, Boolean as `true`/`false`.

use std::collections::HashMap;
use std::io::Read;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;

use super::DataError;
use crate::model::edm::format_guid;
use crate::model::{EdmDateTime, EdmType, EdmValue, Entity, Property};
use crate::protocol::json::{
    check_entity_limits, decode_text_value, validate_key, validate_property_name,
};

/// The type column's suffix.
const TYPE_SUFFIX: &str = "@type";

/// Writes rows for a fixed set of property columns.
pub(crate) struct Encoder {
    columns: Vec<String>,
    index: HashMap<String, usize>,
    cells: Vec<String>,
}

/// Appends one CSV record (RFC 4180: a field with a comma, quote or line break is quoted,
/// its quotes doubled) and its line break.
fn push_record(out: &mut Vec<u8>, cells: &[String]) {
    for (i, cell) in cells.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        if cell
            .bytes()
            .any(|b| matches!(b, b',' | b'"' | b'\r' | b'\n'))
        {
            out.push(b'"');
            out.extend_from_slice(cell.replace('"', "\"\"").as_bytes());
            out.push(b'"');
        } else {
            out.extend_from_slice(cell.as_bytes());
        }
    }
    out.extend_from_slice(b"\r\n");
}

impl Encoder {
    /// `columns`: every property name of the table, in the order they should appear.
    pub(crate) fn new(columns: Vec<String>) -> Encoder {
        let index = columns
            .iter()
            .enumerate()
            .map(|(i, c)| (c.clone(), i))
            .collect();
        let cells = vec![String::new(); 3 + 2 * columns.len()];
        Encoder {
            columns,
            index,
            cells,
        }
    }

    /// The header row.
    pub(crate) fn header(&mut self, out: &mut Vec<u8>) {
        let mut row = vec![
            "PartitionKey".to_string(),
            "RowKey".to_string(),
            "Timestamp".to_string(),
        ];
        for c in &self.columns {
            row.push(c.clone());
            row.push(format!("{c}{TYPE_SUFFIX}"));
        }
        push_record(out, &row);
    }

    /// One entity's row; properties without a column are left out (the caller collects
    /// every name first).
    pub(crate) fn row(&mut self, entity: &Entity, out: &mut Vec<u8>) {
        for cell in &mut self.cells {
            cell.clear();
        }
        self.cells[0].push_str(&entity.partition_key);
        self.cells[1].push_str(&entity.row_key);
        self.cells[2].push_str(entity.timestamp.text().as_str());
        for p in &entity.properties {
            if let Some(&i) = self.index.get(&p.name) {
                self.cells[3 + 2 * i] = value_text(&p.value);
                self.cells[4 + 2 * i].push_str(type_name(p.value.edm_type()));
            }
        }
        push_record(out, &self.cells);
    }
}

/// Storage Explorer's name of a type: the Edm name without `Edm.`.
pub(crate) fn type_name(ty: EdmType) -> &'static str {
    &ty.name()[4..]
}

/// A type name as Storage Explorer writes it, with or without `Edm.`, any case.
pub(crate) fn parse_type_name(text: &str) -> Option<EdmType> {
    let bare = text.trim();
    let bare = if bare.len() > 4 && bare[..4].eq_ignore_ascii_case("edm.") {
        &bare[4..]
    } else {
        bare
    };
    [
        EdmType::String,
        EdmType::Int32,
        EdmType::Int64,
        EdmType::Double,
        EdmType::Boolean,
        EdmType::DateTime,
        EdmType::Guid,
        EdmType::Binary,
    ]
    .into_iter()
    .find(|t| type_name(*t).eq_ignore_ascii_case(bare))
}

/// A value's cell text.
pub(crate) fn value_text(value: &EdmValue) -> String {
    match value {
        EdmValue::String(s) => s.clone(),
        EdmValue::Boolean(b) => b.to_string(),
        EdmValue::Int32(i) => i.to_string(),
        EdmValue::Int64(i) => i.to_string(),
        EdmValue::Double(d) if d.is_nan() => "NaN".into(),
        EdmValue::Double(d) if d.is_infinite() => {
            if *d > 0.0 { "Infinity" } else { "-Infinity" }.into()
        }
        // Rust's formatting is the shortest text that parses back to the same double.
        EdmValue::Double(d) => d.to_string(),
        EdmValue::DateTime(t) => t.text().as_str().to_string(),
        EdmValue::Guid(g) => format_guid(g),
        EdmValue::Binary(b) => BASE64.encode(b),
    }
}

/// One column of the header.
enum Column {
    PartitionKey,
    RowKey,
    /// Timestamp and the keys' type columns: read and ignored.
    Ignored,
    /// A property with the position of its type column, if it has one.
    Property {
        name: String,
        type_at: Option<usize>,
    },
    /// A type column (read through its property's column).
    Type,
}

/// Entities of a typed CSV stream, in file order.
pub(crate) struct Reader<R> {
    records: ::csv::StringRecordsIntoIter<R>,
    columns: Vec<Column>,
    /// The last type seen in each column (Storage Explorer 1.40 writes it once).
    last_type: Vec<Option<EdmType>>,
    row: u64,
    name: String,
}

impl<R: Read> Reader<R> {
    pub(crate) fn new(input: R, name: impl Into<String>) -> Result<Reader<R>, DataError> {
        let name = name.into();
        let mut reader = ::csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(true)
            .from_reader(input);
        let header = reader
            .headers()
            .map_err(|e| DataError::new(format!("cannot read the header row of {name}: {e}")))?
            .clone();
        let names: Vec<&str> = header
            .iter()
            .map(|h| h.trim_start_matches('\u{feff}'))
            .collect();
        let mut columns = Vec::with_capacity(names.len());
        for h in &names {
            columns.push(match *h {
                "PartitionKey" => Column::PartitionKey,
                "RowKey" => Column::RowKey,
                "Timestamp" => Column::Ignored,
                h if h.ends_with(TYPE_SUFFIX) => {
                    let base = &h[..h.len() - TYPE_SUFFIX.len()];
                    if matches!(base, "PartitionKey" | "RowKey" | "Timestamp") {
                        Column::Ignored
                    } else {
                        Column::Type
                    }
                }
                h => {
                    validate_property_name(h).map_err(|e| {
                        DataError::new(format!("{name}: column {h:?}: {}", e.message))
                    })?;
                    let type_name = format!("{h}{TYPE_SUFFIX}");
                    Column::Property {
                        name: h.to_string(),
                        type_at: names.iter().position(|n| *n == type_name),
                    }
                }
            });
        }
        if !columns.iter().any(|c| matches!(c, Column::PartitionKey))
            || !columns.iter().any(|c| matches!(c, Column::RowKey))
        {
            return Err(DataError::new(format!(
                "{name} has no PartitionKey and RowKey columns (the header row must name them)"
            )));
        }
        let last_type = vec![None; columns.len()];
        Ok(Reader {
            records: reader.into_records(),
            columns,
            last_type,
            row: 1,
            name,
        })
    }

    fn entity(&mut self, record: &::csv::StringRecord) -> Result<Entity, String> {
        let mut partition_key = None;
        let mut row_key = None;
        let mut properties = Vec::new();
        for (i, column) in self.columns.iter().enumerate() {
            let cell = record.get(i).unwrap_or("");
            match column {
                Column::PartitionKey => partition_key = Some(cell.to_string()),
                Column::RowKey => row_key = Some(cell.to_string()),
                Column::Ignored | Column::Type => {}
                Column::Property { name, type_at } => {
                    let declared = match type_at {
                        Some(t) => {
                            let text = record.get(*t).unwrap_or("");
                            if text.trim().is_empty() {
                                if cell.is_empty() {
                                    continue;
                                }
                                self.last_type[i]
                            } else {
                                let ty = parse_type_name(text).ok_or_else(|| {
                                    format!("{text:?} is not a type (column {name})")
                                })?;
                                self.last_type[i] = Some(ty);
                                Some(ty)
                            }
                        }
                        None if cell.is_empty() => continue,
                        None => None,
                    };
                    let value = decode_text_value(name, cell, declared.unwrap_or(EdmType::String))
                        .map_err(|e| e.detail.unwrap_or_else(|| e.message.into_owned()))?;
                    properties.push(Property {
                        name: name.clone(),
                        value,
                    });
                }
            }
        }
        let partition_key = partition_key.unwrap_or_default();
        let row_key = row_key.unwrap_or_default();
        validate_key(&partition_key).map_err(|e| e.message.into_owned())?;
        validate_key(&row_key).map_err(|e| e.message.into_owned())?;
        check_entity_limits(&partition_key, &row_key, &properties)
            .map_err(|e| e.message.into_owned())?;
        Ok(Entity {
            partition_key,
            row_key,
            timestamp: EdmDateTime(0),
            properties,
        })
    }
}

impl<R: Read> Iterator for Reader<R> {
    type Item = Result<Entity, DataError>;

    fn next(&mut self) -> Option<Self::Item> {
        let record = match self.records.next()? {
            Ok(r) => r,
            Err(e) => return Some(Err(DataError::new(format!("{}: {e}", self.name)))),
        };
        self.row += 1;
        let row = self.row;
        Some(
            self.entity(&record)
                .map_err(|m| DataError::new(format!("{} row {row}: {m}", self.name))),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_explorer_layouts_are_read() {
        // Older exports: Edm.-prefixed names; 1.40: bare names on the first row only.
        let text = "PartitionKey,RowKey,Timestamp,Age,Age@type,Name,Name@type\n\
                    p,1,2021-01-01T00:00:00Z,5,Edm.Int32,,String\n\
                    p,2,,7,,x,\n";
        let rows: Vec<Entity> = Reader::new(text.as_bytes(), "t.csv")
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(rows[0].properties[0].value, EdmValue::Int32(5));
        assert_eq!(rows[0].properties[1].value, EdmValue::String(String::new()));
        assert_eq!(rows[1].properties[0].value, EdmValue::Int32(7));
        assert_eq!(rows[1].properties[1].value, EdmValue::String("x".into()));
    }

    #[test]
    fn bad_cells_are_named() {
        let text = "PartitionKey,RowKey,N,N@type\np,1,abc,Int64\n";
        let e = Reader::new(text.as_bytes(), "t.csv")
            .unwrap()
            .next()
            .unwrap()
            .unwrap_err();
        assert_eq!(
            e.0,
            "t.csv row 2: The value of property 'N' is not a valid Edm.Int64."
        );
        let e = Reader::new("A,B\n1,2\n".as_bytes(), "t.csv").err().unwrap();
        assert!(e.0.contains("no PartitionKey and RowKey"), "{e}");
    }
}
