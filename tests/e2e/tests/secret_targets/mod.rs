//! Every place a request can hand the server a string it stores or logs: one entry per
//! field of every write route and every MCP tool that writes, with a body that the route
//! accepts when the field holds a harmless value. `⟨S⟩` marks the field; a test puts a
//! credential there. [`uncovered`] fails a test when a write route or tool has no entry,
//! so a new route cannot be forgotten.

#![allow(dead_code)] // each test crate uses part of this module

use axum::body::Body;
use axum::http::StatusCode;
use evident_api::auth::policy::ROUTES;
use evident_e2e::{TestApp, enc};
use serde_json::{Value, json};

/// Where the credential goes.
pub const SLOT: &str = "⟨S⟩";

/// What a route does with a credential in the field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// `422 credential_detected`, nothing written.
    Refused,
    /// Accepted: the indexer redacts the credential's lines (file contents, diffs).
    Redacted,
    /// A read that stores its text only sometimes (a question recorded as a gap when nothing
    /// relevant is found): refused when it would store it, else answered; the store check
    /// at the end proves nothing was kept either way.
    RefusedWhenStored,
}

/// One field of one REST route.
#[derive(Debug, Clone)]
pub struct Rest {
    pub method: &'static str,
    /// As in `policy::ROUTES`.
    pub route: &'static str,
    /// The request URI; may hold [`SLOT`] (a path segment or query value, percent-encoded).
    pub uri: String,
    /// JSON body (or a form, when `form`); may hold [`SLOT`] in a string.
    pub body: Option<Value>,
    pub form: bool,
    /// The harmless value the field gets in the control request.
    pub control: String,
    /// Control answers other than 2xx this entry accepts, and why.
    pub control_ok: &'static [u16],
    pub expect: Expect,
}

/// One argument of one MCP tool.
#[derive(Debug, Clone)]
pub struct Tool {
    pub tool: &'static str,
    pub args: Value,
    pub control: String,
    pub control_ok: &'static [&'static str],
}

/// Ids of the things the entries act on, made by [`setup`].
pub struct Fixture {
    pub claim: String,
    pub claim2: String,
    pub gap: String,
    pub epoch: i64,
    pub procedure: String,
    pub task: String,
    /// The folder sources may read (`[sources] roots`), installed for this process.
    pub root: String,
}

const HARMLESS: &str = "note42";

/// A temp folder installed as the process's only `[sources] roots` entry (as `serve` installs
/// the configured roots), with the harmless value's folder in it so the control registers.
fn source_root() -> String {
    let root = tempfile::tempdir().expect("tmp").keep();
    std::fs::create_dir_all(root.join(HARMLESS)).expect("mkdir");
    evident_indexers::access::install(evident_indexers::access::Access::new(
        Default::default(),
        evident_indexers::access::SourceRoots::new([&root]),
    ));
    root.to_string_lossy().into_owned()
}

