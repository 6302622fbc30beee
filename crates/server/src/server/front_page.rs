//! What a person gets who opens the server's address in a browser or with curl. `GET /`
//! without any of the headers an SDK or tool sends (`Authorization`, `x-ms-version`,
//! `x-ms-date`) is a person's visit: with `Accept: text/html` (a browser) it gets a short page
//! pointing to the web console, with no `Accept`, `*/*` or `text/plain` (curl, wget) a few
//! lines of plain text saying the same, instead of an XML error. Every other request for `/`
//! keeps Azure's answer (400 InvalidUri: the service root names no resource); the SDKs always
//! send `x-ms-version`.

use axum::http::request::Parts;
use axum::http::{header, Method, StatusCode};
use axum::response::Response;

use super::context::RequestContext;
use super::AppState;
use crate::console::CONSOLE_PATH;
use crate::protocol::headers::X_MS_VERSION;

/// Who opened the server's root URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Visit {
    /// A browser (`Accept: text/html`): the HTML page.
    Browser,
    /// curl or wget (no `Accept`, `*/*` or `text/plain`): plain text.
    Terminal,
}

/// Whether the request is a person opening the server's root URL, and with what.
pub(crate) fn visit(parts: &Parts) -> Option<Visit> {
    // Every request passes here: the cheap tests first, the `Accept` values only for `/`.
    if !(parts.method == Method::GET || parts.method == Method::HEAD)
        || parts.uri.path() != "/"
        || !parts.uri.query().is_none_or(str::is_empty)
    {
        return None;
    }
    let accepts: Vec<String> = parts
        .headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .collect();
    let signed_or_versioned = [header::AUTHORIZATION.as_str(), X_MS_VERSION, "x-ms-date"]
        .iter()
        .any(|name| parts.headers.contains_key(*name));
    if signed_or_versioned {
        return None;
    }
    if accepts.iter().any(|a| a == "text/html") {
        Some(Visit::Browser)
    } else if accepts
        .iter()
        .all(|a| a == "*/*" || a == "text/plain" || a == "text/*")
    {
        Some(Visit::Terminal)
    } else {
        None
    }
}

/// The answer to a [`Visit`].
pub(crate) fn answer(
    state: &AppState,
    ctx: &RequestContext,
    visit: Visit,
    parts: &Parts,
) -> Response {
    match visit {
        Visit::Browser => page(state, ctx),
        Visit::Terminal => text(state, ctx, parts),
    }
}

/// Plain text for curl: what this address is, where the console and the health check are.
fn text(state: &AppState, ctx: &RequestContext, parts: &Parts) -> Response {
    let origin = parts
        .headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_graphic()))
        .map(|host| {
            let scheme = if state.config.https() {
                "https"
            } else {
                "http"
            };
            format!("{scheme}://{host}")
        })
        .unwrap_or_default();
    let dialect = state.dialect;
    let what = format!("an {} endpoint ({})", dialect.service, dialect.command);
    let console = if state.config.no_console {
        "Web console: off (--no-console)".to_string()
    } else {
        format!("Web console: {origin}{CONSOLE_PATH} (open it in a browser)")
    };
    let body = format!(
        "This is {what}.\n\
         Point an Azure Tables SDK at it with the connection string the server printed at start-up.\n\
         {console}\n\
         Health: {origin}/_health answers 200 once the server is ready.\n"
    );
    let mut r = ctx.plain_response(StatusCode::OK);
    r.body("text/plain; charset=utf-8", body.into_bytes());
    r.header("x-content-type-options", "nosniff");
    r.header("cache-control", "no-store");
    r.into_response()
}

/// The page: what this address is, and where the console is (or that it is off).
fn page(state: &AppState, ctx: &RequestContext) -> Response {
    let console = if state.config.no_console {
        "The web console is turned off on this server (<code>--no-console</code>).".to_string()
    } else {
        format!(
            "To browse tables, run queries and see design advice, open the web console: \
             <a href=\"{CONSOLE_PATH}\">{CONSOLE_PATH}</a>."
        )
    };
    let page = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>tablestore</title></head><body>\n<h1>tablestore</h1>\n\
         <p>This address is an Azure Table storage endpoint for the Azure Tables SDKs and \
         tools: point them at it with the connection string the server printed at start-up.</p>\n\
         <p>{console}</p>\n</body></html>\n"
    );
    let mut r = ctx.plain_response(StatusCode::OK);
    r.body("text/html; charset=utf-8", page.into_bytes());
    r.header("content-security-policy", "default-src 'none'");
    r.header("cache-control", "no-store");
    r.into_response()
}
