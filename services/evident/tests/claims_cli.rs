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
    let (ok, _, err) = server.cli(
        &[
            "claims",
            "learn",
            "--client",
            "acme",
            "the retry cap is five minutes",
        ],
        None,
    );
    assert!(!ok, "no evidence must fail");
    assert!(err.contains("evidence_required"), "{err}");
    let (ok, out, err) = server.cli(
        &[
            "claims",
            "learn",
            "--client",
            "acme",
            "--evidence",
            "file:src/retry.rs",
            "--evidence",
            "url:https://docs.example/retry",
            "--subject",
            "repo:uploader",
            "--tag",
            "retry",
            "the retry cap is five minutes",
        ],
        None,
    );
    assert!(ok, "{err}");
    let first = id_of(&out);
    assert!(first.starts_with("clm_"), "{out}");
    assert!(out.contains("observed"), "{out}");
    let (ok, out, err) = server.cli(
        &[
            "claims",
            "recall",
            "--client",
            "acme",
            "what is the retry cap",
        ],
        None,
    );
    assert!(ok, "{err}");
    assert!(
        out.contains(&first) && out.contains("file src/retry.rs"),
        "{out}"
    );
    let (ok, out, err) = server.cli(
        &[
            "claims",
            "verify",
            "--client",
            "acme",
            &first,
            "--evidence",
            "user_statement:m1",
        ],
        None,
    );
    assert!(ok, "{err}");
    assert!(out.contains("verified"), "{out}");
    let (ok, _, err) = server.cli(&["claims", "verify", "--client", "acme", &first], None);
    assert!(!ok);
    assert!(err.contains("invalid_transition"), "{err}");
    let (ok, out, err) = server.cli(
        &[
            "claims",
            "learn",
            "--client",
            "acme",
            "--evidence",
            "file:src/retry.rs",
            "--supersedes",
            &first,
            "the retry cap is ten minutes",
        ],
        None,
    );
    assert!(ok, "{err}");
    let second = id_of(&out);
    let (ok, out, err) = server.cli(
        &[
            "claims",
            "supersede",
            "--client",
            "acme",
            &first,
            "--by",
            &second,
            "--reason",
            "changed",
        ],
        None,
    );
    assert!(ok, "{err}");
    assert!(out.contains("superseded"), "{out}");
    let (ok, out, err) = server.cli(&["claims", "history", "--client", "acme", &first], None);
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        lines[2].contains("verified → superseded") && lines[2].contains("changed"),
        "{out}"
    );
    let (ok, out, err) = server.cli(
        &[
            "claims",
            "dispute",
            "--client",
            "acme",
            &second,
            "--reason",
            "logs say otherwise",
        ],
        None,
    );
    assert!(ok, "{err}");
    assert!(out.contains("disputed"), "{out}");
    let (ok, out, err) = server.cli(&["claims", "attention", "--client", "acme"], None);
    assert!(ok, "{err}");
    assert!(
        out.contains(&second) && out.contains("[warning: disputed]"),
        "{out}"
    );
    let (ok, out, err) = server.cli(
        &["claims", "show", "--client", "acme", "--json", &second],
        None,
    );
    assert!(ok, "{err}");
    assert!(out.contains("\"supersedes\""), "{out}");
}
