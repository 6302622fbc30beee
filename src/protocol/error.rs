//! The one error type at the edge: an Azure error code (with its HTTP status and default
//! message) plus the message to show, rendered as the OData JSON, OData XML or storage XML
//! error body.

use std::borrow::Cow;

use http::StatusCode;

macro_rules! error_codes {
    ($($name:ident => ($status:ident, $message:literal),)*) => {
        /// Azure error codes, spelled exactly as the service spells them.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum ErrorCode { $($name,)* }

        impl ErrorCode {
            pub(crate) fn as_str(self) -> &'static str {
                match self { $(ErrorCode::$name => stringify!($name),)* }
            }
            pub(crate) fn status(self) -> StatusCode {
                match self { $(ErrorCode::$name => StatusCode::$status,)* }
            }
            pub(crate) fn default_message(self) -> &'static str {
                match self { $(ErrorCode::$name => $message,)* }
            }
            /// The code spelled as Azure spells it (exact match), if it is one of ours.
            pub(crate) fn parse(name: &str) -> Option<ErrorCode> {
                match name { $(stringify!($name) => Some(ErrorCode::$name),)* _ => None }
            }
        }
    };
}

error_codes! {
    TableAlreadyExists => (CONFLICT, "The table specified already exists."),
    TableNotFound => (NOT_FOUND, "The table specified does not exist."),
    TableBeingDeleted => (CONFLICT, "The specified table is being deleted."),
    EntityAlreadyExists => (CONFLICT, "The specified entity already exists."),
    ResourceNotFound => (NOT_FOUND, "The specified resource does not exist."),
    UpdateConditionNotSatisfied => (PRECONDITION_FAILED, "The update condition specified in the request was not satisfied."),
    PropertiesNeedValue => (BAD_REQUEST, "The values are not specified for all properties in the entity."),
    DuplicatePropertiesSpecified => (BAD_REQUEST, "A property is specified more than one time."),
    PropertyNameInvalid => (BAD_REQUEST, "The property name is invalid."),
    PropertyNameTooLong => (BAD_REQUEST, "The property name exceeds the maximum allowed length (255)."),
    PropertyValueTooLarge => (BAD_REQUEST, "The property value is larger than the maximum size permitted."),
    TooManyProperties => (BAD_REQUEST, "The entity contains more properties than allowed. Each entity can include up to 252 properties to store data. Each entity also has 3 system properties."),
    EntityTooLarge => (BAD_REQUEST, "The entity is larger than the maximum size permitted."),
    KeyValueTooLarge => (BAD_REQUEST, "The size of the key value is larger than the maximum size permitted."),
    InvalidValueType => (BAD_REQUEST, "The value specified is invalid."),
    OutOfRangeInput => (BAD_REQUEST, "One of the request inputs is out of range."),
    InvalidInput => (BAD_REQUEST, "One of the request inputs is not valid."),
    InvalidDuplicateRow => (BAD_REQUEST, "The batch request contains multiple changes with same row key. An entity can appear only once in a batch request."),
    CommandsInBatchActOnDifferentPartitions => (BAD_REQUEST, "All commands in a batch must operate on same entity group."),
    JsonFormatNotSupported => (UNSUPPORTED_MEDIA_TYPE, "JSON format is not supported."),
    AtomFormatNotSupported => (UNSUPPORTED_MEDIA_TYPE, "Atom format is not supported."),
    JsonVerboseFormatNotSupported => (UNSUPPORTED_MEDIA_TYPE, "Verbose JSON format is not supported."),
    MediaTypeNotSupported => (UNSUPPORTED_MEDIA_TYPE, "None of the provided media types are supported."),
    XMethodNotUsingPost => (BAD_REQUEST, "The request uses X-HTTP-Method with an HTTP verb other than POST."),
    XMethodIncorrectValue => (BAD_REQUEST, "The specified X-HTTP-Method is invalid."),
    XMethodIncorrectCount => (BAD_REQUEST, "More than one X-HTTP-Method is specified."),
    MethodNotAllowed => (METHOD_NOT_ALLOWED, "The requested method is not allowed on the specified resource."),
    UnsupportedHttpVerb => (METHOD_NOT_ALLOWED, "The resource doesn't support specified Http Verb."),
    NotImplemented => (NOT_IMPLEMENTED, "The requested operation is not implemented on the specified resource."),
    InvalidResourceName => (BAD_REQUEST, "The specifed resource name contains invalid characters."),
    InvalidUri => (BAD_REQUEST, "The requested URI does not represent any resource on the server."),
    InvalidHeaderValue => (BAD_REQUEST, "The value for one of the HTTP headers is not in the correct format."),
    InvalidQueryParameterValue => (BAD_REQUEST, "Value for one of the query parameters specified in the request URI is invalid."),
    InvalidXmlDocument => (BAD_REQUEST, "XML specified is not syntactically valid."),
    InvalidXmlNodeValue => (BAD_REQUEST, "The value for one of the XML nodes is not in the correct format."),
    MissingRequiredHeader => (BAD_REQUEST, "An HTTP header that's mandatory for this request is not specified."),
    MissingRequiredQueryParameter => (BAD_REQUEST, "A query parameter that's mandatory for this request is not specified."),
    RequestBodyTooLarge => (PAYLOAD_TOO_LARGE, "The request body is too large and exceeds the maximum permissible limit."),
    AuthenticationFailed => (FORBIDDEN, "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature."),
    InvalidAuthenticationInfo => (BAD_REQUEST, "Authentication information is not given in the correct format. Check the value of Authorization header."),
    NoAuthenticationInformation => (UNAUTHORIZED, "Server failed to authenticate the request. Please refer to the information in the www-authenticate header."),
    AuthorizationFailure => (FORBIDDEN, "This request is not authorized to perform this operation."),
    AuthorizationPermissionMismatch => (FORBIDDEN, "This request is not authorized to perform this operation using this permission."),
    AuthorizationResourceTypeMismatch => (FORBIDDEN, "This request is not authorized to perform this operation using this resource type."),
    AuthorizationServiceMismatch => (FORBIDDEN, "This request is not authorized to perform this operation using this service."),
    AuthorizationSourceIPMismatch => (FORBIDDEN, "This request is not authorized to perform this operation using this source IP."),
    AuthorizationProtocolMismatch => (FORBIDDEN, "This request is not authorized to perform this operation using this protocol."),
    AccountAlreadyExists => (CONFLICT, "The specified account already exists."),
    InsufficientAccountPermissions => (FORBIDDEN, "The account being accessed does not have sufficient permissions to execute this operation."),
    CorsPreflightFailure => (FORBIDDEN, "CORS not enabled or no matching rule found for this request."),
    InternalError => (INTERNAL_SERVER_ERROR, "The server encountered an internal error. Please retry the request."),
    // Cosmos DB's gateway names these by their HTTP status (the Python SDK's
    // `_validate_tablename_error` keys on them; docs/cosmos.md).
    BadRequest => (BAD_REQUEST, "The input name is invalid."),
    InternalServerError => (INTERNAL_SERVER_ERROR, "The resource name presented contains invalid character."),
    OperationTimedOut => (INTERNAL_SERVER_ERROR, "Operation could not be completed within the specified time."),
    ServerBusy => (SERVICE_UNAVAILABLE, "The server is currently unable to receive requests. Please retry your request."),
    TooManyRequests => (TOO_MANY_REQUESTS, "Request rate is large. More Request Units may be needed, so no changes were made. Please retry this request later."),
}

