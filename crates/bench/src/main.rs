//! `tablestore-bench`: a load generator for Azure Table storage-compatible servers.
//!
//! Layout:
//! - `cli`: command line (`--help` documents every workload and figure).
//! - `sign`: Shared Key Lite signing (Azure docs: "Authorize with Shared Key").
//! - `client`: one keep-alive HTTP/1.1 connection per worker, signed requests, timeouts.
//! - `data`: key layout, ~1 KiB typed entities, `$batch` bodies, response parsing.
//! - `hist`: bounded-memory latency histogram (hdrhistogram).
//! - `procstat`: server CPU and memory from `/proc`, data folder size.
//! - `run`: preload, workload phases, measurement.
//! - `report`: JSON results, the human table, `compare`.
//! - `floor`: `tablestore-bench floor`, the trivial endpoint the results are measured against.

mod cli;
mod client;
mod data;
mod floor;
mod hist;
mod procstat;
mod report;
mod run;
mod sign;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use http::HeaderValue;

use crate::cli::{Cli, Command, CompareArgs, RunArgs};
use crate::client::{ClientConfig, Endpoints};
use crate::report::RunReport;
use crate::sign::Signer;

/// mimalloc, as tablestore uses: the floor then runs on the server's allocator, and the load
/// generator's many small short-lived buffers are served faster than by glibc's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Compare(c)) => compare(&c),
        Some(Command::Floor(f)) => {
            floor::tune_allocator();
            floor::run(&f)
        }
        None => bench(cli.run),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tablestore-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn read_report(path: &std::path::Path) -> Result<RunReport, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{} is not a result file: {e}", path.display()))
}

fn compare(c: &CompareArgs) -> Result<(), String> {
    let base = read_report(&c.baseline)?;
    let cand = read_report(&c.candidate)?;
    let floor = c.floor.as_deref().map(read_report).transpose()?;
    let md = report::compare_markdown(&base, &cand, floor.as_ref());
    match &c.out {
        Some(p) => std::fs::write(p, md).map_err(|e| format!("cannot write {}: {e}", p.display())),
        None => {
            print!("{md}");
            Ok(())
        }
    }
}

fn bench(args: RunArgs) -> Result<(), String> {
    args.validate()?;
    let targets = Endpoints::parse(&args.endpoint, args.allow_remote)?;
    let signer = Signer::new(&args.account, &args.key)?;
    let version = HeaderValue::from_str(&args.api_version)
        .map_err(|_| "--api-version is not a valid header value".to_string())?;
    let client = Arc::new(ClientConfig {
        targets,
        signer,
        timeout: Duration::from_secs_f64(args.timeout),
        accept: HeaderValue::from_static(args.metadata.accept()),
        version,
    });
    let threads = args.threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .min(4)
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let json_path = args.json.clone();
    let wait = args.wait_ready;
    let report = rt.block_on(async move {
        if wait > 0.0 {
            client::wait_ready(client.clone(), Duration::from_secs_f64(wait)).await?;
        }
        let ctx = Arc::new(run::Ctx::new(client, args, threads.max(1)));
        run::run(ctx).await
    })?;
    print!("{}", report::human(&report));
    if let Some(p) = json_path {
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| format!("cannot encode the results: {e}"))?;
        std::fs::write(&p, text + "\n")
            .map_err(|e| format!("cannot write {}: {e}", p.display()))?;
        eprintln!("[tablestore-bench] results written to {}", p.display());
    }
    Ok(())
}
