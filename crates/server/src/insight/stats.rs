//! Statistics since start, per account, table and partition, in bounded memory: fixed
//! counters and sliding windows per table, Space-Saving top-K for partitions and filtered
//! properties, and at most [`MAX_TABLES`] tables (the least active one makes room). The
//! advice rules are evaluated here as observations arrive.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::advice::{self, Rule};
use super::class::QueryClass;
use super::topk::{Counted, TopK};
use super::window::Window;
use super::{EntityFacts, Event, Observation};
use crate::model::names::table_identity;
use crate::protocol::dialect::Dialect;

/// Tables tracked at once.
pub(crate) const MAX_TABLES: usize = 1024;
/// Partitions kept per table for heat (Space-Saving capacity).
pub(crate) const HOT_PARTITIONS: usize = 32;
/// Partitions kept per table for the per-second rate check.
const SECOND_PARTITIONS: usize = 16;
/// Filtered properties kept per table.
const FILTERED_PROPERTIES: usize = 16;
/// Partitions per table whose run of seconds over the target is followed at once.
const HOT_STREAKS: usize = 16;

#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Summary {
    pub(crate) count: u64,
    pub(crate) sum: u64,
    pub(crate) max: u64,
}

impl Summary {
    fn add(&mut self, v: u64) {
        self.count += 1;
        self.sum += v;
        self.max = self.max.max(v);
    }
}

/// One piece of advice that fired for a table (or, for account rules, an account).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Advice {
    #[serde(flatten)]
    pub(crate) info: advice::RuleInfo,
    /// Observations that met the rule's condition.
    pub(crate) count: u64,
    /// Seconds since start of the first and the latest such observation.
    pub(crate) first_seen_s: u64,
    pub(crate) last_seen_s: u64,
    /// What was observed the first time (a partition, a property, a size).
    pub(crate) example: String,
}

#[derive(Debug, Clone)]
struct TableStats {
    name: String,
    operations: u64,
    operations_window: Window,
    entities_window: Window,
    queries: [u64; QueryClass::ALL.len()],
    examined: u64,
    returned: u64,
    entity_size: Summary,
    properties: Summary,
    batch_operations: Summary,
    batch_bytes: Summary,
    partitions: TopK,
    second: u64,
    partitions_this_second: TopK,
    /// Partitions over the per-partition target in the latest seconds, and for how many
    /// consecutive seconds.
    hot_streaks: Vec<Streak>,
    inserts: u64,
    edge_inserts: u64,
    /// Times the first or the last partition moved on to a new PartitionKey.
    edge_moves: u64,
    /// Distinct seconds in which inserts arrived, and the latest of them.
    insert_seconds: u64,
    last_insert_second: Option<u64>,
    lowest_partition: Option<String>,
    highest_partition: Option<String>,
    scanned_properties: TopK,
    /// First pages that took the first N with `$top` (the portability and no-key-order rules).
    top_first_n: u64,
    advice: BTreeMap<Rule, Advice>,
}

impl TableStats {
    fn new(name: &str) -> TableStats {
        TableStats {
            name: name.to_string(),
            operations: 0,
            operations_window: Window::default(),
            entities_window: Window::default(),
            queries: [0; QueryClass::ALL.len()],
            examined: 0,
            returned: 0,
            entity_size: Summary::default(),
            properties: Summary::default(),
            batch_operations: Summary::default(),
            batch_bytes: Summary::default(),
            partitions: TopK::new(HOT_PARTITIONS),
            second: 0,
            partitions_this_second: TopK::new(SECOND_PARTITIONS),
            hot_streaks: Vec::new(),
            inserts: 0,
            edge_inserts: 0,
            edge_moves: 0,
            insert_seconds: 0,
            last_insert_second: None,
            lowest_partition: None,
            highest_partition: None,
            scanned_properties: TopK::new(FILTERED_PROPERTIES),
            top_first_n: 0,
            advice: BTreeMap::new(),
        }
    }

    /// Counts `entities` served (returned or written) by `partition` at second `now`. Returns
    /// the partition's guaranteed count this second once it has passed the per-partition
    /// target in each of [`advice::SUSTAINED_SECONDS`] consecutive seconds.
    fn touch_partition(&mut self, partition: &str, entities: u64, now: u64) -> Option<u64> {
        self.partitions.add(partition, entities.max(1));
        if self.second != now {
            self.second = now;
            self.partitions_this_second.clear();
        }
        self.partitions_this_second.add(partition, entities);
        let c = self.partitions_this_second.get(partition)?;
        let guaranteed = c.count - c.error;
        if guaranteed <= advice::PARTITION_TARGET_PER_SECOND {
            return None;
        }
        let seconds = self.over_target(partition, now);
        (seconds >= advice::SUSTAINED_SECONDS).then_some(guaranteed)
    }

