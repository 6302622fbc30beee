//! What a Table endpoint's failures mean, as one sentence each for the command line: a
//! request that never got an answer (nothing listening, a host name that does not resolve, a
//! certificate not trusted, no answer in time) and an error answer (its status, the service's
//! code and the first line of its message, without the `RequestId`/`Time`/`ActivityId` lines
//! Azure and Cosmos append), with what to check. `tablestore export`/`import` and
//! `tablestore admin` share them.

/// Why a request got no answer, in words (never the transport's error chain).
pub(crate) fn unreachable(e: &reqwest::Error) -> String {
    let chain = chain(e);
    if let Some(why) = untrusted_certificate(&chain) {
        return format!("the server's certificate is not trusted ({why})");
    }
    if e.is_timeout() {
        return "no answer in time".to_string();
    }
    let io_kind = io_error_kind(e);
    let lower = chain.to_ascii_lowercase();
    if lower.contains("dns error") || lower.contains("failed to lookup address") {
        return "its host name does not resolve".to_string();
    }
    match io_kind {
        Some(std::io::ErrorKind::ConnectionRefused) => {
            "the connection was refused (nothing listens on that port)".to_string()
        }
        Some(std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted) => {
            "the connection was reset before an answer came".to_string()
        }
        Some(std::io::ErrorKind::TimedOut) => "the connection timed out".to_string(),
        _ if lower.contains("invalidcontenttype") || lower.contains("received corrupt message") => {
            "it does not speak HTTPS (use http:// for a server started without --cert)".to_string()
        }
        _ if e.is_connect() => "the connection could not be made".to_string(),
        _ if lower.contains("connection closed")
            || lower.contains("incomplete message")
            || lower.contains("unexpected eof") =>
        {
            "the connection was closed before a whole answer came".to_string()
        }
        _ => format!("the request failed ({})", deepest(e)),
    }
}

/// The error's text and its sources', joined (for matching words, never for printing).
fn chain(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// The innermost cause's text, without an `(os error N)` suffix.
fn deepest(e: &reqwest::Error) -> String {
    let mut last: &dyn std::error::Error = e;
    while let Some(s) = last.source() {
        last = s;
    }
    let text = last.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

fn io_error_kind(e: &reqwest::Error) -> Option<std::io::ErrorKind> {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return Some(io.kind());
        }
        source = s.source();
    }
    None
}

/// Why TLS refused the server's certificate, in words, when that is what `text` (a transport
/// error's chain) says; rustls names the reason only in its debug form.
pub(crate) fn untrusted_certificate(text: &str) -> Option<&'static str> {
    if !text.contains("invalid peer certificate") {
        return None;
    }
    Some(
        [
            (
                "CaUsedAsEndEntity",
                "it is a CA certificate, used as the server's own",
            ),
            (
                "UnknownIssuer",
                "it is signed by an issuer this client does not know",
            ),
            ("NotValidForName", "it does not name this host"),
            ("Expired", "it has expired"),
            ("NotValidYet", "it is not valid yet"),
        ]
        .iter()
        .find(|(code, _)| text.contains(code))
        .map_or("it does not verify", |(_, why)| why),
    )
}

/// The service's error code and the first line of its message, from an error body in JSON
/// (`odata.error`, Storage's and Cosmos's) or XML (`<Code>`, `<Message>`).
pub(crate) fn error_detail(body: &[u8]) -> Option<(String, String)> {
    let text = String::from_utf8_lossy(body);
    if let Ok(json) = serde_json::from_str::<serde_json::Value>(text.trim()) {
        let error = &json["odata.error"];
        let code = error["code"].as_str()?;
        let message = error["message"]["value"].as_str().unwrap_or("");
        return Some((code.to_string(), first_line(message).to_string()));
    }
    // Storage's XML error (`<Code>`, `<Message>`) or the OData one (`<code>`,
    // `<message xml:lang="en-US">`).
    let lower = text.to_ascii_lowercase();
    let element = |name: &str| {
        let open = lower.find(&format!("<{name}"))?;
        let start = open + lower[open..].find('>')? + 1;
        let end = start + lower[start..].find(&format!("</{name}>"))?;
        Some(unescape(&text[start..end]))
    };
    let code = element("code")?;
    let message = element("message").unwrap_or_default();
    Some((code, first_line(&message).to_string()))
}

/// XML's five predefined entities, as they appear in error messages.
fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// Azure's messages go on with `RequestId:…` and `Time:…` lines, Cosmos's with `ActivityId:`
/// and `RequestID:` lines: the first line says it. Cosmos wraps some in
/// `Message: {"Errors":["…"]}`, whose text is taken out.
fn first_line(message: &str) -> &str {
    let line = message.lines().next().unwrap_or("").trim();
    match line
        .strip_prefix("Message: {\"Errors\":[\"")
        .and_then(|rest| rest.split("\"]").next())
    {
        Some(inner) => inner,
        None => line,
    }
}

