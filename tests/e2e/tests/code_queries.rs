//! Code questions through the real router: `GET /api/v1/graph/code/{relation}` and the MCP
//! tools `code_callers`, `code_callees`, `code_implementations`, `code_uses`, answered from
//! the semantic edges the git indexer wrote for the fixture repositories of
//! `tests/fixtures/semantic` (Python `geo`, Java `shop`); names resolved to every matching
//! symbol of the reader's scope (ambiguity said, never a guess), another client's token seeing
//! none of it, bad requests refused with `{code, message}`, and the console's node page.

use std::sync::Arc;

use evident_e2e::{Embed, TestApp};
use evident_indexers::git::{GitPoller, GitSourceConfig, GitTasks};
use evident_indexers::poll::PollContext;
use evident_kb::{TaskHandlers, TaskSubmitter};
use evident_qualifier::{Outcome, Qualifier, QueueConfig};
use evident_store::indexers::{IndexerSource, PollStatus};
use evident_store::queue::{ManualClock, PriorityBand};
use serde_json::{Value, json};

mod console;

/// The app with `geo` and `shop` indexed for client `acme` by the git poller and its tasks,
/// wired as the service wires them (semantic edges on).
async fn indexed() -> TestApp {
    let app = TestApp::new(Embed::Hashing).await;
    let kb = &app.kb;
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let access = evident_indexers::access::Access::for_tests(&std::env::temp_dir());
    let mirrors = app.dir.path().join("mirrors");
    let mut handlers = TaskHandlers::new(kb);
    GitTasks {
        kb: kb.clone(),
        indexers: kb.stores().indexers.clone(),
        mirrors: mirrors.clone(),
        code_chunking: Default::default(),
        doc_chunking: Default::default(),
        parallel: 2,
        access: access.clone(),
        semantic: Some(Default::default()),
    }
    .register(&mut handlers);
    let poller = GitPoller {
        ctx: PollContext {
            indexers: kb.stores().indexers.clone(),
            tasks: TaskSubmitter::new(kb.stores().queue.clone()),
            owner: "test".into(),
            clock: clock.clone(),
            priority: evident_ai::Priority::DEFAULT,
            access,
        },
        mirrors,
        batches: Default::default(),
    };
    let qualifier = Qualifier {
        queue: kb.stores().queue.clone(),
        handlers,
        clock: clock.clone(),
        config: QueueConfig::default(),
        worker_id: "test".into(),
        band: PriorityBand::ALL,
    };
    for name in ["geo", "shop"] {
        let work = evident_e2e::fixtures::semantic_repo(name, app.dir.path());
        let cfg = GitSourceConfig {
            name: name.into(),
            url: None,
            path: Some(work),
            branches: Vec::new(),
            username_env: None,
            token_env: None,
            issue_tracker: None,
            max_file_bytes: 1024 * 1024,
        };
        let source = IndexerSource {
            id: format!("acme.{name}"),
            kind: "git".into(),
            scope: evident_core::Scope::client("acme"),
            config: serde_json::to_value(cfg).expect("config"),
            interval_secs: 60,
            enabled: true,
            created_at: 0,
            updated_at: 0,
            status: PollStatus::default(),
        };
        let source = kb
            .stores()
            .indexers
            .put_source(&source, 0)
            .await
            .expect("register");
        poller.poll(&source).await.expect("poll").expect("lease");
    }
    loop {
        match qualifier.process_next().await.expect("process") {
            Outcome::Empty => break,
            Outcome::Processed { state, task_id } => {
                assert_eq!(state, evident_store::queue::TaskState::Done, "{task_id}")
            }
        }
    }
    app
}

async fn code(app: &TestApp, relation: &str, query: &str) -> (u16, Value) {
    let (s, v) = app
        .get(&format!("/api/v1/graph/code/{relation}?{query}"))
        .await;
    (s.as_u16(), v)
}

/// The keys each match of an answer reached, by the matched symbol's key.
fn answers(v: &Value) -> Vec<(String, Vec<String>)> {
    v["matches"]
        .as_array()
        .unwrap_or_else(|| panic!("matches: {v}"))
        .iter()
        .map(|m| {
            let keys = m["results"]
                .as_array()
                .expect("results")
                .iter()
                .map(|r| r["key"].as_str().expect("key").to_string())
                .collect();
            (m["symbol"]["key"].as_str().expect("key").to_string(), keys)
        })
        .collect()
}

