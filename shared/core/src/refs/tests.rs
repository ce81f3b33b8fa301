//! Unit tests of [`super`]: the reference table, aliases, the relationship formats, refs in
//! text.

use super::*;

pub(super) fn key(s: &str) -> NodeKey {
    NodeKey::from_canonical(s)
}

fn norm(s: &str) -> String {
    normalize_ref(s)
        .map(|k| k.as_str().to_string())
        .unwrap_or_default()
}

fn rel(from: &str, edge: &str, to: &str) -> Relationship {
    Relationship {
        from: key(from),
        edge_type: edge.to_string(),
        to: key(to),
    }
}

fn rels(found: &[FoundRelationship]) -> Vec<Relationship> {
    found.iter().map(|f| f.rel.clone()).collect()
}

fn ref_keys(text: &str) -> Vec<String> {
    extract_refs(text)
        .into_iter()
        .map(|r| r.key.as_str().to_string())
        .collect()
}

// --- normalisation: the table of reference-behaviour §1 ---

/// Normalises each `(raw, want)`; a failure names the input.
fn assert_norms(cases: &[(&str, &str)]) {
    for (raw, want) in cases {
        assert_eq!(norm(raw), *want, "{raw}");
    }
}

#[test]
fn reference_table_rows() {
    assert_norms(&[
        ("User:John  Smith", "user:john_smith"),
        ("JIRA:TASK-123", "jira:task-123"),
        ("order:order_530798957", "order:530798957"),
        ("user:john.doe@example.com", "user:john_doe_example_com"),
        ("Ž:Příliš žluťoučký", "ž:příliš_žluťoučký"),
    ]);
}

#[test]
fn unicode_fix_ascii_fold() {
    let k = normalize_ref("Ž:Příliš žluťoučký").expect("key");
    assert_eq!(ascii_fold_key(&k), Some(key("z:prilis_zlutoucky")));
    assert_eq!(
        ascii_fold_key(&key("ž:příliš_žluťoučký")),
        Some(key("z:prilis_zlutoucky"))
    );
    // Decomposed input gives the same key (NFC).
    assert_eq!(norm("Z\u{30c}:Pr\u{30c}i\u{301}lis\u{30c}"), "ž:příliš");
    assert_eq!(
        ascii_fold_key(&key("user:łukasz_straße")),
        Some(key("user:lukasz_strasse"))
    );
    assert_eq!(
        ascii_fold_key(&key("user:søren_æbelø")),
        Some(key("user:soren_aebelo"))
    );
    assert_eq!(ascii_fold_key(&key("user:đorđe")), Some(key("user:dorde")));
    // Nothing to fold, or no ASCII spelling: no alias.
    assert_eq!(ascii_fold_key(&key("user:john")), None);
    assert_eq!(ascii_fold_key(&key("user:иван")), None);
    assert_eq!(ascii_fold_key(&key("user:jan_иван")), None);
    assert_eq!(ascii_fold_key(&key("пользователь:ivan")), None);
}

#[test]
fn normalisation_details() {
    assert_norms(&[
        ("John Smith", "entity:john_smith"),
        ("User:", "user"),
        ("User:  !!! ", "user"),
        (":foo", "entity:foo"),
        ("!!!:foo", "entity:foo"),
        ("order:order_order_5", "order:5"),
        ("order:order_", "order:order"),
        ("user:__a__b__", "user:a_b"),
        ("file:src/main/Service.kt", "file:src_main_service_kt"),
        ("file:C:\\x\\y.rs", "file:c_x_y_rs"),
        ("User Name:John\tSmith", "username:john_smith"),
        ("entity_foo", "entity:foo"),
        // Entity-type alias applies to the namespace, and its prefix is dropped too.
        ("Person:John", "user:john"),
        ("person:person_jan", "user:jan"),
        ("Ticket:ABC-1", "jira:abc-1"),
        ("ΟΔΟΣ:Σοφία", "οδος:σοφία"),
    ]);
    for nothing in ["", "   ", "!!!", ":", "---"] {
        assert_eq!(normalize_ref(nothing), None, "{nothing:?}");
    }
}

#[test]
fn node_key_accessors() {
    let k = normalize_ref("JIRA:TASK-123").expect("key");
    assert_eq!(k.namespace(), "jira");
    assert_eq!(k.value(), "task-123");
    assert_eq!(k.to_string(), "jira:task-123");
    let ns_only = normalize_ref("User:").expect("key");
    assert_eq!(ns_only.namespace(), "user");
    assert_eq!(ns_only.value(), "");
    assert_eq!(
        NodeKey::from_canonical("Not:Normalised").as_str(),
        "Not:Normalised"
    );
}

