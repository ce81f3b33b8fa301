//! The built-in acquirer: the `acquire-gap` queue task. It takes a gap reported with
//! `acquirer: builtin` (the only gaps it takes; agents claim the others), searches what the
//! client's sources already hold (`retrieve` with the gap's question), and submits what it
//! found as the gap's findings — each passage under its citation — exactly as an agent would,
//! so the gap is answered without any external agent. When the deployment allows it
//! (`[gaps] fetch_urls = true`, default off) it also fetches the `http(s)` URLs named in the
//! gap's question and context (at most [`MAX_URLS`]) through a [`PageFetcher`] — the wiring's
//! is the egress policy's pinned client — and adds their readable text under their URL.
//! Nothing relevant ([`super::nothing_relevant`]) and nothing fetched fails the gap with that
//! reason.
//!
//! Body (`v: 1`): `{"type": "acquire-gap", "v": 1, "scope": {…}, "gapId": "…"}`, queued under
//! `gaps:{client}` so one client's acquisitions run one at a time, in order. Idempotent: a
//! task whose gap is already acquired (or further) does nothing; while another acquisition of
//! the client holds a live lease the task is retried later (operational, with the queue's
//! backoff), never dropped.

use evident_ai::Priority;
use evident_core::Scope;
use evident_store::gaps::{Acquirer, GapRecord, GapState};
use evident_store::queue::Millis;
use serde::{Deserialize, Serialize};

use crate::tasks::{TaskError, TaskHandler, TaskSubmitter};
use crate::{Kb, Result, RetrieveQuery};

/// The task kind.
pub const KIND: &str = "acquire-gap";
/// Who the built-in acquirer's claims and findings name.
pub const ACTOR: &str = "builtin-acquirer";
/// Its lease: one retrieval and one ingest.
const LEASE_MS: i64 = 5 * 60_000;
/// Passages it keeps, and the length of each.
const PASSAGES: usize = 6;
const PASSAGE_CHARS: usize = 1_200;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename = "acquire-gap", rename_all = "camelCase")]
pub struct AcquireGapBody {
    pub v: u32,
    pub scope: Scope,
    pub gap_id: String,
}

/// URLs fetched per gap, at most.
pub const MAX_URLS: usize = 3;
/// Characters of a fetched page kept in the findings.
const PAGE_CHARS: usize = 4_000;

/// A fetched page's readable text.
#[derive(Debug, Clone, PartialEq)]
pub struct FetchedPage {
    pub title: Option<String>,
    pub text: String,
}

/// Fetches a page for the built-in acquirer (the wiring's goes through the egress policy).
/// The error is the reason, recorded in the gap's findings detail.
#[async_trait::async_trait]
pub trait PageFetcher: Send + Sync {
    async fn fetch(&self, url: &str) -> std::result::Result<FetchedPage, String>;
}

/// The `http(s)` URLs a text names, in order, each once, at most [`MAX_URLS`] (trailing
/// punctuation of prose dropped).
pub fn urls_in(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        let start = word.find("http://").or_else(|| word.find("https://"));
        let Some(start) = start else { continue };
        let url = word[start..].trim_end_matches(|c: char| {
            matches!(c, '.' | ',' | ';' | ':' | ')' | ']' | '>' | '"' | '\'')
        });
        if url.len() > "https://".len() && !out.iter().any(|u| u == url) {
            out.push(url.to_string());
        }
        if out.len() >= MAX_URLS {
            break;
        }
    }
    out
}

/// Queues the acquisition of a built-in gap.
pub async fn enqueue(tasks: &TaskSubmitter, gap: &GapRecord, now: Millis) -> Result<()> {
    let body = AcquireGapBody {
        v: 1,
        scope: gap.scope.clone(),
        gap_id: gap.gap_id.clone(),
    };
    let payload = serde_json::to_value(&body)
        .map_err(|e| crate::KbError::Invalid(format!("unserialisable task: {e}")))?;
    tasks
        .enqueue_body(
            gap.scope.clone(),
            &format!("gaps:{}", gap.scope.partition()),
            Priority::DEFAULT,
            payload,
            now,
        )
        .await?;
    Ok(())
}

