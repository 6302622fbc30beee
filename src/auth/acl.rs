//! `SignedIdentifiers` XML codec for Get/Set Table ACL (Azure docs: "Get Table ACL", "Set Table ACL"): stored access
//! policies that a service SAS can reference with `si`.
//!
//! * [`decode_signed_identifiers`] validates a Set Table ACL body (at most 5 identifiers, `Id`
//!   of 1–64 characters and unique, `Permission` a subset of `raud`, times in the documented
//!   ISO-8601 forms) and keeps every value as given.
//! * [`encode_signed_identifiers`] writes Azure's exact Get Table ACL form [rec: JS, Py]: UTF-8
//!   BOM, `<?xml version="1.0" encoding="utf-8"?>`, no whitespace between elements, times
//!   normalised to seven fractional digits and `Z`, an `AccessPolicy` element only when the
//!   policy has at least one field, and only the fields that are set.
//!
//! Depends on nothing else in the crate.

use std::collections::HashSet;
use std::fmt;

use quick_xml::escape::partial_escape;
use quick_xml::events::Event;
use quick_xml::Reader;

use super::time::{format_iso8601_7, parse_iso8601};

/// Maximum number of stored access policies per table.
pub(crate) const MAX_SIGNED_IDENTIFIERS: usize = 5;
/// Maximum length of a signed identifier, in characters.
pub(crate) const MAX_SIGNED_IDENTIFIER_LEN: usize = 64;

/// One stored access policy entry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SignedIdentifier {
    pub(crate) id: String,
    /// `None` when the request had no `AccessPolicy` element.
    pub(crate) access_policy: Option<AccessPolicy>,
}

/// The optional fields of a stored access policy, as given by the client (times are validated
/// but not rewritten; [`encode_signed_identifiers`] normalises them).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AccessPolicy {
    pub start: Option<String>,
    pub expiry: Option<String>,
    pub permission: Option<String>,
}

impl AccessPolicy {
    /// `true` when no field is set (Azure then writes no `AccessPolicy` element).
    pub(crate) fn is_empty(&self) -> bool {
        self.start.is_none() && self.expiry.is_none() && self.permission.is_none()
    }
}

/// Why a Set Table ACL body was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AclError {
    /// Not well-formed XML or not the `SignedIdentifiers` shape → `InvalidXmlDocument`.
    Malformed { reason: String },
    /// More than five identifiers → `InvalidXmlDocument` [rec: Py].
    TooManyIdentifiers { count: usize },
    /// A value is out of range (id length or uniqueness, permission letters, time format) →
    /// `InvalidXmlNodeValue` (code unverified for ACLs; Azure docs: "Set Table ACL").
    InvalidValue {
        element: &'static str,
        value: String,
        reason: &'static str,
    },
}

impl AclError {
    /// Azure error code.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            AclError::Malformed { .. } | AclError::TooManyIdentifiers { .. } => {
                "InvalidXmlDocument"
            }
            AclError::InvalidValue { .. } => "InvalidXmlNodeValue",
        }
    }

    /// HTTP status (always 400).
    #[cfg(test)]
    pub(crate) fn status(&self) -> u16 {
        400
    }

    /// Azure message text (without `RequestId`/`Time`).
    pub(crate) fn message(&self) -> &'static str {
        match self {
            // [rec: Py] test_set_table_acl_too_many_ids.
            AclError::Malformed { .. } | AclError::TooManyIdentifiers { .. } => {
                "XML specified is not syntactically valid."
            }
            // Common error-code table wording.
            AclError::InvalidValue { .. } => {
                "The value provided for one of the XML nodes in the request body was not in the correct format."
            }
        }
    }
}

impl fmt::Display for AclError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AclError::Malformed { reason } => write!(f, "malformed SignedIdentifiers: {reason}"),
            AclError::TooManyIdentifiers { count } => write!(
                f,
                "{count} signed identifiers given, at most {MAX_SIGNED_IDENTIFIERS} allowed"
            ),
            AclError::InvalidValue {
                element,
                value,
                reason,
            } => write!(f, "invalid {element} {value:?}: {reason}"),
        }
    }
}

