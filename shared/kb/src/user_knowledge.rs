//! User knowledge: what an agent learned about its user (preferences, domain, team, tech
//! stack, personal facts), stored by category and subject, and the **prefetch** an agent
//! reads at the start of every conversation.
//!
//! - One document per (scope, category, subject): the source URN is
//!   `user-knowledge:{category}:{normalised subject}` — never a timestamp — so storing the same
//!   subject again updates it (only its changed chunks are embedded) and different subjects
//!   never collide. The kind is `user_knowledge_{category}`.
//! - The prefetch ([`Kb::user_context`]) reads each category's kind newest first
//!   (`ChunkStore::by_kind`: a filter, no embedding work) and renders Markdown with one header
//!   per category, bounded by a size limit that categories share round-robin, so one busy
//!   category cannot crowd the others out.

use std::collections::HashMap;

use evident_ai::Priority;
use evident_core::{Chunk, Scope, Visibility, validate};
use evident_store::ChunkFilter;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ingest::{Document, IngestOutcome};
use crate::knowledge::normalised_subject;
use crate::{Kb, KbError, Result};

/// Longest subject, in bytes.
pub const MAX_SUBJECT_BYTES: usize = 200;
/// Longest content of one item, in bytes: user knowledge is facts, not documents.
pub const MAX_CONTENT_BYTES: usize = 8 * 1024;
/// The prefetch's size when the reader names none, and the bounds a reader may choose.
pub const DEFAULT_CONTEXT_BYTES: usize = 8 * 1024;
pub const MIN_CONTEXT_BYTES: usize = 256;
pub const MAX_CONTEXT_BYTES: usize = 64 * 1024;
/// Chunks read per category first (see [`Kb::user_context`]).
const FIRST_READ: usize = 16;

/// The six categories of the seed's `store_knowledge` tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KnowledgeCategory {
    Preference,
    Domain,
    Team,
    TechStack,
    Personal,
    General,
}

impl KnowledgeCategory {
    /// Every category, in the order the prefetch lists them.
    pub const ALL: [KnowledgeCategory; 6] = [
        KnowledgeCategory::Preference,
        KnowledgeCategory::Domain,
        KnowledgeCategory::Team,
        KnowledgeCategory::TechStack,
        KnowledgeCategory::Personal,
        KnowledgeCategory::General,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            KnowledgeCategory::Preference => "preference",
            KnowledgeCategory::Domain => "domain",
            KnowledgeCategory::Team => "team",
            KnowledgeCategory::TechStack => "tech_stack",
            KnowledgeCategory::Personal => "personal",
            KnowledgeCategory::General => "general",
        }
    }

    /// `preference`, `tech_stack`… (exactly as [`KnowledgeCategory::as_str`] writes them).
    pub fn parse(raw: &str) -> Result<KnowledgeCategory> {
        Self::ALL
            .into_iter()
            .find(|c| c.as_str() == raw)
            .ok_or_else(|| {
                KbError::Field(validate::FieldError::Invalid {
                    field: "category",
                    reason: format!(
                        "`{raw}` is not one of preference, domain, team, tech_stack, personal, general"
                    ),
                })
            })
    }

    /// The chunk kind of the category's items: `user_knowledge_{category}`.
    pub fn kind(self) -> String {
        format!("user_knowledge_{}", self.as_str())
    }

    /// The Markdown header of the category in the prefetch.
    pub fn header(self) -> &'static str {
        match self {
            KnowledgeCategory::Preference => "### Preferences",
            KnowledgeCategory::Domain => "### Domain Context",
            KnowledgeCategory::Team => "### Team",
            KnowledgeCategory::TechStack => "### Tech Stack",
            KnowledgeCategory::Personal => "### Personal",
            KnowledgeCategory::General => "### General",
        }
    }
}

/// One thing learned about the user.
#[derive(Debug, Clone, PartialEq)]
pub struct KnowledgeItem {
    pub subject: String,
    pub content: String,
    pub category: KnowledgeCategory,
}

/// The source URN of an item: `user-knowledge:{category}:{normalised subject}`.
pub fn user_knowledge_urn(category: KnowledgeCategory, subject: &str) -> Result<String> {
    validate::bounded_text("subject", subject, MAX_SUBJECT_BYTES)?;
    Ok(format!(
        "user-knowledge:{}:{}",
        category.as_str(),
        normalised_subject(subject)?
    ))
}

/// The prefetch: Markdown for a model, plus what it holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserContext {
    /// One `### header` per category with items, each item `- **subject**: content`, newest
    /// first; empty when nothing is known.
    pub markdown: String,
    /// Items listed, per category (categories without items are left out).
    pub counts: Map<String, Value>,
    /// Whether items were left out to stay within the size limit.
    pub truncated: bool,
}

