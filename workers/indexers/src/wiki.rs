//! Confluence: the pages of a space with their hierarchy, labels and attachments.
//!
//! The first poll lists the space (`/rest/api/content`); later polls ask CQL for pages
//! modified since the newest version seen (`lastmodified >=`, to the minute, so the boundary
//! page comes back and is recognised by its version). A page is re-read only when its
//! version moved; its attachments are downloaded when theirs did, and go through the
//! document pipeline as `wiki-attachment` items linked to the page. A file attached without a
//! page edit does not move the page's version: a second CQL query finds attachments modified
//! since the cursor, and their known pages are read again.
//!
//! CQL does not return deleted (or trashed) pages, so deletions are found by comparing the
//! pages known to the source with a complete listing: the first poll's own listing, then an
//! id-only listing every `deletionCheckHours`. A known page missing from a complete,
//! non-empty listing is purged with its attachments.

use async_trait::async_trait;
use evident_core::chunking::ChunkingConfig;
use evident_extract::wiki::{
    ATTACHMENT_KIND, WikiAttachment, WikiContext, WikiPage, absolute, add_attachments,
    attachment_hits, attachment_meta, attachments, content_ids, content_page, page_source,
    page_urn, single_page,
};
use evident_store::indexers::IndexerSource;
use serde_json::json;

use crate::items::ItemTask;
use crate::poll::{LeasedPoller, PollContext, PollError, PollReport};
use crate::report::{Skips, WikiReport};
use crate::sources::config_of;
use crate::tracker::http::{Api, Reply, TokenStyle};
use crate::tracker::jql_minute;
pub use evident_sources::kinds::wiki::ConfluenceConfig;

const EXPAND: &str = "body.storage,version,ancestors,metadata.labels,space";
const CURSOR: &str = "modified";
/// When the last complete listing compared known pages with the space (epoch ms).
const CHECKED: &str = "deletionsChecked";
/// Cursor keys of known pages: `page:{id}` → the version queued.
const PAGE_PREFIX: &str = "page:";

/// Polls `kind = "confluence"` sources.
pub struct ConfluencePoller {
    pub ctx: PollContext,
    pub chunking: ChunkingConfig,
}

/// One poll's counts, and the versions queued so far of the source's pages and attachments
/// (`page:{id}`, `att:{id}` cursors: read once per poll, kept up to date as they are written).
#[derive(Default)]
struct Tally {
    pages: u64,
    unchanged: u64,
    attachments: u64,
    skipped: Vec<String>,
    versions: std::collections::HashMap<String, u64>,
}

impl ConfluencePoller {
    /// Records that `key` is queued at `version`.
    async fn mark(
        &self,
        source: &IndexerSource,
        tally: &mut Tally,
        key: String,
        version: u64,
    ) -> Result<(), PollError> {
        self.ctx
            .set_cursor(&source.key(), &key, &json!(version))
            .await?;
        tally.versions.insert(key, version);
        Ok(())
    }

    async fn attachments_of(
        &self,
        api: &Api,
        source: &IndexerSource,
        cfg: &ConfluenceConfig,
        page: &WikiPage,
        page_is_new: bool,
        tally: &mut Tally,
    ) -> Result<Vec<WikiAttachment>, PollError> {
        let mut all = Vec::new();
        let mut reply = api
            .get(
                &format!("/rest/api/content/{}/child/attachment", page.id),
                &[("expand", "version".to_string())],
            )
            .await?;
        loop {
            let (list, next) = attachments(&reply.body)
                .map_err(|e| PollError::malformed("confluence attachments", e))?;
            all.extend(list);
            match next {
                Some(n) => reply = api.get(&n, &[]).await?,
                None => break,
            }
        }
        for att in &all {
            let key = format!("att:{}", att.id);
            let version = att.version.unwrap_or(1);
            // A page new to the source (or restored after a purge) gets all its attachments,
            // whatever an earlier life of the page left in their cursors.
            if !page_is_new && tally.versions.get(&key) == Some(&version) {
                continue;
            }
            if att.size.is_some_and(|s| s > cfg.max_attachment_bytes) {
                tally.skipped.push(format!(
                    "{} on page {}: over the {}-byte limit",
                    att.title, page.id, cfg.max_attachment_bytes
                ));
                continue;
            }
            if att.download.is_none() {
                continue;
            }
            let meta = attachment_meta(&source.id, page, att, Some(api.base()));
            let reply = api.get(&meta.uri, &[]).await?;
            if reply.body.len() as u64 > cfg.max_attachment_bytes {
                tally.skipped.push(format!(
                    "{} on page {}: over the {}-byte limit",
                    att.title, page.id, cfg.max_attachment_bytes
                ));
                continue;
            }
            let task = ItemTask::IngestDocument {
                v: 1,
                source_id: source.id.clone(),
                source_urn: meta.source_urn.clone(),
                uri: meta.uri,
                title: Some(meta.title),
                content_type: att
                    .media_type
                    .clone()
                    .or_else(|| reply.header("content-type").map(str::to_string)),
                kind: ATTACHMENT_KIND.into(),
                data: reply.body,
                observed_at: meta.observed_at,
                node: Some(meta.node.to_string()),
            };
            task.queue(&self.ctx, source, &meta.source_urn).await?;
            self.mark(source, tally, key, version).await?;
            tally.attachments += 1;
        }
        Ok(all)
    }

