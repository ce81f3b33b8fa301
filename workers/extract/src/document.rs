//! Documents: text out of PDF (per page), HTML (readable text), DOCX, Markdown and plain text,
//! and a document as a prepared source with `{uri, page?, charStart, charEnd}` locators.

use std::io::Read;

use evident_core::chunking::{ChunkingConfig, chunk_text};
use evident_core::hashing::content_hash;
use evident_core::prepared::props;
use evident_core::secrets::redact;
use evident_core::{
    EvidenceSpec, Locator, NodeKey, PreparedChunk, PreparedNode, PreparedSource, Scope, refs,
};
use serde::{Deserialize, Serialize};

use crate::html::html_to_text;

/// Bump when what a document becomes changes.
pub const DOCUMENT_VERSION: &str = "document-v1";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Pdf,
    Html,
    Docx,
    Markdown,
    Text,
}

impl Format {
    /// By file name or URL path extension.
    pub fn from_name(name: &str) -> Option<Format> {
        let path = name.split(['?', '#']).next().unwrap_or(name);
        let file = path.rsplit('/').next().unwrap_or(path);
        let ext = file.rsplit_once('.')?.1.to_ascii_lowercase();
        Some(match ext.as_str() {
            "pdf" => Format::Pdf,
            "html" | "htm" | "xhtml" => Format::Html,
            "docx" => Format::Docx,
            "md" | "markdown" | "mdown" => Format::Markdown,
            "txt" | "text" | "log" | "rst" | "adoc" | "csv" => Format::Text,
            _ => return None,
        })
    }

    /// By MIME type (`text/html; charset=utf-8` → HTML).
    pub fn from_mime(mime: &str) -> Option<Format> {
        let base = mime
            .split(';')
            .next()
            .unwrap_or(mime)
            .trim()
            .to_ascii_lowercase();
        Some(match base.as_str() {
            "application/pdf" => Format::Pdf,
            "text/html" | "application/xhtml+xml" => Format::Html,
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document" => {
                Format::Docx
            }
            "text/markdown" | "text/x-markdown" => Format::Markdown,
            "text/plain" | "text/csv" => Format::Text,
            _ => return None,
        })
    }

    /// By content, when neither name nor type says.
    pub fn sniff(bytes: &[u8]) -> Option<Format> {
        if bytes.starts_with(b"%PDF-") {
            return Some(Format::Pdf);
        }
        if bytes.starts_with(b"PK\x03\x04") {
            return Some(Format::Docx);
        }
        let head = String::from_utf8_lossy(&bytes[..bytes.len().min(512)]).to_ascii_lowercase();
        if head.trim_start().starts_with("<!doctype html") || head.contains("<html") {
            return Some(Format::Html);
        }
        (!bytes[..bytes.len().min(8192)].contains(&0)).then_some(Format::Text)
    }
}

/// One page of a document (PDFs have many; other formats one, unnumbered).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub number: Option<u32>,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    pub format: Format,
    pub title: Option<String>,
    pub pages: Vec<Page>,
    /// Links found in the document (HTML `href`s), for crawlers.
    pub links: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExtractError {
    #[error("the document is encrypted")]
    Encrypted,
    #[error("the document is damaged or not what it claims to be: {0}")]
    Corrupt(String),
    #[error("the document has no text")]
    Empty,
    #[error("{0}")]
    Unsupported(String),
}

fn pdf(bytes: &[u8]) -> Result<Document, ExtractError> {
    let mut doc = lopdf::Document::load_mem(bytes).map_err(|e| {
        let msg = e.to_string();
        if msg.to_ascii_lowercase().contains("encrypt")
            || msg.to_ascii_lowercase().contains("password")
        {
            ExtractError::Encrypted
        } else {
            ExtractError::Corrupt(msg)
        }
    })?;
    if doc.is_encrypted() {
        // Many "encrypted" PDFs only restrict printing and open with the empty password.
        doc.decrypt("").map_err(|_| ExtractError::Encrypted)?;
    }
    let mut pages = Vec::new();
    for number in doc.get_pages().keys() {
        // A page whose content cannot be decoded is reported empty; the others still count.
        let text = doc.extract_text(&[*number]).unwrap_or_default();
        pages.push(Page {
            number: Some(*number),
            text: tidy(&text),
        });
    }
    if pages.is_empty() {
        return Err(ExtractError::Corrupt("no pages".into()));
    }
    Ok(Document {
        format: Format::Pdf,
        title: None,
        pages,
        links: Vec::new(),
    })
}

