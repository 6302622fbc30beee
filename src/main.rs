//! `tablestore`: parse the configuration, start logging, open the store, serve until Ctrl-C or
//! SIGTERM, then flush. `--healthcheck` instead probes a running server and exits 0 or 1.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Duration;

use tablestore::config::{connection_string, Config};
use tablestore::data;
use tablestore::server::{health, open_store, serve, serve_tls, tls, AppState};
use tablestore::store::StoreError;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// What the `--debug` file records besides the request/response trace: our debug events,
/// and only warnings from dependencies.
const DEBUG_FILE_FILTER: &str = "warn,tablestore=debug";

/// mimalloc: the request path allocates many small short-lived buffers, which glibc's
/// allocator serves markedly slower and with more fragmentation.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Positions in mimalloc's `mi_option_e` that `libmimalloc-sys` does not name (stable:
/// retired options keep their slots).
const MI_OPTION_ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Keeps memory the server has freed from counting as resident: by default mimalloc commits
/// whole arenas up front and returns freed pages to the OS only after a second, which kept
/// sled's short-lived node copies (scans, reading pages in) resident — an empty store sat at
/// ~45 MiB instead of ~8. Measured without a throughput cost (docs/performance.md).
#[allow(unsafe_code)]
fn tune_allocator() {
    // SAFETY: plain setters of mimalloc's global options, valid at any time.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_ARENA_EAGER_COMMIT, 0);
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0);
    }
}

