//! `tablestore`: parse the configuration, start logging, open the store, serve until Ctrl-C or
//! SIGTERM, then flush. `--healthcheck` instead probes a running server and exits 0 or 1.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Duration;

use tablestore::config::{connection_string_for, Config, StartedAs};
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
    match args.get(1).and_then(|a| a.to_str()) {
        // Transfers and admin requests block (files, a blocking HTTP client): they run off the
        // async workers.
        Some("export" | "import") => {
            return tokio::task::spawn_blocking(move || data::cli::run_if_subcommand(&args))
                .await
                .ok()
                .flatten()
                .unwrap_or(ExitCode::FAILURE);
        }
        Some("admin") => {
            return tokio::task::spawn_blocking(move || tablestore::admin::run(&args))
                .await
                .unwrap_or(ExitCode::FAILURE);
        }
        _ => {}
    }
    let config = Config::from_env_and_args();
    if config.healthcheck {
        return healthcheck(&config).await;
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
enum StartError {
    /// Logging could not start (`--debug FILE`).
    Logging(String),
    /// `AZURITE_ACCOUNTS` / `--accounts`.
    Accounts(String),
    /// `--cert`, `--key`, `--pwd`.
    Https(String),
    /// A sentence that names its own option (`--faults`, `--metrics-token`).
    Option(String),
    /// The port (see [`listen_error`]).
    Listen(String),
    /// The data folder or database (see [`store_error`]).
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
                 name:key1[:key2];name2:key1…, keys in base64)"
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
/// is printed by [`banner`] once the server is about to serve.
async fn run(config: Config) -> Result<(), StartError> {
    init_logging(&config).map_err(StartError::Logging)?;
    let (account, account_key) = config.default_account().map_err(StartError::Accounts)?;
    // Read the certificate before opening the store or the port: a bad file is a start-up
    // error, never a silent fall back to HTTP.
    let tls_config = tls::server_config(&config).map_err(StartError::Https)?;
    // Realism options (a `--faults` file) and the metrics token are checked before anything
    // starts, too.
    tablestore::server::realism::options(&config.realism, config.flavor())
        .map_err(StartError::Option)?;
    config.checked_metrics_token().map_err(StartError::Option)?;
    // The port before the store: a busy port fails before any data folder is created.
    let listener = tokio::net::TcpListener::bind((config.host.as_str(), config.port))
        .await
        .map_err(|e| StartError::Listen(listen_error(&config, &e)))?;
    let store = open_store(&config)
        .await
        .map_err(|e| StartError::Store(store_error(&config, &e)))?;
    let seeded = seed(&config, &store, &account)
        .await
        .map_err(StartError::Seed)?;
    let azurite = azurite_folder(&config, &store)
        .await
        .map_err(StartError::AzuriteImport)?;
    let address = listener
        .local_addr()
        .map_err(|e| StartError::Listen(listen_error(&config, &e)))?;
    let scheme = if tls_config.is_some() {
        "https"
    } else {
        "http"
    };
    let start_up = StartUp {
        scheme,
        address,
        account,
        account_key,
        https: tls_config.is_some(),
        seeded,
        azurite,
    };
    let warnings = config.warnings();
    let lines = start_up_lines(&config, &start_up);
    let state = AppState::new(store, config).map_err(StartError::Accounts)?;
    banner(&warnings, &lines);
    let served = match tls_config {
        Some(tls_config) => serve_tls(listener, tls_config, state, shutdown_signal()).await,
        None => serve(listener, state, shutdown_signal()).await,
    };
    served.map_err(StartError::Serve)
}

/// What start-up learned, for [`start_up_lines`].
struct StartUp {
    scheme: &'static str,
    address: std::net::SocketAddr,
    account: String,
    account_key: String,
    https: bool,
    /// The `Seed:` line, when a seed was given.
    seeded: Option<String>,
    /// The Azurite-folder line, when `--location` holds Azurite's table database.
    azurite: Option<Line>,
}

/// A start-up line: printed as it is, or logged as a warning.
enum Line {
    Plain(String),
    Warning(String),
}

/// Every start-up line in order, the readiness line of the command the server was started
/// as last (log watchers take it to mean "ready").
fn start_up_lines(config: &Config, s: &StartUp) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut plain = |line: String| lines.push(Line::Plain(line));
    let endpoint = format!("{}://{}", s.scheme, s.address);
    // Clients cannot dial a wildcard address: show them loopback instead.
    let client_host = health::probe_host(&s.address.ip().to_string()).to_string();
    let client_host = if client_host.contains(':') {
        format!("[{client_host}]")
    } else {
        client_host
    };
    let client_endpoint = format!("{}://{client_host}:{}", s.scheme, s.address.port());
    plain(format!("tablestore listening on {endpoint}"));
    let flavor = config.flavor();
    if flavor.is_cosmos() {
        // The SDKs take `localhost` for a Cosmos endpoint (docs/cosmos.md): the emulator's
        // connection string names it, and so does ours.
        let cosmos_endpoint = format!("{}://localhost:{}", s.scheme, s.address.port());
        plain("Flavor: cosmos (answers as Azure Cosmos DB for Table; docs/cosmos.md)".into());
        plain(format!("Table endpoint: {cosmos_endpoint}/"));
        plain(format!(
            "Connection string: {}",
            connection_string_for(flavor, &cosmos_endpoint, &s.account, &s.account_key)
        ));
    } else {
        plain(format!("Table endpoint: {client_endpoint}/{}", s.account));
        plain(format!(
            "Connection string: {}",
            connection_string_for(flavor, &client_endpoint, &s.account, &s.account_key)
        ));
    }
    if s.https && config.oauth.is_some() {
        plain("OAuth: bearer tokens accepted (--oauth basic; signatures are not verified)".into());
    }
    if let Some((url, _)) = config.postgres() {
        plain(format!(
            "Storage: PostgreSQL {}",
            tablestore::store::postgres::display_url(url)
        ));
    } else if config.is_in_memory() {
        plain("Storage: in memory (nothing is kept after exit)".into());
    } else {
        plain(format!("Storage: {}", config.store_dir().display()));
        plain(match config.memory_budget {
            0 => "Memory budget: off (every read goes to disk; --memory-budget MIB)".into(),
            mib => format!("Memory budget: {mib} MiB for tables read from RAM (--memory-budget)"),
        });
        plain(compression_line(config));
    }
    if let Some(line) = &s.seeded {
        plain(line.clone());
    }
    if config.no_console {
        plain("Console: off (--no-console)".into());
    } else {
        plain(format!(
            "Console: {client_endpoint}{}",
            tablestore::console::CONSOLE_PATH
        ));
    }
    if config.metrics_token.is_some() {
        plain(format!(
            "Metrics: {client_endpoint}/metrics also answers `Authorization: Bearer` with the \
             --metrics-token"
        ));
    }
    match &s.azurite {
        Some(Line::Plain(line)) => lines.push(Line::Plain(line.clone())),
        Some(Line::Warning(line)) => lines.push(Line::Warning(line.clone())),
        None => {}
    }
    if let Some(realism) = tablestore::server::realism::summary(&config.realism, config.flavor()) {
        lines.push(Line::Warning(realism));
    }
    if config.disable_auth {
        lines.push(Line::Warning(
            "authentication is DISABLED (--disable-auth): every request is accepted unsigned"
                .into(),
        ));
    }
    // The readiness line of the Azurite command started as, word for word (Azurite
    // src/azurite.ts for `azurite`, src/table/main.ts for `azurite-table`), so log-watching
    // wait strategies written for Azurite see it (docs/clients.md, "Testcontainers").
    lines.push(Line::Plain(match config.started_as {
        StartedAs::AzuriteTable => {
            format!(
                "Azurite Table service successfully started on {}",
                s.address
            )
        }
        StartedAs::Tablestore | StartedAs::Azurite => {
            format!("Azurite Table service is successfully listening at {endpoint}")
        }
    }));
    lines
}