    /// Records that `partition` is over its target at second `now`; returns how many
    /// consecutive seconds (this one included) it has been.
    fn over_target(&mut self, partition: &str, now: u64) -> u64 {
        let key = super::topk::bounded_key(partition);
        if let Some(s) = self.hot_streaks.iter_mut().find(|s| s.partition == key) {
            if s.last + 1 == now {
                s.seconds += 1;
            } else if s.last != now {
                s.seconds = 1;
            }
            s.last = now;
            return s.seconds;
        }
        // Runs that ended before the previous second are broken and can go.
        self.hot_streaks.retain(|s| s.last + 1 >= now);
        if self.hot_streaks.len() >= HOT_STREAKS {
            // Bounded: the shortest run makes room.
            if let Some(i) =
                (0..self.hot_streaks.len()).min_by_key(|&i| self.hot_streaks[i].seconds)
            {
                self.hot_streaks.swap_remove(i);
            }
        }
        self.hot_streaks.push(Streak {
            partition: key,
            last: now,
            seconds: 1,
        });
        1
    }
}

/// A partition's run of consecutive seconds over the per-partition target.
#[derive(Debug, Clone)]
struct Streak {
    partition: String,
    last: u64,
    seconds: u64,
}

#[derive(Debug, Clone, Default)]
struct AccountStats {
    transactions: Window,
    advice: BTreeMap<Rule, Advice>,
}

/// Everything the insight endpoint shows, updated by one thread.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    /// The dialect of the service the advice is for (its rules: [`Rule::applies_to`]).
    dialect: &'static Dialect,
    tables: HashMap<(String, String), TableStats>,
    accounts: HashMap<String, AccountStats>,
    /// Observations that did not fit the queue and were not counted.
    pub(crate) dropped: u64,
    /// Callers of `Insight::settle` waiting for the queue to drain.
    pub(crate) settle_waiters: Vec<std::sync::mpsc::Sender<()>>,
}

/// A fired rule the caller should log (once per table and rule).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NewAdvice {
    pub(crate) account: String,
    pub(crate) table: Option<String>,
    pub(crate) rule: Rule,
    pub(crate) example: String,
}

fn fire(
    advice: &mut BTreeMap<Rule, Advice>,
    rule: Rule,
    now: u64,
    example: impl FnOnce() -> String,
) -> Option<String> {
    match advice.get_mut(&rule) {
        Some(a) => {
            a.count += 1;
            a.last_seen_s = now;
            None
        }
        None => {
            let example = example();
            advice.insert(
                rule,
                Advice {
                    info: rule.info(),
                    count: 1,
                    first_seen_s: now,
                    last_seen_s: now,
                    example: example.clone(),
                },
            );
            Some(example)
        }
    }
}

impl Stats {
    /// Statistics whose advice is for the service the server answers as.
    pub(crate) fn for_dialect(dialect: &'static Dialect) -> Stats {
        Stats {
            dialect,
            ..Stats::default()
        }
    }

    /// Drops what was learnt about `account`'s tables and transactions (everything when
    /// `None`).
    pub(crate) fn forget(&mut self, account: Option<&str>) {
        match account {
            None => {
                self.tables.clear();
                self.accounts.clear();
            }
            Some(account) => {
                self.tables.retain(|(a, _), _| a != account);
                self.accounts.remove(account);
            }
        }
    }

    /// Counts one transaction for `account` at `now` (every authenticated request counts,
    /// as in Azure's billing of transactions); returns advice that fired for the first time.
    pub(crate) fn transaction(&mut self, account: &str, now: u64) -> Vec<NewAdvice> {
        if !self.accounts.contains_key(account) && self.accounts.len() >= MAX_TABLES {
            return Vec::new();
        }
        let a = self.accounts.entry(account.to_string()).or_default();
        a.transactions.add(now, 1);
        let in_second = a.transactions.at(now);
        let over = |second: u64| a.transactions.at(second) > advice::ACCOUNT_TARGET_PER_SECOND;
        if !Rule::AccountTarget.applies_to(self.dialect) {
            return Vec::new();
        }
        let sustained = now + 1 >= advice::SUSTAINED_SECONDS
            && (0..advice::SUSTAINED_SECONDS).all(|back| over(now - back));
        if sustained {
            let seconds = advice::SUSTAINED_SECONDS;
            if let Some(example) = fire(&mut a.advice, Rule::AccountTarget, now, || {
                format!(
                    "more than {} transactions in each of {seconds} consecutive seconds ({in_second} in the last)",
                    advice::ACCOUNT_TARGET_PER_SECOND
                )
            }) {
                return vec![NewAdvice {
                    account: account.to_string(),
                    table: None,
                    rule: Rule::AccountTarget,
                    example,
                }];
            }
        }
        Vec::new()
    }

