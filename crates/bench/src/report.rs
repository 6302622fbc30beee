//! Results: the JSON document written by `--json`, the human table, and `compare`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunReport {
    pub tool: String,
    pub tool_version: String,
    pub label: Option<String>,
    pub endpoint: String,
    pub started_at: String,
    pub finished_at: String,
    pub settings: Settings,
    pub preload: Option<LoadReport>,
    pub workloads: Vec<WorkloadReport>,
    pub server: Option<ServerReport>,
    pub data_dir: Option<DataDirReport>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Settings {
    pub workloads: Vec<String>,
    pub concurrency: u64,
    pub duration_s: f64,
    pub ops: Option<u64>,
    pub warmup_s: f64,
    pub entities: u64,
    pub partitions: u64,
    pub batch_size: u64,
    pub bulk_entities: u64,
    pub range_rows: u64,
    pub metadata: String,
    pub api_version: String,
    pub client_threads: usize,
    pub entity_json_bytes: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadReport {
    pub table: String,
    /// "batch", "single", or "existing" (the table was there already and was not loaded).
    pub mode: String,
    pub entities: u64,
    pub seconds: f64,
    pub entities_per_s: f64,
    pub errors: BTreeMap<String, u64>,
    pub error_sample: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Latency {
    pub min_ms: f64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TimelinePoint {
    /// Seconds since the workload started (end of the interval).
    pub t_s: f64,
    pub entities_total: u64,
    pub entities_per_s: f64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WorkloadServer {
    /// Server CPU time (user + system) spent during the measured phase.
    pub cpu_ms: f64,
    pub cpu_us_per_op: Option<f64>,
    pub cpu_us_per_entity: Option<f64>,
    /// Highest VmRSS sampled every 250 ms during the measured phase.
    pub rss_peak_kib: Option<u64>,
    /// VmHWM (lifetime peak resident set) at the end of the workload.
    pub vmhwm_kib: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkloadReport {
    pub name: String,
    pub table: String,
    /// Successful operations (requests, or $batch requests, or full scans).
    pub ops: u64,
    /// Failed operations.
    pub failed: u64,
    /// Entities written or read by the successful operations.
    pub entities: u64,
    /// Rows returned by queries.
    pub rows: u64,
    /// Successful queries/reads whose row count differed from the expected one.
    pub bad_results: u64,
    pub elapsed_s: f64,
    pub ops_per_s: f64,
    pub entities_per_s: f64,
    pub latency: Latency,
    pub errors: BTreeMap<String, u64>,
    pub error_sample: Option<String>,
    /// "duration", "ops", "exhausted" (delete pool or bulk target reached) or "time-cap".
    pub stopped_by: String,
    pub connections_opened: u64,
    /// CPU time of this load generator per successful operation (Linux), to see whether the
    /// client rather than the server was the limit.
    #[serde(default)]
    pub client_cpu_us_per_op: Option<f64>,
    pub server: Option<WorkloadServer>,
    /// Size of `--data-dir` after the workload.
    pub data_dir_bytes: Option<u64>,
    /// The data the server holds after the workload, by its own count (tablestore's
    /// `tablestore_store_logical_bytes`); `None` for a server that does not publish it.
    #[serde(default)]
    pub logical_bytes: Option<u64>,
    pub timeline: Option<Vec<TimelinePoint>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerReport {
    pub pid: u32,
    pub vmhwm_kib: Option<u64>,
    pub vmrss_kib: Option<u64>,
    pub cpu_seconds_total: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DataDirReport {
    pub path: String,
    pub bytes_after_preload: Option<u64>,
    pub bytes_at_end: Option<u64>,
    /// The server's logical data size at the same moments (see `WorkloadReport`).
    #[serde(default)]
    pub logical_bytes_after_preload: Option<u64>,
    #[serde(default)]
    pub logical_bytes_at_end: Option<u64>,
}

fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

fn bytes_h(b: u64) -> String {
    if b >= 1 << 30 {
        format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64)
    } else if b >= 1 << 20 {
        format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
    } else {
        format!("{:.1} KiB", b as f64 / 1024.0)
    }
}

fn errors_h(e: &BTreeMap<String, u64>) -> String {
    if e.is_empty() {
        "-".into()
    } else {
        e.iter()
            .map(|(k, v)| format!("{k}×{v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map(|x| format!("{x:.prec$}"))
        .unwrap_or_else(|| "-".into())
}

/// The human table printed at the end of a run.
pub fn human(r: &RunReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n{} against {}{}",
        r.tool,
        r.endpoint,
        r.label
            .as_ref()
            .map(|l| format!(" ({l})"))
            .unwrap_or_default()
    );
    let st = &r.settings;
    let _ = writeln!(
        s,
        "concurrency {} | duration {} s{} | warmup {} s | {} entities in {} partitions | ~{} B entities | {}",
        st.concurrency,
        st.duration_s,
        st.ops.map(|o| format!(" or {o} ops")).unwrap_or_default(),
        st.warmup_s,
        st.entities,
        st.partitions,
        st.entity_json_bytes,
        st.metadata
    );
    if let Some(p) = r.preload.as_ref().filter(|p| p.mode == "existing") {
        let _ = writeln!(
            s,
            "preload: reused the existing table {} (assumed to hold the layout above)",
            p.table
        );
    } else if let Some(p) = &r.preload {
        let _ = writeln!(
            s,
            "preload: {} entities into {} via {} in {:.1} s ({:.0} entities/s){}",
            p.entities,
            p.table,
            p.mode,
            p.seconds,
            p.entities_per_s,
            if p.errors.is_empty() {
                String::new()
            } else {
                format!(", errors {}", errors_h(&p.errors))
            }
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<13} {:>9} {:>10} {:>10} {:>8} {:>8} {:>8} {:>8} {:>5} {:>10} {:>9} {:>9} {:>9} {:>9}  errors",
        "workload",
        "ops",
        "ops/s",
        "ent/s",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "max ms",
        "bad",
        "cpu µs/op",
        "rss MiB",
        "hwm MiB",
        "disk MiB",
        "data MiB"
    );
    for w in &r.workloads {
        let ent = if w.entities_per_s > 0.0 && w.entities != w.ops {
            format!("{:.0}", w.entities_per_s)
        } else {
            "-".into()
        };
        let (cpu, rss, hwm) = match &w.server {
            Some(sv) => (
                opt(sv.cpu_us_per_op, 0),
                sv.rss_peak_kib.map(mib).unwrap_or_else(|| "-".into()),
                sv.vmhwm_kib.map(mib).unwrap_or_else(|| "-".into()),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        let bytes_mib = |b: Option<u64>| b.map_or_else(|| "-".into(), |b| mib(b / 1024));
        let _ = writeln!(
            s,
            "{:<13} {:>9} {:>10.1} {:>10} {:>8.2} {:>8.2} {:>8.2} {:>8.1} {:>5} {:>10} {:>9} {:>9} {:>9} {:>9}  {}",
            w.name,
            w.ops,
            w.ops_per_s,
            ent,
            w.latency.p50_ms,
            w.latency.p90_ms,
            w.latency.p99_ms,
            w.latency.max_ms,
            w.bad_results,
            cpu,
            rss,
            hwm,
            bytes_mib(w.data_dir_bytes),
            bytes_mib(w.logical_bytes),
            errors_h(&w.errors)
        );
    }
    for w in &r.workloads {
        if let Some(e) = &w.error_sample {
            let _ = writeln!(s, "first error in {}: {e}", w.name);
        }
        if w.stopped_by == "time-cap" {
            let _ = writeln!(s, "note: {} was stopped by its time cap", w.name);
        }
        if w.name == "delete" && w.stopped_by == "exhausted" {
            let _ = writeln!(
                s,
                "note: delete used up its pool before the duration ended (raise --delete-pool)"
            );
        }
        if let Some(t) = &w.timeline {
            if !t.is_empty() {
                let rates: Vec<String> = t
                    .iter()
                    .map(|p| format!("{:.0}", p.entities_per_s))
                    .collect();
                let _ = writeln!(s, "{} entities/s per second: {}", w.name, rates.join(" "));
            }
        }
    }
    if let Some(sv) = &r.server {
        let _ = writeln!(
            s,
            "server pid {}: peak RSS (VmHWM) {} MiB, RSS now {} MiB, CPU total {} s",
            sv.pid,
            sv.vmhwm_kib.map(mib).unwrap_or_else(|| "-".into()),
            sv.vmrss_kib.map(mib).unwrap_or_else(|| "-".into()),
            opt(sv.cpu_seconds_total, 2)
        );
    }
    if let Some(d) = &r.data_dir {
        let _ = writeln!(
            s,
            "data folder {}: {} after preload, {} at the end",
            d.path,
            d.bytes_after_preload
                .map(bytes_h)
                .unwrap_or_else(|| "-".into()),
            d.bytes_at_end.map(bytes_h).unwrap_or_else(|| "-".into())
        );
        if let (Some(disk), Some(data)) = (d.bytes_at_end, d.logical_bytes_at_end) {
            let _ = writeln!(
                s,
                "data held by the server at the end: {} (folder/data {:.2}×)",
                bytes_h(data),
                disk as f64 / data.max(1) as f64
            );
        }
    }
    s
}

/// Workloads whose operations write many entities: compared in entities/s.
fn is_batch(name: &str) -> bool {
    name == "batch-insert" || name == "bulk-load"
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if a > 0.0 && b > 0.0 => format!("{:.2}×", a / b),
        _ => "–".into(),
    }
}

fn num(v: Option<f64>, prec: usize) -> String {
    v.map(|x| format!("{x:.prec$}"))
        .unwrap_or_else(|| "–".into())
}

/// The rate a workload is compared by: entities/s for the batch workloads, operations/s
/// otherwise.
fn rate(w: &WorkloadReport) -> f64 {
    if is_batch(&w.name) {
        w.entities_per_s
    } else {
        w.ops_per_s
    }
}

/// Which way a resource figure is better, for its ratio column.
#[derive(Clone, Copy)]
enum Better {
    Lower,
    Higher,
    /// Not a figure to rank (no ratio).
    Neither,
}

fn server_cpu(w: &WorkloadReport) -> Option<f64> {
    w.server.as_ref().and_then(|s| s.cpu_us_per_op)
}

fn error_count(w: &WorkloadReport) -> u64 {
    w.errors.values().sum::<u64>() + w.bad_results
}

/// Markdown comparison of a candidate run with a baseline run and, when given, a run against
/// the HTTP floor (`tablestore-bench floor`) in the same session. Every ratio column is
/// oriented so that a value above 1 means the candidate did better; against the floor, which
/// does no work, the ratio says what share of the bare HTTP stack's rate the candidate keeps.
/// Every rate has its p99 beside it.
pub fn compare_markdown(base: &RunReport, cand: &RunReport, floor: Option<&RunReport>) -> String {
    let bn = base.label.clone().unwrap_or_else(|| "baseline".into());
    let cn = cand.label.clone().unwrap_or_else(|| "candidate".into());
    let fname = floor
        .and_then(|f| f.label.clone())
        .unwrap_or_else(|| "floor".into());
    let mut s = String::new();
    match floor {
        Some(_) => {
            let _ = writeln!(s, "### {cn} vs {bn}, and the HTTP floor\n");
        }
        None => {
            let _ = writeln!(s, "### {cn} vs {bn}\n");
        }
    }
    let _ = writeln!(
        s,
        "Ratios are oriented so that **> 1 means {cn} is better** (throughput {cn}/{bn}; \
         latency, CPU and memory {bn}/{cn}). Throughput is entities/s for batch-insert and \
         bulk-load, operations/s otherwise (a scan-filter operation is one full scan); the \
         p99 latency in ms follows each rate."
    );
    if floor.is_some() {
        let _ = writeln!(
            s,
            "\n`{fname}` is `tablestore-bench floor`, a trivial endpoint on tablestore's HTTP \
             stack that answers without storing anything; `{cn}/{fname}` is the share of the \
             bare HTTP stack's rate that {cn} keeps (at most about 1)."
        );
    }
    let _ = writeln!(s);
    // The candidate's workloads that the baseline ran too, with the baseline's figures.
    let pairs: Vec<(&WorkloadReport, &WorkloadReport)> = cand
        .workloads
        .iter()
        .filter_map(|cw| Some((cw, base.workloads.iter().find(|w| w.name == cw.name)?)))
        .collect();
    let floor_w = |name: &str| floor.and_then(|f| f.workloads.iter().find(|w| w.name == name));
    let mut head = format!(
        "| workload | {cn} ops/s (ent/s) | p99 ms | {bn} ops/s (ent/s) | p99 ms | {cn}/{bn} |"
    );
    let mut rule = "|---|---:|---:|---:|---:|---:|".to_string();
    if floor.is_some() {
        head.push_str(&format!(" {fname} ops/s (ent/s) | p99 ms | {cn}/{fname} |"));
        rule.push_str("---:|---:|---:|");
    }
    match floor {
        Some(_) => head.push_str(&format!(" errors ({cn} / {bn} / {fname}) |")),
        None => head.push_str(&format!(" errors ({cn} / {bn}) |")),
    }
    rule.push_str("---|");
    let _ = writeln!(s, "{head}\n{rule}");
    for &(cw, bw) in &pairs {
        let mut row = format!(
            "| {} | {:.0} | {:.2} | {:.0} | {:.2} | {} |",
            cw.name,
            rate(cw),
            cw.latency.p99_ms,
            rate(bw),
            bw.latency.p99_ms,
            ratio(Some(rate(cw)), Some(rate(bw))),
        );
        let mut errors = format!("{} / {}", error_count(cw), error_count(bw));
        if floor.is_some() {
            match floor_w(&cw.name) {
                Some(fw) => {
                    row.push_str(&format!(
                        " {:.0} | {:.2} | {} |",
                        rate(fw),
                        fw.latency.p99_ms,
                        ratio(Some(rate(cw)), Some(rate(fw)))
                    ));
                    errors.push_str(&format!(" / {}", error_count(fw)));
                }
                None => {
                    row.push_str(" – | – | – |");
                    errors.push_str(" / –");
                }
            }
        }
        let _ = writeln!(s, "{row} {errors} |");
    }
    let _ = writeln!(s);
    let mut head = format!(
        "| workload | {cn} p50 ms | {bn} p50 ms | p99 ({bn}/{cn}) | {cn} CPU µs/op | {bn} CPU µs/op | CPU ({bn}/{cn}) |"
    );
    let mut rule = "|---|---:|---:|---:|---:|---:|---:|".to_string();
    if floor.is_some() {
        head.push_str(&format!(" {fname} p50 ms | {fname} CPU µs/op |"));
        rule.push_str("---:|---:|");
    }
    let _ = writeln!(s, "{head}\n{rule}");
    for &(cw, bw) in &pairs {
        let mut row = format!(
            "| {} | {:.2} | {:.2} | {} | {} | {} | {} |",
            cw.name,
            cw.latency.p50_ms,
            bw.latency.p50_ms,
            ratio(Some(bw.latency.p99_ms), Some(cw.latency.p99_ms)),
            num(server_cpu(cw), 0),
            num(server_cpu(bw), 0),
            ratio(server_cpu(bw), server_cpu(cw)),
        );
        if floor.is_some() {
            let fw = floor_w(&cw.name);
            row.push_str(&format!(
                " {} | {} |",
                num(fw.map(|w| w.latency.p50_ms), 2),
                num(fw.and_then(server_cpu), 0)
            ));
        }
        let _ = writeln!(s, "{row}");
    }
    let _ = writeln!(s);
    match floor {
        Some(_) => {
            let _ = writeln!(s, "| resource | {cn} | {bn} | ratio | {fname} |");
            let _ = writeln!(s, "|---|---:|---:|---:|---:|");
        }
        None => {
            let _ = writeln!(s, "| resource | {cn} | {bn} | ratio |");
            let _ = writeln!(s, "|---|---:|---:|---:|");
        }
    }
    // One row: the candidate, the baseline, their ratio (oriented by `better`) and,
    // with a floor run, the floor's figure.
    let mut resource =
        |what: &str, get: &dyn Fn(&RunReport) -> Option<f64>, prec: usize, better: Better| {
            let r = match better {
                Better::Lower => ratio(get(base), get(cand)),
                Better::Higher => ratio(get(cand), get(base)),
                Better::Neither => String::new(),
            };
            let r = if r.is_empty() {
                " |".to_string()
            } else {
                format!(" {r} |")
            };
            let mut row = format!(
                "| {what} | {} | {} |{r}",
                num(get(cand), prec),
                num(get(base), prec)
            );
            if let Some(f) = floor {
                row.push_str(&format!(" {} |", num(get(f), prec)));
            }
            let _ = writeln!(s, "{row}");
        };
    resource(
        "peak RSS (VmHWM), MiB",
        &|r| {
            r.server
                .as_ref()
                .and_then(|s| s.vmhwm_kib)
                .map(|k| k as f64 / 1024.0)
        },
        1,
        Better::Lower,
    );
    // Sampled during the workloads: available even when the server is gone by the end of the
    // run (VmHWM is read from a live process only).
    resource(
        "highest RSS sampled during a workload, MiB",
        &|r| {
            r.workloads
                .iter()
                .filter_map(|w| w.server.as_ref()?.rss_peak_kib)
                .max()
                .map(|k| k as f64 / 1024.0)
        },
        1,
        Better::Lower,
    );
    resource(
        "server CPU over the run, s",
        &|r| r.server.as_ref().and_then(|s| s.cpu_seconds_total),
        1,
        Better::Lower,
    );
    resource(
        "preload, entities/s",
        &|r| {
            r.preload
                .as_ref()
                .filter(|p| p.mode != "existing")
                .map(|p| p.entities_per_s)
        },
        0,
        Better::Higher,
    );
    resource(
        "data folder at the end, MiB",
        &|r| {
            r.data_dir
                .as_ref()
                .and_then(|d| d.bytes_at_end)
                .map(|b| b as f64 / (1u64 << 20) as f64)
        },
        1,
        Better::Lower,
    );
    resource(
        "data held at the end (server's own count), MiB",
        &|r| {
            r.data_dir
                .as_ref()
                .and_then(|d| d.logical_bytes_at_end)
                .map(|b| b as f64 / (1u64 << 20) as f64)
        },
        1,
        Better::Neither,
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn sample(label: &str, ops_per_s: f64, p99: f64) -> RunReport {
        RunReport {
            tool: "tablestore-bench".into(),
            tool_version: "0".into(),
            label: Some(label.into()),
            endpoint: "http://127.0.0.1:1/devstoreaccount1".into(),
            started_at: String::new(),
            finished_at: String::new(),
            settings: Settings {
                workloads: vec!["insert".into()],
                concurrency: 1,
                duration_s: 1.0,
                ops: None,
                warmup_s: 0.0,
                entities: 1,
                partitions: 1,
                batch_size: 100,
                bulk_entities: 1,
                range_rows: 100,
                metadata: "minimalmetadata".into(),
                api_version: "2019-02-02".into(),
                client_threads: 1,
                entity_json_bytes: 1024,
            },
            preload: None,
            workloads: vec![WorkloadReport {
                name: "insert".into(),
                table: "t".into(),
                ops: 100,
                failed: 1,
                entities: 100,
                rows: 0,
                bad_results: 0,
                elapsed_s: 1.0,
                ops_per_s,
                entities_per_s: ops_per_s,
                latency: Latency {
                    p99_ms: p99,
                    ..Latency::default()
                },
                errors: BTreeMap::from([("409".to_string(), 1)]),
                error_sample: Some("409 Conflict".into()),
                stopped_by: "duration".into(),
                connections_opened: 1,
                client_cpu_us_per_op: None,
                server: Some(WorkloadServer {
                    cpu_us_per_op: Some(100.0),
                    vmhwm_kib: Some(2048),
                    ..WorkloadServer::default()
                }),
                data_dir_bytes: Some(3 << 20),
                logical_bytes: Some(2 << 20),
                timeline: None,
            }],
            server: Some(ServerReport {
                pid: 1,
                vmhwm_kib: Some(2048),
                vmrss_kib: Some(1024),
                cpu_seconds_total: Some(1.0),
            }),
            data_dir: Some(DataDirReport {
                path: "/tmp/d".into(),
                bytes_after_preload: Some(1 << 20),
                bytes_at_end: Some(3 << 20),
                logical_bytes_after_preload: None,
                logical_bytes_at_end: Some(2 << 20),
            }),
        }
    }

    #[test]
    fn human_table_lists_workloads_and_errors() {
        let h = human(&sample("tablestore", 1234.5, 3.0));
        assert!(h.contains("insert"));
        assert!(h.contains("1234.5"));
        assert!(h.contains("409×1"));
        assert!(h.contains("peak RSS (VmHWM) 2.0 MiB"));
        // Memory and disk next to the speed: rss, hwm, folder and data (MiB) on the row.
        let row = h.lines().find(|l| l.starts_with("insert")).unwrap();
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(&cols[10..14], ["-", "2.0", "3.0", "2.0"], "{row}");
        assert!(
            h.contains("data held by the server at the end: 2.0 MiB (folder/data 1.50×)"),
            "{h}"
        );
    }

    #[test]
    fn compare_with_the_floor_puts_both_ratios_side_by_side() {
        let cand = sample("tablestore", 2000.0, 2.0);
        let base = sample("azurite", 1000.0, 8.0);
        let mut floor = sample("floor", 8000.0, 0.5);
        floor.workloads[0].errors.clear();
        floor.workloads[0].server.as_mut().unwrap().cpu_us_per_op = Some(12.0);
        floor.server.as_mut().unwrap().vmhwm_kib = Some(1024);
        let md = compare_markdown(&base, &cand, Some(&floor));
        assert!(
            md.starts_with("### tablestore vs azurite, and the HTTP floor"),
            "{md}"
        );
        assert!(
            md.contains(
                "| workload | tablestore ops/s (ent/s) | p99 ms | azurite ops/s (ent/s) | p99 ms | tablestore/azurite | floor ops/s (ent/s) | p99 ms | tablestore/floor | errors (tablestore / azurite / floor) |"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| insert | 2000 | 2.00 | 1000 | 8.00 | 2.00× | 8000 | 0.50 | 0.25× | 1 / 1 / 0 |"
            ),
            "{md}"
        );
        // The floor's p50 and server CPU per operation close the latency row.
        assert!(md.contains("| 1.00× | 0.00 | 12 |"), "{md}");
        assert!(
            md.contains("| peak RSS (VmHWM), MiB | 2.0 | 2.0 | 1.00× | 1.0 |"),
            "{md}"
        );
        // A workload the floor run lacks shows dashes, not a wrong ratio.
        floor.workloads[0].name = "upsert".into();
        let md = compare_markdown(&base, &cand, Some(&floor));
        assert!(
            md.contains("| insert | 2000 | 2.00 | 1000 | 8.00 | 2.00× | – | – | – | 1 / 1 / – |"),
            "{md}"
        );
    }

    #[test]
    fn older_result_files_still_read() {
        // Written before the logical sizes existed.
        let mut v = serde_json::to_value(sample("old", 1.0, 1.0)).unwrap();
        v["workloads"][0]
            .as_object_mut()
            .unwrap()
            .remove("logical_bytes");
        v["data_dir"]
            .as_object_mut()
            .unwrap()
            .remove("logical_bytes_at_end");
        let r: RunReport = serde_json::from_value(v).unwrap();
        assert_eq!(r.workloads[0].logical_bytes, None);
        assert_eq!(r.data_dir.unwrap().logical_bytes_at_end, None);
    }

    #[test]
    fn compare_orients_ratios() {
        let cand = sample("tablestore", 2000.0, 2.0);
        let base = sample("azurite", 1000.0, 8.0);
        let md = compare_markdown(&base, &cand, None);
        // The rate, then its p99, for each server; then the ratio.
        assert!(
            md.contains("| insert | 2000 | 2.00 | 1000 | 8.00 | 2.00× | 1 / 1 |"),
            "{md}"
        );
        // p99 ratio baseline/candidate, CPU per operation and its ratio.
        assert!(md.contains("| 4.00× | 100 | 100 | 1.00× |"), "{md}");
        assert!(!md.contains("floor"), "{md}");
        assert!(
            md.contains("| data folder at the end, MiB | 3.0 | 3.0 | 1.00× |"),
            "{md}"
        );
        assert!(
            md.contains("| data held at the end (server's own count), MiB | 2.0 | 2.0 | |"),
            "{md}"
        );
        let md = compare_markdown(&base, &cand, None);
        assert!(
            md.contains("| peak RSS (VmHWM), MiB | 2.0 | 2.0 | 1.00× |\n"),
            "{md}"
        );
        let json = serde_json::to_string(&cand).unwrap();
        let back: RunReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back.workloads[0].ops, 100);
        assert_eq!(back.workloads[0].logical_bytes, Some(2 << 20));
        assert_eq!(back.workloads[0].data_dir_bytes, Some(3 << 20));
    }
}
