//! Cosmos DB for Table's price list in request units (RU), the `RequestCharge` its answers
//! report, as this server models it: pure functions of the operation, the item's bytes and
//! the entities a query examined and returned, rounded to hundredths as Cosmos reports it. Realism throttles by
//! them (`realism::request_units`) and insight states them in its Cosmos advice.
//!
//! The documented points ("Request Units in Azure Cosmos DB", "Optimize request cost in
//! Azure Cosmos DB", "Azure Cosmos DB as a key value store – cost overview"): a point read of
//! a 1 KB item costs 1 RU and of a 100 KB item 10 RU; a write of a 1 KB item 5 RU and of a
//! 100 KB item 50 RU, with indexing off; a replace twice the insert; a query returning 1,000
//! items of 1 KB, 1,000 RU. Between those points the model is linear; [`INDEXED_PROPERTY`]
//! and [`EXAMINED`] are this server's own figures (docs/cosmos.md).

/// RU a write adds for each indexed property (tablestore's figure: Cosmos documents no
/// number, only that "the number of properties … indexed" raises a write's charge).
pub const INDEXED_PROPERTY: f64 = 0.2;
/// RU a query adds for each entity it examines but does not return (tablestore's
/// figure: Cosmos documents that a query's charge grows with the items it loads).
pub const EXAMINED: f64 = 0.1;
/// The least any read or query costs: a point read of up to 1 KB.
pub const MINIMUM: f64 = 1.0;

/// Size in KB (1,024 bytes), at least 1: the documented prices start at 1 KB.
fn kb(bytes: usize) -> f64 {
    (bytes as f64 / 1024.0).max(1.0)
}

fn hundredths(ru: f64) -> f64 {
    (ru * 100.0).round() / 100.0
}

/// A point read (Get Entity) of an item of `item_bytes`: 1 RU at 1 KB, 10 RU at 100 KB.
pub fn point_read(item_bytes: usize) -> f64 {
    hundredths(1.0 + 9.0 * (kb(item_bytes) - 1.0) / 99.0)
}

/// An insert of an item of `item_bytes` (UTF-8 JSON, as Cosmos measures items) with
/// `indexed_properties`: 5 RU at 1 KB, 50 RU at 100 KB, plus the indexing.
pub fn insert(item_bytes: usize, indexed_properties: usize) -> f64 {
    hundredths(
        5.0 + 45.0 * (kb(item_bytes) - 1.0) / 99.0 + INDEXED_PROPERTY * indexed_properties as f64,
    )
}

/// A replace (Update, Merge and both upserts): twice the insert of the same item.
pub fn replace(item_bytes: usize, indexed_properties: usize) -> f64 {
    hundredths(2.0 * insert(item_bytes, indexed_properties))
}

/// A delete, priced as the insert of a 1 KB item without properties (its size is not
/// known before it runs; Cosmos documents a delete's charge only as variable).
pub fn delete() -> f64 {
    insert(0, 0)
}

/// A query page that examined `examined` entities and returned `returned` of them in
/// `returned_bytes`: 1 RU per KB returned, plus the examined-only entities.
pub fn query(examined: u64, returned: u64, returned_bytes: usize) -> f64 {
    let returned_kb = returned_bytes as f64 / 1024.0;
    let skipped = examined.saturating_sub(returned) as f64;
    hundredths((returned_kb + EXAMINED * skipped).max(MINIMUM))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_prices() {
        // Point reads: 1 KB = 1 RU, 100 KB = 10 RU.
        assert_eq!(point_read(1024), 1.0);
        assert_eq!(point_read(100), 1.0, "smaller items cost the 1 KB price");
        assert_eq!(point_read(100 * 1024), 10.0);
        // Writes with indexing off: 1 KB = 5 RU, 100 KB = 50 RU; replace = 2 × insert.
        assert_eq!(insert(1024, 0), 5.0);
        assert_eq!(insert(100 * 1024, 0), 50.0);
        assert_eq!(replace(1024, 0), 10.0);
        // A query returning 1,000 items of 1 KB: 1,000 RU.
        assert_eq!(query(1000, 1000, 1000 * 1024), 1000.0);
    }

    #[test]
    fn prices_grow_with_size_properties_and_examined_entities() {
        assert_eq!(insert(1024, 10), 7.0);
        assert!(insert(50 * 1024, 3) > insert(10 * 1024, 3));
        assert!(point_read(50 * 1024) > point_read(10 * 1024));
        assert_eq!(query(0, 0, 0), MINIMUM);
        assert_eq!(query(1000, 1, 2048), 101.9);
        assert_eq!(delete(), 5.0);
    }
}