/// Data for the entries: a document, two claims, a claimed gap, a procedure, a queued task.
pub async fn setup(app: &TestApp) -> Fixture {
    let root = source_root();
    app.post_ok(
        "/api/v1/ingest",
        &json!({"clientId": "acme", "sourceUrn": "doc:base", "kind": "doc",
                "content": "The payments team owns the ledger service."}),
    )
    .await;
    let learn = |text: &str| {
        json!({"clientId": "acme", "text": text, "status": "hypothesis", "confidence": 0.3,
               "evidence": [{"kind": "url", "ref": "https://example.com/a"}]})
    };
    let (s, c1) = app
        .post("/api/v1/claims", &learn("uploads retry twice"))
        .await;
    assert!(s.is_success(), "{c1}");
    let (s, c2) = app
        .post("/api/v1/claims", &learn("uploads retry thrice"))
        .await;
    assert!(s.is_success(), "{c2}");
    let (s, g) = app
        .post(
            "/api/v1/gaps",
            &json!({"clientId": "acme", "gaps": [{"question": "Who owns the ledger?"}]}),
        )
        .await;
    assert!(s.is_success(), "{g}");
    let (s, claimed) = app
        .post("/api/v1/gaps/claim", &json!({"clientId": "acme"}))
        .await;
    assert!(s.is_success(), "{claimed}");
    let (s, p) = app
        .post(
            "/api/v1/procedures",
            &json!({"clientId": "acme", "triggerPattern": "bug_report", "source": "user_defined",
                    "steps": [{"agent": "Research", "action": "search_kb"}]}),
        )
        .await;
    assert!(s.is_success(), "{p}");
    let (s, t) = app
        .post(
            "/api/v1/ingest-queue",
            &json!({"clientId": "acme", "sourceUrn": "doc:queued", "kind": "doc", "content": "queued"}),
        )
        .await;
    assert!(s.is_success(), "{t}");
    let id = |v: &Value, keys: &[&str]| {
        keys.iter()
            .find_map(|k| v.pointer(k).and_then(Value::as_str).map(str::to_string))
            .unwrap_or_else(|| panic!("no id in {v}"))
    };
    Fixture {
        claim: id(&c1, &["/id", "/claim/id"]),
        claim2: id(&c2, &["/id", "/claim/id"]),
        gap: id(&claimed, &["/gap/gapId", "/gapId", "/gap/id", "/id"]),
        epoch: claimed
            .pointer("/gap/epoch")
            .or_else(|| claimed.pointer("/epoch"))
            .and_then(Value::as_i64)
            .unwrap_or(1),
        procedure: id(&p, &["/id", "/procedure/id"]),
        task: id(&t, &["/taskId", "/id", "/task/id"]),
        root,
    }
}

fn rest(method: &'static str, route: &'static str, uri: &str, body: Option<Value>) -> Rest {
    Rest {
        method,
        route,
        uri: uri.to_string(),
        body,
        form: false,
        control: HARMLESS.into(),
        control_ok: &[],
        expect: Expect::Refused,
    }
}

impl Rest {
    fn control(mut self, value: &str) -> Rest {
        self.control = value.to_string();
        self
    }
    fn ok(mut self, statuses: &'static [u16]) -> Rest {
        self.control_ok = statuses;
        self
    }
    fn refused_when_stored(mut self) -> Rest {
        self.expect = Expect::RefusedWhenStored;
        self
    }

    fn redacted(mut self) -> Rest {
        self.expect = Expect::Redacted;
        self
    }
    fn form(mut self) -> Rest {
        self.form = true;
        self
    }
}

