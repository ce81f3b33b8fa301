//! What a client has, at a glance (the console's overview): the indexed sources and their
//! chunks, the graph's nodes and edges (exact, counted by the graph store), the polled
//! sources by state, the queue by state and priority, and the tasks finished in the last
//! hour. Counts that would need a scan of everything are bounded and say so (`…_capped`),
//! so the page stays fast at any size.

use std::collections::BTreeMap;

use evident_core::{Scope, Visibility};
use evident_store::indexers::IndexerSource;
use evident_store::queue::{QueueCounts, TaskFilter, TaskState};
use serde::Serialize;

use crate::{Kb, Result, TaskSubmitter};

/// Most tasks of one final state counted for the last hour's throughput (the store lists only
/// the window, so below this the figure is exact).
pub const MAX_COUNTED_TASKS: usize = 5_000;
const HOUR_MS: i64 = 3_600_000;

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Overview {
    /// Indexed sources (documents, files, messages…) the reader sees, and their chunks.
    pub indexed_sources: usize,
    pub chunks: u64,
    /// More indexed sources than one listing returns ([`crate::listing::MAX_SOURCES`]) exist:
    /// the two figures above cover the first ones.
    pub sources_capped: bool,
    /// Visible graph nodes and edges ([`evident_store::GraphStore::count`]).
    pub nodes: u64,
    pub edges: u64,
    /// Polled sources by [`source_state`].
    pub sources_by_state: BTreeMap<&'static str, u64>,
    pub queue: QueueCounts,
    /// Tasks that ended `done` / `error` within the hour before `now`.
    pub done_last_hour: u64,
    pub errors_last_hour: u64,
    pub throughput_capped: bool,
}

/// A polled source's state: `disabled`, `error` (its last poll failed), `ok` (its last poll
/// succeeded) or `pending` (never polled yet).
pub fn source_state(s: &IndexerSource) -> &'static str {
    if !s.enabled {
        "disabled"
    } else if s.status.last_error.is_some() {
        "error"
    } else if s.status.last_success_at.is_some() {
        "ok"
    } else {
        "pending"
    }
}

impl Kb {
    /// The overview of what `vis` sees; queue figures of `client` (every client when
    /// `None`), keeping only tasks whose scope `sees` admits.
    pub async fn overview(
        &self,
        tasks: &TaskSubmitter,
        vis: &Visibility,
        client: Option<&str>,
        sees: impl Fn(&Scope) -> bool,
        now: i64,
    ) -> Result<Overview> {
        // The reads are independent: run them at once (each store read takes its own
        // connection), so the page costs the slowest of them, not their sum.
        let since = now - HOUR_MS;
        let (indexed, graph, polled, queue, done, errors) = tokio::try_join!(
            self.sources(vis, Some(crate::listing::MAX_SOURCES)),
            async { Ok(self.stores.graph.count(vis).await?) },
            async { Ok(self.stores.indexers.list_sources(None).await?) },
            async { Ok(tasks.queue().counts(client).await?) },
            finished_since(tasks, TaskState::Done, client, &sees, since),
            finished_since(tasks, TaskState::Error, client, &sees, since),
        )?;
        let mut o = Overview {
            indexed_sources: indexed.len(),
            chunks: indexed.iter().map(|s| s.chunk_count as u64).sum(),
            sources_capped: indexed.len() >= crate::listing::MAX_SOURCES,
            nodes: graph.nodes,
            edges: graph.edges,
            queue,
            ..Overview::default()
        };
        for s in polled {
            if vis.admits(&s.scope) {
                *o.sources_by_state.entry(source_state(&s)).or_default() += 1;
            }
        }
        let ((done, more_done), (errors, more_errors)) = (done, errors);
        (o.done_last_hour, o.errors_last_hour) = (done, errors);
        o.throughput_capped = more_done || more_errors;
        Ok(o)
    }
}

