//! The data model shared by every backend: nodes, edges with evidence, chunks, locators.
//!
//! Graph visibility is derived from evidence: a node or edge is visible to a reader when at
//! least one of its evidence chunks lives in a scope the reader admits. That way one entity
//! (the same person mentioned by two projects) is one node, yet a reader never learns of a
//! node or edge that only another project's data evidences.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::refs::NodeKey;
use crate::scope::Scope;

/// One chunk that evidences a node or an edge, with the scope of that chunk.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    pub chunk_id: String,
    pub scope: Scope,
}

/// A node as read back: the evidence list is already filtered to what the reader may see.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Node {
    pub key: NodeKey,
    #[serde(rename = "type")]
    pub node_type: String,
    pub label: String,
    pub props: Map<String, Value>,
    pub evidence_chunk_ids: Vec<String>,
}

/// An edge as read back, with its (visible) evidence chunk ids.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Edge {
    pub from: NodeKey,
    pub to: NodeKey,
    pub edge_type: String,
    pub props: Map<String, Value>,
    pub evidence_chunk_ids: Vec<String>,
}

/// Upsert of one node: properties are merged (new keys win), evidence is added to the set.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeWrite {
    pub key: NodeKey,
    pub node_type: String,
    pub label: String,
    pub props: Map<String, Value>,
    pub evidence: Vec<Evidence>,
    /// The source only mentions the key (a ref in text, an edge endpoint it does not
    /// describe): create the node if it is missing (with this write's type and label) and add
    /// the evidence, but never overwrite the type, label or props a describing source gave it.
    pub mention_only: bool,
}

/// Upsert of one edge: evidence is merged into the existing set, never replaced.
#[derive(Debug, Clone, PartialEq)]
pub struct EdgeWrite {
    pub from: NodeKey,
    pub to: NodeKey,
    pub edge_type: String,
    pub props: Map<String, Value>,
    pub evidence: Vec<Evidence>,
}

/// Where a chunk came from, precisely enough to cite it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum Locator {
    /// A span of a text document (Markdown, HTML, PDF page, plain text).
    Document {
        uri: String,
        char_start: usize,
        char_end: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        page: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        section: Option<String>,
    },
    /// Lines of a source file, optionally at a commit and inside a symbol.
    File {
        path: String,
        line_start: usize,
        line_end: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        commit: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        symbol: Option<String>,
    },
    /// A span of one MIME part of an e-mail message.
    Email {
        message_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mailbox: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        part: Option<String>,
        char_start: usize,
        char_end: usize,
    },
    /// An issue, or one comment of it, in a tracker.
    Issue {
        tracker: String,
        issue_key: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        comment_id: Option<String>,
    },
    /// A section of a wiki page at one version.
    Page {
        page_id: String,
        version: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        section: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        uri: Option<String>,
    },
    /// A commit of a repository as a whole (its message and metadata).
    Commit { repository: String, commit: String },
    /// What an agent asserted (evidence it wrote inline for a graph write, or the findings it
    /// acquired for a knowledge gap): who, when (RFC 3339), and for which gap.
    Assertion {
        actor: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        gap_id: Option<String>,
        at: String,
    },
    /// A time span of a meeting transcript.
    Transcript {
        meeting_id: String,
        start_ms: u64,
        end_ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        speaker: Option<String>,
    },
}

impl Locator {
    /// The locator of one chunk, derived from the source's base locator (if the caller gave
    /// one) and the chunk's position in the source text.
    ///
    /// `char_start..char_end` is the chunk's span in the source; `lines_before` the number of
    /// newlines before it and `lines_inside` the number inside it (for file line spans).
    pub fn for_chunk(
        base: Option<&Locator>,
        source_urn: &str,
        section: Option<&str>,
        char_start: usize,
        char_end: usize,
        lines_before: usize,
        lines_inside: usize,
    ) -> Locator {
        match base {
            None => Locator::Document {
                uri: source_urn.to_string(),
                char_start,
                char_end,
                page: None,
                section: section.map(str::to_string),
            },
            Some(Locator::Document {
                uri,
                page,
                char_start: base_start,
                ..
            }) => Locator::Document {
                uri: uri.clone(),
                char_start: base_start + char_start,
                char_end: base_start + char_end,
                page: *page,
                section: section.map(str::to_string),
            },
            Some(Locator::File {
                path,
                line_start,
                commit,
                symbol,
                ..
            }) => {
                let first = (*line_start).max(1) + lines_before;
                Locator::File {
                    path: path.clone(),
                    line_start: first,
                    line_end: first + lines_inside,
                    commit: commit.clone(),
                    symbol: symbol.clone(),
                }
            }
            Some(Locator::Email {
                message_id,
                mailbox,
                part,
                char_start: base_start,
                ..
            }) => Locator::Email {
                message_id: message_id.clone(),
                mailbox: mailbox.clone(),
                part: part.clone(),
                char_start: base_start + char_start,
                char_end: base_start + char_end,
            },
            Some(Locator::Page {
                page_id,
                version,
                uri,
                ..
            }) => Locator::Page {
                page_id: page_id.clone(),
                version: *version,
                section: section.map(str::to_string),
                uri: uri.clone(),
            },
            Some(
                other @ (Locator::Issue { .. }
                | Locator::Transcript { .. }
                | Locator::Assertion { .. }
                | Locator::Commit { .. }),
            ) => other.clone(),
        }
    }