/// Every REST entry (in control order: writes that remove things last).
pub fn rest_entries(f: &Fixture) -> Vec<Rest> {
    let a = |extra: Value| {
        let mut b = json!({"clientId": "acme"});
        for (k, v) in extra.as_object().expect("object") {
            b[k] = v.clone();
        }
        b
    };
    let doc = |field: &str, value: Value| {
        // One source per field: a source stays in the scope it was written in.
        let mut b = json!({"clientId": "acme", "sourceUrn": format!("doc:{field}"), "kind": "doc",
                           "content": "Ordinary text about invoices."});
        b[field] = value;
        b
    };
    let s = || json!(SLOT);
    let file = |path: Value, name: Value, content: Value| {
        a(json!({"repository": "acme/shop", "branch": "main",
                 "files": [{"path": path, "language": "rust", "content": content,
                            "symbols": [{"kind": "function", "name": name, "lineStart": 1}]}]}))
    };
    let commit = |message: Value, diff: Value| {
        a(json!({"repository": "acme/shop", "commits": [{
            "hash": "3f786850e387550fdab836ed7e6dc881de23001b", "authorName": "Jan",
            "authorEmail": "jan@example.com", "date": "2026-01-02T03:04:05Z",
            "message": message, "diff": diff}]}))
    };
    let evidence = json!({"text": "The payments team owns the ledger service."});
    let (claim, claim2, gap, epoch, proc_id, task) = (
        f.claim.as_str(),
        f.claim2.as_str(),
        f.gap.as_str(),
        f.epoch,
        f.procedure.as_str(),
        f.task.as_str(),
    );
    vec![
        rest("post", "/api/v1/ingest", "/api/v1/ingest", Some(doc("content", json!(format!("Invoice text {SLOT}"))))),
        rest("post", "/api/v1/ingest", "/api/v1/ingest", Some(doc("title", s()))),
        rest("post", "/api/v1/ingest", "/api/v1/ingest", Some(doc("sourceUrn", json!(format!("doc:{SLOT}"))))),
        rest("post", "/api/v1/ingest", "/api/v1/ingest", Some(doc("metadata", json!({"note": SLOT})))),
        rest("post", "/api/v1/ingest", "/api/v1/ingest", Some(doc("mainNodeKey", json!(format!("topic:{SLOT}"))))),
        rest("post", "/api/v1/ingest", "/api/v1/ingest", Some(doc("projectId", s()))),
        rest("post", "/api/v1/ingest", "/api/v1/ingest", Some(doc("groupId", s()))),
        rest("post", "/api/v1/ingest", "/api/v1/ingest", Some(doc("tags", json!([SLOT])))),
        rest("post", "/api/v1/ingest-queue", "/api/v1/ingest-queue", Some(doc("content", s()))),
        rest("post", "/api/v1/ingest-queue", "/api/v1/ingest-queue", Some(doc("metadata", json!({"cfg": SLOT})))),
        rest("post", "/api/v1/queue/{taskId}/reorder", &format!("/api/v1/queue/{SLOT}/reorder"), Some(json!({"position": 1}))).control(task),
        rest("post", "/api/v1/queue/{taskId}/prioritize", &format!("/api/v1/queue/{SLOT}/prioritize"), Some(json!({}))).control(task).ok(&[400]),
        rest("post", "/api/v1/queue/{taskId}/retry", &format!("/api/v1/queue/{SLOT}/retry"), Some(json!({}))).control(task).ok(&[409]),
        rest("post", "/api/v1/move", "/api/v1/move", Some(a(json!({"sourceUrn": format!("doc:{SLOT}"), "toProjectId": "p2"})))).control("content"),
        rest("post", "/api/v1/move", "/api/v1/move", Some(a(json!({"sourceUrn": "doc:base", "toProjectId": SLOT})))),
        rest("post", "/api/v1/sources/git", "/api/v1/sources/git", Some(a(json!({"id": "acme.repo", "url": format!("https://example.com/{SLOT}.git")})))),
        rest("post", "/api/v1/sources/git", "/api/v1/sources/git", Some(a(json!({"id": "acme.repo2", "url": "https://example.com/r.git", "name": SLOT})))),
        rest("post", "/api/v1/sources/{kind}", "/api/v1/sources/github", Some(a(json!({"id": "acme.issues", "repo": format!("own/{SLOT}")})))),
        rest("post", "/api/v1/sources/{kind}", "/api/v1/sources/documents", Some(a(json!({"id": "acme.docs", "path": format!("{}/{SLOT}", f.root)})))),
        rest("post", "/api/v1/sources/{kind}", "/api/v1/sources/web", Some(a(json!({"id": "acme.web", "urls": [format!("https://docs.example.com/{SLOT}")]})))),
        rest("put", "/api/v1/memory/{sessionId}/{key}", &format!("/api/v1/memory/{SLOT}/goal"), Some(a(json!({"value": "find the bug"})))),
        rest("put", "/api/v1/memory/{sessionId}/{key}", &format!("/api/v1/memory/s1/{SLOT}"), Some(a(json!({"value": "find the bug"})))),
        rest("put", "/api/v1/memory/{sessionId}/{key}", "/api/v1/memory/s1/goal", Some(a(json!({"value": {"note": SLOT}})))),
        rest("post", "/api/v1/knowledge", "/api/v1/knowledge", Some(a(json!({"subject": "user", "content": SLOT, "category": "preference"})))),
        rest("post", "/api/v1/knowledge", "/api/v1/knowledge", Some(a(json!({"subject": SLOT, "content": "prefers tea", "category": "preference"})))),
        rest("post", "/api/v1/outcomes", "/api/v1/outcomes", Some(a(json!({"taskId": "t1", "category": "single_task", "summary": SLOT})))),
        rest("post", "/api/v1/outcomes", "/api/v1/outcomes", Some(a(json!({"taskId": "t1", "category": "single_task", "summary": "done", "lessonsLearned": [SLOT]})))),
        rest("post", "/api/v1/session-memory", "/api/v1/session-memory", Some(a(json!({"source": "chat", "summary": SLOT})))),
        rest("post", "/api/v1/session-memory", "/api/v1/session-memory", Some(a(json!({"source": "chat", "summary": "asked", "details": {"q": SLOT}})))),
        rest("post", "/api/v1/ingest/git-structure", "/api/v1/ingest/git-structure", Some(file(json!(format!("src/{SLOT}.rs")), json!("main"), json!("fn main() {}\n")))),
        rest("post", "/api/v1/ingest/git-structure", "/api/v1/ingest/git-structure", Some(file(json!("src/a.rs"), s(), json!("fn main() {}\n")))),
        rest("post", "/api/v1/ingest/git-structure", "/api/v1/ingest/git-structure", Some(file(json!("src/b.rs"), json!("main"), json!(format!("fn main() {{}}\n// {SLOT}\n"))))).redacted(),
        rest("post", "/api/v1/ingest/git-commits", "/api/v1/ingest/git-commits", Some(commit(json!(format!("Fix it\n\n{SLOT}")), json!("")))),
        rest("post", "/api/v1/ingest/git-commits", "/api/v1/ingest/git-commits", Some(commit(json!("Fix it"), json!(format!("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+{SLOT}\n"))))).redacted(),
        rest("post", "/api/v1/ingest/cpg", "/api/v1/ingest/cpg", Some(a(json!({"repository": "acme/shop", "edges": [{"from": "app::main", "to": SLOT, "type": "calls"}]})))),
        rest("post", "/api/v1/alias/register", "/api/v1/alias/register", Some(a(json!({"alias": format!("key:{SLOT}"), "canonical": "person:jan"})))),
        rest("post", "/api/v1/alias/register", "/api/v1/alias/register", Some(a(json!({"alias": "person:jn", "canonical": format!("person:{SLOT}")})))),
        rest("post", "/api/v1/alias/merge", "/api/v1/alias/merge", Some(a(json!({"source": format!("person:{SLOT}"), "target": "person:jan"})))),
        rest("post", "/api/v1/tokens", "/api/v1/tokens", Some(a(json!({"role": "read", "name": SLOT})))),
        rest("get", "/api/v1/tokens", &format!("/api/v1/tokens?clientId=acme&name={SLOT}"), None).ok(&[400]),
        rest("get", "/api/v1/audit", &format!("/api/v1/audit?clientId=acme&route={SLOT}"), None).ok(&[400]),
        rest("post", "/api/v1/claims", "/api/v1/claims", Some(a(json!({"text": SLOT, "evidence": [{"kind": "url", "ref": "https://x.example/a"}]})))),
        rest("post", "/api/v1/claims", "/api/v1/claims", Some(a(json!({"text": "retries are capped", "evidence": [{"kind": "tool_result", "ref": SLOT}]})))),
        rest("post", "/api/v1/claims/{id}/transition", &format!("/api/v1/claims/{claim}/transition"), Some(a(json!({"to": "observed", "evidence": [{"kind": "tool_result", "ref": SLOT}]})))),
        rest("post", "/api/v1/claims/{id}/verify", &format!("/api/v1/claims/{claim}/verify"), Some(a(json!({"evidence": [{"kind": "user_statement", "ref": SLOT}]})))),
        rest("post", "/api/v1/claims/{id}/dispute", &format!("/api/v1/claims/{SLOT}/dispute"), Some(a(json!({"reason": "logs show three retries"})))).control(claim2).ok(&[409]),
        rest("post", "/api/v1/claims/{id}/dispute", &format!("/api/v1/claims/{claim2}/dispute"), Some(a(json!({"reason": SLOT})))).ok(&[409]),
        rest("post", "/api/v1/claims/{id}/supersede", &format!("/api/v1/claims/{claim}/supersede"), Some(a(json!({"by": claim2, "reason": SLOT})))),
        rest("post", "/api/v1/graph/nodes", "/api/v1/graph/nodes", Some(a(json!({"key": format!("Team:{SLOT}"), "type": "team", "evidence": evidence})))),
        rest("post", "/api/v1/graph/nodes", "/api/v1/graph/nodes", Some(a(json!({"key": "Team:Payments", "type": "team", "label": SLOT, "evidence": evidence})))),
        rest("post", "/api/v1/graph/nodes", "/api/v1/graph/nodes", Some(a(json!({"key": "Team:Payments", "type": "team", "props": {"note": SLOT}, "evidence": evidence})))),
        rest("post", "/api/v1/graph/edges", "/api/v1/graph/edges", Some(a(json!({"from": "Team:Payments", "to": format!("Service:{SLOT}"), "edgeType": "OWNS", "evidence": evidence})))),
        rest("post", "/api/v1/graph/batch", "/api/v1/graph/batch", Some(a(json!({"nodes": [{"key": "Team:Billing", "type": "team", "label": SLOT, "evidence": evidence}]})))),
        rest("post", "/api/v1/gaps", "/api/v1/gaps", Some(a(json!({"gaps": [{"question": SLOT}]})))),
        rest("post", "/api/v1/gaps", "/api/v1/gaps", Some(a(json!({"gaps": [{"question": "Who runs billing?", "context": SLOT}]})))),
        rest("post", "/api/v1/gaps/claim", "/api/v1/gaps/claim", Some(a(json!({"projectId": SLOT})))),
        rest("post", "/api/v1/gaps/{gapId}/findings", &format!("/api/v1/gaps/{gap}/findings"), Some(a(json!({"epoch": epoch, "markdown": SLOT})))).ok(&[409]),
        rest("put", "/api/v1/graph/node/{key}/profile", &format!("/api/v1/graph/node/{SLOT}/profile"), Some(a(json!({"label": "Alice", "properties": {"team": "payments"}})))).control("person:alice"),
        rest("put", "/api/v1/graph/node/{key}/profile", "/api/v1/graph/node/person:alice/profile", Some(a(json!({"label": "Alice", "properties": {"note": SLOT}})))),
        rest("put", "/api/v1/graph/node/{key}/profile", "/api/v1/graph/node/person:alice/profile", Some(a(json!({"label": SLOT, "properties": {"team": "payments"}})))),
        rest("post", "/api/v1/ingest/structured", "/api/v1/ingest/structured", Some(a(json!({"sourceUrn": format!("structured:{SLOT}"), "pieces": []})))),
        rest("post", "/api/v1/procedures", "/api/v1/procedures", Some(a(json!({"triggerPattern": SLOT, "source": "user_defined", "steps": [{"agent": "A", "action": "b"}]})))),
        rest("post", "/api/v1/procedures", "/api/v1/procedures", Some(a(json!({"triggerPattern": "deploy", "source": "user_defined", "steps": [{"agent": "A", "action": "b", "params": {"note": SLOT}}]})))),
        rest("post", "/api/v1/procedures", "/api/v1/procedures", Some(a(json!({"id": SLOT, "triggerPattern": "deploy", "source": "user_defined", "steps": [{"agent": "A", "action": "b"}]})))),
        rest("put", "/api/v1/procedures/{id}", &format!("/api/v1/procedures/{SLOT}"), Some(a(json!({"triggerPattern": "deploy", "source": "user_defined", "steps": [{"agent": "A", "action": "b"}]})))).control(proc_id),
        rest("put", "/api/v1/procedures/{id}", &format!("/api/v1/procedures/{proc_id}"), Some(a(json!({"triggerPattern": "bug_report", "source": "user_defined", "steps": [{"agent": SLOT, "action": "b"}]})))),
        rest("post", "/api/v1/procedures/{id}/outcome", &format!("/api/v1/procedures/{SLOT}/outcome"), Some(a(json!({"success": true})))).control(proc_id),
        rest("post", "/ui/sources", "/ui/sources?clientId=acme", Some(json!(format!("kind=github&id=acme.ui&confirmed=1&settings=%7B%22repo%22%3A%22own%2F{SLOT}%22%7D")))).form().ok(&[303]),
        rest("post", "/ui/sources/{id}/disable", &format!("/ui/sources/{SLOT}/disable?clientId=acme"), Some(json!(""))).form().control("acme.ui").ok(&[303]),
        rest("post", "/ui/sources/{id}/enable", &format!("/ui/sources/{SLOT}/enable?clientId=acme"), Some(json!(""))).form().control("acme.ui").ok(&[303]),
        rest("post", "/ui/queue/{taskId}/prioritize", &format!("/ui/queue/{SLOT}/prioritize"), Some(json!(""))).form().control(task).ok(&[303, 400]),
        rest("post", "/ui/queue/{taskId}/reorder", &format!("/ui/queue/{SLOT}/reorder"), Some(json!("position=1"))).form().control(task).ok(&[303]),
        rest("post", "/ui/queue/{taskId}/retry", &format!("/ui/queue/{SLOT}/retry"), Some(json!(""))).form().control(task).ok(&[303, 409]),
        rest("post", "/api/v1/gaps/{gapId}/fail", &format!("/api/v1/gaps/{gap}/fail"), Some(a(json!({"epoch": epoch, "reason": SLOT})))).ok(&[409]),
        rest("post", "/api/v1/gaps/{gapId}/reorder", &format!("/api/v1/gaps/{SLOT}/reorder"), Some(a(json!({"priority": 1})))).control(gap),
        // Removals last: their controls remove what earlier entries made.
        rest("delete", "/api/v1/graph/edges", &format!("/api/v1/graph/edges?clientId=acme&from=Team%3APayments&to={SLOT}&edgeType=OWNS"), None).control("Service:note42"),
        rest("delete", "/api/v1/memory/{sessionId}/{key}", &format!("/api/v1/memory/s1/{SLOT}?clientId=acme"), None).control("goal"),
        rest("delete", "/api/v1/memory/{sessionId}", &format!("/api/v1/memory/{SLOT}?clientId=acme"), None).control("s1"),
        rest("delete", "/api/v1/procedures/{id}", &format!("/api/v1/procedures/{SLOT}?clientId=acme"), None).control(proc_id),
        rest("delete", "/api/v1/tokens/{id}", &format!("/api/v1/tokens/{SLOT}"), None).ok(&[404]),
        rest("post", "/ui/sources/{id}/remove", &format!("/ui/sources/{SLOT}/remove?clientId=acme"), Some(json!(""))).form().control("acme.ui").ok(&[303]),
        rest("delete", "/api/v1/sources/git/{id}", &format!("/api/v1/sources/git/{SLOT}?clientId=acme"), None).control("acme.repo"),
        rest("delete", "/api/v1/sources/{kind}/{id}", &format!("/api/v1/sources/github/{SLOT}?clientId=acme"), None).control("acme.issues"),
        rest("post", "/api/v1/purge", "/api/v1/purge", Some(a(json!({"sourceUrn": format!("doc:{SLOT}")})))).control("title"),
        // Reads that may store (a gap recorded under the request's scope).
        rest("post", "/api/v1/retrieve", "/api/v1/retrieve", Some(a(json!({"query": "ledger", "projectId": SLOT, "recordGap": true})))),
        rest("post", "/api/v1/context", "/api/v1/context", Some(a(json!({"query": "ledger", "groupId": SLOT})))),
        rest("post", "/api/v1/retrieve", "/api/v1/retrieve", Some(a(json!({"query": format!("why {SLOT}"), "recordGap": true})))).ok(&[]).refused_when_stored(),
    ]
    .into_iter()
    .collect()
}

