//! Text out of XML formats: DOCX (`word/document.xml`) and Confluence storage-format XHTML.
//! Both are streamed with quick-xml; entity references are resolved (XML's five, HTML5's named
//! ones that storage format allows, numeric ones).

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

/// Resolves an entity reference's name (`amp`, `nbsp`, `#233`, `#xE9`); `None` when unknown.
pub(crate) fn entity(name: &str) -> Option<String> {
    if let Some(num) = name.strip_prefix('#') {
        let code = match num.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok(),
            None => num.parse().ok(),
        };
        return code.and_then(char::from_u32).map(String::from);
    }
    quick_xml::escape::resolve_xml_entity(name)
        .or_else(|| quick_xml::escape::resolve_html5_entity(name))
        .map(str::to_string)
}

fn local(name: &[u8]) -> &[u8] {
    name.rsplit(|b| *b == b':').next().unwrap_or(name)
}

/// The text of the first element named `tag` (qualified, e.g. `dc:title`).
pub fn first_text_of(xml: &str, tag: &[u8]) -> Option<String> {
    let mut r = Reader::from_str(xml);
    let mut inside = false;
    let mut out = String::new();
    loop {
        match r.read_event() {
            Ok(Event::Start(e)) if e.name().as_ref() == tag => inside = true,
            Ok(Event::End(e)) if e.name().as_ref() == tag => {
                return (!out.trim().is_empty()).then(|| out.trim().to_string());
            }
            Ok(Event::Text(t)) if inside => out.push_str(&t.decode().ok()?),
            Ok(Event::GeneralRef(g)) if inside => {
                out.push_str(&entity(&g.decode().ok()?).unwrap_or_default())
            }
            Ok(Event::Eof) | Err(_) => return None,
            _ => {}
        }
    }
}