/// One item as read back: its subject and its text (chunks in order).
struct ReadItem {
    line: String,
}

/// Groups a category's chunks (newest first) into items, newest first, each rendered as
/// its bullet line.
fn items_of(chunks: Vec<Chunk>) -> Vec<ReadItem> {
    let mut order: Vec<String> = Vec::new();
    let mut parts: HashMap<String, (String, Vec<(usize, String)>)> = HashMap::new();
    for c in chunks {
        let entry = parts.entry(c.source_urn.clone()).or_insert_with(|| {
            order.push(c.source_urn.clone());
            let subject = c
                .metadata
                .get("subject")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| c.title.clone())
                .unwrap_or_else(|| c.source_urn.clone());
            (subject, Vec::new())
        });
        entry.1.push((c.ordinal, c.content));
    }
    order
        .into_iter()
        .filter_map(|urn| parts.remove(&urn))
        .map(|(subject, mut texts)| {
            texts.sort_by_key(|(ordinal, _)| *ordinal);
            let text: Vec<&str> = texts
                .iter()
                .flat_map(|(_, t)| t.split_whitespace())
                .collect();
            ReadItem {
                line: format!("- **{}**: {}", one_line(&subject), text.join(" ")),
            }
        })
        .collect()
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Chooses items round-robin across categories (newest first within each) while they fit in
/// `budget` bytes, then renders them under their headers. A category stops at its first item
/// that does not fit, so an older item never displaces a newer one.
/// Also says, per category, whether every item it was given was listed (so more might fit).
fn render(
    categories: &[(KnowledgeCategory, Vec<ReadItem>, bool)],
    budget: usize,
) -> (UserContext, Vec<bool>) {
    let mut left = budget;
    let mut chosen: Vec<Vec<&str>> = vec![Vec::new(); categories.len()];
    let mut stopped = vec![false; categories.len()];
    let mut truncated = categories.iter().any(|(_, _, more)| *more);
    let mut round = 0;
    loop {
        let mut progressed = false;
        for (i, (category, items, _)) in categories.iter().enumerate() {
            let Some(item) = items.get(round) else {
                continue;
            };
            if stopped[i] {
                continue;
            }
            // "### Header\n" + the blank line closing the section, once per category.
            let header = if chosen[i].is_empty() {
                category.header().len() + 2
            } else {
                0
            };
            let cost = header + item.line.len() + 1;
            if cost <= left {
                left -= cost;
                chosen[i].push(&item.line);
                progressed = true;
            } else {
                stopped[i] = true;
                truncated = true;
            }
        }
        if !progressed {
            break;
        }
        round += 1;
    }
    let used_all: Vec<bool> = categories
        .iter()
        .zip(&chosen)
        .map(|((_, items, _), lines)| lines.len() == items.len())
        .collect();
    let mut markdown = String::new();
    let mut counts = Map::new();
    for ((category, _, _), lines) in categories.iter().zip(&chosen) {
        if lines.is_empty() {
            continue;
        }
        markdown.push_str(category.header());
        markdown.push('\n');
        for line in lines {
            markdown.push_str(line);
            markdown.push('\n');
        }
        markdown.push('\n');
        counts.insert(category.as_str().to_string(), Value::from(lines.len()));
    }
    (
        UserContext {
            markdown,
            counts,
            truncated,
        },
        used_all,
    )
}

impl Kb {
    /// Stores (or updates) one item of user knowledge in `scope` (a client is required).
    /// Searchable, and in the prefetch, when this returns.
    pub async fn store_user_knowledge(
        &self,
        scope: Scope,
        item: KnowledgeItem,
        priority: Priority,
    ) -> Result<IngestOutcome> {
        if scope.client_id.is_none() {
            return Err(validate::FieldError::Missing { field: "clientId" }.into());
        }
        let source_urn = user_knowledge_urn(item.category, &item.subject)?;
        validate::content("content", &item.content)?;
        if item.content.len() > MAX_CONTENT_BYTES {
            return Err(validate::FieldError::TooLong {
                field: "content",
                len: item.content.len(),
                max: MAX_CONTENT_BYTES,
            }
            .into());
        }
        let subject = one_line(&item.subject);
        let mut metadata = Map::new();
        metadata.insert("category".into(), item.category.as_str().into());
        metadata.insert("subject".into(), subject.clone().into());
        let doc = Document {
            client_id: scope.client_id,
            project_id: scope.project_id,
            group_id: scope.group_id,
            global: false,
            source_urn,
            kind: item.category.kind(),
            content: item.content,
            title: Some(subject),
            metadata: Some(metadata),
            ..Default::default()
        };
        self.ingest(doc, priority).await
    }