/// The start-up line saying how the data folder is compressed, and when that was chosen.
fn compression_line(config: &Config) -> String {
    let asked = config.new_folder_compression();
    match tablestore::store::sled_kv::folder_compression(&config.store_dir()) {
        Some(c) if c == asked => format!(
            "Compression: {} (--compression lz4|zstd|off chooses for new data folders)",
            asked.name()
        ),
        Some(c) => format!(
            "Compression: {} (this data folder was created with it; --compression {} \
             applies to new folders)",
            c.name(),
            asked.name()
        ),
        None => "Compression: unknown (the data folder has no sled configuration)".into(),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    tune_allocator();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if matches!(
        args.get(1).and_then(|a| a.to_str()),
        Some("export" | "import")
    ) {
        // Transfers block (files, a blocking HTTP client): they run off the async workers.
        return tokio::task::spawn_blocking(move || data::cli::run_if_subcommand(&args))
            .await
            .ok()
            .flatten()
            .unwrap_or(ExitCode::FAILURE);
    }
    let config = Config::from_env_and_args();
    if config.healthcheck {
        return healthcheck(&config).await;
    }
    if let Err(message) = init_logging(&config) {
        eprintln!("tablestore: {message}");
        return ExitCode::FAILURE;
    }
    for warning in config.warnings() {
        tracing::warn!("{warning}");
    }
    let (account, account_key) = match config.default_account() {
        Ok(pair) => pair,
        Err(e) => {
            eprintln!("tablestore: invalid accounts (AZURITE_ACCOUNTS / --accounts): {e}");
            return ExitCode::FAILURE;
        }
    };
    // Read the certificate before opening the store or the port: a bad file is a start-up
    // error, never a silent fall back to HTTP.
    let tls_config = match tls::server_config(&config) {
        Ok(tls_config) => tls_config,
        Err(e) => {
            eprintln!("tablestore: HTTPS: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Realism options (a `--faults` file) are checked before anything starts, too.
    if let Err(e) = tablestore::server::realism::options(&config.realism) {
        eprintln!("tablestore: {e}");
        return ExitCode::FAILURE;
    }
    let scheme = if tls_config.is_some() {
        "https"
    } else {
        "http"
    };

    // The port before the store: a busy port fails before any data folder is created.
    let listener = match tokio::net::TcpListener::bind((config.host.as_str(), config.port)).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("tablestore: {}", listen_error(&config, &e));
            return ExitCode::FAILURE;
        }
    };
    let store = match open_store(&config) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("tablestore: {}", store_error(&config, &e));
            return ExitCode::FAILURE;
        }
    };
    if let Err(message) = seed(&config, &store, &account).await {
        eprintln!("tablestore: --seed: {message}");
        return ExitCode::FAILURE;
    }
    let (endpoint, client_endpoint) = match listener.local_addr() {
        Ok(addr) => {
            // Clients cannot dial a wildcard address: show them loopback instead.
            let ip = addr.ip().to_string();
            let client_host = health::probe_host(&ip);
            let client_host = if client_host.contains(':') {
                format!("[{client_host}]")
            } else {
                client_host.to_string()
            };
            (
                format!("{scheme}://{addr}"),
                format!("{scheme}://{client_host}:{}", addr.port()),
            )
        }
        Err(_) => (String::new(), String::new()),
    };
    println!("tablestore listening on {endpoint}");
    println!("Table endpoint: {client_endpoint}/{account}");
    println!(
        "Connection string: {}",
        connection_string(&client_endpoint, &account, &account_key)
    );
    if tls_config.is_some() && config.oauth.is_some() {
        println!("OAuth: bearer tokens accepted (--oauth basic; signatures are not verified)");
    }
    if let Some((url, _)) = config.postgres() {
        println!(
            "Storage: PostgreSQL {}",
            tablestore::store::postgres::display_url(url)
        );
    } else if config.is_in_memory() {
        println!("Storage: in memory (nothing is kept after exit)");
    } else {
        println!("Storage: {}", config.store_dir().display());
        match config.memory_budget {
            0 => println!("Memory budget: off (every read goes to disk; --memory-budget MIB)"),
            mib => println!("Memory budget: {mib} MiB for tables read from RAM (--memory-budget)"),
        }
        println!("{}", compression_line(&config));
    }
    // Azurite 3.35's readiness line, word for word: log-watching wait strategies written for
    // Azurite ("Azurite Table service is successfully listening at", or the shorter
    // "Table service is successfully listening" of Testcontainers modules) see it.
    println!("Azurite Table service is successfully listening at {endpoint}");
    let disable_auth = config.disable_auth;
    let state = match AppState::new(store, config) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("tablestore: invalid accounts (AZURITE_ACCOUNTS / --accounts): {e}");
            return ExitCode::FAILURE;
        }
    };
    if disable_auth {
        tracing::warn!(
            "authentication is DISABLED (--disable-auth): every request is accepted unsigned"
        );
    }
    let served = match tls_config {
        Some(tls_config) => serve_tls(listener, tls_config, state, shutdown_signal()).await,
        None => serve(listener, state, shutdown_signal()).await,
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tablestore: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `--seed` / `--seed-if-present`: loads the seed into the store before the server listens.
async fn seed(
    config: &Config,
    store: &std::sync::Arc<dyn tablestore::store::Store>,
    account: &str,
) -> Result<(), String> {
    let path = match (&config.seed, &config.seed_if_present) {
        (Some(path), _) => path.clone(),
        (None, Some(path)) if path.exists() => path.clone(),
        _ => return Ok(()),
    };
    // An on-disk store records the seed it loaded beside its folder.
    let record = config
        .is_on_disk()
        .then(|| config.location.join(SEED_RECORD));
    let store = std::sync::Arc::clone(store);
    let account = account.to_string();
    let shown = path.display().to_string();
    let summary = tokio::task::spawn_blocking(move || {
        data::cli::seed(store, &path, &account, record.as_deref())
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| e.to_string())?;
    if summary.tables == 0 {
        println!("Seed: {shown} already loaded");
    } else {
        println!(
            "Seed: {} entities in {} tables from {shown}",
            summary.entities - summary.skipped,
            summary.tables
        );
    }
    Ok(())
}

/// File in the workspace recording the digest of the seed last loaded.
const SEED_RECORD: &str = "__tablestore_seeded__";
/// One sentence for a port that cannot be bound: what is wrong and what to do.
fn listen_error(config: &Config, e: &std::io::Error) -> String {
    let at = format!("{}:{}", config.host, config.port);
    match e.kind() {
        std::io::ErrorKind::AddrInUse => format!(
            "port {} on {} is already in use (is another tablestore or Azurite running?): stop it or choose another port with --tablePort",
            config.port, config.host
        ),
        std::io::ErrorKind::PermissionDenied => format!(
            "not allowed to listen on {at} (ports below 1024 need privileges): choose another port with --tablePort"
        ),
        std::io::ErrorKind::AddrNotAvailable => format!(
            "cannot listen on {at}: {} is not an address of this machine; use --tableHost 127.0.0.1 or 0.0.0.0",
            config.host
        ),
        _ => format!("cannot listen on {at}: {e}"),
    }
}

/// One sentence for a data folder that cannot be opened: what is wrong and what to do, never
/// the error's debug text.
fn store_error(config: &Config, e: &StoreError) -> String {
    if config.postgres().is_some() {
        // The PostgreSQL store's errors are already one sentence naming the database.
        return match e {
            StoreError::Io { .. }
            | StoreError::Database { .. }
            | StoreError::Unavailable { .. }
            | StoreError::Corrupt(_) => e.to_string(),
            _ => "the PostgreSQL store could not be opened: check the database --store names"
                .to_string(),
        };
    }
    let dir = config.store_dir();
    let shown = dir.display();
    if *e == StoreError::FolderInUse {
        let hint = match config.port {
            0 => String::new(),
            port => format!(" (is one already running on port {port}?)"),
        };
        return format!(
            "another tablestore is using the data folder {shown}{hint}: stop it, or give this one its own folder with --location"
        );
    }
    // The nearest part of the path that exists but is not a folder.
    if let Some(file) = dir.ancestors().find(|p| p.exists()).filter(|p| !p.is_dir()) {
        return format!(
            "{} is a file, not a folder, so the data folder {shown} cannot be created there: pass --location with a folder",
            file.display()
        );
    }
    match e.io_kind() {
        Some(std::io::ErrorKind::PermissionDenied) => {
            return format!(
                "permission denied for the data folder {shown}: pass --location with a folder you can write to, or fix its permissions"
            )
        }
        Some(std::io::ErrorKind::StorageFull) => {
            return format!(
                "the disk holding {shown} is full: free some space or pass --location on another disk"
            )
        }
        _ => {}
    }
    match e {
        StoreError::Corrupt(_) => format!(
            "the data folder {shown} holds data this tablestore cannot read ({e}): move it aside or pass --location with another folder"
        ),
        _ => format!("cannot open the data folder {shown} ({e}): check the folder or pass --location with another one"),
    }
}

/// Console logs filtered by `--log-level`; with `--debug FILE` also everything at debug level
/// (including the request/response trace) appended to FILE.
fn init_logging(config: &Config) -> Result<(), String> {
    let console_filter =
        EnvFilter::try_new(&config.log_level).unwrap_or_else(|_| EnvFilter::new("info"));
    let console = tracing_subscriber::fmt::layer()
        .with_ansi(std::io::stdout().is_terminal())
        .with_filter(console_filter);
    let debug_file = match &config.debug {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| format!("cannot open the debug log {}: {e}", path.display()))?;
            Some(
                tracing_subscriber::fmt::layer()
                    .with_ansi(false)
                    .with_writer(Mutex::new(file))
                    .with_filter(EnvFilter::new(DEBUG_FILE_FILTER)),
            )
        }
        None => None,
    };
    tracing_subscriber::registry()
        .with(console)
        .with(debug_file)
        .try_init()
        .map_err(|e| format!("cannot start logging: {e}"))
}

