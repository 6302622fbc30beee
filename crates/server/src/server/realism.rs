//! Wires [`crate::realism`] into the request path: its options from the command line, a
//! request described as [`RequestFacts`], the verdicts applied (delay, Azure error, dropped
//! connection), query pages cut, and the `/_tablestore/faults` endpoint. With every realism
//! option off, each hook returns at its first line.

use std::net::SocketAddr;
use std::time::Duration;

use axum::body::{to_bytes, Body};
use axum::http::{request::Parts, HeaderValue, Method, StatusCode};
use axum::response::Response;
use serde::Deserialize;

use super::call::Call;
use super::connections::ConnectionAbort;
use super::context::RequestContext;
use super::insight::operation_name;
use super::AppState;
use crate::config::{PageBreaksArg, RealismArgs, TargetErrorArg};
use crate::insight::{Event, Observation};
use crate::protocol::batch::{decode_batch, parse_sub_operation, BatchBody, SubRequest};
use crate::protocol::dialect::{Flavor, Throughput};
use crate::protocol::error::ErrorFormat;
use crate::protocol::operation::Operation;
use crate::protocol::uri::{parse_resource, split_account, Resource};
use crate::protocol::{json, ApiError, ErrorCode};
use crate::realism::request_units::WriteKind;
use crate::realism::{
    Disposition, FaultSet, OperationKind, PageBreaks, Priced, PricedWrite, RealismOptions,
    RequestFacts, Served, TargetError, TargetRates,
};

/// The fault-rules endpoint (outside Azure's URL space: no account starts with `_`).
pub(crate) const FAULTS_PATH: &str = "/_tablestore/faults";

/// Most bytes of a fault-rules document.
const MAX_RULES_BODY: usize = 1024 * 1024;

/// What production realism the command line switches on, as one sentence for the start-up
/// lines (before the ready line, so a reader of the log knows why answers are less polite);
/// `None` when all of it is off.
pub fn summary(args: &RealismArgs, flavor: Flavor) -> Option<String> {
    let mut on = Vec::new();
    let request_units = flavor.dialect().throughput == Throughput::RequestUnits;
    if args.simulate_targets && request_units {
        on.push(format!(
            "throttling past a budget of {} request units per second per table \
             (--simulate-targets --flavor cosmos; answered 429 TooManyRequests)",
            table_rus(args)
        ));
    } else if args.simulate_targets {
        let answer = match args.target_error {
            TargetErrorArg::ServerBusy => "503 ServerBusy",
            TargetErrorArg::OperationTimedOut => "500 OperationTimedOut",
        };
        on.push(format!(
            "throttling past the scalability targets (--simulate-targets: {} entities/s per \
             partition, {} transactions/s per table, {} per account; answered {answer})",
            args.target_partition_rate, args.target_table_rate, args.target_account_rate
        ));
    }
    match args.page_breaks {
        Some(PageBreaksArg::Partition) => {
            on.push("query pages ending at partition boundaries (--page-breaks partition)".into())
        }
        Some(PageBreaksArg::Random) => on.push(format!(
            "query pages ending at random points (--page-breaks random, seed {})",
            args.realism_seed
        )),
        None => {}
    }
    if args.simulate_lifecycle {
        on.push(format!(
            "deleted table names unusable for {} s (--simulate-lifecycle)",
            args.table_purge_seconds
        ));
    }
    if let Some(file) = &args.faults {
        on.push(format!("fault rules from {} (--faults)", file.display()));
    }
    (!on.is_empty()).then(|| {
        format!(
            "production realism is on (docs/realism.md): {}",
            on.join("; ")
        )
    })
}

/// The realism options the command line asks for; a bad `--faults` file is an error
/// sentence naming the file.
pub fn options(args: &RealismArgs, flavor: Flavor) -> Result<RealismOptions, String> {
    let dialect = flavor.dialect();
    let request_units = dialect.throughput == Throughput::RequestUnits;
    if args.cosmos_table_rus.is_some() && !request_units {
        return Err(
            "--cosmos-table-rus applies to --flavor cosmos only (Table storage has no \
                    request units; its budgets are --target-partition-rate, \
                    --target-table-rate and --target-account-rate)"
                .into(),
        );
    }
    let table_rus = if args.simulate_targets && request_units {
        Some(at_least_one("--cosmos-table-rus", table_rus(args))?)
    } else {
        None
    };
    Ok(RealismOptions {
        targets: target_rates(args, dialect.throughput)?,
        table_rus,
        page_breaks: args.page_breaks.map(|m| match m {
            PageBreaksArg::Partition => PageBreaks::Partition,
            PageBreaksArg::Random => PageBreaks::Random,
        }),
        lifecycle: args
            .simulate_lifecycle
            .then(|| Duration::from_secs(args.table_purge_seconds)),
        name_case: dialect.name_case,
        faults: fault_rules(args)?,
        seed: args.realism_seed,
    })
}

