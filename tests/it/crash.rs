//! Crash safety of the real binary: concurrent inserts, merges, replaces, deletes, upserts and
//! `$batch` change sets against a data folder, `kill -9` at a random moment, restart on the
//! same folder, and a check of everything the server had acknowledged.
//!
//! Each worker owns one partition and runs its operations one after another, so its model is
//! a sequence of steps. After a restart the partition must look exactly like the model after
//! some number `k` of steps (a prefix, which also makes every change set all-or-nothing):
//!
//! * `durable` mode: `k` is every acknowledged step, plus possibly the one in flight when the
//!   server died; acknowledged states must match in content *and* ETag.
//! * `relaxed` mode: any `k` (the last moments may be lost), but still a prefix, and after a
//!   graceful shutdown (SIGTERM) every acknowledged step.
//!
//! Rounds, workers and the time before each kill are bounded; `TABLESTORE_LONG_TESTS=1` runs
//! many more rounds, `TABLESTORE_CRASH_SEED=<n>` replays a run (the seed is printed).

use crate::common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::batch::BatchBody;
use common::child::{ChildServer, Client, Signer};
use rand::{RngExt as _, SeedableRng as _};
use rand_pcg::Pcg64;
use serde_json::{json, Map, Value};

const TABLE: &str = "crashtest";
const KEYS_PER_WORKER: usize = 24;

fn long_tests() -> bool {
    std::env::var("TABLESTORE_LONG_TESTS").is_ok_and(|v| v == "1")
}

fn seed() -> u64 {
    std::env::var("TABLESTORE_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        })
}

/// The seeded generator that picks operations (Pcg64: the same run for the same seed).
#[derive(Clone)]
struct Rng(Pcg64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(Pcg64::seed_from_u64(seed))
    }
    fn next(&mut self) -> u64 {
        self.0.random()
    }
    fn below(&mut self, n: usize) -> usize {
        self.0.random_range(0..n)
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        self.0.random_range(lo..hi)
    }
}

/// Custom properties of an entity (no keys, no Timestamp).
type Props = BTreeMap<String, Value>;

#[derive(Clone, Debug, PartialEq)]
enum State {
    Absent,
    /// `etag` is `None` when the write was never acknowledged (its ETag is unknown).
    Present {
        etag: Option<String>,
        props: Props,
    },
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Insert,
    /// PUT with If-Match.
    Replace,
    /// MERGE with If-Match.
    Merge,
    /// DELETE with If-Match.
    Delete,
    /// PUT without If-Match.
    InsertOrReplace,
    /// MERGE without If-Match.
    InsertOrMerge,
}

struct SubOp {
    key: usize,
    kind: Kind,
    /// Properties sent (empty for deletes).
    props: Props,
    /// The ETag sent in If-Match.
    if_match: Option<String>,
}

/// One request of a worker: a single operation or a change set, and what it did to the model.
#[derive(Debug)]
struct Step {
    what: String,
    changes: Vec<(usize, State)>,
    acknowledged: bool,
}

struct Worker {
    id: usize,
    rng: Rng,
    /// State verified after the last restart.
    base: Vec<State>,
    /// Steps since then.
    steps: Vec<Step>,
    /// Batches acknowledged, over the whole test.
    batches: usize,
    acknowledged: usize,
}

fn row_key(k: usize) -> String {
    format!("r{k:03}")
}

fn partition(worker: usize) -> String {
    format!("w{worker:02}")
}

impl Worker {
    fn current(&self) -> Vec<State> {
        let mut s = self.base.clone();
        for step in &self.steps {
            for (k, state) in &step.changes {
                s[*k] = state.clone();
            }
        }
        s
    }

    fn random_props(&mut self, seq: usize) -> Props {
        let mut p = Props::new();
        p.insert("worker".into(), json!(self.id as i64));
        p.insert("seq".into(), json!(seq as i64));
        let field = format!("f{}", self.rng.below(4));
        p.insert(field, json!(self.rng.range(0, 1 << 30) as i64));
        let len = match self.rng.below(20) {
            0 => 20_000, // occasionally a large value
            _ => self.rng.below(1500),
        };
        let c = (b'a' + self.rng.below(26) as u8) as char;
        p.insert("data".into(), json!(c.to_string().repeat(len)));
        p
    }