fn one(symbol: &str, results: &[&str]) -> Vec<(String, Vec<String>)> {
    vec![(
        symbol.to_string(),
        results.iter().map(|r| r.to_string()).collect(),
    )]
}

fn enc(s: &str) -> String {
    evident_e2e::enc(s)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_questions_through_rest_mcp_and_the_console() {
    let app = indexed().await;
    let ask = |relation: &'static str, symbol: &'static str, extra: &'static str| {
        let app = &app;
        async move {
            let (s, v) = code(
                app,
                relation,
                &format!("clientId=acme&symbol={}{extra}", enc(symbol)),
            )
            .await;
            assert_eq!(s, 200, "{relation} {symbol}: {v}");
            v
        }
    };

    // Keys and names of every form find the same symbol.
    for symbol in [
        "symbol:shop/shop.model.Item.price()",
        "shop.model.Item.price",
        "Item.price",
        "Item.price()",
        "model.Item.price",
    ] {
        let v = ask("callers", symbol, "").await;
        assert_eq!(
            answers(&v),
            one(
                "symbol:shop/shop.model.Item.price()",
                &[
                    "symbol:shop/shop.Cart.price()",
                    "symbol:shop/shop.model.Book.price()"
                ]
            ),
            "{symbol}"
        );
        assert_eq!(v["ambiguous"], false);
        assert!(v.get("note").is_none());
        // Each edge comes with the chunk of the call as evidence.
        for e in v["matches"][0]["edges"].as_array().expect("edges") {
            assert_eq!(e["edgeType"], "calls");
            assert!(
                !e["evidenceChunkIds"].as_array().expect("ids").is_empty(),
                "{e}"
            );
        }
    }
    let v = ask("callees", "Cart.price", "").await;
    assert_eq!(
        answers(&v),
        one(
            "symbol:shop/shop.Cart.price()",
            &[
                "symbol:shop/shop.Cart.fee()",
                "symbol:shop/shop.model.Book.price()",
                "symbol:shop/shop.model.Item.price()",
            ]
        )
    );
    // Implementations: direct ones, then with depth 2 the subclass of an implementation.
    let v = ask("implementations", "Priced", "").await;
    assert_eq!(
        answers(&v),
        one(
            "symbol:shop/shop.Priced",
            &["symbol:shop/shop.Cart", "symbol:shop/shop.model.Item"]
        )
    );
    let v = ask("implementations", "shop.Priced", "&depth=2").await;
    let depths: Vec<(String, u64)> = v["matches"][0]["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| {
            (
                r["key"].as_str().expect("key").into(),
                r["depth"].as_u64().expect("depth"),
            )
        })
        .collect();
    assert_eq!(
        depths,
        vec![
            ("symbol:shop/shop.Cart".to_string(), 1),
            ("symbol:shop/shop.model.Item".to_string(), 1),
            ("symbol:shop/shop.model.Book".to_string(), 2),
        ]
    );
    let v = ask("uses", "Item", "").await;
    assert_eq!(
        answers(&v),
        one("symbol:shop/shop.model.Item", &["symbol:shop/shop.Cart"])
    );
    // Python: callers two hops back, a base's subclasses.
    let v = ask("callers", "Square.area", "").await;
    assert_eq!(
        answers(&v),
        one(
            "symbol:geo/geo.shapes.Square.area()",
            &[
                "symbol:geo/geo.report.report()",
                "symbol:geo/geo.stats.total()"
            ]
        )
    );
    let v = ask("implementations", "Shape", "").await;
    assert_eq!(
        answers(&v),
        one(
            "symbol:geo/geo.shapes.Shape",
            &["symbol:geo/geo.shapes.Square"]
        )
    );

    // An ambiguous name: every match answered on its own, and said so.
    let v = ask("callers", "area", "").await;
    assert_eq!(v["ambiguous"], true, "{v}");
    assert!(
        v["note"].as_str().expect("note").contains("ambiguous"),
        "{v}"
    );
    assert_eq!(
        answers(&v),
        vec![
            (
                "symbol:geo/geo.shapes.Shape.area()".to_string(),
                vec!["symbol:geo/geo.shapes.Shape.describe()".to_string()]
            ),
            (
                "symbol:geo/geo.shapes.Square.area()".to_string(),
                vec![
                    "symbol:geo/geo.report.report()".to_string(),
                    "symbol:geo/geo.stats.total()".to_string()
                ]
            ),
        ]
    );
    let v = ask("callers", "price", "").await;
    assert_eq!(v["matches"].as_array().expect("matches").len(), 4, "{v}");

    // Unknown names, bad relations and depths: 4xx with a code, never a guess.
    for (relation, query, status, code_) in [
        (
            "callers",
            "clientId=acme&symbol=nosuchthing",
            404,
            "not_found",
        ),
        (
            "callers",
            "clientId=acme&symbol=symbol%3Ashop%2Fshop.Nope()",
            404,
            "not_found",
        ),
        ("callerz", "clientId=acme&symbol=price", 400, ""),
        ("callers", "clientId=acme&symbol=price&depth=0", 400, ""),
        ("callers", "clientId=acme&symbol=price&depth=9", 400, ""),
        ("callers", "clientId=acme", 400, ""),
        ("callers", "clientId=acme&symbol=price&bogus=1", 400, ""),
    ] {
        let (s, v) = code(&app, relation, query).await;
        assert_eq!(s, status, "{relation}?{query}: {v}");
        assert!(v["code"].is_string() && v["message"].is_string(), "{v}");
        if !code_.is_empty() {
            assert_eq!(v["code"], code_, "{v}");
        }
    }

    // Another client's token sees none of acme's symbols.
    let other = app
        .client_token("other", "other", evident_core::access::Role::Read)
        .await;
    let (s, v) = app
        .call_auth(
            &evident_e2e::bearer(&other),
            "GET",
            "/api/v1/graph/code/callers?symbol=price",
            None,
        )
        .await;
    assert_eq!(s, 404, "{v}");
    let (s, v) = app
        .call_auth(
            &evident_e2e::bearer(&other),
            "GET",
            "/api/v1/graph/code/callers?clientId=acme&symbol=price",
            None,
        )
        .await;
    assert_eq!(s, 403, "{v}");

    // The MCP tools answer what the route answers.
    for (tool, relation, symbol) in [
        ("code_callers", "callers", "Item.price"),
        ("code_callees", "callees", "Cart.price"),
        ("code_implementations", "implementations", "Priced"),
        ("code_uses", "uses", "Item"),
        ("code_callers", "callers", "area"),
    ] {
        let rest = ask(relation, symbol, "").await;
        let v = mcp(&app, tool, json!({"clientId": "acme", "symbol": symbol})).await;
        let structured = &v["result"]["structuredContent"];
        assert_eq!(structured, &rest, "{tool} {symbol}: {v}");
    }
    let v = mcp(
        &app,
        "code_callers",
        json!({"clientId": "acme", "symbol": "nosuchthing"}),
    )
    .await;
    assert!(
        v["result"]["isError"] == true || v["error"].is_object(),
        "{v}"
    );

    // The console's node page of a method lists its callers and callees; a type's its
    // implementations and uses.
    let cookie = console::login(&app, &app.token).await;
    let page = console::page(
        &app,
        &format!(
            "/ui/node/{}?clientId=acme",
            enc("symbol:shop/shop.model.Item.price()")
        ),
        &cookie,
    )
    .await;
    assert_eq!(page.status, 200, "{}", page.body);
    let section = |id: &str| {
        let at = page
            .body
            .find(&format!("<ul id=\"{id}\">"))
            .unwrap_or_else(|| panic!("{id}: {}", page.body));
        let rest = &page.body[at..];
        rest[..rest.find("</ul>").expect("end")].to_string()
    };
    assert!(section("callers").contains("symbol:shop/shop.Cart.price()"));
    assert!(section("callers").contains("symbol:shop/shop.model.Book.price()"));
    assert!(section("callees").contains("none"));
    let page = console::page(
        &app,
        &format!("/ui/node/{}?clientId=acme", enc("symbol:shop/shop.Priced")),
        &cookie,
    )
    .await;
    assert!(
        page.body.contains("<ul id=\"implementations\">"),
        "{}",
        page.body
    );
    assert!(page.body.contains("symbol:shop/shop.model.Item"));
}

/// One MCP `tools/call` through the router with the operator's token.
async fn mcp(app: &TestApp, tool: &str, args: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": args}});
    let (s, v) = app
        .call(
            "POST",
            "/mcp",
            Some(axum::body::Body::from(body.to_string())),
            &[
                ("host", "evident.example.com"),
                ("accept", "application/json, text/event-stream"),
                ("mcp-protocol-version", "2025-06-18"),
            ],
        )
        .await;
    assert_eq!(s, 200, "{tool}: {v}");
    v
}