/// A rate option's value, which must be at least 1.
fn at_least_one(name: &str, n: u32) -> Result<f64, String> {
    if n == 0 {
        Err(format!("{name} must be at least 1"))
    } else {
        Ok(f64::from(n))
    }
}

/// `--simulate-targets` for Table storage: its rates and the error it answers.
fn target_rates(args: &RealismArgs, throughput: Throughput) -> Result<Option<TargetRates>, String> {
    if !args.simulate_targets || throughput != Throughput::ScalabilityTargets {
        return Ok(None);
    }
    Ok(Some(TargetRates {
        partition_entities: at_least_one("--target-partition-rate", args.target_partition_rate)?,
        table_transactions: at_least_one("--target-table-rate", args.target_table_rate)?,
        account_transactions: at_least_one("--target-account-rate", args.target_account_rate)?,
        error: match args.target_error {
            TargetErrorArg::ServerBusy => TargetError::ServerBusy,
            TargetErrorArg::OperationTimedOut => TargetError::OperationTimedOut,
        },
    }))
}

/// The fault rules of `--faults FILE`.
fn fault_rules(args: &RealismArgs) -> Result<Option<FaultSet>, String> {
    let Some(path) = &args.faults else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("--faults {}: cannot read the file: {e}", path.display()))?;
    let rules = FaultSet::parse(&text).map_err(|e| format!("--faults {}: {e}", path.display()))?;
    Ok(Some(rules))
}

/// The per-table request-unit budget `--cosmos-table-rus` asks for, or Cosmos's default.
fn table_rus(args: &RealismArgs) -> u32 {
    args.cosmos_table_rus
        .unwrap_or(crate::realism::request_units::DEFAULT_TABLE_RUS)
}

/// A request as realism sees it: the call, its HTTP method, its connection (to drop) and the
/// format its errors are answered in.
pub(crate) struct Guarded<'a> {
    pub(crate) call: &'a Call,
    pub(crate) method: &'a Method,
    pub(crate) abort: Option<&'a ConnectionAbort>,
    pub(crate) format: ErrorFormat,
}

/// Realism around an admitted request: consulted before `answer` runs (it may delay the
/// request, answer it with an Azure error or drop the connection: `Err` with that answer)
/// and told the outcome after it ran (it may then drop the connection instead of
/// answering). With realism off, `answer` runs alone.
pub(crate) async fn around<F, Fut>(
    state: &AppState,
    request: Guarded<'_>,
    operation: Operation,
    answer: F,
) -> Result<Response, Response>
where
    F: FnOnce(Operation) -> Fut,
    Fut: std::future::Future<Output = Response>,
{
    if !state.realism.is_active() {
        return Ok(answer(operation).await);
    }
    let facts = facts(
        request.call,
        &operation,
        request.method,
        state.realism.prices_requests(),
    );
    let verdict = state.realism.before_dispatch(&facts);
    if let Some(delay) = verdict.delay {
        tokio::time::sleep(delay).await;
    }
    let ctx = &request.call.ctx;
    let drop_after_commit = match verdict.disposition {
        Disposition::Proceed => false,
        Disposition::DropAfterCommit => true,
        Disposition::Reject(e) => return Err(ctx.error_response(&e, request.format)),
        Disposition::DropBeforeWrite => return Err(drop_connection(ctx, request.abort).await),
    };
    let response = answer(operation).await;
    // The handler ran (and its writes are durable): tell realism the outcome.
    let succeeded = response.status().is_success();
    state.realism.after_commit(&facts, succeeded);
    if state.realism.prices_requests() {
        state
            .realism
            .after_run(&facts, &served(&response, succeeded));
    }
    if drop_after_commit {
        return Ok(drop_connection(ctx, request.abort).await);
    }
    Ok(response)
}

/// Ends the connection without an answer. Outside the HTTP front end (a router called in
/// process) there is no connection to drop: the answer is 500 with `Connection: close`.
async fn drop_connection(ctx: &RequestContext, abort: Option<&ConnectionAbort>) -> Response {
    if let Some(abort) = abort {
        tracing::info!(request_id = %ctx.request_id, "fault injected: dropping the connection");
        abort.abort();
        // The connection task drops this request's future with the connection.
        std::future::pending::<()>().await;
    }
    let mut response = ctx.error(&ApiError::new(ErrorCode::InternalError));
    response
        .headers_mut()
        .insert("connection", HeaderValue::from_static("close"));
    response
}

