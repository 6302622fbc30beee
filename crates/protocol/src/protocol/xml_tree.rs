//! A minimal element tree over quick-xml for the small XML documents of the service
//! (service properties); rejects malformed XML and DTDs, bounds depth.

use quick_xml::events::Event;
use quick_xml::Reader;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Element {
    pub(crate) name: String,
    pub(crate) text: String,
    pub(crate) children: Vec<Element>,
}

impl Element {
    pub(crate) fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }

    pub(crate) fn children_named<'a>(
        &'a self,
        name: &'a str,
    ) -> impl Iterator<Item = &'a Element> + 'a {
        self.children.iter().filter(move |c| c.name == name)
    }
}

const MAX_DEPTH: usize = 16;

/// Parses a document into its root element; `None` if it is not well-formed.
pub(crate) fn parse(bytes: &[u8]) -> Option<Element> {
    let text = std::str::from_utf8(bytes).ok()?;
    let text = text.trim_start_matches('\u{feff}');
    let mut reader = Reader::from_str(text);
    reader.config_mut().trim_text(true);
    let mut stack: Vec<Element> = Vec::new();
    let mut root = None;
    loop {
        match reader.read_event().ok()? {
            Event::Start(e) => {
                if stack.len() >= MAX_DEPTH || root.is_some() {
                    return None;
                }
                let name = std::str::from_utf8(e.local_name().as_ref())
                    .ok()?
                    .to_string();
                stack.push(Element {
                    name,
                    ..Element::default()
                });
            }
            Event::Empty(e) => {
                if root.is_some() {
                    return None;
                }
                let name = std::str::from_utf8(e.local_name().as_ref())
                    .ok()?
                    .to_string();
                let el = Element {
                    name,
                    ..Element::default()
                };
                match stack.last_mut() {
                    Some(parent) => parent.children.push(el),
                    None => root = Some(el),
                }
            }
            Event::Text(t) => {
                let s = t.unescape().ok()?;
                stack.last_mut()?.text.push_str(&s);
            }
            Event::CData(t) => {
                let s = std::str::from_utf8(&t).ok()?.to_string();
                stack.last_mut()?.text.push_str(&s);
            }
            Event::End(_) => {
                let el = stack.pop()?;
                match stack.last_mut() {
                    Some(parent) => parent.children.push(el),
                    None => root = Some(el),
                }
            }
            Event::DocType(_) => return None,
            Event::Eof => break,
            _ => {}
        }
    }
    if !stack.is_empty() {
        return None;
    }
    root
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_nested_elements() {
        let el = parse(b"\xEF\xBB\xBF<?xml version=\"1.0\"?><A><B>x &amp; y</B><C/></A>").unwrap();
        assert_eq!(el.name, "A");
        assert_eq!(el.child("B").unwrap().text, "x & y");
        assert!(el.child("C").is_some());
    }

    #[test]
    fn rejects_malformed() {
        assert!(parse(b"<A><B></A>").is_none());
        assert!(parse(b"<A>").is_none());
        assert!(parse(b"not xml").is_none());
        assert!(parse(b"<A/><B/>").is_none());
        let deep = "<a>".repeat(40) + &"</a>".repeat(40);
        assert!(parse(deep.as_bytes()).is_none());
    }
}
