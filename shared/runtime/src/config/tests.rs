//! The configuration's layering, validation and every section read from a file.

use super::*;

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn defaults_load_and_layers_override_in_order() {
    let cfg = Config::load(None, env(&[])).expect("defaults are valid");
    assert_eq!(cfg.server.listen.to_string(), "127.0.0.1:7878");
    assert_eq!(cfg.embedder.kind, EmbedderKind::Static);

    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("evident.toml");
    std::fs::write(
        &file,
        "[server]\nlisten = \"127.0.0.1:9000\"\n[write_pools]\nbulk = 7\n",
    )
    .expect("write");
    let cfg = Config::load(
        Some(&file),
        env(&[
            ("EVIDENT__SERVER__LISTEN", "127.0.0.1:9100"),
            ("OTHER", "x"),
        ]),
    )
    .expect("load");
    assert_eq!(
        cfg.server.listen.to_string(),
        "127.0.0.1:9100",
        "env beats file"
    );
    assert_eq!(cfg.write_pools.bulk, 7, "file beats defaults");
}

#[test]
fn sources_of_every_kind_come_from_the_file_in_snake_case() {
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("sources.toml");
    std::fs::write(
        &file,
        r#"
[[sources.mbox]]
client = "acme"
path = "/srv/mail/team.mbox"
max_message_bytes = 1048576
interval_secs = 60

[[sources.jira]]
client = "acme"
project_id = "shop"
project = "SHOP"
base_url = "https://acme.atlassian.net"
token_env = "JIRA_TOKEN"
search_api = "jql"

[[sources.transcripts]]
client = "acme"
path = "/srv/meetings"
recordings = { command = "whisper", timeout_secs = 600 }

[transcription.commands.whisper]
program = "/usr/local/bin/whisper-cli"
args = ["-f", "{input}", "-of", "{output_stem}"]

[sources.credentials.JIRA_TOKEN]
clients = ["acme"]
hosts = ["acme.atlassian.net"]

[[sources.git]]
client = "acme"
project = "web"
path = "/srv/repos/shop"
branches = ["main"]
interval_secs = 120
"#,
    )
    .expect("write");
    let cfg = Config::load(Some(&file), env(&[])).expect("valid");
    let requests = cfg.sources.requests().expect("requests");
    let kinds: Vec<&str> = requests.iter().map(|(k, _)| *k).collect();
    assert_eq!(kinds, vec!["mbox", "jira", "transcripts"]);
    let jira = requests[1].1.to_source("jira", 0).expect("jira");
    assert_eq!(jira.scope.project_id.as_deref(), Some("shop"));
    assert_eq!(jira.config["project"], "SHOP");
    assert_eq!(jira.config["searchApi"], "jql");
    let mbox = requests[0].1.to_source("mbox", 0).expect("mbox");
    assert_eq!(mbox.interval_secs, 60);
    assert_eq!(mbox.config["maxMessageBytes"], 1048576);
    let rec = requests[2]
        .1
        .to_source("transcripts", 0)
        .expect("transcripts");
    assert_eq!(rec.config["recordings"]["timeoutSecs"], 600);
    let git = cfg.sources.git_requests().expect("git");
    let shop = git[0].to_source(0).expect("git source");
    assert_eq!(
        (shop.id.as_str(), shop.scope.project_id.as_deref()),
        ("acme.shop", Some("web"))
    );
    assert_eq!(shop.interval_secs, 120);
    assert_eq!(git[0].branches, vec!["main"]);

    std::fs::write(
        &file,
        r#"
[[sources.mbox]]
client = "acme"
path = "/x.mbox"
colour = "red"
"#,
    )
    .expect("write");
    let err = Config::load(Some(&file), env(&[])).expect_err("unknown key");
    assert!(err.to_string().contains("colour"), "{err}");
    std::fs::write(
        &file,
        "[[sources.git]]\nclient = \"acme\"\npath = \"/srv/x\"\ncolour = \"red\"\n",
    )
    .expect("write");
    let err = Config::load(Some(&file), env(&[])).expect_err("unknown git key");
    assert!(err.to_string().contains("colour"), "{err}");
    std::fs::write(&file, "[[sources.fax]]\nclient = \"acme\"\n").expect("write");
    assert!(Config::load(Some(&file), env(&[])).is_err(), "unknown kind");
}

#[test]
fn the_shipped_production_configurations_load() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for file in [
        "deploy/config/production.toml",
        "k8s/base/evident.toml",
        "k8s/overlays/example/evident.toml",
    ] {
        let cfg = Config::load(Some(&root.join(file)), env(&[]))
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(cfg.store.graph, GraphBackend::Arango, "{file}");
        assert_eq!(cfg.store.chunks, ChunkBackend::Weaviate, "{file}");
        assert_eq!(cfg.store.queue, QueueBackend::Mongo, "{file}");
        assert!(!cfg.store.uses_embedded(), "{file}");
    }
    // A production role without its section is refused with the section's name.
    let err = Config::load(None, env(&[("EVIDENT__STORE__CHUNKS", "weaviate")]))
        .expect_err("no [weaviate]");
    assert!(err.to_string().contains("[weaviate]"), "{err}");
    let cfg = Config::load(
        None,
        env(&[
            ("EVIDENT__STORE__GRAPH", "arango"),
            ("EVIDENT__ARANGO__URL", "http://127.0.0.1:8529"),
            ("EVIDENT__ARANGO__DATABASE", "evident"),
        ]),
    )
    .expect("a mix");
    assert!(cfg.store.uses_embedded());
}