/// Prints the start-up: the ignored-option warnings, then every line of [`start_up_lines`].
fn banner(warnings: &[String], lines: &[Line]) {
    for warning in warnings {
        tracing::warn!("{warning}");
    }
    for line in lines {
        match line {
            Line::Plain(text) => println!("{text}"),
            Line::Warning(text) => tracing::warn!("{text}"),
        }
    }
}

/// `--seed` / `--seed-if-present`: loads the seed into the store before the server listens,
/// and says what it loaded.
async fn seed(
    config: &Config,
    store: &std::sync::Arc<dyn tablestore::store::Store>,
    account: &str,
) -> Result<Option<String>, String> {
    let path = match (&config.seed, &config.seed_if_present) {
        (Some(path), _) => path.clone(),
        (None, Some(path)) if path.exists() => path.clone(),
        _ => return Ok(None),
    };
    // An on-disk store records the seed it loaded beside its folder.
    let record = config
        .is_on_disk()
        .then(|| config.location.join(SEED_RECORD));
    let store = std::sync::Arc::clone(store);
    let account = account.to_string();
    let shown = path.display().to_string();
    let flavor = config.flavor.into();
    let summary = tokio::task::spawn_blocking(move || {
        data::cli::seed(store, &path, &account, flavor, record.as_deref())
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| e.to_string())?;
    Ok(Some(if summary.tables == 0 {
        format!("Seed: {shown} already loaded")
    } else {
        format!(
            "Seed: {} in {} from {shown}",
            count(summary.entities - summary.skipped, "entity", "entities"),
            count(summary.tables as u64, "table", "tables")
        )
    }))
}

/// `n` with its noun, singular for one.
fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A `--location` holding Azurite's table database (`__azurite_db_table__.json`, which this
/// server does not read): imported once with `--import-azurite-if-present`, else one
/// sentence saying how to bring it over.
async fn azurite_folder(
    config: &Config,
    store: &std::sync::Arc<dyn tablestore::store::Store>,
) -> Result<Option<Line>, String> {
    let dir = config.location.clone();
    let database = dir.join(data::azurite::DB_FILE);
    if !database.is_file() {
        return Ok(None);
    }
    let shown = database.display().to_string();
    if !config.import_azurite_if_present {
        let how = if config.is_on_disk() {
            format!(
                "restart with --import-azurite-if-present to import it once, or stop this \
                 server and run `tablestore import --from-azurite {0} --location {0}`",
                dir.display()
            )
        } else {
            format!(
                "restart with --import-azurite-if-present to import it at start-up, or run \
                 `tablestore import --from-azurite {} --connection-string \"…\"` with the \
                 connection string above",
                dir.display()
            )
        };
        return Ok(Some(Line::Warning(format!(
            "{shown} is Azurite's table database, which tablestore does not read: {how}"
        ))));
    }
    let record = config
        .is_on_disk()
        .then(|| config.location.join(AZURITE_IMPORT_RECORD));
    let store = std::sync::Arc::clone(store);
    let summary = tokio::task::spawn_blocking(move || {
        data::cli::import_azurite_at_start(store, &dir, record.as_deref())
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| e.to_string())?;
    Ok(Some(Line::Plain(if summary.tables == 0 {
        format!("Azurite: {shown} already imported")
    } else {
        let mut line = format!(
            "Azurite: imported {} in {} from {shown}",
            count(summary.entities - summary.skipped, "entity", "entities"),
            count(summary.tables as u64, "table", "tables")
        );
        if summary.skipped > 0 {
            line.push_str(&format!(
                " ({} already present, left as they were)",
                summary.skipped
            ));
        }
        line
    })))
}

/// File in the workspace recording the digest of the Azurite database last imported.
const AZURITE_IMPORT_RECORD: &str = "__tablestore_azurite_imported__";
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
    let console_filter = log_filter(&config.log_level)?;
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

/// `--log-level`: a level, or tracing directives (`warn,tablestore=debug`). A bare word that
/// is not a level is refused: tracing would read `verbose` as "everything of a module named
/// verbose", which silences the server instead of what was meant.
fn log_filter(text: &str) -> Result<EnvFilter, String> {
    const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];
    let wrong = || {
        format!(
            "--log-level {text:?} is not a log filter: give a level (error, warn, info, debug, \
             trace or off) or directives such as warn,tablestore=debug"
        )
    };
    let bare_word = |d: &str| !d.contains(['=', '[', ':']);
    let directives: Vec<&str> = text.split(',').map(str::trim).collect();
    if directives.iter().any(|d| {
        d.is_empty() || (bare_word(d) && !LEVELS.contains(&d.to_ascii_lowercase().as_str()))
    }) {
        return Err(wrong());
    }
    EnvFilter::try_new(text).map_err(|_| wrong())
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
        _ = npx_gone() => {},
    }
    tracing::info!("shutting down: finishing requests and flushing the store");
}

/// Completes when the server was started by `npx`/`npm exec` and npm's shell has gone. npm
/// runs a package's command as `sh -c '<bin> …'` and passes SIGTERM and SIGINT to that shell
/// only; the shell dies without passing them on, which would leave the server running with
/// nobody to stop it. npm marks the shell's environment with `npm_lifecycle_event=npx`, so
/// only such a server watches its parent; anything else never completes here.
async fn npx_gone() {
    #[cfg(unix)]
    if std::env::var("npm_lifecycle_event").as_deref() == Ok("npx") {
        let parent = std::os::unix::process::parent_id();
        loop {
            tokio::time::sleep(Duration::from_millis(200)).await;
            if std::os::unix::process::parent_id() != parent {
                tracing::info!("npx has exited");
                return;
            }
        }
    }
    std::future::pending::<()>().await
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