/// How an error body is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorFormat {
    /// `{"odata.error":…}` — OData operations that negotiated JSON.
    Json,
    /// `<error xmlns=…metadata>` — OData operations whose Accept was not JSON (e.g. `*/*`).
    ODataXml,
    /// `<m:error …>` — ACL and service-properties operations.
    StorageXml,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub(crate) code: ErrorCode,
    pub(crate) message: Cow<'static, str>,
    /// Extra diagnostic text written after the message (e.g. the string-to-sign the server
    /// used, which Azure reports as `AuthenticationErrorDetail`).
    pub(crate) detail: Option<String>,
    /// The status when it differs from the code's usual one (e.g. 401 for a rejected bearer
    /// token under `InvalidAuthenticationInfo`).
    pub(crate) status_override: Option<StatusCode>,
    /// A `WWW-Authenticate` value to send (Azure's bearer challenge on a 401).
    pub(crate) challenge: Option<String>,
    /// Cosmos DB's diagnostics, written after the text as `\r\nActivityId: <request id>,
    /// <diagnostics>` (Cosmos appends such a line to its 400, 429 and 501 messages); Storage
    /// writes none.
    pub(crate) diagnostics: Option<String>,
    /// Why the request was refused, for the server's log only (the wire keeps Azure's answer).
    pub(crate) cause: Option<Box<LogCause>>,
}

/// Why a request was refused, as the access log says it (never sent to the client): one
/// sentence at info level, and what only a debug log should show (the string-to-sign the
/// server computed for a signature that did not match).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogCause {
    pub(crate) text: String,
    pub(crate) debug: Option<String>,
}

impl ApiError {
    pub(crate) fn new(code: ErrorCode) -> ApiError {
        ApiError {
            code,
            message: Cow::Borrowed(code.default_message()),
            detail: None,
            status_override: None,
            challenge: None,
            diagnostics: None,
            cause: None,
        }
    }