impl std::error::Error for AclError {}

const BOM: &[u8] = b"\xEF\xBB\xBF";
const PROLOG: &str = r#"<?xml version="1.0" encoding="utf-8"?>"#;

fn malformed(reason: impl Into<String>) -> AclError {
    AclError::Malformed {
        reason: reason.into(),
    }
}

/// Where the parser is inside the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Node {
    Root,
    Identifier,
    Id,
    Policy,
    Start,
    Expiry,
    Permission,
    /// An element we do not know; its content is ignored.
    Unknown,
}

/// Decodes a Set Table ACL body. An empty body (or only a BOM and whitespace) and an empty
/// `<SignedIdentifiers/>` both mean "no policies". Unknown elements are ignored; text outside
/// the known leaf elements makes the document malformed.
pub fn decode_signed_identifiers(body: &[u8]) -> Result<Vec<SignedIdentifier>, AclError> {
    let body = body.strip_prefix(BOM).unwrap_or(body);
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Vec::new());
    }
    let text = std::str::from_utf8(body).map_err(|_| malformed("body is not UTF-8"))?;
    let mut reader = Reader::from_str(text);

    let mut stack: Vec<Node> = Vec::new();
    let mut seen_root = false;
    let mut identifiers: Vec<SignedIdentifier> = Vec::new();
    let mut current: Option<(Option<String>, Option<AccessPolicy>)> = None;
    // Character data since the last markup, as written (text and `&…;` references): trimmed
    // and unescaped as one value when the next markup comes. Attributes are never read, so a
    // tag with any number of them costs one pass over its bytes.
    let mut run = String::new();

    loop {
        let event = reader
            .read_event()
            .map_err(|e| malformed(format!("XML error: {e}")))?;
        if !matches!(event, Event::Text(_) | Event::GeneralRef(_)) {
            end_run(&mut run, &stack, &mut current)?;
        }
        match event {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let is_empty = matches!(event, Event::Empty(_));
                let name = e.local_name();
                let name = name.as_ref();
                let node = match stack.last() {
                    None => {
                        if seen_root {
                            return Err(malformed("more than one root element"));
                        }
                        if name != "SignedIdentifiers" {
                            return Err(malformed("root element is not SignedIdentifiers"));
                        }
                        seen_root = true;
                        Node::Root
                    }
                    Some(Node::Root) => match name {
                        "SignedIdentifier" => {
                            current = Some((None, None));
                            Node::Identifier
                        }
                        _ => Node::Unknown,
                    },
                    Some(Node::Identifier) => match name {
                        "Id" => Node::Id,
                        "AccessPolicy" => {
                            if let Some((_, policy)) = current.as_mut() {
                                if policy.is_some() {
                                    return Err(malformed("AccessPolicy given twice"));
                                }
                                *policy = Some(AccessPolicy::default());
                            }
                            Node::Policy
                        }
                        _ => Node::Unknown,
                    },
                    Some(Node::Policy) => match name {
                        "Start" => Node::Start,
                        "Expiry" => Node::Expiry,
                        "Permission" => Node::Permission,
                        _ => Node::Unknown,
                    },
                    Some(_) => Node::Unknown,
                };
                stack.push(node);
                if is_empty {
                    close(&mut stack, &mut current, &mut identifiers)?;
                }
            }
            Event::End(_) => close(&mut stack, &mut current, &mut identifiers)?,
            Event::Text(t) => run.push_str(&t),
            Event::GeneralRef(r) => {
                run.push('&');
                run.push_str(&r);
                run.push(';');
            }
            Event::CData(t) => set_text(&stack, &mut current, &t)?,
            Event::Eof => break,
            Event::Decl(_) | Event::Comment(_) | Event::PI(_) | Event::DocType(_) => {}
        }
    }
    if !seen_root || !stack.is_empty() {
        return Err(malformed("document is incomplete"));
    }
    validate(&identifiers)?;
    Ok(identifiers)
}