    fn choose(&mut self, key: usize, current: &State, seq: usize) -> SubOp {
        let props = self.random_props(seq);
        match current {
            State::Absent => {
                let kind = match self.rng.below(3) {
                    0 => Kind::InsertOrMerge,
                    1 => Kind::InsertOrReplace,
                    _ => Kind::Insert,
                };
                SubOp {
                    key,
                    kind,
                    props,
                    if_match: None,
                }
            }
            State::Present { etag, .. } => {
                let kind = match self.rng.below(6) {
                    0 | 1 => Kind::Merge,
                    2 => Kind::Replace,
                    3 => Kind::Delete,
                    4 => Kind::InsertOrReplace,
                    _ => Kind::InsertOrMerge,
                };
                let if_match = match kind {
                    Kind::Merge | Kind::Replace | Kind::Delete => {
                        Some(etag.clone().expect("verified states carry ETags"))
                    }
                    _ => None,
                };
                let props = if matches!(kind, Kind::Delete) {
                    Props::new()
                } else {
                    props
                };
                SubOp {
                    key,
                    kind,
                    props,
                    if_match,
                }
            }
        }
    }
}

fn entity_body(worker: usize, op: &SubOp) -> Vec<u8> {
    let mut m = Map::new();
    m.insert("PartitionKey".into(), json!(partition(worker)));
    m.insert("RowKey".into(), json!(row_key(op.key)));
    for (k, v) in &op.props {
        m.insert(k.clone(), v.clone());
    }
    Value::Object(m).to_string().into_bytes()
}

fn entity_path(worker: usize, key: usize) -> String {
    format!(
        "/{TABLE}(PartitionKey='{}',RowKey='{}')",
        partition(worker),
        row_key(key)
    )
}

/// The state an operation leaves, given the state before and the ETag it got.
fn after(op: &SubOp, before: &State, etag: Option<String>) -> State {
    let merged = |old: &State| {
        let mut p = match old {
            State::Present { props, .. } => props.clone(),
            State::Absent => Props::new(),
        };
        for (k, v) in &op.props {
            p.insert(k.clone(), v.clone());
        }
        p
    };
    match op.kind {
        Kind::Delete => State::Absent,
        Kind::Insert | Kind::Replace | Kind::InsertOrReplace => State::Present {
            etag,
            props: op.props.clone(),
        },
        Kind::Merge | Kind::InsertOrMerge => State::Present {
            etag,
            props: merged(before),
        },
    }
}

/// Method, path and headers of one operation.
fn request_line(worker: usize, op: &SubOp) -> (&'static str, String, Vec<(&'static str, String)>) {
    let mut headers = Vec::new();
    if let Some(e) = &op.if_match {
        headers.push(("If-Match", e.clone()));
    }
    match op.kind {
        Kind::Insert => {
            headers.push(("Prefer", "return-no-content".into()));
            ("POST", format!("/{TABLE}"), headers)
        }
        Kind::Replace | Kind::InsertOrReplace => ("PUT", entity_path(worker, op.key), headers),
        Kind::Merge | Kind::InsertOrMerge => ("MERGE", entity_path(worker, op.key), headers),
        Kind::Delete => ("DELETE", entity_path(worker, op.key), headers),
    }
}

fn batch_body(account_url: &str, worker: usize, ops: &[SubOp]) -> BatchBody {
    let mut batch = BatchBody::with_boundaries(
        account_url,
        &format!("batch_w{worker}"),
        &format!("changeset_w{worker}"),
    );
    for op in ops {
        let (method, path, headers) = request_line(worker, op);
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let entity = (!matches!(op.kind, Kind::Delete))
            .then(|| String::from_utf8(entity_body(worker, op)).expect("utf-8"));
        batch.op(method, &path, &headers, entity.as_deref());
    }
    batch
}

/// Sub-response statuses and ETags, in order.
fn sub_responses(text: &str) -> Vec<(u16, Option<String>)> {
    let mut out = Vec::new();
    for part in text.split("\r\nHTTP/1.1 ").skip(1) {
        let status = part
            .split(' ')
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let etag = part
            .lines()
            .take_while(|l| !l.is_empty())
            .find_map(|l| l.strip_prefix("ETag: ").map(str::to_string));
        out.push((status, etag));
    }
    out
}

