//! What a person gets who opens the server's address in a browser. `GET /` with
//! `Accept: text/html` and none of the headers an SDK or tool sends (`Authorization`,
//! `x-ms-version`, `x-ms-date`) is a browser visit: it gets a short page pointing to the web
//! console instead of an XML error. Every other request for `/` keeps Azure's answer
//! (400 InvalidUri: the service root names no resource).

use axum::http::request::Parts;
use axum::http::{header, Method, StatusCode};
use axum::response::Response;

use super::context::RequestContext;
use super::AppState;
use crate::console::CONSOLE_PATH;
use crate::protocol::headers::X_MS_VERSION;

/// Whether the request is a browser opening the server's root URL.
pub(crate) fn is_browser_visit(parts: &Parts) -> bool {
    let root = (parts.method == Method::GET || parts.method == Method::HEAD)
        && parts.uri.path() == "/"
        && parts.uri.query().is_none_or(str::is_empty);
    if !root {
        return false;
    }
    let wants_html = parts
        .headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.to_ascii_lowercase().contains("text/html"));
    let signed_or_versioned = [header::AUTHORIZATION.as_str(), X_MS_VERSION, "x-ms-date"]
        .iter()
        .any(|name| parts.headers.contains_key(*name));
    wants_html && !signed_or_versioned
}

/// The page: what this address is, and where the console is (or that it is off).
pub(crate) fn answer(state: &AppState, ctx: &RequestContext) -> Response {
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
