//! Set-up shared by the suites that measure reads over generated data: a knowledge base with
//! four interactive and four bulk writers, and the design notes the read suites search.

use std::path::Path;
use std::sync::Arc;

use evident_ai::{Embedder, Priority};
use evident_kb::{Document, Kb, PoolConfig};
use evident_store_embedded::EmbeddedStore;

use crate::{Corpus, Rng};

/// A knowledge base over a fresh embedded store in `dir` with `embedder`, four interactive
/// and four bulk writers (the suites' ingest runs four in flight).
pub async fn open_kb(dir: &Path, embedder: Arc<dyn Embedder>) -> (EmbeddedStore, Kb) {
    let pools = PoolConfig {
        interactive: 4,
        bulk: 4,
    };
    crate::git::open_kb_with(dir, embedder, pools).await
}

/// Ingests `docs` generated design notes of the client `bench` (`bench:doc/{n}`, titled
/// "Design note {n}", `paragraphs` paragraphs each) through the real ingest path, four in
/// flight, and waits for all of them. `shape` adds a note's own fields (node keys, links).
pub async fn ingest_notes(
    kb: &Kb,
    corpus: &Corpus,
    rng: &mut Rng,
    docs: usize,
    paragraphs: usize,
    shape: fn(usize, Document) -> Document,
) {
    let mut in_flight = tokio::task::JoinSet::new();
    for doc in 0..docs {
        let content = corpus.document(rng, doc, paragraphs);
        let kb = kb.clone();
        in_flight.spawn(async move {
            let note = Document {
                client_id: Some("bench".into()),
                source_urn: format!("bench:doc/{doc}"),
                kind: "doc".into(),
                title: Some(format!("Design note {doc}")),
                content,
                ..Default::default()
            };
            kb.ingest(shape(doc, note), Priority::DEFAULT)
                .await
                .expect("ingest");
        });
        if in_flight.len() >= 4 {
            in_flight.join_next().await.expect("task").expect("join");
        }
    }
    while let Some(r) = in_flight.join_next().await {
        r.expect("join");
    }
}
