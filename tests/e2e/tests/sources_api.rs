//! Registering the non-git sources through the real router: every kind's settings checked
//! before anything is stored, listings per kind and across kinds, visibility by client, and
//! removal queuing the purge of what a source wrote.

use evident_e2e::{Embed, TestApp};
use evident_indexers::access::{Access, SourceRoots, install};
use evident_sources::commands::{
    Commands, TranscriptionCommand, TranscriptionSettings, default_env,
};
use evident_sources::credentials::{CredentialRule, CredentialRules};
use serde_json::json;

/// The process's `[sources] roots` for these tests: `/srv` (nothing there is read: no source
/// is polled), a `whisper` transcription command, and the credential variables client `acme`
/// may name. Every test of this binary installs the same.
fn roots_srv() {
    let mut transcription = TranscriptionSettings::default();
    transcription.commands.insert(
        "whisper".into(),
        TranscriptionCommand {
            program: "/usr/local/bin/whisper-cli".into(),
            args: vec![
                "-f".into(),
                "{input}".into(),
                "-of".into(),
                "{output_stem}".into(),
            ],
            output_format: evident_extract::transcript::TranscriptFormat::Vtt,
            env: default_env(),
        },
    );
    let rule = |hosts: &[&str]| CredentialRule {
        clients: vec!["acme".into()],
        hosts: hosts.iter().map(|h| h.to_string()).collect(),
    };
    let credentials = [
        ("MAIL_USER", rule(&["imap.example.com"])),
        ("MAIL_PASSWORD", rule(&["imap.example.com"])),
        ("GITHUB_TOKEN", rule(&["api.github.com"])),
        ("ATLASSIAN_EMAIL", rule(&["acme.atlassian.net"])),
        ("ATLASSIAN_TOKEN", rule(&["acme.atlassian.net"])),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    install(
        Access::new(Default::default(), SourceRoots::new(["/srv"]))
            .with_commands(Commands::new(&transcription).expect("commands"))
            .with_credentials(CredentialRules::new(&credentials).expect("credentials")),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sources_of_every_kind_register_list_and_go() {
    roots_srv();
    let app = TestApp::new(Embed::Hashing).await;
    let ok = [
        (
            "mbox",
            json!({"clientId": "acme", "path": "/srv/mail/team.mbox"}),
        ),
        (
            "maildir",
            json!({"clientId": "acme", "path": "/srv/Maildir", "id": "acme.maildir"}),
        ),
        (
            "imap",
            json!({"clientId": "acme", "host": "imap.example.com", "usernameEnv": "MAIL_USER", "passwordEnv": "MAIL_PASSWORD", "mailboxes": ["INBOX", "Archive"]}),
        ),
        (
            "github",
            json!({"clientId": "acme", "repo": "acme/shop", "tokenEnv": "GITHUB_TOKEN", "intervalSecs": 600}),
        ),
        ("gitlab", json!({"clientId": "acme", "project": "acme/api"})),
        (
            "jira",
            json!({"clientId": "acme", "project": "SHOP", "baseUrl": "https://acme.atlassian.net", "emailEnv": "ATLASSIAN_EMAIL", "tokenEnv": "ATLASSIAN_TOKEN", "searchApi": "jql"}),
        ),
        (
            "confluence",
            json!({"clientId": "acme", "baseUrl": "https://acme.atlassian.net/wiki", "space": "ENG"}),
        ),
        (
            "transcripts",
            json!({"clientId": "acme", "path": "/srv/meetings", "recordings": {"command": "whisper"}}),
        ),
        (
            "documents",
            json!({"clientId": "acme", "path": "/srv/docs"}),
        ),
        (
            "web",
            json!({"clientId": "acme", "urls": ["https://docs.example.com/"], "maxPages": 50}),
        ),
    ];
    for (kind, body) in &ok {
        let (s, v) = app.post(&format!("/api/v1/sources/{kind}"), body).await;
        assert_eq!(s, 201, "{kind}: {v}");
        assert_eq!(v["kind"], *kind);
        assert_eq!(v["clientId"], "acme");
    }
    let (s, v) = app.get("/api/v1/sources/github?clientId=acme").await;
    assert_eq!(s, 200);
    assert_eq!(v["sources"][0]["id"], "acme.acme-shop");
    assert_eq!(v["sources"][0]["intervalSecs"], 600);
    let (_, v) = app.get("/api/v1/indexers?clientId=acme").await;
    assert_eq!(v["sources"].as_array().map(Vec::len), Some(ok.len()));
    let (_, v) = app.get("/api/v1/indexers?clientId=other").await;
    assert_eq!(
        v["sources"].as_array().map(Vec::len),
        Some(0),
        "another client sees nothing"
    );

    let (s, v) = app
        .call(
            "DELETE",
            "/api/v1/sources/mbox/acme.team?clientId=acme",
            None,
            &[],
        )
        .await;
    assert_eq!(s, 202, "{v}");
    assert!(v["taskId"].is_string());
    let (s, _) = app
        .get("/api/v1/sources/mbox/acme.team?clientId=acme")
        .await;
    assert_eq!(s, 404);
    let (s, _) = app
        .get("/api/v1/sources/imap/acme.maildir?clientId=acme")
        .await;
    assert_eq!(s, 404, "a source is found under its own kind only");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_source_settings_are_refused_with_a_reason_and_store_nothing() {
    roots_srv();
    let app = TestApp::new(Embed::Hashing).await;
    let bad = [
        ("mbox", json!({"path": "/srv/x.mbox"}), "clientId"),
        (
            "mbox",
            json!({"clientId": "acme", "path": "relative/x.mbox"}),
            "absolute",
        ),
        (
            "mbox",
            json!({"clientId": "acme", "path": "/x.mbox", "colour": "red"}),
            "colour",
        ),
        (
            "imap",
            json!({"clientId": "acme", "host": "imap.example.com", "usernameEnv": "U", "passwordEnv": "P", "security": "plain"}),
            "localhost",
        ),
        (
            "imap",
            json!({"clientId": "acme", "host": "h", "usernameEnv": "U", "passwordEnv": "hunter2!"}),
            "environment variable",
        ),
        (
            "github",
            json!({"clientId": "acme", "repo": "no-slash"}),
            "owner/repo",
        ),
        (
            "jira",
            json!({"clientId": "acme", "project": "SHOP", "baseUrl": "https://me:secret@acme.atlassian.net"}),
            "tokenEnv",
        ),
        (
            "web",
            json!({"clientId": "acme", "urls": ["file:///etc/passwd"]}),
            "http",
        ),
        (
            "transcripts",
            json!({"clientId": "acme", "path": "/srv/m", "recordings": {"command": ["rm", "-rf", "/"]}}),
            "never accepted",
        ),
        (
            "mbox",
            json!({"clientId": "acme", "path": "/x.mbox", "intervalSecs": 1}),
            "intervalSecs",
        ),
        ("mbox", json!(["not", "an", "object"]), "object"),
    ];
    for (kind, body, why) in bad {
        let (s, v) = app.post(&format!("/api/v1/sources/{kind}"), &body).await;
        assert_eq!(s, 400, "{kind} {body} → {v}");
        let message = v["message"].as_str().unwrap_or("");
        assert!(message.contains(why), "{kind} {body}: {message}");
    }
    let (s, v) = app
        .post("/api/v1/sources/fax", &json!({"clientId": "acme"}))
        .await;
    assert_eq!(s, 404, "{v}");
    assert!(
        v["message"].as_str().unwrap_or("").contains("mbox"),
        "names the known kinds"
    );
    let (_, v) = app.get("/api/v1/indexers?clientId=acme").await;
    assert_eq!(v["sources"].as_array().map(Vec::len), Some(0));
    // An id taken by another kind is refused.
    let (s, _) = app
        .post(
            "/api/v1/sources/documents",
            &json!({"clientId": "acme", "id": "acme.x", "path": "/srv/d"}),
        )
        .await;
    assert_eq!(s, 201);
    let (s, v) = app
        .post(
            "/api/v1/sources/web",
            &json!({"clientId": "acme", "id": "acme.x", "urls": ["https://x.example/"]}),
        )
        .await;
    assert_eq!(s, 409, "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_outside_the_roots_and_internal_addresses_are_refused_at_registration() {
    roots_srv();
    let app = TestApp::new(Embed::Hashing).await;
    let refused = [
        (
            "mbox",
            json!({"clientId": "acme", "path": "/etc/passwd"}),
            "path_not_allowed",
            "[sources] roots",
        ),
        (
            "documents",
            json!({"clientId": "acme", "path": "/etc"}),
            "path_not_allowed",
            "[sources] roots",
        ),
        (
            "maildir",
            json!({"clientId": "acme", "path": "/srv/../etc"}),
            "path_not_allowed",
            "`..`",
        ),
        (
            "transcripts",
            json!({"clientId": "acme", "path": "/root/meetings"}),
            "path_not_allowed",
            "outside",
        ),
        (
            "github",
            json!({"clientId": "acme", "repo": "a/b", "baseUrl": "http://127.0.0.1:8080"}),
            "egress_refused",
            "127.0.0.1 is a loopback address",
        ),
        (
            "gitlab",
            json!({"clientId": "acme", "project": "a/b", "baseUrl": "http://2130706433/"}),
            "egress_refused",
            "loopback",
        ),
        (
            "jira",
            json!({"clientId": "acme", "project": "SHOP", "baseUrl": "http://169.254.169.254"}),
            "egress_refused",
            "metadata",
        ),
        (
            "confluence",
            json!({"clientId": "acme", "space": "ENG", "baseUrl": "http://[::1]/wiki"}),
            "egress_refused",
            "loopback",
        ),
        (
            "web",
            json!({"clientId": "acme", "urls": ["http://0x7f000001/"]}),
            "egress_refused",
            "[egress] allow",
        ),
        (
            "web",
            json!({"clientId": "acme", "urls": ["http://localhost:9/"]}),
            "egress_refused",
            "localhost resolves to",
        ),
        (
            "web",
            json!({"clientId": "acme", "urls": ["http://10.0.0.8/"]}),
            "egress_refused",
            "private",
        ),
    ];
    for (kind, body, code, why) in refused {
        let (s, v) = app.post(&format!("/api/v1/sources/{kind}"), &body).await;
        assert_eq!(s, 403, "{kind} {body} → {v}");
        assert_eq!(v["code"], code, "{kind} {body} → {v}");
        let message = v["message"].as_str().unwrap_or("");
        assert!(message.contains(why), "{kind} {body}: {message}");
    }
    let git_refused = [
        json!({"clientId": "acme", "url": "ssh://git@github.com/acme/shop.git"}),
        json!({"clientId": "acme", "url": "git@github.com:acme/shop.git"}),
        json!({"clientId": "acme", "url": "ext::sh -c touch% /tmp/pwned"}),
        json!({"clientId": "acme", "url": "--upload-pack=touch /tmp/pwned"}),
        json!({"clientId": "acme", "url": "https://github.com/acme/shop.git", "branches": ["--exec=touch /tmp/pwned"]}),
        json!({"clientId": "acme", "url": "https://github.com/acme/shop.git", "branches": ["-main"]}),
    ];
    for body in git_refused {
        let (s, v) = app.post("/api/v1/sources/git", &body).await;
        assert_eq!(s, 400, "{body} → {v}");
    }
    for body in [
        json!({"clientId": "acme", "path": "/etc"}),
        json!({"clientId": "acme", "url": "file:///etc/repo.git"}),
        json!({"clientId": "acme", "url": "https://127.0.0.1/r.git"}),
    ] {
        let (s, v) = app.post("/api/v1/sources/git", &body).await;
        assert_eq!(s, 403, "{body} → {v}");
    }
    let (_, v) = app.get("/api/v1/indexers?clientId=acme").await;
    assert_eq!(
        v["sources"].as_array().map(Vec::len),
        Some(0),
        "nothing stored"
    );
}
