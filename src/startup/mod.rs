//! Start-up of the `tablestore` command: picks the subcommand, checks the configuration,
//! starts logging, opens the store, prints the banner and serves until Ctrl-C or SIGTERM.
//! `main.rs` only sets up the allocator and calls [`main`].
//!
//! Every way start-up can fail is a [`StartError`]: one sentence saying what is wrong and what
//! to do, printed once by [`main`].

mod healthcheck;
mod lines;
mod loading;
mod logging;
mod sentences;
mod signals;

use std::ffi::OsString;
use std::process::ExitCode;

use crate::config::Config;
use crate::server::{open_store, serve, serve_tls, tls, AppState};

/// The target of start-up's own log lines: the command's name, as when they were logged from
/// `main.rs`, rather than a module path (`tablestore::startup::lines`) that reads like Rust
/// internals in a warning meant for the user.
const LOG_TARGET: &str = "tablestore";

/// The whole command: `export`, `import` and `admin` run as subcommands; anything else is
/// the server's command line (or `--healthcheck`). `args` are the process's arguments,
/// program name first.
pub async fn main(args: Vec<OsString>) -> ExitCode {
    match args.get(1).and_then(|a| a.to_str()) {
        // Transfers and admin requests block (files, a blocking HTTP client): they run off the
        // async workers.
        Some("export" | "import") => {
            return tokio::task::spawn_blocking(move || crate::data::cli::run_if_subcommand(&args))
                .await
                .ok()
                .flatten()
                .unwrap_or(ExitCode::FAILURE);
        }
        Some("admin") => {
            return tokio::task::spawn_blocking(move || crate::admin::run(&args))
                .await
                .unwrap_or(ExitCode::FAILURE);
        }
        _ => {}
    }
    if let Some(sentence) = args
        .get(1)
        .and_then(|a| a.to_str())
        .and_then(sentences::unknown_command)
    {
        eprintln!("tablestore: {sentence}");
        return ExitCode::from(2);
    }
    let config = match Config::try_parse_args(args, |name| std::env::var(name).ok()) {
        Ok(config) => config,
        Err(e) => {
            // Help, the version or a usage error; a reader that went away (`--help | head`)
            // is no error.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    if config.healthcheck {
        return healthcheck::run(&config).await;
    }
    match run(config).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tablestore: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Why the server did not start (or stopped serving): one sentence saying what is wrong and
/// what to do, never the error's debug text.
#[derive(Debug)]
pub(crate) enum StartError {
    /// Logging could not start (`--debug FILE`).
    Logging(String),
    /// `AZURITE_ACCOUNTS` / `--accounts`.
    Accounts(String),
    /// `--cert`, `--key`, `--pwd`.
    Https(String),
    /// A sentence that names its own option (`--faults`, `--metrics-token`).
    Option(String),
    /// The port (see [`sentences::listen_error`]).
    Listen(String),
    /// The data folder or database (see [`sentences::store_error`]).
    Store(String),
    /// `--seed`, `--seed-if-present`.
    Seed(String),
    /// `--import-azurite-if-present`.
    AzuriteImport(String),
    /// The server failed while serving or flushing at exit.
    Serve(std::io::Error),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Logging(m)
            | StartError::Option(m)
            | StartError::Listen(m)
            | StartError::Store(m) => f.write_str(m),
            StartError::Accounts(m) => write!(
                f,
                "invalid accounts in AZURITE_ACCOUNTS / --accounts: {m} (expected \
                 name:key1[:key2];name2:key1…, each key in base64, as `openssl rand -base64 32` \
                 prints one)"
            ),
            StartError::Https(m) => write!(f, "HTTPS: {m}"),
            StartError::Seed(m) => write!(f, "--seed: {m}"),
            StartError::AzuriteImport(m) => write!(f, "--import-azurite-if-present: {m}"),
            StartError::Serve(e) => write!(f, "the server stopped: {e}"),
        }
    }
}

/// Opens the store and serves until Ctrl-C or SIGTERM. Every check that can refuse the
/// configuration runs before the port is bound or the store opened, and every start-up line
/// is printed by [`lines::banner`] once the server is about to serve.
async fn run(config: Config) -> Result<(), StartError> {
    logging::init(&config).map_err(StartError::Logging)?;
    let (account, account_key) = config.default_account().map_err(StartError::Accounts)?;
    // Read the certificate before opening the store or the port: a bad file is a start-up
    // error, never a silent fall back to HTTP.
    let tls_config = tls::server_config(&config).map_err(StartError::Https)?;
    // Realism options (a `--faults` file) and the metrics token are checked before anything
    // starts, too.
    crate::server::realism::options(&config.realism, config.flavor())
        .map_err(StartError::Option)?;
    config.checked_metrics_token().map_err(StartError::Option)?;
    config.checked_admin_token().map_err(StartError::Option)?;
    config.check_flavor_options().map_err(StartError::Option)?;
    // The port before the store: a busy port fails before any data folder is created.
    let listener = tokio::net::TcpListener::bind((config.host.as_str(), config.port))
        .await
        .map_err(|e| StartError::Listen(sentences::listen_error(&config, &e)))?;
    let store = open_store(&config)
        .await
        .map_err(|e| StartError::Store(sentences::store_error(&config, &e)))?;
    let seeded = loading::seed(&config, &store, &account)
        .await
        .map_err(StartError::Seed)?;
    let azurite = loading::azurite_folder(&config, &store)
        .await
        .map_err(StartError::AzuriteImport)?;
    let address = listener
        .local_addr()
        .map_err(|e| StartError::Listen(sentences::listen_error(&config, &e)))?;
    let baseline = loading::reset_image(&config, &store, &account)
        .await
        .map_err(StartError::Seed)?;
    let start_up = lines::StartUp {
        https: tls_config.is_some(),
        address,
        account,
        account_key,
        seeded,
        azurite,
    };
    let warnings = config.warnings();
    let lines = lines::start_up_lines(&config, &start_up);
    let state = AppState::new(store, config).map_err(StartError::Accounts)?;
    state.control.set_baseline(baseline);
    // Handlers first: a SIGTERM right after the readiness line is a graceful stop.
    let shutdown = signals::shutdown();
    lines::banner(&warnings, &lines);
    let served = match tls_config {
        Some(tls_config) => serve_tls(listener, tls_config, state, shutdown).await,
        None => serve(listener, state, shutdown).await,
    };
    served.map_err(StartError::Serve)
}