fn now_millis() -> Millis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The Markdown of what retrieval found (each passage under its citation) and of the pages
/// fetched (each under its URL).
fn findings_markdown(
    question: &str,
    pack: &crate::EvidencePack,
    pages: &[(String, FetchedPage)],
) -> (String, Vec<String>) {
    let mut md = format!("# {question}\n\nWhat Evident's sources already say:\n");
    let mut sources = Vec::new();
    for (url, page) in pages {
        let excerpt: String = page.text.chars().take(PAGE_CHARS).collect();
        let heading = page.title.clone().unwrap_or_else(|| url.clone());
        md.push_str(&format!(
            "\n## {heading}\n\n{}\n\nSource: {url}\n",
            excerpt.trim()
        ));
        sources.push(url.clone());
    }
    for item in pack.items.iter().take(PASSAGES) {
        let excerpt: String = item.content.chars().take(PASSAGE_CHARS).collect();
        let heading = item.title.clone().unwrap_or_else(|| item.citation.clone());
        md.push_str(&format!(
            "\n## {heading}\n\n{}\n\nSource: {}\n",
            excerpt.trim(),
            item.citation
        ));
        if !sources.contains(&item.citation) {
            sources.push(item.citation.clone());
        }
    }
    (md, sources)
}

impl Kb {
    /// One run of the built-in acquirer for the client of `scope` (see the module docs).
    /// Returns the gap it worked on, if any.
    pub async fn acquire_builtin(
        &self,
        scope: &Scope,
        gap_id: &str,
        fetcher: Option<&dyn PageFetcher>,
        now: Millis,
    ) -> std::result::Result<Option<GapRecord>, TaskError> {
        let client = scope.partition();
        let vis = evident_core::Visibility::of(scope.clone());
        let claim = self
            .stores
            .gaps
            .claim_gap(client, &vis, Acquirer::Builtin, ACTOR, LEASE_MS, now)
            .await
            .map_err(crate::KbError::from)?;
        let Some(claim) = claim else {
            let gap = self
                .stores
                .gaps
                .get_gap(client, gap_id)
                .await
                .map_err(crate::KbError::from)?;
            return match gap {
                Some(g) if matches!(g.state, GapState::Open | GapState::Acquiring) => {
                    Err(TaskError::Retryable(format!(
                        "gap {gap_id} waits: another acquisition of the client is running"
                    )))
                }
                _ => Ok(None),
            };
        };
        let gap = claim.gap;
        let gscope = gap.scope.clone();
        let mut q = RetrieveQuery::new(gap.question.clone(), gscope.client_id.as_deref());
        q.project_id = gscope.project_id.clone();
        q.group_id = gscope.group_id.clone();
        q.max_results = PASSAGES;
        let pack = self.retrieve(&q).await?;
        let mut pages = Vec::new();
        if let Some(fetcher) = fetcher {
            let named = format!("{}\n{}", gap.question, gap.context.as_deref().unwrap_or(""));
            for url in urls_in(&named) {
                match fetcher.fetch(&url).await {
                    Ok(page) if !page.text.trim().is_empty() => pages.push((url, page)),
                    Ok(_) => tracing::info!(%url, "built-in acquirer: empty page"),
                    Err(why) => tracing::info!(%url, %why, "built-in acquirer: not fetched"),
                }
            }
        }
        let done = if super::nothing_relevant(&pack) && pages.is_empty() {
            self.fail_gap(
                &gscope,
                &gap.gap_id,
                ACTOR,
                Some(claim.epoch),
                "nothing relevant found in the client's sources",
                false,
                now,
            )
            .await?
        } else {
            let (markdown, sources) = findings_markdown(&gap.question, &pack, &pages);
            self.submit_findings(
                &gscope,
                &gap.gap_id,
                ACTOR,
                Some(claim.epoch),
                &markdown,
                &sources,
                now,
            )
            .await?
            .gap
        };
        tracing::info!(gap_id = %done.gap_id, state = done.state.as_str(), "built-in acquirer");
        Ok(Some(done))
    }
}

/// The `acquire-gap` handler; with a fetcher when the deployment lets it fetch URLs.
pub struct GapAcquirer {
    pub kb: Kb,
    pub fetcher: Option<std::sync::Arc<dyn PageFetcher>>,
}

