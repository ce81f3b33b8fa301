//! Attachments: edges from a page to its attachments and their document metadata.

use super::*;

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
