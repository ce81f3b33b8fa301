//! Graph store cases: evidence and garbage collection, descriptions, removal, folding, traversal, visibility.

use super::*;
use crate::{GraphStore, Subgraph};
use evident_core::Node;

pub(super) fn node(k: &str, evidence: Vec<Evidence>) -> NodeWrite {
    let key = key(k);
    NodeWrite {
        node_type: key.namespace().to_string(),
        label: key.value().to_string(),
        key,
        props: Map::new(),
        evidence,
        mention_only: false,
    }
}

pub(super) fn edge(from: &str, t: &str, to: &str, evidence: Vec<Evidence>) -> EdgeWrite {
    EdgeWrite {
        from: key(from),
        to: key(to),
        edge_type: t.to_string(),
        props: Map::new(),
        evidence,
    }
}

pub(super) async fn upsert(
    g: &dyn GraphStore,
    partition: &str,
    nodes: Vec<NodeWrite>,
    edges: Vec<EdgeWrite>,
) {
    g.upsert(partition, nodes, edges).await.expect("upsert");
}

/// The nodes among `keys` the reader sees.
async fn get(g: &dyn GraphStore, reader: &Visibility, keys: &[&str]) -> Vec<Node> {
    let keys: Vec<NodeKey> = keys.iter().map(|k| key(k)).collect();
    g.get_nodes(reader, &keys).await.expect("get")
}

async fn walk(
    g: &dyn GraphStore,
    reader: &Visibility,
    start: &str,
    opts: TraverseOptions,
) -> Subgraph {
    g.traverse(reader, &[key(start)], &opts)
        .await
        .expect("traverse")
}

/// One hop from `start`, both directions.
async fn hop(g: &dyn GraphStore, reader: &Visibility, start: &str) -> Subgraph {
    let opts = TraverseOptions {
        max_depth: 1,
        ..Default::default()
    };
    walk(g, reader, start, opts).await
}

/// One single-chunk source per scope (`urn:{chunk}`, the chunk's text its id).
pub(super) async fn chunk_per_scope(h: &Harness, chunks: &[(&Scope, &str)]) {
    for (i, (scope, chunk)) in chunks.iter().enumerate() {
        write_source(
            h,
            scope,
            &format!("urn:{chunk}"),
            &[(chunk, "doc", chunk, i)],
        )
        .await;
    }
}

fn sorted_evidence(node: &Node) -> Vec<String> {
    let mut evidence = node.evidence_chunk_ids.clone();
    evidence.sort();
    evidence
}

pub async fn graph_merges_evidence_and_collects_garbage(h: &Harness) {
    let c1 = Scope::client("c1");
    let two = [("e1", "doc", "one", 0), ("e2", "doc", "two", 1)];
    write_source(h, &c1, "urn:g1", &two).await;
    let g = h.stores.graph.as_ref();
    let blocks = |chunk: &str| edge("jira:a-1", "blocks", "jira:a-2", vec![ev(chunk, &c1)]);
    let start = node("jira:a-1", vec![ev("e1", &c1)]);
    upsert(g, "c1", vec![start], vec![blocks("e1")]).await;
    // Same edge, more evidence: merged, not replaced. Upserting twice is idempotent.
    for _ in 0..2 {
        upsert(g, "c1", vec![], vec![blocks("e2")]).await;
    }
    let sub = hop(g, &vis(&c1), "jira:a-1").await;
    assert_eq!(sub.edges.len(), 1);
    let mut evidence = sub.edges[0].evidence_chunk_ids.clone();
    evidence.sort();
    assert_eq!(evidence, vec!["e1", "e2"]);
    // Endpoint created by the edge exists.
    assert_eq!(get(g, &vis(&c1), &["jira:a-2"]).await.len(), 1);
    let removed = g
        .remove_evidence("c1", &["e1".into()])
        .await
        .expect("remove");
    assert_eq!((removed.edges, removed.nodes), (0, 0), "edge still has e2");
    let removed = g
        .remove_evidence("c1", &["e2".into()])
        .await
        .expect("remove");
    assert_eq!(
        (removed.edges, removed.nodes),
        (1, 2),
        "edge and both nodes lost their last evidence"
    );
    assert!(
        get(g, &vis(&c1), &["jira:a-1", "jira:a-2"])
            .await
            .is_empty()
    );
}

