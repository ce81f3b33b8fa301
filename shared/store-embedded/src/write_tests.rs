//! Tests of the writer: group commits, careful retries, failed members.

use super::*;
use evident_store::ChunkStore;
use evident_store::conformance::{DIM, axis, chunk, vector_space};

/// One small document source (`urn:d{i}`, one chunk) of client `c`; `durable_tests` too.
pub(crate) fn source(i: usize) -> SourceWrite {
    let scope = evident_core::Scope::client("c");
    let urn = format!("urn:d{i}");
    SourceWrite {
        partition: "c".into(),
        source_urn: urn.clone(),
        upsert_chunks: vec![(
            chunk(
                &scope,
                &urn,
                &format!("d{i}"),
                "doc",
                &format!("text {i}"),
                0,
            ),
            axis(DIM, i, 0.0),
        )],
        ..Default::default()
    }
}

/// An edge without evidence breaks the contract: its write must fail.
fn bad() -> SourceWrite {
    let mut w = source(99);
    w.edges = vec![evident_core::EdgeWrite {
        from: evident_core::NodeKey::from_canonical("a:b"),
        to: evident_core::NodeKey::from_canonical("c:d"),
        edge_type: "rel".into(),
        props: Default::default(),
        evidence: vec![],
    }];
    w
}

fn job(write: SourceWrite) -> (Job, oneshot::Receiver<Result<RemovedCounts>>) {
    let (reply, rx) = oneshot::channel();
    let job = Job::Source {
        write,
        analyzed: Vec::new(),
        reply,
    };
    (job, rx)
}

/// The savepoint-free attempt meets a failing member in the middle of a group: the group
/// runs again carefully, the member fails alone and its neighbours commit (once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_write_in_a_group_fails_alone() {
    let dir = tempfile::tempdir().expect("tmp");
    let store = EmbeddedStore::open(
        crate::EmbeddedOptions::new(dir.path(), vector_space()).background_indexer(false),
    )
    .expect("open");
    let (mut jobs, mut answers) = (Vec::new(), Vec::new());
    for w in [source(1), source(2), bad(), source(3)] {
        let (j, rx) = job(w);
        jobs.push(j);
        answers.push(rx);
    }
    let (op_reply, op_answer) = oneshot::channel();
    jobs.insert(
        1,
        Job::Op(Box::new(Op {
            f: Some(|c: &Connection| {
                c.execute("CREATE TABLE op_ran (x INTEGER)", [])
                    .map_err(sqlite_err)
            }),
            out: None,
            publish: None,
            reply: Some(op_reply),
        })),
    );
    for answer in commit_group(&store.inner, jobs) {
        answer(Ok(()));
    }
    let mut results = Vec::new();
    for rx in answers {
        results.push(rx.await.expect("answered").is_ok());
    }
    assert_eq!(results, vec![true, true, false, true]);
    assert!(op_answer.await.expect("op answered").is_ok());

    let vis = evident_core::Visibility::of(evident_core::Scope::client("c"));
    let ids: Vec<String> = ["d1", "d2", "d99", "d3"].map(String::from).to_vec();
    let mut found: Vec<String> = store
        .get(&vis, &ids)
        .await
        .expect("get")
        .into_iter()
        .map(|c| c.id)
        .collect();
    found.sort();
    assert_eq!(found, vec!["d1", "d2", "d3"], "the neighbours, once each");
    let report = store.check_integrity().await.expect("integrity");
    assert!(report.is_ok(), "{report:?}");
    assert_eq!((report.chunks, report.nodes, report.edges), (3, 0, 0));
}

/// Registrations ride in the source's own transaction: one that would close a cycle fails
/// its whole write (no chunk, no record, no alias) and its group neighbours keep theirs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_and_its_aliases_are_stored_together_or_not_at_all() {
    use evident_store::{AliasRegistry, SourceRegistry};
    let k = evident_core::NodeKey::from_canonical;
    let dir = tempfile::tempdir().expect("tmp");
    let store = EmbeddedStore::open(
        crate::EmbeddedOptions::new(dir.path(), vector_space()).background_indexer(false),
    )
    .expect("open");
    store
        .register("c", &k("a:1"), &k("b:1"))
        .await
        .expect("a → b");
    let with = |i: usize, alias: &'static str, canonical: &'static str| {
        let mut w = source(i);
        w.record = evident_store::RecordUpdate::Put(evident_store::SourceRecord {
            scope: evident_core::Scope::client("c"),
            source_urn: w.source_urn.clone(),
            kind: "doc".into(),
            title: None,
            content_hash: format!("h{i}"),
            status: evident_store::SourceStatus::Indexed,
            chunk_count: 1,
            last_indexed_at: "2026-11-26T00:00:00Z".into(),
            last_error: None,
        });
        w.register_aliases = vec![(k(alias), k(canonical))];
        w
    };
    let (mut jobs, mut answers) = (Vec::new(), Vec::new());
    for w in [
        with(1, "x:1", "y:1"),
        with(2, "b:1", "a:1"),
        with(3, "z:1", "b:1"),
    ] {
        let (j, rx) = job(w);
        jobs.push(j);
        answers.push(rx);
    }
    for answer in commit_group(&store.inner, jobs) {
        answer(Ok(()));
    }
    let mut ok = Vec::new();
    for rx in answers {
        ok.push(rx.await.expect("answered").is_ok());
    }
    assert_eq!(ok, vec![true, false, true], "b → a would close a cycle");
    let mut stored = Vec::new();
    for urn in ["urn:d1", "urn:d2", "urn:d3"] {
        stored.push(
            SourceRegistry::get(&store, "c", urn)
                .await
                .expect("record")
                .is_some(),
        );
    }
    assert_eq!(stored, vec![true, false, true]);
    let resolved = store
        .resolve("c", &[k("x:1"), k("b:1"), k("z:1")])
        .await
        .expect("resolve");
    assert_eq!(resolved, vec![k("y:1"), k("b:1"), k("b:1")]);
    let report = store.check_integrity().await.expect("integrity");
    assert_eq!(report.chunks, 2, "{report:?}");
}