    fn table(&mut self, account: &str, table: &str) -> &mut TableStats {
        // One entry per table as the dialect tells tables apart (`Orders` and `orders` are
        // two tables to Cosmos DB, one to Table storage).
        let key = (
            account.to_string(),
            table_identity(table, self.dialect.name_case),
        );
        if !self.tables.contains_key(&key) && self.tables.len() >= MAX_TABLES {
            let quietest = self
                .tables
                .iter()
                .min_by_key(|(_, t)| t.operations)
                .map(|(k, _)| k.clone())
                .expect("the map is full, so not empty");
            self.tables.remove(&quietest);
        }
        self.tables
            .entry(key)
            .or_insert_with(|| TableStats::new(table))
    }

    /// Records one successful operation's observation at second `now` and evaluates the
    /// rules it can trigger. Returns advice that fired for the first time for its table.
    pub(crate) fn observe(&mut self, o: &Observation, now: u64) -> Vec<NewAdvice> {
        let dialect = self.dialect;
        let t = self.table(&o.account, &o.table);
        t.operations += 1;
        t.operations_window.add(now, 1);
        let mut fired: Vec<(Rule, String)> = Vec::new();
        let mut check = |t: &mut TableStats, rule: Rule, example: &dyn Fn() -> String| {
            if !rule.applies_to(dialect) {
                return;
            }
            if let Some(e) = fire(&mut t.advice, rule, now, example) {
                fired.push((rule, e));
            }
        };
        match &o.event {
            Event::Query {
                class,
                examined,
                returned,
                partition,
                properties,
                top_first_n,
            } => {
                let (examined, returned) = (*examined, *returned);
                if *top_first_n {
                    t.top_first_n += 1;
                    if t.top_first_n >= advice::PORTABILITY_REPEATS {
                        let seen = t.top_first_n;
                        check(t, Rule::Portability, &|| {
                            format!(
                                "{seen} queries took the first {returned} entities of a {class} in key order with $top"
                            )
                        });
                        check(t, Rule::NoKeyOrder, &|| {
                            format!(
                                "{seen} queries took {returned} entities of a {class} with $top, in no key order"
                            )
                        });
                    }
                }
                let cross_partition =
                    partition.is_none() && !matches!(class, QueryClass::Point | QueryClass::Empty);
                if cross_partition && examined >= advice::LARGE_SCAN {
                    check(t, Rule::RequestUnitCost, &|| {
                        let (ru, seconds) = advice::query_request_units(examined, returned);
                        format!(
                            "a {class} filtering on {} read {examined} entities and returned {returned}: about {ru} RU (1 KB entities), {seconds:.1} s of a 400 RU/s table",
                            describe(properties)
                        )
                    });
                }
                t.queries[class.index()] += 1;
                t.examined += examined;
                t.returned += returned;
                t.entities_window.add(now, returned);
                let mut hot = None;
                if let Some(p) = partition {
                    hot = t.touch_partition(p, returned, now).map(|n| (p.clone(), n));
                }
                if let Some((p, n)) = hot {
                    check(t, Rule::HotPartition, &|| hot_example(&p, "served", n));
                }
                let wasteful = examined >= advice::LARGE_SCAN && returned * 10 < examined;
                match class {
                    QueryClass::TableScan if wasteful => {
                        check(t, Rule::TableScan, &|| {
                            format!(
                                "a table scan filtering on {} read {examined} entities and returned {returned}",
                                describe(properties)
                            )
                        });
                    }
                    QueryClass::PartitionScan
                        if examined >= 100
                            && returned * 2 < examined
                            && properties.iter().any(|p| !is_key(p)) =>
                    {
                        // Only non-key properties want an index of their own.
                        let indexable: Vec<&String> =
                            properties.iter().filter(|p| !is_key(p)).collect();
                        let mut repeated = None;
                        for p in &indexable {
                            t.scanned_properties.add(p, 1);
                        }
                        for c in t.scanned_properties.top() {
                            if c.count - c.error >= advice::PARTITION_SCAN_REPEATS
                                && indexable.contains(&&c.key)
                            {
                                repeated = Some(c);
                                break;
                            }
                        }
                        if let Some(c) = repeated {
                            check(t, Rule::PartitionScanOnProperty, &|| {
                                format!(
                                    "{} partition scans filtered on '{}' (the last read {examined}, returned {returned})",
                                    c.count - c.error,
                                    c.key
                                )
                            });
                        }
                    }
                    _ => {}
                }
                if !matches!(class, QueryClass::TableScan)
                    && examined >= advice::LARGE_SCAN
                    && returned * 100 < examined
                {
                    check(t, Rule::ExaminedFarMoreThanReturned, &|| {
                        format!("a {class} read {examined} entities and returned {returned}")
                    });
                }
            }
            Event::Read { partition } => {
                t.entities_window.add(now, 1);
                if let Some(n) = t.touch_partition(partition, 1, now) {
                    check(t, Rule::HotPartition, &|| {
                        hot_example(partition, "served", n)
                    });
                }
            }
            Event::Write { entities, batch } => {
                t.entities_window.add(now, entities.len() as u64);
                if let Some(b) = batch {
                    t.batch_operations.add(b.operations as u64);
                    t.batch_bytes.add(b.body_bytes as u64);
                    if advice::is_large_batch(b.body_bytes) {
                        let (ops, bytes) = (b.operations, b.body_bytes);
                        check(t, Rule::LargeBatch, &|| {
                            format!("a batch of {ops} operations, {bytes} bytes")
                        });
                    }
                }
                for e in entities {
                    record_entity(t, e, now, &mut check);
                }
            }
        }
        fired
            .into_iter()
            .map(|(rule, example)| NewAdvice {
                account: o.account.clone(),
                table: Some(o.table.clone()),
                rule,
                example,
            })
            .collect()
    }