pub async fn mentions_never_overwrite_descriptions(h: &Harness) {
    let c1 = Scope::client("c1");
    let two = [("m1", "doc", "one", 0), ("m2", "doc", "two", 1)];
    write_source(h, &c1, "urn:m", &two).await;
    let g = h.stores.graph.as_ref();
    let mut person = node("user:jan_example_com", vec![ev("m1", &c1)]);
    person.node_type = "person".into();
    person.label = "Jan Novák".into();
    person
        .props
        .insert("email".into(), "jan@example.com".into());
    upsert(g, "c1", vec![person], vec![]).await;
    let mut mention = node("user:jan_example_com", vec![ev("m2", &c1)]);
    mention.mention_only = true;
    upsert(g, "c1", vec![mention], vec![]).await;
    // A mention of an unknown key creates it as written.
    let mut fresh = node("jira:x-9", vec![ev("m2", &c1)]);
    fresh.mention_only = true;
    fresh.label = "x 9".into();
    upsert(g, "c1", vec![fresh], vec![]).await;
    for (k, node_type, label) in [
        ("user:jan_example_com", "person", "Jan Novák"),
        ("jira:x-9", "jira", "x 9"),
    ] {
        let got = get(g, &vis(&c1), &[k]).await;
        assert_eq!(got.len(), 1, "{k}");
        assert_eq!(
            (got[0].node_type.as_str(), got[0].label.as_str()),
            (node_type, label)
        );
    }
    let got = get(g, &vis(&c1), &["user:jan_example_com"]).await;
    assert_eq!(got[0].props["email"], "jan@example.com");
    assert_eq!(
        sorted_evidence(&got[0]),
        vec!["m1", "m2"],
        "the mention still adds its evidence"
    );
}

pub async fn edges_can_be_removed_explicitly(h: &Harness) {
    let c1 = Scope::client("c1");
    write_source(h, &c1, "urn:r", &[("r1", "doc", "one", 0)]).await;
    let g = h.stores.graph.as_ref();
    let has_commit = |branch: &str| edge(branch, "has_commit", "commit:a1", vec![ev("r1", &c1)]);
    let edges = vec![has_commit("branch:main"), has_commit("branch:dev")];
    upsert(g, "c1", vec![], edges).await;
    let gone = crate::EdgeKey {
        from: key("branch:main"),
        edge_type: "has_commit".into(),
        to: key("commit:a1"),
    };
    assert_eq!(
        g.remove_edges("c1", std::slice::from_ref(&gone))
            .await
            .expect("remove"),
        1
    );
    assert_eq!(
        g.remove_edges("c1", &[gone]).await.expect("again"),
        0,
        "idempotent"
    );
    let sub = hop(g, &vis(&c1), "commit:a1").await;
    let edges: Vec<(&str, &str)> = sub
        .edges
        .iter()
        .map(|e| (e.from.as_str(), e.to.as_str()))
        .collect();
    assert_eq!(edges, vec![("branch:dev", "commit:a1")]);
    assert_eq!(
        get(g, &vis(&c1), &["branch:main"]).await.len(),
        1,
        "endpoints stay while evidenced"
    );
}

