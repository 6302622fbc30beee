//! Entities: the two keys, the server-owned Timestamp (from which the ETag derives) and the
//! custom properties in the order the client sent them.

use std::borrow::Cow;

use super::edm::{EdmDateTime, EdmValue, EdmValueRef, FractionDigits};

#[derive(Debug, Clone, PartialEq)]
pub struct Property {
    pub name: String,
    pub value: EdmValue,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EntityKey {
    pub partition_key: String,
    pub row_key: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Entity {
    pub partition_key: String,
    pub row_key: String,
    pub timestamp: EdmDateTime,
    pub properties: Vec<Property>,
}

impl Entity {
    #[cfg(test)]
    pub(crate) fn etag(&self) -> String {
        etag_for(self.timestamp)
    }

    /// A custom property by name (system properties are the struct's own fields).
    pub fn property(&self, name: &str) -> Option<&EdmValue> {
        self.properties
            .iter()
            .find(|p| p.name == name)
            .map(|p| &p.value)
    }
}

/// An entity with its properties borrowed (from an [`Entity`], or straight from a stored
/// entity's bytes): what response encoding reads.
#[derive(Debug, Clone)]
pub struct EntityView<'a> {
    pub partition_key: Cow<'a, str>,
    pub row_key: Cow<'a, str>,
    pub timestamp: EdmDateTime,
    pub properties: Vec<(&'a str, EdmValueRef<'a>)>,
}

impl<'a> EntityView<'a> {
    pub fn of(entity: &'a Entity) -> EntityView<'a> {
        EntityView {
            partition_key: Cow::Borrowed(&entity.partition_key),
            row_key: Cow::Borrowed(&entity.row_key),
            timestamp: entity.timestamp,
            properties: entity
                .properties
                .iter()
                .map(|p| (p.name.as_str(), p.value.as_value_ref()))
                .collect(),
        }
    }
    /// The entity with everything copied out of what the view borrows.
    pub fn into_entity(self) -> Entity {
        Entity {
            partition_key: self.partition_key.into_owned(),
            row_key: self.row_key.into_owned(),
            timestamp: self.timestamp,
            properties: self
                .properties
                .into_iter()
                .map(|(name, value)| Property {
                    name: name.to_string(),
                    value: value.to_owned_value(),
                })
                .collect(),
        }
    }
}

/// The weak ETag Azure derives from a Timestamp: `W/"datetime'2021-02-12T08%3A28%3A27.47468Z'"`.
/// The datetime text is the Timestamp's text with `:` percent-encoded; the Python SDK rebuilds
/// ETags the same way, so the two must agree exactly.
#[cfg(test)]
pub(crate) fn etag_for(timestamp: EdmDateTime) -> String {
    etag_with(timestamp, FractionDigits::Trimmed)
}

/// [`etag_for`] with the Timestamp's text written with `digits` (seven digits:
/// `W/"datetime'2021-09-29T20%3A31%3A09.3447688Z'"`).
pub fn etag_with(timestamp: EdmDateTime, digits: FractionDigits) -> String {
    let mut etag = String::with_capacity(48);
    etag.push_str("W/\"datetime'");
    etag_datetime_pieces(timestamp, digits, |piece| etag.push_str(piece));
    etag.push_str("'\"");
    etag
}

/// Hands the ETag's datetime text to `push` in pieces: the Timestamp's text with `:`
/// percent-encoded. Response encoders write it in place with this.
pub(crate) fn etag_datetime_pieces(
    timestamp: EdmDateTime,
    digits: FractionDigits,
    mut push: impl FnMut(&str),
) {
    let text = timestamp.text_with(digits);
    for (i, piece) in text.as_str().split(':').enumerate() {
        if i > 0 {
            push("%3A");
        }
        push(piece);
    }
}

/// Parses an ETag of the `W/"datetime'…'"` form back to its Timestamp; `:` may be sent
/// percent-encoded or not. `None` for anything else (the service answers 400 InvalidInput).
pub(crate) fn parse_etag(etag: &str) -> Option<EdmDateTime> {
    let inner = etag
        .trim()
        .strip_prefix("W/\"datetime'")?
        .strip_suffix("'\"")?;
    let decoded = inner.replace("%3A", ":").replace("%3a", ":");
    EdmDateTime::parse(&decoded).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etag_round_trips_through_timestamp_text() {
        let ts = EdmDateTime::parse("2021-02-12T08:28:27.47468Z").unwrap();
        let etag = etag_for(ts);
        assert_eq!(etag, "W/\"datetime'2021-02-12T08%3A28%3A27.47468Z'\"");
        assert_eq!(parse_etag(&etag), Some(ts));
        assert_eq!(
            parse_etag("W/\"datetime'2021-02-12T08:28:27.47468Z'\""),
            Some(ts)
        );
        assert_eq!(parse_etag("\"0x8D\""), None);
        assert_eq!(parse_etag("W/\"datetime'garbage'\""), None);
    }
}
