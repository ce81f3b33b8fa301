//! The agent-memory commands of the real binary against a real server: user knowledge and
//! its prefetch; bad input is a message and a non-zero exit. No sleeps: the test reads the
//! server's own banner.

mod support;

use support::Server;

#[test]
fn knowledge_is_added_and_prefetched_from_the_cli() {
    let data = tempfile::tempdir().expect("data dir");
    let server = Server::start(data.path());
    let out = server.ok(
        "knowledge add --client acme --category domain --subject BMS",
        &["Brokerage Management System"],
    );
    assert!(out.contains("user-knowledge:domain:bms"), "{out}");
    server.ok_in(
        "knowledge add --client acme --category team --subject Jan -",
        &[],
        Some("owns billing"),
    );
    let out = server.ok("knowledge context --client acme", &[]);
    assert!(
        out.contains("### Domain Context\n- **BMS**: Brokerage Management System"),
        "{out}"
    );
    assert!(out.contains("### Team\n- **Jan**: owns billing"), "{out}");

    let err = server.refused(
        "knowledge add --client acme --category hobby --subject x y",
        &[],
    );
    assert!(err.contains("invalid_field"), "{err}");
    let err = server.refused("knowledge context", &[]);
    assert!(err.contains("--client"), "{err}");
}

#[test]
fn outcomes_are_recorded_from_a_file_or_refused_with_the_reason() {
    let data = tempfile::tempdir().expect("data dir");
    let server = Server::start(data.path());
    let file = data.path().join("outcome.json");
    std::fs::write(
        &file,
        r#"{"taskId": "T-7", "category": "single_task", "action": "code",
            "finalResult": "merged", "summary": "Fixed the retry loop.",
            "artifacts": ["PAY-7"], "topics": ["retry"]}"#,
    )
    .expect("write");
    let path = file.to_str().expect("utf-8 path");
    let out = server.ok("outcome record", &[path, "--client", "acme"]);
    assert!(out.contains("queued task-outcome:T-7"), "{out}");
    let out = server.ok_in(
        "outcome record - --client acme",
        &[],
        Some(r#"{"taskId": "T-8", "category": "advice", "finalResult": "an answer"}"#),
    );
    assert!(out.contains("not ingested: advice"), "{out}");
    let (ok, _, err) = server.cli(
        &["outcome", "record", "-", "--client", "acme"],
        Some("not json"),
    );
    assert!(!ok && err.contains("not valid JSON"), "{err}");
}

#[test]
fn the_session_log_is_appended_and_read_from_the_cli() {
    let data = tempfile::tempdir().expect("data dir");
    let server = Server::start(data.path());
    for (source, note) in [
        ("chat", "asked for the deadline"),
        ("orchestrator_decision", "chose the staged importer"),
    ] {
        let out = server.ok(
            "session append --client acme --project p1 --source",
            &[source, note],
        );
        assert!(out.starts_with("appended at"), "{out}");
    }
    let out = server.ok("session recent --client acme --project p1 --n 1", &[]);
    assert!(
        out.contains("orchestrator_decision\tchose the staged importer"),
        "{out}"
    );
    assert!(!out.contains("deadline"), "--n 1: {out}");
    let err = server.refused("session append --client acme", &[&"x".repeat(201)]);
    assert!(err.contains("200"), "{err}");
}