/// Trims line ends and collapses runs of blank lines (PDF text is full of both).
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.trim().is_empty() {
            blank += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank > 0 { "\n\n" } else { "\n" });
        }
        out.push_str(line);
        blank = 0;
    }
    out
}

/// Text of an XML element stream: `para` ends a paragraph, `text` elements carry text.
fn docx(bytes: &[u8]) -> Result<Document, ExtractError> {
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| ExtractError::Corrupt(format!("not a DOCX archive: {e}")))?;
    let mut xml = String::new();
    zip.by_name("word/document.xml")
        .map_err(|_| ExtractError::Corrupt("no word/document.xml".into()))?
        .take(64 * 1024 * 1024)
        .read_to_string(&mut xml)
        .map_err(|e| ExtractError::Corrupt(e.to_string()))?;
    let title = zip.by_name("docProps/core.xml").ok().and_then(|mut f| {
        let mut core = String::new();
        f.read_to_string(&mut core).ok()?;
        crate::xml::first_text_of(&core, b"dc:title")
    });
    let text = crate::xml::docx_text(&xml).map_err(ExtractError::Corrupt)?;
    Ok(Document {
        format: Format::Docx,
        title,
        pages: vec![Page { number: None, text }],
        links: Vec::new(),
    })
}

/// Extracts the text of a document.
pub fn extract(format: Format, bytes: &[u8]) -> Result<Document, ExtractError> {
    let doc = match format {
        Format::Pdf => pdf(bytes)?,
        Format::Docx => docx(bytes)?,
        Format::Html => {
            let h = html_to_text(&String::from_utf8_lossy(bytes));
            Document {
                format,
                title: h.title,
                pages: vec![Page {
                    number: None,
                    text: h.text,
                }],
                links: h.links,
            }
        }
        Format::Markdown | Format::Text => {
            if bytes[..bytes.len().min(8192)].contains(&0) {
                return Err(ExtractError::Unsupported(
                    "binary content labelled as text".into(),
                ));
            }
            Document {
                format,
                title: None,
                pages: vec![Page {
                    number: None,
                    text: String::from_utf8_lossy(bytes).replace("\r\n", "\n"),
                }],
                links: Vec::new(),
            }
        }
    };
    if doc.pages.iter().all(|p| p.text.trim().is_empty()) {
        return Err(ExtractError::Empty);
    }
    Ok(doc)
}

/// Where a document is and what it is about, for its prepared source.
pub struct DocumentMeta<'a> {
    pub scope: &'a Scope,
    pub source_urn: &'a str,
    /// What citations name: a path or URL.
    pub uri: &'a str,
    /// Chunk kind (`doc`, `mail-attachment`, `wiki-attachment`, `web`).
    pub kind: &'a str,
    pub title: Option<&'a str>,
    pub observed_at: Option<&'a str>,
    /// The node this document is, if it has a key of its own (an attachment's).
    pub node: Option<NodeKey>,
}

/// A document as a prepared source: chunks per page with `{uri, page, charStart, charEnd}`,
/// refs found in the text, and (when given) a document node evidenced by every chunk.
pub fn document_source(
    meta: &DocumentMeta<'_>,
    doc: &Document,
    chunking: &ChunkingConfig,
) -> Option<PreparedSource> {
    let (chunks, redacted) = page_chunks(meta, doc, chunking);
    if chunks.is_empty() {
        return None;
    }
    let title = meta.title.map(str::to_string).or_else(|| doc.title.clone());
    let nodes = meta
        .node
        .iter()
        .map(|key| PreparedNode {
            key: key.clone(),
            node_type: "document".into(),
            label: title.clone().unwrap_or_else(|| meta.uri.to_string()),
            props: props([
                ("uri", meta.uri.into()),
                (
                    "format",
                    serde_json::to_value(doc.format).unwrap_or_default(),
                ),
                ("pages", doc.pages.len().into()),
            ]),
            evidence: EvidenceSpec::AllChunks,
        })
        .collect();
    let fingerprint_text: String = doc
        .pages
        .iter()
        .map(|p| p.text.as_str())
        .collect::<Vec<_>>()
        .join("\u{c}");
    Some(PreparedSource {
        scope: meta.scope.clone(),
        source_urn: meta.source_urn.to_string(),
        kind: meta.kind.to_string(),
        title,
        fingerprint: content_hash(&format!(
            "{DOCUMENT_VERSION}\0{}\0{}\0{}\0{redacted}\0{fingerprint_text}",
            meta.uri,
            meta.title.unwrap_or(""),
            meta.node.as_ref().map(NodeKey::as_str).unwrap_or("")
        )),
        observed_at: meta.observed_at.map(str::to_string),
        chunks,
        nodes,
        edges: Vec::new(),
        aliases: Vec::new(),
        merges: Vec::new(),
    })
}

