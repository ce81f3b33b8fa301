//! What the API returns: pages, attachments, search results and their links, as parsed from the JSON.

use super::*;

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

pub(super) fn parse_json(body: &[u8]) -> Result<Value, WikiError> {
    crate::tracker::parse_json(body).map_err(WikiError::NotJson)
}

/// The `results` array every v1 envelope has (empty when there is nothing).
pub(super) fn results(v: &Value) -> Result<&Vec<Value>, WikiError> {
    v.get("results")
        .and_then(Value::as_array)
        .ok_or_else(|| WikiError::Shape("no `results` array".into()))
}

pub(super) fn text_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// A non-empty, trimmed string field (the API sends `""` for "not shown").
pub(super) fn owned_text(v: &Value, pointer: &str) -> Option<String> {
    text_at(v, pointer)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// Ids are strings in v1; a number is accepted too.
pub(super) fn id_at(v: &Value, pointer: &str) -> Option<String> {
    match v.pointer(pointer)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

pub(super) fn person(v: &Value) -> Option<WikiPerson> {
    let p = WikiPerson {
        account_id: owned_text(v, "/accountId").or_else(|| owned_text(v, "/username")),
        name: owned_text(v, "/displayName").or_else(|| owned_text(v, "/publicName")),
        email: owned_text(v, "/email"),
    };
    // An anonymous editor (`{"type": "anonymous"}`) is nobody.
    (p.account_id.is_some() || p.name.is_some() || p.email.is_some()).then_some(p)
}

pub(super) fn space_of(v: &Value) -> Option<String> {
    owned_text(v, "/space/key").or_else(|| {
        text_at(v, "/_expandable/space")
            .and_then(|s| s.rsplit('/').next())
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    })
}

pub(super) fn ancestors_of(v: &Value) -> Vec<(String, String)> {
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

pub(super) fn labels_of(v: &Value) -> Vec<String> {
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
pub(super) fn page_of(v: &Value, base: Option<&str>, i: usize) -> Result<WikiPage, WikiError> {
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
pub(super) fn is_page(v: &Value) -> bool {
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

pub(super) fn attachment_of(v: &Value, i: usize) -> Result<WikiAttachment, WikiError> {
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

/// A page of attachment search hits: each attachment with the id of its page, and the link
/// to the next page of hits.
pub type AttachmentHits = (Vec<(String, WikiAttachment)>, Option<String>);

/// A CQL search for attachments (`type = attachment`, `expand=version,container`): each
/// attachment with the id of the page it belongs to (`container.id`), and `_links.next`.
/// Attachments of anything but a page (a blog post, another attachment) are left out.
pub fn attachment_hits(body: &[u8]) -> Result<AttachmentHits, WikiError> {
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