/// `--healthcheck`: exit 0 when the server on the configured host and port is ready. Unless
/// the probe's own command line names a host or port, a `tablestore` running as PID 1 (the
/// container's main process) is probed where its command line says it listens, so
/// `docker run … --tablePort 9999` keeps the image's HEALTHCHECK working.
async fn healthcheck(own: &Config) -> ExitCode {
    let pid1 = if own.endpoint_on_command_line() {
        None
    } else {
        std::fs::read("/proc/1/cmdline").ok().and_then(|cmdline| {
            Config::of_server_command_line(&cmdline, |name| std::env::var(name).ok())
        })
    };
    let config = pid1.as_ref().unwrap_or(own);
    let timeout = Duration::from_secs(3);
    // A server with a certificate speaks only HTTPS: probe it over TLS (any certificate is
    // accepted; the probe runs on the same machine and sends nothing secret).
    let result = if config.https() {
        health::probe_https(&config.host, config.port, timeout).await
    } else {
        health::probe(&config.host, config.port, timeout).await
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tablestore: not healthy: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
    tracing::info!("shutting down: finishing requests and flushing the store");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Store and port errors become one sentence naming the folder or port and what to do
    /// (the permission case cannot be produced for real when the tests run as root).
    #[test]
    fn start_up_errors_say_what_to_do() {
        let dir = std::env::temp_dir().join("tablestore-no-such-parent-xyz");
        let config =
            Config::try_parse_args(["tablestore", "--location", dir.to_str().unwrap()], |_| {
                None
            })
            .unwrap();
        let denied = store_error(
            &config,
            &StoreError::io("sled", std::io::ErrorKind::PermissionDenied.into()),
        );
        assert!(
            denied.starts_with("permission denied for the data folder"),
            "{denied}"
        );
        assert!(denied.contains("--location"), "{denied}");
        assert!(!denied.contains("os error"), "{denied}");
        let in_use = store_error(&config, &StoreError::FolderInUse);
        assert!(in_use.contains("another tablestore is using"), "{in_use}");
        let busy = listen_error(&config, &std::io::ErrorKind::AddrInUse.into());
        assert!(busy.contains("is already in use"), "{busy}");
    }

    /// The option positions are mimalloc's: before tuning they hold mimalloc 3's documented
    /// defaults (arena_eager_commit 2, purge_delay 1000 ms), after it our values.
    #[test]
    fn allocator_options_are_the_intended_ones() {
        let untouched = |var: &str| std::env::var_os(var).is_none();
        #[allow(unsafe_code)]
        // SAFETY: plain getters of mimalloc's global options.
        let get = |option| unsafe { libmimalloc_sys::mi_option_get(option) };
        if untouched("MIMALLOC_ARENA_EAGER_COMMIT") {
            assert_eq!(get(MI_OPTION_ARENA_EAGER_COMMIT), 2);
        }
        if untouched("MIMALLOC_PURGE_DELAY") {
            assert_eq!(get(MI_OPTION_PURGE_DELAY), 1000);
        }
        tune_allocator();
        assert_eq!(get(MI_OPTION_ARENA_EAGER_COMMIT), 0);
        assert_eq!(get(MI_OPTION_PURGE_DELAY), 0);
    }
}
