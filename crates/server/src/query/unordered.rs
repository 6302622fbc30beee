//! Pages in no key order, as Cosmos DB for Table answers queries ("Query results returned by
//! the API for Table aren't sorted in partition key/row key order", Microsoft's API for Table
//! FAQ). Rows come in an [`EntityOrder`]: by default creation order, as the recordings of a
//! real Cosmos account show (an entity replaced or merged keeps its place, one created again
//! after a delete moves to the end), or a seeded shuffle of the keys that shakes out code
//! assuming any order. Either is a fixed order of the table's rows ([`OrderKey`]: a row's
//! place never moves while it exists), so paging is complete with no duplicates even while
//! other writes land, and memory stays bounded: each page scans the planned ranges once and
//! keeps only the `top + 1` smallest order keys past the resume point in a heap, and no more
//! rows than fill the page's byte budget (Cosmos answers at most 4 MB a page, so `$top` may
//! exceed 1,000). The price is a full scan of the planned ranges per page
//! (docs/decisions.md).

use std::collections::BinaryHeap;

use crate::store::{KeyRange, ReadJob, RowSource, StoreError, StoredRow, StoredRows};

/// The order of an unordered result's entities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntityOrder {
    /// Creation order, as Cosmos answers: by each entity's creation instant, its keys
    /// breaking ties.
    Creation,
    /// A fixed shuffle: by a hash of the keys under `seed`.
    Shuffled { seed: u64 },
}

impl EntityOrder {
    /// The place of `row` in this order; an error if its stored bytes are malformed.
    pub(crate) fn key_of(self, row: &StoredRow<'_>) -> Result<OrderKey, StoreError> {
        let (partition_key, row_key) = row.keys()?;
        let position = match self {
            EntityOrder::Creation => {
                let created = row
                    .created()
                    .ok_or_else(|| StoreError::Corrupt("entity".into()))?;
                // Ticks (signed) to an unsigned position in the same order.
                (created.0 as u64) ^ (1 << 63)
            }
            EntityOrder::Shuffled { seed } => {
                key_hash(seed, &[partition_key.as_bytes(), row_key.as_bytes()])
            }
        };
        Ok(OrderKey {
            position,
            partition_key,
            row_key,
        })
    }
}

/// Where a row sits in the unordered result: its position (creation instant or seeded key
/// hash), then its keys (which break ties, so the order is total).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct OrderKey {
    pub(crate) position: u64,
    pub(crate) partition_key: String,
    pub(crate) row_key: String,
}