/// Sets a run of character data on the open element: trimmed of XML whitespace (a run of
/// only whitespace is dropped), then its references resolved.
fn end_run(
    run: &mut String,
    stack: &[Node],
    current: &mut Option<(Option<String>, Option<AccessPolicy>)>,
) -> Result<(), AclError> {
    let trimmed = run.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
    if !trimmed.is_empty() {
        let value = quick_xml::escape::unescape(trimmed)
            .map_err(|e| malformed(format!("bad text: {e}")))?;
        set_text(stack, current, &value)?;
    }
    run.clear();
    Ok(())
}

fn set_text(
    stack: &[Node],
    current: &mut Option<(Option<String>, Option<AccessPolicy>)>,
    value: &str,
) -> Result<(), AclError> {
    let Some(node) = stack.last() else {
        return Err(malformed("text outside the root element"));
    };
    let Some((id, policy)) = current.as_mut() else {
        return match node {
            Node::Unknown => Ok(()),
            _ => Err(malformed("unexpected text")),
        };
    };
    let slot = match node {
        Node::Id => id,
        Node::Start => policy
            .as_mut()
            .map(|p| &mut p.start)
            .ok_or_else(|| malformed("Start outside AccessPolicy"))?,
        Node::Expiry => policy
            .as_mut()
            .map(|p| &mut p.expiry)
            .ok_or_else(|| malformed("Expiry outside AccessPolicy"))?,
        Node::Permission => policy
            .as_mut()
            .map(|p| &mut p.permission)
            .ok_or_else(|| malformed("Permission outside AccessPolicy"))?,
        Node::Unknown => return Ok(()),
        Node::Root | Node::Identifier | Node::Policy => {
            return Err(malformed("unexpected text"));
        }
    };
    slot.get_or_insert_with(String::new).push_str(value);
    Ok(())
}

fn close(
    stack: &mut Vec<Node>,
    current: &mut Option<(Option<String>, Option<AccessPolicy>)>,
    identifiers: &mut Vec<SignedIdentifier>,
) -> Result<(), AclError> {
    let node = stack.pop().ok_or_else(|| malformed("unbalanced end tag"))?;
    if node == Node::Identifier {
        let (id, policy) = current
            .take()
            .ok_or_else(|| malformed("unbalanced SignedIdentifier"))?;
        let id = id.ok_or_else(|| malformed("SignedIdentifier without Id"))?;
        identifiers.push(SignedIdentifier {
            id,
            access_policy: policy,
        });
    }
    Ok(())
}

/// Table SAS permission letters allowed in a stored policy.
const TABLE_PERMISSION_LETTERS: &str = "raud";

fn validate(identifiers: &[SignedIdentifier]) -> Result<(), AclError> {
    if identifiers.len() > MAX_SIGNED_IDENTIFIERS {
        return Err(AclError::TooManyIdentifiers {
            count: identifiers.len(),
        });
    }
    let mut seen = HashSet::new();
    for identifier in identifiers {
        let id = &identifier.id;
        if id.is_empty() || id.chars().count() > MAX_SIGNED_IDENTIFIER_LEN {
            return Err(AclError::InvalidValue {
                element: "Id",
                value: id.clone(),
                reason: "must be 1 to 64 characters",
            });
        }
        if !seen.insert(id.as_str()) {
            return Err(AclError::InvalidValue {
                element: "Id",
                value: id.clone(),
                reason: "duplicate signed identifier",
            });
        }
        let Some(policy) = &identifier.access_policy else {
            continue;
        };
        for (element, value) in [("Start", &policy.start), ("Expiry", &policy.expiry)] {
            if let Some(value) = value {
                if parse_iso8601(value).is_none() {
                    return Err(AclError::InvalidValue {
                        element,
                        value: value.clone(),
                        reason: "not an ISO-8601 UTC time in a supported form",
                    });
                }
            }
        }
        if let Some(permission) = &policy.permission {
            if !is_table_permission_set(permission) {
                return Err(AclError::InvalidValue {
                    element: "Permission",
                    value: permission.clone(),
                    reason: "must be a subset of raud",
                });
            }
        }
    }
    Ok(())
}

