//! The start-up banner: every line the server prints (or logs as a warning) once it is about
//! to serve, the readiness line that log watchers wait for last.

use std::net::SocketAddr;

use super::LOG_TARGET;
use crate::config::{connection_string_for, Config, StartedAs};
use crate::protocol::dialect::Flavor;
use crate::server::health;

/// What start-up learned, for [`start_up_lines`].
pub(super) struct StartUp {
    /// Whether the server speaks HTTPS (`--cert`).
    pub(super) https: bool,
    pub(super) address: SocketAddr,
    pub(super) account: String,
    pub(super) account_key: String,
    /// The `Seed:` line, when a seed was given.
    pub(super) seeded: Option<String>,
    /// The Azurite-folder line, when `--location` holds Azurite's table database.
    pub(super) azurite: Option<Line>,
}

/// A start-up line: printed as it is, or logged as a warning.
#[derive(Clone)]
pub(super) enum Line {
    Plain(String),
    Warning(String),
}

/// Prints the start-up: the ignored-option warnings, then every line of [`start_up_lines`].
pub(super) fn banner(warnings: &[String], lines: &[Line]) {
    for warning in warnings {
        tracing::warn!(target: LOG_TARGET, "{warning}");
    }
    for line in lines {
        match line {
            Line::Plain(text) => crate::data::cli::stdout_line(text),
            Line::Warning(text) => tracing::warn!(target: LOG_TARGET, "{text}"),
        }
    }
}

/// Every start-up line in order, the readiness line of the command the server was started
/// as last (log watchers take it to mean "ready").
pub(super) fn start_up_lines(config: &Config, s: &StartUp) -> Vec<Line> {
    let scheme = if s.https { "https" } else { "http" };
    let endpoint = format!("{scheme}://{}", s.address);
    // Clients cannot dial a wildcard address: show them loopback instead.
    let client_host = health::probe_host(&s.address.ip().to_string()).to_string();
    let client_host = if client_host.contains(':') {
        format!("[{client_host}]")
    } else {
        client_host
    };
    let client_endpoint = format!("{scheme}://{client_host}:{}", s.address.port());
    let mut plain = vec![format!("tablestore listening on {endpoint}")];
    plain.extend(endpoint_lines(config, s, scheme, &client_endpoint));
    if s.https && config.oauth.is_some() {
        plain.push(
            "OAuth: bearer tokens accepted (--oauth basic; signatures are not verified)".into(),
        );
    }
    plain.extend(storage_lines(config));
    plain.extend(s.seeded.clone());
    plain.push(if config.no_console {
        "Console: off (--no-console)".into()
    } else {
        format!("Console: {client_endpoint}{}", crate::console::CONSOLE_PATH)
    });
    if config.metrics_token.is_some() {
        plain.push(format!(
            "Metrics: {client_endpoint}/metrics also answers `Authorization: Bearer` with the \
             --metrics-token"
        ));
    }
    let mut lines: Vec<Line> = plain.into_iter().map(Line::Plain).collect();
    lines.extend(s.azurite.clone());
    lines.extend(warning_lines(config).into_iter().map(Line::Warning));
    lines.extend(
        readiness_lines(config, s.address, &endpoint)
            .into_iter()
            .map(Line::Plain),
    );
    lines
}

/// The table endpoint and connection string clients should use (after the flavour, for
/// Cosmos).
fn endpoint_lines(
    config: &Config,
    s: &StartUp,
    scheme: &str,
    client_endpoint: &str,
) -> Vec<String> {
    let flavor = config.flavor();
    let connection_string =
        |endpoint: &str| connection_string_for(flavor, endpoint, &s.account, &s.account_key);
    if flavor == Flavor::Cosmos {
        // The SDKs take `localhost` for a Cosmos endpoint (docs/cosmos.md): the emulator's
        // connection string names it, and so does ours.
        let cosmos_endpoint = format!("{scheme}://localhost:{}", s.address.port());
        vec![
            "Flavor: cosmos (answers as Azure Cosmos DB for Table; docs/cosmos.md)".into(),
            format!("Table endpoint: {cosmos_endpoint}/"),
            format!("Connection string: {}", connection_string(&cosmos_endpoint)),
        ]
    } else {
        vec![
            format!("Table endpoint: {client_endpoint}/{}", s.account),
            format!("Connection string: {}", connection_string(client_endpoint)),
        ]
    }
}

/// Where the data lives, and for a data folder its memory budget and compression.
fn storage_lines(config: &Config) -> Vec<String> {
    if let Some((url, _)) = config.postgres() {
        return vec![format!(
            "Storage: PostgreSQL {}",
            crate::store::open::display_url(url)
        )];
    }
    if config.is_in_memory() {
        return vec!["Storage: in memory (nothing is kept after exit)".into()];
    }
    vec![
        format!("Storage: {}", config.store_dir().display()),
        match config.memory_budget {
            0 => "Memory budget: off (every read goes to disk; --memory-budget MIB)".into(),
            mib => format!("Memory budget: {mib} MiB for tables read from RAM (--memory-budget)"),
        },
        compression_line(config),
    ]
}

/// The start-up line saying how the data folder is compressed, and when that was chosen.
fn compression_line(config: &Config) -> String {
    let asked = config.new_folder_compression();
    match crate::store::open::folder_compression(&config.store_dir()) {
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

/// Warnings about what is switched on that changes how the server answers.
fn warning_lines(config: &Config) -> Vec<String> {
    let mut warnings: Vec<String> =
        crate::server::realism::summary(&config.realism, config.flavor())
            .into_iter()
            .collect();
    if config.disable_auth {
        warnings.push(
            "authentication is DISABLED (--disable-auth): every request is accepted unsigned"
                .into(),
        );
    }
    warnings
}

/// The readiness lines, last. The storage flavour prints the readiness line of the Azurite
/// command started as, word for word (Azurite src/azurite.ts for `azurite`, src/table/main.ts
/// for `azurite-table`), so log-watching wait strategies written for Azurite see it
/// (docs/clients.md, "Testcontainers"). The Cosmos flavour says Cosmos in the same words, then
/// `Started` with a CRLF, the Cosmos DB emulator's last start-up line, which Testcontainers'
/// Cosmos modules wait for (Java `(?s).*Started\r\n$`, .NET `Started\r?\n`, Python
/// `Started\s*$`; docs/containers.md).
fn readiness_lines(config: &Config, address: SocketAddr, endpoint: &str) -> Vec<String> {
    if config.flavor() == Flavor::Cosmos {
        return vec![
            format!("{COSMOS_READY} {endpoint}"),
            // The line ends "\r\n": the banner adds the "\n".
            "Started\r".to_string(),
        ];
    }
    vec![match config.started_as {
        StartedAs::AzuriteTable => {
            format!("Azurite Table service successfully started on {address}")
        }
        StartedAs::Tablestore | StartedAs::Azurite => {
            format!("Azurite Table service is successfully listening at {endpoint}")
        }
    }]
}

/// The Cosmos flavour's readiness line, before its endpoint: Azurite's words with Cosmos's
/// name, so a wait for "Table service is successfully listening" matches both flavours.
const COSMOS_READY: &str = "Cosmos DB Table service is successfully listening at";
