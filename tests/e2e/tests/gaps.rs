//! Knowledge gaps and graph writes by agents through the real router (issue 18): evidence is
//! required and checked, writes are idempotent and keep the graph's invariants, the gap loop
//! (report → claim → findings → construction; the built-in acquirer), a dead agent's claim
//! expiring under an injected clock, and `retrieve` recording a gap.

use axum::http::StatusCode;
use evident_core::access::Role;
use evident_e2e::{Embed, TestApp, bearer, enc};
use evident_qualifier::Outcome;
use evident_store::queue::Clock;
use serde_json::{Value, json};

async fn ingest(app: &TestApp, client: &str, urn: &str, content: &str) {
    app
        .post_ok(
            "/api/v1/ingest",
            &json!({"clientId": client, "sourceUrn": urn, "kind": "doc", "title": urn, "content": content}),
        )
        .await;
}

/// The chunk ids of a stored source.
async fn chunk_ids(app: &TestApp, client: &str, urn: &str) -> Vec<String> {
    app.kb
        .stores()
        .chunks
        .source_chunks(client, urn)
        .await
        .expect("chunks")
        .into_iter()
        .map(|(id, _)| id)
        .collect()
}

async fn drain(app: &TestApp) -> usize {
    let q = app.qualifier();
    let mut n = 0;
    while let Outcome::Processed { state, .. } = q.process_next().await.expect("process") {
        let (_, tasks) = app.get("/api/v1/queue?clientId=acme").await;
        assert_eq!(state.as_str(), "done", "{tasks}");
        n += 1;
    }
    n
}

/// The edges one hop out of `service:payments`, as `POST /api/v1/traverse` answers.
async fn payments_edges(app: &TestApp) -> Value {
    let body = json!({"clientId": "acme", "startKey": "service:payments", "maxDepth": 1});
    app.post_ok("/api/v1/traverse", &body).await
}

