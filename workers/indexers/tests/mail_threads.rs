//! Mail threads as JWZ threading builds them (and notmuch and mutt with it), over the real
//! pipeline (mbox poll → queue → extraction → embedded store): the whole ancestry of every
//! message with placeholders for absent ones, so a reply whose parent or root was never
//! received still joins its thread, keyed by its root, whatever order the messages arrive in
//! (one poll per message here: each extracted by its own task, after the others' writes).

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use evident_core::Visibility;
use evident_extract::mail::{message_key, thread_key};
use serde_json::json;
use support::{Harness, harness};

/// A message with `id`, and `References` / `In-Reply-To` as given (empty: none).
fn message(id: &str, references: &str, in_reply_to: &str) -> String {
    let mut head = format!(
        "From sender@acme.io Mon Jan  5 10:00:00 2026\nMessage-ID: <{id}@acme.io>\nFrom: Ann <ann@acme.io>\nSubject: Re: the plan\nDate: Mon, 05 Jan 2026 10:00:00 +0000\n"
    );
    if !references.is_empty() {
        let refs: Vec<String> = references
            .split(' ')
            .map(|r| format!("<{r}@acme.io>"))
            .collect();
        head.push_str(&format!("References: {}\n", refs.join(" ")));
    }
    if !in_reply_to.is_empty() {
        head.push_str(&format!("In-Reply-To: <{in_reply_to}@acme.io>\n"));
    }
    format!("{head}\nMessage {id} of the thread about the plan.\n\n")
}

struct Mailbox {
    h: Harness,
    path: std::path::PathBuf,
    source: String,
}

impl Mailbox {
    async fn new() -> Mailbox {
        let h = harness().await;
        let path = h.dir.path().join("list.mbox");
        std::fs::write(&path, "").expect("write");
        let source = h.register("mbox", json!({"path": path})).await.id;
        Mailbox { h, path, source }
    }

    /// Appends messages, polls and runs every task they queued.
    async fn deliver(&self, messages: &[String]) {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.path)
            .expect("open");
        for m in messages {
            f.write_all(m.as_bytes()).expect("append");
        }
        drop(f);
        self.h.poll(&self.source).await.expect("poll");
        let d = self.h.drain().await;
        assert!(d.errors.is_empty(), "{:?}", d.errors);
    }

    /// Every received message's thread: thread key → message ids (`{id}@acme.io`).
    async fn threads(&self) -> BTreeMap<String, BTreeSet<String>> {
        let prefix = format!("mail:{}:", self.source);
        let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for urn in self.h.urns(&prefix).await {
            let id = urn.trim_start_matches(&prefix).to_string();
            let key = message_key(&id);
            let sub = self
                .h
                .kb
                .stores()
                .graph
                .traverse(
                    &Visibility::of(self.h.scope()),
                    std::slice::from_ref(&key),
                    &evident_store::TraverseOptions {
                        max_depth: 1,
                        direction: evident_store::Direction::Out,
                        edge_types: vec!["in_thread".into()],
                        ..Default::default()
                    },
                )
                .await
                .expect("traverse");
            assert_eq!(sub.edges.len(), 1, "{id} is in one thread: {:?}", sub.edges);
            out.entry(sub.edges[0].to.to_string())
                .or_default()
                .insert(id.trim_end_matches("@acme.io").to_string());
        }
        out
    }

    /// Every `thread` node of the graph.
    async fn thread_nodes(&self) -> Vec<String> {
        let mut keys: Vec<String> = self
            .h
            .kb
            .stores()
            .graph
            .search_nodes(
                &Visibility::of(self.h.scope()),
                "thread",
                Some("thread"),
                1000,
            )
            .await
            .expect("search")
            .into_iter()
            .map(|n| n.key.to_string())
            .collect();
        keys.sort();
        keys
    }
}

fn thread(id: &str) -> String {
    thread_key(&format!("{id}@acme.io")).to_string()
}

fn one_thread(root: &str, members: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    BTreeMap::from([(
        thread(root),
        members.iter().map(|m| m.to_string()).collect(),
    )])
}

