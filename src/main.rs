//! `tablestore`: parse the configuration, start logging, open the store, serve until Ctrl-C or
//! SIGTERM, then flush.

use clap::Parser;
use tablestore::config::{connection_string, Config, DEV_ACCOUNT, DEV_ACCOUNT_KEY};
use tablestore::server::{open_store, serve, AppState};

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let config = Config::parse();
    let filter = tracing_subscriber::EnvFilter::try_new(&config.log_level)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt().with_env_filter(filter).init();

    let store = match open_store(&config) {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "tablestore: cannot open the data folder {}: {e:?}",
                config.location.display()
            );
            return std::process::ExitCode::FAILURE;
        }
    };
    let listener = match tokio::net::TcpListener::bind((config.host.as_str(), config.port)).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!(
                "tablestore: cannot listen on {}:{}: {e}",
                config.host, config.port
            );
            return std::process::ExitCode::FAILURE;
        }
    };
    let addr = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let endpoint = format!("http://{addr}");
    println!("tablestore listening on {endpoint}");
    println!("Table endpoint: {endpoint}/{DEV_ACCOUNT}");
    println!(
        "Connection string: {}",
        connection_string(&endpoint, DEV_ACCOUNT, DEV_ACCOUNT_KEY)
    );
    if config.in_memory {
        println!("Storage: in memory (nothing is kept after exit)");
    } else {
        println!("Storage: {}", config.location.display());
    }
    let disable_auth = config.disable_auth;
    let state = match AppState::new(store, config) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("tablestore: invalid accounts (AZURITE_ACCOUNTS / --accounts): {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    if disable_auth {
        tracing::warn!(
            "authentication is DISABLED (--disable-auth): every request is accepted unsigned"
        );
    }
    match serve(listener, state, shutdown_signal()).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tablestore: {e}");
            std::process::ExitCode::FAILURE
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
