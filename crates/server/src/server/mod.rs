//! The axum front end, deliberately thin: one catch-all route admits a request
//! ([`intake`]), decodes it into the executor's typed operation ([`decode`]), runs it
//! ([`crate::exec`]) and encodes the outcome ([`encode`]); every error becomes Azure's error
//! response at this edge ([`error`]). Layers beside the path read what it leaves in the
//! response: the request log and insight ([`middleware`]), CORS ([`cors`]); realism is
//! consulted around the run ([`realism`]).

pub(crate) mod auth;
mod call;
pub(crate) mod connections;
pub(crate) mod context;
mod cors;
mod decode;
mod dispatch;
mod encode;
mod error;
mod front_page;
pub mod health;
mod in_process;
mod insight;
mod intake;
pub(crate) mod middleware;
pub mod realism;
pub mod state;
pub mod tls;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use axum::response::Response;
use tokio::net::TcpListener;

use crate::auth::live::LiveAccounts;
use crate::config::Config;
use crate::protocol::dialect::Dialect;
use crate::store::{Store, StoreError};
use connections::ConnectionAbort;
pub use connections::ServeLimits;
#[doc(hidden)]
pub use in_process::{InProcess, InProcessRequest, InProcessResponse};
/// The gate every Table request passes (public for its benchmark, `benches/state.rs`).
#[doc(hidden)]
pub use state::gate::{Gate as StateGate, Pass as StatePass};

/// Shared by every request.
#[derive(Clone)]
pub struct AppState {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) config: Arc<Config>,
    /// How the server answers, built once from `--flavor` (`protocol::dialect`).
    pub(crate) dialect: &'static Dialect,
    /// The accounts served: those of the start-up, and those created at run time.
    pub(crate) accounts: Arc<LiveAccounts>,
    /// Query classes, statistics, advice and metrics (fed by `middleware::request_log`).
    pub(crate) insight: crate::insight::Insight,
    /// Production realism (targets, page breaks, lifecycle, faults); off by default.
    pub(crate) realism: Arc<crate::realism::Realism>,
    /// Reset, snapshots and the gate that makes them atomic for requests ([`state`]).
    pub control: Arc<state::Control>,
}

impl AppState {
    pub fn new(store: Arc<dyn Store>, config: Config) -> Result<AppState, String> {
        let accounts = config.accounts()?;
        // The binary states what realism is on in its start-up lines (`realism::summary`).
        let realism =
            crate::realism::Realism::new(realism::options(&config.realism, config.flavor())?);
        // Advice for the service the server answers as (docs/insight.md).
        let insight = crate::insight::Insight::start_as(config.dialect());
        Ok(AppState {
            dialect: config.dialect(),
            realism: Arc::new(realism),
            store,
            control: Arc::new(state::Control::new(&config)),
            config: Arc::new(config),
            accounts: Arc::new(LiveAccounts::new(accounts)),
            insight,
        })
    }
}

impl AppState {
    /// [`AppState::new`] whose reset brings back `store` as it is now (`capture`), or an
    /// empty store (a data folder or a database, whose data outlives the process).
    pub async fn serving(
        store: Arc<dyn Store>,
        config: Config,
        capture: bool,
    ) -> Result<AppState, String> {
        let baseline = match capture {
            true => state::image_of(&store).await?,
            false => crate::store::state::Image::empty(crate::store::state::StateScope::Server),
        };
        let app = AppState::new(store, config)?;
        app.control.set_baseline(baseline);
        Ok(app)
    }
}

/// Opens the store the configuration asks for (a PostgreSQL store's connections live on
/// the runtime this is awaited on).
pub async fn open_store(config: &Config) -> Result<Arc<dyn Store>, StoreError> {
    crate::store::open::open(&config.store_options()).await
}

/// The whole HTTP application: the request log and insight around CORS around the catch-all
/// dispatch route. The connection loop (`connections`) hands it each request with the peer's
/// address; it is called directly, with no router or middleware stack in between (those
/// cost a point read as much as its decode and execute together: docs/performance.md).
pub(crate) struct App {
    state: AppState,
}

impl App {
    pub(crate) fn new(state: AppState) -> App {
        App { state }
    }

    /// Answers one request from `peer`; `abort` ends its connection without an answer (fault
    /// injection), absent outside a connection.
    pub(crate) async fn answer(
        &self,
        request: Request<Body>,
        peer: SocketAddr,
        abort: Option<&ConnectionAbort>,
    ) -> Response {
        let state = &self.state;
        middleware::request_log(state, request, |request| {
            cors::layer(state, request, |request| {
                dispatch::dispatch(state, peer, abort, request)
            })
        })
        .await
    }
}

/// How requests reached the server. The HTTPS server puts `Scheme::Https` into every
/// request's extensions; a request without the extension came over plain HTTP. SAS `spr=https`,
/// bearer tokens and the URLs in responses depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scheme {
    Http,
    Https,
}

impl Scheme {
    /// The scheme of a request (from its extensions; `Http` when none was set).
    pub(crate) fn of(extensions: &axum::http::Extensions) -> Scheme {
        extensions.get::<Scheme>().copied().unwrap_or(Scheme::Http)
    }

    pub(crate) fn as_str(self) -> &'static str {
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
pub(crate) async fn serve_with_limits(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
    limits: ServeLimits,
) -> std::io::Result<()> {
    serve_inner(listener, None, state, shutdown, limits).await
}

/// Serves HTTPS with `tls` until `shutdown` completes, then flushes the store. Requests carry
/// [`Scheme::Https`] in their extensions.
pub async fn serve_tls(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_inner(listener, Some(tls), state, shutdown, ServeLimits::default()).await
}

/// The one accept loop (connection limits, timeouts), over plain TCP or TLS; the embedded
/// fixture (`tablestore::testing::TestServer`) serves through it too.
pub async fn serve_inner(
    listener: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
    limits: ServeLimits,
) -> std::io::Result<()> {
    let store = Arc::clone(&state.store);
    connections::run(listener, App::new(state), tls, shutdown, limits).await;
    store.flush().await.map_err(std::io::Error::other)
}
