//! The web console at `/_tablestore/console/`: static assets compiled into the binary (no
//! CDN, no build step, no framework). The console is a client of the same Table REST API and
//! `/_tablestore/insight` as any SDK: the page signs each request in the browser with the
//! account key the user types (Shared Key Lite through WebCrypto), or sends it unsigned when
//! the server runs with `--disable-auth`. The server gives it no data path, token or
//! privilege of its own, so serving it adds nothing an attacker could use (docs/insight.md,
//! "Console safety"). Depends on nothing else in the crate.

/// Where the console lives (always with the trailing slash).
pub(crate) const CONSOLE_PATH: &str = "/_tablestore/console/";

const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const STYLE_CSS: &str = include_str!("assets/style.css");
const FAVICON_SVG: &str = include_str!("assets/favicon.svg");

/// The icon's content type (an SVG: text, a few hundred bytes, sharp at every size).
pub(crate) const FAVICON_TYPE: &str = "image/svg+xml";

/// Headers every console response carries: scripts and connections from this origin only,
/// no framing (clickjacking), no sniffing, no referrer, no caching.
pub(crate) const SECURITY_HEADERS: [(&str, &str); 5] = [
    (
        "content-security-policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
    ),
    ("x-frame-options", "DENY"),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("cache-control", "no-store"),
];

/// The asset at `path` (below [`CONSOLE_PATH`]) and its content type.
pub(crate) fn asset(path: &str) -> Option<(&'static str, &'static str)> {
    match path.strip_prefix(CONSOLE_PATH)? {
        "" | "index.html" => Some(("text/html; charset=utf-8", INDEX_HTML)),
        "app.js" => Some(("text/javascript; charset=utf-8", APP_JS)),
        "style.css" => Some(("text/css; charset=utf-8", STYLE_CSS)),
        "favicon.svg" => Some((FAVICON_TYPE, FAVICON_SVG)),
        _ => None,
    }
}

/// The icon a browser asks for at `/favicon.ico` when it has no page's `<link rel="icon">` to
/// go by (the console's page names `favicon.svg`).
pub(crate) fn favicon() -> &'static str {
    FAVICON_SVG
}

/// What the page needs to know before it can talk to the API: whether requests must be
/// signed, which accounts exist (names only), and the published keys of those served with
/// one (the development account's and the Cosmos DB emulator's well-known keys, printed in
/// every guide), which the page fills in.
pub(crate) fn config_json(
    auth: bool,
    accounts: &[String],
    published_keys: &[(String, &'static str)],
) -> String {
    let published: serde_json::Map<String, serde_json::Value> = published_keys
        .iter()
        .map(|(name, key)| (name.clone(), serde_json::Value::from(*key)))
        .collect();
    serde_json::json!({ "auth": auth, "accounts": accounts, "published_keys": published })
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assets_are_served_from_the_console_path_only() {
        assert!(asset("/_tablestore/console/")
            .is_some_and(|(t, b)| t.starts_with("text/html") && b.contains("app.js")));
        assert!(asset("/_tablestore/console/app.js").is_some());
        assert!(asset("/_tablestore/console/favicon.svg")
            .is_some_and(|(t, b)| t == FAVICON_TYPE && b.starts_with("<svg")));
        assert!(INDEX_HTML.contains(r#"<link rel="icon" href="favicon.svg""#));
        assert!(asset("/_tablestore/console/../insight").is_none());
        assert!(asset("/_tablestore/console/missing.js").is_none());
        assert!(asset("/other/app.js").is_none());
    }

    #[test]
    fn the_page_loads_nothing_from_elsewhere() {
        for (_, body) in ["", "app.js", "style.css", "favicon.svg"]
            .iter()
            .filter_map(|p| asset(&format!("{CONSOLE_PATH}{p}")))
        {
            // The one absolute URL is the SVG namespace name, which is never fetched.
            let rest = body.replace("http://www.w3.org/2000/svg", "");
            assert!(
                !rest.contains("http://") && !rest.contains("https://") && !rest.contains("//cdn")
            );
        }
        // Inline script would be blocked by the policy; the page has none.
        assert!(!INDEX_HTML.contains("<script>"));
    }
}
