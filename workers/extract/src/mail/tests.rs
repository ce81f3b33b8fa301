use super::*;

const THREAD: &str = "From a@x Mon Jan  5 10:00:00 2026\nMessage-ID: <root@x>\nFrom: Ann <ann@x.io>\nTo: Bob <bob@x.io>\nSubject: Plan\nDate: Mon, 05 Jan 2026 10:00:00 +0000\n\nLet's plan. See https://example.com/plan.\n\nFrom b@x Mon Jan  5 11:00:00 2026\nMessage-ID: <r1@x>\nIn-Reply-To: <root@x>\nReferences: <root@x>\nFrom: Bob <bob@x.io>\nTo: Ann <ann@x.io>\nSubject: Re: Plan\nDate: Mon, 05 Jan 2026 11:00:00 +0000\n\nAgreed.\n>From the archive: quoted.\n\nFrom c@x Mon Jan  5 12:00:00 2026\nMessage-ID: <r2@x>\nIn-Reply-To: <r1@x>\nReferences: <root@x> <r1@x>\nFrom: Cy <cy@x.io>\nSubject: Re: Plan\n\nMe too.\n";

/// What a [`MailContext`] borrows, owned for one test: client `acme`, source `acme.mail`.
struct Fixture {
    scope: Scope,
    chunking: ChunkingConfig,
}

impl Fixture {
    fn new() -> Self {
        Fixture {
            scope: Scope::client("acme"),
            chunking: ChunkingConfig::default(),
        }
    }

    fn ctx(&self) -> MailContext<'_> {
        MailContext {
            scope: &self.scope,
            source_id: "acme.mail",
            mailbox: "INBOX",
            max_attachment_bytes: 1 << 20,
            truncated_at: None,
            chunking: &self.chunking,
        }
    }
}

#[test]
fn mbox_splits_and_unquotes() {
    let entries = split_mbox(THREAD.as_bytes());
    assert_eq!(entries.len(), 3);
    assert_eq!(entries[1].envelope, "From b@x Mon Jan  5 11:00:00 2026");
    let second = String::from_utf8_lossy(&entries[1].bytes).to_string();
    assert!(second.contains("\nFrom the archive: quoted."), "{second}");
    assert!(split_mbox(b"").is_empty());
    assert!(split_mbox(b"no envelope here").is_empty());
}