#[async_trait::async_trait]
impl TaskHandler for GapAcquirer {
    async fn execute(
        &self,
        payload: &serde_json::Value,
        _scope: &evident_core::Scope,
        _priority: Priority,
    ) -> std::result::Result<(), TaskError> {
        let body: AcquireGapBody = serde_json::from_value(payload.clone())
            .map_err(|e| TaskError::Permanent(format!("unreadable task body: {e}")))?;
        if body.v != 1 {
            return Err(TaskError::Permanent(format!(
                "unsupported version of a `{KIND}` task"
            )));
        }
        self.kb
            .acquire_builtin(
                &body.scope,
                &body.gap_id,
                self.fetcher.as_deref(),
                now_millis(),
            )
            .await
            .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Pages;

    #[async_trait::async_trait]
    impl PageFetcher for Pages {
        async fn fetch(&self, url: &str) -> std::result::Result<FetchedPage, String> {
            match url {
                "https://docs.example/retries" => Ok(FetchedPage {
                    title: Some("Retry policy".into()),
                    text: "Retries back off exponentially, capped at 30 seconds.".into(),
                }),
                _ => Err("refused".into()),
            }
        }
    }

    /// With nothing indexed, the gap fails without a fetcher and is answered from the page
    /// it names with one; a URL the fetcher refuses is left out.
    #[tokio::test]
    async fn the_builtin_acquirer_fetches_the_urls_a_gap_names_when_allowed() {
        let dir = tempfile::tempdir().expect("tmp");
        let kb = crate::test_kb(dir.path()).await;
        let scope = Scope::client("acme");
        let report = |q: &str| super::super::GapReport {
            question: q.into(),
            acquirer: Some(Acquirer::Builtin),
            ..Default::default()
        };
        let ask = "How do retries back off? See https://docs.example/retries and https://internal.example/x";
        let gaps = kb
            .report_gaps(
                &scope,
                "t",
                evident_store::gaps::GapPhase::Detection,
                &[report("Unrelated zebra question?"), report(ask)],
                None,
                1_000,
            )
            .await
            .expect("report");
        let failed = kb
            .acquire_builtin(&scope, &gaps[0].gap_id, None, 2_000)
            .await
            .expect("run")
            .expect("a gap");
        assert_eq!(failed.state, GapState::Failed);
        let done = kb
            .acquire_builtin(&scope, &gaps[1].gap_id, Some(&Pages), 3_000)
            .await
            .expect("run")
            .expect("a gap");
        assert_eq!(done.state, GapState::Acquired);
        let view = kb.gap_view(&scope, &gaps[1].gap_id).await.expect("view");
        let ids = view.findings.expect("findings").chunk_ids;
        let chunks = kb
            .stores()
            .chunks
            .get(&evident_core::Visibility::of(scope.clone()), &ids)
            .await
            .expect("chunks");
        let text: String = chunks.iter().map(|c| c.content.as_str()).collect();
        assert!(text.contains("capped at 30 seconds"), "{text}");
        assert!(
            text.contains("Source: https://docs.example/retries"),
            "{text}"
        );
        assert!(!text.contains("Source: https://internal.example"), "{text}");
    }

    #[test]
    fn urls_are_found_in_prose_once_each() {
        let text = "See https://wiki.example/a, and (http://b.example/x). Again https://wiki.example/a ftp://no";
        assert_eq!(
            urls_in(text),
            ["https://wiki.example/a", "http://b.example/x"]
        );
        assert_eq!(urls_in("nothing here").len(), 0);
        let many = "https://a.x https://b.x https://c.x https://d.x";
        assert_eq!(urls_in(many).len(), MAX_URLS);
    }

    /// A stored `v: 1` body reads back and is written the same way.
    #[test]
    fn the_v1_body_round_trips() {
        let stored = serde_json::json!({"type": "acquire-gap", "v": 1, "scope": {"clientId": "acme"}, "gapId": "g1"});
        let body: AcquireGapBody = serde_json::from_value(stored.clone()).expect("reads");
        assert_eq!((body.v, body.gap_id.as_str()), (1, "g1"));
        let written = serde_json::to_value(&body).expect("writes");
        assert_eq!(
            (written["type"].clone(), written["gapId"].clone()),
            (stored["type"].clone(), stored["gapId"].clone())
        );
        assert_eq!(
            serde_json::from_value::<AcquireGapBody>(written).expect("reads"),
            body
        );
    }
}
