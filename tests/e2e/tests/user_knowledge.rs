//! User knowledge and the user-context prefetch through the real router (issue 15, part 2 of
//! its list): one item per (scope, category, subject), headers per category, zero embedding
//! work in the prefetch, scopes and grants.

use evident_core::access::Role;
use evident_e2e::{CountingEmbedder, Embed, TestApp, bearer};
use serde_json::{Value, json};

fn knowledge(client: &str, category: &str, subject: &str, content: &str) -> Value {
    json!({"clientId": client, "category": category, "subject": subject, "content": content})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subjects_are_kept_apart_updated_in_place_and_prefetched_without_embedding() {
    let counting = CountingEmbedder::hashing();
    let app =
        TestApp::with_embedder(counting.clone(), 1 << 20, tempfile::tempdir().expect("tmp")).await;
    let store = |body: Value| {
        let app = &app;
        async move { app.post("/api/v1/knowledge", &body).await }
    };

    let (s, bms) = store(knowledge(
        "acme",
        "domain",
        "BMS",
        "Brokerage Management System",
    ))
    .await;
    assert_eq!(s, 200, "{bms}");
    assert_eq!(bms["sourceUrn"], "user-knowledge:domain:bms");
    let (s, crm) = store(knowledge(
        "acme",
        "domain",
        "CRM",
        "the sales team's Pipedrive",
    ))
    .await;
    assert_eq!(s, 200, "{crm}");
    assert_ne!(crm["sourceUrn"], bms["sourceUrn"], "subjects never collide");
    let (s, _) = store(knowledge(
        "acme",
        "team",
        "Jan",
        "owns the billing service and reviews every payment change",
    ))
    .await;
    assert_eq!(s, 200);
    let (s, pref) = store(knowledge(
        "acme",
        "preference",
        "code style",
        "prefers small commits with tests beside the code",
    ))
    .await;
    assert_eq!(s, 200, "{pref}");

    // The same subject (another spelling) updates the one item.
    let (s, updated) = store(knowledge(
        "acme",
        "domain",
        " bms ",
        "Brokerage Management System, the back office of the trading desk",
    ))
    .await;
    assert_eq!(s, 200, "{updated}");
    assert_eq!(updated["status"], "updated");
    assert_eq!(updated["sourceUrn"], bms["sourceUrn"]);
    let (_, sources) = app.get("/api/v1/sources?clientId=acme").await;
    let urns: Vec<&str> = sources["sources"]
        .as_array()
        .expect("sources")
        .iter()
        .filter_map(|s| s["sourceUrn"].as_str())
        .filter(|u| u.starts_with("user-knowledge:domain:"))
        .collect();
    assert_eq!(urns.len(), 2, "one document per subject: {urns:?}");

    let embedded = counting.count();
    let ctx = app.get_ok("/api/v1/user-context?clientId=acme").await;
    assert_eq!(counting.count(), embedded, "the prefetch embeds nothing");
    let md = ctx["markdown"].as_str().expect("markdown");
    let domain = md.find("### Domain Context\n").expect("domain header");
    let team = md.find("### Team\n").expect("team header");
    let prefs = md.find("### Preferences\n").expect("preferences header");
    assert!(
        prefs < domain && domain < team,
        "categories in order:\n{md}"
    );
    let domain_section = &md[domain..team];
    assert!(
        domain_section.contains(
            "- **bms**: Brokerage Management System, the back office of the trading desk"
        ) || domain_section.contains(
            "- **BMS**: Brokerage Management System, the back office of the trading desk"
        ),
        "{md}"
    );
    assert!(domain_section.contains("- **CRM**: the sales team's Pipedrive"));
    assert!(
        !md.contains("Brokerage Management System\n"),
        "the old text is gone:\n{md}"
    );
    // Newest first: BMS was written after CRM.
    assert!(domain_section.find("BMS").or(domain_section.find("bms")) < domain_section.find("CRM"));
    assert_eq!(ctx["counts"]["domain"], 2);
    assert_eq!(ctx["counts"]["team"], 1);
    assert_eq!(ctx["truncated"], false);

    // Bounded: a small limit keeps the Markdown within it and says items were left out.
    let small = app
        .get_ok("/api/v1/user-context?clientId=acme&maxBytes=256")
        .await;
    assert!(small["markdown"].as_str().expect("md").len() <= 256);
    assert_eq!(small["truncated"], true, "{small}");
    assert_eq!(counting.count(), embedded);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prefetch_follows_scopes_and_grants() {
    let app = TestApp::new(Embed::Hashing).await;
    let mut project = knowledge("acme", "tech_stack", "API", "Kotlin with Spring Boot");
    project["projectId"] = "p1".into();
    let v = app.post_ok("/api/v1/knowledge", &project).await;
    assert_eq!(v["sourceUrn"], "user-knowledge:tech_stack:api");
    let (s, _) = app
        .post(
            "/api/v1/knowledge",
            &knowledge("acme", "general", "timezone", "works from Prague, CET"),
        )
        .await;
    assert_eq!(s, 200);

    let md = |v: &Value| v["markdown"].as_str().unwrap_or_default().to_string();
    let (_, p1) = app
        .get("/api/v1/user-context?clientId=acme&projectId=p1")
        .await;
    assert!(md(&p1).contains("### Tech Stack\n- **API**: Kotlin with Spring Boot"));
    assert!(
        md(&p1).contains("### General\n"),
        "client-level items reach projects"
    );
    let (_, p2) = app
        .get("/api/v1/user-context?clientId=acme&projectId=p2")
        .await;
    assert!(!md(&p2).contains("Kotlin"), "another project: {p2}");
    let (_, other) = app.get("/api/v1/user-context?clientId=globex").await;
    assert_eq!(md(&other), "", "another client sees nothing: {other}");

    // Grants: a reader may prefetch but not store; another client's token may do neither.
    let reader = app.client_token("reader", "acme", Role::Read).await;
    let auth = bearer(&reader);
    let (s, _) = app
        .call_auth(&auth, "GET", "/api/v1/user-context?clientId=acme", None)
        .await;
    assert_eq!(s, 200);
    let body = knowledge("acme", "general", "x", "y");
    let (s, v) = app
        .call(
            "POST",
            "/api/v1/knowledge",
            Some(axum::body::Body::from(body.to_string())),
            &[("authorization", &auth)],
        )
        .await;
    assert_eq!(s, 403, "{v}");
    let outsider = app.client_token("globex", "globex", Role::Write).await;
    let (s, _) = app
        .call_auth(
            &bearer(&outsider),
            "GET",
            "/api/v1/user-context?clientId=acme",
            None,
        )
        .await;
    assert_eq!(s, 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_knowledge_is_refused_with_a_reason_and_nothing_stored() {
    let app = TestApp::new(Embed::Hashing).await;
    let before = app.fingerprint().await;
    for (body, status, code) in [
        (
            knowledge("acme", "hobby", "chess", "plays chess"),
            400,
            "invalid_field",
        ),
        (
            knowledge("acme", "general", "", "empty subject"),
            400,
            "invalid_field",
        ),
        (
            knowledge("acme", "general", "s", "  "),
            400,
            "invalid_field",
        ),
        (
            knowledge("acme", "general", "s", &"x".repeat(9000)),
            400,
            "field_too_long",
        ),
        (
            knowledge(
                "acme",
                "personal",
                "aws",
                "the key is AKIAZ3MHQ7RT2LQKXW5P for the deploy user",
            ),
            422,
            "credential_detected",
        ),
        (
            json!({"clientId": "acme", "category": "general", "subject": "s"}),
            400,
            "invalid_body",
        ),
        (
            json!({"category": "general", "subject": "s", "content": "c"}),
            400,
            "invalid_body",
        ),
    ] {
        let (s, v) = app.post("/api/v1/knowledge", &body).await;
        assert_eq!(s.as_u16(), status, "{body} → {v}");
        assert_eq!(v["code"], code, "{body} → {v}");
    }
    let (s, v) = app
        .get("/api/v1/user-context?clientId=acme&maxBytes=10")
        .await;
    assert_eq!(s, 400, "{v}");
    assert_eq!(app.fingerprint().await, before, "nothing was written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_category_is_read_further_while_its_items_fit() {
    let app = TestApp::new(Embed::Hashing).await;
    for i in 0..40 {
        app.post_ok(
            "/api/v1/knowledge",
            &knowledge(
                "acme",
                "general",
                &format!("fact {i}"),
                &format!("value {i}"),
            ),
        )
        .await;
    }
    let (_, all) = app
        .get("/api/v1/user-context?clientId=acme&maxBytes=65536")
        .await;
    assert_eq!(all["counts"]["general"], 40, "{all}");
    assert_eq!(all["truncated"], false);
    let md = all["markdown"].as_str().expect("markdown");
    assert!(md.find("fact 39").expect("newest") < md.find("fact 0").expect("oldest"));
    let (_, some) = app
        .get("/api/v1/user-context?clientId=acme&maxBytes=300")
        .await;
    assert_eq!(some["truncated"], true, "{some}");
    assert!(some["markdown"].as_str().expect("md").contains("fact 39"));
}