/// `DELETE /api/v1/graph/edges` of the edge `from` -`edge_type`-> `to` in client acme.
async fn delete_edge(app: &TestApp, from: &str, edge_type: &str, to: &str) -> (StatusCode, Value) {
    let uri = format!(
        "/api/v1/graph/edges?clientId=acme&from={}&edgeType={edge_type}&to={}",
        enc(from),
        enc(to)
    );
    app.call("DELETE", &uri, None, &[]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graph_writes_need_visible_evidence_and_change_nothing_twice() {
    let app = TestApp::new(Embed::Hashing).await;
    ingest(
        &app,
        "acme",
        "doc:retries",
        "The payment service retries with exponential backoff.",
    )
    .await;
    ingest(
        &app,
        "other",
        "doc:secret",
        "Another client's private note.",
    )
    .await;
    let ours = chunk_ids(&app, "acme", "doc:retries").await;
    let theirs = chunk_ids(&app, "other", "doc:secret").await;
    let edge = |evidence: Value| json!({"clientId": "acme", "from": "service:payments", "edgeType": "Uses", "to": "concept:backoff", "evidence": evidence});
    let before = app.fingerprint().await;
    // Refusals, table-driven: each is 4xx with its code and writes nothing.
    let refused: [(&str, Value, u16, &str); 4] = [
        (
            "no evidence",
            json!({"clientId": "acme", "from": "a:x", "edgeType": "uses", "to": "b:y"}),
            422,
            "evidence_required",
        ),
        (
            "empty evidence",
            edge(json!({"chunkIds": [], "text": "  "})),
            422,
            "evidence_required",
        ),
        (
            "another client's chunk",
            edge(json!({"chunkIds": [theirs[0]]})),
            422,
            "evidence_not_visible",
        ),
        (
            "an unknown chunk",
            edge(json!({"chunkIds": ["c_nope"]})),
            422,
            "evidence_not_visible",
        ),
    ];
    for (what, body, status, code) in refused {
        let (s, v) = app.post("/api/v1/graph/edges", &body).await;
        assert_eq!(
            (s.as_u16(), v["code"].as_str()),
            (status, Some(code)),
            "{what}: {v}"
        );
        assert_eq!(app.fingerprint().await, before, "{what}: nothing written");
    }
    // A key in another client's scope: the token of acme cannot write there.
    let acme_writer = app.client_token("acme-writer", "acme", Role::Write).await;
    let auth = bearer(&acme_writer);
    let mut body = edge(json!({"chunkIds": [ours[0]]}));
    body["clientId"] = "other".into();
    let (s, v) = post_as(&app, "/api/v1/graph/edges", &body, &auth).await;
    assert_eq!(s, 403, "{v}");
    assert_eq!(app.fingerprint().await, before);

    // A valid write: edge type through the relation aliases, keys normalised, both endpoints
    // evidenced by the edge's evidence, provenance recorded.
    let cited = edge(json!({"chunkIds": [ours[0]]}));
    let (s, v) = post_as(&app, "/api/v1/graph/edges", &cited, &auth).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["edges"][0]["edgeType"], "uses");
    let after = app.fingerprint().await;
    assert_eq!(after.0, before.0, "cited evidence adds no chunk");
    assert!(after.2 > before.2);
    let (s, v) = post_as(&app, "/api/v1/graph/edges", &cited, &auth).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        app.fingerprint().await,
        after,
        "the same edge and evidence again: no change"
    );
    let (_, node) = app
        .get(&format!(
            "/api/v1/graph/node/{}?clientId=acme",
            enc("concept:backoff")
        ))
        .await;
    assert_eq!(node["evidenceChunkIds"], json!([ours[0]]), "{node}");
    let edges = payments_edges(&app).await;
    let e = &edges["edges"][0];
    assert_eq!(e["props"]["assertedBy"], "acme-writer", "{edges}");
    assert_eq!(e["props"]["phase"], "construction");
    // Inline text evidence becomes an assertion chunk, cited like any other.
    let v = app
        .post_ok(
            "/api/v1/graph/batch",
            &json!({"clientId": "acme", "nodes": [{"key": "Team:Payments", "type": "team", "evidence": {"text": "The payments team owns the service."}}],
                    "edges": [{"from": "team:payments", "edgeType": "owns", "to": "service:payments", "evidence": {"text": "The payments team owns the service."}}]}),
        )
        .await;
    let cited = v["evidenceChunkIds"].as_array().expect("ids").clone();
    assert_eq!(cited.len(), 1, "one chunk for one text: {v}");
    let (_, pack) = app
        .post(
            "/api/v1/retrieve",
            &json!({"clientId": "acme", "query": "payments team owns"}),
        )
        .await;
    let item = pack["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["chunkId"] == cited[0])
        .expect("the assertion is retrievable");
    assert!(
        item["citation"]
            .as_str()
            .is_some_and(|c| c.starts_with("assertion:operator@")),
        "{item}"
    );
    assert_eq!(item["locator"]["type"], "assertion");

    // Delete: an agent's edge goes; a source's edge is refused.
    let (s, v) = delete_edge(&app, "service:payments", "uses", "concept:backoff").await;
    assert_eq!(s, 200, "{v}");
    let (s, _) = delete_edge(&app, "service:payments", "uses", "concept:backoff").await;
    assert_eq!(s, 404);
    // Asserted again, it is back.
    app.post_ok("/api/v1/graph/edges", &edge(json!({"chunkIds": [ours[0]]})))
        .await;
    let back = payments_edges(&app).await;
    assert!(
        back["edges"]
            .as_array()
            .is_some_and(|e| e.iter().any(|e| e["edgeType"] == "uses")),
        "{back}"
    );
    let (_, g) = app.post("/api/v1/ingest", &json!({"clientId": "acme", "sourceUrn": "doc:rel2", "kind": "doc", "content": "Checkout depends on payments.", "relationships": ["service:checkout|depends_on|service:payments"]})).await;
    assert!(g.is_object());
    let (s, v) = delete_edge(&app, "service:checkout", "depends_on", "service:payments").await;
    assert_eq!(
        (s.as_u16(), v["code"].as_str()),
        (409, Some("not_agent_written")),
        "{v}"
    );
    app.fingerprint().await; // integrity holds throughout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gap_loop_from_report_to_constructed_and_the_builtin_acquirer() {
    let app = TestApp::new(Embed::Hashing).await;
    ingest(
        &app,
        "acme",
        "doc:runbook",
        "The ledger nightly job reconciles settlements at 02:00 UTC.",
    )
    .await;
    let (s, v) = app
        .post(
            "/api/v1/gaps",
            &json!({"clientId": "acme", "gaps": [
                {"question": "Which broker does the payments service publish to?", "priority": 1},
                {"question": "When does the ledger nightly job reconcile settlements?", "priority": 2, "acquirer": "builtin"}
            ]}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let first = v["gaps"][0]["gapId"].as_str().expect("id").to_string();
    let second = v["gaps"][1]["gapId"].as_str().expect("id").to_string();
    // The agent claims the first (the built-in gap is not an agent's to take).
    let c = app
        .post_ok("/api/v1/gaps/claim", &json!({"clientId": "acme"}))
        .await;
    assert_eq!(c["gap"]["gapId"], first.as_str());
    let epoch = c["epoch"].as_i64().expect("epoch");
    // A failure reason with a credential is refused and the claim stands.
    let (s, v) = app
        .post(
            &format!("/api/v1/gaps/{first}/fail"),
            &json!({"clientId": "acme", "epoch": epoch, "reason": "login with AKIAZ3MHQ7RT2LQKXW5P failed"}),
        )
        .await;
    assert_eq!(
        (s.as_u16(), v["code"].as_str()),
        (422, Some("credential_detected")),
        "{v}"
    );
    let (_, g) = app
        .get(&format!("/api/v1/gaps/{first}?clientId=acme"))
        .await;
    assert_eq!(g["state"], "acquiring", "{g}");
    let f = app
        .post_ok(
            &format!("/api/v1/gaps/{first}/findings"),
            &json!({"clientId": "acme", "epoch": epoch,
                    "markdown": "# Broker\n\nThe payments service (service:payments) publishes settlement events to the Kafka cluster broker:kafka_eu_1.",
                    "sources": ["https://wiki.example/payments"]}),
        )
        .await;
    assert_eq!(f["state"], "acquired");
    let findings: Vec<String> = f["findings"]["chunkIds"]
        .as_array()
        .expect("chunks")
        .iter()
        .map(|c| c.as_str().expect("id").to_string())
        .collect();
    assert!(!findings.is_empty());
    app
        .post_ok(
            "/api/v1/graph/batch",
            &json!({"clientId": "acme", "gapId": first,
                    "nodes": [{"key": "service:payments", "type": "service", "evidence": {"chunkIds": findings}},
                              {"key": "broker:kafka_eu_1", "type": "broker", "label": "kafka-eu-1", "evidence": {"chunkIds": findings}}],
                    "edges": [{"from": "service:payments", "edgeType": "publishes_to", "to": "broker:kafka_eu_1", "evidence": {"chunkIds": findings}}]}),
        )
        .await;
    let (_, gap) = app
        .get(&format!("/api/v1/gaps/{first}?clientId=acme"))
        .await;
    assert_eq!(gap["state"], "constructed", "{gap}");
    let kinds: Vec<&str> = gap["history"]
        .as_array()
        .expect("history")
        .iter()
        .map(|e| e["kind"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(kinds, ["created", "claimed", "findings", "graph_write"]);
    assert_eq!(
        gap["graphChanges"][0]["edges"][0]["edgeType"],
        "publishes_to"
    );
    // Retrieval answers the question with the findings cited and the new edge in the graph.
    let (_, pack) = app
        .post("/api/v1/retrieve", &json!({"clientId": "acme", "query": "payments service publishes settlement events broker"}))
        .await;
    let urns: Vec<&str> = pack["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["sourceUrn"].as_str().unwrap_or(""))
        .collect();
    assert!(
        urns.contains(&format!("gap-findings:{first}").as_str()),
        "{urns:?}"
    );
    let edges = pack["graph"]["edges"].as_array().expect("edges");
    assert!(
        edges
            .iter()
            .any(|e| e["edgeType"] == "publishes_to" && e["to"] == "broker:kafka_eu_1"),
        "{}",
        pack["graph"]
    );
    // The built-in acquirer answers the second from the indexed runbook.
    assert!(drain(&app).await >= 1);
    let (_, gap) = app
        .get(&format!("/api/v1/gaps/{second}?clientId=acme"))
        .await;
    assert_eq!(gap["state"], "acquired", "{gap}");
    assert_eq!(gap["history"][1]["actor"], "builtin-acquirer");
    let (_, doc) = app
        .post(
            "/api/v1/retrieve",
            &json!({"clientId": "acme", "query": "ledger nightly job reconciles settlements"}),
        )
        .await;
    assert!(
        doc["items"]
            .as_array()
            .expect("items")
            .iter()
            .any(|i| i["sourceUrn"] == format!("gap-findings:{second}").as_str()),
        "{doc}"
    );
    app.fingerprint().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_agents_claim_expires_and_the_gap_is_claimed_again_once() {
    let (app, clock) = TestApp::with_clock(Embed::Hashing, 1_000_000).await;
    let dead = bearer(&app.client_token("agent-a", "acme", Role::Write).await);
    let live = bearer(&app.client_token("agent-b", "acme", Role::Write).await);
    let call = |auth: &str, uri: &str, body: Value| {
        let auth = auth.to_string();
        let uri = uri.to_string();
        let app = &app;
        async move { post_as(app, &uri, &body, &auth).await }
    };
    let (s, v) = call(
        &dead,
        "/api/v1/gaps",
        json!({"question": "Who owns the ledger?"}),
    )
    .await;
    assert_eq!(s, 201, "{v}");
    let gap = v["gaps"][0]["gapId"].as_str().expect("id").to_string();
    let (_, a) = call(&dead, "/api/v1/gaps/claim", json!({"leaseSecs": 60})).await;
    assert_eq!(
        (a["gap"]["gapId"].as_str(), a["epoch"].as_i64()),
        (Some(gap.as_str()), Some(1)),
        "{a}"
    );
    // While the lease lives nobody else gets it; agent A then dies.
    let (_, b) = call(&live, "/api/v1/gaps/claim", json!({})).await;
    assert_eq!(b["gap"], Value::Null);
    clock.advance(60_000 + evident_store::gaps::gap_backoff(1));
    let (_, b) = call(&live, "/api/v1/gaps/claim", json!({})).await;
    assert_eq!(
        (b["gap"]["gapId"].as_str(), b["epoch"].as_i64()),
        (Some(gap.as_str()), Some(2)),
        "{b}"
    );
    let findings = |epoch: i64| json!({"epoch": epoch, "markdown": format!("Team Ledger owns it (epoch {epoch}).")});
    let before = app.fingerprint().await;
    let (s, v) = call(&dead, &format!("/api/v1/gaps/{gap}/findings"), findings(1)).await;
    assert_eq!(
        (s.as_u16(), v["code"].as_str()),
        (409, Some("gap_conflict")),
        "{v}"
    );
    let (s, v) = call(
        &dead,
        &format!("/api/v1/gaps/{gap}/findings"),
        json!({"markdown": "late"}),
    )
    .await;
    assert_eq!(s, 409, "{v}");
    // The refused attempts wrote no findings document.
    assert_eq!(app.fingerprint().await, before);
    let (s, v) = call(&live, &format!("/api/v1/gaps/{gap}/findings"), findings(2)).await;
    assert_eq!(s, 200, "{v}");
    let (_, g) = app.get(&format!("/api/v1/gaps/{gap}?clientId=acme")).await;
    let kinds: Vec<&str> = g["history"]
        .as_array()
        .expect("history")
        .iter()
        .map(|e| e["kind"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(kinds, ["created", "claimed", "claimed", "findings"], "{g}");
    assert_eq!(g["history"][2]["detail"]["expiredLeaseOf"], "agent-a");
    assert_eq!(g["attempts"], 2);
    assert_eq!(
        g["findings"]["chunkIds"].as_array().map(Vec::len),
        Some(1),
        "findings stored once"
    );
    let _ = clock.now_ms();
}

/// POSTs `body` to `uri` with `auth` as the `authorization` header.
async fn post_as(app: &TestApp, uri: &str, body: &Value, auth: &str) -> (StatusCode, Value) {
    app.call_auth(auth, "POST", uri, Some(body)).await
}

/// An app whose client `acme` holds one document, about invoices.
async fn invoices_app() -> TestApp {
    let app = TestApp::new(Embed::Hashing).await;
    ingest(
        &app,
        "acme",
        "doc:a",
        "Invoices are generated on the first business day.",
    )
    .await;
    app
}

/// A retrieve or context body asking `q` for `acme` with `recordGap`.
fn ask(q: &str) -> Value {
    json!({"clientId": "acme", "query": q, "recordGap": true})
}

/// Asks `path` what the invoices document answers: 200, and no gap opened.
async fn answered_opens_no_gap(app: &TestApp, path: &str) -> Value {
    let (s, found) = app.post(path, &ask("invoices generated")).await;
    assert_eq!(s, 200, "{path}: {found}");
    assert!(
        found.get("recordedGap").is_none(),
        "{path}: an answer opens no gap"
    );
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retrieve_with_record_gap_opens_one_gap_when_nothing_matches() {
    let app = invoices_app().await;
    answered_opens_no_gap(&app, "/api/v1/retrieve").await;
    let (_, miss) = app
        .post("/api/v1/retrieve", &ask("zebra quantum saxophone"))
        .await;
    let id = miss["recordedGap"]["gapId"]
        .as_str()
        .expect("a gap")
        .to_string();
    assert_eq!(miss["recordedGap"]["state"], "open");
    let (_, again) = app
        .post("/api/v1/retrieve", &ask("Zebra  quantum saxophone"))
        .await;
    assert_eq!(
        again["recordedGap"]["gapId"],
        id.as_str(),
        "the same question is one gap"
    );
    let (_, list) = app.get("/api/v1/gaps?clientId=acme&state=open").await;
    assert_eq!(list["gaps"].as_array().map(Vec::len), Some(1), "{list}");
    // A reader cannot open gaps through retrieve.
    let reader = bearer(&app.client_token("reader", "acme", Role::Read).await);
    let (s, v) = post_as(
        &app,
        "/api/v1/retrieve",
        &ask("nothing like this at all"),
        &reader,
    )
    .await;
    assert_eq!(s, 403, "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_with_record_gap_opens_the_same_gap_as_retrieve() {
    let app = invoices_app().await;
    let found = answered_opens_no_gap(&app, "/api/v1/context").await;
    assert!(
        found["sections"]["context"]
            .as_str()
            .is_some_and(|t| t.contains("Invoices are generated"))
    );
    let miss = app
        .post_ok("/api/v1/context", &ask("zebra quantum saxophone"))
        .await;
    assert_eq!(miss["recordedGap"]["state"], "open", "{miss}");
    // Without `recordGap` nothing is opened; through retrieve the same question is the same gap.
    let (_, plain) = app
        .post(
            "/api/v1/context",
            &json!({"clientId": "acme", "query": "violin hydrogen tundra"}),
        )
        .await;
    assert!(plain.get("recordedGap").is_none(), "{plain}");
    let (_, via_retrieve) = app
        .post("/api/v1/retrieve", &ask("Zebra quantum saxophone"))
        .await;
    assert_eq!(
        via_retrieve["recordedGap"]["gapId"], miss["recordedGap"]["gapId"],
        "one gap per question"
    );
    let (_, list) = app.get("/api/v1/gaps?clientId=acme&state=open").await;
    assert_eq!(list["gaps"].as_array().map(Vec::len), Some(1), "{list}");
}