/// Folding a node into its canonical moves its evidence and edges, keeps the alias, and
/// creates the canonical from the alias when there is none. Long because it is one story
/// over one small graph: each fold reads what the fold before it left.
pub async fn nodes_fold_into_their_canonical(h: &Harness) {
    let c1 = Scope::client("c1");
    let two = [("f1", "doc", "one", 0), ("f2", "doc", "two", 1)];
    write_source(h, &c1, "urn:f", &two).await;
    let g = h.stores.graph.as_ref();
    let mut speaker = node("user:ann", vec![ev("f1", &c1)]);
    speaker.props.insert("name".into(), "Ann".into());
    speaker.props.insert("role".into(), "speaker".into());
    let mut canonical = node("user:ann@x.io", vec![ev("f2", &c1)]);
    canonical.props.insert("role".into(), "author".into());
    let e = |from: &str, t: &str, to: &str, chunk: &str| edge(from, t, to, vec![ev(chunk, &c1)]);
    let edges = vec![
        e("user:ann", "spoke_in", "meeting:m1", "f1"),
        e("user:ann", "same_as", "user:ann@x.io", "f1"),
        e("commit:a1", "authored_by", "user:ann", "f1"),
        e("commit:a1", "authored_by", "user:ann@x.io", "f2"),
    ];
    upsert(g, "c1", vec![speaker, canonical], edges).await;
    assert!(
        g.fold_node("c1", &key("user:ann"), &key("user:ann@x.io"))
            .await
            .expect("fold")
    );
    assert!(
        !g.fold_node("c1", &key("user:ann"), &key("user:ann@x.io"))
            .await
            .expect("again"),
        "idempotent"
    );
    let v = vis(&c1);
    assert!(
        get(g, &v, &["user:ann"]).await.is_empty(),
        "the alias node is gone"
    );
    let got = get(g, &v, &["user:ann@x.io"]).await;
    assert_eq!(got.len(), 1);
    assert_eq!(
        sorted_evidence(&got[0]),
        vec!["f1", "f2"],
        "evidence moved over"
    );
    assert_eq!(got[0].props["role"], "author", "the canonical's props win");
    assert_eq!(
        got[0].props["name"], "Ann",
        "the alias fills what is missing"
    );
    let sub = hop(g, &v, "user:ann@x.io").await;
    let mut edges: Vec<(String, String, String, usize)> = sub
        .edges
        .iter()
        .map(|e| {
            (
                e.from.to_string(),
                e.edge_type.clone(),
                e.to.to_string(),
                e.evidence_chunk_ids.len(),
            )
        })
        .collect();
    edges.sort();
    let row =
        |from: &str, t: &str, to: &str, n| (from.to_string(), t.to_string(), to.to_string(), n);
    assert_eq!(
        edges,
        vec![
            row("commit:a1", "authored_by", "user:ann@x.io", 2),
            row("user:ann@x.io", "spoke_in", "meeting:m1", 1),
        ],
        "edges re-pointed and merged; the self-loop dropped"
    );
    // Folding into a key with no node yet creates it from the alias.
    assert!(
        g.fold_node("c1", &key("meeting:m1"), &key("meeting:m-1"))
            .await
            .expect("fold")
    );
    let moved = get(g, &v, &["meeting:m-1"]).await;
    assert_eq!(moved.len(), 1);
    assert_eq!(moved[0].node_type, "meeting");
}

/// Traversal by depth, direction and edge types over one graph, with visibility. Long
/// because every case walks the same graph written at the start; split, each would write it
/// again.
pub async fn traversal_respects_depth_direction_and_types(h: &Harness) {
    let c1 = Scope::client("c1");
    write_source(h, &c1, "urn:t", &[("t1", "doc", "chain", 0)]).await;
    let e = || vec![ev("t1", &c1)];
    let g = h.stores.graph.as_ref();
    let edges = vec![
        edge("file:a", "imports", "file:b", e()),
        edge("file:b", "imports", "file:c", e()),
        edge("commit:x", "modifies", "file:a", e()),
    ];
    upsert(g, "c1", vec![], edges).await;
    let names = |sub: &Subgraph| {
        let mut v: Vec<(String, usize)> = sub
            .nodes
            .iter()
            .map(|(n, d)| (n.key.to_string(), *d))
            .collect();
        v.sort();
        v
    };
    let reached = |v: &[(&str, usize)]| -> Vec<(String, usize)> {
        v.iter().map(|(k, d)| (k.to_string(), *d)).collect()
    };
    // Depth and direction: the nodes reached, with their depth.
    let walks = [
        (
            1,
            Direction::Any,
            reached(&[("commit:x", 1), ("file:a", 0), ("file:b", 1)]),
        ),
        (
            2,
            Direction::Out,
            reached(&[("file:a", 0), ("file:b", 1), ("file:c", 2)]),
        ),
        (3, Direction::In, reached(&[("commit:x", 1), ("file:a", 0)])),
    ];
    for (max_depth, direction, expected) in walks {
        let opts = TraverseOptions {
            max_depth,
            direction,
            ..Default::default()
        };
        let walked = walk(g, &vis(&c1), "file:a", opts).await;
        assert_eq!(names(&walked), expected, "{max_depth} {direction:?}");
    }
    let typed = TraverseOptions {
        max_depth: 3,
        edge_types: vec!["modifies".into()],
        ..Default::default()
    };
    let typed = walk(g, &vis(&c1), "file:a", typed).await;
    assert_eq!(typed.edges.len(), 1);
    assert_eq!(typed.edges[0].edge_type, "modifies");
    let capped = TraverseOptions {
        max_depth: 3,
        max_nodes: 2,
        ..Default::default()
    };
    assert_eq!(walk(g, &vis(&c1), "file:a", capped).await.nodes.len(), 2);
    let found = g
        .search_nodes(&vis(&c1), "FILE:B", None, 10)
        .await
        .expect("search");
    assert_eq!(
        found.iter().map(|n| n.key.as_str()).collect::<Vec<_>>(),
        vec!["file:b"]
    );
    assert!(
        g.search_nodes(&vis(&c1), "file", Some("commit"), 10)
            .await
            .expect("search")
            .is_empty()
    );
}