#[test]
fn entity_type_aliases() {
    for (word, want) in [
        ("person", "user"),
        ("Developer", "user"),
        ("assignee", "user"),
        ("member", "user"),
        ("ticket", "jira"),
        ("BUG", "jira"),
        ("story", "jira"),
        ("module", "file"),
        ("script", "file"),
        ("wiki", "confluence"),
        ("doc", "confluence"),
        ("changeset", "commit"),
        ("revision", "commit"),
        ("topic", "concept"),
        ("framework", "technology"),
        ("protocol", "technology"),
        ("customer", "client"),
        ("team", "organization"),
        ("company", "organization"),
        ("deadline", "event"),
        ("", "entity"),
        ("  ", "entity"),
        ("user", "user"),
        ("jira", "jira"),
        ("Widget", "widget"),
    ] {
        assert_eq!(canonical_entity_type(word), want, "{word}");
    }
}

#[test]
fn relation_aliases_and_fixes() {
    for (raw, want) in [
        ("requires", "depends_on"),
        ("dependency", "depends_on"),
        ("Depends On", "depends_on"),
        ("depends-on", "depends_on"),
        ("DEPENDS_ON", "depends_on"),
        ("dependsOn", "depends_on"),
        ("authored_by", "authored_by"),
        ("writtenBy", "created_by"),
        ("utilizes", "uses"),
        ("invokes", "uses"),
        ("has", "contains"),
        ("part_of", "belongs_to"),
        ("changes", "modifies"),
        ("inherits", "extends"),
        ("resolves", "fixes"),
        ("linked_to", "related_to"),
        ("runs_on", "deployed_to"),
        ("MENTIONS", "mentions"),
        ("MODIFIED_BY", "modified_by"),
        // Evident's fixes: kept as their own types.
        ("calls", "calls"),
        ("CALLS", "calls"),
        ("references", "references"),
        ("affects", "affects"),
        ("blocked_by", "blocked_by"),
        ("needed_by", "needed_by"),
    ] {
        assert_eq!(canonical_relation(raw).as_deref(), Some(want), "{raw}");
    }
    let too_long = "x".repeat(65);
    for bad in ["", "   ", "a.b", "a|b", "123", "--", too_long.as_str()] {
        assert_eq!(canonical_relation(bad), None, "{bad}");
    }
}

// --- explicit relationships ---

/// Parses each `(input, want)` with `main` as the main node; a failure names the input.
fn assert_parses(main: Option<&NodeKey>, cases: &[(&str, (&str, &str, &str))]) {
    for (input, (from, edge, to)) in cases {
        assert_eq!(
            parse_relationship(input, main),
            Some(rel(from, edge, to)),
            "{input}"
        );
    }
}

#[test]
fn parses_the_three_formats() {
    assert_parses(
        None,
        &[
            (
                "jira:TASK-123|MENTIONS|user:john",
                ("jira:task-123", "mentions", "user:john"),
            ),
            (
                "file:Service.kt->MODIFIED_BY->commit:abc123",
                ("file:service_kt", "modified_by", "commit:abc123"),
            ),
            (
                "class:UserService -[CALLS]-> method:authenticate",
                ("class:userservice", "calls", "method:authenticate"),
            ),
            (
                "\"user:John Smith | authored_by | doc:Guide\"",
                ("user:john_smith", "authored_by", "confluence:guide"),
            ),
            (
                "a -> depends on -> b",
                ("entity:a", "depends_on", "entity:b"),
            ),
        ],
    );
}

#[test]
fn shorthand_expands_to_the_main_node() {
    assert_parses(
        Some(&key("jira:task-123")),
        &[
            (
                "TASK-123|MENTIONS|user:john",
                ("jira:task-123", "mentions", "user:john"),
            ),
            (
                "file:Service.kt|RELATED_TO|task-123",
                ("file:service_kt", "related_to", "jira:task-123"),
            ),
            (
                "OTHER-9|RELATED_TO|TASK-123",
                ("entity:other-9", "related_to", "jira:task-123"),
            ),
        ],
    );
    // Without a main node a bare id is an entity.
    assert_parses(
        None,
        &[(
            "TASK-123|MENTIONS|user:john",
            ("entity:task-123", "mentions", "user:john"),
        )],
    );
    // A non-canonical main key still matches.
    assert_parses(
        Some(&key("JIRA:TASK-123")),
        &[(
            "TASK-123|MENTIONS|user:john",
            ("jira:task-123", "mentions", "user:john"),
        )],
    );
}

