//! Issue 29: generated credentials — every known token format, every key-name form (pairs,
//! quoted or not, JSON-style), every sentence form, connection strings — each behind random
//! decoys, fed through every field of every write route and MCP tool in the table
//! (`secret_targets`, which fails when a write route or tool has no entry). Each is refused
//! (`422 credential_detected`, the secret never echoed) or, for file contents and diffs,
//! stored redacted; afterwards no byte of the database, its WAL, the text index or the audit
//! log holds any of them (searched case-insensitively: the text index lower-cases).
//!
//! The detector's own property test runs 12,000 cases (`evident-core`,
//! `secrets::evasion_tests`); here every entry gets a sweep of 8 forms, then proptest draws
//! 1,500 more (entry, form, values, decoys) cases, so each case is a real request.

mod secret_targets;

use evident_core::secrets::samples::{forms, sample};
use evident_e2e::{Embed, TestApp};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use secret_targets::*;
use serde_json::Value;

/// A refusal: 422 `credential_detected`, the message never holding the secret. A text with
/// a line break or other control character may be refused first as an invalid id (400): an
/// id field cannot hold it at all, and the store check afterwards proves nothing was kept.
fn assert_refused(what: &str, status: u16, v: &Value, secret: &str, text: &str) {
    let invalid_id = status == 400
        && text.chars().any(char::is_control)
        && v["code"]
            .as_str()
            .is_some_and(|c| c.starts_with("invalid_"));
    if !invalid_id {
        assert_eq!(
            (status, v["code"].as_str()),
            (422, Some("credential_detected")),
            "{what}: {v}"
        );
    }
    let msg = v["message"].as_str().unwrap_or("");
    assert!(!msg.contains(secret), "{what}: echoes the secret: {msg}");
}

struct Run {
    app: TestApp,
    rest: Vec<Rest>,
    tools: Vec<Tool>,
    secrets: Vec<String>,
}

impl Run {
    /// Entry `i` (REST entries, then tools) with credential form `form`.
    async fn case(&mut self, i: usize, form: usize, seed: u64, decoys: usize) {
        let s = sample(form, seed, decoys);
        if i < self.rest.len() {
            let e = &self.rest[i];
            let (status, v) = send(&self.app, e, &s.text).await;
            let what = format!("{} {} [{}] {:?}", e.method, e.uri, s.form, s.text);
            match e.expect {
                Expect::Refused => assert_refused(&what, status.as_u16(), &v, &s.secret, &s.text),
                Expect::Redacted => assert!(status.is_success(), "{what}: {status} {v}"),
                Expect::RefusedWhenStored if status.is_success() => {}
                Expect::RefusedWhenStored => {
                    assert_refused(&what, status.as_u16(), &v, &s.secret, &s.text)
                }
            }
        } else {
            let e = &self.tools[i - self.rest.len()];
            let v = call_tool(&self.app, e, &s.text).await;
            let what = format!("mcp {} [{}]", e.tool, s.form);
            assert_eq!(
                (
                    v.pointer("/error/data/code").and_then(Value::as_str),
                    v.pointer("/error/data/status").and_then(Value::as_u64)
                ),
                (Some("credential_detected"), Some(422)),
                "{what}: {v}"
            );
            let msg = v
                .pointer("/error/message")
                .and_then(Value::as_str)
                .unwrap_or("");
            assert!(!msg.contains(&s.secret), "{what}: echoes the secret: {msg}");
        }
        self.secrets.push(s.secret);
    }
}

#[test]
fn generated_credentials_are_refused_everywhere_and_never_stored() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut run = rt.block_on(async {
        let app = TestApp::new(Embed::Hashing).await;
        let f = setup(&app).await;
        let rest = rest_entries(&f);
        let tools = tool_entries(&f);
        assert_eq!(
            uncovered(&rest, &tools),
            Vec::<String>::new(),
            "entries missing"
        );
        controls(&app, &rest, &tools).await;
        Run {
            app,
            rest,
            tools,
            secrets: Vec::new(),
        }
    });
    let entries = run.rest.len() + run.tools.len();
    // The sweep: every entry, 8 forms spread over all of them.
    rt.block_on(async {
        for i in 0..entries {
            for j in 0..8 {
                let form = (i * 37 + j * (forms() / 8 + 1)) % forms();
                run.case(i, form, (i * 8 + j) as u64, j % 5).await;
            }
        }
    });
    let swept = run.secrets.len();
    let mut runner = TestRunner::new(Config {
        cases: 1_500,
        failure_persistence: None,
        ..Config::default()
    });
    let run = std::cell::RefCell::new(run);
    let strategy = (0..entries, 0..forms(), any::<u64>(), 0usize..6);
    runner
        .run(&strategy, |(i, form, seed, decoys)| {
            rt.block_on(run.borrow_mut().case(i, form, seed, decoys));
            Ok(())
        })
        .expect("every generated credential refused");
    let run = run.into_inner();
    assert!(run.secrets.len() >= swept + 1_500, "{}", run.secrets.len());
    rt.block_on(nothing_stored(&run));
}

/// Each entry with a harmless value is accepted: the field is real and stored.
async fn controls(app: &TestApp, rest: &[Rest], tools: &[Tool]) {
    // Every refused control is listed at once: one run names every entry that needs a fix.
    let mut refused = Vec::new();
    for e in rest {
        let (s, v) = send(app, e, &e.control).await;
        if !(s.is_success() || e.control_ok.contains(&s.as_u16())) {
            refused.push(format!("control {} {}: {s} {v}", e.method, e.uri));
        }
    }
    for e in tools {
        let v = call_tool(app, e, &e.control).await;
        if let Some(code) = tool_error(&v)
            && !e.control_ok.iter().any(|ok| code.contains(ok))
        {
            refused.push(format!("control mcp {}: {v}", e.tool));
        }
    }
    assert!(refused.is_empty(), "{}", refused.join("\n"));
}

/// No generated credential in any file of the data directory, nor in the audit log's
/// answer; the refusals were audited.
async fn nothing_stored(run: &Run) {
    let pattern = run
        .secrets
        .iter()
        .map(|s| regex::escape(s))
        .collect::<Vec<_>>()
        .join("|");
    let any_secret = regex::bytes::RegexBuilder::new(&pattern)
        .case_insensitive(true)
        .size_limit(1 << 28)
        .build()
        .expect("secrets regex");
    // `text.index` is saved in the background; save it now so it is searched too.
    run.app
        .store
        .save_text_index()
        .await
        .expect("text index saved");
    let files = stored_bytes(&run.app);
    for name in ["evident.db", "evident.db-wal", "text.index"] {
        assert!(
            files.iter().any(|(p, _)| p.ends_with(name)),
            "{name} in {:?}",
            files.iter().map(|f| &f.0).collect::<Vec<_>>()
        );
    }
    for (path, bytes) in &files {
        if let Some(m) = any_secret.find(bytes) {
            panic!(
                "{path} holds a credential: {}",
                String::from_utf8_lossy(m.as_bytes())
            );
        }
    }
    let (s, audit) = run.app.get("/api/v1/audit?limit=1000").await;
    assert_eq!(s, 200, "{audit}");
    let text = audit.to_string();
    assert!(
        !any_secret.is_match(text.as_bytes()),
        "audit answer holds a credential"
    );
    assert!(text.contains("credential_detected"), "refusals are audited");
}