    /// A short human-readable citation, e.g. `src/lib.rs:10-24@abc123` or `doc.md#chars=0-120`.
    pub fn citation(&self) -> String {
        match self {
            Locator::Document {
                uri,
                char_start,
                char_end,
                page,
                ..
            } => match page {
                Some(p) => format!("{uri}#page={p}&chars={char_start}-{char_end}"),
                None => format!("{uri}#chars={char_start}-{char_end}"),
            },
            Locator::File {
                path,
                line_start,
                line_end,
                commit,
                ..
            } => match commit {
                Some(c) => format!("{path}:{line_start}-{line_end}@{}", &c[..c.len().min(12)]),
                None => format!("{path}:{line_start}-{line_end}"),
            },
            Locator::Email {
                message_id,
                part,
                char_start,
                char_end,
                ..
            } => {
                format!(
                    "mid:{message_id}#{}chars={char_start}-{char_end}",
                    part.as_deref()
                        .map(|p| format!("part={p}&"))
                        .unwrap_or_default()
                )
            }
            Locator::Issue {
                tracker,
                issue_key,
                comment_id,
            } => match comment_id {
                Some(c) => format!("{tracker}:{issue_key}#comment-{c}"),
                None => format!("{tracker}:{issue_key}"),
            },
            Locator::Page {
                page_id,
                version,
                section,
                ..
            } => match section {
                Some(s) => format!("page:{page_id}@v{version}#{s}"),
                None => format!("page:{page_id}@v{version}"),
            },
            Locator::Commit { repository, commit } => {
                format!("{repository}@{}", &commit[..commit.len().min(12)])
            }
            Locator::Assertion { actor, gap_id, at } => match gap_id {
                Some(g) => format!("assertion:{actor}@{at}#gap={g}"),
                None => format!("assertion:{actor}@{at}"),
            },
            Locator::Transcript {
                meeting_id,
                start_ms,
                end_ms,
                speaker,
            } => {
                let who = speaker
                    .as_deref()
                    .map(|s| format!(" ({s})"))
                    .unwrap_or_default();
                format!(
                    "meeting:{meeting_id}@{}-{}{who}",
                    fmt_ms(*start_ms),
                    fmt_ms(*end_ms)
                )
            }
        }
    }
}

fn fmt_ms(ms: u64) -> String {
    let s = ms / 1000;
    format!("{:02}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
}

/// A searchable unit of text with everything needed to cite it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Chunk {
    pub id: String,
    pub scope: Scope,
    pub source_urn: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub content: String,
    pub content_hash: String,
    pub locator: Locator,
    pub graph_refs: Vec<NodeKey>,
    pub metadata: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_at: Option<String>,
    /// Position of the chunk within its source (0-based).
    pub ordinal: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_locator_line_span_is_offset_by_lines_before() {
        let base = Locator::File {
            path: "src/a.rs".into(),
            line_start: 10,
            line_end: 99,
            commit: None,
            symbol: None,
        };
        let l = Locator::for_chunk(Some(&base), "urn", None, 5, 50, 3, 2);
        assert_eq!(
            l,
            Locator::File {
                path: "src/a.rs".into(),
                line_start: 13,
                line_end: 15,
                commit: None,
                symbol: None
            }
        );
        assert_eq!(l.citation(), "src/a.rs:13-15");
    }

    #[test]
    fn default_locator_is_document_span_with_section() {
        let l = Locator::for_chunk(None, "docs/x.md", Some("Intro"), 3, 9, 0, 0);
        assert_eq!(l.citation(), "docs/x.md#chars=3-9");
        let json = serde_json::to_value(&l).expect("serialises");
        assert_eq!(json["type"], "document");
        assert_eq!(json["charStart"], 3);
        assert_eq!(json["section"], "Intro");
    }

    #[test]
    fn an_assertion_cites_its_actor_time_and_gap() {
        let l = Locator::Assertion {
            actor: "agent-7".into(),
            gap_id: Some("g1".into()),
            at: "2026-01-02T03:04:05Z".into(),
        };
        assert_eq!(
            l.citation(),
            "assertion:agent-7@2026-01-02T03:04:05Z#gap=g1"
        );
        let json = serde_json::to_value(&l).expect("serialises");
        assert_eq!(json["type"], "assertion");
        assert_eq!(json["gapId"], "g1");
        assert_eq!(
            serde_json::from_value::<Locator>(json).expect("reads back"),
            l
        );
    }

    #[test]
    fn locator_rejects_unknown_fields() {
        let bad = serde_json::json!({"type": "file", "path": "a", "lineStart": 1, "lineEnd": 2, "bogus": 1});
        assert!(serde_json::from_value::<Locator>(bad).is_err());
    }
}
