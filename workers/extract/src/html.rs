//! HTML → readable text.
//!
//! A WHATWG tokenizer (html5gum) feeds a small state machine: scripts, styles, templates and
//! hidden content (`hidden`, `aria-hidden="true"`, inline `display:none` / `visibility:hidden`)
//! and page furniture (`nav`, `aside`, `footer`, forms, iframes) are dropped; block elements
//! become line breaks; headings become Markdown headings (so the chunker keeps the structure);
//! list items become `- ` lines; `<pre>` keeps its whitespace. The page `<title>` is returned
//! separately. Malformed HTML never fails: the tokenizer recovers and so does this.

use html5gum::{DefaultEmitter, EndTag, StartTag, Token, Tokenizer};

/// What an HTML page says, as text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HtmlText {
    pub title: Option<String>,
    pub text: String,
    /// `href`s of links, as written (resolving them is the caller's business).
    pub links: Vec<String>,
}

/// Elements whose whole content is dropped.
const DROPPED: &[&str] = &[
    "script", "style", "template", "noscript", "svg", "math", "nav", "aside", "footer", "form",
    "iframe", "object", "embed", "canvas", "button", "select", "textarea",
];

/// Elements that break lines around their content.
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "section",
    "article",
    "main",
    "header",
    "ul",
    "ol",
    "dl",
    "dt",
    "dd",
    "table",
    "thead",
    "tbody",
    "tfoot",
    "tr",
    "blockquote",
    "figure",
    "figcaption",
    "address",
    "details",
    "summary",
    "hr",
    "body",
    "html",
    "center",
];

fn is_hidden(attrs: &Attributes) -> bool {
    let get = |name: &[u8]| {
        attrs
            .iter()
            .find(|(k, _)| k.as_slice().eq_ignore_ascii_case(name))
            .map(|(_, v)| String::from_utf8_lossy(&v.value).to_ascii_lowercase())
    };
    if get(b"hidden").is_some() {
        return true;
    }
    if get(b"aria-hidden").is_some_and(|v| v.trim() == "true") {
        return true;
    }
    get(b"style").is_some_and(|s| {
        let compact: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        compact.contains("display:none") || compact.contains("visibility:hidden")
    })
}

/// Accumulates text with collapsed whitespace and explicit breaks.
struct Out {
    text: String,
    /// A space is owed before the next word.
    space: bool,
}

impl Out {
    /// Text in flowing content: whitespace runs collapse to one space, and whitespace at a
    /// piece's edge separates it from its neighbours (`a <b>b</b>` vs `a<b>b</b>`).
    fn word_text(&mut self, s: &str) {
        if s.starts_with(char::is_whitespace) {
            self.space = true;
        }
        let mut first = true;
        for part in s.split_whitespace() {
            if (self.space || !first) && !self.text.is_empty() && !self.text.ends_with(['\n', ' '])
            {
                self.text.push(' ');
            }
            self.text.push_str(part);
            first = false;
            self.space = false;
        }
        if s.ends_with(char::is_whitespace) {
            self.space = true;
        }
    }

    fn raw(&mut self, s: &str) {
        self.text.push_str(s);
        self.space = false;
    }

    /// Ends the current line, leaving at most `n` newlines in a row.
    fn breaks(&mut self, n: usize) {
        if self.text.is_empty() {
            return;
        }
        while self.text.ends_with(' ') {
            self.text.pop();
        }
        let have = self.text.chars().rev().take_while(|c| *c == '\n').count();
        for _ in have..n {
            self.text.push('\n');
        }
        self.space = false;
    }
}

/// Converts an HTML document (or fragment) to readable text.
pub fn html_to_text(html: &str) -> HtmlText {
    let mut emitter = DefaultEmitter::default();
    emitter.naively_switch_states(true);
    let mut c = Converter {
        out: Out {
            text: String::new(),
            space: false,
        },
        title: None,
        in_title: false,
        links: Vec::new(),
        dropped: Vec::new(),
        pre: 0,
    };
    for token in Tokenizer::new_with_emitter(html, emitter).flatten() {
        match token {
            Token::StartTag(tag) => c.start_tag(&tag),
            Token::EndTag(tag) => c.end_tag(&tag),
            Token::String(s) => c.string(&String::from_utf8_lossy(&s.value)),
            Token::Comment(_) | Token::Doctype(_) | Token::Error(_) => {}
        }
    }
    c.finish()
}

