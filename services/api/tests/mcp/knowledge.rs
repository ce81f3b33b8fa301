//! User knowledge, outcomes, the session log and claims through MCP.

use evident_core::access::{Grant, Role};
use serde_json::json;

use crate::app::*;

#[tokio::test]
async fn user_knowledge_by_category_and_the_prefetch() {
    let app = App::new().await;
    let w = app.writer().await;
    let stored = app
        .call(
            &w,
            "store_knowledge",
            json!({ "subject": "BMS", "content": "Brokerage Management System", "category": "domain" }),
        )
        .await;
    assert_eq!(
        stored["structuredContent"]["sourceUrn"], "user-knowledge:domain:bms",
        "{stored}"
    );
    app.call(
        &w,
        "store_knowledge",
        json!({ "subject": "editor", "content": "uses Helix", "category": "preference" }),
    )
    .await;
    let ctx = app.call(&w, "get_user_context", json!({})).await;
    let md = ctx["structuredContent"]["markdown"]
        .as_str()
        .expect("markdown");
    assert!(
        md.contains("### Domain Context\n- **BMS**: Brokerage Management System"),
        "{ctx}"
    );
    assert!(
        md.contains("### Preferences\n- **editor**: uses Helix"),
        "{ctx}"
    );

    for (args, code) in [
        (
            json!({ "subject": "x", "content": "y", "category": "hobby" }),
            "invalid_field",
        ),
        (
            json!({ "subject": "x", "content": "y", "category": "general", "kind": "fact" }),
            "invalid_request",
        ),
        (
            json!({ "content": "y", "category": "general" }),
            "missing_field",
        ),
    ] {
        let e = app.call_err(&w, "store_knowledge", args.clone()).await;
        assert_eq!(e["data"]["code"], code, "{args}: {e}");
    }
    let outsider = app
        .token("outsider", Grant::client("globex", Role::Read))
        .await;
    app.forbidden(&outsider, "get_user_context", json!({ "clientId": "acme" }))
        .await;
}

#[tokio::test]
async fn outcomes_are_filtered_queued_and_checked_against_the_grant() {
    let app = App::new().await;
    let w = app.writer().await;
    let refused = app
        .call(
            &w,
            "record_outcome",
            json!({ "taskId": "T-1", "category": "advice", "finalResult": "an answer" }),
        )
        .await;
    assert_eq!(
        refused["structuredContent"],
        json!({ "ingested": false, "reason": "advice" }),
        "{refused}"
    );
    let kept = app
        .call(
            &w,
            "record_outcome",
            json!({
                "taskId": "T-2", "category": "epic", "finalResult": "shipped",
                "summary": "Split the importer into stages.", "topics": ["importer"]
            }),
        )
        .await;
    let s = &kept["structuredContent"];
    assert_eq!(s["ingested"], true, "{kept}");
    assert_eq!(s["sourceUrn"], "task-outcome:T-2");
    let reader = app.token("reader", Grant::client("acme", Role::Read)).await;
    app.forbidden(
        &reader,
        "record_outcome",
        json!({ "taskId": "T-3", "category": "epic", "finalResult": "x", "summary": "y" }),
    )
    .await;
}

