//! `tablestore --healthcheck`: probes a running server and exits 0 or 1 (the container
//! image's HEALTHCHECK).

use std::process::ExitCode;
use std::time::Duration;

use crate::config::Config;
use crate::server::health;

/// `--healthcheck`: exit 0 when the server on the configured host and port is ready. Unless
/// the probe's own command line names a host or port, a `tablestore` running as PID 1 (the
/// container's main process) is probed where its command line says it listens, so
/// `docker run … --tablePort 9999` keeps the image's HEALTHCHECK working.
pub(super) async fn run(own: &Config) -> ExitCode {
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