#[test]
fn threads_people_and_links() {
    let emails: Vec<Email> = split_mbox(THREAD.as_bytes())
        .iter()
        .map(|m| parse_email(&m.bytes).expect("parse"))
        .collect();
    assert_eq!(parent_of(&emails[2]), Some("r1@x"));
    assert_eq!(thread_root(&emails[2]), "root@x");
    assert_eq!(thread_root(&emails[0]), "root@x");
    assert_eq!(emails[0].links, vec!["https://example.com/plan"]);
    let fixture = Fixture::new();
    let ctx = fixture.ctx();
    let src = &email_sources(&emails[1], &ctx)[0];
    let edges: Vec<(&str, &str)> = src
        .edges
        .iter()
        .map(|e| (e.edge_type.as_str(), e.to.as_str()))
        .collect();
    assert!(
        edges.contains(&("replies_to", "message:root_x")),
        "{edges:?}"
    );
    assert!(edges.contains(&("in_thread", "thread:root_x")), "{edges:?}");
    assert!(edges.contains(&("sent_by", "user:bob_x_io")), "{edges:?}");
    assert!(edges.contains(&("sent_to", "user:ann_x_io")), "{edges:?}");
    assert_eq!(src.aliases.len(), 2, "names resolve to e-mail identities");
    match &src.chunks[1].locator {
        Locator::Email {
            message_id,
            part,
            mailbox,
            ..
        } => {
            assert_eq!(
                (message_id.as_str(), part.as_deref(), mailbox.as_deref()),
                ("r1@x", Some("1"), Some("INBOX"))
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn messages_without_an_id_get_a_stable_one_and_garbage_is_an_error() {
    let a = parse_email(b"From: x@y.z\nSubject: s\n\nbody").expect("parse");
    let b = parse_email(b"From: x@y.z\nSubject: s\n\nbody").expect("parse");
    assert!(a.message_id.starts_with("evident-"));
    assert_eq!(a.message_id, b.message_id);
    assert!(parse_email(b"   ").is_err());
}

#[test]
fn utf8_labelled_latin1_is_read_as_utf8_and_real_latin1_stays() {
    let mislabelled =
        "Subject: m\nContent-Type: text/plain; charset=\"ISO-8859-1\"\n\ncrème brûlée".as_bytes();
    assert_eq!(
        parse_email(mislabelled).expect("parse").texts[0]
            .text
            .trim(),
        "crème brûlée"
    );
    let mut latin1 = b"Subject: l\nContent-Type: text/plain; charset=iso-8859-1\n\ncr".to_vec();
    latin1.extend_from_slice(&[0xE8, b'm', b'e']);
    assert_eq!(
        parse_email(&latin1).expect("parse").texts[0].text.trim(),
        "crème"
    );
    assert_eq!(
        declared_charset(b"Content-Type: text/plain; charset=\"UTF-8\"").as_deref(),
        Some("utf-8")
    );
}

proptest::proptest! {
    #[test]
    fn never_panics(s in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600)) {
        for m in split_mbox(&s) {
            let _ = parse_email(&m.bytes);
        }
        let _ = parse_email(&s);
    }
}

fn headers(id: &str, extra: &str) -> Email {
    parse_email(format!("Message-ID: <{id}>\nSubject: s\n{extra}\nbody\n").as_bytes())
        .expect("parse")
}

#[test]
fn ancestry_is_the_whole_references_chain_then_in_reply_to() {
    let full = headers("c@x", "References: <a@x> <b@x>\nIn-Reply-To: <b@x>\n");
    assert_eq!(ancestors(&full), vec!["a@x", "b@x"]);
    assert_eq!(thread_root(&full), "a@x");
    assert_eq!(
        thread_keys(&full)
            .iter()
            .map(NodeKey::as_str)
            .collect::<Vec<_>>(),
        vec!["thread:a_x", "thread:b_x", "thread:c_x"],
        "most senior first, the message itself last"
    );
    // In-Reply-To only (no References): the parent is the root as far as it knows.
    let reply_only = headers("c@x", "In-Reply-To: <b@x>\n");
    assert_eq!(ancestors(&reply_only), vec!["b@x"]);
    assert_eq!(parent_of(&reply_only), Some("b@x"));
    // An In-Reply-To that References lacks comes after it; repeats and itself are dropped.
    let odd = headers("c@x", "References: <a@x> <a@x> <c@x>\nIn-Reply-To: <q@x>\n");
    assert_eq!(ancestors(&odd), vec!["a@x", "q@x"]);
    let root = headers("a@x", "");
    assert!(ancestors(&root).is_empty());
    assert_eq!(thread_root(&root), "a@x");
    assert_eq!(thread_keys(&root).len(), 1);
}

#[test]
fn very_long_ancestries_keep_the_root_and_the_nearest() {
    let refs: String = (0..400).map(|i| format!("<m{i}@x> ")).collect();
    let e = headers("self@x", &format!("References: {refs}\n"));
    let chain = ancestors(&e);
    assert_eq!(chain.len(), MAX_ANCESTORS);
    assert_eq!(chain[0], "m0@x");
    assert_eq!(chain[1], "m145@x");
    assert_eq!(chain.last().copied(), Some("m399@x"));
}

#[test]
fn a_reply_names_its_absent_ancestors_as_placeholders_and_merges_their_thread_keys() {
    let fixture = Fixture::new();
    let ctx = fixture.ctx();
    let e = headers("d@x", "References: <a@x> <b@x> <c@x>\nIn-Reply-To: <c@x>\n");
    let src = &email_sources(&e, &ctx)[0];
    let mut replies: Vec<(&str, &str)> = src
        .edges
        .iter()
        .filter(|e| e.edge_type == "replies_to")
        .map(|e| (e.from.as_str(), e.to.as_str()))
        .collect();
    replies.sort();
    assert_eq!(
        replies,
        vec![
            ("message:b_x", "message:a_x"),
            ("message:c_x", "message:b_x"),
            ("message:d_x", "message:c_x"),
        ]
    );
    let thread: Vec<&str> = src
        .edges
        .iter()
        .filter(|e| e.edge_type == "in_thread")
        .map(|e| e.to.as_str())
        .collect();
    assert_eq!(
        thread,
        vec!["thread:a_x"],
        "keyed by the root, never received"
    );
    assert_eq!(src.merges, vec![thread_keys(&e)]);
    let root = headers("a@x", "");
    assert!(
        email_sources(&root, &ctx)[0].merges.is_empty(),
        "a root alone merges nothing"
    );
}

#[test]
fn a_body_naming_a_thread_or_a_commit_makes_no_such_node() {
    let fixture = Fixture::new();
    let ctx = fixture.ctx();
    let e = headers(
        "m@x",
        "\nTry notmuch show thread:some-thread-id, or commit:abc123 for jira:ABC-1.\n$ git log user:jan\n",
    );
    let src = &email_sources(&e, &ctx)[0];
    let refs: Vec<&str> = src
        .chunks
        .iter()
        .flat_map(|c| c.refs.iter().map(NodeKey::as_str))
        .collect();
    assert!(refs.contains(&"jira:abc-1"), "{refs:?}");
    for k in refs
        .into_iter()
        .chain(src.edges.iter().map(|e| e.to.as_str()))
    {
        assert!(
            !k.contains("some") && !k.starts_with("commit:") && k != "user:jan",
            "{k}"
        );
    }
}
