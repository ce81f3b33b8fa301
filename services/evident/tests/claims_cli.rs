//! `evident claims …` of the real binary against a real server: learn, recall with
//! citations, verify, a refused transition (non-zero exit with the server's message),
//! supersede, history, attention. No sleeps: the test reads the server's own banner.

mod support;

use support::Server;

/// The id a `learn` printed (its first word).
fn id_of(out: &str) -> String {
    out.split_whitespace().next().expect("an id").to_string()
}

#[test]
fn claims_are_learned_recalled_and_changed_from_the_cli() {
    let data = tempfile::tempdir().expect("data dir");
    let server = Server::start(data.path());
    let err = server.refused(
        "claims learn --client acme",
        &["the retry cap is five minutes"],
    );
    assert!(
        err.contains("evidence_required"),
        "no evidence must fail: {err}"
    );
    let out = server.ok(
        "claims learn --client acme --evidence file:src/retry.rs \
         --evidence url:https://docs.example/retry --subject repo:uploader --tag retry",
        &["the retry cap is five minutes"],
    );
    let first = id_of(&out);
    assert!(first.starts_with("clm_"), "{out}");
    assert!(out.contains("observed"), "{out}");
    let out = server.ok("claims recall --client acme", &["what is the retry cap"]);
    assert!(
        out.contains(&first) && out.contains("file src/retry.rs"),
        "{out}"
    );
    let out = server.ok(
        "claims verify --client acme",
        &[&first, "--evidence", "user_statement:m1"],
    );
    assert!(out.contains("verified"), "{out}");
    let err = server.refused("claims verify --client acme", &[&first]);
    assert!(err.contains("invalid_transition"), "{err}");
    let out = server.ok(
        "claims learn --client acme --evidence file:src/retry.rs --supersedes",
        &[&first, "the retry cap is ten minutes"],
    );
    let second = id_of(&out);
    let out = server.ok(
        "claims supersede --client acme",
        &[&first, "--by", &second, "--reason", "changed"],
    );
    assert!(out.contains("superseded"), "{out}");
    let out = server.ok("claims history --client acme", &[&first]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        lines[2].contains("verified → superseded") && lines[2].contains("changed"),
        "{out}"
    );
    let out = server.ok(
        "claims dispute --client acme",
        &[&second, "--reason", "logs say otherwise"],
    );
    assert!(out.contains("disputed"), "{out}");
    let out = server.ok("claims attention --client acme", &[]);
    assert!(
        out.contains(&second) && out.contains("[warning: disputed]"),
        "{out}"
    );
    let out = server.ok("claims show --client acme --json", &[&second]);
    assert!(out.contains("\"supersedes\""), "{out}");
}