    pub(crate) fn with_message(code: ErrorCode, message: impl Into<Cow<'static, str>>) -> ApiError {
        ApiError {
            code,
            message: message.into(),
            detail: None,
            status_override: None,
            challenge: None,
            diagnostics: None,
            cause: None,
        }
    }

    pub(crate) fn with_detail(mut self, detail: Option<String>) -> ApiError {
        self.detail = detail;
        self
    }

    pub fn with_diagnostics(mut self, diagnostics: String) -> ApiError {
        self.diagnostics = Some(diagnostics);
        self
    }

    /// Says why the request was refused, in the server's log only.
    pub(crate) fn with_cause(mut self, text: impl Into<String>) -> ApiError {
        self.cause = Some(Box::new(LogCause {
            text: text.into(),
            debug: None,
        }));
        self
    }

    /// [`ApiError::with_cause`] with a text for the debug log besides.
    pub(crate) fn with_cause_and_debug(
        mut self,
        text: impl Into<String>,
        debug: Option<String>,
    ) -> ApiError {
        self.cause = Some(Box::new(LogCause {
            text: text.into(),
            debug,
        }));
        self
    }

    pub fn status(&self) -> StatusCode {
        self.status_override.unwrap_or_else(|| self.code.status())
    }

    pub(crate) fn with_status(mut self, status: StatusCode) -> ApiError {
        self.status_override = Some(status);
        self
    }

    pub(crate) fn with_challenge(mut self, challenge: Option<String>) -> ApiError {
        self.challenge = challenge;
        self
    }

    /// The body of this error: `message` is the full message value (text, request id, time).
    pub(crate) fn render_body(
        &self,
        format: ErrorFormat,
        message: &str,
    ) -> (&'static str, Vec<u8>) {
        match format {
            ErrorFormat::Json => {
                let body = serde_json::json!({
                    "odata.error": {
                        "code": self.code.as_str(),
                        "message": {"lang": "en-US", "value": message},
                    }
                });
                (
                    "application/json;odata=minimalmetadata;streaming=true;charset=utf-8",
                    body.to_string().into_bytes(),
                )
            }
            ErrorFormat::ODataXml => (
                "application/xml;charset=utf-8",
                format!(
                    "<?xml version=\"1.0\" encoding=\"utf-8\"?><error xmlns=\"http://schemas.microsoft.com/ado/2007/08/dataservices/metadata\"><code>{}</code><message xml:lang=\"en-US\">{}</message></error>",
                    self.code.as_str(),
                    xml_escape(message)
                )
                .into_bytes(),
            ),
            ErrorFormat::StorageXml => (
                "application/xml",
                format!(
                    "<?xml version=\"1.0\" encoding=\"utf-8\"?><m:error xmlns:m=\"http://schemas.microsoft.com/ado/2007/08/dataservices/metadata\"><m:code>{}</m:code><m:message xml:lang=\"en-US\">{}</m:message></m:error>",
                    self.code.as_str(),
                    xml_escape(message)
                )
                .into_bytes(),
            ),
        }
    }

    /// Azure's message value: the text, then `RequestId:` and `Time:` lines.
    pub(crate) fn full_message(&self, request_id: &str, time: &str) -> String {
        match &self.detail {
            Some(d) => format!("{}\nRequestId:{request_id}\nTime:{time}\n{d}", self.message),
            None => format!("{}\nRequestId:{request_id}\nTime:{time}", self.message),
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for ApiError {}

pub(crate) fn xml_escape(text: &str) -> Cow<'_, str> {
    quick_xml::escape::escape(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_have_azure_spelling_and_status() {
        assert_eq!(ErrorCode::ResourceNotFound.as_str(), "ResourceNotFound");
        assert_eq!(
            ErrorCode::UpdateConditionNotSatisfied.status(),
            StatusCode::PRECONDITION_FAILED
        );
        assert_eq!(
            ErrorCode::InvalidResourceName.default_message(),
            "The specifed resource name contains invalid characters."
        );
    }

    #[test]
    fn json_body_shape() {
        let e = ApiError::new(ErrorCode::EntityAlreadyExists);
        let msg = e.full_message("rid", "2014-06-04T16:18:20.4307735Z");
        let (ct, body) = e.render_body(ErrorFormat::Json, &msg);
        assert!(ct.starts_with("application/json;odata=minimalmetadata"));
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["odata.error"]["code"], "EntityAlreadyExists");
        assert_eq!(
            v["odata.error"]["message"]["value"],
            "The specified entity already exists.\nRequestId:rid\nTime:2014-06-04T16:18:20.4307735Z"
        );
    }
}