#[tokio::test]
async fn the_session_log_is_appended_and_read_per_project() {
    let app = App::new().await;
    let w = app.writer().await;
    for (i, project) in ["p1", "p1", "p2"].iter().enumerate() {
        let e = app
            .call(
                &w,
                "session_append",
                json!({ "projectId": project, "source": "orchestrator_decision", "summary": format!("decision {i}") }),
            )
            .await;
        assert_eq!(e["structuredContent"]["clientId"], "acme", "{e}");
    }
    let recent = app
        .call(&w, "session_recent", json!({ "projectId": "p1" }))
        .await;
    let summaries: Vec<&str> = recent["structuredContent"]["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter_map(|e| e["summary"].as_str())
        .collect();
    assert_eq!(summaries, ["decision 1", "decision 0"]);
    let e = app
        .call_err(
            &w,
            "session_append",
            json!({ "source": "chat", "summary": "x".repeat(201) }),
        )
        .await;
    assert_eq!(e["data"]["code"], "invalid_field", "{e}");
    let narrowed = app
        .token(
            "p2-only",
            Grant {
                role: Role::Read,
                client_id: Some("acme".into()),
                projects: vec!["p2".into()],
                groups: vec![],
            },
        )
        .await;
    app.forbidden(&narrowed, "session_recent", json!({ "projectId": "p1" }))
        .await;
}

// Long on purpose: one scenario told in order, each step reading the state the last left.
#[tokio::test]
async fn claims_are_learned_recalled_changed_and_audited_through_mcp() {
    let app = App::new().await;
    let w = app.writer().await;
    let e = app
        .call_err(
            &w,
            "learn",
            json!({ "text": "the retry cap is five minutes" }),
        )
        .await;
    assert_eq!(e["data"]["code"], "evidence_required", "{e}");
    let e = app
        .call_err(
            &w,
            "learn",
            json!({ "text": "x", "evidence": [{ "kind": "chunk", "ref": "nope" }] }),
        )
        .await;
    assert_eq!(e["data"]["code"], "evidence_not_visible", "{e}");
    let learn = |text: &str| {
        json!({ "text": text, "evidence": [{ "kind": "url", "ref": "https://docs.example/retry" }],
                "tags": ["retry"], "actor": { "type": "agent", "id": "reviewer" } })
    };
    let a = app
        .call(&w, "learn", learn("the retry cap is five minutes"))
        .await;
    let a = a["structuredContent"]["id"]
        .as_str()
        .expect("id")
        .to_string();
    let b = app
        .call(&w, "learn", learn("the retry cap is ten minutes"))
        .await;
    let b = b["structuredContent"]["id"]
        .as_str()
        .expect("id")
        .to_string();
    let r = app
        .call(
            &w,
            "recall",
            json!({ "question": "retry cap", "tags": ["retry"] }),
        )
        .await;
    assert_eq!(
        r["structuredContent"]["claims"].as_array().map(Vec::len),
        Some(2),
        "{r}"
    );
    let v = app
        .call(
            &w,
            "verify",
            json!({ "id": a, "evidence": [{ "kind": "user_statement", "ref": "m1" }] }),
        )
        .await;
    assert_eq!(v["structuredContent"]["status"], "verified", "{v}");
    let e = app.call_err(&w, "verify", json!({ "id": a })).await;
    assert_eq!(e["data"]["code"], "invalid_transition", "{e}");
    app.call(
        &w,
        "dispute",
        json!({ "id": a, "reason": "the code says ten" }),
    )
    .await;
    // The disputed claim is what needs attention, first.
    let at = app.call(&w, "claim_attention", json!({})).await;
    assert_eq!(
        at["structuredContent"]["items"][0]["id"],
        a.as_str(),
        "{at}"
    );
    let s = app.call(&w, "supersede", json!({ "id": a, "by": b })).await;
    assert_eq!(s["structuredContent"]["supersededBy"], b.as_str(), "{s}");
    let h = app.call(&w, "claim_history", json!({ "id": a })).await;
    let to: Vec<&str> = h["structuredContent"]["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["to"].as_str())
        .collect();
    assert_eq!(
        to,
        ["observed", "verified", "disputed", "superseded"],
        "{h}"
    );
    let tools: Vec<String> = app
        .audit_of("writer")
        .await
        .into_iter()
        .map(|e| e.route)
        .collect();
    for tool in ["learn", "verify", "dispute", "supersede"] {
        assert!(
            tools.iter().any(|r| r.contains(tool)),
            "{tool} audited: {tools:?}"
        );
    }
    // Another client's reader sees none of it.
    let other = app.token("other", Grant::client("other", Role::Read)).await;
    let r = app
        .call(&other, "recall", json!({ "question": "retry cap" }))
        .await;
    assert_eq!(r["structuredContent"]["claims"], json!([]), "{r}");
    let at = app.call(&other, "claim_attention", json!({})).await;
    assert_eq!(at["structuredContent"]["items"], json!([]), "{at}");
    let e = app
        .call_err(&other, "claim_history", json!({ "id": a }))
        .await;
    assert_eq!(e["data"]["status"], 404, "{e}");
}