pub async fn graph_visibility_follows_evidence(h: &Harness) {
    let p1 = Scope::client("c1").with_project("p1");
    let p2 = Scope::client("c1").with_project("p2");
    write_source(h, &p1, "urn:p1", &[("gp1", "doc", "p1 text", 0)]).await;
    write_source(h, &p2, "urn:p2", &[("gp2", "doc", "p2 text", 1)]).await;
    let g = h.stores.graph.as_ref();
    // Jan works on a project in each of c1's projects, each evidenced there only.
    for (chunk, scope, project) in [
        ("gp1", &p1, "project:alpha"),
        ("gp2", &p2, "project:secret"),
    ] {
        let jan = node("user:jan", vec![ev(chunk, scope)]);
        let works_on = edge("user:jan", "works_on", project, vec![ev(chunk, scope)]);
        upsert(g, "c1", vec![jan], vec![works_on]).await;
    }
    let r1 = vis(&p1);
    let jan = get(g, &r1, &["user:jan"]).await;
    assert_eq!(jan.len(), 1);
    assert_eq!(
        jan[0].evidence_chunk_ids,
        vec!["gp1"],
        "only the reader's evidence is shown"
    );
    assert!(get(g, &r1, &["project:secret"]).await.is_empty());
    let sub = walk(g, &r1, "user:jan", TraverseOptions::default()).await;
    assert!(
        sub.nodes
            .iter()
            .all(|(n, _)| n.key.as_str() != "project:secret")
    );
    assert_eq!(sub.edges.len(), 1);
    assert!(
        g.search_nodes(&r1, "secret", None, 10)
            .await
            .expect("search")
            .is_empty()
    );
    assert!(
        get(g, &vis(&Scope::client("c2")), &["user:jan"])
            .await
            .is_empty()
    );
}

/// Every page of a listing from the start, following `next_after`; the keys per page.
async fn list_all(
    g: &dyn GraphStore,
    reader: &Visibility,
    node_type: Option<&str>,
    limit: usize,
) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut after: Option<NodeKey> = None;
    loop {
        let page = g
            .list_nodes(reader, node_type, after.as_ref(), limit)
            .await
            .expect("list");
        assert!(
            page.nodes.len() <= limit,
            "a page holds at most `limit` nodes"
        );
        pages.push(page.nodes.iter().map(|n| n.key.to_string()).collect());
        match page.next_after {
            Some(next) => {
                assert!(pages.len() < 50, "paging must end");
                after = Some(next);
            }
            None => return pages,
        }
    }
}

