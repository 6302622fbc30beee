//! Table service properties (logging, metrics, CORS): the XML document of Get/Set Table
//! Service Properties (Azure docs: "Get Table Service Properties", "Set Table Service Properties"), its validation, partial update, and CORS rule
//! matching (Azure docs: "Preflight Table Request").

use super::error::{xml_escape, ApiError, ErrorCode};
use super::xml_tree::{self, Element};

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct RetentionPolicy {
    pub(crate) enabled: bool,
    pub(crate) days: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Logging {
    pub(crate) version: String,
    pub(crate) delete: bool,
    pub(crate) read: bool,
    pub(crate) write: bool,
    pub(crate) retention: RetentionPolicy,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Metrics {
    pub(crate) version: String,
    pub(crate) enabled: bool,
    pub(crate) include_apis: Option<bool>,
    pub(crate) retention: RetentionPolicy,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CorsRule {
    pub(crate) allowed_origins: String,
    pub(crate) allowed_methods: String,
    pub max_age_in_seconds: u64,
    pub exposed_headers: String,
    pub(crate) allowed_headers: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceProperties {
    pub(crate) logging: Logging,
    pub(crate) hour_metrics: Metrics,
    pub(crate) minute_metrics: Metrics,
    pub cors: Vec<CorsRule>,
}

impl Default for ServiceProperties {
    fn default() -> Self {
        let metrics = Metrics {
            version: "1.0".into(),
            enabled: false,
            include_apis: None,
            retention: RetentionPolicy::default(),
        };
        ServiceProperties {
            logging: Logging {
                version: "1.0".into(),
                delete: false,
                read: false,
                write: false,
                retention: RetentionPolicy::default(),
            },
            hour_metrics: metrics.clone(),
            minute_metrics: metrics,
            cors: Vec::new(),
        }
    }
}

fn invalid() -> ApiError {
    ApiError::new(ErrorCode::InvalidXmlDocument)
}

fn text<'a>(el: &'a Element, name: &str) -> Result<&'a str, ApiError> {
    el.child(name).map(|c| c.text.trim()).ok_or_else(invalid)
}

fn boolean(el: &Element, name: &str) -> Result<bool, ApiError> {
    match text(el, name)? {
        "true" | "True" => Ok(true),
        "false" | "False" => Ok(false),
        _ => Err(invalid()),
    }
}

fn retention(el: &Element) -> Result<RetentionPolicy, ApiError> {
    let r = el.child("RetentionPolicy").ok_or_else(invalid)?;
    let enabled = boolean(r, "Enabled")?;
    let days = match r.child("Days") {
        Some(d) => {
            let days: u32 = d.text.trim().parse().map_err(|_| invalid())?;
            if !(1..=365).contains(&days) {
                return Err(invalid());
            }
            Some(days)
        }
        None => None,
    };
    if enabled && days.is_none() {
        return Err(invalid());
    }
    Ok(RetentionPolicy {
        enabled,
        days: if enabled { days } else { None },
    })
}

fn metrics(el: &Element) -> Result<Metrics, ApiError> {
    let enabled = boolean(el, "Enabled")?;
    let include_apis = match el.child("IncludeAPIs") {
        Some(_) => Some(boolean(el, "IncludeAPIs")?),
        None if enabled => return Err(invalid()),
        None => None,
    };
    Ok(Metrics {
        version: text(el, "Version")?.to_string(),
        enabled,
        include_apis: if enabled { include_apis } else { None },
        retention: retention(el)?,
    })
}

const CORS_METHODS: [&str; 8] = [
    "DELETE", "GET", "HEAD", "MERGE", "POST", "OPTIONS", "PUT", "PATCH",
];

/// A header list as Azure stores it: exact names first, then prefixes (entries ending in
/// `*`), each group in the order sent. Origins and methods have no prefix form and keep their
/// order.
fn exact_names_first(list: &str) -> String {
    let (prefixes, exact): (Vec<&str>, Vec<&str>) =
        list.split(',').partition(|h| h.trim_end().ends_with('*'));
    exact
        .into_iter()
        .chain(prefixes)
        .collect::<Vec<_>>()
        .join(",")
}

fn cors_rule(el: &Element) -> Result<CorsRule, ApiError> {
    let rule = CorsRule {
        allowed_origins: text(el, "AllowedOrigins")?.to_string(),
        allowed_methods: text(el, "AllowedMethods")?.to_string(),
        max_age_in_seconds: text(el, "MaxAgeInSeconds")?
            .parse()
            .map_err(|_| invalid())?,
        exposed_headers: exact_names_first(text(el, "ExposedHeaders")?),
        allowed_headers: exact_names_first(text(el, "AllowedHeaders")?),
    };
    let methods_ok = rule
        .allowed_methods
        .split(',')
        .map(str::trim)
        .all(|m| CORS_METHODS.contains(&m));
    let lists_ok = [
        &rule.allowed_origins,
        &rule.exposed_headers,
        &rule.allowed_headers,
    ]
    .iter()
    .all(|l| l.split(',').all(|item| item.trim().len() <= 256));
    let size = rule.allowed_origins.len()
        + rule.allowed_methods.len()
        + rule.exposed_headers.len()
        + rule.allowed_headers.len();
    if !methods_ok || !lists_ok || size > 2048 {
        return Err(invalid());
    }
    Ok(rule)
}

/// The body of a Set Table Service Properties request: each top-level element present
/// replaces the stored one, the others stay.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PropertiesUpdate {
    pub(crate) logging: Option<Logging>,
    pub(crate) hour_metrics: Option<Metrics>,
    pub(crate) minute_metrics: Option<Metrics>,
    pub(crate) cors: Option<Vec<CorsRule>>,
}

impl PropertiesUpdate {
    /// Decodes a Set request body.
    pub fn decode(body: &[u8]) -> Result<PropertiesUpdate, ApiError> {
        let root = xml_tree::parse(body).ok_or_else(invalid)?;
        if root.name != "StorageServiceProperties" {
            return Err(invalid());
        }
        let logging = match root.child("Logging") {
            Some(l) => Some(Logging {
                version: text(l, "Version")?.to_string(),
                delete: boolean(l, "Delete")?,
                read: boolean(l, "Read")?,
                write: boolean(l, "Write")?,
                retention: retention(l)?,
            }),
            None => None,
        };
        let hour_metrics = root.child("HourMetrics").map(metrics).transpose()?;
        let minute_metrics = root.child("MinuteMetrics").map(metrics).transpose()?;
        let cors = match root.child("Cors") {
            Some(c) => {
                let rules: Vec<CorsRule> = c
                    .children_named("CorsRule")
                    .map(cors_rule)
                    .collect::<Result<_, _>>()?;
                if rules.len() > 5 {
                    return Err(invalid());
                }
                Some(rules)
            }
            None => None,
        };
        Ok(PropertiesUpdate {
            logging,
            hour_metrics,
            minute_metrics,
            cors,
        })
    }
}

impl ServiceProperties {
    /// The properties after `update`.
    pub fn apply(&self, update: PropertiesUpdate) -> ServiceProperties {
        let current = self.clone();
        ServiceProperties {
            logging: update.logging.unwrap_or(current.logging),
            hour_metrics: update.hour_metrics.unwrap_or(current.hour_metrics),
            minute_metrics: update.minute_metrics.unwrap_or(current.minute_metrics),
            cors: update.cors.unwrap_or(current.cors),
        }
    }

    /// Applies a Set request body (see [`PropertiesUpdate`]).
    pub fn apply_update(&self, body: &[u8]) -> Result<ServiceProperties, ApiError> {
        Ok(self.apply(PropertiesUpdate::decode(body)?))
    }

    /// Decodes a stored document (written by [`ServiceProperties::encode`]).
    pub fn decode(bytes: &[u8]) -> Option<ServiceProperties> {
        ServiceProperties::default().apply_update(bytes).ok()
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut x =
            String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceProperties>");
        let retention = |x: &mut String, r: &RetentionPolicy| {
            x.push_str(&format!(
                "<RetentionPolicy><Enabled>{}</Enabled>",
                r.enabled
            ));
            if let Some(d) = r.days {
                x.push_str(&format!("<Days>{d}</Days>"));
            }
            x.push_str("</RetentionPolicy>");
        };
        let l = &self.logging;
        x.push_str(&format!(
            "<Logging><Version>{}</Version><Delete>{}</Delete><Read>{}</Read><Write>{}</Write>",
            xml_escape(&l.version),
            l.delete,
            l.read,
            l.write
        ));
        retention(&mut x, &l.retention);
        x.push_str("</Logging>");
        for (name, m) in [
            ("HourMetrics", &self.hour_metrics),
            ("MinuteMetrics", &self.minute_metrics),
        ] {
            x.push_str(&format!(
                "<{name}><Version>{}</Version><Enabled>{}</Enabled>",
                xml_escape(&m.version),
                m.enabled
            ));
            if let Some(i) = m.include_apis {
                x.push_str(&format!("<IncludeAPIs>{i}</IncludeAPIs>"));
            }
            retention(&mut x, &m.retention);
            x.push_str(&format!("</{name}>"));
        }
        x.push_str("<Cors>");
        for r in &self.cors {
            x.push_str(&format!(
                "<CorsRule><AllowedOrigins>{}</AllowedOrigins><AllowedMethods>{}</AllowedMethods><MaxAgeInSeconds>{}</MaxAgeInSeconds><ExposedHeaders>{}</ExposedHeaders><AllowedHeaders>{}</AllowedHeaders></CorsRule>",
                xml_escape(&r.allowed_origins),
                xml_escape(&r.allowed_methods),
                r.max_age_in_seconds,
                xml_escape(&r.exposed_headers),
                xml_escape(&r.allowed_headers)
            ));
        }
        x.push_str("</Cors></StorageServiceProperties>");
        x.into_bytes()
    }

    /// The first rule that allows `origin` with `method` (Azure docs: "Preflight Table Request": rules in stored order;
    /// the first whose origin and method match decides).
    pub fn matching_cors_rule(&self, origin: &str, method: &str) -> Option<&CorsRule> {
        self.cors.iter().find(|r| {
            let origin_ok = r
                .allowed_origins
                .split(',')
                .map(str::trim)
                .any(|o| o == "*" || o == origin);
            let method_ok = r
                .allowed_methods
                .split(',')
                .map(str::trim)
                .any(|m| m.eq_ignore_ascii_case(method));
            origin_ok && method_ok
        })
    }
}

impl CorsRule {
    /// Whether every requested header is allowed (literal or `prefix*`, case-insensitive).
    pub fn allows_headers(&self, requested: &str) -> bool {
        let allowed: Vec<String> = self
            .allowed_headers
            .split(',')
            .map(|h| h.trim().to_ascii_lowercase())
            .filter(|h| !h.is_empty())
            .collect();
        requested
            .split(',')
            .map(|h| h.trim().to_ascii_lowercase())
            .filter(|h| !h.is_empty())
            .all(|h| {
                allowed.iter().any(|a| {
                    a == "*"
                        || *a == h
                        || a.strip_suffix('*')
                            .is_some_and(|prefix| h.starts_with(prefix))
                })
            })
    }

    pub fn allows_any_origin(&self) -> bool {
        self.allowed_origins.split(',').any(|o| o.trim() == "*")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceProperties><Logging><Version>1.0</Version><Delete>true</Delete><Read>false</Read><Write>true</Write><RetentionPolicy><Enabled>true</Enabled><Days>7</Days></RetentionPolicy></Logging><Cors><CorsRule><AllowedOrigins>http://www.contoso.com,http://www.fabrikam.com</AllowedOrigins><AllowedMethods>GET,PUT</AllowedMethods><MaxAgeInSeconds>500</MaxAgeInSeconds><ExposedHeaders>x-ms-meta-data*</ExposedHeaders><AllowedHeaders>x-ms-meta-target*,x-ms-meta-customheader</AllowedHeaders></CorsRule></Cors></StorageServiceProperties>";

    #[test]
    fn partial_update_and_round_trip() {
        let p = ServiceProperties::default()
            .apply_update(SAMPLE.as_bytes())
            .unwrap();
        assert!(p.logging.delete && p.logging.retention.days == Some(7));
        assert!(!p.hour_metrics.enabled, "absent elements keep their value");
        assert_eq!(p.cors.len(), 1);
        assert_eq!(ServiceProperties::decode(&p.encode()), Some(p.clone()));
        let cleared = p
            .apply_update(b"<StorageServiceProperties><Cors/></StorageServiceProperties>")
            .unwrap();
        assert!(cleared.cors.is_empty());
        assert!(cleared.logging.delete);
    }

    #[test]
    fn invalid_documents() {
        let bad = |s: &str| {
            ServiceProperties::default()
                .apply_update(s.as_bytes())
                .unwrap_err()
                .code
        };
        assert_eq!(bad("<x"), ErrorCode::InvalidXmlDocument);
        assert_eq!(
            bad("<StorageServiceProperties><Logging><Version>1.0</Version></Logging></StorageServiceProperties>"),
            ErrorCode::InvalidXmlDocument
        );
        let days = SAMPLE.replace("<Days>7</Days>", "<Days>366</Days>");
        assert_eq!(bad(&days), ErrorCode::InvalidXmlDocument);
        let rule = "<CorsRule><AllowedOrigins>*</AllowedOrigins><AllowedMethods>GET</AllowedMethods><MaxAgeInSeconds>1</MaxAgeInSeconds><ExposedHeaders></ExposedHeaders><AllowedHeaders></AllowedHeaders></CorsRule>";
        let six = format!(
            "<StorageServiceProperties><Cors>{}</Cors></StorageServiceProperties>",
            rule.repeat(6)
        );
        assert_eq!(bad(&six), ErrorCode::InvalidXmlDocument);
        let five = format!(
            "<StorageServiceProperties><Cors>{}</Cors></StorageServiceProperties>",
            rule.repeat(5)
        );
        assert!(ServiceProperties::default()
            .apply_update(five.as_bytes())
            .is_ok());
    }

    #[test]
    fn header_lists_are_stored_exact_names_first() {
        assert_eq!(
            exact_names_first("x-ms-meta-data*,x-ms-meta-target*,x-ms-meta-xyz,x-ms-meta-foo"),
            "x-ms-meta-xyz,x-ms-meta-foo,x-ms-meta-data*,x-ms-meta-target*"
        );
        assert_eq!(exact_names_first("a*,b,c*,d"), "b,d,a*,c*");
        assert_eq!(exact_names_first("a,b"), "a,b");
        assert_eq!(exact_names_first(""), "");
        let p = ServiceProperties::default()
            .apply_update(SAMPLE.as_bytes())
            .unwrap();
        assert_eq!(
            p.cors[0].allowed_headers,
            "x-ms-meta-customheader,x-ms-meta-target*"
        );
        assert_eq!(
            p.cors[0].allowed_origins,
            "http://www.contoso.com,http://www.fabrikam.com"
        );
    }

    proptest::proptest! {
        /// Reordering keeps every entry, puts no prefix before an exact name, and keeps the
        /// order within each group.
        #[test]
        fn exact_names_first_is_a_stable_partition(items in proptest::collection::vec("[a-z-]{0,6}\\*?", 0..8)) {
            let list = items.join(",");
            let out = exact_names_first(&list);
            let got: Vec<&str> = out.split(',').collect();
            let exact: Vec<&str> = list.split(',').filter(|h| !h.ends_with('*')).collect();
            let prefixes: Vec<&str> = list.split(',').filter(|h| h.ends_with('*')).collect();
            proptest::prop_assert_eq!(got, [exact, prefixes].concat());
        }
    }

    #[test]
    fn cors_matching() {
        let p = ServiceProperties::default()
            .apply_update(SAMPLE.as_bytes())
            .unwrap();
        let rule = p
            .matching_cors_rule("http://www.contoso.com", "GET")
            .unwrap();
        assert!(rule.allows_headers("x-ms-meta-target1, X-MS-META-CUSTOMHEADER"));
        assert!(!rule.allows_headers("x-other"));
        assert!(p.matching_cors_rule("http://evil.com", "GET").is_none());
        assert!(p
            .matching_cors_rule("http://www.contoso.com", "DELETE")
            .is_none());
    }
}