#[test]
fn blocked_by_is_reversed() {
    assert_parses(
        None,
        &[
            (
                "jira:A-1|BLOCKED_BY|jira:B-2",
                ("jira:b-2", "blocks", "jira:a-1"),
            ),
            (
                "jira:A-1|blocks|jira:B-2",
                ("jira:a-1", "blocks", "jira:b-2"),
            ),
            (
                "jira:A-1 -[blocked-by]-> jira:B-2",
                ("jira:b-2", "blocks", "jira:a-1"),
            ),
        ],
    );
}

#[test]
fn rejects_malformed_relationships() {
    for bad in [
        "",
        "a|b",
        "a|b|c|d",
        "|b|c",
        "a||c",
        "a|b|",
        "just some text",
        "a -[]-> b",
        "a -[X] b",
        "a|b.c|d",
        "a->b",
        "a->b->c->d",
        "see jira:A|blocks|jira:B",
        "http://x.com|links|y",
        "a|B|c\nd",
        "!!!|B|c",
    ] {
        assert_eq!(parse_relationship(bad, None), None, "{bad:?}");
    }
}

// --- relationships in content ---

const SEED_DOC: &str = "# TASK-123: Fix login bug\n\n**Assignee:** John Doe\n\n\
    The issue affects UserService.kt authentication flow.\nWe need to modify the login() method.\n\n\
    relationships: [\n  \"TASK-123|ASSIGNED_TO|user:john\",\n  \"TASK-123|AFFECTS|file:UserService.kt\",\n  \
    \"TASK-123|AFFECTS|method:UserService.login\"\n]\n";

#[test]
fn metadata_block_with_shorthand() {
    let main = key("jira:task-123");
    let found = find_relationships(SEED_DOC, Some(&main));
    assert_eq!(
        rels(&found),
        vec![
            rel("jira:task-123", "assigned_to", "user:john"),
            rel("jira:task-123", "affects", "file:userservice_kt"),
            rel("jira:task-123", "affects", "method:userservice_login"),
        ]
    );
    assert_eq!(
        &SEED_DOC[found[0].start..found[0].end],
        "TASK-123|ASSIGNED_TO|user:john"
    );
    assert_eq!(
        &SEED_DOC[found[2].start..found[2].end],
        "TASK-123|AFFECTS|method:UserService.login"
    );
}

#[test]
fn metadata_block_json_and_yaml() {
    let json = r#"{"title": "x", "relationships": ["user:John Smith -[AUTHORED_BY]-> doc:Guide", 'a->uses->b', "nonsense"]}"#;
    let found = find_relationships(json, None);
    assert_eq!(
        rels(&found),
        vec![
            rel("user:john_smith", "authored_by", "confluence:guide"),
            rel("entity:a", "uses", "entity:b"),
        ]
    );
    assert_eq!(&json[found[1].start..found[1].end], "a->uses->b");

    let yaml = "Notes\nRelationships:\n  - jira:A-1|BLOCKED_BY|jira:B-2\n  - \"x->CALLS->y\"\nOther text a|b|c\n";
    let found = find_relationships(yaml, None);
    assert_eq!(
        rels(&found),
        vec![
            rel("jira:b-2", "blocks", "jira:a-1"),
            rel("entity:x", "calls", "entity:y")
        ]
    );
    assert_eq!(
        &yaml[found[0].start..found[0].end],
        "jira:A-1|BLOCKED_BY|jira:B-2"
    );
    assert_eq!(&yaml[found[1].start..found[1].end], "x->CALLS->y");
}

#[test]
fn metadata_block_markdown_variants() {
    let md = "## Notes\n**Relationships:**\n* jira:A-1|BLOCKED_BY|jira:B-2\n+ user:jan -[OWNS]-> repo:evident\n\nDone.";
    let found = find_relationships(md, None);
    assert_eq!(
        rels(&found),
        vec![
            rel("jira:b-2", "blocks", "jira:a-1"),
            rel("user:jan", "owns", "repo:evident")
        ]
    );
    let next_line = "relationships:\n  [\"a|uses|b\",\r\n   \"c|uses|d\"]\r\n";
    let found = find_relationships(next_line, None);
    assert_eq!(
        rels(&found),
        vec![
            rel("entity:a", "uses", "entity:b"),
            rel("entity:c", "uses", "entity:d")
        ]
    );
    assert_eq!(&next_line[found[1].start..found[1].end], "c|uses|d");
    let escaped = r#"relationships = ["user:O\"Brien|AUTHORED_BY|doc:x"]"#;
    assert_eq!(
        rels(&find_relationships(escaped, None)),
        vec![rel("user:obrien", "authored_by", "confluence:x")]
    );
    // Prose after the keyword is not a block, and prose list items are not relationships.
    assert!(find_relationships("Relationships: none yet.\n- a|b|c\n", None).is_empty());
    assert!(
        find_relationships(
            "relationships:\n- Alice manages Bob -> weekly -> CEO\n",
            None
        )
        .is_empty()
    );
}