/// Every MCP tool that writes, one entry per string argument worth a test.
pub fn tool_entries(f: &Fixture) -> Vec<Tool> {
    let t = |tool: &'static str, args: Value| Tool {
        tool,
        args,
        control: HARMLESS.into(),
        control_ok: &[],
    };
    let evidence = json!({"text": "The payments team owns the ledger service."});
    let (claim, claim2, gap, proc_id, task) = (
        f.claim.as_str(),
        f.claim2.as_str(),
        f.gap.as_str(),
        f.procedure.as_str(),
        f.task.as_str(),
    );
    vec![
        t("store_knowledge", json!({"clientId": "acme", "subject": "user", "content": SLOT})),
        t("store_knowledge", json!({"clientId": "acme", "subject": "user", "content": "ok", "metadata": {"cfg": SLOT}})),
        t("store_knowledge", json!({"clientId": "acme", "subject": "team", "content": "ok", "projectId": SLOT})),
        t("memory_put", json!({"clientId": "acme", "sessionId": SLOT, "key": "k", "value": "v"})),
        t("memory_put", json!({"clientId": "acme", "sessionId": "s2", "key": SLOT, "value": "v"})),
        t("memory_put", json!({"clientId": "acme", "sessionId": "s2", "key": "k", "value": {"note": SLOT}})),
        t("learn", json!({"clientId": "acme", "text": SLOT, "evidence": [{"kind": "url", "ref": "https://x.example/b"}]})),
        t("verify", json!({"clientId": "acme", "id": claim2, "evidence": [{"kind": "user_statement", "ref": SLOT}]})),
        t("dispute", json!({"clientId": "acme", "id": claim2, "reason": SLOT})),
        t("supersede", json!({"clientId": "acme", "id": claim, "by": claim2, "reason": SLOT})),
        t("load_structured", json!({"clientId": "acme", "sourceUrn": format!("structured:{SLOT}")})),
        t("put_profile", json!({"clientId": "acme", "key": format!("person:{SLOT}"), "properties": {"team": "x"}})),
        t("put_profile", json!({"clientId": "acme", "key": "person:bob", "properties": {"note": SLOT}})),
        t("report_gaps", json!({"clientId": "acme", "gaps": [SLOT]})),
        t("claim_gap", json!({"clientId": "acme", "projectId": SLOT})),
        t("submit_findings", json!({"clientId": "acme", "gapId": gap, "markdown": SLOT})),
        t("fail_gap", json!({"clientId": "acme", "gapId": gap, "reason": SLOT})),
        t("add_graph_node", json!({"clientId": "acme", "key": format!("Team:{SLOT}"), "type": "team", "evidence": evidence})),
        t("add_graph_node", json!({"clientId": "acme", "key": "Team:Ops", "type": "team", "props": {"note": SLOT}, "evidence": evidence})),
        t("add_graph_edge", json!({"clientId": "acme", "from": "Team:Ops", "to": format!("Service:{SLOT}"), "edgeType": "OWNS", "evidence": evidence})),
        t("remove_graph_edge", json!({"clientId": "acme", "from": "Team:Ops", "to": format!("Service:{SLOT}"), "edgeType": "OWNS"})),
        t("record_outcome", json!({"clientId": "acme", "taskId": "t2", "category": "single_task", "summary": SLOT})),
        t("session_append", json!({"clientId": "acme", "source": "chat", "summary": SLOT})),
        t("save_procedure", json!({"clientId": "acme", "triggerPattern": SLOT, "source": "user_defined", "steps": [{"agent": "A", "action": "b"}]})),
        t("record_procedure_outcome", json!({"clientId": "acme", "id": SLOT, "success": true})),
        t("delete_procedure", json!({"clientId": "acme", "id": SLOT})),
        t("steer_task", json!({"taskId": SLOT, "action": "reorder", "position": 1})),
    ]
    .into_iter()
    .map(|mut e| {
        match e.tool {
            // The REST removals ran first: the procedure is gone, the id was still checked.
            "record_procedure_outcome" | "delete_procedure" => {
                e.control = proc_id.into();
                e.control_ok = &["not_found"];
            }
            // The REST entry superseded it already: the reason was still screened first.
            "supersede" => e.control_ok = &["invalid_transition"],
            "steer_task" => e.control = task.into(),
            "submit_findings" | "fail_gap" => e.control_ok = &["conflict", "gap_not_claimed", "stale_epoch"],
            _ => {}
        }
        e
    })
    .collect()
}

