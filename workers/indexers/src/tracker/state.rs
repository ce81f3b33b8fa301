//! What a tracker source remembers between polls, beside its `updated` cursor: the plan the
//! cursor belongs to, and per issue the fingerprint last queued and the validators and
//! contents of its comment and history lists.
//!
//! The plan is a fingerprint of the settings that decide which items a poll reads
//! (`includePullRequests`, the repository or project, the Jira fields, the version of the
//! rules that tell pull requests apart). Items a poll skips still move the cursor, so when
//! the plan changes the cursor means nothing any more: the next poll starts again from the
//! epoch — and what it reads again costs little, since unchanged comment and history lists
//! answer 304 to their stored ETags and unchanged issues are not queued again.

use evident_store::indexers::IndexerSource;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::http::{Api, Reply, Validators};
use super::{CURSOR, shape};
use crate::poll::{PollContext, PollError};
use evident_extract::tracker::TrackerError;

/// Cursor keys.
const PLAN: &str = "plan";
const LIST: &str = "list";
const ISSUE_PREFIX: &str = "issue:";

/// Contents larger than this (serialised) are not kept for 304s: the list is read in full
/// each time instead (a cursor is a record in the indexer store, not a blob store).
const MAX_CACHED_BYTES: usize = 256 * 1024;

/// A list answer kept for conditional requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cached {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    etag: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_modified: Option<String>,
    /// The parsed items of the answer.
    items: Value,
}

impl Cached {
    fn validators(&self) -> Validators {
        Validators {
            etag: self.etag.clone(),
            last_modified: self.last_modified.clone(),
        }
    }
}

/// What the last poll that read an issue kept of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IssueState {
    /// The fingerprint of the prepared issue last queued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// Comment and history lists by name (`comments`, `events`, `notes`, `stateEvents`).
    #[serde(default)]
    pub lists: std::collections::BTreeMap<String, Cached>,
}

/// The list a poll's first request read, when it was the only page: a later poll asking
/// the same answers 304 and has nothing to do.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListState {
    request: String,
    #[serde(flatten)]
    cached: Cached,
}

/// A source's state, read and written through its lease.
pub struct SourceState<'a> {
    pub ctx: &'a PollContext,
    pub source: &'a IndexerSource,
    /// The cursor as moved so far in this poll.
    cursor: Option<String>,
}

impl<'a> SourceState<'a> {
    /// Loads the cursor under `plan`; a different (or no) stored plan starts again from the
    /// epoch, forgetting the cursor and the kept first page.
    pub async fn open(
        ctx: &'a PollContext,
        source: &'a IndexerSource,
        plan: &str,
    ) -> Result<SourceState<'a>, PollError> {
        let stored = ctx.cursor(&source.key(), PLAN).await?;
        let mut cursor = ctx
            .cursor(&source.key(), CURSOR)
            .await?
            .and_then(|v| v.as_str().map(str::to_string));
        if stored.as_ref().and_then(Value::as_str) != Some(plan) {
            if cursor.is_some() {
                tracing::info!(source_id = %source.id, plan, "tracker settings changed: reading from the start");
            }
            ctx.forget_cursor(&source.key(), CURSOR).await?;
            ctx.forget_cursor(&source.key(), LIST).await?;
            ctx.set_cursor(&source.key(), PLAN, &json!(plan)).await?;
            cursor = None;
        }
        Ok(SourceState {
            ctx,
            source,
            cursor,
        })
    }

    /// Where the poll starts (`None`: from the beginning).
    pub fn since(&self) -> Option<&str> {
        self.cursor.as_deref()
    }

    /// Moves the cursor to `updated` (an item at it has been queued or skipped on purpose)
    /// when it is newer. The trackers' "since" is inclusive: the item is read again next
    /// time and recognised.
    pub async fn advance(&mut self, updated: Option<&str>) -> Result<(), PollError> {
        if let Some(n) = updated
            && self.cursor.as_deref().is_none_or(|c| n > c)
        {
            self.ctx
                .set_cursor(&self.source.key(), CURSOR, &json!(n))
                .await?;
            self.cursor = Some(n.to_string());
        }
        Ok(())
    }

    /// The first page of the issue list, conditional on the kept one when it was the same
    /// request; `None` when it answered 304 (nothing changed, nothing to do).
    pub async fn first_page(
        &self,
        api: &Api,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<Option<Reply>, PollError> {
        let request = format!("{path}?{query:?}");
        let kept: Option<ListState> = self
            .ctx
            .cursor(&self.source.key(), LIST)
            .await?
            .and_then(|v| serde_json::from_value(v).ok())
            .filter(|l: &ListState| l.request == request);
        let validators = kept.as_ref().map(|k| k.cached.validators());
        let reply = api.get_if(path, query, validators.as_ref()).await?;
        Ok((reply.status != 304).then_some(reply))
    }

    /// Keeps the validators of a first page that was the whole list, once all its items are
    /// done.
    pub async fn keep_first_page(
        &self,
        path: &str,
        query: &[(&str, String)],
        validators: Option<Validators>,
    ) -> Result<(), PollError> {
        let Some(v) = validators else {
            return Ok(());
        };
        let state = ListState {
            request: format!("{path}?{query:?}"),
            cached: Cached {
                etag: v.etag,
                last_modified: v.last_modified,
                items: Value::Null,
            },
        };
        self.ctx
            .set_cursor(&self.source.key(), LIST, &json!(state))
            .await
    }

    pub async fn issue(&self, key: &str) -> Result<IssueState, PollError> {
        Ok(self
            .ctx
            .cursor(&self.source.key(), &format!("{ISSUE_PREFIX}{key}"))
            .await?
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default())
    }

    pub async fn put_issue(&self, key: &str, state: &IssueState) -> Result<(), PollError> {
        self.ctx
            .set_cursor(
                &self.source.key(),
                &format!("{ISSUE_PREFIX}{key}"),
                &json!(state),
            )
            .await
    }
}