#[test]
fn egress_allow_list_and_source_roots() {
    let cfg = Config::load(None, env(&[])).expect("defaults");
    let access = cfg.access().expect("access");
    assert!(
        access.egress.allow_list().is_empty(),
        "nothing internal by default"
    );
    assert!(access.roots.is_empty(), "no local path by default");
    let cfg = Config::load(
        None,
        env(&[
            (
                "EVIDENT__EGRESS__ALLOW",
                r#"["gitlab.internal", "10.1.2.0/24"]"#,
            ),
            ("EVIDENT__SOURCES__ROOTS", r#"["/srv/mail"]"#),
        ]),
    )
    .expect("allow list");
    let access = cfg.access().expect("access");
    assert!(access.egress.allow_list().admits_name("gitlab.internal"));
    assert!(
        access
            .egress
            .check_ip(None, "10.1.2.9".parse().expect("ip"))
            .is_ok()
    );
    assert!(
        access
            .egress
            .check_ip(None, "10.1.3.9".parse().expect("ip"))
            .is_err()
    );
    assert!(
        access
            .path(std::path::Path::new("/srv/mail/team.mbox"))
            .is_ok()
    );
    assert!(access.path(std::path::Path::new("/etc/passwd")).is_err());
    let err = Config::load(
        None,
        env(&[("EVIDENT__EGRESS__ALLOW", r#"["10.0.0.0/99"]"#)]),
    )
    .expect_err("bad range");
    assert!(err.to_string().contains("[egress] allow"), "{err}");
}

#[test]
fn commands_and_credential_variables_come_only_from_the_configuration() {
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("c.toml");
    let load = |text: &str| {
        std::fs::write(&file, text).expect("write");
        Config::load(Some(&file), env(&[]))
    };
    let cfg = load(
        r#"
[transcription.commands.whisper]
program = "/usr/local/bin/whisper-cli"
args = ["-f", "{input}", "-ovtt", "-of", "{output_stem}"]
env = ["PATH", "CUDA_VISIBLE_DEVICES"]

[sources.credentials.GITHUB_TOKEN]
clients = ["acme"]
hosts = ["api.github.com"]
"#,
    )
    .expect("valid");
    let access = cfg.access().expect("access");
    let whisper = access.commands.transcription("whisper").expect("whisper");
    assert_eq!(whisper.env, vec!["PATH", "CUDA_VISIBLE_DEVICES"]);
    assert!(access.commands.transcription("sh").is_err());
    let gh = ["https://api.github.com".to_string()];
    assert!(
        access
            .credentials
            .check("tokenEnv", "GITHUB_TOKEN", "acme", &gh)
            .is_ok()
    );
    assert!(
        access
            .credentials
            .check("tokenEnv", "GITHUB_TOKEN", "beta", &gh)
            .is_err()
    );
    // Defaults: no command, no variable.
    let defaults = Config::load(None, env(&[]))
        .expect("defaults")
        .access()
        .expect("access");
    assert!(defaults.commands.is_empty());
    assert!(
        defaults
            .credentials
            .check("tokenEnv", "GITHUB_TOKEN", "acme", &gh)
            .is_err()
    );
    // A program in a configured source is refused like one in a request; so is a name the
    // configuration does not define, and a command that splices a file name into a shell.
    for (text, why) in [
        (
            "[[sources.transcripts]]\nclient = \"acme\"\npath = \"/srv/m\"\nrecordings = { command = [\"/bin/sh\", \"-c\", \"id\", \"{input}\", \"{output}\"] }\n",
            "never accepted",
        ),
        (
            "[[sources.transcripts]]\nclient = \"acme\"\npath = \"/srv/m\"\nrecordings = { command = \"whisper\" }\n",
            "no transcription command `whisper`",
        ),
        (
            "[transcription.commands.w]\nprogram = \"/bin/sh\"\nargs = [\"-c\", \"w {input} > {output}\"]\n",
            "shell script",
        ),
        (
            "[transcription.commands.w]\nprogram = \"whisper\"\nargs = [\"{input}\", \"{output}\"]\n",
            "absolute",
        ),
        (
            "[transcription.commands.w]\nprogram = \"/bin/w\"\nargs = [\"{input}\", \"{output}\"]\nshell = true\n",
            "shell",
        ),
        (
            "[sources.credentials.GITHUB_TOKEN]\nhosts = [\"api.github.com\"]\n",
            "clients",
        ),
    ] {
        let err = load(text).expect_err(why);
        assert!(err.to_string().contains(why), "{why}: {err}");
    }
}

#[test]
fn unknown_keys_are_errors_in_every_layer() {
    let err = Config::load(None, env(&[("EVIDENT__SERVER__LISTN", "x")])).expect_err("typo");
    assert!(err.to_string().contains("listn"), "{err}");
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("bad.toml");
    std::fs::write(&file, "[nope]\nx = 1\n").expect("write");
    assert!(Config::load(Some(&file), env(&[])).is_err());
    assert!(
        Config::load(None, env(&[("EVIDENT__EMBEDDER__KIND", "ollama")])).is_err(),
        "ollama without url"
    );
}
