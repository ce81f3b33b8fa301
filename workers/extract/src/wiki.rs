//! Confluence: REST responses (`/wiki/rest/api/content`, `/content/search`,
//! `/content/{id}/child/attachment`) as pages and attachments, and a page as a prepared source
//! with one chunk run per section (`{pageId, version, section, uri}` locators), its author,
//! the people it mentions, its parent, space, labels and the pages it links to.
//!
//! Pure functions: the poller does HTTP and pagination and calls these once per response body.
//!
//! Storage format becomes text through [`crate::xml::storage_to_text`]; this module only
//! prepares its input and reads its output:
//!
//! - heading start tags get a private-use mark (`U+E000`) right after them, so a heading line
//!   of the output (`## \u{E000}Deploy`) is told apart from text that merely starts with `#`
//!   (a shell comment in a code macro, "# of users" in a paragraph); the mark never reaches a
//!   chunk;
//! - a body-less link to a page or an attachment (`<ac:link><ri:page ri:content-title="X"/>
//!   </ac:link>`) gets its title as text, which `storage_to_text` would otherwise drop
//!   ("Read  before your first release");
//! - the lone `-` line that `storage_to_text` writes for Confluence's usual `<li><p>…</p></li>`
//!   is joined with its text again (`- text`).
//!
//! Identities: the last editor is a person keyed like everywhere else ([`keys::person`]: e-mail,
//! else display name, else account id) with the display name and the account id as aliases.
//! Mentions carry only an account id; they are keyed by it (`user:{accountId}`) and resolve to
//! the person through those aliases once the person has edited a page.

use std::sync::LazyLock;

use evident_core::chunking::{ChunkingConfig, chunk_text};
use evident_core::hashing::content_hash;
use evident_core::prepared::props;
use evident_core::secrets::redact;
use evident_core::{
    EvidenceSpec, Locator, NodeKey, PreparedChunk, PreparedEdge, PreparedNode, PreparedSource,
    Scope, keys, refs,
};
use regex::{Captures, Regex};
use serde_json::{Map, Value};

use crate::document::{DocumentMeta, Format};
use crate::tracker::opt;
use crate::xml::storage_to_text;

/// Bump when what a page becomes changes (re-ingests unchanged pages once).
pub const WIKI_VERSION: &str = "wiki-v1";

/// The chunk kind of attachments (the `kind` of their document sources).
pub const ATTACHMENT_KIND: &str = "wiki-attachment";

/// Put after every heading start tag before conversion (see the module docs). Private use:
/// it means nothing in real text, and any occurrence in the input is removed first.
const HEADING_MARK: char = '\u{E000}';

// ---------------------------------------------------------------------------------------------
// What the API returns

/// A Confluence user as `version.by` gives it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WikiPerson {
    /// `accountId` (Cloud), else `username` (Server and Data Center have no account ids).
    pub account_id: Option<String>,
    /// `displayName`, else `publicName`.
    pub name: Option<String>,
    /// Only when the site shows it (Cloud hides it unless the user allows it).
    pub email: Option<String>,
}

/// One page (or blog post) with the expansions the poller asks for
/// (`body.storage,version,ancestors,metadata.labels,space`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WikiPage {
    pub id: String,
    pub title: String,
    /// The space key (`space.key`, or the tail of `_expandable.space` when not expanded).
    pub space: Option<String>,
    pub version: u64,
    /// `version.when`, as given (RFC 3339).
    pub modified: Option<String>,
    /// `version.by`: who made this version.
    pub author: Option<WikiPerson>,
    /// `(id, title)`, root first as the API lists them; the last one is the parent.
    pub ancestors: Vec<(String, String)>,
    /// Names of the page's labels (personal `my:` labels left out: they are one reader's
    /// bookmarks, not what the page is about).
    pub labels: Vec<String>,
    /// `body.storage.value`.
    pub storage: String,
    /// `_links.base` + `_links.webui` (the webui link alone when the envelope has no base).
    pub url: Option<String>,
}

/// One attachment from `/content/{id}/child/attachment`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WikiAttachment {
    pub id: String,
    /// The file name.
    pub title: String,
    /// `metadata.mediaType`, else `extensions.mediaType`.
    pub media_type: Option<String>,
    /// `extensions.fileSize` in bytes.
    pub size: Option<u64>,
    pub version: Option<u64>,
    /// `version.when`, as given: when this file was uploaded.
    pub modified: Option<String>,
    /// `_links.download` as given (relative to the envelope's `_links.base`); see [`absolute`].
    pub download: Option<String>,
}

/// One page of a content listing or search.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ContentPage {
    pub pages: Vec<WikiPage>,
    /// `_links.next` as given (relative to `base`); `None` on the last page.
    pub next: Option<String>,
    /// `_links.base` (the site's `…/wiki`).
    pub base: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WikiError {
    /// Typically an HTML login, proxy or maintenance page served with status 200.
    #[error("the response is not JSON: {0}")]
    NotJson(String),
    /// JSON, but not the envelope or the expansions asked for.
    #[error("the response does not have the expected shape: {0}")]
    Shape(String),
}

fn parse_json(body: &[u8]) -> Result<Value, WikiError> {
    crate::tracker::parse_json(body).map_err(WikiError::NotJson)
}

/// The `results` array every v1 envelope has (empty when there is nothing).
fn results(v: &Value) -> Result<&Vec<Value>, WikiError> {
    v.get("results")
        .and_then(Value::as_array)
        .ok_or_else(|| WikiError::Shape("no `results` array".into()))
}