/// The state of one conversion: the text so far and where the tokenizer is in the page.
struct Converter {
    out: Out,
    title: Option<String>,
    in_title: bool,
    links: Vec<String>,
    /// Open dropped (or hidden) elements, by name, so their end tags close them; and whether
    /// links inside still count (page furniture like `nav` links the site; scripts do not).
    dropped: Vec<(String, bool)>,
    /// How many `<pre>` elements are open (their whitespace is kept).
    pre: usize,
}

impl Converter {
    /// A start tag: opens a dropped element, the title, or emits the element's breaks and
    /// markers (`- `, `#`, ` | `, image alt text); links are collected.
    fn start_tag(&mut self, tag: &StartTag<()>) {
        let name = String::from_utf8_lossy(&tag.name).to_ascii_lowercase();
        if let Some((open, links_ok)) = self.dropped.last().cloned() {
            // Nested element of the same name inside a dropped one: count it.
            if open == name && !tag.self_closing && !is_void(&name) {
                self.dropped.push((name.clone(), links_ok));
            }
            if links_ok && name == "a" {
                self.links.extend(href(&tag.attributes));
            }
            return;
        }
        if name == "title" {
            self.in_title = true;
            return;
        }
        let hidden = is_hidden(&tag.attributes);
        if (DROPPED.contains(&name.as_str()) || hidden) && !tag.self_closing && !is_void(&name) {
            let links_ok = !hidden && FURNITURE.contains(&name.as_str());
            self.dropped.push((name, links_ok));
            return;
        }
        let out = &mut self.out;
        match name.as_str() {
            "br" => out.breaks(1),
            "li" => {
                out.breaks(1);
                out.raw("- ");
            }
            "td" | "th" if !out.text.ends_with('\n') && !out.text.is_empty() => {
                out.raw(" | ");
            }
            "pre" => {
                out.breaks(2);
                self.pre += 1;
            }
            "img" => {
                let alt = tag
                    .attributes
                    .iter()
                    .find(|(k, _)| k.as_slice() == b"alt")
                    .map(|(_, v)| String::from_utf8_lossy(&v.value).trim().to_string());
                if let Some(alt) = alt.filter(|a| !a.is_empty()) {
                    out.word_text(&format!(" {alt} "));
                }
            }
            "a" => self.links.extend(href(&tag.attributes)),
            h if heading_level(h).is_some() => {
                out.breaks(2);
                out.raw(&"#".repeat(heading_level(h).unwrap_or(1)));
                out.raw(" ");
            }
            b if BLOCKS.contains(&b) => out.breaks(2),
            _ => {}
        }
    }

    /// An end tag: closes a dropped element, the title or a `<pre>`, or ends a block.
    fn end_tag(&mut self, tag: &EndTag<()>) {
        let name = String::from_utf8_lossy(&tag.name).to_ascii_lowercase();
        if let Some((open, _)) = self.dropped.last() {
            if *open == name {
                self.dropped.pop();
            }
            return;
        }
        match name.as_str() {
            "title" => self.in_title = false,
            "pre" => {
                self.pre = self.pre.saturating_sub(1);
                self.out.breaks(2);
            }
            "li" | "tr" => self.out.breaks(1),
            h if heading_level(h).is_some() => self.out.breaks(2),
            b if BLOCKS.contains(&b) => self.out.breaks(2),
            _ => {}
        }
    }

    /// Text: into the title, kept as is inside `<pre>`, else flowing; none inside dropped
    /// elements.
    fn string(&mut self, s: &str) {
        if !self.dropped.is_empty() {
            return;
        }
        if self.in_title {
            let t = self.title.get_or_insert_with(String::new);
            t.push_str(s);
        } else if self.pre > 0 {
            self.out.raw(s);
        } else {
            self.out.word_text(s);
        }
    }

