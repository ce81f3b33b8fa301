//! Graph store case: evidence back-links ([`crate::GraphStore::evidenced_by`]).

use super::graph::{chunk_per_scope, edge, node, upsert};
use super::*;
use crate::{EdgeKey, Evidenced};

fn links(chunk: &str, nodes: &[&str], edges: &[(&str, &str, &str)]) -> Evidenced {
    Evidenced {
        chunk_id: chunk.into(),
        nodes: nodes.iter().map(|k| key(k)).collect(),
        edges: edges
            .iter()
            .map(|(f, t, to)| EdgeKey {
                from: key(f),
                edge_type: t.to_string(),
                to: key(to),
            })
            .collect(),
    }
}

fn ids(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Long because it is one fixture's story: writes in four scopes (one an agent's edge citing
/// a chunk written before it), the links each reader sees, then the links once one chunk's
/// evidence is removed.
pub async fn evidence_back_links_follow_visibility(h: &Harness) {
    let global = Scope::global();
    let p1 = Scope::client("c1").with_project("p1");
    let p2 = Scope::client("c1").with_project("p2");
    let c2 = Scope::client("c2");
    let chunks = [(&global, "cg"), (&p1, "c1a"), (&p2, "c1b"), (&c2, "c2a")];
    chunk_per_scope(h, &chunks).await;
    let g = h.stores.graph.as_ref();
    let all = ids(&["c1b", "c1a", "cg", "c2a", "nothing"]);
    assert!(
        g.evidenced_by(&vis(&p1), &all)
            .await
            .expect("empty")
            .is_empty()
    );

    // Global: a node only. c1/p1: an edge (its endpoints evidenced with it). c1/p2: a node.
    upsert(
        g,
        "",
        vec![node("topic:a0", vec![ev("cg", &global)])],
        vec![],
    )
    .await;
    let e1 = ev("c1a", &p1);
    upsert(
        g,
        "c1",
        vec![node("topic:a0", vec![e1.clone()])],
        vec![edge("topic:a0", "links", "topic:a1", vec![e1.clone()])],
    )
    .await;
    upsert(
        g,
        "c1",
        vec![node("topic:s1", vec![ev("c1b", &p2)])],
        vec![],
    )
    .await;
    upsert(g, "c2", vec![node("topic:x", vec![ev("c2a", &c2)])], vec![]).await;
    // Later, an agent's edge citing the existing chunk `c1a` (written alone, endpoints new).
    upsert(
        g,
        "c1",
        vec![],
        vec![edge(
            "service:billing",
            "depends_on",
            "service:ledger",
            vec![e1],
        )],
    )
    .await;

    let c1a = links(
        "c1a",
        &["service:billing", "service:ledger", "topic:a0", "topic:a1"],
        &[
            ("service:billing", "depends_on", "service:ledger"),
            ("topic:a0", "links", "topic:a1"),
        ],
    );
    let cg = links("cg", &["topic:a0"], &[]);
    // p1 sees its chunk's links and the global one, in the order asked; never p2's or c2's.
    let seen = g.evidenced_by(&vis(&p1), &all).await.expect("p1");
    assert_eq!(seen, vec![c1a.clone(), cg.clone()]);
    let seen = g.evidenced_by(&vis(&p2), &all).await.expect("p2");
    assert_eq!(seen, vec![links("c1b", &["topic:s1"], &[]), cg.clone()]);
    let seen = g.evidenced_by(&vis(&c2), &all).await.expect("c2");
    assert_eq!(seen, vec![cg.clone(), links("c2a", &["topic:x"], &[])]);
    let seen = g.evidenced_by(&vis(&global), &all).await.expect("global");
    assert_eq!(seen, vec![cg.clone()]);
    // A chunk asked twice is answered once.
    let twice = ids(&["cg", "cg"]);
    assert_eq!(
        g.evidenced_by(&vis(&p1), &twice)
            .await
            .expect("twice")
            .len(),
        1
    );

    // The evidence of `c1a` removed (a purge): its links are gone with it.
    g.remove_evidence("c1", &ids(&["c1a"]))
        .await
        .expect("remove");
    let seen = g.evidenced_by(&vis(&p1), &all).await.expect("after");
    assert_eq!(seen, vec![cg]);
}