/// Runs one worker until `stop`, a transport error (the server died), or `max_steps`.
async fn run_worker(
    mut w: Worker,
    client: Client,
    stop: Arc<AtomicBool>,
    max_steps: usize,
) -> Worker {
    let mut seq = w.acknowledged * 1000;
    let mut done = 0;
    while !stop.load(Ordering::Relaxed) && done < max_steps {
        done += 1;
        seq += 1;
        let current = w.current();
        let batch = w.rng.below(4) == 0;
        let result = if batch {
            let n = 2 + w.rng.below(4);
            let mut keys: Vec<usize> = Vec::new();
            while keys.len() < n {
                let k = w.rng.below(KEYS_PER_WORKER);
                if !keys.contains(&k) {
                    keys.push(k);
                }
            }
            let ops: Vec<SubOp> = keys
                .iter()
                .map(|&k| w.choose(k, &current[k], seq))
                .collect();
            let batch = batch_body(&client.account_url(), w.id, &ops);
            let reply = client.send_batch(&batch).await;
            let what = format!(
                "batch {:?}",
                ops.iter().map(|o| (o.key, o.kind)).collect::<Vec<_>>()
            );
            match reply {
                Ok(r) => {
                    let text = r.text();
                    let subs = sub_responses(&text);
                    assert_eq!(r.status.as_u16(), 202, "{what}: {text}");
                    assert_eq!(subs.len(), ops.len(), "{what}: {text}");
                    let changes = ops
                        .iter()
                        .zip(&subs)
                        .map(|(op, (status, etag))| {
                            assert_eq!(*status, 204, "{what}: {text}");
                            (op.key, after(op, &current[op.key], etag.clone()))
                        })
                        .collect();
                    w.batches += 1;
                    Ok(Step {
                        what,
                        changes,
                        acknowledged: true,
                    })
                }
                Err(_) => Err(Step {
                    what,
                    changes: ops
                        .iter()
                        .map(|op| (op.key, after(op, &current[op.key], None)))
                        .collect(),
                    acknowledged: false,
                }),
            }
        } else {
            let k = w.rng.below(KEYS_PER_WORKER);
            let op = w.choose(k, &current[k], seq);
            let (method, path, headers) = request_line(w.id, &op);
            let header_refs: Vec<(&str, &str)> =
                headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let body = (!matches!(op.kind, Kind::Delete)).then(|| entity_body(w.id, &op));
            let what = format!("{:?} of {}", op.kind, row_key(k));
            match client.send(method, &path, &header_refs, body).await {
                Ok(r) => {
                    assert_eq!(r.status.as_u16(), 204, "{what}: {}", r.text());
                    let etag = r.header("etag").map(str::to_string);
                    assert_eq!(
                        etag.is_some(),
                        !matches!(op.kind, Kind::Delete),
                        "{what}: ETag header"
                    );
                    Ok(Step {
                        what,
                        changes: vec![(k, after(&op, &current[k], etag))],
                        acknowledged: true,
                    })
                }
                Err(_) => Err(Step {
                    what,
                    changes: vec![(k, after(&op, &current[k], None))],
                    acknowledged: false,
                }),
            }
        };
        match result {
            Ok(step) => {
                w.acknowledged += 1;
                w.steps.push(step);
            }
            Err(step) => {
                w.steps.push(step);
                break;
            }
        }
    }
    w
}

/// Every entity of the table, by partition and row key, with its ETag and custom properties.
async fn read_all(client: &Client) -> BTreeMap<(String, String), (String, Props)> {
    read_table(client).await.expect("the table exists")
}

