//! `evident search --rerank` through the real binary: the reranker puts the chunk whose
//! title names the question first where plain fusion prefers the text that repeats its
//! words, and it reorders without adding or dropping items.

mod support;

use support::Server;

fn urns(pack: &serde_json::Value) -> Vec<String> {
    pack["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|i| i["sourceUrn"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn search_rerank_puts_the_titled_chunk_first() {
    let data = tempfile::tempdir().expect("data dir");
    let server = Server::start(data.path());
    // Both hold the words; the note repeats them (BM25 prefers it), the guide is titled by
    // them.
    for (urn, title, text) in [
        (
            "doc:note",
            "Weekly note",
            "Token budget, token budget, token budget: the budget of tokens came up again \
             in the weekly note, with the token budget of every section.",
        ),
        (
            "doc:guide",
            "Token budget",
            "Each section of the prompt context is cut to its own limit, counted by the \
             built-in WordPiece tokens; the token budget is per section.",
        ),
    ] {
        let (ok, out, err) = server.cli(
            &[
                "ingest", "-", "--client", "acme", "--urn", urn, "--title", title,
            ],
            Some(text),
        );
        assert!(ok && out.starts_with("ingested"), "{out} {err}");
    }
    let search = |extra: &[&str]| {
        let mut args = vec![
            "search",
            "token budget",
            "--client",
            "acme",
            "--no-graph",
            "--json",
        ];
        args.extend_from_slice(extra);
        let (ok, out, err) = server.cli(&args, None);
        assert!(ok, "{err}");
        serde_json::from_str::<serde_json::Value>(&out).expect("--json prints the pack")
    };
    let plain = urns(&search(&[]));
    let reranked = urns(&search(&["--rerank"]));
    assert_eq!(plain[0], "doc:note", "fusion alone prefers the repetition");
    assert_eq!(reranked[0], "doc:guide", "{reranked:?}");
    let mut a = plain.clone();
    let mut b = reranked.clone();
    a.sort();
    b.sort();
    assert_eq!(a, b, "the reranker reorders, it neither adds nor drops");
}
