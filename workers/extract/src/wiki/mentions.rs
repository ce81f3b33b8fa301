//! Mentions and links: the people and pages a page refers to, and the chunks that mention them.

use super::*;

/// A user mentioned in the storage, with the marker `storage_to_text` leaves for them
/// (`@{account-id}`) and the person key it stands for.
pub(super) struct Mention {
    pub(super) marker: String,
    pub(super) key: NodeKey,
}

/// `<ri:user ri:account-id="…"/>` (or `ri:username`, Server) in order, once per person. The
/// editor's own account id maps to the editor's key directly.
pub(super) fn mentions(storage: &str, author: Option<&(NodeKey, &WikiPerson)>) -> Vec<Mention> {
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
pub(super) fn has_marker(text: &str, marker: &str) -> bool {
    text.match_indices(marker).any(|(at, _)| {
        text[at + marker.len()..]
            .chars()
            .next()
            .is_none_or(char::is_whitespace)
    })
}

/// A link to another page: storage format names the target by title (and space key when it
/// is in another space), never by id.
pub(super) struct PageLink {
    pub(super) key: NodeKey,
    pub(super) title: String,
}

pub(super) fn page_links(storage: &str, space: Option<&str>) -> Vec<PageLink> {
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
pub(super) fn chunks_where(
    chunks: &[PreparedChunk],
    hit: impl Fn(&PreparedChunk) -> bool,
) -> Vec<usize> {
    let found: Vec<usize> = chunks
        .iter()
        .enumerate()
        .filter(|(_, c)| hit(c))
        .map(|(i, _)| i)
        .collect();
    if found.is_empty() { vec![0] } else { found }
}

pub(super) fn push_unique(list: &mut Vec<NodeKey>, key: NodeKey) {
    if !list.contains(&key) {
        list.push(key);
    }
}