#[test]
fn inline_formats_with_spans() {
    let text = "The ticket jira:TASK-1|BLOCKS|jira:TASK-2 is urgent; also (file:a.rs->CALLS->file:b.rs).\n\
                And class:UserService -[CALLS]-> method:authenticate.\n";
    let found = find_relationships(text, None);
    assert_eq!(
        rels(&found),
        vec![
            rel("jira:task-1", "blocks", "jira:task-2"),
            rel("file:a_rs", "calls", "file:b_rs"),
            rel("class:userservice", "calls", "method:authenticate"),
        ]
    );
    let spans: Vec<&str> = found.iter().map(|f| &text[f.start..f.end]).collect();
    assert_eq!(
        spans,
        vec![
            "jira:TASK-1|BLOCKS|jira:TASK-2",
            "file:a.rs->CALLS->file:b.rs",
            "class:UserService -[CALLS]-> method:authenticate",
        ]
    );
}

#[test]
fn inline_shorthand_and_bare_ids() {
    let main = key("jira:task-123");
    let found = find_relationships("See TASK-123->MENTIONS->user:john today", Some(&main));
    assert_eq!(
        rels(&found),
        vec![rel("jira:task-123", "mentions", "user:john")]
    );
    // Both ends bare: counts only with an edge in capitals.
    let found = find_relationships("ServiceA|DEPENDS_ON|ServiceB", None);
    assert_eq!(
        rels(&found),
        vec![rel("entity:servicea", "depends_on", "entity:serviceb")]
    );
    assert!(find_relationships("ServiceA|depends_on|ServiceB", None).is_empty());
}

#[test]
fn no_relationships_from_tables_pipes_and_prose() {
    for text in [
        "| from | edge | to |\n|------|------|----|\n| a | b | c |\n|a|b|c|\n|jira:a|b|jira:c|\n",
        "x|y|z\n-|-|-\njira:a|b|jira:c\n",
        "cat x | grep y",
        "cat file|sort|uniq and ls -la|grep foo|wc -l",
        "input -> output, then Home->Settings->Privacy and a->b->c->d",
        "jira:A->B->C->jira:D",
        "see https://example.com/a|b|c and http://x.org/p->q->r for more",
        "ratio a|b|c or 10:30|at|11:45",
        "Just prose: users relate to tickets -> somehow.",
        "relationships are important: we have none",
        "relationships: [ \"a|B|c\" unclosed",
        "C:\\x|COPIED_TO|D:\\y",
        "a -[ CALLS ]-> b and a -[CALLS]- b",
    ] {
        assert!(
            find_relationships(text, None).is_empty(),
            "{text:?}: {:?}",
            find_relationships(text, None)
        );
    }
}

#[test]
fn block_entries_are_not_counted_twice() {
    let text = "relationships: [\"jira:A|BLOCKS|jira:B\"]\nAlso jira:C|BLOCKS|jira:D.";
    let found = find_relationships(text, None);
    assert_eq!(
        rels(&found),
        vec![
            rel("jira:a", "blocks", "jira:b"),
            rel("jira:c", "blocks", "jira:d")
        ]
    );
}

#[test]
fn pathological_inputs_are_fast_enough() {
    let patterns = [
        "a-[b",
        "relationships: [\"",
        "x|",
        "->",
        "relationships:\n- ",
        "jira:a|B|",
        "www.a:b",
        "a:b:",
    ];
    for p in patterns {
        let text = p.repeat(200_000 / p.len());
        let _ = find_relationships(&text, None);
        let _ = extract_refs(&text);
    }
    let long_token = "x".repeat(500_000) + "|B|" + &"y".repeat(500_000);
    assert!(find_relationships(&long_token, None).is_empty());
}

// --- refs in text ---

