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
///
/// Attributes are never read (quick-xml then does no work on them), so a tag with any number
/// of attributes or namespace declarations costs one pass over its bytes.
pub(crate) fn parse(bytes: &[u8]) -> Option<Element> {
    let text = std::str::from_utf8(bytes).ok()?;
    let text = text.trim_start_matches('\u{feff}');
    let mut reader = Reader::from_str(text);
    let mut stack: Vec<Element> = Vec::new();
    let mut root = None;
    // Character data since the last markup, as written (text and `&…;` references): trimmed
    // and unescaped as one piece when the next markup comes.
    let mut run = String::new();
    loop {
        let event = reader.read_event().ok()?;
        if !matches!(event, Event::Text(_) | Event::GeneralRef(_)) {
            end_run(&mut run, &mut stack)?;
        }
        match event {
            Event::Start(e) => {
                if stack.len() >= MAX_DEPTH || root.is_some() {
                    return None;
                }
                stack.push(Element {
                    name: e.local_name().as_ref().to_string(),
                    ..Element::default()
                });
            }
            Event::Empty(e) => {
                if root.is_some() {
                    return None;
                }
                let el = Element {
                    name: e.local_name().as_ref().to_string(),
                    ..Element::default()
                };
                match stack.last_mut() {
                    Some(parent) => parent.children.push(el),
                    None => root = Some(el),
                }
            }
            Event::Text(t) => run.push_str(&t),
            Event::GeneralRef(r) => {
                run.push('&');
                run.push_str(&r);
                run.push(';');
            }
            Event::CData(t) => stack.last_mut()?.text.push_str(&t),
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

/// Adds a run of character data to the open element: trimmed of XML whitespace (a run of
/// only whitespace is dropped), then its references resolved. `None` when the run has text
/// outside every element or an unknown reference.
fn end_run(run: &mut String, stack: &mut [Element]) -> Option<()> {
    let trimmed = run.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
    if !trimmed.is_empty() {
        let text = quick_xml::escape::unescape(trimmed).ok()?;
        stack.last_mut()?.text.push_str(&text);
    }
    run.clear();
    Some(())
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

    /// A run of text is trimmed as a whole and then unescaped (quick-xml reports each `&…;`
    /// reference as an event of its own); CDATA is kept as it is.
    #[test]
    fn text_runs_are_trimmed_whole() {
        let el =
            parse(b"<A>\n  <B>  a &lt; b&#33; </B>\n  <C> <![CDATA[ x ]]> </C>\n</A>").unwrap();
        assert_eq!(el.text, "");
        assert_eq!(el.child("B").unwrap().text, "a < b!");
        assert_eq!(el.child("C").unwrap().text, " x ");
        assert!(parse(b"<A>a &nbsp; b</A>").is_none());
        assert!(parse(b"<A>a & b</A>").is_none());
    }

    /// Attributes and namespace declarations are never read: tens of thousands on one tag
    /// (RUSTSEC-2026-0194, -0195 in quick-xml before 0.41) change nothing.
    #[test]
    fn attributes_are_never_read() {
        let attributes: String = (0..64_000).map(|i| format!(" a{i}=\"\"")).collect();
        let namespaces: String = (0..30_000)
            .map(|i| format!(" xmlns:p{i}=\"urn:p{i}\""))
            .collect();
        for extra in [attributes, namespaces] {
            let doc = format!("<A{extra}><B{extra}>x</B><C{extra}/></A>");
            let el = parse(doc.as_bytes()).unwrap();
            assert_eq!(el.name, "A");
            assert_eq!(el.child("B").unwrap().text, "x");
            assert!(el.child("C").is_some());
        }
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