/// Cuts a query page where the page-break policy says. In key order the continuation then
/// points at the first row dropped; in Cosmos's unordered results, past the last row kept (or,
/// with none kept, where the page began). Either way the next page starts exactly at the
/// first row dropped.
pub(crate) fn cut_page(state: &AppState, outcome: &mut crate::exec::Outcome) {
    if !state.realism.is_active() {
        return;
    }
    let crate::exec::Outcome::Entities(query) = outcome else {
        return;
    };
    let page = &mut query.page;
    let keys: Vec<(String, String)> = page.rows.iter().filter_map(|row| row.keys().ok()).collect();
    if keys.len() != page.rows.len() {
        return;
    }
    let partition_keys: Vec<&str> = keys.iter().map(|(pk, _)| pk.as_str()).collect();
    let Some(n) = state.realism.page_cut(&partition_keys) else {
        return;
    };
    match &query.unordered_start {
        Some(start) => match start.next_after_cut(&page.rows, n) {
            Ok(next) => query.unordered_next = Some(next),
            // A row the store cannot read: the page stays whole.
            Err(_) => return,
        },
        None => page.next = keys.into_iter().nth(n),
    }
    page.rows.truncate(n);
}

/// What kind of work an operation is, for fault rules.
fn kind(operation: &Operation) -> OperationKind {
    match operation {
        Operation::InsertEntity { .. }
        | Operation::UpdateEntity(..)
        | Operation::MergeEntity(..)
        | Operation::DeleteEntity(..)
        | Operation::InsertOrReplaceEntity(_)
        | Operation::InsertOrMergeEntity(_) => OperationKind::Write,
        Operation::Batch => OperationKind::Batch,
        Operation::SetServiceProperties
        | Operation::CreateTable
        | Operation::DeleteTable { .. }
        | Operation::SetTableAcl { .. } => OperationKind::Admin,
        _ => OperationKind::Read,
    }
}

/// The keys an entity body names (other properties are skipped unread).
#[derive(Deserialize)]
struct BodyKeys {
    #[serde(rename = "PartitionKey")]
    partition_key: Option<String>,
}

fn body_partition_key(body: &[u8]) -> Option<String> {
    serde_json::from_slice::<BodyKeys>(body)
        .ok()
        .and_then(|k| k.partition_key)
}

/// Table and PartitionKey a change-set operation addresses (from its URL, or its body).
fn sub_request_target(account: &str, sub: &SubRequest) -> (Option<String>, Option<String>) {
    let (path, _) = sub.path_and_query();
    let rest = match split_account(None, path, |_| false, false) {
        Some(p) if p.account == account => p.rest,
        _ => path,
    };
    match parse_resource(rest) {
        Ok(Resource::Entity {
            table,
            partition_key,
            ..
        }) => (Some(table), Some(partition_key)),
        Ok(Resource::EntitySet(table)) => (Some(table), body_partition_key(&sub.body)),
        _ => (None, body_partition_key(&sub.body)),
    }
}

/// Describes a request for realism: only called when realism is on. `priced`: describe
/// what request units price it by.
fn facts(call: &Call, operation: &Operation, method: &Method, priced: bool) -> RequestFacts {
    let (kind, name) = (kind(operation), operation_name(operation));
    let mut table = operation.table().map(str::to_string);
    let mut partition_key = None;
    let mut entities = 1;
    let mut price = if priced {
        price(operation, &call.body)
    } else {
        Priced::Free
    };
    match operation {
        Operation::CreateTable => table = json::decode_table_name(&call.body).ok(),
        Operation::InsertEntity { .. } => partition_key = body_partition_key(&call.body),
        Operation::GetEntity(e)
        | Operation::UpdateEntity(e, _)
        | Operation::MergeEntity(e, _)
        | Operation::DeleteEntity(e, _)
        | Operation::InsertOrReplaceEntity(e)
        | Operation::InsertOrMergeEntity(e) => partition_key = Some(e.partition_key.clone()),
        Operation::Batch => {
            let content_type = call.header("content-type").unwrap_or("");
            let subs = match decode_batch(content_type, &call.body) {
                Ok(BatchBody::Changeset(subs)) => subs,
                Ok(BatchBody::Query(sub)) => vec![sub],
                Err(_) => Vec::new(),
            };
            entities = u32::try_from(subs.len()).unwrap_or(u32::MAX).max(1);
            if let Some(first) = subs.first() {
                (table, partition_key) = sub_request_target(call.ctx.data_account(), first);
            }
            if priced {
                price = price_batch(call.ctx.data_account(), &subs);
            }
        }
        _ => {}
    }
    RequestFacts {
        account: call.ctx.data_account().to_string(),
        table,
        operation: name,
        kind,
        method: method.as_str().to_string(),
        partition_key,
        entities,
        priced: price,
    }
}