    async fn handle_page(
        &self,
        api: &Api,
        source: &IndexerSource,
        cfg: &ConfluenceConfig,
        page: &WikiPage,
        force: bool,
        tally: &mut Tally,
    ) -> Result<(), PollError> {
        let key = format!("{PAGE_PREFIX}{}", page.id);
        let known = tally.versions.get(&key).copied();
        if known == Some(page.version) && !force {
            tally.unchanged += 1;
            return Ok(());
        }
        let atts = if cfg.attachments {
            self.attachments_of(api, source, cfg, page, known.is_none(), tally)
                .await?
        } else {
            Vec::new()
        };
        let mut prepared = page_source(
            page,
            &WikiContext {
                scope: &source.scope,
                source_id: &source.id,
                chunking: &self.chunking,
            },
        );
        add_attachments(&mut prepared, page, &atts);
        self.ctx
            .tasks
            .enqueue_prepared(
                prepared,
                &page_urn(&source.id, &page.id),
                self.ctx.priority,
                self.ctx.clock.now_ms(),
            )
            .await?;
        self.mark(source, tally, key, page.version).await?;
        tally.pages += 1;
        Ok(())
    }

    /// An attachment uploaded or replaced without a page edit leaves the page's version as it
    /// was: CQL finds such attachments, and each known page that has one not yet queued is
    /// read again and handled as changed (its attachment list and edges are the page's).
    #[allow(clippy::too_many_arguments)]
    async fn pages_with_new_attachments(
        &self,
        api: &Api,
        source: &IndexerSource,
        cfg: &ConfluenceConfig,
        since: &str,
        handled: &std::collections::HashSet<String>,
        newest: &mut Option<String>,
        tally: &mut Tally,
    ) -> Result<(), PollError> {
        let mut reply = api
            .get(
                "/rest/api/content/search",
                &[
                    (
                        "cql",
                        format!(
                            "space = \"{}\" and type = attachment and lastmodified >= \"{}\" order by lastmodified asc",
                            cfg.space,
                            jql_minute(since)
                        ),
                    ),
                    ("expand", "version,container".into()),
                    ("limit", cfg.limit.to_string()),
                ],
            )
            .await?;
        let mut stale: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
        loop {
            let (hits, next) = attachment_hits(&reply.body)
                .map_err(|e| PollError::malformed("confluence attachments", e))?;
            for (page_id, att) in hits {
                if handled.contains(&page_id)
                    || !tally
                        .versions
                        .contains_key(&format!("{PAGE_PREFIX}{page_id}"))
                {
                    continue; // re-read this poll already, or a page the source does not have
                }
                let version = att.version.unwrap_or(1);
                if tally.versions.get(&format!("att:{}", att.id)) == Some(&version) {
                    continue;
                }
                if let Some(m) = &att.modified
                    && newest.as_deref().is_none_or(|n| m.as_str() > n)
                {
                    *newest = Some(m.clone());
                }
                stale.insert(page_id);
            }
            match next {
                Some(n) => reply = api.get(&absolute(Some(api.base()), &n), &[]).await?,
                None => break,
            }
        }
        for page_id in stale {
            let reply = api
                .get(
                    &format!("/rest/api/content/{page_id}"),
                    &[("expand", EXPAND.to_string())],
                )
                .await?;
            let page = single_page(&reply.body)
                .map_err(|e| PollError::malformed(format!("confluence page {page_id}"), e))?;
            self.handle_page(api, source, cfg, &page, true, tally)
                .await?;
        }
        Ok(())
    }

