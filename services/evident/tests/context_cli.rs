//! Prompt context from the real binary against a real server: a profile, a typed ingest, a
//! structured file with a skipped item, `context get` with a budgeted section; bad input is a
//! message and a non-zero exit.

mod support;

use support::Server;

#[test]
fn profiles_typed_pieces_and_files_reach_the_prompt_sections() {
    let data = tempfile::tempdir().expect("data dir");
    let server = Server::start(data.path());
    let out = server.ok(
        "context profile user:alice --client acme --set team=aero",
        &[],
    );
    assert!(out.contains("profile:user:alice"), "{out}");
    server.ok_in(
        "ingest - --client acme --urn piece:mesh --kind piece --knowledge-type instruction \
         --info-type instructions --tag mesh --entity user:alice",
        &[],
        Some("Always check mesh quality before heat transfer runs."),
    );
    let file = data.path().join("knowledge.json");
    std::fs::write(
        &file,
        r#"{"pieces": [
            {"piece_id": "cfl", "content": "Ramp the CFL number slowly.", "knowledge_type": "procedure",
             "info_type": "skills", "entity_id": "user:alice"},
            {"piece_id": "bad", "content": "x", "knowledge_type": "rumour"}
        ]}"#,
    )
    .expect("write file");
    let file = file.to_str().expect("utf-8");
    let out = server.ok("ingest --structured", &[file, "--client", "acme"]);
    assert!(out.contains("1 piece(s)"), "{out}");
    assert!(
        out.contains("skipped pieces[1] (bad)") && out.contains("rumour"),
        "{out}"
    );
    // The same loader reads YAML; a file that is not YAML is refused, nothing sent.
    let yaml = data.path().join("knowledge.yaml");
    std::fs::write(
        &yaml,
        "pieces:\n  - piece_id: warmup\n    content: Warm up the solver for 200 steps.\n    knowledge_type: procedure\n    info_type: skills\n",
    )
    .expect("write yaml");
    let args = [yaml.to_str().expect("utf-8"), "--client", "acme"];
    let out = server.ok("ingest --structured", &args);
    assert!(out.contains("1 piece(s)"), "{out}");
    std::fs::write(&yaml, "pieces: [unclosed").expect("write bad yaml");
    let err = server.refused("ingest --structured", &args);
    assert!(err.contains("is not YAML"), "{err}");

    let out = server.ok(
        "context get --client acme --entity user:alice \
         --section rules=300:instructions,skills --section user_profile=50",
        &[],
    );
    assert!(out.contains("## rules ("), "{out}");
    assert!(
        out.contains("[instruction] Always check mesh quality"),
        "{out}"
    );
    assert!(
        out.contains("[procedure] Ramp the CFL number slowly."),
        "{out}"
    );
    assert!(out.contains("team: aero [1]"), "{out}");
    assert!(out.contains("  [1] profile:user:alice"), "{out}");

    let out = server.ok(
        "search --client acme --info-type skills --json",
        &["mesh quality CFL"],
    );
    assert!(
        out.contains("Ramp the CFL") && !out.contains("piece:mesh"),
        "{out}"
    );

    // A zero budget is refused.
    let err = server.refused("context get --client acme --section x=0", &[]);
    assert!(err.contains("budgetTokens"), "{err}");
    let err = server.refused("context get --client acme --include everything", &[]);
    assert!(err.contains("not a layer"), "{err}");
}