/// `true` when every letter is one of `raud` and none repeats (order is not enforced here:
/// Azure's ordering rule for stored policies is unverified).
fn is_table_permission_set(permission: &str) -> bool {
    let mut seen = HashSet::new();
    permission
        .chars()
        .all(|c| TABLE_PERMISSION_LETTERS.contains(c) && seen.insert(c))
}

/// Normalises a policy time to Azure's seven-digit form; text that does not parse (possible
/// only for values that bypassed [`decode_signed_identifiers`]) is written unchanged.
fn normalise_time(value: &str) -> String {
    parse_iso8601(value).map_or_else(|| value.to_string(), format_iso8601_7)
}

/// Encodes a Get Table ACL response body in Azure's exact form.
pub fn encode_signed_identifiers(identifiers: &[SignedIdentifier]) -> Vec<u8> {
    let mut xml = String::from(PROLOG);
    if identifiers.is_empty() {
        xml.push_str("<SignedIdentifiers />");
    } else {
        xml.push_str("<SignedIdentifiers>");
        for identifier in identifiers {
            xml.push_str("<SignedIdentifier><Id>");
            xml.push_str(&partial_escape(identifier.id.as_str()));
            xml.push_str("</Id>");
            if let Some(policy) = identifier.access_policy.as_ref().filter(|p| !p.is_empty()) {
                xml.push_str("<AccessPolicy>");
                if let Some(start) = &policy.start {
                    push_element(&mut xml, "Start", &normalise_time(start));
                }
                if let Some(expiry) = &policy.expiry {
                    push_element(&mut xml, "Expiry", &normalise_time(expiry));
                }
                if let Some(permission) = &policy.permission {
                    push_element(&mut xml, "Permission", permission);
                }
                xml.push_str("</AccessPolicy>");
            }
            xml.push_str("</SignedIdentifier>");
        }
        xml.push_str("</SignedIdentifiers>");
    }
    let mut out = Vec::with_capacity(BOM.len() + xml.len());
    out.extend_from_slice(BOM);
    out.extend_from_slice(xml.as_bytes());
    out
}