    async fn deletion_check_due(
        &self,
        source: &IndexerSource,
        cfg: &ConfluenceConfig,
        now: i64,
    ) -> Result<bool, PollError> {
        let every_ms = i64::from(cfg.deletion_check_hours) * 3_600_000;
        let last = self
            .ctx
            .cursor(&source.key(), CHECKED)
            .await?
            .and_then(|v| v.as_i64());
        Ok(last.is_none_or(|t| now - t >= every_ms))
    }

    /// Every page id of the space: a listing without `expand`, all pages of it.
    async fn page_ids(
        &self,
        api: &Api,
        cfg: &ConfluenceConfig,
    ) -> Result<std::collections::HashSet<String>, PollError> {
        let mut ids = std::collections::HashSet::new();
        let mut reply = api
            .get(
                "/rest/api/content",
                &[
                    ("spaceKey", cfg.space.clone()),
                    ("type", "page".into()),
                    ("limit", cfg.limit.to_string()),
                    ("start", "0".into()),
                ],
            )
            .await?;
        loop {
            let listing = content_ids(&reply.body)
                .map_err(|e| PollError::malformed("confluence page ids", e))?;
            ids.extend(listing.ids);
            match listing.next {
                Some(next) => {
                    let base = listing.base.as_deref().or(Some(api.base()));
                    reply = api.get(&absolute(base, &next), &[]).await?;
                }
                None => break,
            }
        }
        Ok(ids)
    }

    /// Queues the purge of every known page (and its attachments) missing from `present`, a
    /// complete listing of the space, and forgets it. An empty listing purges nothing: an
    /// emptied space is far rarer than a token that lost its permission.
    async fn purge_missing(
        &self,
        source: &IndexerSource,
        present: &std::collections::HashSet<String>,
        tally: &mut Tally,
    ) -> Result<u64, PollError> {
        let known: Vec<String> = tally
            .versions
            .keys()
            .filter(|k| k.starts_with(PAGE_PREFIX))
            .cloned()
            .collect();
        if present.is_empty() {
            if !known.is_empty() {
                tracing::warn!(
                    source_id = %source.id,
                    known = known.len(),
                    "the space lists no pages; nothing purged (check the token's permissions)"
                );
            }
            return Ok(0);
        }
        let mut purged = 0;
        for key in known {
            let id = &key[PAGE_PREFIX.len()..];
            if present.contains(id) {
                continue;
            }
            let urn = page_urn(&source.id, id);
            let now = self.ctx.clock.now_ms();
            self.ctx
                .tasks
                .enqueue_purge(source.scope.clone(), &urn, self.ctx.priority, now)
                .await?;
            self.ctx
                .tasks
                .enqueue_purge_prefix(
                    source.scope.clone(),
                    &format!("{urn}:attachment:"),
                    self.ctx.priority,
                    now,
                )
                .await?;
            self.ctx.forget_cursor(&source.key(), &key).await?;
            tally.versions.remove(&key);
            purged += 1;
        }
        Ok(purged)
    }

    async fn poll_now(&self, source: &IndexerSource) -> Result<WikiReport, PollError> {
        let cfg: ConfluenceConfig = config_of(source).map_err(PollError::Config)?;
        let api = Api::of(
            &self.ctx,
            "confluence",
            &cfg.base_url,
            &cfg.credentials(),
            TokenStyle::Bearer,
            &[],
        )?;
        let since = self
            .ctx
            .cursor(&source.key(), CURSOR)
            .await?
            .and_then(|v| v.as_str().map(str::to_string));
        let mut reply = first_listing(&api, &cfg, since.as_deref()).await?;
        let mut tally = Tally {
            versions: self.known_versions(source).await?,
            ..Tally::default()
        };
        let mut newest = since.clone();
        let mut listed: std::collections::HashSet<String> = std::collections::HashSet::new();
        loop {
            let listing = content_page(&reply.body)
                .map_err(|e| PollError::malformed("confluence pages", e))?;
            listed.extend(listing.pages.iter().map(|p| p.id.clone()));
            for page in &listing.pages {
                self.handle_page(&api, source, &cfg, page, false, &mut tally)
                    .await?;
                if let Some(m) = &page.modified
                    && newest.as_deref().is_none_or(|n| m.as_str() > n)
                {
                    newest = Some(m.clone());
                }
            }
            // The listing is not in modification order: the cursor moves once all is queued.
            match listing.next {
                // `_links.next` is relative to `_links.base` (the REST root's parent).
                Some(next) => {
                    let base = listing.base.as_deref().or(Some(api.base()));
                    reply = api.get(&absolute(base, &next), &[]).await?;
                }
                None => break,
            }
        }
        if let Some(when) = &since
            && cfg.attachments
        {
            self.pages_with_new_attachments(
                &api,
                source,
                &cfg,
                when,
                &listed,
                &mut newest,
                &mut tally,
            )
            .await?;
        }
        if newest != since
            && let Some(n) = &newest
        {
            self.ctx
                .set_cursor(&source.key(), CURSOR, &json!(n))
                .await?;
        }
        let deleted = self
            .check_deletions(&api, source, &cfg, since.is_none(), listed, &mut tally)
            .await?;
        Ok(WikiReport {
            deleted,
            pages: tally.pages,
            queued: tally.pages + tally.attachments,
            unchanged: tally.unchanged,
            attachments: tally.attachments,
            skipped: Skips::of(tally.skipped),
        })
    }