#[test]
fn extract_refs_positives() {
    let text = "Assigned to user:jan.novak, see jira:TASK-1 and Ž:Příliš žluťoučký. \
                Again JIRA:task-1 (person:Jan). Mail **user:john.doe@example.com**.";
    let found = extract_refs(text);
    let keys: Vec<&str> = found.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(
        keys,
        vec![
            "user:jan_novak",
            "jira:task-1",
            "ž:příliš",
            "user:jan",
            "user:john_doe_example_com"
        ]
    );
    let spans: Vec<&str> = found.iter().map(|r| &text[r.start..r.end]).collect();
    assert_eq!(
        spans,
        vec![
            "user:jan.novak",
            "jira:TASK-1",
            "Ž:Příliš",
            "person:Jan",
            "user:john.doe@example.com"
        ]
    );
    assert_eq!(
        ref_keys("[link](jira:ABC-12) \"concept:Caching\""),
        vec!["jira:abc-12", "concept:caching"]
    );
    assert_eq!(
        ref_keys("end of sentence jira:ABC-12."),
        vec!["jira:abc-12"]
    );
    assert_eq!(ref_keys("TASK-1|MENTIONS|user:john"), vec!["user:john"]);
}

#[test]
fn extract_refs_negatives() {
    for text in [
        "http://example.com:8080/path",
        "https://x.org/?q=jira:TASK-1&u=user:john",
        "see (https://x.org/a:b) now",
        "mailto:john@example.com",
        "file:///etc/passwd file:/tmp/x",
        "at 10:30 or 10:30:15 or T10:30",
        "2024-01-01T10:30:15Z",
        "C:\\Users\\x and C:/x and d:\\y",
        "fe80::1 and 2001:db8::ff00:42:8329 and fe80:0:0:0:202:b3ff:fe1e:8329 [::1]",
        "key: value and name:  John",
        "ratio 16:9 and 4:3",
        ":smile: :+1: :white_check_mark:",
        "std::collections::HashMap and Foo::bar",
        "data:image/png;base64,xyz",
        "javascript:alert(1)",
        "urn:isbn:0451450523",
        "localhost:8080",
        "www.example.com/a?ref=jira:X",
        "example.com:443 and host.name:8080",
        "Re:Meeting Fwd:Notes",
        "font-weight:bold;font-style:italic",
        "user@host:path",
    ] {
        assert!(
            extract_refs(text).is_empty(),
            "{text:?}: {:?}",
            extract_refs(text)
        );
    }
}

#[test]
fn reserved_namespaces_are_never_refs_in_text_but_are_in_questions() {
    let text = "Run notmuch show thread:some-thread-id, then see commit:abc123, file:Service.kt, \
                module:auth (a file), revision:42 (a commit), message:x@y.io, symbol:Cart.total, \
                branch:main, repository:shop, import:std, url:example, attachment:a1 and \
                meeting:standup; also jira:ABC-1 and user:jan.";
    assert_eq!(ref_keys(text), vec!["jira:abc-1", "user:jan"]);
    let asked: Vec<String> = extract_query_refs(text)
        .into_iter()
        .map(|r| r.key.namespace().to_string())
        .collect();
    for ns in crate::keys::RESERVED_NAMESPACES {
        assert!(asked.iter().any(|a| a == ns), "{ns} is found in a question");
    }
    for k in extract_refs(text) {
        assert!(!crate::keys::is_reserved(&k.key), "{}", k.key);
    }
}

#[test]
fn command_lines_urls_and_times_hold_no_refs() {
    for text in [
        "$ jira view jira:ABC-1",
        "  $ notmuch search user:jan",
        "> $ git log --author=user:jan",
        "% grep -r topic:caching .",
        "PS> Get-Item concept:x",
        "https://lists.example.org/thread:1234/user:jan",
        "at 10:30, 10:30:15 or T10:30",
    ] {
        assert!(ref_keys(text).is_empty(), "{text:?}: {:?}", ref_keys(text));
    }
    // The same words outside a prompt line are prose.
    assert_eq!(ref_keys("jira view jira:ABC-1"), vec!["jira:abc-1"]);
    assert_eq!(
        ref_keys("$ jira view jira:ABC-1\nSee jira:ABC-2 too."),
        vec!["jira:abc-2"]
    );
    assert!(is_command_line("$ ls") && !is_command_line("costs $5"));
}

#[test]
fn explicit_relationships_still_name_reserved_namespaces() {
    assert_eq!(
        rels(&find_relationships(
            "relationships: [\"thread:x|MENTIONS|commit:abc\"]",
            None
        )),
        vec![rel("thread:x", "mentions", "commit:abc")]
    );
    assert_eq!(
        parse_relationship("file:a.rs|CALLS|symbol:b", None),
        Some(rel("file:a_rs", "calls", "symbol:b"))
    );
}