/// `STATUS CODE: message` for an error answer (`status N` when its body says nothing).
pub(crate) fn status_text(status: u16, body: &[u8]) -> String {
    match error_detail(body) {
        Some((code, message)) if message.is_empty() => format!("{status} {code}"),
        Some((code, message)) => format!("{status} {code}: {}", message.trim_end_matches('.')),
        None => format!("status {status}"),
    }
}

/// What to check after an error answer, by the settings that name the credential (e.g.
/// "the AccountName and AccountKey of the connection string"); `None` when the answer says
/// it all.
pub(crate) fn what_to_check(status: u16, body: &[u8], credential: &str) -> Option<String> {
    let code = error_detail(body).map(|(code, _)| code).unwrap_or_default();
    match (status, code.as_str()) {
        (403, "AuthorizationPermissionMismatch" | "AuthorizationResourceTypeMismatch") => Some(
            "the SAS does not grant this operation: make one with the permissions it needs".into(),
        ),
        (403, _) => Some(format!(
            "check {credential}: the server refused the signature (a wrong key, an account it \
             does not serve, or an endpoint without the account's path, such as \
             http://127.0.0.1:10002/devstoreaccount1)"
        )),
        (501, _) => Some("the service does not offer this operation".into()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_become_code_and_first_line() {
        let json = br#"{"odata.error":{"code":"AuthenticationFailed","message":{"lang":"en-US","value":"Server failed.\nRequestId:1\nTime:2"}}}"#;
        assert_eq!(
            error_detail(json),
            Some(("AuthenticationFailed".into(), "Server failed.".into()))
        );
        assert_eq!(
            status_text(403, json),
            "403 AuthenticationFailed: Server failed"
        );
        let cosmos = "{\"odata.error\":{\"code\":\"NotImplemented\",\"message\":{\"lang\":\"en-us\",\"value\":\"The requested operation is not supported.\\r\\nActivityId: 1, documentdb-dotnet-sdk/2.14.0\\nRequestID:1\\n\"}}}\r\n";
        assert_eq!(
            status_text(501, cosmos.as_bytes()),
            "501 NotImplemented: The requested operation is not supported"
        );
        let throttled = "{\"odata.error\":{\"code\":\"TooManyRequests\",\"message\":{\"lang\":\"en-us\",\"value\":\"Message: {\\\"Errors\\\":[\\\"Request rate is large.\\\"]}\\r\\nActivityId: 1\"}}}";
        assert_eq!(
            status_text(429, throttled.as_bytes()),
            "429 TooManyRequests: Request rate is large"
        );
        let xml = b"<?xml version=\"1.0\"?><Error><Code>InvalidUri</Code><Message>Bad.\nRequestId:1</Message></Error>";
        assert_eq!(
            error_detail(xml),
            Some(("InvalidUri".into(), "Bad.".into()))
        );
        let odata = b"<?xml version=\"1.0\" encoding=\"utf-8\"?><error xmlns=\"x\"><code>AuthenticationFailed</code><message xml:lang=\"en-US\">Server &amp; key.\nRequestId:1\nTime:2</message></error>";
        assert_eq!(
            error_detail(odata),
            Some(("AuthenticationFailed".into(), "Server & key.".into()))
        );
        assert_eq!(error_detail(b"plain"), None);
        assert_eq!(status_text(500, b""), "status 500");
    }

    #[test]
    fn refusals_say_what_to_check() {
        let denied = br#"{"odata.error":{"code":"AuthenticationFailed","message":{"value":"x"}}}"#;
        let hint = what_to_check(403, denied, "--account-key").unwrap();
        assert!(hint.starts_with("check --account-key: "), "{hint}");
        let sas = br#"{"odata.error":{"code":"AuthorizationPermissionMismatch","message":{"value":"x"}}}"#;
        assert!(what_to_check(403, sas, "the SAS")
            .unwrap()
            .contains("permissions"));
        assert_eq!(what_to_check(404, b"", "k"), None);
    }

    /// rustls names why it refused a certificate in debug text; the sentence names it in words.
    #[test]
    fn an_untrusted_certificate_is_said_in_words() {
        let chain = "error sending request for url (https://127.0.0.1:1/metrics): client error \
                     (Connect): invalid peer certificate: Other(OtherError(CaUsedAsEndEntity))";
        assert_eq!(
            untrusted_certificate(chain),
            Some("it is a CA certificate, used as the server's own")
        );
        assert_eq!(
            untrusted_certificate("invalid peer certificate: UnknownIssuer"),
            Some("it is signed by an issuer this client does not know")
        );
        assert_eq!(untrusted_certificate("connection refused"), None);
    }
}
