//! Storage format → sectioned text: markup to text with headings marked, then sections and chunks.

use super::*;

pub(super) static HEADING_TAG: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"<h[1-6](?:\s[^>]*)?>").ok());

/// An `ac:link` whose only content is a page or attachment reference (no link body).
pub(super) static BARE_LINK: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"<ac:link(?:\s[^>]*)?>\s*(<ri:(?:page|attachment)\s[^>]*/>)\s*</ac:link>").ok()
});

/// The attributes of one tag as written (`<ri:page ri:content-title="X" />` →
/// `[("ri:content-title", "X")]`), values still escaped. Stops at anything unexpected.
pub(super) fn tag_attrs(tag: &str) -> Vec<(&str, &str)> {
    let inner = tag.trim_start_matches('<');
    let mut rest = inner.trim_start_matches(|c: char| !c.is_whitespace() && c != '/' && c != '>');
    let mut out = Vec::new();
    loop {
        rest = rest.trim_start();
        let Some(eq) = rest.find('=') else { break };
        let name = rest[..eq].trim();
        if name.is_empty() || name.contains(|c: char| c.is_whitespace() || c == '/' || c == '>') {
            break;
        }
        let after = rest[eq + 1..].trim_start();
        let Some(quote) = after.chars().next().filter(|q| *q == '"' || *q == '\'') else {
            break;
        };
        let body = &after[1..];
        let Some(end) = body.find(quote) else { break };
        out.push((name, &body[..end]));
        rest = &body[end + 1..];
    }
    out
}

/// `ri:account-id` → `account-id` (storage format is matched by local name, as xml.rs does).
pub(super) fn local(name: &str) -> &str {
    name.rsplit(':').next().unwrap_or(name)
}

/// Every `<{name} …>` tag (start or empty) in raw storage format, as written.
pub(super) fn tags<'a>(storage: &'a str, name: &str) -> Vec<&'a str> {
    let open = format!("<{name}");
    let mut out = Vec::new();
    for (at, _) in storage.match_indices(&open) {
        let rest = &storage[at + open.len()..];
        if !rest.starts_with(|c: char| c.is_whitespace() || c == '/' || c == '>') {
            continue;
        }
        if let Some(end) = rest.find('>') {
            out.push(&storage[at..at + open.len() + end + 1]);
        }
    }
    out
}

