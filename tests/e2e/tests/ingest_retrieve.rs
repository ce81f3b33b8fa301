//! Ingest → graph → retrieve through the real router over the embedded store.

use evident_e2e::{CountingEmbedder, Embed, TestApp, enc};
use serde_json::{Value, json};

fn edge_set(graph: &Value) -> Vec<(String, String, String)> {
    let mut v: Vec<(String, String, String)> = graph["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|e| {
            (
                e["from"].as_str().unwrap_or("").to_string(),
                e["edgeType"].as_str().unwrap_or("").to_string(),
                e["to"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relationships_in_all_four_formats_become_evidenced_edges_and_are_retrieved_with_citations()
{
    let app = TestApp::new(Embed::Hashing).await;
    let content = "\
# Payment outage

The checkout service jira:PAY-7 failed after the deploy by user:jan.novák.
ServiceCheckout|DEPENDS_ON|ServiceLedger

Rollback was reviewed, see jira:PAY-7 -[affects]-> component:billing for scope.

relationships: [ \"jira:PAY-7|fixed_by|commit:abc123\" ]
";
    let (status, out) = app
        .post(
            "/api/v1/ingest",
            &json!({
                "clientId": "acme",
                "sourceUrn": "jira:PAY-7",
                "kind": "issue",
                "title": "Payment outage",
                "content": content,
                "mainNodeKey": "JIRA:PAY-7",
                "relationships": ["PAY-7->blocked_by->jira:PAY-3", "user:jan_novák|works_on|PAY-7", "Ž:Příliš žluťoučký|reviewed|PAY-7"]
            }),
        )
        .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["status"], "ingested");
    let nodes: Vec<&str> = out["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for key in [
        "jira:pay-7",
        "user:jan_novák",
        "ž:příliš_žluťoučký",
        "component:billing",
        "commit:abc123",
    ] {
        assert!(nodes.contains(&key), "{key} missing from {nodes:?}");
    }

    // Every format produced its edge; blocked_by is stored as blocks, reversed.
    let view = app
        .post_ok(
            "/api/v1/traverse",
            &json!({"clientId": "acme", "startKey": "jira:PAY-7", "maxDepth": 1}),
        )
        .await;
    let edges = edge_set(&view);
    for expected in [
        ("jira:pay-7", "affects", "component:billing"), // bracket, in content
        ("jira:pay-7", "fixed_by", "commit:abc123"),    // metadata block
        ("jira:pay-3", "blocks", "jira:pay-7"),         // arrow, short-hand, reversed
        ("user:jan_novák", "works_on", "jira:pay-7"),   // pipe, short-hand
        ("ž:příliš_žluťoučký", "reviewed", "jira:pay-7"), // Czech diacritics kept
    ] {
        let e = (
            expected.0.to_string(),
            expected.1.to_string(),
            expected.2.to_string(),
        );
        assert!(edges.contains(&e), "{expected:?} missing from {edges:?}");
    }
    let (_, deps) = app
        .post(
            "/api/v1/traverse",
            &json!({"clientId": "acme", "startKey": "entity:servicecheckout", "maxDepth": 1}),
        )
        .await;
    assert_eq!(
        edge_set(&deps),
        vec![(
            "entity:servicecheckout".into(),
            "depends_on".into(),
            "entity:serviceledger".into()
        )],
        "pipe format in content"
    );
    for e in view["edges"].as_array().expect("edges") {
        assert!(
            !e["evidenceChunkIds"]
                .as_array()
                .expect("evidence")
                .is_empty(),
            "every edge has evidence: {e}"
        );
    }

    // The Unicode key also answers to its ASCII fold.
    let (_, resolved) = app
        .get(&format!(
            "/api/v1/alias/resolve?clientId=acme&alias={}",
            enc("Z:Prilis zlutoucky")
        ))
        .await;
    assert_eq!(resolved["canonical"], "ž:příliš_žluťoučký");

    // Retrieval finds the chunk, expands the graph, and every citation resolves to a chunk.
    let pack = app
        .post_ok(
            "/api/v1/retrieve",
            &json!({"clientId": "acme", "query": "what did the checkout failure affect"}),
        )
        .await;
    assert_eq!(pack["contentTrust"], "untrusted");
    let items = pack["items"].as_array().expect("items");
    assert!(!items.is_empty());
    assert_eq!(items[0]["sourceUrn"], "jira:PAY-7");
    assert_eq!(items[0]["trust"], "untrusted");
    assert!(
        items[0]["citation"]
            .as_str()
            .expect("citation")
            .starts_with("jira:PAY-7#chars=")
    );
    let loc = &items[0]["locator"];
    let (start, end) = (
        loc["charStart"].as_u64().expect("start") as usize,
        loc["charEnd"].as_u64().expect("end") as usize,
    );
    let cited: String = content.chars().skip(start).take(end - start).collect();
    assert_eq!(
        cited,
        items[0]["content"].as_str().expect("content"),
        "locator resolves to the exact span"
    );
    let pack_edges = edge_set(&pack["graph"]);
    assert!(
        pack_edges.contains(&(
            "jira:pay-7".into(),
            "affects".into(),
            "component:billing".into()
        )),
        "{pack_edges:?}"
    );
    for e in pack["graph"]["edges"].as_array().expect("edges") {
        for id in e["evidenceChunkIds"].as_array().expect("ids") {
            let (status, ev) = app
                .get(&format!(
                    "/api/v1/graph/node/{}/evidence?clientId=acme",
                    enc(e["from"].as_str().expect("from"))
                ))
                .await;
            assert_eq!(status, 200);
            assert!(
                ev["chunks"]
                    .as_array()
                    .expect("chunks")
                    .iter()
                    .any(|c| &c["id"] == id),
                "evidence {id} resolvable"
            );
        }
    }

    // Node endpoint and node search.
    let node = app
        .get_ok(&format!(
            "/api/v1/graph/node/{}?clientId=acme",
            enc("jira:PAY-7")
        ))
        .await;
    assert_eq!(node["type"], "jira");
    assert_eq!(node["label"], "Payment outage");
    let (_, found) = app
        .get("/api/v1/graph/search?clientId=acme&q=abc123&type=commit")
        .await;
    assert_eq!(found["nodes"][0]["key"], "commit:abc123");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unchanged_is_skipped_and_a_changed_paragraph_re_embeds_only_its_chunks() {
    let counting = CountingEmbedder::hashing();
    let app =
        TestApp::with_embedder(counting.clone(), 1 << 20, tempfile::tempdir().expect("tmp")).await;
    let paragraphs: Vec<String> = (0..40)
        .map(|i| format!("Paragraph {i} talks about subsystem number {i} and its maintenance schedule in some detail, covering owners, alerts and the runbook steps to follow."))
        .collect();
    let mut v1 = paragraphs.clone();
    v1[20] =
        "The ledger jira:LED-1|blocks|jira:LED-2 relation lives here, in paragraph twenty.".into();
    let doc = |ps: &[String]| ps.join("\n\n");
    let body = |content: String| json!({"clientId": "acme", "sourceUrn": "doc:long", "kind": "doc", "content": content});

    let (status, first) = app.post("/api/v1/ingest", &body(doc(&v1))).await;
    assert_eq!(status, 200, "{first}");
    let total = first["chunks"]["total"].as_u64().expect("total") as usize;
    assert!(
        total >= 5,
        "a long document makes several chunks, got {total}"
    );
    assert_eq!(
        counting.count(),
        total,
        "first ingest embeds every chunk once"
    );

    let (_, again) = app.post("/api/v1/ingest", &body(doc(&v1))).await;
    assert_eq!(again["status"], "skipped_unchanged");
    assert_eq!(counting.count(), total, "no embedding work when unchanged");

    let mut v2 = v1.clone();
    v2[20] = "Paragraph twenty now says something else entirely about the ledger migration.".into();
    let before = counting.count();
    let (status, second) = app.post("/api/v1/ingest", &body(doc(&v2))).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["status"], "updated");
    let old: std::collections::HashSet<String> =
        evident_core::chunking::chunk_text(&doc(&v1), &Default::default())
            .into_iter()
            .map(|c| c.text)
            .collect();
    let changed = evident_core::chunking::chunk_text(&doc(&v2), &Default::default())
        .into_iter()
        .filter(|c| !old.contains(&c.text))
        .count();
    assert!(
        (1..=3).contains(&changed),
        "a one-paragraph edit changes few chunks, got {changed}"
    );
    assert_eq!(
        second["chunks"]["added"].as_u64(),
        Some(changed as u64),
        "{second}"
    );
    assert_eq!(
        counting.count() - before,
        changed,
        "exactly the changed chunks were embedded"
    );
    assert_eq!(
        second["removedEdges"], 1,
        "the relationship's only evidence went away"
    );
    let (status, _) = app
        .get(&format!(
            "/api/v1/graph/node/{}?clientId=acme",
            enc("jira:LED-1")
        ))
        .await;
    assert_eq!(status, 404, "node without evidence is gone");
    assert_eq!(
        app.fingerprint().await.0 as u64,
        second["chunks"]["total"].as_u64().expect("total")
    );

    // Purge removes the rest.
    let purged = app
        .post_ok(
            "/api/v1/purge",
            &json!({"clientId": "acme", "sourceUrn": "doc:long"}),
        )
        .await;
    assert_eq!(purged["chunks"], second["chunks"]["total"]);
    assert_eq!(app.fingerprint().await, (0, 0, 0));
    let (_, sources) = app.get("/api/v1/sources?clientId=acme").await;
    assert!(sources["sources"].as_array().expect("sources").is_empty());
    let (_, pack) = app
        .post(
            "/api/v1/retrieve",
            &json!({"clientId": "acme", "query": "subsystem maintenance schedule"}),
        )
        .await;
    assert!(pack["items"].as_array().expect("items").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alias_merge_changes_resolution_and_ingest_uses_it() {
    let app = TestApp::new(Embed::Hashing).await;
    let (s, _) = app
        .post(
            "/api/v1/alias/register",
            &json!({"clientId": "acme", "alias": "user:jnovak", "canonical": "User:Jan Novák"}),
        )
        .await;
    assert_eq!(s, 200);
    let (_, r) = app
        .get("/api/v1/alias/resolve?clientId=acme&alias=user:jnovak")
        .await;
    assert_eq!(r["canonical"], "user:jan_novák");
    let m = app
        .post_ok(
            "/api/v1/alias/merge",
            &json!({"clientId": "acme", "source": "user:jan_novák", "target": "person:jan"}),
        )
        .await;
    assert_eq!(m["moved"], 2);
    let (_, r) = app
        .get("/api/v1/alias/resolve?clientId=acme&alias=user:jnovak")
        .await;
    assert_eq!(
        r["canonical"], "user:jan",
        "person is an entity-type alias of user"
    );
    let (_, list) = app.get("/api/v1/alias/list/user:jan?clientId=acme").await;
    assert_eq!(list["aliases"].as_array().expect("aliases").len(), 2);
    let (_, stats) = app.get("/api/v1/alias/stats?clientId=acme").await;
    assert_eq!(stats["totalAliases"], 2);
    assert_eq!(stats["uniqueCanonicals"], 1);

    let out = app
        .post_ok(
            "/api/v1/ingest",
            &json!({"clientId": "acme", "sourceUrn": "mail:1", "kind": "email", "content": "Reviewed by user:jnovak yesterday."}),
        )
        .await;
    assert_eq!(
        out["nodes"],
        json!(["user:jan"]),
        "refs resolve through the registry at ingest"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_chunks_follow_alias_merges_without_stale_evidence() {
    let app = TestApp::new(Embed::Hashing).await;
    let paragraphs = |tail: &str| {
        let mut ps = vec!["Reviewed by user:jnovak during the migration of the billing service to the new cluster.".to_string()];
        ps.extend((1..30).map(|i| format!("Paragraph {i} records step {i} of the migration runbook, with owners, alerts and the rollback plan.")));
        ps.push(tail.to_string());
        ps.join("\n\n")
    };
    let body = |content: String| json!({"clientId": "acme", "sourceUrn": "doc:review", "kind": "doc", "content": content});
    let (s, _) = app
        .post(
            "/api/v1/ingest",
            &body(paragraphs(
                "First version of the closing paragraph with plenty of words to keep it apart.",
            )),
        )
        .await;
    assert_eq!(s, 200);
    let (s, _) = app
        .get(&format!(
            "/api/v1/graph/node/{}?clientId=acme",
            enc("user:jnovak")
        ))
        .await;
    assert_eq!(s, 200);
    let (s, _) = app
        .post(
            "/api/v1/alias/merge",
            &json!({"clientId": "acme", "source": "user:jnovak", "target": "user:jan"}),
        )
        .await;
    assert_eq!(s, 200);
    // Only the last paragraph changes; the first chunk is kept (not re-embedded) but its ref
    // now resolves to user:jan.
    let out = app
        .post_ok(
            "/api/v1/ingest",
            &body(paragraphs(
                "Second version of the closing paragraph, rewritten entirely and differently.",
            )),
        )
        .await;
    assert!(
        out["chunks"]["unchanged"].as_u64().is_some_and(|n| n >= 1),
        "{out}"
    );
    // (The node endpoint resolves aliases, so ask the graph store for the old key itself.)
    let vis = evident_core::Visibility::of(evident_core::Scope::client("acme"));
    let old = app
        .kb
        .stores()
        .graph
        .get_nodes(
            &vis,
            &[evident_core::NodeKey::from_canonical("user:jnovak")],
        )
        .await
        .expect("get");
    assert!(
        old.is_empty(),
        "no stale evidence keeps the merged-away node alive: {old:?}"
    );
    let node = app
        .get_ok(&format!(
            "/api/v1/graph/node/{}?clientId=acme",
            enc("user:jan")
        ))
        .await;
    assert_eq!(node["evidenceChunkIds"].as_array().map(Vec::len), Some(1));
    let report = app.store.check_integrity().await.expect("integrity");
    assert!(report.is_ok(), "{report:?}");
}