/// A comment or history list of an issue, as [`read_list`] reads it.
pub struct ListRead<T> {
    pub items: Vec<T>,
    /// What to keep for the next poll's conditional request.
    pub keep: Option<Cached>,
    /// It answered 304: the kept items, nothing read.
    pub not_modified: bool,
}

impl IssueState {
    /// Reads the list `name` of this issue ([`read_list`]) and keeps what it says to.
    #[allow(clippy::too_many_arguments)]
    pub async fn read<T: Serialize + DeserializeOwned>(
        &mut self,
        name: &str,
        api: &Api,
        path: &str,
        query: &[(&str, String)],
        page_size: usize,
        parse: impl Fn(&[u8]) -> Result<Vec<T>, TrackerError>,
        what: &str,
    ) -> Result<ListRead<T>, PollError> {
        let read = read_list(
            api,
            path,
            query,
            page_size,
            parse,
            what,
            self.lists.get(name),
        )
        .await?;
        match &read.keep {
            Some(k) => {
                self.lists.insert(name.to_string(), k.clone());
            }
            None => {
                self.lists.remove(name);
            }
        }
        Ok(read)
    }
}

/// Every page of a list, parsed by `parse` — conditionally on `kept` (the same list as the
/// last poll read it): a 304 gives the kept items back without reading anything. What is
/// kept for next time is a list of one page with fewer than `page_size` items, so that no
/// page can have been added behind an unchanged first one.
pub async fn read_list<T: Serialize + DeserializeOwned>(
    api: &Api,
    path: &str,
    query: &[(&str, String)],
    page_size: usize,
    parse: impl Fn(&[u8]) -> Result<Vec<T>, TrackerError>,
    what: &str,
    kept: Option<&Cached>,
) -> Result<ListRead<T>, PollError> {
    let validators = kept.map(Cached::validators);
    let mut reply = api.get_if(path, query, validators.as_ref()).await?;
    if reply.status == 304
        && let Some(k) = kept
        && let Ok(items) = serde_json::from_value::<Vec<T>>(k.items.clone())
    {
        return Ok(ListRead {
            items,
            keep: Some(k.clone()),
            not_modified: true,
        });
    }
    if reply.status == 304 {
        // Kept items that no longer parse (an older version's): read again in full.
        reply = api.get(path, query).await?;
    }
    let first = Validators::of(&reply);
    let mut items = parse(&reply.body).map_err(|e| shape(what, e))?;
    let single = reply.next.is_none() && items.len() < page_size;
    while let Some(next) = reply.next.take() {
        reply = api.get(&next, &[]).await?;
        items.extend(parse(&reply.body).map_err(|e| shape(what, e))?);
    }
    let keep = match first {
        Some(v) if single => {
            let value = serde_json::to_value(&items).unwrap_or(Value::Null);
            (value.to_string().len() <= MAX_CACHED_BYTES).then_some(Cached {
                etag: v.etag,
                last_modified: v.last_modified,
                items: value,
            })
        }
        _ => None,
    };
    Ok(ListRead {
        items,
        keep,
        not_modified: false,
    })
}