    /// The statistics and advice of every account and table (one account when given).
    pub(crate) fn snapshot(&self, now: u64, account: Option<&str>) -> serde_json::Value {
        let mut accounts: BTreeMap<&str, serde_json::Value> = BTreeMap::new();
        for (name, a) in &self.accounts {
            if account.is_some_and(|x| x != name) {
                continue;
            }
            accounts.insert(
                name,
                serde_json::json!({
                    "transactions_per_second": a.transactions.rate(now, 0),
                    "peak_transactions_per_second": a.transactions.peak(now),
                    "advice": a.advice.values().collect::<Vec<_>>(),
                    "tables": [],
                }),
            );
        }
        let mut tables: Vec<(&(String, String), &TableStats)> = self
            .tables
            .iter()
            .filter(|((a, _), _)| account.is_none_or(|x| x == a))
            .collect();
        tables.sort_by(|a, b| a.0.cmp(b.0));
        for ((acct, _), t) in tables {
            let entry = accounts.entry(acct.as_str()).or_insert_with(|| {
                serde_json::json!({"transactions_per_second": 0.0, "peak_transactions_per_second": 0, "advice": [], "tables": []})
            });
            let queries: serde_json::Map<String, serde_json::Value> = QueryClass::ALL
                .iter()
                .map(|c| (c.as_str().to_string(), t.queries[c.index()].into()))
                .collect();
            let partitions: Vec<serde_json::Value> = t
                .partitions
                .top()
                .into_iter()
                .map(|Counted { key, count, error }| {
                    serde_json::json!({"partition_key": key, "entities": count, "overestimate_at_most": error})
                })
                .collect();
            let table = serde_json::json!({
                "name": t.name,
                "operations": t.operations,
                "operations_per_second": t.operations_window.rate(now, 0),
                "entities_per_second": t.entities_window.rate(now, 0),
                "peak_entities_per_second": t.entities_window.peak(now),
                "queries": queries,
                "examined": t.examined,
                "returned": t.returned,
                "examined_per_returned": if t.returned == 0 { serde_json::Value::Null } else { (t.examined as f64 / t.returned as f64).into() },
                "entity_size_bytes": t.entity_size,
                "properties": t.properties,
                "batch_operations": t.batch_operations,
                "batch_bytes": t.batch_bytes,
                "inserts": t.inserts,
                "inserts_at_first_or_last_partition": t.edge_inserts,
                "insert_seconds": t.insert_seconds,
                "first_or_last_partition_moves": t.edge_moves,
                "hot_partitions": partitions,
                "advice": t.advice.values().collect::<Vec<_>>(),
            });
            if let Some(list) = entry["tables"].as_array_mut() {
                list.push(table);
            }
        }
        serde_json::json!({
            "window_seconds": super::window::WINDOW_SECONDS,
            "uptime_seconds": now,
            "dropped_observations": self.dropped,
            "accounts": accounts,
            "rules": Rule::ALL.iter().map(|r| r.info()).collect::<Vec<_>>(),
        })
    }