/// Tasks in `state` last changed at or after `since` (the store reads only that window), and
/// whether the count stopped at [`MAX_COUNTED_TASKS`].
async fn finished_since(
    tasks: &TaskSubmitter,
    state: TaskState,
    client: Option<&str>,
    sees: &impl Fn(&Scope) -> bool,
    since: i64,
) -> Result<(u64, bool)> {
    let (mut n, mut seen, mut after) = (0, 0, None);
    loop {
        let filter = TaskFilter {
            state: Some(state),
            client_id: client.map(str::to_string),
            source_urn: None,
            after: after.clone(),
            updated_since: Some(since),
            limit: 1000,
        };
        let page = tasks.queue().list(&filter).await?;
        seen += page.len();
        n += page.iter().filter(|t| sees(&t.scope)).count() as u64;
        if page.len() < 1000 {
            return Ok((n, false));
        }
        if seen >= MAX_COUNTED_TASKS {
            return Ok((n, true));
        }
        after = page.last().map(|t| t.task_id.clone());
    }
}

#[cfg(test)]
mod tests {
    use evident_ai::Priority;

    use super::*;
    use crate::Document;

    #[tokio::test]
    async fn the_overview_counts_what_the_reader_sees() {
        let dir = tempfile::tempdir().expect("tmp");
        let kb = crate::test_kb(dir.path()).await;
        for (client, urn, text) in [
            ("acme", "doc:a", "Alice works on #42 at acme"),
            ("other", "doc:b", "Bob"),
        ] {
            let doc = Document {
                client_id: Some(client.into()),
                source_urn: urn.into(),
                kind: "doc".into(),
                content: text.into(),
                relationships: Some(vec![format!("team:{client}|owns|jira:X-1")]),
                ..Default::default()
            };
            kb.ingest(doc, Priority::DEFAULT).await.expect("ingest");
        }
        let tasks = TaskSubmitter::new(kb.stores().queue.clone());
        let doc = Document {
            client_id: Some("acme".into()),
            source_urn: "doc:q".into(),
            kind: "doc".into(),
            content: "queued".into(),
            ..Default::default()
        };
        tasks
            .enqueue_ingest(doc, Priority::DEFAULT, 1)
            .await
            .expect("queued");
        let vis = Visibility::of(Scope::client("acme"));
        let o = kb
            .overview(&tasks, &vis, Some("acme"), |_| true, 10)
            .await
            .expect("overview");
        assert_eq!((o.indexed_sources, o.sources_capped), (1, false));
        assert_eq!((o.chunks, o.nodes, o.edges), (1, 2, 1), "{o:?}");
        assert_eq!(o.queue.state(TaskState::Queued), 1);
        assert_eq!((o.done_last_hour, o.errors_last_hour), (0, 0));
        let none = kb
            .overview(
                &tasks,
                &Visibility::of(Scope::client("nobody")),
                Some("nobody"),
                |_| true,
                10,
            )
            .await
            .expect("overview");
        assert_eq!(
            (none.indexed_sources, none.chunks, none.nodes, none.edges),
            (0, 0, 0, 0)
        );
        assert_eq!(none.queue.state(TaskState::Queued), 0);
    }

    /// Throughput counts the tasks that ended within the hour, however many ended before it.
    #[tokio::test]
    async fn throughput_counts_only_the_last_hour() {
        use evident_store::queue::PriorityBand;
        let dir = tempfile::tempdir().expect("tmp");
        let kb = crate::test_kb(dir.path()).await;
        let tasks = TaskSubmitter::new(kb.stores().queue.clone());
        let now = 10 * HOUR_MS;
        // Three tasks end long before the hour, two within it.
        for (i, ended) in [HOUR_MS, HOUR_MS + 1, HOUR_MS + 2, now - HOUR_MS, now - 1]
            .into_iter()
            .enumerate()
        {
            let doc = Document {
                client_id: Some("acme".into()),
                source_urn: format!("doc:{i}"),
                kind: "doc".into(),
                content: "queued".into(),
                ..Default::default()
            };
            tasks
                .enqueue_ingest(doc, Priority::DEFAULT, ended - 1)
                .await
                .expect("queued");
            let q = tasks.queue();
            let c = q
                .claim("w", PriorityBand::ALL, 60_000, ended)
                .await
                .expect("claim")
                .expect("a task");
            assert!(q.complete(&c.token, ended).await.expect("complete"));
        }
        let vis = Visibility::of(Scope::client("acme"));
        let o = kb
            .overview(&tasks, &vis, Some("acme"), |_| true, now)
            .await
            .expect("overview");
        assert_eq!(o.queue.state(TaskState::Done), 5);
        assert_eq!((o.done_last_hour, o.errors_last_hour), (2, 0), "{o:?}");
        assert!(!o.throughput_capped);
    }
}
