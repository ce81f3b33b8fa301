use proptest::prelude::*;

use super::*;

fn all(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    document_terms(text, Language::English, |w, _| out.push(w.to_string()));
    out
}

fn query(text: &str) -> Vec<String> {
    query_terms(text)
        .into_iter()
        .filter(|q| q.kind != Term::Defines)
        .map(|q| q.text)
        .collect()
}

#[test]
fn a_defined_name_is_asked_by_its_spellings() {
    for q in [
        "evident_core::access::token_hash()",
        "TokenHash",
        "token-hash",
        "symbol:r/a.b.token_hash()",
    ] {
        assert_eq!(definition_term(q).as_deref(), Some("#tokenhash"), "{q}");
    }
    assert_eq!(definition_term("()"), None);
    for text in ["token_hash", "tokenHash", "how is the token hash computed"] {
        let names: Vec<String> = query_terms(text)
            .into_iter()
            .filter(|q| q.kind == Term::Defines)
            .map(|q| q.text)
            .collect();
        assert!(
            names.contains(&"#tokenhash".to_string()),
            "{text}: {names:?}"
        );
    }
}

#[test]
fn identifiers_give_their_parts_and_the_whole() {
    for (text, want) in [
        (
            "retrieveWithExpansion",
            &[
                "retriev",
                "=retrieve",
                "expans",
                "=expansion",
                "retrievewithexpansion",
            ][..],
        ),
        (
            "RetrieveQuery",
            &["retriev", "=retrieve", "queri", "=query", "retrievequery"],
        ),
        (
            "parse_config()",
            &["pars", "=parse", "config", "parse_config"],
        ),
        ("token_hash", &["token", "hash", "token_hash"]),
        ("tokenHash", &["token", "hash", "tokenhash"]),
        (
            "store-embedded",
            &["store", "embed", "=embedded", "store-embedded"],
        ),
        (
            "shared/kb/src",
            &["share", "=shared", "kb", "src", "shared/kb/src"],
        ),
        ("HTTPServer", &["http", "server", "httpserver"]),
        ("v2Api utf8", &["v2", "api", "v2api", "utf8"]),
        ("MAX_RESULTS", &["max", "result", "=results", "max_results"]),
        ("is_empty", &["empti", "=empty", "is_empty"]),
        ("plain words here", &["plain", "word", "=words"]),
        ("__init__", &["init"]),
        ("a - b", &["b"]),
        ("Příliš žluťoučký", &["prilis", "zlutoucky"]),
    ] {
        assert_eq!(all(text), want, "{text}");
    }
}

#[test]
fn inflections_meet_at_their_stem_and_keep_their_exact_form() {
    // The README's example: "Payment retries…" is found by "how often are charges retried".
    let doc = all("Payment retries back off exponentially");
    let q = query("how often are charges retried");
    assert!(q.contains(&"retri".to_string()) && doc.contains(&"retri".to_string()));
    assert!(doc.contains(&"=retries".to_string()));
    assert!(q.contains(&"=retried".to_string()), "{q:?}");
    // A base form asks for its exact form too (found where a stemmer changed it).
    assert!(query("hash").contains(&"=hash".to_string()));
    // A possessive is its name.
    assert!(all("Melanie's plan").contains(&"melani".to_string()));
    assert!(query("what did Melanie say").contains(&"melani".to_string()));
}

#[test]
fn query_terms_are_unique_and_weighted_by_occurrence() {
    let q = query_terms("retries retried retry retries");
    let texts: Vec<&str> = q.iter().map(|t| t.text.as_str()).collect();
    assert_eq!(&texts[..4], ["retri", "=retries", "=retried", "=retry"]);
    let q: Vec<_> = q.into_iter().filter(|t| t.kind != Term::Defines).collect();
    let ew = options().exact_weight;
    let weights: Vec<f32> = q.iter().map(|t| t.weight).collect();
    assert_eq!(weights, [4.0, 2.0 * ew, ew, ew]);
}

#[test]
fn scripts_without_spaces_are_words_not_identifiers() {
    let got = all("東京都");
    assert!(got.len() >= 2, "{got:?}");
    assert!(
        !got.contains(&"東京都".to_string()),
        "no whole term: {got:?}"
    );
}