fn push_element(xml: &mut String, name: &str, value: &str) {
    xml.push('<');
    xml.push_str(name);
    xml.push('>');
    xml.push_str(&partial_escape(value));
    xml.push_str("</");
    xml.push_str(name);
    xml.push('>');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(start: Option<&str>, expiry: Option<&str>, perm: Option<&str>) -> AccessPolicy {
        AccessPolicy {
            start: start.map(str::to_string),
            expiry: expiry.map(str::to_string),
            permission: perm.map(str::to_string),
        }
    }

    /// The sample of Azure docs: "Get Table ACL", pretty-printed as in the reference.
    const SPEC_SAMPLE: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<SignedIdentifiers>
  <SignedIdentifier>
    <Id>MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI=</Id>
    <AccessPolicy>
      <Start>2013-11-26T08:49:37.0000000Z</Start>
      <Expiry>2013-11-27T08:49:37.0000000Z</Expiry>
      <Permission>raud</Permission>
    </AccessPolicy>
  </SignedIdentifier>
</SignedIdentifiers>"#;

    #[test]
    fn decodes_spec_sample() {
        let ids = decode_signed_identifiers(SPEC_SAMPLE.as_bytes()).unwrap();
        assert_eq!(
            ids,
            vec![SignedIdentifier {
                id: "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI=".into(),
                access_policy: Some(policy(
                    Some("2013-11-26T08:49:37.0000000Z"),
                    Some("2013-11-27T08:49:37.0000000Z"),
                    Some("raud")
                )),
            }]
        );
    }

    #[test]
    fn encodes_spec_sample_in_wire_form() {
        let ids = decode_signed_identifiers(SPEC_SAMPLE.as_bytes()).unwrap();
        let expected = "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><SignedIdentifiers><SignedIdentifier><Id>MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI=</Id><AccessPolicy><Start>2013-11-26T08:49:37.0000000Z</Start><Expiry>2013-11-27T08:49:37.0000000Z</Expiry><Permission>raud</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>";
        assert_eq!(
            String::from_utf8(encode_signed_identifiers(&ids)).unwrap(),
            expected
        );
    }

    #[test]
    fn encodes_empty_list() {
        assert_eq!(
            encode_signed_identifiers(&[]),
            b"\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"utf-8\"?><SignedIdentifiers />".to_vec()
        );
    }

    #[test]
    fn normalises_times_and_omits_absent_parts() {
        let ids = vec![
            SignedIdentifier {
                id: "full".into(),
                access_policy: Some(policy(
                    Some("2021-07-08T09:10:09Z"),
                    Some("2021-07-09"),
                    Some("r"),
                )),
            },
            SignedIdentifier {
                id: "none".into(),
                access_policy: None,
            },
            SignedIdentifier {
                id: "empty".into(),
                access_policy: Some(AccessPolicy::default()),
            },
            SignedIdentifier {
                id: "perm-only".into(),
                access_policy: Some(policy(None, None, Some("ad"))),
            },
            SignedIdentifier {
                id: "a&b<c>".into(),
                access_policy: Some(policy(None, Some("2021-07-08T11:10:09.5+02:00"), None)),
            },
        ];
        let xml = String::from_utf8(encode_signed_identifiers(&ids)).unwrap();
        assert_eq!(
            xml,
            "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><SignedIdentifiers>\
<SignedIdentifier><Id>full</Id><AccessPolicy><Start>2021-07-08T09:10:09.0000000Z</Start><Expiry>2021-07-09T00:00:00.0000000Z</Expiry><Permission>r</Permission></AccessPolicy></SignedIdentifier>\
<SignedIdentifier><Id>none</Id></SignedIdentifier>\
<SignedIdentifier><Id>empty</Id></SignedIdentifier>\
<SignedIdentifier><Id>perm-only</Id><AccessPolicy><Permission>ad</Permission></AccessPolicy></SignedIdentifier>\
<SignedIdentifier><Id>a&amp;b&lt;c&gt;</Id><AccessPolicy><Expiry>2021-07-08T09:10:09.5000000Z</Expiry></AccessPolicy></SignedIdentifier>\
</SignedIdentifiers>"
        );
        // And it decodes back to the same identifiers (modulo time normalisation).
        let back = decode_signed_identifiers(xml.as_bytes()).unwrap();
        assert_eq!(back.len(), 5);
        assert_eq!(back[4].id, "a&b<c>");
        assert_eq!(back[1].access_policy, None);
        // An empty policy is written without AccessPolicy, so it reads back as absent.
        assert_eq!(back[2].access_policy, None);
    }

    #[test]
    fn empty_bodies_mean_no_policies() {
        for body in [
            &b""[..],
            b"   \r\n",
            b"\xEF\xBB\xBF",
            b"<SignedIdentifiers/>",
            b"<?xml version=\"1.0\" encoding=\"utf-8\"?><SignedIdentifiers></SignedIdentifiers>",
            b"\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"utf-8\"?><SignedIdentifiers />",
        ] {
            assert_eq!(decode_signed_identifiers(body).unwrap(), vec![], "{body:?}");
        }
    }

    #[test]
    fn accepts_partial_and_empty_policies() {
        let body = b"<SignedIdentifiers><SignedIdentifier><Id>a</Id><AccessPolicy/></SignedIdentifier>\
<SignedIdentifier><Id>b</Id></SignedIdentifier>\
<SignedIdentifier><Id>c</Id><AccessPolicy><Permission>r</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>";
        let ids = decode_signed_identifiers(body).unwrap();
        assert_eq!(ids[0].access_policy, Some(AccessPolicy::default()));
        assert_eq!(ids[1].access_policy, None);
        assert_eq!(ids[2].access_policy, Some(policy(None, None, Some("r"))));
    }

    fn many(n: usize) -> String {
        let mut s = String::from("<SignedIdentifiers>");
        for i in 0..n {
            s.push_str(&format!(
                "<SignedIdentifier><Id>id{i}</Id><AccessPolicy><Permission>r</Permission></AccessPolicy></SignedIdentifier>"
            ));
        }
        s.push_str("</SignedIdentifiers>");
        s
    }

    #[test]
    fn five_allowed_six_rejected() {
        assert_eq!(
            decode_signed_identifiers(many(5).as_bytes()).unwrap().len(),
            5
        );
        let e = decode_signed_identifiers(many(6).as_bytes()).unwrap_err();
        assert_eq!(e, AclError::TooManyIdentifiers { count: 6 });
        assert_eq!(e.code(), "InvalidXmlDocument");
        assert_eq!(e.status(), 400);
        assert_eq!(e.message(), "XML specified is not syntactically valid.");
    }

    fn one(id: &str, policy_xml: &str) -> String {
        format!(
            "<SignedIdentifiers><SignedIdentifier><Id>{id}</Id>{policy_xml}</SignedIdentifier></SignedIdentifiers>"
        )
    }

    #[test]
    fn id_rules() {
        let id64 = "x".repeat(64);
        assert!(decode_signed_identifiers(one(&id64, "").as_bytes()).is_ok());
        let id65 = "x".repeat(65);
        let e = decode_signed_identifiers(one(&id65, "").as_bytes()).unwrap_err();
        assert_eq!(e.code(), "InvalidXmlNodeValue");
        // 64 multi-byte characters are still 64 characters.
        let wide = "é".repeat(64);
        assert!(decode_signed_identifiers(one(&wide, "").as_bytes()).is_ok());
        assert!(decode_signed_identifiers(one("", "").as_bytes()).is_err());
        let dup = "<SignedIdentifiers><SignedIdentifier><Id>a</Id></SignedIdentifier><SignedIdentifier><Id>a</Id></SignedIdentifier></SignedIdentifiers>";
        assert!(matches!(
            decode_signed_identifiers(dup.as_bytes()),
            Err(AclError::InvalidValue { element: "Id", .. })
        ));
        let no_id = "<SignedIdentifiers><SignedIdentifier></SignedIdentifier></SignedIdentifiers>";
        assert!(matches!(
            decode_signed_identifiers(no_id.as_bytes()),
            Err(AclError::Malformed { .. })
        ));
    }

    #[test]
    fn permission_rules() {
        for ok in ["r", "raud", "dr", "au", ""] {
            let xml = one(
                "a",
                &format!("<AccessPolicy><Permission>{ok}</Permission></AccessPolicy>"),
            );
            assert!(decode_signed_identifiers(xml.as_bytes()).is_ok(), "{ok}");
        }
        for bad in ["w", "rr", "rl", "R", "r a"] {
            let xml = one(
                "a",
                &format!("<AccessPolicy><Permission>{bad}</Permission></AccessPolicy>"),
            );
            let e = decode_signed_identifiers(xml.as_bytes()).unwrap_err();
            assert!(
                matches!(
                    e,
                    AclError::InvalidValue {
                        element: "Permission",
                        ..
                    }
                ),
                "{bad}: {e:?}"
            );
        }
    }

    #[test]
    fn time_rules() {
        for ok in [
            "2013-11-26",
            "2013-11-26T08:49Z",
            "2013-11-26T08:49:37Z",
            "2013-11-26T08:49:37.1234567Z",
            "2013-11-26T08:49:37+01:00",
        ] {
            let xml = one(
                "a",
                &format!("<AccessPolicy><Start>{ok}</Start><Expiry>{ok}</Expiry></AccessPolicy>"),
            );
            assert!(decode_signed_identifiers(xml.as_bytes()).is_ok(), "{ok}");
        }
        for bad in ["yesterday", "2013-11-26T08:49:37", "26/11/2013"] {
            let xml = one(
                "a",
                &format!("<AccessPolicy><Expiry>{bad}</Expiry></AccessPolicy>"),
            );
            assert!(
                matches!(
                    decode_signed_identifiers(xml.as_bytes()),
                    Err(AclError::InvalidValue {
                        element: "Expiry",
                        ..
                    })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn malformed_documents() {
        for bad in [
            "<SignedIdentifiers>",
            "<SignedIdentifiers><SignedIdentifier><Id>a</Id></SignedIdentifiers>",
            "<Other/>",
            "not xml at all",
            "<SignedIdentifiers/><SignedIdentifiers/>",
            "<SignedIdentifiers>text</SignedIdentifiers>",
        ] {
            let e = decode_signed_identifiers(bad.as_bytes()).unwrap_err();
            assert_eq!(e.code(), "InvalidXmlDocument", "{bad}: {e:?}");
        }
        assert!(decode_signed_identifiers(b"\xff\xfe").is_err());
    }

    /// Character data reads as before quick-xml 0.38 (which reports each `&…;` reference as an
    /// event of its own): a run of text is trimmed as a whole, then its references resolved;
    /// CDATA is taken as it is.
    #[test]
    fn text_is_trimmed_whole_and_its_references_resolved() {
        let xml = one(
            "  a &amp; b&#x21; ",
            "<AccessPolicy><Permission> <![CDATA[r]]> </Permission></AccessPolicy>",
        );
        let ids = decode_signed_identifiers(xml.as_bytes()).unwrap();
        assert_eq!(ids[0].id, "a & b!");
        assert_eq!(ids[0].access_policy, Some(policy(None, None, Some("r"))));
        for bad in ["a &nbsp; b", "a & b", "a &amp b"] {
            let e = decode_signed_identifiers(one(bad, "").as_bytes()).unwrap_err();
            assert_eq!(e.code(), "InvalidXmlDocument", "{bad}: {e:?}");
        }
    }

    /// A tag with tens of thousands of attributes or namespace declarations (RUSTSEC-2026-0194,
    /// -0195 in quick-xml before 0.41): they are never read, so the document decodes as if they
    /// were not there. (The server refuses such bodies by size first, tests/it/hostile_xml.rs.)
    #[test]
    fn attributes_and_namespace_declarations_are_never_read() {
        let attributes: String = (0..64_000).map(|i| format!(" a{i}=\"\"")).collect();
        let namespaces: String = (0..30_000)
            .map(|i| format!(" xmlns:p{i}=\"urn:p{i}\""))
            .collect();
        for extra in [attributes, namespaces] {
            let xml = format!(
                "<SignedIdentifiers{extra}><SignedIdentifier><Id{extra}>a</Id></SignedIdentifier></SignedIdentifiers>"
            );
            let ids = decode_signed_identifiers(xml.as_bytes()).unwrap();
            assert_eq!(
                ids,
                vec![SignedIdentifier {
                    id: "a".into(),
                    access_policy: None
                }]
            );
        }
    }

    #[test]
    fn unknown_elements_are_ignored() {
        let xml = "<SignedIdentifiers><Extra>x</Extra><SignedIdentifier><Id>a</Id><Note>n</Note><AccessPolicy><Permission>r</Permission><Other/></AccessPolicy></SignedIdentifier></SignedIdentifiers>";
        let ids = decode_signed_identifiers(xml.as_bytes()).unwrap();
        assert_eq!(ids.len(), 1);
        assert_eq!(ids[0].access_policy, Some(policy(None, None, Some("r"))));
    }
}