/// The chunks of every page (secrets redacted first), and whether anything was redacted.
fn page_chunks(
    meta: &DocumentMeta<'_>,
    doc: &Document,
    chunking: &ChunkingConfig,
) -> (Vec<PreparedChunk>, bool) {
    let mut chunks = Vec::new();
    let mut redacted = false;
    for page in &doc.pages {
        let text = match redact(&page.text) {
            Some((clean, _)) => {
                redacted = true;
                clean
            }
            None => page.text.clone(),
        };
        for piece in chunk_text(&text, chunking) {
            let section = (!piece.heading_path.is_empty()).then(|| piece.heading_path.join(" > "));
            let mut c = PreparedChunk::new(
                piece.text.clone(),
                Locator::Document {
                    uri: meta.uri.to_string(),
                    char_start: piece.char_start,
                    char_end: piece.char_end,
                    page: page.number,
                    section: section.clone(),
                },
            );
            c.refs = refs::extract_refs(&piece.text)
                .into_iter()
                .map(|f| f.key)
                .collect();
            c.context = section;
            chunks.push(c);
        }
    }
    (chunks, redacted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_by_name_type_and_content() {
        assert_eq!(Format::from_name("a/b/Report.PDF"), Some(Format::Pdf));
        assert_eq!(
            Format::from_name("https://x.io/guide.html?x=1#top"),
            Some(Format::Html)
        );
        assert_eq!(Format::from_name("photo.jpg"), None);
        assert_eq!(
            Format::from_mime("text/html; charset=utf-8"),
            Some(Format::Html)
        );
        assert_eq!(Format::sniff(b"%PDF-1.7 ..."), Some(Format::Pdf));
        assert_eq!(Format::sniff(b"\x00\x01\x02"), None);
    }

    #[test]
    fn corrupt_and_empty_documents_are_errors_not_panics() {
        assert!(matches!(
            extract(Format::Pdf, b"%PDF-1.4 garbage"),
            Err(ExtractError::Corrupt(_))
        ));
        assert!(matches!(
            extract(Format::Docx, b"PK\x03\x04 garbage"),
            Err(ExtractError::Corrupt(_))
        ));
        assert_eq!(extract(Format::Text, b"   \n "), Err(ExtractError::Empty));
        assert!(extract(Format::Text, b"\x00\x00binary").is_err());
    }

    #[test]
    fn a_document_source_cites_pages_and_spans() {
        let doc = Document {
            format: Format::Pdf,
            title: Some("Minutes".into()),
            pages: vec![
                Page {
                    number: Some(1),
                    text: "First page about the rollout.".into(),
                },
                Page {
                    number: Some(2),
                    text: "Second page: jira:SHOP-7 is blocked.".into(),
                },
            ],
            links: Vec::new(),
        };
        let scope = Scope::client("acme");
        let meta = DocumentMeta {
            scope: &scope,
            source_urn: "doc:acme.docs:minutes.pdf",
            uri: "minutes.pdf",
            kind: "doc",
            title: None,
            observed_at: None,
            node: None,
        };
        let p = document_source(&meta, &doc, &ChunkingConfig::default()).expect("source");
        assert_eq!(p.chunks.len(), 2);
        match &p.chunks[1].locator {
            Locator::Document {
                page, char_start, ..
            } => assert_eq!((*page, *char_start), (Some(2), 0)),
            other => panic!("{other:?}"),
        }
        assert_eq!(p.chunks[1].refs[0].as_str(), "jira:shop-7");
        assert_eq!(p.title.as_deref(), Some("Minutes"));
    }
}
