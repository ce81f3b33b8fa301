//! BM25 statistics are per partition: client A's scores are the same, bit for bit, before
//! and after client B ingests and then purges documents with the same terms.

use evident_e2e::{Embed, TestApp};
use serde_json::{Value, json};

/// (source, bm25 score bits) of A's evidence pack for the query.
async fn bm25_of_a(app: &TestApp) -> Vec<(String, u32)> {
    let pack = app
        .post_ok(
            "/api/v1/retrieve",
            &json!({"clientId": "a", "query": "reconciliation ledger audit", "expandGraph": false}),
        )
        .await;
    let mut out: Vec<(String, u32)> = pack["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|i| {
            let bm25 = i["scores"]["bm25"].as_f64()? as f32;
            Some((i["sourceUrn"].as_str()?.to_string(), bm25.to_bits()))
        })
        .collect();
    out.sort();
    out
}

fn doc(client: &str, urn: &str, content: &str) -> Value {
    json!({"clientId": client, "sourceUrn": urn, "kind": "doc", "content": content})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_score_is_unchanged_by_another_clients_ingest_and_purge() {
    let app = TestApp::new(Embed::Hashing).await;
    for (i, text) in [
        "The quarterly ledger reconciliation is due before the audit.",
        "Audit findings: two ledger entries lacked approval.",
        "Lunch menu for Friday.",
    ]
    .iter()
    .enumerate()
    {
        app.post_ok("/api/v1/ingest", &doc("a", &format!("doc:a{i}"), text))
            .await;
    }
    let (s, _) = app
        .post(
            "/api/v1/ingest",
            &json!({"global": true, "sourceUrn": "doc:policy", "kind": "doc", "content": "Global ledger retention policy."}),
        )
        .await;
    assert_eq!(s, 200);
    let before = bm25_of_a(&app).await;
    assert!(before.len() >= 3, "{before:?}");

    for i in 0..80 {
        let text = format!("Ledger audit reconciliation batch {i}: ledger ledger audit notes.");
        app.post_ok("/api/v1/ingest", &doc("b", &format!("doc:b{i}"), &text))
            .await;
    }
    assert_eq!(bm25_of_a(&app).await, before, "after B's ingest");
    for i in 0..80 {
        app.post_ok(
            "/api/v1/purge",
            &json!({"clientId": "b", "sourceUrn": format!("doc:b{i}")}),
        )
        .await;
    }
    assert_eq!(bm25_of_a(&app).await, before, "after B's purge");
}