fn text_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// A non-empty, trimmed string field (the API sends `""` for "not shown").
fn owned_text(v: &Value, pointer: &str) -> Option<String> {
    text_at(v, pointer)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// Ids are strings in v1; a number is accepted too.
fn id_at(v: &Value, pointer: &str) -> Option<String> {
    match v.pointer(pointer)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn person(v: &Value) -> Option<WikiPerson> {
    let p = WikiPerson {
        account_id: owned_text(v, "/accountId").or_else(|| owned_text(v, "/username")),
        name: owned_text(v, "/displayName").or_else(|| owned_text(v, "/publicName")),
        email: owned_text(v, "/email"),
    };
    // An anonymous editor (`{"type": "anonymous"}`) is nobody.
    (p.account_id.is_some() || p.name.is_some() || p.email.is_some()).then_some(p)
}

fn space_of(v: &Value) -> Option<String> {
    owned_text(v, "/space/key").or_else(|| {
        text_at(v, "/_expandable/space")
            .and_then(|s| s.rsplit('/').next())
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    })
}

fn ancestors_of(v: &Value) -> Vec<(String, String)> {
    v.get("ancestors")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|a| {
                    Some((
                        id_at(a, "/id")?,
                        owned_text(a, "/title").unwrap_or_default(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn labels_of(v: &Value) -> Vec<String> {
    v.pointer("/metadata/labels/results")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter(|l| l.get("prefix").and_then(Value::as_str) != Some("my"))
                .filter_map(|l| owned_text(l, "/name"))
                .collect()
        })
        .unwrap_or_default()
}

/// One result of a content envelope. A missing expansion is an error, not an empty page: it
/// means the request was wrong, and an empty page would silently replace the real one.
fn page_of(v: &Value, base: Option<&str>, i: usize) -> Result<WikiPage, WikiError> {
    let missing = |what: &str| WikiError::Shape(format!("results[{i}] has no {what}"));
    Ok(WikiPage {
        id: id_at(v, "/id").ok_or_else(|| missing("id"))?,
        title: text_at(v, "/title")
            .ok_or_else(|| missing("title"))?
            .to_string(),
        space: space_of(v),
        version: v
            .pointer("/version/number")
            .and_then(Value::as_u64)
            .ok_or_else(|| missing("version.number (expand=version)"))?,
        modified: owned_text(v, "/version/when"),
        author: v.pointer("/version/by").and_then(person),
        ancestors: ancestors_of(v),
        labels: labels_of(v),
        storage: text_at(v, "/body/storage/value")
            .ok_or_else(|| missing("body.storage.value (expand=body.storage)"))?
            .to_string(),
        url: owned_text(v, "/_links/webui").map(|w| absolute(base, &w)),
    })
}

/// Whether a result is a page or blog post. Other content (attachments, comments, Cloud
/// whiteboards and databases, which have no storage body) can turn up in a search; skipping
/// them keeps one odd result from failing every later poll of that page of results.
fn is_page(v: &Value) -> bool {
    v.get("type")
        .and_then(Value::as_str)
        .is_none_or(|t| t == "page" || t == "blogpost")
}

/// A `/wiki/rest/api/content` or `/content/search` response. `/rest/api/search` results wrap
/// the content as `{"content": {…}}`; those are unwrapped.
pub fn content_page(body: &[u8]) -> Result<ContentPage, WikiError> {
    let v = parse_json(body)?;
    let base = owned_text(&v, "/_links/base");
    let mut pages = Vec::new();
    for (i, r) in results(&v)?.iter().enumerate() {
        let r = match r.get("content") {
            Some(c) if c.is_object() && r.get("id").is_none() => c,
            _ => r,
        };
        if is_page(r) {
            pages.push(page_of(r, base.as_deref(), i)?);
        }
    }
    Ok(ContentPage {
        pages,
        next: owned_text(&v, "/_links/next"),
        base,
    })
}

/// The page ids of a content listing requested without `expand` (the deletion check reads
/// only which pages still exist), with the listing's `next` and `base` links.
pub fn content_ids(body: &[u8]) -> Result<ContentIds, WikiError> {
    let v = parse_json(body)?;
    let mut ids = Vec::new();
    for (i, r) in results(&v)?.iter().enumerate() {
        if is_page(r) {
            ids.push(
                id_at(r, "/id")
                    .ok_or_else(|| WikiError::Shape(format!("results[{i}] has no id")))?,
            );
        }
    }
    Ok(ContentIds {
        ids,
        next: owned_text(&v, "/_links/next"),
        base: owned_text(&v, "/_links/base"),
    })
}

/// One page of an id-only content listing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ContentIds {
    pub ids: Vec<String>,
    pub next: Option<String>,
    pub base: Option<String>,
}

fn attachment_of(v: &Value, i: usize) -> Result<WikiAttachment, WikiError> {
    let missing = |what: &str| WikiError::Shape(format!("results[{i}] has no {what}"));
    Ok(WikiAttachment {
        id: id_at(v, "/id").ok_or_else(|| missing("id"))?,
        title: owned_text(v, "/title").ok_or_else(|| missing("title"))?,
        media_type: owned_text(v, "/metadata/mediaType")
            .or_else(|| owned_text(v, "/extensions/mediaType")),
        size: v.pointer("/extensions/fileSize").and_then(Value::as_u64),
        version: v.pointer("/version/number").and_then(Value::as_u64),
        modified: owned_text(v, "/version/when"),
        download: owned_text(v, "/_links/download"),
    })
}

/// A `/content/{id}/child/attachment` response: the attachments and `_links.next`.
pub fn attachments(body: &[u8]) -> Result<(Vec<WikiAttachment>, Option<String>), WikiError> {
    let v = parse_json(body)?;
    let list = results(&v)?
        .iter()
        .enumerate()
        .map(|(i, r)| attachment_of(r, i))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((list, owned_text(&v, "/_links/next")))
}

/// A CQL search for attachments (`type = attachment`, `expand=version,container`): each
/// attachment with the id of the page it belongs to (`container.id`), and `_links.next`.
/// Attachments of anything but a page (a blog post, another attachment) are left out.
pub fn attachment_hits(
    body: &[u8],
) -> Result<(Vec<(String, WikiAttachment)>, Option<String>), WikiError> {
    let v = parse_json(body)?;
    let mut hits = Vec::new();
    for (i, r) in results(&v)?.iter().enumerate() {
        let r = match r.get("content") {
            Some(c) if c.is_object() && r.get("id").is_none() => c,
            _ => r,
        };
        let page = r.get("container").filter(|c| {
            c.get("type")
                .and_then(Value::as_str)
                .is_none_or(|t| t == "page")
        });
        if let Some(page_id) = page.and_then(|c| id_at(c, "/id")) {
            hits.push((page_id, attachment_of(r, i)?));
        }
    }
    Ok((hits, owned_text(&v, "/_links/next")))
}

/// One page read by id (`/rest/api/content/{id}?expand=…`).
pub fn single_page(body: &[u8]) -> Result<WikiPage, WikiError> {
    let v = parse_json(body)?;
    page_of(&v, owned_text(&v, "/_links/base").as_deref(), 0)
}

/// A link as the API gives it (`/rest/api/content?…&start=2`, `/download/attachments/…`),
/// made absolute with the envelope's `_links.base`; absolute links and links without a base
/// are returned as they are.
pub fn absolute(base: Option<&str>, link: &str) -> String {
    if link.starts_with("http://") || link.starts_with("https://") {
        return link.to_string();
    }
    match base.filter(|b| !b.is_empty()) {
        Some(b) => format!(
            "{}/{}",
            b.trim_end_matches('/'),
            link.trim_start_matches('/')
        ),
        None => link.to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// Keys and URNs

/// `confluence:{id}`: the namespace refs in text (`page:…`, `wiki:…`) already normalise to.
pub fn page_key(page_id: &str) -> NodeKey {
    refs::normalize_ref(&format!("confluence:{page_id}"))
        .unwrap_or_else(|| NodeKey::from_canonical("confluence"))
}

pub fn page_urn(source_id: &str, page_id: &str) -> String {
    format!("wiki:{source_id}:{page_id}")
}

/// A page as storage-format links name it: by space and title. Every page registers this as
/// an alias of its [`page_key`], so links resolve to the page (and links written before the
/// page was seen fold into it when it is).
pub fn page_title_key(space: Option<&str>, title: &str) -> Option<NodeKey> {
    let raw = match space {
        Some(s) => format!("page_title:{s}/{title}"),
        None => format!("page_title:{title}"),
    };
    refs::normalize_ref(&raw).filter(|k| !k.value().is_empty())
}

pub fn space_key(space: &str) -> Option<NodeKey> {
    refs::normalize_ref(&format!("space:{space}")).filter(|k| !k.value().is_empty())
}

pub fn label_key(label: &str) -> Option<NodeKey> {
    refs::normalize_ref(&format!("label:confluence/{label}")).filter(|k| !k.value().is_empty())
}

/// `attachment:confluence/{page}/{attachment}` (the `confluence` part keeps these apart from
/// mail attachments, which are keyed by message id and part).
pub fn attachment_key(page_id: &str, attachment_id: &str) -> NodeKey {
    refs::normalize_ref(&format!("attachment:confluence/{page_id}/{attachment_id}"))
        .unwrap_or_else(|| NodeKey::from_canonical("attachment"))
}

pub fn attachment_urn(source_id: &str, page_id: &str, attachment_id: &str) -> String {
    format!("wiki:{source_id}:{page_id}:attachment:{attachment_id}")
}

/// The key of a user known only by account id (or Server username): the same key
/// [`keys::person_aliases`] makes of that handle, so it resolves once the person is known.
fn account_key(account_id: &str) -> Option<NodeKey> {
    keys::person(Some(account_id), None)
}

/// The editor's key: e-mail, else name (as every source keys people), else account id.
fn author_key(p: &WikiPerson) -> Option<NodeKey> {
    keys::person(p.name.as_deref(), p.email.as_deref())
        .or_else(|| p.account_id.as_deref().and_then(account_key))
}

// ---------------------------------------------------------------------------------------------
// Storage format → sectioned text

static HEADING_TAG: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"<h[1-6](?:\s[^>]*)?>").ok());

/// An `ac:link` whose only content is a page or attachment reference (no link body).
static BARE_LINK: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"<ac:link(?:\s[^>]*)?>\s*(<ri:(?:page|attachment)\s[^>]*/>)\s*</ac:link>").ok()
});

/// The attributes of one tag as written (`<ri:page ri:content-title="X" />` →
/// `[("ri:content-title", "X")]`), values still escaped. Stops at anything unexpected.
fn tag_attrs(tag: &str) -> Vec<(&str, &str)> {
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
fn local(name: &str) -> &str {
    name.rsplit(':').next().unwrap_or(name)
}

/// Every `<{name} …>` tag (start or empty) in raw storage format, as written.
fn tags<'a>(storage: &'a str, name: &str) -> Vec<&'a str> {
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
fn unescape(s: &str) -> String {
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

fn escape_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The text a body-less link shows in Confluence: the page title or the file name.
fn link_label(element: &str) -> String {
    tag_attrs(element)
        .into_iter()
        .find(|(k, _)| matches!(local(k), "content-title" | "filename"))
        .map(|(_, v)| escape_text(&unescape(v)))
        .unwrap_or_default()
}

/// Storage format prepared for `storage_to_text`: link titles as text, headings marked.
fn mark_storage(storage: &str) -> String {
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
fn heading_line(line: &str) -> Option<(usize, &str)> {
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
fn join_bullets(text: &str) -> String {
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
fn page_text(storage: &str) -> String {
    let marked = mark_storage(storage);
    let text = storage_to_text(&marked).unwrap_or_else(|_| crate::html::html_to_text(&marked).text);
    join_bullets(&text)
}

/// The text under one heading path (the heading line included), up to the next heading.
struct Section {
    /// Headings in force, outermost first.
    path: Vec<String>,
    text: String,
}

/// Cuts marked text at its heading lines; marks are removed from the result.
fn sections(text: &str) -> Vec<Section> {
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

fn same_text(a: &str, b: &str) -> bool {
    a.trim().to_lowercase() == b.trim().to_lowercase()
}

/// The section as locators name it: the heading path joined with ` > `. Pages usually open
/// with an `h1` that repeats their title; that heading is left out (every section would
/// otherwise start with the title, which the locator's page already says), so text before
/// the first other heading has no section.
fn section_label(path: &[String], title: &str) -> Option<String> {
    let skip = usize::from(path.first().is_some_and(|h| same_text(h, title)));
    let rest = &path[skip.min(path.len())..];
    (!rest.is_empty()).then(|| rest.join(" > "))
}

/// What the embedder sees before a chunk's text. The knowledge base already puts the chunk's
/// title (the page title, from the source) in front of the context, so the context is the
/// section alone; `"{title} > {section}"` would say the title twice.
fn chunk_context(section: Option<&str>) -> Option<String> {
    section.map(str::to_string)
}

/// The page's chunks: each section chunked on its own (so no chunk spans two sections),
/// credentials redacted. Never empty: a page with no text gets one chunk holding its title,
/// so its node and edges still have evidence.
fn page_chunks(page: &WikiPage, chunking: &ChunkingConfig) -> Vec<PreparedChunk> {
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

// ---------------------------------------------------------------------------------------------
// Mentions and links

/// A user mentioned in the storage, with the marker `storage_to_text` leaves for them
/// (`@{account-id}`) and the person key it stands for.
struct Mention {
    marker: String,
    key: NodeKey,
}

/// `<ri:user ri:account-id="…"/>` (or `ri:username`, Server) in order, once per person. The
/// editor's own account id maps to the editor's key directly.
fn mentions(storage: &str, author: Option<&(NodeKey, &WikiPerson)>) -> Vec<Mention> {
    let mut out: Vec<Mention> = Vec::new();
    for tag in tags(storage, "ri:user") {
        let attrs = tag_attrs(tag);
        let Some((_, raw)) = attrs
            .iter()
            .find(|(k, _)| matches!(local(k), "account-id" | "username"))
        else {
            continue;
        };
        let id = unescape(raw);
        let id = id.trim();
        if id.is_empty() {
            continue;
        }
        let key = match author {
            Some((k, p)) if p.account_id.as_deref() == Some(id) => Some(k.clone()),
            _ => account_key(id),
        };
        if let Some(key) = key
            && out.iter().all(|m| m.key != key)
        {
            out.push(Mention {
                marker: format!("@{raw}"),
                key,
            });
        }
    }
    out
}

/// Whether `text` holds `marker` as a whole word (`@jan` is not in `@jane`).
fn has_marker(text: &str, marker: &str) -> bool {
    text.match_indices(marker).any(|(at, _)| {
        text[at + marker.len()..]
            .chars()
            .next()
            .is_none_or(char::is_whitespace)
    })
}

/// A link to another page: storage format names the target by title (and space key when it
/// is in another space), never by id.
struct PageLink {
    key: NodeKey,
    title: String,
}

fn page_links(storage: &str, space: Option<&str>) -> Vec<PageLink> {
    let mut out: Vec<PageLink> = Vec::new();
    for tag in tags(storage, "ri:page") {
        let attrs = tag_attrs(tag);
        let get = |name: &str| {
            attrs
                .iter()
                .find(|(k, _)| local(k) == name)
                .map(|(_, v)| unescape(v).trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let Some(title) = get("content-title") else {
            continue;
        };
        let space = get("space-key").or_else(|| space.map(str::to_string));
        if let Some(key) = page_title_key(space.as_deref(), &title)
            && out.iter().all(|l| l.key != key)
        {
            out.push(PageLink { key, title });
        }
    }
    out
}

/// Indexes of the chunks that satisfy `hit`; the first chunk when none does (the page still
/// says it, e.g. on a line that was redacted).
fn chunks_where(chunks: &[PreparedChunk], hit: impl Fn(&PreparedChunk) -> bool) -> Vec<usize> {
    let found: Vec<usize> = chunks
        .iter()
        .enumerate()
        .filter(|(_, c)| hit(c))
        .map(|(i, _)| i)
        .collect();
    if found.is_empty() { vec![0] } else { found }
}

fn push_unique(list: &mut Vec<NodeKey>, key: NodeKey) {
    if !list.contains(&key) {
        list.push(key);
    }
}

// ---------------------------------------------------------------------------------------------
// A page as a prepared source

/// Where pages come from.
pub struct WikiContext<'a> {
    pub scope: &'a Scope,
    /// The registered source's id (URNs: `wiki:{source}:{page}`).
    pub source_id: &'a str,
    pub chunking: &'a ChunkingConfig,
}

/// Everything that shapes what a page becomes (the storage, not the text: a converter change
/// bumps [`WIKI_VERSION`]).
fn fingerprint(page: &WikiPage, chunking: &ChunkingConfig) -> String {
    content_hash(&format!(
        "{WIKI_VERSION}\0{}\0{}\0{}\0{:?}\0{:?}\0{:?}\0{:?}\0{:?}\0{:?}\0{}/{}\0{}",
        page.id,
        page.version,
        page.title,
        page.space,
        page.modified,
        page.author,
        page.ancestors,
        page.labels,
        page.url,
        chunking.max_tokens,
        chunking.min_tokens,
        page.storage
    ))
}

fn page_node(page: &WikiPage, key: &NodeKey) -> PreparedNode {
    PreparedNode {
        key: key.clone(),
        node_type: "page".into(),
        label: page.title.clone(),
        props: props([
            ("id", page.id.clone().into()),
            ("title", page.title.clone().into()),
            ("space", opt(&page.space)),
            ("version", page.version.into()),
            ("modified", opt(&page.modified)),
            ("url", opt(&page.url)),
            (
                "labels",
                if page.labels.is_empty() {
                    Value::Null
                } else {
                    Value::from(page.labels.clone())
                },
            ),
        ]),
        evidence: EvidenceSpec::AllChunks,
    }
}

fn person_node(key: &NodeKey, p: &WikiPerson, evidence: Vec<usize>) -> PreparedNode {
    PreparedNode {
        key: key.clone(),
        node_type: "person".into(),
        label: p
            .name
            .clone()
            .or_else(|| p.email.clone())
            .or_else(|| p.account_id.clone())
            .unwrap_or_default(),
        props: props([
            ("name", opt(&p.name)),
            (
                "email",
                p.email
                    .as_ref()
                    .map(|e| Value::from(e.to_lowercase()))
                    .unwrap_or(Value::Null),
            ),
            ("accountId", opt(&p.account_id)),
        ]),
        evidence: EvidenceSpec::Chunks(evidence),
    }
}

/// A page as a prepared source: chunks per section; the page node; its last editor as a
/// person (`authored_by`, with aliases so the display name and account id resolve to them);
/// `mentions` edges to mentioned users, evidenced by the chunks that mention them;
/// `child_of` its parent, `in_space` its space, `labeled` its labels, `links_to` the pages it
/// links to (by title key, see [`page_title_key`]).
///
/// Mentioned users other than the editor get no typed node, only refs and edges: all the page
/// knows of them is an account id, and a typed node would set the person's label to that id
/// every time a page mentioning them is written (a source's own nodes overwrite label and
/// type after alias resolution).
pub fn page_source(page: &WikiPage, ctx: &WikiContext<'_>) -> PreparedSource {
    let key = page_key(&page.id);
    let author = page.author.as_ref().and_then(|p| Some((author_key(p)?, p)));
    let mentioned = mentions(&page.storage, author.as_ref());
    let links = page_links(&page.storage, page.space.as_deref());

    let mut chunks = page_chunks(page, ctx.chunking);
    for c in &mut chunks {
        let mut found = vec![key.clone()];
        for m in mentioned.iter().filter(|m| has_marker(&c.text, &m.marker)) {
            push_unique(&mut found, m.key.clone());
        }
        for r in refs::extract_refs(&c.text) {
            push_unique(&mut found, r.key);
        }
        c.refs = found;
    }

    let mut nodes = vec![page_node(page, &key)];
    let mut edges = Vec::new();
    let mut aliases = Vec::new();
    let mut edge = |to: NodeKey, edge_type: &str, evidence: EvidenceSpec| {
        edges.push(PreparedEdge {
            from: key.clone(),
            to,
            edge_type: edge_type.into(),
            props: Map::new(),
            evidence,
        });
    };

    if let Some((parent, _)) = page.ancestors.last() {
        edge(page_key(parent), "child_of", EvidenceSpec::chunk(0));
    }
    if let Some(space) = page.space.as_deref()
        && let Some(space_node) = space_key(space)
    {
        nodes.push(PreparedNode {
            key: space_node.clone(),
            node_type: "space".into(),
            label: space.to_string(),
            props: props([("key", space.into())]),
            evidence: EvidenceSpec::chunk(0),
        });
        edge(space_node, "in_space", EvidenceSpec::chunk(0));
    }
    if let Some((person, p)) = &author {
        let mut evidence = vec![0];
        for m in mentioned.iter().filter(|m| m.key == *person) {
            for i in chunks_where(&chunks, |c| has_marker(&c.text, &m.marker)) {
                if !evidence.contains(&i) {
                    evidence.push(i);
                }
            }
        }
        evidence.sort_unstable();
        nodes.push(person_node(person, p, evidence));
        let handles: Vec<&str> = p.account_id.as_deref().into_iter().collect();
        aliases.extend(keys::person_aliases(person, p.name.as_deref(), &handles));
        edge(person.clone(), "authored_by", EvidenceSpec::chunk(0));
    }
    for m in &mentioned {
        let at = chunks_where(&chunks, |c| has_marker(&c.text, &m.marker));
        edge(m.key.clone(), "mentions", EvidenceSpec::Chunks(at));
    }
    for l in &links {
        let at = chunks_where(&chunks, |c| c.text.contains(&l.title));
        edge(l.key.clone(), "links_to", EvidenceSpec::Chunks(at));
    }
    for name in &page.labels {
        if let Some(label) = label_key(name) {
            nodes.push(PreparedNode {
                key: label.clone(),
                node_type: "label".into(),
                label: name.clone(),
                props: props([("name", name.clone().into())]),
                evidence: EvidenceSpec::chunk(0),
            });
            edge(label, "labeled", EvidenceSpec::chunk(0));
        }
    }
    if let Some(by_title) = page_title_key(page.space.as_deref(), &page.title) {
        aliases.push((by_title, key.clone()));
    }

    PreparedSource {
        scope: ctx.scope.clone(),
        source_urn: page_urn(ctx.source_id, &page.id),
        kind: "wiki".into(),
        title: Some(page.title.clone()),
        fingerprint: fingerprint(page, ctx.chunking),
        observed_at: page.modified.clone(),
        chunks,
        nodes,
        edges,
        aliases,
    }
}

// ---------------------------------------------------------------------------------------------
// Attachments

/// `page -has_attachment-> attachment`, evidenced by the page's first chunk. The attachment's
/// node is described by its own (document) source.
pub fn attachment_edge(page: &WikiPage, att: &WikiAttachment) -> PreparedEdge {
    PreparedEdge {
        from: page_key(&page.id),
        to: attachment_key(&page.id, &att.id),
        edge_type: "has_attachment".into(),
        props: Map::new(),
        evidence: EvidenceSpec::chunk(0),
    }
}

/// Adds the `has_attachment` edges to a page's source and folds the attachment ids into its
/// fingerprint. Uploading or deleting an attachment does not give the page a new version, so
/// without this the page source would be skipped as unchanged and the edge never written.
/// No attachments: the source is left as it is.
pub fn add_attachments(src: &mut PreparedSource, page: &WikiPage, atts: &[WikiAttachment]) {
    if atts.is_empty() {
        return;
    }
    src.edges
        .extend(atts.iter().map(|a| attachment_edge(page, a)));
    let ids: Vec<&str> = atts.iter().map(|a| a.id.as_str()).collect();
    src.fingerprint = content_hash(&format!(
        "{}\0attachments\0{}",
        src.fingerprint,
        ids.join("\0")
    ));
}

/// What an attachment's document source needs, owned (the poller queues it; a worker extracts
/// the downloaded bytes and calls [`AttachmentMeta::meta`] for `document_source`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachmentMeta {
    /// `wiki:{source}:{page}:attachment:{attachment}`.
    pub source_urn: String,
    /// The absolute download URL (what citations name).
    pub uri: String,
    pub title: String,
    /// When the file was uploaded, else when the page was last edited.
    pub observed_at: Option<String>,
    /// [`attachment_key`]: what the page's `has_attachment` edge points at.
    pub node: NodeKey,
    /// By media type, else by file name; `None` when Evident does not read the type.
    pub format: Option<Format>,
}

impl AttachmentMeta {
    pub fn meta<'a>(&'a self, scope: &'a Scope) -> DocumentMeta<'a> {
        DocumentMeta {
            scope,
            source_urn: &self.source_urn,
            uri: &self.uri,
            kind: ATTACHMENT_KIND,
            title: Some(&self.title),
            observed_at: self.observed_at.as_deref(),
            node: Some(self.node.clone()),
        }
    }
}

/// The document metadata of a page's attachment; `base` is the envelope's `_links.base`.
pub fn attachment_meta(
    source_id: &str,
    page: &WikiPage,
    att: &WikiAttachment,
    base: Option<&str>,
) -> AttachmentMeta {
    let source_urn = attachment_urn(source_id, &page.id, &att.id);
    let uri = att
        .download
        .as_deref()
        .map(|d| absolute(base, d))
        .unwrap_or_else(|| source_urn.clone());
    AttachmentMeta {
        uri,
        title: att.title.clone(),
        observed_at: att.modified.clone().or_else(|| page.modified.clone()),
        node: attachment_key(&page.id, &att.id),
        format: att
            .media_type
            .as_deref()
            .and_then(Format::from_mime)
            .or_else(|| Format::from_name(&att.title)),
        source_urn,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::{document_source, extract};
    use proptest::prelude::*;

    const PAGED: &str =
        include_str!("../../indexers/tests/fixtures/rest/confluence-pages-paged.json");
    const INCREMENTAL: &str =
        include_str!("../../indexers/tests/fixtures/rest/confluence-incremental.json");
    const HTML_PAGE: &str =
        include_str!("../../indexers/tests/fixtures/rest/github-html-instead-of-json.json");

    const LIST: &str = "/wiki/rest/api/content";
    const SEARCH: &str = "/wiki/rest/api/content/search";
    const JAN_ACCOUNT: &str = "712020:9b0c3d4e-1f2a-4b5c-8d6e-7f8091a2b3c4";
    const GRACE_ACCOUNT: &str = "712020:2e7d1c55-8a90-4f3b-b1c2-d3e4f5a6b7c8";

    /// The response body of the first exchange with this request path whose query has these
    /// parameters (JSON bodies re-serialised, string bodies as they are).
    fn body(fixture: &str, path: &str, query: &[(&str, &str)]) -> Vec<u8> {
        let exchanges: Vec<Value> = serde_json::from_str(fixture).expect("fixture is JSON");
        let hit = exchanges
            .iter()
            .find(|x| {
                x["request"]["path"] == path
                    && query.iter().all(|(k, v)| x["request"]["query"][*k] == *v)
            })
            .expect("recorded exchange");
        match &hit["response"]["body"] {
            Value::String(s) => s.clone().into_bytes(),
            other => serde_json::to_vec(other).expect("body"),
        }
    }

    fn pages(fixture: &str, path: &str, query: &[(&str, &str)]) -> ContentPage {
        content_page(&body(fixture, path, query)).expect("content page")
    }

    fn find<'a>(list: &'a ContentPage, id: &str) -> &'a WikiPage {
        list.pages.iter().find(|p| p.id == id).expect("page")
    }

    fn source(page: &WikiPage) -> PreparedSource {
        let scope = Scope::client("acme");
        let chunking = ChunkingConfig::default();
        page_source(
            page,
            &WikiContext {
                scope: &scope,
                source_id: "acme-wiki",
                chunking: &chunking,
            },
        )
    }

    /// `(type, to, evidence)` of every edge; all of them start at the page.
    fn edges_of(src: &PreparedSource) -> Vec<(&str, &str, &EvidenceSpec)> {
        let page = match &src.chunks[0].locator {
            Locator::Page { page_id, .. } => page_key(page_id),
            other => panic!("{other:?}"),
        };
        assert!(src.edges.iter().all(|e| e.from == page), "{:#?}", src.edges);
        src.edges
            .iter()
            .map(|e| (e.edge_type.as_str(), e.to.as_str(), &e.evidence))
            .collect()
    }

    fn section_of(c: &PreparedChunk) -> Option<&str> {
        match &c.locator {
            Locator::Page { section, .. } => section.as_deref(),
            other => panic!("{other:?}"),
        }
    }

    /// The chunk holding `needle` (exactly one must).
    fn chunk_with(src: &PreparedSource, needle: &str) -> usize {
        let hits: Vec<usize> = (0..src.chunks.len())
            .filter(|i| src.chunks[*i].text.contains(needle))
            .collect();
        assert_eq!(hits.len(), 1, "{needle:?} in {:#?}", src.chunks);
        hits[0]
    }

    /// Section labels in chunk order, consecutive repeats collapsed (a long section may take
    /// several chunks).
    fn section_run(src: &PreparedSource) -> Vec<Option<&str>> {
        let mut out: Vec<Option<&str>> = Vec::new();
        for c in &src.chunks {
            let s = section_of(c);
            if out.last() != Some(&s) {
                out.push(s);
            }
        }
        out
    }

    #[test]
    fn content_pages_parse_and_follow_next_links() {
        let first = pages(PAGED, LIST, &[("start", "0")]);
        let got: Vec<(&str, &str, u64)> = first
            .pages
            .iter()
            .map(|p| (p.id.as_str(), p.title.as_str(), p.version))
            .collect();
        assert_eq!(
            got,
            vec![
                ("65538", "Engineering Handbook", 3),
                ("65541", "Deploying the shop", 4)
            ]
        );
        let next = "/rest/api/content?spaceKey=ENG&type=page&expand=body.storage,version,ancestors,metadata.labels,space&limit=2&start=2";
        assert_eq!(first.next.as_deref(), Some(next));
        assert_eq!(first.base.as_deref(), Some("{BASE}/wiki"));
        assert_eq!(
            absolute(first.base.as_deref(), next),
            format!("{{BASE}}/wiki{next}")
        );

        let handbook = find(&first, "65538");
        assert!(handbook.ancestors.is_empty());
        assert_eq!(handbook.labels, vec!["handbook"]);
        let deploy = find(&first, "65541");
        assert_eq!(deploy.space.as_deref(), Some("ENG"));
        assert_eq!(
            deploy.ancestors,
            vec![("65538".to_string(), "Engineering Handbook".to_string())]
        );
        assert_eq!(deploy.labels, vec!["deploy", "runbook"]);
        assert_eq!(deploy.modified.as_deref(), Some("2026-01-12T14:30:45.019Z"));
        assert_eq!(
            deploy.author,
            Some(WikiPerson {
                account_id: Some(JAN_ACCOUNT.into()),
                name: Some("Jan Novák".into()),
                email: Some("jan.novak@example.com".into()),
            })
        );
        assert_eq!(
            deploy.url.as_deref(),
            Some("{BASE}/wiki/spaces/ENG/pages/65541/Deploying+the+shop")
        );
        assert!(deploy.storage.starts_with("<h1>Deploying the shop</h1>"));

        let second = pages(PAGED, LIST, &[("start", "2")]);
        let got: Vec<(&str, &str, u64)> = second
            .pages
            .iter()
            .map(|p| (p.id.as_str(), p.title.as_str(), p.version))
            .collect();
        assert_eq!(got, vec![("65544", "On-call rota", 2)]);
        assert_eq!(second.next, None, "the last page has only a prev link");
        assert_eq!(find(&second, "65544").labels, vec!["oncall"]);
    }

    #[test]
    fn search_results_parse_like_listings() {
        let found = pages(INCREMENTAL, SEARCH, &[("limit", "2")]);
        let got: Vec<(&str, u64, Option<&str>)> = found
            .pages
            .iter()
            .map(|p| (p.id.as_str(), p.version, p.modified.as_deref()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("65544", 2, Some("2026-01-16T08:15:27.650Z")),
                ("65541", 5, Some("2026-01-21T11:05:03.772Z")),
            ]
        );
        // Two results with limit 2, yet no next link: the envelope, not the count, ends paging.
        assert_eq!(found.next, None);
        let deploy = find(&found, "65541");
        assert_eq!(
            deploy.author.as_ref().and_then(|a| a.name.as_deref()),
            Some("Grace Hopper")
        );
        // The unchanged rota comes back identical, so its source is skipped as unchanged.
        let paged = pages(PAGED, LIST, &[("start", "2")]);
        assert_eq!(find(&paged, "65544"), find(&found, "65544"));
        assert_eq!(
            source(find(&paged, "65544")).fingerprint,
            source(find(&found, "65544")).fingerprint
        );
        let v4 = pages(PAGED, LIST, &[("start", "0")]);
        assert_ne!(
            source(find(&v4, "65541")).fingerprint,
            source(deploy).fingerprint
        );
    }

    #[test]
    fn a_page_is_cut_at_its_headings_and_keeps_its_code() {
        let list = pages(PAGED, LIST, &[("start", "0")]);
        let src = source(find(&list, "65541"));
        assert_eq!(src.source_urn, "wiki:acme-wiki:65541");
        assert_eq!(src.kind, "wiki");
        assert_eq!(src.title.as_deref(), Some("Deploying the shop"));
        assert_eq!(src.observed_at.as_deref(), Some("2026-01-12T14:30:45.019Z"));
        assert_eq!(
            section_run(&src),
            vec![
                None,
                Some("Before you deploy"),
                Some("Deploy"),
                Some("Rollback")
            ]
        );
        for c in &src.chunks {
            match &c.locator {
                Locator::Page {
                    page_id,
                    version,
                    uri,
                    section,
                } => {
                    assert_eq!((page_id.as_str(), *version), ("65541", 4));
                    assert_eq!(
                        uri.as_deref(),
                        Some("{BASE}/wiki/spaces/ENG/pages/65541/Deploying+the+shop")
                    );
                    assert_eq!(&c.context, section, "context is the section");
                }
                other => panic!("{other:?}"),
            }
            assert!(!c.text.contains(HEADING_MARK));
            assert_eq!(c.refs[0], page_key("65541"));
        }
        let intro = chunk_with(&src, "Production deploys run from the main branch");
        assert!(src.chunks[intro].text.starts_with("# Deploying the shop"));
        assert_eq!(section_of(&src.chunks[intro]), None);

        let code = chunk_with(&src, "git fetch --tags origin");
        assert_eq!(section_of(&src.chunks[code]), Some("Deploy"));
        let text = &src.chunks[code].text;
        assert!(text.starts_with("## Deploy"), "{text}");
        assert!(
            text.contains("./scripts/deploy.sh --env production --tag \"$RELEASE_TAG\" && ./scripts/smoke.sh --env production"),
            "{text}"
        );
        assert!(
            !text.contains("bash") && !text.contains("Release from main"),
            "macro parameters are not content: {text}"
        );

        // `<li><p>…</p></li>` items keep their bullet on their own line.
        let item = chunk_with(
            &src,
            "\n- The main pipeline is green, including the checkout",
        );
        assert_eq!(section_of(&src.chunks[item]), Some("Before you deploy"));
        // The body-less attachment link keeps the file name as its text.
        let rollback = chunk_with(&src, "Follow the checklist in runbook.txt. Rolling back");
        assert_eq!(section_of(&src.chunks[rollback]), Some("Rollback"));
    }

    #[test]
    fn a_page_names_its_parent_space_labels_and_editor() {
        let list = pages(PAGED, LIST, &[("start", "0")]);
        let src = source(find(&list, "65541"));
        let jan = "user:jan_novak_example_com";
        let code = chunk_with(&src, "git fetch --tags origin");
        let edges = edges_of(&src);
        let one = EvidenceSpec::chunk(0);
        for expected in [
            ("child_of", "confluence:65538", &one),
            ("in_space", "space:eng", &one),
            ("authored_by", jan, &one),
            ("labeled", "label:confluence_deploy", &one),
            ("labeled", "label:confluence_runbook", &one),
        ] {
            assert!(edges.contains(&expected), "{expected:?} in {edges:?}");
        }
        // The release owner mentioned in the Deploy section is the editor himself.
        let at_code = EvidenceSpec::chunk(code);
        assert!(edges.contains(&("mentions", jan, &at_code)), "{edges:?}");
        assert!(
            src.chunks[code]
                .refs
                .contains(&NodeKey::from_canonical(jan))
        );
        assert!(
            src.chunks[code]
                .text
                .contains(&format!("page the release owner, @{JAN_ACCOUNT}"))
        );
        assert!(!edges.iter().any(|(t, _, _)| *t == "links_to"));

        let node = |key: &str| {
            src.nodes
                .iter()
                .find(|n| n.key.as_str() == key)
                .unwrap_or_else(|| panic!("node {key} in {:#?}", src.nodes))
        };
        let page = node("confluence:65541");
        assert_eq!(page.node_type, "page");
        assert_eq!(page.label, "Deploying the shop");
        assert_eq!(page.evidence, EvidenceSpec::AllChunks);
        assert_eq!(page.props["version"], 4);
        assert_eq!(page.props["space"], "ENG");
        assert_eq!(
            page.props["labels"],
            serde_json::json!(["deploy", "runbook"])
        );
        assert_eq!(page.props["modified"], "2026-01-12T14:30:45.019Z");
        let person = node(jan);
        assert_eq!(person.node_type, "person");
        assert_eq!(person.label, "Jan Novák");
        assert_eq!(person.props["accountId"], JAN_ACCOUNT);
        assert_eq!(person.evidence, EvidenceSpec::Chunks(vec![0, code]));
        assert_eq!(node("space:eng").node_type, "space");
        assert_eq!(node("label:confluence_runbook").label, "runbook");

        let aliases: Vec<(&str, &str)> = src
            .aliases
            .iter()
            .map(|(a, c)| (a.as_str(), c.as_str()))
            .collect();
        assert_eq!(
            aliases,
            vec![
                ("user:jan_novák", jan),
                ("user:7120209b0c3d4e-1f2a-4b5c-8d6e-7f8091a2b3c4", jan),
                ("page_title:eng_deploying_the_shop", "confluence:65541"),
            ]
        );
    }

    #[test]
    fn links_to_other_pages_go_by_title_and_mentions_by_account() {
        let list = pages(PAGED, LIST, &[("start", "0")]);
        let src = source(find(&list, "65538"));
        assert_eq!(
            section_run(&src),
            vec![None, Some("Principles"), Some("Where to start")]
        );
        let start = chunk_with(
            &src,
            "Read Deploying the shop before your first release and check the On-call rota to see when you are on call.",
        );
        assert_eq!(section_of(&src.chunks[start]), Some("Where to start"));
        let edges = edges_of(&src);
        let at_start = EvidenceSpec::chunk(start);
        assert!(edges.contains(&("links_to", "page_title:eng_deploying_the_shop", &at_start)));
        assert!(edges.contains(&("links_to", "page_title:eng_on-call_rota", &at_start)));
        assert!(
            !edges.iter().any(|(t, _, _)| *t == "child_of"),
            "a root page"
        );
        // The maintainer mentioned in the intro is the editor (Grace).
        let intro = chunk_with(&src, "maintained by");
        assert_eq!(intro, 0);
        assert!(
            src.chunks[0]
                .text
                .contains(&format!("maintained by @{GRACE_ACCOUNT}"))
        );
        assert!(edges.contains(&(
            "mentions",
            "user:grace_example_com",
            &EvidenceSpec::chunk(0)
        )));

        // The rota (edited by Ada) mentions Jan and Grace by account id only.
        let rota_list = pages(INCREMENTAL, SEARCH, &[("limit", "2")]);
        let rota = source(find(&rota_list, "65544"));
        let january = chunk_with(
            &rota,
            "Week 2: @712020:9b0c3d4e-1f2a-4b5c-8d6e-7f8091a2b3c4",
        );
        assert_eq!(section_of(&rota.chunks[january]), Some("January 2026"));
        assert!(rota.chunks[january].text.contains("\n- Week 3: @"));
        let mentioned: Vec<(&str, &EvidenceSpec)> = rota
            .edges
            .iter()
            .filter(|e| e.edge_type == "mentions")
            .map(|e| (e.to.as_str(), &e.evidence))
            .collect();
        let at_january = EvidenceSpec::chunk(january);
        assert_eq!(
            mentioned,
            vec![
                (
                    "user:7120209b0c3d4e-1f2a-4b5c-8d6e-7f8091a2b3c4",
                    &at_january
                ),
                ("user:ada_example_com", &at_january),
                (
                    "user:7120202e7d1c55-8a90-4f3b-b1c2-d3e4f5a6b7c8",
                    &at_january
                ),
            ]
        );
        let people: Vec<&str> = rota
            .nodes
            .iter()
            .filter(|n| n.node_type == "person")
            .map(|n| n.key.as_str())
            .collect();
        assert_eq!(
            people,
            vec!["user:ada_example_com"],
            "only the editor is described"
        );
        // Grace's account id resolves to her once one of her pages is written.
        let grace_v5 = source(find(&rota_list, "65541"));
        assert!(grace_v5.aliases.contains(&(
            NodeKey::from_canonical("user:7120202e7d1c55-8a90-4f3b-b1c2-d3e4f5a6b7c8"),
            NodeKey::from_canonical("user:grace_example_com")
        )));
    }

    #[test]
    fn attachments_parse_and_become_documents() {
        let (none, next) = attachments(&body(
            PAGED,
            "/wiki/rest/api/content/65538/child/attachment",
            &[],
        ))
        .expect("empty list");
        assert!(none.is_empty() && next.is_none());
        let (list, next) = attachments(&body(
            PAGED,
            "/wiki/rest/api/content/65541/child/attachment",
            &[],
        ))
        .expect("list");
        assert_eq!(next, None);
        assert_eq!(
            list,
            vec![WikiAttachment {
                id: "att65601".into(),
                title: "runbook.txt".into(),
                media_type: Some("text/plain".into()),
                size: Some(422),
                version: Some(1),
                modified: Some("2026-01-12T14:28:03.441Z".into()),
                download: Some(
                    "/download/attachments/65541/runbook.txt?version=1&modificationDate=1768228083441&cacheVersion=1&api=v2"
                        .into()
                ),
            }]
        );

        let listing = pages(PAGED, LIST, &[("start", "0")]);
        let page = find(&listing, "65541");
        let meta = attachment_meta("acme-wiki", page, &list[0], listing.base.as_deref());
        assert_eq!(meta.source_urn, "wiki:acme-wiki:65541:attachment:att65601");
        assert_eq!(
            meta.uri,
            "{BASE}/wiki/download/attachments/65541/runbook.txt?version=1&modificationDate=1768228083441&cacheVersion=1&api=v2"
        );
        assert_eq!(meta.node.as_str(), "attachment:confluence_65541_att65601");
        assert_eq!(meta.format, Some(Format::Text));
        assert_eq!(
            meta.observed_at.as_deref(),
            Some("2026-01-12T14:28:03.441Z")
        );

        let bytes = body(PAGED, "/wiki/download/attachments/65541/runbook.txt", &[]);
        let doc = extract(Format::Text, &bytes).expect("text");
        let scope = Scope::client("acme");
        let att = document_source(&meta.meta(&scope), &doc, &ChunkingConfig::default())
            .expect("document");
        assert_eq!(att.kind, ATTACHMENT_KIND);
        assert_eq!(att.title.as_deref(), Some("runbook.txt"));
        assert_eq!(att.nodes[0].key, meta.node);
        assert!(
            att.chunks[0]
                .text
                .contains("ROLLBACK CHECKLIST - ACME shop")
        );

        let mut src = source(page);
        let before = src.fingerprint.clone();
        add_attachments(&mut src, page, &[]);
        assert_eq!(src.fingerprint, before, "no attachments, no change");
        add_attachments(&mut src, page, &list);
        assert_ne!(
            src.fingerprint, before,
            "a new attachment re-writes the page"
        );
        let edge = src.edges.last().expect("edge");
        assert_eq!(edge, &attachment_edge(page, &list[0]));
        assert_eq!(
            (edge.edge_type.as_str(), edge.to.as_str()),
            ("has_attachment", "attachment:confluence_65541_att65601")
        );
    }

    #[test]
    fn html_instead_of_json_and_wrong_shapes_are_errors() {
        let html = body(HTML_PAGE, "/repos/acme/shop/issues", &[]);
        match content_page(&html) {
            Err(WikiError::NotJson(why)) => assert!(why.contains("<!DOCTYPE html>"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(attachments(&html), Err(WikiError::NotJson(_))));
        assert!(matches!(content_page(b"[]"), Err(WikiError::Shape(_))));
        match content_page(br#"{"results": [{"id": "1", "title": "T", "version": {"number": 2}}]}"#)
        {
            Err(WikiError::Shape(why)) => assert!(why.contains("body.storage"), "{why}"),
            other => panic!("{other:?}"),
        }
        // Non-page results of a search are skipped, not errors.
        let mixed =
            br#"{"results": [{"id": "9", "type": "attachment", "title": "a.png"}], "_links": {}}"#;
        assert_eq!(content_page(mixed).expect("skipped").pages, Vec::new());
    }

    #[test]
    fn hash_lines_in_code_and_text_are_not_headings() {
        let page = WikiPage {
            id: "7".into(),
            title: "Setup guide".into(),
            version: 1,
            storage: r#"<h1>Setup</h1><ac:structured-macro ac:name="code"><ac:plain-text-body><![CDATA[# install deps
make deps]]></ac:plain-text-body></ac:structured-macro><h2>Usage</h2><p># of users is 3</p><h2></h2>"#
                .into(),
            ..WikiPage::default()
        };
        let src = source(&page);
        assert_eq!(
            section_run(&src),
            vec![Some("Setup"), Some("Setup > Usage")]
        );
        let code = chunk_with(&src, "# install deps\nmake deps");
        assert_eq!(section_of(&src.chunks[code]), Some("Setup"));
        let text = chunk_with(&src, "# of users is 3");
        assert_eq!(section_of(&src.chunks[text]), Some("Setup > Usage"));
    }

    #[test]
    fn an_empty_page_still_has_one_chunk_for_its_evidence() {
        let page = WikiPage {
            id: "8".into(),
            title: "Blank".into(),
            version: 1,
            space: Some("ENG".into()),
            ancestors: vec![("7".into(), "Setup guide".into())],
            ..WikiPage::default()
        };
        let src = source(&page);
        assert_eq!(src.chunks.len(), 1);
        assert_eq!(src.chunks[0].text, "Blank");
        assert!(edges_of(&src).contains(&("child_of", "confluence:7", &EvidenceSpec::chunk(0))));
    }

    /// Storage-format-like text: the pieces this module and xml.rs look at, in any order.
    fn storage_like() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            proptest::sample::select(vec![
                "<h1>",
                "</h1>",
                "<h2 class=\"x\">",
                "</h2>",
                "<h3/>",
                "<p>",
                "</p>",
                "<ul><li>",
                "</li></ul>",
                "<ac:link>",
                "</ac:link>",
                "<ri:page ri:content-title=\"A &amp; B\" />",
                "<ri:page ri:space-key='X' ri:content-title=\"",
                "<ri:attachment ri:filename=\"f<\" />",
                "<ri:user ri:account-id=\"",
                "<ri:user ri:username='u' />",
                "\" />",
                "\"",
                "@",
                "# ",
                "-",
                "\n",
                " ",
                "&amp;",
                "&bogus;",
                "&#x1F600;",
                "<![CDATA[",
                "]]>",
                "<ac:parameter>",
                "</ac:parameter>",
                "\u{E000}",
                "word",
                "Ž",
                "password = hunter2-secret-9",
            ]),
            0..40,
        )
        .prop_map(|parts| parts.concat())
    }

    proptest! {
        #[test]
        fn never_panics(
            bytes in proptest::collection::vec(any::<u8>(), 0..400),
            s in "(?s).{0,200}",
            storage in storage_like(),
        ) {
            let _ = content_page(&bytes);
            let _ = attachments(&bytes);
            let envelope = serde_json::json!({
                "results": [{
                    "id": s, "title": s, "space": {"key": s},
                    "version": {"number": 1, "when": s, "by": {"accountId": s, "displayName": s}},
                    "ancestors": [{"id": s, "title": s}],
                    "metadata": {"labels": {"results": [{"name": s}]}},
                    "body": {"storage": {"value": storage}},
                    "_links": {"webui": s}
                }],
                "_links": {"base": s, "next": s}
            });
            let scope = Scope::client("c");
            let chunking = ChunkingConfig { max_tokens: 8, min_tokens: 2 };
            let ctx = WikiContext { scope: &scope, source_id: "w", chunking: &chunking };
            if let Ok(list) = content_page(envelope.to_string().as_bytes()) {
                for page in &list.pages {
                    let src = page_source(page, &ctx);
                    prop_assert!(!src.chunks.is_empty());
                    let n = src.chunks.len();
                    for e in &src.edges {
                        if let EvidenceSpec::Chunks(ix) = &e.evidence {
                            prop_assert!(ix.iter().all(|i| *i < n));
                        }
                    }
                    // The mark never leaks (a title is kept as it is, mark or not).
                    prop_assert!(
                        page.title.contains(HEADING_MARK)
                            || src.chunks.iter().all(|c| !c.text.contains(HEADING_MARK))
                    );
                }
            }
            let raw = WikiPage { id: s.clone(), title: s.clone(), storage: s.clone(), ..WikiPage::default() };
            let _ = page_source(&raw, &ctx);
        }
    }
}
