//! `evident procedure …` of the real binary against a real server: add, list, show, match
//! (a hit and a miss with its closest candidates), outcomes, update, remove; bad input is a
//! message and a non-zero exit. No sleeps: the test reads the server's own banner.

mod support;

use support::Server;

#[test]
fn procedures_are_saved_matched_counted_and_removed_from_the_cli() {
    let data = tempfile::tempdir().expect("data dir");
    let server = Server::start(data.path());
    let out = server.ok(
        "procedure add --client acme --id bugs --trigger bug_report --step",
        &[
            "Research:search_kb:{\"kinds\": [\"issue\"]}",
            "--step",
            "Coding:fix",
            "--step",
            "Git:open_pr",
        ],
    );
    assert_eq!(out.trim(), "saved bugs");
    server.ok(
        "procedure add --client acme --id mail --source learned \
         --trigger email_with_question --step Communication:reply",
        &[],
    );
    let out = server.ok("procedure ls --client acme", &[]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].starts_with("bugs\tuser_defined\t0\t-\tbug_report"),
        "{out}"
    );
    assert!(
        lines[1].starts_with("mail\tlearned\t0\t-\temail_with_question"),
        "{out}"
    );

    let out = server.ok(
        "procedure match --client acme",
        &["Users report that the login page crashes after the update"],
    );
    let first = out.lines().next().unwrap_or_default();
    assert!(first.contains("\tbugs\tuser_defined\t"), "{out}");
    assert!(
        out.contains("Research:search_kb → Coding:fix → Git:open_pr"),
        "{out}"
    );
    let out = server.ok(
        "procedure match --client acme",
        &["What's the weather like in Prague?"],
    );
    assert!(
        out.starts_with("no procedure matches (similarity below 0.40); closest:"),
        "{out}"
    );
    assert!(
        out.contains("\tbugs\t") && out.contains("\tmail\t"),
        "{out}"
    );

    let out = server.ok("procedure outcome bugs --client acme --success", &[]);
    assert!(out.starts_with("bugs\tuser_defined\t1\t100%"), "{out}");
    let out = server.ok("procedure outcome bugs --client acme --failure", &[]);
    assert!(out.starts_with("bugs\tuser_defined\t2\t50%"), "{out}");
    let out = server.ok("procedure show bugs --client acme", &[]);
    let shown: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(shown["usageCount"], 2);
    assert_eq!(shown["steps"][0]["params"]["kinds"][0], "issue");

    let out = server.ok(
        "procedure update bugs --client acme --trigger",
        &["crash report", "--step", "Coding:fix"],
    );
    assert_eq!(out.trim(), "updated bugs");
    let out = server.ok("procedure show bugs --client acme", &[]);
    assert!(
        out.contains("\"usageCount\": 2") && out.contains("crash report"),
        "{out}"
    );
    assert_eq!(
        server.ok("procedure rm mail --client acme", &[]).trim(),
        "deleted mail"
    );
    let out = server.ok("procedure ls --client acme --json", &[]);
    let listed: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(listed["procedures"].as_array().map(Vec::len), Some(1));

    for (cmd, wanted) in [
        (
            "procedure add --client acme --trigger t --step nocolon",
            "AGENT:ACTION",
        ),
        (
            "procedure add --client acme --trigger t --step a:b --source x",
            "invalid_field",
        ),
        ("procedure show nope --client acme", "not_found"),
        ("procedure ls", "--client"),
        ("procedure outcome bugs --client acme", "--success"),
    ] {
        let err = server.refused(cmd, &[]);
        assert!(err.contains(wanted), "{cmd}: {err}");
    }
}