    /// The text with trailing spaces of lines and surrounding blank lines trimmed, and the
    /// title's whitespace collapsed.
    fn finish(self) -> HtmlText {
        let text = self
            .out
            .text
            .lines()
            .map(str::trim_end)
            .collect::<Vec<_>>()
            .join("\n")
            .trim()
            .to_string();
        HtmlText {
            title: self
                .title
                .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "))
                .filter(|t| !t.is_empty()),
            text,
            links: self.links,
        }
    }
}

/// Dropped page furniture whose links still lead somewhere worth crawling.
const FURNITURE: &[&str] = &["nav", "aside", "footer"];

type Attributes =
    std::collections::BTreeMap<html5gum::HtmlString, html5gum::Spanned<html5gum::HtmlString, ()>>;

/// A link's target, unless it points nowhere (`#top`, `javascript:`).
fn href(attrs: &Attributes) -> Option<String> {
    let (_, v) = attrs
        .iter()
        .find(|(k, _)| k.as_slice().eq_ignore_ascii_case(b"href"))?;
    let href = String::from_utf8_lossy(&v.value).trim().to_string();
    let nowhere = href.is_empty()
        || href.starts_with('#')
        || href.to_ascii_lowercase().starts_with("javascript:");
    (!nowhere).then_some(href)
}

fn heading_level(name: &str) -> Option<usize> {
    match name {
        "h1" => Some(1),
        "h2" => Some(2),
        "h3" => Some(3),
        "h4" => Some(4),
        "h5" => Some(5),
        "h6" => Some(6),
        _ => None,
    }
}

fn is_void(name: &str) -> bool {
    matches!(
        name,
        "area"
            | "base"
            | "br"
            | "col"
            | "embed"
            | "hr"
            | "img"
            | "input"
            | "link"
            | "meta"
            | "source"
            | "track"
            | "wbr"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readable_text_keeps_structure_and_drops_scripts_and_hidden_content() {
        let page = r#"<!doctype html><html><head><title> Deploy
            guide </title><style>p{color:red}</style><script>alert("x")</script></head>
            <body><nav><a href="/">Home</a></nav>
            <h1>Deploying</h1><p>Run   the <b>installer</b>&nbsp;first.<br>Then restart.</p>
            <div hidden>secret hidden text</div><p style="display: none">also hidden</p>
            <span aria-hidden="true">icon</span>
            <ul><li>one</li><li>two <a href="https://example.com/x">link</a></li></ul>
            <pre>fn main() {
    println!("hi");
}</pre>
            <script>document.write("<p>injected</p>")</script>
            <img alt="diagram of the flow" src="a.png">
            <footer>© 2026</footer></body></html>"#;
        let out = html_to_text(page);
        assert_eq!(out.title.as_deref(), Some("Deploy guide"));
        assert!(out.text.starts_with("# Deploying"), "{}", out.text);
        assert!(
            out.text.contains("Run the installer first.\nThen restart."),
            "{}",
            out.text
        );
        assert!(out.text.contains("- one\n- two link"), "{}", out.text);
        assert!(
            out.text.contains("fn main() {\n    println!(\"hi\");\n}"),
            "{}",
            out.text
        );
        assert!(out.text.contains("diagram of the flow"));
        for gone in [
            "secret",
            "also hidden",
            "icon",
            "alert",
            "injected",
            "color:red",
            "Home",
            "©",
        ] {
            assert!(!out.text.contains(gone), "{gone} leaked: {}", out.text);
        }
        assert_eq!(out.links, vec!["/", "https://example.com/x"]);
    }

    #[test]
    fn broken_html_degrades_gracefully() {
        let out = html_to_text("<p>unclosed <b>bold <div>text</p></div><script>never closed");
        assert!(out.text.contains("unclosed bold"));
        assert!(out.text.contains("text"));
        assert!(!out.text.contains("never closed"));
        assert_eq!(html_to_text("").text, "");
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "(?s).{0,600}") {
            let _ = html_to_text(&s);
        }
    }
}