    /// The user-context prefetch for a reader: every category's items newest first, within
    /// `max_bytes` of Markdown. Reads by kind only: no embedding work.
    pub async fn user_context(&self, vis: &Visibility, max_bytes: usize) -> Result<UserContext> {
        if !(MIN_CONTEXT_BYTES..=MAX_CONTEXT_BYTES).contains(&max_bytes) {
            return Err(validate::FieldError::Invalid {
                field: "maxBytes",
                reason: format!("must be {MIN_CONTEXT_BYTES}..={MAX_CONTEXT_BYTES}"),
            }
            .into());
        }
        // Newest first is a prefix property: read a few chunks per category, and read more
        // (4× each time) only for a category whose every item fit while it has more. A
        // typical prefetch is one read per category; no item line is shorter than ~16 bytes,
        // so the last step always has enough to fill the budget.
        let most = (max_bytes / 16).clamp(FIRST_READ, 4096);
        let mut limits = [FIRST_READ; KnowledgeCategory::ALL.len()];
        let mut categories: Vec<(KnowledgeCategory, Vec<ReadItem>, bool)> = KnowledgeCategory::ALL
            .into_iter()
            .map(|c| (c, Vec::new(), true))
            .collect();
        let mut stale = [true; KnowledgeCategory::ALL.len()];
        loop {
            for (i, (category, items, more)) in categories.iter_mut().enumerate() {
                if !stale[i] {
                    continue;
                }
                let filter = ChunkFilter {
                    kinds: vec![category.kind()],
                    ..Default::default()
                };
                let chunks = self.stores.chunks.by_kind(vis, &filter, limits[i]).await?;
                *more = chunks.len() >= limits[i];
                *items = items_of(chunks);
            }
            let (context, used_all) = render(&categories, max_bytes);
            stale = [false; KnowledgeCategory::ALL.len()];
            let mut again = false;
            for (i, (_, _, more)) in categories.iter().enumerate() {
                if *more && used_all[i] && limits[i] < most {
                    limits[i] = (limits[i] * 4).min(most);
                    stale[i] = true;
                    again = true;
                }
            }
            if !again {
                return Ok(context);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(line: &str) -> ReadItem {
        ReadItem { line: line.into() }
    }

    #[test]
    fn urns_are_per_category_and_normalised_subject() {
        let a = user_knowledge_urn(KnowledgeCategory::Domain, "BMS").expect("urn");
        assert_eq!(a, "user-knowledge:domain:bms");
        assert_eq!(
            user_knowledge_urn(KnowledgeCategory::Domain, "  bms ").expect("urn"),
            a
        );
        assert_ne!(
            user_knowledge_urn(KnowledgeCategory::Team, "BMS").expect("urn"),
            a
        );
        assert_ne!(
            user_knowledge_urn(KnowledgeCategory::Domain, "CRM").expect("urn"),
            a
        );
        assert!(user_knowledge_urn(KnowledgeCategory::Domain, "").is_err());
        assert!(user_knowledge_urn(KnowledgeCategory::Domain, &"x".repeat(201)).is_err());
    }

    #[test]
    fn categories_parse_exactly() {
        for c in KnowledgeCategory::ALL {
            assert_eq!(KnowledgeCategory::parse(c.as_str()).expect("parse"), c);
            assert!(c.kind().starts_with("user_knowledge_"));
        }
        assert_eq!(
            KnowledgeCategory::TechStack.kind(),
            "user_knowledge_tech_stack"
        );
        assert!(KnowledgeCategory::parse("tech-stack").is_err());
        assert!(KnowledgeCategory::parse("Preference").is_err());
    }

    #[test]
    fn render_shares_the_budget_round_robin_and_stays_within_it() {
        let many: Vec<ReadItem> = (0..50)
            .map(|i| item(&format!("- **p{i}**: likes {i}")))
            .collect();
        let cats = vec![
            (KnowledgeCategory::Preference, many, false),
            (
                KnowledgeCategory::Team,
                vec![item("- **Jan**: owns billing")],
                false,
            ),
        ];
        let (ctx, used_all) = render(&cats, 200);
        assert_eq!(used_all, [false, true]);
        assert!(ctx.markdown.len() <= 200, "{}", ctx.markdown);
        assert!(ctx.truncated);
        assert!(ctx.markdown.contains("### Team\n- **Jan**: owns billing"));
        assert!(
            ctx.markdown
                .starts_with("### Preferences\n- **p0**: likes 0\n")
        );
        assert_eq!(ctx.counts["team"], 1);
    }

    #[test]
    fn render_of_nothing_is_empty() {
        let cats: Vec<_> = KnowledgeCategory::ALL
            .into_iter()
            .map(|c| (c, Vec::new(), false))
            .collect();
        let (ctx, _) = render(&cats, 1000);
        assert_eq!(ctx.markdown, "");
        assert!(ctx.counts.is_empty());
        assert!(!ctx.truncated);
    }
}