/// [`read_all`], or `None` when the table does not exist.
async fn read_table(client: &Client) -> Option<BTreeMap<(String, String), (String, Props)>> {
    let mut out = BTreeMap::new();
    let mut next: Option<(String, String)> = None;
    for _ in 0..1000 {
        let path = match &next {
            None => format!("/{TABLE}()"),
            Some((pk, rk)) => format!("/{TABLE}()?NextPartitionKey={pk}&NextRowKey={rk}"),
        };
        let r = client.send("GET", &path, &[], None).await.expect("query");
        if r.status.as_u16() == 404 && r.text().contains("TableNotFound") {
            return None;
        }
        assert_eq!(r.status.as_u16(), 200, "{}", r.text());
        for e in r.json()["value"].as_array().expect("value").iter() {
            let obj = e.as_object().expect("entity object");
            let pk = obj["PartitionKey"].as_str().expect("pk").to_string();
            let rk = obj["RowKey"].as_str().expect("rk").to_string();
            let etag = obj["odata.etag"].as_str().expect("etag").to_string();
            let props: Props = obj
                .iter()
                .filter(|(k, _)| {
                    !matches!(k.as_str(), "PartitionKey" | "RowKey" | "Timestamp")
                        && !k.starts_with("odata.")
                        && !k.contains("@odata")
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            out.insert((pk, rk), (etag, props));
        }
        let pk = r.header("x-ms-continuation-NextPartitionKey");
        let rk = r.header("x-ms-continuation-NextRowKey");
        match (pk, rk) {
            (Some(pk), Some(rk)) => next = Some((pk.to_string(), rk.to_string())),
            _ => return Some(out),
        }
    }
    panic!("more than 1000 pages");
}

fn matches(expected: &State, observed: Option<&(String, Props)>) -> bool {
    match (expected, observed) {
        (State::Absent, None) => true,
        (State::Present { etag, props }, Some((e, p))) => {
            props == p && etag.as_ref().is_none_or(|want| want == e)
        }
        _ => false,
    }
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Expect {
    /// Every acknowledged step, and maybe the one in flight.
    Durable,
    /// Any prefix of the steps.
    Prefix,
}

/// Checks each worker's partition against its model and resets the model to what is stored.
fn verify(
    workers: &mut [Worker],
    stored: &BTreeMap<(String, String), (String, Props)>,
    expect: Expect,
    round: usize,
) {
    for (pk, rk) in stored.keys() {
        let known = workers.iter().any(|w| *pk == partition(w.id))
            && (0..KEYS_PER_WORKER).any(|k| *rk == row_key(k));
        assert!(known, "round {round}: unexpected entity ({pk}, {rk})");
    }
    for w in workers.iter_mut() {
        let pk = partition(w.id);
        let observed: Vec<Option<&(String, Props)>> = (0..KEYS_PER_WORKER)
            .map(|k| stored.get(&(pk.clone(), row_key(k))))
            .collect();
        let acked = w.steps.iter().filter(|s| s.acknowledged).count();
        assert!(
            w.steps.iter().take(acked).all(|s| s.acknowledged),
            "only the last step may be unacknowledged"
        );
        let candidates: Vec<usize> = match expect {
            Expect::Durable => (acked..=w.steps.len()).collect(),
            Expect::Prefix => (0..=w.steps.len()).rev().collect(),
        };
        let mut state = w.base.clone();
        let mut prefixes = vec![state.clone()];
        for step in &w.steps {
            for (k, s) in &step.changes {
                state[*k] = s.clone();
            }
            prefixes.push(state.clone());
        }
        let found = candidates.iter().find(|&&n| {
            prefixes[n]
                .iter()
                .zip(&observed)
                .all(|(e, o)| matches(e, *o))
        });
        if found.is_none() {
            let n = candidates[0];
            let diffs: Vec<String> = prefixes[n]
                .iter()
                .zip(&observed)
                .enumerate()
                .filter(|(_, (e, o))| !matches(e, **o))
                .map(|(k, (e, o))| format!("{}: expected {e:?}, stored {o:?}", row_key(k)))
                .collect();
            let last: Vec<String> = w
                .steps
                .iter()
                .rev()
                .take(3)
                .map(|s| format!("{} (ack {})", s.what, s.acknowledged))
                .collect();
            panic!(
                "round {round}, worker {}: stored state matches no allowed prefix ({expect:?}, {} steps, {acked} acknowledged); first candidate {n} differs: {diffs:#?}; last steps: {last:#?}",
                w.id,
                w.steps.len()
            );
        }
        w.base = observed
            .iter()
            .map(|o| match o {
                None => State::Absent,
                Some((etag, props)) => State::Present {
                    etag: Some(etag.clone()),
                    props: props.clone(),
                },
            })
            .collect();
        w.steps.clear();
    }
}

struct Run {
    dir: tempfile::TempDir,
    args: Vec<&'static str>,
    workers: Vec<Worker>,
    rng: Rng,
    /// Tables scanned in turn while the workers write (see `churn_ram_tier`).
    scanned: Vec<&'static str>,
}

impl Run {
    fn new(args: &[&'static str], n_workers: usize) -> Run {
        let seed = seed();
        println!("TABLESTORE_CRASH_SEED={seed}");
        let mut rng = Rng::new(seed);
        let workers = (0..n_workers)
            .map(|id| Worker {
                id,
                rng: Rng::new(rng.next()),
                base: vec![State::Absent; KEYS_PER_WORKER],
                steps: Vec::new(),
                batches: 0,
                acknowledged: 0,
            })
            .collect();
        Run {
            dir: tempfile::tempdir().expect("temp dir"),
            args: args.to_vec(),
            workers,
            rng,
            scanned: Vec::new(),
        }
    }

    fn start(&self) -> (ChildServer, Client) {
        let started = Instant::now();
        let server = ChildServer::try_start(self.dir.path(), &self.args)
            .unwrap_or_else(|f| panic!("tablestore did not start: {f:?}"));
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "start-up took {:?}",
            started.elapsed()
        );
        let client = Client::new(&server.endpoint(), Signer::dev());
        (server, client)
    }

    /// Drives all workers for a while, then stops them (`kill`: by killing the server).
    async fn drive(
        &mut self,
        client: &Client,
        run_for: Duration,
        max_steps: usize,
    ) -> Arc<AtomicBool> {
        let stop = Arc::new(AtomicBool::new(false));
        let tasks: Vec<_> = std::mem::take(&mut self.workers)
            .into_iter()
            .map(|w| tokio::spawn(run_worker(w, client.clone(), Arc::clone(&stop), max_steps)))
            .collect();
        tokio::time::sleep(run_for).await;
        stop.store(true, Ordering::Relaxed);
        for t in tasks {
            self.workers.push(t.await.expect("worker panicked"));
        }
        stop
    }

    /// Like `drive`, but `kill -9`s the server while the workers run.
    async fn drive_and_kill(&mut self, server: ChildServer, client: &Client, run_for: Duration) {
        let stop = Arc::new(AtomicBool::new(false));
        let tasks: Vec<_> = std::mem::take(&mut self.workers)
            .into_iter()
            .map(|w| tokio::spawn(run_worker(w, client.clone(), Arc::clone(&stop), 100_000)))
            .collect();
        let reader = tokio::spawn(scan_in_turn(
            client.clone(),
            self.scanned.clone(),
            Arc::clone(&stop),
        ));
        tokio::time::sleep(run_for).await;
        server.kill9();
        // Workers stop at their first failed request; the flag bounds the rest.
        tokio::time::sleep(Duration::from_millis(50)).await;
        stop.store(true, Ordering::Relaxed);
        for t in tasks {
            self.workers.push(t.await.expect("worker panicked"));
        }
        reader.await.expect("reader panicked");
    }

    fn totals(&self) -> (usize, usize) {
        (
            self.workers.iter().map(|w| w.acknowledged).sum(),
            self.workers.iter().map(|w| w.batches).sum(),
        )
    }
}

/// Scans `tables` one after another (first page each) until `stop`, ignoring failures (the
/// server is killed under it).
async fn scan_in_turn(client: Client, tables: Vec<&'static str>, stop: Arc<AtomicBool>) {
    if tables.is_empty() {
        return;
    }
    for table in tables.iter().cycle() {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        if client
            .send("GET", &format!("/{table}()"), &[], None)
            .await
            .is_err()
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// Two tables of 20 entities of 30 KB (about 0.6 MB each): with `--memory-budget 1` (MiB)
/// they never fit together, so scanning them and the crash test's table in turn makes the RAM
/// tier load and evict all the time, and the kills land during loads and evictions.
const FILLERS: [&str; 2] = ["fillera", "fillerb"];

async fn create_fillers(client: &Client) {
    for table in FILLERS {
        client.create_table(table).await;
        for i in 0..20 {
            let body = json!({"PartitionKey": "f", "RowKey": format!("{i:02}"), "big": "x".repeat(30_000)});
            let r = client
                .send(
                    "POST",
                    &format!("/{table}"),
                    &[],
                    Some(body.to_string().into_bytes()),
                )
                .await
                .expect("insert");
            assert_eq!(r.status.as_u16(), 201, "{}", r.text());
        }
    }
}

async fn crash_rounds(args: &[&'static str], expect: Expect, rounds: usize) {
    crash_rounds_scanning(args, expect, rounds, false).await
}

async fn crash_rounds_scanning(
    args: &[&'static str],
    expect: Expect,
    rounds: usize,
    churn_ram_tier: bool,
) {
    let started = Instant::now();
    let mut run = Run::new(args, 6);
    if churn_ram_tier {
        // At a 1 MiB budget the process limit (budget + 64 MiB) would keep every table on disk.
        run.args.extend(["--tier-process-limit", "off"]);
    }
    let (server, client) = run.start();
    client.create_table(TABLE).await;
    if churn_ram_tier {
        create_fillers(&client).await;
        run.scanned = vec![TABLE, FILLERS[0], FILLERS[1]];
    }
    let mut server = Some(server);
    let mut client = client;
    for round in 0..rounds {
        let run_for = Duration::from_millis(run.rng.range(150, 900));
        let s = server.take().expect("a running server");
        run.drive_and_kill(s, &client, run_for).await;
        let (next, next_client) = run.start();
        assert!(
            next_client.healthy().await,
            "round {round}: not healthy after restart"
        );
        let stored = match read_table(&next_client).await {
            Some(stored) => stored,
            None => {
                // Relaxed mode: a kill before the first background flush may take the table's
                // creation with everything after it, an empty prefix.
                assert_eq!(expect, Expect::Prefix, "round {round}: the table is gone");
                next_client.create_table(TABLE).await;
                BTreeMap::new()
            }
        };
        verify(&mut run.workers, &stored, expect, round);
        server = Some(next);
        client = next_client;
    }
    // A last round ends gracefully: everything acknowledged must be there, in every mode.
    run.drive(&client, Duration::from_millis(300), 100_000)
        .await;
    let status = server.take().expect("server").terminate();
    assert!(status.success(), "graceful shutdown exit status {status:?}");
    let (last, last_client) = run.start();
    let stored = read_all(&last_client).await;
    verify(&mut run.workers, &stored, Expect::Durable, rounds);
    let (acked, batches) = run.totals();
    println!(
        "{rounds} kill -9 rounds + 1 graceful, {acked} acknowledged requests ({batches} batches), {} entities, {:?}",
        stored.len(),
        started.elapsed()
    );
    assert!(acked > 0 && batches > 0, "the workload did run");
    assert!(last.terminate().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn durable_mode_keeps_every_acknowledged_write_across_kill_9() {
    let rounds = if long_tests() { 40 } else { 5 };
    crash_rounds(&["--durability", "durable"], Expect::Durable, rounds).await;
}

/// The same with the RAM tier loading and evicting tables all the time (a 1 MiB budget and
/// scans of tables that do not fit together): kills during loads, evictions and write-through
/// lose no acknowledged write and tear no batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn durable_mode_with_the_ram_tier_churning_keeps_every_acknowledged_write() {
    let rounds = if long_tests() { 40 } else { 5 };
    crash_rounds_scanning(
        &["--durability", "durable", "--memory-budget", "1"],
        Expect::Durable,
        rounds,
        true,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relaxed_mode_keeps_a_consistent_prefix_across_kill_9() {
    let rounds = if long_tests() { 20 } else { 3 };
    crash_rounds(&["--durability", "relaxed"], Expect::Prefix, rounds).await;
}

/// Relaxed mode flushes at a graceful shutdown: a write acknowledged just before SIGTERM
/// survives even though the background flush (every 500 ms) had no time to run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relaxed_mode_flushes_on_sigterm() {
    let mut run = Run::new(&["--durability", "relaxed"], 3);
    let (server, client) = run.start();
    client.create_table(TABLE).await;
    run.drive(&client, Duration::from_millis(100), 20).await;
    assert!(server.terminate().success());
    let (server, client) = run.start();
    let stored = read_all(&client).await;
    verify(&mut run.workers, &stored, Expect::Durable, 0);
    assert!(server.terminate().success());
}

/// Relaxed mode flushes in the background: writes acknowledged more than a flush interval
/// (500 ms) before a `kill -9` survive it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relaxed_mode_flushes_in_the_background() {
    let mut run = Run::new(&["--durability", "relaxed"], 3);
    let (server, client) = run.start();
    client.create_table(TABLE).await;
    run.drive(&client, Duration::from_millis(200), 30).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    server.kill9();
    let (server, client) = run.start();
    let stored = read_all(&client).await;
    verify(&mut run.workers, &stored, Expect::Durable, 0);
    assert!(server.terminate().success());
}
