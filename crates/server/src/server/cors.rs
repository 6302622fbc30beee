//! CORS: the answer to a preflight (`OPTIONS`, during admission) and the layer that adds the
//! CORS headers to the answer of an actual cross-origin request, both from the account's
//! CORS rules in its service properties (Azure docs: "Cross-Origin Resource Sharing (CORS)
//! support for the Azure Storage services").

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;

use super::context::RequestContext;
use super::insight::Charged;
use super::AppState;
use crate::protocol::service_properties::{CorsRule, ServiceProperties};
use crate::protocol::{ApiError, ErrorCode};

async fn rules(state: &AppState, account: &str) -> Result<ServiceProperties, ApiError> {
    Ok(crate::exec::service_properties(&*state.store, account).await?)
}

/// `OPTIONS` on any path: always anonymous; answered from the account's CORS rules.
pub(crate) async fn preflight(
    state: &AppState,
    ctx: &RequestContext,
    headers: &HeaderMap,
) -> Response {
    let header = |n: &str| headers.get(n).and_then(|v| v.to_str().ok());
    let (Some(origin), Some(method)) = (header("origin"), header("access-control-request-method"))
    else {
        return ctx.error(&ApiError::with_message(
            ErrorCode::InvalidHeaderValue,
            "A required CORS header is not present.",
        ));
    };
    let properties = match rules(state, ctx.data_account()).await {
        Ok(p) => p,
        Err(e) => return ctx.error(&e),
    };
    let requested_headers = header("access-control-request-headers").unwrap_or("");
    match properties
        .matching_cors_rule(origin, method)
        .filter(|r| r.allows_headers(requested_headers))
    {
        Some(rule) => preflight_answer(ctx, rule, origin, method, requested_headers),
        None => ctx.error(&ApiError::new(ErrorCode::CorsPreflightFailure)),
    }
}

fn preflight_answer(
    ctx: &RequestContext,
    rule: &CorsRule,
    origin: &str,
    method: &str,
    requested_headers: &str,
) -> Response {
    let mut r = ctx.plain_response(StatusCode::OK);
    let allow_origin = if rule.allows_any_origin() {
        "*"
    } else {
        origin
    };
    r.header("access-control-allow-origin", allow_origin)
        .header("access-control-allow-methods", method)
        .header(
            "access-control-max-age",
            &rule.max_age_in_seconds.to_string(),
        )
        .header("access-control-allow-credentials", "true");
    if !requested_headers.is_empty() {
        r.header("access-control-allow-headers", requested_headers);
    }
    r.into_response()
}

/// The CORS layer: once the pipeline answered a request it admitted (the answer names the
/// account charged) that carries `Origin`, adds the CORS headers its rules grant. CORS
/// never makes an actual request fail.
pub(crate) async fn layer<F, Fut>(state: &AppState, request: Request, next: F) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: std::future::Future<Output = Response>,
{
    // Most requests carry no `Origin`: they pass with nothing copied.
    let origin = request
        .headers()
        .get(axum::http::header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .map(|origin| (origin.to_string(), request.method().clone()));
    let mut response = next(request).await;
    let Some((origin, method)) = origin else {
        return response;
    };
    let charged = response.extensions().get::<Charged>();
    if let Some(account) = charged.and_then(|c| c.account.clone()) {
        // Boxed: only cross-origin requests take it.
        Box::pin(decorate(state, &account, &origin, &method, &mut response)).await;
    }
    response
}

/// Adds CORS headers to an actual request's response when its `Origin` matches a rule.
async fn decorate(
    state: &AppState,
    account: &str,
    origin: &str,
    method: &Method,
    response: &mut Response,
) {
    let Ok(properties) = rules(state, account).await else {
        return;
    };
    if properties.cors.is_empty() {
        return;
    }
    let h = response.headers_mut();
    let is_read = method == Method::GET || method == Method::HEAD;
    match properties.matching_cors_rule(origin, method.as_str()) {
        Some(rule) => allow(h, rule, origin, is_read),
        None if is_read => {
            h.insert("vary", HeaderValue::from_static("Origin"));
        }
        None => {}
    }
}

/// The headers of an actual request that `rule` allows.
fn allow(h: &mut HeaderMap, rule: &CorsRule, origin: &str, is_read: bool) {
    let any = rule.allows_any_origin();
    let allow = if any { "*" } else { origin };
    if let Ok(v) = HeaderValue::from_str(allow) {
        h.insert("access-control-allow-origin", v);
    }
    if let Ok(v) = HeaderValue::from_str(&rule.exposed_headers) {
        h.insert("access-control-expose-headers", v);
    }
    if !any {
        h.insert(
            "access-control-allow-credentials",
            HeaderValue::from_static("true"),
        );
        if is_read {
            h.insert("vary", HeaderValue::from_static("Origin"));
        }
    }
}
