//! Logging: console logs filtered by `--log-level`, and the `--debug FILE` trace.

use std::io::IsTerminal;
use std::sync::Mutex;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use crate::config::Config;

/// What the `--debug` file records besides the request/response trace: our debug events,
/// and only warnings from dependencies.
const DEBUG_FILE_FILTER: &str = "warn,tablestore=debug";

/// Console logs filtered by `--log-level`; with `--debug FILE` also everything at debug level
/// (including the request/response trace) appended to FILE.
pub(super) fn init(config: &Config) -> Result<(), String> {
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
