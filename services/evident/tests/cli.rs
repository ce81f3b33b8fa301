//! The real binary: serve with --ingest, the ingest and search commands against it, bad
//! input, graceful shutdown on SIGTERM, and data surviving a restart. No sleeps: the test
//! reads the server's own progress lines.

use std::path::Path;
use std::process::Command;

mod support;

use support::{BIN, Server, read_until, run_cli};

/// Starts a server, with `--ingest DIR --client acme` when `ingest` is given.
fn start(data: &Path, ingest: Option<&Path>, env: &[(&str, &str)]) -> Server {
    let mut args: Vec<&std::ffi::OsStr> = Vec::new();
    if let Some(dir) = ingest {
        args.extend([
            "--ingest".as_ref(),
            dir.as_os_str(),
            "--client".as_ref(),
            "acme".as_ref(),
        ]);
    }
    Server::start_with(data, &args, env)
}

/// `evident serve` on `listen` over `data` with `env`, which must refuse to start; its stderr.
fn serve_refused(data: &Path, listen: &str, env: &[(&str, &str)]) -> String {
    let out = Command::new(BIN)
        .args(["serve", "--listen", listen, "--data"])
        .arg(data)
        .envs(env.iter().copied())
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "serve on {listen} with {env:?} must refuse to start: {err}"
    );
    err
}

fn cli(server: &Server, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
    server.cli(args, stdin)
}

#[test]
fn serve_ingest_search_shutdown_and_restart() {
    let data = tempfile::tempdir().expect("data dir");
    let docs = tempfile::tempdir().expect("docs dir");
    std::fs::write(docs.path().join("runbook.md"), "# Runbook\n\nWhen the ledger queue backs up, drain it with the ledger-drain job and page the payments on-call.\n").expect("write");
    std::fs::create_dir(docs.path().join("adr")).expect("mkdir");
    std::fs::write(
        docs.path().join("adr/0001-storage.md"),
        "# ADR 1: storage\n\nWe keep chunks in SQLite with FTS5 because it needs no server.\n",
    )
    .expect("write");
    std::fs::write(docs.path().join("image.png"), [0u8, 1, 2]).expect("write");

    let mut server = start(data.path(), Some(docs.path()), &[]);
    let done = read_until(&mut server.stderr, "document(s), ");
    assert!(done.contains("ingested 2 document(s)"), "{done}");

    let out = server.ok(
        "search",
        &["how do I drain the ledger queue", "--client", "acme"],
    );
    assert!(out.contains("runbook.md#chars="), "citation printed: {out}");
    assert!(out.contains("ledger-drain"), "{out}");

    let out = server.ok_in(
        "ingest - --client acme --urn note:1 --kind note",
        &[],
        Some("Deploys freeze on Fridays after 14:00."),
    );
    assert!(out.starts_with("ingested"), "{out}");
    let out = server.ok("search", &["deploy freeze", "--client", "acme", "--json"]);
    let pack: serde_json::Value = serde_json::from_str(&out).expect("--json prints the pack");
    assert_eq!(pack["items"][0]["sourceUrn"], "note:1");
    // A question nothing answers opens a knowledge gap when asked to.
    let out = server.ok(
        "search",
        &[
            "zebra quantum saxophone",
            "--client",
            "acme",
            "--record-gap",
        ],
    );
    assert!(
        out.contains("Nothing relevant: recorded knowledge gap g"),
        "{out}"
    );

    // A credential is refused with a non-zero exit.
    let err = server.refused_in(
        "ingest - --client acme --urn note:2",
        &[],
        Some("token ghp_abcdefghijklmnopqrstuvwxyz0123456789AB"),
    );
    assert!(err.contains("credential_detected"), "{err}");
    let err = server.refused("ingest /nonexistent/path --client acme", &[]);
    assert!(err.contains("cannot read"), "{err}");

    let out = server.ok(
        "alias register user:jn",
        &["User:Jan Novák", "--client", "acme"],
    );
    assert!(out.contains("user:jan_novák"), "{out}");
    server.ok("alias merge user:jan_novák user:jan --client acme", &[]);

    // A folder: each file with its path as title and locator, so citations name the file.
    let notes = tempfile::tempdir().expect("notes");
    std::fs::write(
        notes.path().join("oncall.md"),
        "# On call\n\nPage the storage rota for replica lag.\n",
    )
    .expect("write");
    let dir = notes.path().to_str().expect("utf-8 path");
    let out = server.ok("ingest", &[dir, "--client", "acme", "--kind", "doc"]);
    assert!(out.starts_with("ingested"), "{out}");
    let out = server.ok(
        "search",
        &["storage rota replica lag", "--client", "acme", "--json"],
    );
    let pack: serde_json::Value = serde_json::from_str(&out).expect("pack");
    let top = &pack["items"][0];
    assert!(
        top["title"]
            .as_str()
            .is_some_and(|t| t.ends_with("/oncall.md")),
        "{pack}"
    );
    assert!(
        top["citation"]
            .as_str()
            .is_some_and(|c| c.contains("/oncall.md#chars=")),
        "{pack}"
    );

    // The graph: nodes of a type, a page at a time.
    server.ok_in(
        "ingest - --client acme --urn note:3 --rel service:payments|depends_on|service:ledger",
        &[],
        Some("Payments calls the ledger for every capture."),
    );
    let nodes = |after: Option<&str>| {
        let mut args = vec![
            "graph", "nodes", "--type", "service", "--limit", "1", "--client", "acme",
        ];
        if let Some(a) = after {
            args.extend(["--after", a]);
        }
        cli(&server, &args, None)
    };
    let (ok, out, err) = nodes(None);
    assert!(ok, "{err}");
    assert!(out.starts_with("service:ledger\tservice\t"), "{out}");
    assert!(out.ends_with("next: --after service:ledger\n"), "{out}");
    let (ok, out, err) = nodes(Some("service:ledger"));
    assert!(ok, "{err}");
    assert!(out.starts_with("service:payments\tservice\t"), "{out}");
    assert!(!out.contains("next:"), "the last page: {out}");
    // A bad limit fails with a non-zero exit.
    let err = server.refused("graph nodes --type service --limit 0 --client acme", &[]);
    assert!(err.contains("invalid_request"), "{err}");

    let status = server.terminate();
    assert!(status.success(), "graceful shutdown exits 0: {status:?}");
    assert!(
        data.path().join("vectors.json").exists(),
        "vector index saved on shutdown"
    );

    // Restart on the same data: everything is still there, no re-ingest needed.
    let server = start(data.path(), None, &[]);
    let out = server.ok("search", &["why SQLite for chunks", "--client", "acme"]);
    assert!(out.contains("0001-storage.md"), "{out}");
    assert!(server.terminate().success());
}