/// Write routes (audited: writes and admin actions) without an entry, and write tools
/// without one.
pub fn uncovered(rest: &[Rest], tools: &[Tool]) -> Vec<String> {
    let mut missing: Vec<String> = ROUTES
        .iter()
        .filter(|(_, _, access)| access.audited())
        .filter(|(m, p, _)| !rest.iter().any(|e| e.method == *m && e.route == *p))
        .map(|(m, p, _)| format!("REST {m} {p}"))
        .collect();
    missing.extend(
        evident_api::mcp::tool_names()
            .into_iter()
            .filter(|(name, read_only)| !read_only && !tools.iter().any(|t| t.tool == name))
            .map(|(name, _)| format!("MCP tool {name}")),
    );
    missing
}

/// `v` with [`SLOT`] replaced by `text` in every string.
pub fn fill(v: &Value, text: &str) -> Value {
    match v {
        Value::String(s) => Value::String(s.replace(SLOT, text)),
        Value::Array(items) => Value::Array(items.iter().map(|i| fill(i, text)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), fill(v, text)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Sends `e` with `text` in its field; the answer.
pub async fn send(app: &TestApp, e: &Rest, text: &str) -> (StatusCode, Value) {
    let uri = e.uri.replace(SLOT, &enc(text));
    let (body, content_type) = match &e.body {
        None => (None, "application/json"),
        Some(Value::String(form)) if e.form => (
            Some(Body::from(form.replace(SLOT, &enc(text)))),
            "application/x-www-form-urlencoded",
        ),
        Some(b) => (
            Some(Body::from(fill(b, text).to_string())),
            "application/json",
        ),
    };
    app.call(
        &e.method.to_ascii_uppercase(),
        &uri,
        body,
        &[("content-type", content_type)],
    )
    .await
}

/// One MCP `tools/call`; the JSON-RPC answer.
pub async fn call_tool(app: &TestApp, e: &Tool, text: &str) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": e.tool, "arguments": fill(&e.args, text)}});
    let (s, v) = app
        .call(
            "POST",
            "/mcp",
            Some(Body::from(body.to_string())),
            &[
                ("host", "evident.example.com"),
                ("accept", "application/json, text/event-stream"),
                ("mcp-protocol-version", "2025-06-18"),
            ],
        )
        .await;
    assert_eq!(s, 200, "{}: {v}", e.tool);
    v
}

/// The API error code of a tool's answer (`None`: it succeeded).
pub fn tool_error(v: &Value) -> Option<String> {
    if let Some(code) = v.pointer("/error/data/code").and_then(Value::as_str) {
        return Some(code.to_string());
    }
    if v.pointer("/result/isError").and_then(Value::as_bool) == Some(true) {
        return Some(v["result"].to_string());
    }
    None
}

/// The data directory's files a credential must never reach: the database, its WAL, the
/// text index (the audit log is in the database).
pub fn stored_bytes(app: &TestApp) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![app.dir.path().to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("data dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                out.push((p.display().to_string(), bytes));
            }
        }
    }
    out
}
