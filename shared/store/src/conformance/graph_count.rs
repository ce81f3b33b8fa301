//! Graph store case: exact counts of what a reader sees ([`crate::GraphStore::count`]).

use super::graph::{chunk_per_scope, edge, node, upsert};
use super::*;
use crate::GraphCounts;

fn counts(nodes: u64, edges: u64) -> GraphCounts {
    GraphCounts { nodes, edges }
}

/// Long because it is one fixture's story: four writes in four scopes, then what each reader
/// counts (checked against the listing), then the counts once one chunk's evidence is removed —
/// each step reads what the steps before left.
pub async fn graph_counts_follow_visibility(h: &Harness) {
    let global = Scope::global();
    let p1 = Scope::client("c1").with_project("p1");
    let p2 = Scope::client("c1").with_project("p2");
    let c2 = Scope::client("c2");
    let chunks = [(&global, "cg"), (&p1, "c1a"), (&p2, "c1b"), (&c2, "c2a")];
    chunk_per_scope(h, &chunks).await;
    let g = h.stores.graph.as_ref();
    assert_eq!(g.count(&vis(&p1)).await.expect("empty"), counts(0, 0));

    type Write<'a> = (
        &'a str,
        Evidence,
        &'a [&'a str],
        &'a [(&'a str, &'a str, &'a str)],
    );
    let writes: [Write; 4] = [
        // Global: a0 -links-> a1.
        (
            "",
            ev("cg", &global),
            &["topic:a0", "topic:a1"],
            &[("topic:a0", "links", "topic:a1")],
        ),
        // c1/p1: the same a0 -links-> a1 (one node, one edge in both partitions), a1 -cites-> b1.
        (
            "c1",
            ev("c1a", &p1),
            &["topic:a0", "topic:a1", "topic:b1"],
            &[
                ("topic:a0", "links", "topic:a1"),
                ("topic:a1", "cites", "topic:b1"),
            ],
        ),
        // c1/p2: its own node and edge, and more evidence on p1's edge (p1 must not see it).
        (
            "c1",
            ev("c1b", &p2),
            &["topic:s1", "topic:b1"],
            &[
                ("topic:b1", "hides", "topic:s1"),
                ("topic:a1", "cites", "topic:b1"),
            ],
        ),
        // c2: a node and an edge of its own.
        (
            "c2",
            ev("c2a", &c2),
            &["topic:x", "topic:a0"],
            &[("topic:x", "links", "topic:a0")],
        ),
    ];
    for (partition, e, nodes, edges) in writes {
        let nodes = nodes.iter().map(|k| node(k, vec![e.clone()])).collect();
        let edges = edges
            .iter()
            .map(|(from, t, to)| edge(from, t, to, vec![e.clone()]))
            .collect();
        upsert(g, partition, nodes, edges).await;
    }

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