    /// Every advice currently active, as `(account, table, rule)`.
    pub(crate) fn active_advice(&self) -> Vec<(String, Option<String>, Rule)> {
        let mut out = Vec::new();
        for (a, s) in &self.accounts {
            out.extend(s.advice.keys().map(|r| (a.clone(), None, *r)));
        }
        for ((a, _), t) in &self.tables {
            out.extend(
                t.advice
                    .keys()
                    .map(|r| (a.clone(), Some(t.name.clone()), *r)),
            );
        }
        out.sort();
        out
    }

    /// Tables tracked and the bytes their partition and property keys hold (for the
    /// memory-bound test).
    #[cfg(test)]
    pub(crate) fn footprint(&self) -> (usize, usize) {
        let keys = self
            .tables
            .values()
            .map(|t| {
                t.partitions.key_bytes()
                    + t.partitions_this_second.key_bytes()
                    + t.scanned_properties.key_bytes()
                    + t.hot_streaks
                        .iter()
                        .map(|s| s.partition.len())
                        .sum::<usize>()
                    + t.lowest_partition.as_ref().map_or(0, String::len)
                    + t.highest_partition.as_ref().map_or(0, String::len)
            })
            .sum();
        (self.tables.len(), keys)
    }
}

/// The example of a hot partition: what it did in each second of its run.
fn hot_example(partition: &str, did: &str, last_second: u64) -> String {
    format!(
        "partition '{partition}' {did} more than {} entities in each of {} consecutive seconds ({last_second} in the last)",
        advice::PARTITION_TARGET_PER_SECOND,
        advice::SUSTAINED_SECONDS
    )
}

fn is_key(property: &str) -> bool {
    property == "PartitionKey" || property == "RowKey"
}

fn describe(properties: &[String]) -> String {
    if properties.is_empty() {
        "nothing (no filter)".to_string()
    } else {
        properties.join(", ")
    }
}

/// Records a rule that held (the example text is built only the first time).
type Check<'a> = dyn FnMut(&mut TableStats, Rule, &dyn Fn() -> String) + 'a;

fn record_entity(t: &mut TableStats, e: &EntityFacts, now: u64, check: &mut Check<'_>) {
    if let Some(n) = t.touch_partition(&e.partition, 1, now) {
        let p = e.partition.clone();
        check(t, Rule::HotPartition, &|| hot_example(&p, "took", n));
    }
    if e.deleted {
        return;
    }
    t.entity_size.add(e.size as u64);
    t.properties.add(e.properties as u64);
    if advice::is_large_entity(e.size) {
        let size = e.size;
        check(t, Rule::LargeEntity, &|| {
            format!("an entity of {size} bytes")
        });
    }
    if advice::is_wide_entity(e.properties) {
        let n = e.properties;
        check(t, Rule::WideEntity, &|| {
            format!("an entity with {n} properties")
        });
    }
    if e.inserted {
        t.inserts += 1;
        if t.last_insert_second != Some(now) {
            t.last_insert_second = Some(now);
            t.insert_seconds += 1;
        }
        let pk = super::topk::bounded_key(&e.partition);
        let first = t.highest_partition.is_none();
        let at_end = t.highest_partition.as_ref().is_none_or(|h| pk >= *h);
        let at_start = t.lowest_partition.as_ref().is_none_or(|l| pk <= *l);
        // A new PartitionKey beyond either end: the edge moved.
        let moved = !first
            && (t.highest_partition.as_ref().is_some_and(|h| pk > *h)
                || t.lowest_partition.as_ref().is_some_and(|l| pk < *l));
        if moved {
            t.edge_moves += 1;
        }
        if at_end {
            t.highest_partition = Some(pk.clone());
        }
        if at_start {
            t.lowest_partition = Some(pk);
        }
        if at_end || at_start {
            t.edge_inserts += 1;
        }
        if t.inserts >= advice::APPEND_MIN_INSERTS
            && t.edge_inserts * 10 >= t.inserts * 9
            && t.insert_seconds >= advice::APPEND_MIN_SECONDS
            && t.edge_moves >= advice::APPEND_MIN_EDGE_MOVES
        {
            let (edge, all, seconds, moves) =
                (t.edge_inserts, t.inserts, t.insert_seconds, t.edge_moves);
            let p = e.partition.clone();
            check(t, Rule::PrependAppend, &|| {
                format!(
                    "{edge} of {all} inserts, arriving over {seconds} seconds, went to the first or last partition, which moved on to a new PartitionKey {moves} times (latest '{p}')"
                )
            });
        }
    }
}
