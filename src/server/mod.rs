//! The axum front end, deliberately thin: one catch-all route parses the request into an
//! [`Operation`](crate::protocol::operation::Operation), a handler per operation awaits the
//! store, and every error becomes Azure's error response.

pub mod auth;
pub mod call;
pub mod connections;
pub mod context;
pub mod dispatch;
mod front_page;
pub mod handlers;
pub mod health;
pub mod intake;
pub mod middleware;
pub mod realism;
pub mod tls;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use tokio::net::TcpListener;

use crate::auth::Accounts;
use crate::config::{connection_string, Config};
use crate::store::{Store, StoreError};
pub use connections::ServeLimits;

/// Shared by every request.
#[derive(Clone)]
pub struct AppState {
    pub store: Arc<dyn Store>,
    pub config: Arc<Config>,
    pub accounts: Arc<Accounts>,
    /// Query classes, statistics, advice and metrics (fed by `middleware::request_log`).
    pub insight: crate::insight::Insight,
    /// Production realism (targets, page breaks, lifecycle, faults); off by default.
    pub realism: Arc<crate::realism::Realism>,
}

impl AppState {
    pub fn new(store: Arc<dyn Store>, config: Config) -> Result<AppState, String> {
        let accounts = config.accounts()?;
        // The binary states what realism is on in its start-up lines (`realism::summary`).
        let realism = crate::realism::Realism::new(realism::options(&config.realism)?);
        Ok(AppState {
            realism: Arc::new(realism),
            store,
            config: Arc::new(config),
            accounts: Arc::new(accounts),
            insight: crate::insight::Insight::start(),
        })
    }
}

/// Opens the store the configuration asks for (a PostgreSQL store's connections live on
/// the runtime this is awaited on).
pub async fn open_store(config: &Config) -> Result<Arc<dyn Store>, StoreError> {
    crate::store::open::open(&config.store_options()).await
}

/// The whole HTTP application: the catch-all dispatch route behind the request-log layer.
pub fn app(state: AppState) -> Router {
    Router::new()
        .fallback(dispatch::dispatch)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::request_log,
        ))
        .with_state(state)
}

/// How requests reached the server. The HTTPS server puts `Scheme::Https` into every
/// request's extensions; a request without the extension came over plain HTTP. SAS `spr=https`,
/// bearer tokens and the URLs in responses depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

impl Scheme {
    /// The scheme of a request (from its extensions; `Http` when none was set).
    pub fn of(extensions: &axum::http::Extensions) -> Scheme {
        extensions.get::<Scheme>().copied().unwrap_or(Scheme::Http)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// Serves plain HTTP until `shutdown` completes, then flushes the store.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with_limits(listener, state, shutdown, ServeLimits::default()).await
}

/// [`serve`] with explicit connection limits and timeouts.
pub async fn serve_with_limits(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
    limits: ServeLimits,
) -> std::io::Result<()> {
    serve_inner(listener, None, state, shutdown, limits).await
}

/// Serves HTTPS with `tls` until `shutdown` completes, then flushes the store. Requests carry
/// [`Scheme::Https`] and, as over HTTP, `ConnectInfo<SocketAddr>` with the client's address.
pub async fn serve_tls(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_inner(listener, Some(tls), state, shutdown, ServeLimits::default()).await
}

/// The one accept loop (connection limits, timeouts), over plain TCP or TLS.
async fn serve_inner(
    listener: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
    limits: ServeLimits,
) -> std::io::Result<()> {
    let store = Arc::clone(&state.store);
    let router = if tls.is_some() {
        app(state).layer(axum::Extension(Scheme::Https))
    } else {
        app(state)
    };
    connections::run(listener, router, tls, shutdown, limits).await;
    store.flush().await.map_err(std::io::Error::other)
}

/// A server running in this process (tests and embedding).
pub struct RunningServer {
    pub addr: SocketAddr,
    /// `true` when the server speaks HTTPS (the configuration named a certificate).
    pub https: bool,
    /// The account [`RunningServer::connection_string`] names and its base64 key
    /// (see [`Config::default_account`]).
    pub account: String,
    pub account_key: String,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl RunningServer {
    /// Starts a server for `config` on its host and port (port 0 picks a free one). With
    /// `cert` and `key` (PEM) or `cert` and `pwd` (PFX) set, it speaks HTTPS.
    pub async fn start(config: Config) -> std::io::Result<RunningServer> {
        RunningServer::start_with_limits(config, ServeLimits::default()).await
    }

    /// [`RunningServer::start`] with explicit connection limits and timeouts.
    pub async fn start_with_limits(
        config: Config,
        limits: ServeLimits,
    ) -> std::io::Result<RunningServer> {
        let store = open_store(&config).await.map_err(std::io::Error::other)?;
        RunningServer::start_with_store_and_limits(config, store, limits).await
    }

    /// Starts a server over an already opened (and possibly pre-filled) store; `config`'s
    /// store settings are ignored.
    pub async fn start_with_store(
        config: Config,
        store: Arc<dyn Store>,
    ) -> std::io::Result<RunningServer> {
        RunningServer::start_with_store_and_limits(config, store, ServeLimits::default()).await
    }

    async fn start_with_store_and_limits(
        config: Config,
        store: Arc<dyn Store>,
        limits: ServeLimits,
    ) -> std::io::Result<RunningServer> {
        let tls = tls::server_config(&config).map_err(std::io::Error::other)?;
        let (account, account_key) = config.default_account().map_err(std::io::Error::other)?;
        let listener = TcpListener::bind((config.host.as_str(), config.port)).await?;
        let addr = listener.local_addr()?;
        let state = AppState::new(store, config).map_err(std::io::Error::other)?;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let shutdown = async move {
            let _ = rx.await;
        };
        let https = tls.is_some();
        let task = tokio::spawn(serve_inner(listener, tls, state, shutdown, limits));
        Ok(RunningServer {
            addr,
            https,
            account,
            account_key,
            shutdown: Some(tx),
            task: Some(task),
        })
    }

    /// `http://127.0.0.1:<port>` (`https://…` for an HTTPS server)
    pub fn endpoint(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// `http://127.0.0.1:<port>/devstoreaccount1` (or the first configured account)
    pub fn account_url(&self) -> String {
        format!("{}/{}", self.endpoint(), self.account)
    }

    /// The connection string of [`RunningServer::account`].
    pub fn connection_string(&self) -> String {
        connection_string(&self.endpoint(), &self.account, &self.account_key)
    }

    /// Stops accepting requests, finishes those in flight and flushes the store.
    pub async fn stop(mut self) -> std::io::Result<()> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        match self.task.take() {
            Some(task) => task.await.map_err(std::io::Error::other)?,
            None => Ok(()),
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}