/// Nodes listed by type in key pages across partitions, for several readers. Long because
/// the pages, exact types and readers are all checked over the one set of nodes written at
/// the start, and a page follows from the one before.
pub async fn nodes_list_by_type_in_key_pages(h: &Harness) {
    let global = Scope::global();
    let p1 = Scope::client("c1").with_project("p1");
    let p2 = Scope::client("c1").with_project("p2");
    let c2 = Scope::client("c2");
    let chunks = [(&global, "lg"), (&p1, "l1"), (&p2, "l2"), (&c2, "l3")];
    chunk_per_scope(h, &chunks).await;
    let g = h.stores.graph.as_ref();
    let write = |partition: &'static str, keys: &[&str], e: Evidence| {
        let nodes = keys.iter().map(|k| node(k, vec![e.clone()])).collect();
        g.upsert(partition, nodes, vec![])
    };
    write("", &["thread:a0", "thread:a2"], ev("lg", &global))
        .await
        .expect("u");
    let p1_threads = [
        "thread:a1",
        "thread:a2",
        "thread:a3",
        "thread:a4",
        "thread:a5",
    ];
    write("c1", &p1_threads, ev("l1", &p1)).await.expect("u");
    write("c1", &["meeting:m1"], ev("l1", &p1))
        .await
        .expect("u");
    write("c1", &["thread:b1"], ev("l2", &p2)).await.expect("u");
    write("c2", &["thread:a9"], ev("l3", &c2)).await.expect("u");

    // Pages of two in key order, across both partitions, the last one saying it is last.
    let pages = list_all(g, &vis(&p1), Some("thread"), 2).await;
    assert_eq!(
        pages,
        vec![
            vec!["thread:a0", "thread:a1"],
            vec!["thread:a2", "thread:a3"],
            vec!["thread:a4", "thread:a5"],
        ],
        "p1 sees global and its own threads, not p2's or c2's"
    );
    let one_by_one: Vec<String> = list_all(g, &vis(&p1), Some("thread"), 1).await.concat();
    assert_eq!(one_by_one, pages.concat());
    // A key in both partitions is one node with the evidence the reader may see.
    let first = g
        .list_nodes(&vis(&p1), Some("thread"), Some(&key("thread:a1")), 1)
        .await
        .expect("list");
    assert_eq!(first.nodes.len(), 1);
    let mut evidence = first.nodes[0].evidence_chunk_ids.clone();
    evidence.sort();
    assert_eq!(
        (first.nodes[0].key.as_str(), evidence),
        ("thread:a2", vec!["l1".to_string(), "lg".to_string()])
    );
    assert_eq!(first.next_after, Some(key("thread:a2")));
    // `after` need not be a stored key.
    let from_gap = g
        .list_nodes(&vis(&p1), Some("thread"), Some(&key("thread:a25")), 10)
        .await
        .expect("list");
    let keys: Vec<&str> = from_gap.nodes.iter().map(|n| n.key.as_str()).collect();
    assert_eq!(
        (keys, from_gap.next_after),
        (vec!["thread:a3", "thread:a4", "thread:a5"], None)
    );

    // The type is matched exactly; no type lists every type.
    let meetings = list_all(g, &vis(&p1), Some("meeting"), 10).await;
    assert_eq!(meetings, vec![vec!["meeting:m1"]]);
    assert_eq!(
        list_all(g, &vis(&p1), Some("threads"), 10).await,
        vec![Vec::<String>::new()]
    );
    let every = list_all(g, &vis(&p1), None, 3).await.concat();
    let mut expected = vec!["meeting:m1", "thread:a0"];
    expected.extend(p1_threads);
    assert_eq!(every, expected);

    // Other readers: another project, another client, the global reader.
    for (reader, want) in [
        (&p2, vec!["thread:a0", "thread:a2", "thread:b1"]),
        (&c2, vec!["thread:a0", "thread:a2", "thread:a9"]),
        (&global, vec!["thread:a0", "thread:a2"]),
    ] {
        let got = list_all(g, &vis(reader), Some("thread"), 2).await.concat();
        assert_eq!(got, want, "reader {reader:?}");
    }
    let global_a2 = g
        .list_nodes(&vis(&c2), Some("thread"), Some(&key("thread:a1")), 1)
        .await
        .expect("list");
    assert_eq!(
        global_a2.nodes[0].evidence_chunk_ids,
        vec!["lg"],
        "only visible evidence"
    );
    assert!(
        g.list_nodes(&vis(&p1), Some("thread"), None, 0)
            .await
            .expect("list")
            .nodes
            .is_empty()
    );
}
