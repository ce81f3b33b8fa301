//! Keys and URNs of pages, spaces and attachments.

use super::*;

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
pub(super) fn account_key(account_id: &str) -> Option<NodeKey> {
    keys::person(Some(account_id), None)
}

/// The editor's key: e-mail, else name (as every source keys people), else account id.
pub(super) fn author_key(p: &WikiPerson) -> Option<NodeKey> {
    keys::person(p.name.as_deref(), p.email.as_deref())
        .or_else(|| p.account_id.as_deref().and_then(account_key))
}