/// What request units price an operation by; `body`: its JSON entity, if it writes one.
fn price(operation: &Operation, body: &[u8]) -> Priced {
    let write = |kind| {
        Priced::Writes(vec![PricedWrite {
            kind,
            item_bytes: body.len(),
            indexed_properties: indexed_properties(body),
        }])
    };
    match operation {
        Operation::GetEntity(_) => Priced::PointRead,
        Operation::QueryEntities { .. } => Priced::Query,
        Operation::InsertEntity { .. } => write(WriteKind::Insert),
        // An upsert is priced as the replace it may be (the larger price).
        Operation::UpdateEntity(..)
        | Operation::MergeEntity(..)
        | Operation::InsertOrReplaceEntity(_)
        | Operation::InsertOrMergeEntity(_) => write(WriteKind::Replace),
        Operation::DeleteEntity(..) => Priced::Writes(vec![PricedWrite {
            kind: WriteKind::Delete,
            item_bytes: 0,
            indexed_properties: 0,
        }]),
        _ => Priced::Free,
    }
}

/// A `$batch`'s price: each change-set operation's (a query batch is a point read).
fn price_batch(account: &str, subs: &[SubRequest]) -> Priced {
    let mut writes = Vec::with_capacity(subs.len());
    for sub in subs {
        let Ok(operation) = parse_sub_operation(account, sub) else {
            continue;
        };
        match price(&operation, &sub.body) {
            Priced::Writes(w) => writes.extend(w),
            Priced::PointRead if subs.len() == 1 => return Priced::PointRead,
            _ => {}
        }
    }
    Priced::Writes(writes)
}

/// The properties of a JSON entity, keys included (Cosmos indexes every one by default);
/// `odata.*` members and `…@odata.type` annotations are not properties. 0 for a body that
/// is not a JSON object (the request will be refused anyway).
fn indexed_properties(body: &[u8]) -> usize {
    serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(body)
        .map(|members| {
            members
                .keys()
                .filter(|k| !k.starts_with("odata.") && !k.contains("@odata."))
                .count()
        })
        .unwrap_or(0)
}

/// What an answered request did, for its final price in request units: the answer's body
/// size, and a query's examined and returned entities (from its observation).
fn served(response: &Response, succeeded: bool) -> Served {
    let body_bytes = axum::body::HttpBody::size_hint(response.body())
        .exact()
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0);
    let (examined, returned) = match response.extensions().get::<Observation>() {
        Some(Observation {
            event: Event::Query {
                examined, returned, ..
            },
            ..
        }) => (*examined, *returned),
        _ => (0, 0),
    };
    Served {
        succeeded,
        body_bytes,
        examined,
        returned,
    }
}

/// `GET` (rules and hit counts), `PUT` (replace the rules; TOML or JSON) and `DELETE` (no
/// rules) on `/_tablestore/faults`. Authorised with an account key (Shared Key or Shared
/// Key Lite, canonical resource `/{account}/_tablestore/faults`), or open with
/// `--disable-auth`.
pub(crate) async fn faults_endpoint(
    state: &AppState,
    parts: Parts,
    body: Body,
    peer: SocketAddr,
) -> Response {
    let mut ctx = RequestContext::new(&parts.headers, state.dialect);
    ctx.error_format = ErrorFormat::Json;
    if let Err(e) = super::insight::caller(state, &parts, peer) {
        super::intake::discard_unread(body);
        return ctx.error(&e);
    }
    match parts.method {
        Method::GET => faults_report(state, &ctx),
        Method::DELETE => {
            state.realism.replace_faults(None);
            ctx.plain_response(StatusCode::NO_CONTENT).into_response()
        }
        Method::PUT => match replace_faults(state, body).await {
            Ok(()) => faults_report(state, &ctx),
            Err(e) => ctx.error(&e),
        },
        _ => ctx.error(&ApiError::new(ErrorCode::UnsupportedHttpVerb)),
    }
}

/// The installed fault rules and their hit counts.
fn faults_report(state: &AppState, ctx: &RequestContext) -> Response {
    let mut r = ctx.plain_response(StatusCode::OK);
    r.body(
        "application/json",
        state.realism.faults_report().to_string().into_bytes(),
    );
    r.into_response()
}

/// Installs the fault rules a `PUT` carries (TOML or JSON).
async fn replace_faults(state: &AppState, body: Body) -> Result<(), ApiError> {
    let bytes = to_bytes(body, MAX_RULES_BODY)
        .await
        .map_err(|_| ApiError::new(ErrorCode::RequestBodyTooLarge))?;
    let text = std::str::from_utf8(&bytes).map_err(|_| {
        ApiError::with_message(
            ErrorCode::InvalidInput,
            "The fault rules must be UTF-8 text (TOML or JSON).",
        )
    })?;
    let set = FaultSet::parse(text)
        .map_err(|message| ApiError::with_message(ErrorCode::InvalidInput, message))?;
    state.realism.replace_faults(Some(set));
    Ok(())
}