    /// The versions queued before (pages and attachments), from the source's cursors.
    async fn known_versions(
        &self,
        source: &IndexerSource,
    ) -> Result<std::collections::HashMap<String, u64>, PollError> {
        Ok(self
            .ctx
            .cursors(&source.key(), "")
            .await?
            .into_iter()
            .filter(|(k, _)| k.starts_with(PAGE_PREFIX) || k.starts_with("att:"))
            .filter_map(|(k, v)| Some((k, v.as_u64()?)))
            .collect())
    }

    /// Purges the pages no longer in the space; the count. The first poll (`first`) listed
    /// the whole space (`listed`); later ones list it again when the check is due.
    async fn check_deletions(
        &self,
        api: &Api,
        source: &IndexerSource,
        cfg: &ConfluenceConfig,
        first: bool,
        listed: std::collections::HashSet<String>,
        tally: &mut Tally,
    ) -> Result<u64, PollError> {
        let now = self.ctx.clock.now_ms();
        let complete = if first {
            Some(listed)
        } else if self.deletion_check_due(source, cfg, now).await? {
            Some(self.page_ids(api, cfg).await?)
        } else {
            None
        };
        let mut deleted = 0;
        if let Some(present) = complete {
            deleted = self.purge_missing(source, &present, tally).await?;
            self.ctx
                .set_cursor(&source.key(), CHECKED, &json!(now))
                .await?;
        }
        Ok(deleted)
    }
}

/// The first page of the listing: the whole space on the first poll, else the pages
/// modified since the cursor's minute (CQL), oldest first.
async fn first_listing(
    api: &Api,
    cfg: &ConfluenceConfig,
    since: Option<&str>,
) -> Result<Reply, PollError> {
    match since {
        None => {
            api.get(
                "/rest/api/content",
                &[
                    ("spaceKey", cfg.space.clone()),
                    ("type", "page".into()),
                    ("expand", EXPAND.into()),
                    ("limit", cfg.limit.to_string()),
                    ("start", "0".into()),
                ],
            )
            .await
        }
        Some(when) => {
            api.get(
                "/rest/api/content/search",
                &[
                    (
                        "cql",
                        format!(
                            "space = \"{}\" and type = page and lastmodified >= \"{}\" order by lastmodified asc",
                            cfg.space,
                            jql_minute(when)
                        ),
                    ),
                    ("expand", EXPAND.into()),
                    ("limit", cfg.limit.to_string()),
                ],
            )
            .await
        }
    }
}

#[async_trait]
impl LeasedPoller for ConfluencePoller {
    const KIND: &'static str = "confluence";

    fn context(&self) -> &PollContext {
        &self.ctx
    }

    async fn poll_source(&self, source: &IndexerSource) -> Result<PollReport, PollError> {
        self.poll_now(source).await.map(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::SourceConfig;

    #[test]
    fn cql_dates_are_minutes() {
        assert_eq!(jql_minute("2026-01-16T08:15:42.000Z"), "2026-01-16 08:15");
    }

    #[test]
    fn settings_are_checked() {
        let ok: ConfluenceConfig = serde_json::from_value(json!({
            "baseUrl": "https://acme.atlassian.net/wiki", "space": "ENG",
            "emailEnv": "ATLASSIAN_EMAIL", "tokenEnv": "ATLASSIAN_TOKEN"
        }))
        .expect("config");
        assert!(ok.validate().is_ok());
        assert_eq!(ok.name(), "eng");
        let mut bad = ok.clone();
        bad.space = "ENG SPACE".into();
        assert!(bad.validate().is_err());
    }
}