#[test]
fn languages_are_told_by_their_function_words() {
    for (text, want) in [
        (
            "The houses of the city were built with the means there were.",
            Language::English,
        ),
        (
            "Die Häuser der Stadt wurden nicht mit den Mitteln gebaut, die es gab.",
            Language::German,
        ),
        (
            "Les maisons de la ville sont construites avec les moyens qui sont là.",
            Language::French,
        ),
        (
            "Las casas de la ciudad se construyeron con los medios que había y son caras.",
            Language::Spanish,
        ),
        ("retry payment", Language::English),
        ("", Language::English),
    ] {
        assert_eq!(Language::detect(text), want, "{text}");
    }
    // A German text is stemmed as German; a query's exact form still finds its word.
    let de = "Die Häuser der Stadt wurden nicht mit den Mitteln gebaut, die es gab.";
    let mut terms = Vec::new();
    document_terms(de, Language::detect(de), |t, _| terms.push(t.to_string()));
    assert!(terms.contains(&"haus".to_string()), "{terms:?}");
    assert!(terms.contains(&"=hauser".to_string()), "{terms:?}");
    assert!(query("Häuser").contains(&"=hauser".to_string()));
}

#[test]
fn lengths_count_words_not_exact_forms() {
    let mut counted = 0;
    document_terms("retries retried token_hash", Language::English, |_, k| {
        counted += usize::from(k.counts())
    });
    // retri, retri, token, hash, token_hash
    assert_eq!(counted, 5);
}

#[test]
fn the_fingerprint_is_stable_within_a_build() {
    assert_eq!(fingerprint(), fingerprint());
}

#[test]
fn file_names_of_path_titles() {
    for (title, want) in [
        ("shared/kb/src/retrieve/fusion.rs", Some("fusion")),
        ("docs/adr/0006-queue.md", Some("0006-queue")),
        ("README.md", Some("README")),
        ("Cargo.toml", Some("Cargo")),
        ("Weekly note", None),
        ("Makefile", None),
        ("v2.3.1 release notes", None),
        (".gitignore", None),
        ("", None),
    ] {
        assert_eq!(file_name(title), want, "{title}");
    }
}

#[test]
fn camel_parts_split_at_case_changes_only() {
    for (word, want) in [
        (
            "retrieveWithExpansion",
            &["retrieve", "With", "Expansion"][..],
        ),
        ("XMLHttpRequest", &["XML", "Http", "Request"]),
        ("ABC", &["ABC"]),
        ("lower", &["lower"]),
        ("Ünïcode", &["Ünïcode"]),
        ("a1B2", &["a1", "B2"]),
    ] {
        let mut out = Vec::new();
        camel_parts(word, |p| out.push(p));
        assert_eq!(out, want, "{word}");
    }
}

fn word() -> impl Strategy<Value = String> {
    "[a-z]{2,8}".prop_filter("not a stop word", |w| !STOPWORDS.contains(&w.as_str()))
}

fn capitalised(w: &str) -> String {
    let mut c = w.chars();
    c.next()
        .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
        .unwrap_or_default()
}

proptest! {
    /// Any identifier style built from words yields every word's terms and the whole, so
    /// the words as a query find it (every plain query term is a document term).
    #[test]
    fn joined_words_are_found_by_the_words(ws in prop::collection::vec(word(), 2..5), style in 0..5u8) {
        let ident = match style {
            0 => ws[0].clone() + &ws[1..].iter().map(|w| capitalised(w)).collect::<String>(),
            1 => ws.iter().map(|w| capitalised(w)).collect(),
            2 => ws.join("_"),
            3 => ws.join("-"),
            _ => ws.join("/"),
        };
        let got = all(&ident);
        prop_assert!(got.contains(&ident.to_lowercase()), "{ident}: no whole term in {got:?}");
        for q in query_terms(&ws.join(" ")) {
            if !matches!(q.kind, Term::Exact | Term::Defines) {
                prop_assert!(got.contains(&q.text), "{ident}: {got:?} lacks {}", q.text);
            }
        }
    }

    /// A word and its inflections share a stem: the query of any one finds the others.
    #[test]
    fn a_word_is_found_by_itself(w in word()) {
        let doc = all(&w);
        for q in query_terms(&w) {
            prop_assert!(matches!(q.kind, Term::Exact | Term::Defines) || doc.contains(&q.text), "{w}: {doc:?} lacks {}", q.text);
        }
    }

    /// Any text: terms are non-empty, lower-case, bounded; a stop word is never a word's
    /// exact form.
    #[test]
    fn terms_are_well_formed(text in "\\PC{0,80}") {
        document_terms(&text, Language::detect(&text), |t, kind| {
            assert!(!t.is_empty() && t.len() <= MAX_TERM * 4 + 1);
            assert_eq!(t, t.to_lowercase());
            if kind == Term::Exact {
                assert!(!STOPWORDS.contains(&&t[1..]), "{t}");
            }
        });
    }

    /// Stop words alone give no term.
    #[test]
    fn stop_words_give_nothing(ws in prop::collection::vec(prop::sample::select(STOPWORDS), 0..8)) {
        let mut n = 0;
        document_terms(&ws.join(" "), Language::English, |_, _| n += 1);
        prop_assert_eq!(n, 0);
    }
}