/// DOCX body text: paragraphs separated by blank lines, headings (`Heading1`…, `Title` styles)
/// as Markdown headings, tabs and breaks kept.
pub fn docx_text(xml: &str) -> Result<String, String> {
    let mut r = Reader::from_str(xml);
    let mut out = String::new();
    let mut para = String::new();
    let mut heading: Option<usize> = None;
    let mut in_text = false;
    loop {
        match r
            .read_event()
            .map_err(|e| format!("word/document.xml: {e}"))?
        {
            Event::Start(e) | Event::Empty(e) => match local(e.name().as_ref()) {
                b"t" => in_text = true,
                b"tab" => para.push('\t'),
                b"br" | b"cr" => para.push('\n'),
                b"pStyle" => {
                    let val = e
                        .attributes()
                        .flatten()
                        .find(|a| local(a.key.as_ref()) == b"val")
                        .map(|a| String::from_utf8_lossy(&a.value).to_ascii_lowercase());
                    heading = val.and_then(|v| {
                        if v == "title" {
                            Some(1)
                        } else {
                            v.strip_prefix("heading")
                                .and_then(|n| n.trim().parse().ok())
                        }
                    });
                }
                _ => {}
            },
            Event::End(e) => match local(e.name().as_ref()) {
                b"t" => in_text = false,
                b"p" => {
                    let text = para.trim();
                    if !text.is_empty() {
                        if !out.is_empty() {
                            out.push_str("\n\n");
                        }
                        if let Some(level) = heading {
                            out.push_str(&"#".repeat(level.clamp(1, 6)));
                            out.push(' ');
                        }
                        out.push_str(text);
                    }
                    para.clear();
                    heading = None;
                }
                _ => {}
            },
            Event::Text(t) if in_text => para.push_str(&t.decode().map_err(|e| e.to_string())?),
            Event::GeneralRef(g) if in_text => {
                para.push_str(&entity(&g.decode().map_err(|e| e.to_string())?).unwrap_or_default())
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(out)
}

/// A section of a wiki page: the heading path above it and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Headings in force, outermost first.
    pub headings: Vec<String>,
    pub text: String,
}

/// Confluence storage format (XHTML with `ac:` / `ri:` elements) → text, keeping headings as
/// Markdown headings: code macros keep their body, user mentions become `@account-id`, links
/// keep their text, other macros' parameters are dropped. Storage format is fragment XML (no
/// single root); entity references from HTML are allowed.
pub fn storage_to_text(xml: &str) -> Result<String, String> {
    let mut r = Reader::from_str(xml);
    r.config_mut().check_end_names = false;
    let mut st = Storage {
        out: String::new(),
        skip: 0,
    };
    loop {
        let ev = r.read_event().map_err(|e| format!("storage format: {e}"))?;
        match ev {
            Event::Start(e) => st.start(e.name().as_ref()),
            Event::Empty(e) => st.empty(&e),
            Event::End(e) => st.end(e.name().as_ref()),
            Event::Text(t) if st.skip == 0 => {
                let s = t.decode().map_err(|e| e.to_string())?;
                st.out.push_str(&collapse(&s));
            }
            Event::CData(c) if st.skip == 0 => {
                st.out.push_str(&String::from_utf8_lossy(&c));
            }
            Event::GeneralRef(g) if st.skip == 0 => {
                st.out
                    .push_str(&entity(&g.decode().map_err(|e| e.to_string())?).unwrap_or_default());
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(st
        .out
        .lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string())
}

/// The text of a storage-format page so far, and how deep inside `ac:parameter` elements
/// (macro settings: not content) the reader is.
struct Storage {
    out: String,
    skip: usize,
}

impl Storage {
    /// Ends the current block with a blank line (trailing spaces dropped).
    fn block(&mut self) {
        let out = &mut self.out;
        while out.ends_with(' ') {
            out.pop();
        }
        if !out.is_empty() && !out.ends_with("\n\n") {
            out.push_str(if out.ends_with('\n') { "\n" } else { "\n\n" });
        }
    }

    /// A start tag: headings start `#` lines, blocks a new paragraph, list items `- `, cells
    /// ` | `; `ac:parameter` starts skipping.
    fn start(&mut self, name: &[u8]) {
        match name {
            b"ac:parameter" => self.skip += 1,
            b"h1" | b"h2" | b"h3" | b"h4" | b"h5" | b"h6" if self.skip == 0 => {
                self.block();
                let level = (name[1] - b'0') as usize;
                self.out.push_str(&"#".repeat(level));
                self.out.push(' ');
            }
            b"p"
            | b"div"
            | b"table"
            | b"tr"
            | b"blockquote"
            | b"ul"
            | b"ol"
            | b"pre"
            | b"ac:plain-text-body" => self.block(),
            b"li" => {
                if !self.out.is_empty() && !self.out.ends_with('\n') {
                    self.out.push('\n');
                }
                self.out.push_str("- ");
            }
            b"td" | b"th" if !self.out.is_empty() && !self.out.ends_with('\n') => {
                self.out.push_str(" | ");
            }
            _ => {}
        }
    }

    /// An empty element: `br` breaks the line, a user mention becomes `@account-id`.
    fn empty(&mut self, e: &BytesStart<'_>) {
        match e.name().as_ref() {
            b"br" => self.out.push('\n'),
            b"ri:user" => {
                let id = e
                    .attributes()
                    .flatten()
                    .find(|a| {
                        local(a.key.as_ref()) == b"account-id"
                            || local(a.key.as_ref()) == b"username"
                    })
                    .map(|a| String::from_utf8_lossy(&a.value).to_string());
                if let Some(id) = id {
                    self.out.push_str(&format!("@{id} "));
                }
            }
            _ => {}
        }
    }

    /// An end tag: ends a block, a row or a list item; `ac:parameter` stops skipping.
    fn end(&mut self, name: &[u8]) {
        match name {
            b"ac:parameter" => self.skip = self.skip.saturating_sub(1),
            b"h1"
            | b"h2"
            | b"h3"
            | b"h4"
            | b"h5"
            | b"h6"
            | b"p"
            | b"div"
            | b"table"
            | b"blockquote"
            | b"ul"
            | b"ol"
            | b"pre"
            | b"ac:plain-text-body" => self.block(),
            b"tr" | b"li" if !self.out.ends_with('\n') => {
                self.out.push('\n');
            }
            _ => {}
        }
    }
}

/// Whitespace runs to single spaces (flowing XHTML text).
fn collapse(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut space = false;
    for c in s.chars() {
        if c.is_whitespace() {
            space = true;
        } else {
            if space {
                out.push(' ');
            }
            space = false;
            out.push(c);
        }
    }
    if space {
        out.push(' ');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docx_paragraphs_headings_and_entities() {
        let xml = r#"<w:document xmlns:w="w"><w:body>
            <w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Plan</w:t></w:r></w:p>
            <w:p><w:r><w:t xml:space="preserve">Ship &amp; </w:t></w:r><w:r><w:t>measure</w:t><w:tab/><w:t>then rest</w:t></w:r></w:p>
            <w:p></w:p></w:body></w:document>"#;
        assert_eq!(
            docx_text(xml).expect("text"),
            "# Plan\n\nShip & measure\tthen rest"
        );
        assert_eq!(
            first_text_of("<cp><dc:title>Q3 &amp; Q4</dc:title></cp>", b"dc:title").as_deref(),
            Some("Q3 & Q4")
        );
    }

    #[test]
    fn storage_format_keeps_headings_code_and_mentions() {
        let xml = r#"<h1>Deploying</h1><p>Run the <strong>installer</strong>&nbsp;first.</p>
            <ac:structured-macro ac:name="code"><ac:parameter ac:name="language">bash</ac:parameter>
            <ac:plain-text-body><![CDATA[make deploy ENV=prod]]></ac:plain-text-body></ac:structured-macro>
            <h2>Contacts</h2><ul><li>Owner: <ac:link><ri:user ri:account-id="5b10ac8d"/></ac:link></li><li>Team B</li></ul>"#;
        let text = storage_to_text(xml).expect("text");
        assert!(
            text.starts_with("# Deploying\n\nRun the installer\u{a0}first."),
            "{text}"
        );
        assert!(text.contains("make deploy ENV=prod"), "{text}");
        assert!(
            !text.contains("bash"),
            "macro parameters are not content: {text}"
        );
        assert!(text.contains("## Contacts"), "{text}");
        assert!(text.contains("- Owner: @5b10ac8d"), "{text}");
        assert!(text.contains("- Team B"), "{text}");
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "(?s).{0,400}") {
            let _ = docx_text(&s);
            let _ = storage_to_text(&s);
            let _ = first_text_of(&s, b"dc:title");
        }
    }
}