/// An attribute value's entity references resolved; unknown ones are kept as written.
pub(super) fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let resolved = after
            .find(';')
            .filter(|end| *end <= 32)
            .and_then(|end| Some((crate::xml::entity(&after[..end])?, end)));
        match resolved {
            Some((text, end)) => {
                out.push_str(&text);
                rest = &after[end + 1..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

pub(super) fn escape_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The text a body-less link shows in Confluence: the page title or the file name.
pub(super) fn link_label(element: &str) -> String {
    tag_attrs(element)
        .into_iter()
        .find(|(k, _)| matches!(local(k), "content-title" | "filename"))
        .map(|(_, v)| escape_text(&unescape(v)))
        .unwrap_or_default()
}

/// Storage format prepared for `storage_to_text`: link titles as text, headings marked.
pub(super) fn mark_storage(storage: &str) -> String {
    let clean = storage.replace(HEADING_MARK, "");
    let linked = match &*BARE_LINK {
        Some(re) => re
            .replace_all(&clean, |c: &Captures| {
                format!("<ac:link>{}{}</ac:link>", &c[1], link_label(&c[1]))
            })
            .into_owned(),
        None => clean,
    };
    match &*HEADING_TAG {
        Some(re) => re
            .replace_all(&linked, |c: &Captures| format!("{}{HEADING_MARK}", &c[0]))
            .into_owned(),
        None => linked,
    }
}

/// A marked heading line of the converted text: its level and title.
pub(super) fn heading_line(line: &str) -> Option<(usize, &str)> {
    let level = line.bytes().take_while(|b| *b == b'#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let title = line[level..]
        .strip_prefix(' ')?
        .strip_prefix(HEADING_MARK)?;
    Some((level, title.trim()))
}

/// Joins the lone `-` line `storage_to_text` writes for `<li><p>text</p></li>` (then a blank
/// line, then the text) back into `- text`. Empty bullets (a list item opening a nested list)
/// are dropped.
pub(super) fn join_bullets(text: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut bullet = false;
    for line in text.lines() {
        if line.trim() == "-" {
            bullet = true;
            continue;
        }
        if bullet && line.trim().is_empty() {
            continue;
        }
        if bullet && heading_line(line).is_none() {
            out.push(format!("- {line}"));
        } else {
            out.push(line.to_string());
        }
        bullet = false;
    }
    out.join("\n")
}

/// The page's text with heading marks. Storage format that is not well-formed enough for
/// quick-xml still yields text through the lenient HTML reader (macros' bodies may be lost).
pub(super) fn page_text(storage: &str) -> String {
    let marked = mark_storage(storage);
    let text = storage_to_text(&marked).unwrap_or_else(|_| crate::html::html_to_text(&marked).text);
    join_bullets(&text)
}

/// The text under one heading path (the heading line included), up to the next heading.
pub(super) struct Section {
    /// Headings in force, outermost first.
    pub(super) path: Vec<String>,
    pub(super) text: String,
}

/// Cuts marked text at its heading lines; marks are removed from the result.
pub(super) fn sections(text: &str) -> Vec<Section> {
    let mut out = vec![Section {
        path: Vec::new(),
        text: String::new(),
    }];
    let mut stack: Vec<(usize, String)> = Vec::new();
    for line in text.lines() {
        match heading_line(line) {
            // An empty heading (`<h2></h2>`) says nothing; its line is dropped.
            Some((_, "")) => {}
            Some((level, title)) => {
                let title = title.replace(HEADING_MARK, "");
                while stack.last().is_some_and(|(l, _)| *l >= level) {
                    stack.pop();
                }
                stack.push((level, title.clone()));
                out.push(Section {
                    path: stack.iter().map(|(_, t)| t.clone()).collect(),
                    text: format!("{} {title}", "#".repeat(level)),
                });
            }
            None => {
                if let Some(s) = out.last_mut() {
                    s.text.push('\n');
                    s.text.push_str(&line.replace(HEADING_MARK, ""));
                }
            }
        }
    }
    out.retain(|s| !s.text.trim().is_empty());
    out
}

pub(super) fn same_text(a: &str, b: &str) -> bool {
    a.trim().to_lowercase() == b.trim().to_lowercase()
}

/// The section as locators name it: the heading path joined with ` > `. Pages usually open
/// with an `h1` that repeats their title; that heading is left out (every section would
/// otherwise start with the title, which the locator's page already says), so text before
/// the first other heading has no section.
pub(super) fn section_label(path: &[String], title: &str) -> Option<String> {
    let skip = usize::from(path.first().is_some_and(|h| same_text(h, title)));
    let rest = &path[skip.min(path.len())..];
    (!rest.is_empty()).then(|| rest.join(" > "))
}

/// What the embedder sees before a chunk's text. The knowledge base already puts the chunk's
/// title (the page title, from the source) in front of the context, so the context is the
/// section alone; `"{title} > {section}"` would say the title twice.
pub(super) fn chunk_context(section: Option<&str>) -> Option<String> {
    section.map(str::to_string)
}

/// The page's chunks: each section chunked on its own (so no chunk spans two sections),
/// credentials redacted. Never empty: a page with no text gets one chunk holding its title,
/// so its node and edges still have evidence.
pub(super) fn page_chunks(page: &WikiPage, chunking: &ChunkingConfig) -> Vec<PreparedChunk> {
    let locator = |section: Option<String>| Locator::Page {
        page_id: page.id.clone(),
        version: page.version,
        section,
        uri: page.url.clone(),
    };
    let mut chunks = Vec::new();
    for section in sections(&page_text(&page.storage)) {
        let label = section_label(&section.path, &page.title);
        let clean = redact(&section.text).map(|(clean, _)| clean);
        let text = clean.unwrap_or(section.text);
        for piece in chunk_text(text.trim(), chunking) {
            let mut c = PreparedChunk::new(piece.text, locator(label.clone()));
            c.context = chunk_context(label.as_deref());
            chunks.push(c);
        }
    }
    if chunks.is_empty() {
        let title = if page.title.trim().is_empty() {
            format!("Confluence page {}", page.id)
        } else {
            page.title.clone()
        };
        chunks.push(PreparedChunk::new(title, locator(None)));
    }
    chunks
}
