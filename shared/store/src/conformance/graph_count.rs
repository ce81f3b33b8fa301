//! Graph store case: exact counts of what a reader sees ([`crate::GraphStore::count`]).

use super::graph::{edge, node};
use super::*;
use crate::GraphCounts;

fn counts(nodes: u64, edges: u64) -> GraphCounts {
    GraphCounts { nodes, edges }
}

pub async fn graph_counts_follow_visibility(h: &Harness) {
    let global = Scope::global();
    let p1 = Scope::client("c1").with_project("p1");
    let p2 = Scope::client("c1").with_project("p2");
    let c2 = Scope::client("c2");
    write_source(h, &global, "urn:cg", &[("cg", "doc", "global", 0)]).await;
    write_source(h, &p1, "urn:c1", &[("c1a", "doc", "p1", 1)]).await;
    write_source(h, &p2, "urn:c2", &[("c1b", "doc", "p2", 2)]).await;
    write_source(h, &c2, "urn:c3", &[("c2a", "doc", "c2", 3)]).await;
    let g = &h.stores.graph;
    assert_eq!(g.count(&vis(&p1)).await.expect("empty"), counts(0, 0));

    // Global: a0 -links-> a1.
    let e = || vec![ev("cg", &global)];
    g.upsert(
        "",
        vec![node("topic:a0", e()), node("topic:a1", e())],
        vec![edge("topic:a0", "links", "topic:a1", e())],
    )
    .await
    .expect("global");
    // c1/p1: the same a0 -links-> a1 (one node, one edge in both partitions), a1 -cites-> b1.
    let e = || vec![ev("c1a", &p1)];
    g.upsert(
        "c1",
        vec![
            node("topic:a0", e()),
            node("topic:a1", e()),
            node("topic:b1", e()),
        ],
        vec![
            edge("topic:a0", "links", "topic:a1", e()),
            edge("topic:a1", "cites", "topic:b1", e()),
        ],
    )
    .await
    .expect("p1");
    // c1/p2: its own node and edge, and more evidence on p1's edge (p1 must not see it).
    let e = || vec![ev("c1b", &p2)];
    g.upsert(
        "c1",
        vec![node("topic:s1", e()), node("topic:b1", e())],
        vec![
            edge("topic:b1", "hides", "topic:s1", e()),
            edge("topic:a1", "cites", "topic:b1", e()),
        ],
    )
    .await
    .expect("p2");
    // c2: a node and an edge of its own.
    let e = || vec![ev("c2a", &c2)];
    g.upsert(
        "c2",
        vec![node("topic:x", e()), node("topic:a0", e())],
        vec![edge("topic:x", "links", "topic:a0", e())],
    )
    .await
    .expect("c2");

    for (reader, want) in [
        (&global, counts(2, 1)),
        // a0 a1 b1; links (once), cites.
        (&p1, counts(3, 2)),
        // a0 a1 b1 s1; links, cites (through its own evidence), hides.
        (&p2, counts(4, 3)),
        // a0 a1 x; links (global), x-links->a0.
        (&c2, counts(3, 2)),
        // The client level sees neither project's data.
        (&Scope::client("c1"), counts(2, 1)),
        (&Scope::client("nobody"), counts(2, 1)),
    ] {
        assert_eq!(
            g.count(&vis(reader)).await.expect("count"),
            want,
            "reader {reader:?}"
        );
    }
    // The count agrees with the listing.
    let listed = g
        .list_nodes(&vis(&p2), None, None, 100)
        .await
        .expect("list");
    assert_eq!(listed.nodes.len(), 4);

    // Evidence gone: what it alone evidenced is no longer counted.
    g.remove_evidence("c1", &["c1b".to_string()])
        .await
        .expect("remove");
    assert_eq!(g.count(&vis(&p2)).await.expect("count"), counts(2, 1));
    assert_eq!(g.count(&vis(&p1)).await.expect("count"), counts(3, 2));
}