#[test]
fn bad_configuration_is_a_clear_error() {
    let data = tempfile::tempdir().expect("data dir");
    let err = serve_refused(
        data.path(),
        "127.0.0.1:0",
        &[("EVIDENT__SERVER__LISTN", "x")],
    );
    assert!(err.contains("listn"), "names the unknown key: {err}");
    let out = Command::new(BIN)
        .args(["search", "x"])
        .env("EVIDENT_SERVER", "http://127.0.0.1:9")
        .output()
        .expect("run");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot reach"),
        "unreachable server is explained"
    );
}

#[test]
fn sources_registered_by_the_cli_are_polled_searchable_and_removable() {
    let data = tempfile::tempdir().expect("data dir");
    let mail = tempfile::tempdir().expect("mail dir");
    let mbox = mail.path().join("team.mbox");
    std::fs::write(
        &mbox,
        "From ann@acme.io Mon Jan  5 10:00:00 2026\nMessage-ID: <plan@acme.io>\nFrom: Ann Lee <ann@acme.io>\nTo: team@acme.io\nSubject: Release plan\n\nThe backfill runs overnight on the replica before the Friday release.\n",
    )
    .expect("write");
    // Sources may read the mail folder only ([sources] roots).
    let roots = format!("[{:?}]", mail.path().display().to_string());
    let server = start(
        data.path(),
        None,
        &[
            ("EVIDENT__INDEXERS__POLL_TICK_SECS", "1"),
            ("EVIDENT__SOURCES__ROOTS", &roots),
        ],
    );

    let path = format!("path={}", mbox.display());
    let out = server.ok("source add mbox", &[&path, "--client", "acme"]);
    assert!(out.contains("acme.team"), "{out}");
    // The server polls on its own tick; wait (bounded) until the message is searchable.
    let mut found = String::new();
    for _ in 0..300 {
        let (ok, out, _) = cli(
            &server,
            &["search", "backfill overnight replica", "--client", "acme"],
            None,
        );
        if ok && out.contains("plan@acme.io") {
            found = out;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(
        found.contains("plan@acme.io"),
        "the message was indexed and cited"
    );
    let out = server.ok("source ls --client acme", &[]);
    assert!(out.contains("acme.team") && out.contains("mbox"), "{out}");

    // Bad settings exit non-zero.
    let err = server.refused("source add mbox path=relative.mbox --client acme", &[]);
    assert!(err.contains("absolute"), "{err}");
    let err = server.refused("source add fax number=1 --client acme", &[]);
    assert!(err.contains("mbox"), "names the known kinds: {err}");

    let out = server.ok("source rm acme.team --client acme", &[]);
    assert!(out.contains("purge queued"), "{out}");
    assert!(server.terminate().success());
}

#[test]
fn an_unreachable_backend_stops_the_start_with_its_name() {
    let data = tempfile::tempdir().expect("data dir");
    let err = serve_refused(
        data.path(),
        "127.0.0.1:0",
        &[
            ("EVIDENT__STORE__GRAPH", "arango"),
            ("EVIDENT__ARANGO__URL", "http://127.0.0.1:1"),
            ("EVIDENT__ARANGO__DATABASE", "evident"),
            ("EVIDENT__ARANGO__TIMEOUT_SECS", "2"),
        ],
    );
    assert!(err.contains("ArangoDB at http://127.0.0.1:1"), "{err}");
}

#[test]
fn tokens_are_created_used_and_revoked_from_the_cli() {
    let data = tempfile::tempdir().expect("data dir");
    let server = start(data.path(), None, &[]);
    let (ok, secret, err) = cli(
        &server,
        &[
            "token",
            "create",
            "--client",
            "acme",
            "--role",
            "read",
            "--name",
            "reader",
            "--expires",
            "1d",
        ],
        None,
    );
    assert!(ok, "{err}");
    let secret = secret.trim().to_string();
    assert!(secret.starts_with("evd_"), "{secret}");
    assert!(err.contains("shown once"), "{err}");
    let as_reader = |args: &[&str], stdin: Option<&str>| {
        let (ok, _, err) = run_cli(&server.url, Some(&secret), args, stdin);
        (ok, err)
    };
    let (ok, err) = as_reader(&["search", "anything"], None);
    assert!(ok, "a reader searches its client without naming it: {err}");
    let (ok, err) = as_reader(
        &["ingest", "-", "--client", "acme", "--urn", "note:1"],
        Some("text"),
    );
    assert!(!ok && err.contains("forbidden_role"), "{err}");
    let (ok, err) = as_reader(&["search", "anything", "--client", "other"], None);
    assert!(!ok && err.contains("forbidden_scope"), "{err}");
    let (ok, out, err) = cli(&server, &["token", "ls", "--client", "acme"], None);
    assert!(
        ok && out.contains("reader") && !out.contains(&secret),
        "{out}{err}"
    );
    let id = out.split_whitespace().next().expect("id").to_string();
    server.ok("token revoke", &[&id]);
    let (ok, err) = as_reader(&["search", "anything"], None);
    assert!(!ok && err.contains("token_revoked"), "{err}");
    assert!(server.terminate().success());
}

#[test]
fn a_network_address_without_authentication_is_refused() {
    let data = tempfile::tempdir().expect("data dir");
    let err = serve_refused(
        data.path(),
        "0.0.0.0:0",
        &[("EVIDENT__AUTH__REQUIRED", "false")],
    );
    assert!(err.contains("auth.required = false"), "{err}");
    // Authentication on, but no way in on a network address: refused too.
    let err = serve_refused(data.path(), "0.0.0.0:0", &[]);
    assert!(err.contains("nothing can authenticate"), "{err}");
}