/// A stable 64-bit hash of `parts` under `seed`: FNV-1a over the parts (each followed by a
/// 0xFF byte, which UTF-8 never contains, so part boundaries count), finished with
/// SplitMix64's mixer so that nearby keys land far apart. Stable across builds and platforms,
/// unlike `std`'s hasher, so tokens survive a restart.
pub(crate) fn key_hash(seed: u64, parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for part in parts {
        for &b in part.iter().chain(std::iter::once(&0xFF)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// One unordered page: the rows, in order, and the order key of the last one when more follow.
#[derive(Debug, Default)]
pub(crate) struct UnorderedPage {
    pub(crate) rows: StoredRows,
    pub(crate) next: Option<OrderKey>,
    /// Rows read from the store for this page.
    pub(crate) examined: u64,
}

/// The stored bytes a Cosmos-flavoured page holds at most (its last row may pass it): Cosmos
/// answers at most 4 MB per page ("Azure Cosmos DB service quotas": "Maximum response size
/// (for example, paginated query)" 4 MB).
pub(crate) const COSMOS_MAX_PAGE_BYTES: usize = 4 * 1024 * 1024;

/// Where the next page of an unordered result starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UnorderedNext {
    /// Past the row at this position.
    After(OrderKey),
    /// At the start of the result: the first page was cut to nothing (`--page-breaks`).
    FromStart,
}

/// Where an unordered page began: its order, and the position it resumed past (`None`: the
/// start of the result).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UnorderedStart {
    pub(crate) order: EntityOrder,
    pub(crate) after: Option<OrderKey>,
}

impl UnorderedStart {
    /// The continuation of a page that began here, cut to its first `n` rows (`rows`: the
    /// page, in order): past the last row kept, or, with none kept, where the page began.
    /// Every row dropped is then the next page's, so none is lost or repeated.
    pub(crate) fn next_after_cut(
        &self,
        rows: &StoredRows,
        n: usize,
    ) -> Result<UnorderedNext, StoreError> {
        match n.checked_sub(1).and_then(|last| rows.iter().nth(last)) {
            Some(row) => Ok(UnorderedNext::After(self.order.key_of(&row)?)),
            None => Ok(match &self.after {
                Some(after) => UnorderedNext::After(after.clone()),
                None => UnorderedNext::FromStart,
            }),
        }
    }
}

/// One page of a query in an [`EntityOrder`], as a read job: reads every row of `ranges`,
/// keeps those `matches` accepts whose order key is past `after`, the `top` smallest, cut
/// where their stored bytes pass `max_bytes` (a page holds at least one row).
pub(crate) struct UnorderedPageRead<M> {
    ranges: Vec<KeyRange>,
    matches: M,
    order: EntityOrder,
    after: Option<OrderKey>,
    top: usize,
    max_bytes: usize,
    page: UnorderedPage,
}

impl<M> UnorderedPageRead<M>
where
    M: Fn(&StoredRow<'_>) -> bool + Send + Sync + 'static,
{
    pub(crate) fn new(
        ranges: Vec<KeyRange>,
        matches: M,
        order: EntityOrder,
        after: Option<OrderKey>,
        top: usize,
    ) -> UnorderedPageRead<M> {
        UnorderedPageRead {
            ranges,
            matches,
            order,
            after,
            top,
            max_bytes: usize::MAX,
            page: UnorderedPage::default(),
        }
    }

    /// The page ends before the row that takes its stored bytes past `max_bytes`.
    pub(crate) fn with_max_bytes(self, max_bytes: usize) -> UnorderedPageRead<M> {
        UnorderedPageRead { max_bytes, ..self }
    }

    pub(crate) fn into_page(self) -> UnorderedPage {
        self.page
    }
}

impl<M> ReadJob for UnorderedPageRead<M>
where
    M: Fn(&StoredRow<'_>) -> bool + Send + Sync + 'static,
{
    fn run(&mut self, rows: &dyn RowSource) -> Result<(), StoreError> {
        // A max-heap of the smallest `top + 1` candidates: one past the page tells whether
        // more follow. Each candidate keeps its own copy of the row; the heap drops its
        // largest while the others alone pass the byte budget (that one cannot be on the
        // page), so it holds about `max_bytes` and two rows at most.
        let (keep, max_bytes) = (self.top.saturating_add(1), self.max_bytes);
        let mut heap: BinaryHeap<(OrderKey, Candidate)> =
            BinaryHeap::with_capacity(keep.min(1024) + 1);
        let (mut bytes, mut dropped) = (0usize, false);
        let mut examined = 0u64;
        let mut failure = None;
        for range in &self.ranges {
            rows.scan_raw(range, &mut |row| {
                examined += 1;
                if !(self.matches)(&row) {
                    return true;
                }
                let key = match self.order.key_of(&row) {
                    Ok(key) => key,
                    Err(e) => {
                        failure = Some(e);
                        return false;
                    }
                };
                if self.after.as_ref().is_some_and(|a| key <= *a) {
                    return true;
                }
                let full = heap.len() >= keep || bytes > max_bytes;
                if full && heap.peek().is_some_and(|(max, _)| key >= *max) {
                    dropped = true;
                    return true;
                }
                let mut copy = StoredRows::default();
                copy.push(&row);
                bytes += row.stored_len();
                heap.push((key, Candidate(copy, row.stored_len())));
                while let Some(largest) = heap.peek().map(|(_, c)| c.1) {
                    let over_budget = heap.len() > 1 && bytes - largest > max_bytes;
                    if heap.len() <= keep && !over_budget {
                        break;
                    }
                    bytes -= largest;
                    heap.pop();
                    dropped = true;
                }
                true
            })?;
            if let Some(e) = failure.take() {
                return Err(e);
            }
        }
        let mut sorted = heap.into_sorted_vec();
        // The page: the smallest keys, at most `top`, until their bytes pass the budget.
        let (mut taken, mut page_bytes) = (0, 0usize);
        for (_, Candidate(_, size)) in &sorted {
            if taken == self.top || (taken > 0 && page_bytes + size > max_bytes) {
                break;
            }
            page_bytes += size;
            taken += 1;
        }
        let more = dropped || sorted.len() > taken;
        sorted.truncate(taken);
        let mut page = UnorderedPage {
            examined,
            ..UnorderedPage::default()
        };
        if more {
            page.next = sorted.last().map(|(k, _)| k.clone());
        }
        for (_, Candidate(copy, _)) in &sorted {
            for row in copy.iter() {
                page.rows.push(&row);
            }
        }
        self.page = page;
        Ok(())
    }
}

/// A row kept for the page and its stored size; ordered by its [`OrderKey`] alone (keys are
/// unique).
struct Candidate(StoredRows, usize);

impl PartialEq for Candidate {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for Candidate {}
impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Candidate {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

/// Table names in seeded-hash order (Cosmos lists tables in neither name nor creation order): of `names` (already filtered, each once), those past
/// `after`, the `top` smallest, and the position of the last when more follow.
pub(crate) fn unordered_table_page(
    names: Vec<String>,
    seed: u64,
    after: Option<&(u64, String)>,
    top: usize,
) -> (Vec<String>, Option<(u64, String)>) {
    // Cosmos's table names are case-sensitive: the name itself is the position.
    let mut keyed: Vec<((u64, String), String)> = names
        .into_iter()
        .map(|name| ((key_hash(seed, &[name.as_bytes()]), name.clone()), name))
        .filter(|(k, _)| after.is_none_or(|a| k > a))
        .collect();
    keyed.sort();
    let more = keyed.len() > top;
    keyed.truncate(top);
    let next = more.then(|| keyed.last().map(|(k, _)| k.clone())).flatten();
    (keyed.into_iter().map(|(_, n)| n).collect(), next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::limits::EntityLimits;
    use crate::model::{EntityKey, IfMatch, WriteKind, WriteOp};
    use crate::store::kv::memory::MemoryKv;
    use crate::store::{read_with, Durability, KvStore, Store};
    use std::sync::Arc;

    type MemoryStore = Arc<KvStore<MemoryKv>>;
    use proptest::prelude::*;

    #[test]
    fn the_hash_depends_on_seed_and_part_boundaries() {
        assert_ne!(key_hash(0, &[b"ab", b"c"]), key_hash(0, &[b"a", b"bc"]));
        assert_ne!(key_hash(0, &[b"a"]), key_hash(1, &[b"a"]));
        assert_eq!(key_hash(7, &[b"a", b"b"]), key_hash(7, &[b"a", b"b"]));
    }

    fn op(kind: WriteKind, limits: EntityLimits, pk: &str, rk: &str) -> WriteOp {
        WriteOp {
            limits,
            kind,
            key: EntityKey {
                partition_key: pk.to_string(),
                row_key: rk.to_string(),
            },
            properties: Vec::new(),
            if_match: IfMatch::Any,
        }
    }

    /// A table holding `keys`, inserted in the order given, 50 to a commit.
    async fn store_with(keys: &[(String, String)]) -> (MemoryStore, crate::store::TableId) {
        let store = KvStore::open(MemoryKv::new(), Durability::Durable).unwrap();
        let info = store
            .create_table(&crate::model::TableRef::new("a", "t"))
            .await
            .unwrap();
        let ops: Vec<WriteOp> = keys
            .iter()
            .map(|(pk, rk)| op(WriteKind::Insert, EntityLimits::JsonItem, pk, rk))
            .collect();
        for chunk in ops.chunks(50) {
            store.commit(info.id, chunk).await.unwrap();
        }
        (store, info.id)
    }

    /// Every page in `order`: all rows once, none twice. Each page holds at most `max_bytes`
    /// of stored rows (its last row may pass it), and page `i` is cut as `cuts[i]` says, as
    /// `--page-breaks` cuts it (0: to nothing, 1: to half, 2 and up: left whole); pages past
    /// the list are left whole.
    async fn all_pages(
        store: &MemoryStore,
        table: crate::store::TableId,
        order: EntityOrder,
        top: usize,
        max_bytes: usize,
        cuts: &[u8],
    ) -> Vec<(String, String)> {
        let mut after = None;
        let mut seen = Vec::new();
        for i in 0.. {
            let job = UnorderedPageRead::new(
                vec![KeyRange::all()],
                |_: &StoredRow<'_>| true,
                order,
                after.clone(),
                top,
            )
            .with_max_bytes(max_bytes);
            let mut page = read_with(&**store, table, job).await.unwrap().into_page();
            assert!(page.rows.len() <= top);
            let sizes: Vec<usize> = page.rows.iter().map(|r| r.stored_len()).collect();
            let within: usize = sizes.iter().take(sizes.len().saturating_sub(1)).sum();
            assert!(within <= max_bytes, "only the last row may pass the budget");
            let keys: Vec<(String, String)> = page.rows.iter().map(|r| r.keys().unwrap()).collect();
            let mut next = page.next.take().map(UnorderedNext::After);
            let keep = match cuts.get(i) {
                Some(0) => Some(0),
                Some(1) => Some(keys.len() / 2),
                _ => None,
            };
            if let Some(n) = keep.filter(|&n| n < keys.len()) {
                let start = UnorderedStart { order, after };
                next = Some(start.next_after_cut(&page.rows, n).unwrap());
            }
            seen.extend(keys.into_iter().take(keep.unwrap_or(usize::MAX)));
            after = match next {
                Some(UnorderedNext::After(k)) => Some(k),
                Some(UnorderedNext::FromStart) => None,
                None => return seen,
            };
        }
        unreachable!("the loop returns")
    }

    fn orders() -> impl Strategy<Value = EntityOrder> {
        prop_oneof![
            Just(EntityOrder::Creation),
            any::<u64>().prop_map(|seed| EntityOrder::Shuffled { seed }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// The unordered pages hold every row exactly once, in the order's sequence (creation
        /// order: as inserted), whatever the page size, byte budget, order and the pages cut
        /// short (empty first pages included).
        #[test]
        fn pages_are_complete_without_duplicates(
            keys in proptest::collection::btree_set(("[a-c]{0,2}", "[a-z0-9]{1,3}"), 0..60)
                .prop_map(|keys| keys.into_iter().collect::<Vec<_>>())
                .prop_shuffle(),
            order in orders(),
            top in 1usize..12,
            max_bytes in prop_oneof![Just(usize::MAX), 0usize..400],
            cuts in proptest::collection::vec(0u8..4, 0..40),
        ) {
            let keys: Vec<(String, String)> = keys;
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let seen = rt.block_on(async {
                let (store, table) = store_with(&keys).await;
                all_pages(&store, table, order, top, max_bytes, &cuts).await
            });
            let want = match order {
                EntityOrder::Creation => keys,
                EntityOrder::Shuffled { seed } => {
                    let mut by_hash = keys;
                    by_hash.sort_by_key(|(p, r)| (key_hash(seed, &[p.as_bytes(), r.as_bytes()]), p.clone(), r.clone()));
                    by_hash
                }
            };
            prop_assert_eq!(seen, want);
        }
    }

    /// Creation order as a Cosmos account answers it (the Python SDK's recording
    /// `test_batch_all_operations_together`): entities replaced, merged or upserted keep their
    /// places, new ones follow in the order written, and one deleted and created again moves
    /// to the end. Under Storage's rules an Insert Or Replace does not read the entity it
    /// replaces, so it counts as created anew.
    #[tokio::test]
    async fn writes_keep_creation_order_as_cosmos_does() {
        let keys: Vec<(String, String)> = ["a", "b", "c", "d", "e"]
            .iter()
            .map(|rk| ("p".to_string(), rk.to_string()))
            .collect();
        let (store, table) = store_with(&keys).await;
        let cosmos = EntityLimits::JsonItem;
        let writes = [
            op(WriteKind::Insert, cosmos, "p", "new"),
            op(WriteKind::Delete, cosmos, "p", "a"),
            op(WriteKind::Update, cosmos, "p", "b"),
            op(WriteKind::Merge, cosmos, "p", "c"),
            op(WriteKind::InsertOrReplace, cosmos, "p", "d"),
            op(WriteKind::InsertOrMerge, cosmos, "p", "upserted"),
        ];
        store.commit(table, &writes).await.unwrap();
        let order = |store, table| async move {
            let seen = all_pages(&store, table, EntityOrder::Creation, 3, usize::MAX, &[]).await;
            seen.into_iter().map(|(_, rk)| rk).collect::<Vec<_>>()
        };
        let want = ["b", "c", "d", "e", "new", "upserted"];
        assert_eq!(order(Arc::clone(&store), table).await, want);
        store
            .commit(table, &[op(WriteKind::Insert, cosmos, "p", "a")])
            .await
            .unwrap();
        let storage_upsert = op(
            WriteKind::InsertOrReplace,
            EntityLimits::Accounted,
            "p",
            "b",
        );
        store.commit(table, &[storage_upsert]).await.unwrap();
        let want = ["c", "d", "e", "new", "upserted", "a", "b"];
        assert_eq!(order(Arc::clone(&store), table).await, want);
    }

    #[test]
    fn tables_page_in_seeded_order() {
        let names: Vec<String> = (0..10).map(|i| format!("Table{i}")).collect();
        let (first, next) = unordered_table_page(names.clone(), 3, None, 4);
        assert_eq!(first.len(), 4);
        let (second, next2) = unordered_table_page(names.clone(), 3, next.as_ref(), 4);
        let (third, next3) = unordered_table_page(names.clone(), 3, next2.as_ref(), 4);
        assert_eq!(third.len(), 2);
        assert!(next3.is_none());
        let mut all: Vec<String> = first.into_iter().chain(second).chain(third).collect();
        assert_ne!(all, names, "not in name order");
        all.sort();
        let mut want = names;
        want.sort();
        assert_eq!(all, want);
    }
}