#[tokio::test]
async fn a_missing_middle_message_leaves_its_thread_whole() {
    let mb = Mailbox::new().await;
    mb.deliver(&[
        message("a", "", ""),
        // `b` never arrives; `c` answers it, `d` answers `c`.
        message("c", "a b", "b"),
        message("d", "a b c", "c"),
    ])
    .await;
    assert_eq!(mb.threads().await, one_thread("a", &["a", "c", "d"]));
    assert_eq!(mb.thread_nodes().await, vec![thread("a")]);
    // The absent message is a placeholder between its reply and the root.
    let b = message_key("b@acme.io").to_string();
    assert_eq!(
        mb.h.incoming(&b, "replies_to").await,
        vec![message_key("c@acme.io").to_string()]
    );
    assert_eq!(
        mb.h.incoming(message_key("a@acme.io").as_str(), "replies_to")
            .await,
        vec![b]
    );
}

#[tokio::test]
async fn a_reply_whose_root_never_arrived_is_keyed_by_that_root() {
    let mb = Mailbox::new().await;
    mb.deliver(&[message("b", "a", "a"), message("c", "a b", "b")])
        .await;
    assert_eq!(mb.threads().await, one_thread("a", &["b", "c"]));
    assert_eq!(mb.thread_nodes().await, vec![thread("a")]);
}

/// `a` ← `b` ← `c` ← `d`, where `c` and `d` name only their parent (In-Reply-To only, or a
/// shortened References): until `b` arrives, nothing in `c` or `d` names the root.
fn partial_chain() -> Vec<String> {
    vec![
        message("a", "", ""),
        message("b", "a", "a"),
        message("c", "b", "b"),
        message("d", "", "c"),
    ]
}

fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for p in permutations(n - 1) {
        for at in 0..=p.len() {
            let mut q = p.clone();
            q.insert(at, n - 1);
            out.push(q);
        }
    }
    out
}

#[tokio::test]
async fn any_arrival_order_builds_the_same_thread_keyed_by_its_root() {
    let msgs = partial_chain();
    for order in permutations(msgs.len()) {
        let mb = Mailbox::new().await;
        for &i in &order {
            // One poll per message: each is extracted after the previous ones are written.
            mb.deliver(std::slice::from_ref(&msgs[i])).await;
        }
        assert_eq!(
            mb.threads().await,
            one_thread("a", &["a", "b", "c", "d"]),
            "order {order:?}"
        );
        assert_eq!(
            mb.thread_nodes().await,
            vec![thread("a")],
            "the thread nodes of partial chains were folded into the root's (order {order:?})"
        );
    }
}

#[tokio::test]
async fn in_reply_to_alone_threads_a_reply() {
    let mb = Mailbox::new().await;
    mb.deliver(&[message("a", "", ""), message("b", "", "a")])
        .await;
    assert_eq!(mb.threads().await, one_thread("a", &["a", "b"]));
}

#[tokio::test]
async fn two_partial_chains_that_meet_later_become_one_thread() {
    let mb = Mailbox::new().await;
    // `x` knows only its parent `p`; `y` knows the root `r` and its parent `q`.
    mb.deliver(&[message("x", "", "p"), message("y", "r q", "q")])
        .await;
    let apart = mb.threads().await;
    assert_eq!(apart.len(), 2, "{apart:?}");
    // `z` names `r` and `p`: the two are one thread now, keyed by the root.
    mb.deliver(&[message("z", "r p", "p")]).await;
    assert_eq!(mb.threads().await, one_thread("r", &["x", "y", "z"]));
    assert_eq!(mb.thread_nodes().await, vec![thread("r")]);
    // A separate conversation stays separate.
    mb.deliver(&[message("s", "", ""), message("t", "s", "s")])
        .await;
    let threads = mb.threads().await;
    assert_eq!(threads.len(), 2);
    assert_eq!(
        threads[&thread("s")],
        BTreeSet::from(["s".to_string(), "t".to_string()])
    );
}

#[tokio::test]
async fn a_duplicate_message_id_is_one_message_of_its_thread() {
    let mb = Mailbox::new().await;
    let copy = message("b", "a", "a").replace("From: Ann", "From: Ann (list copy)");
    mb.deliver(&[message("a", "", ""), message("b", "a", "a"), copy])
        .await;
    assert_eq!(
        mb.h.urns(&format!("mail:{}:", mb.source)).await.len(),
        2,
        "one source per Message-ID"
    );
    assert_eq!(mb.threads().await, one_thread("a", &["a", "b"]));
    assert_eq!(
        mb.h.incoming(thread("a").as_str(), "in_thread").await.len(),
        2,
        "the duplicate is counted once"
    );
}
