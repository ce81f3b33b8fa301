//! Mail sources end to end over the embedded store: mbox (append detection, duplicates),
//! Maildir (new, moved and flagged files), threads rebuilt in the graph, and bad input that
//! ends as an item error while the rest goes on.

mod support;

use std::io::Write;

use evident_core::{NodeKey, Visibility};
use evident_store::{Direction, TraverseOptions};
use serde_json::json;
use support::harness;

fn message(id: &str, from: &str, subject: &str, extra: &str, body: &str) -> String {
    format!(
        "Message-ID: <{id}>\nFrom: {from}\nTo: Team <team@acme.io>\nSubject: {subject}\nDate: Mon, 05 Jan 2026 10:00:00 +0000\n{extra}\n{body}\n"
    )
}

fn mbox_entry(msg: &str) -> String {
    format!("From sender@acme.io Mon Jan  5 10:00:00 2026\n{msg}\n")
}

fn thread() -> Vec<String> {
    vec![
        message(
            "root@acme.io",
            "Ann Lee <ann@acme.io>",
            "Release plan",
            "",
            "We ship the importer on Friday after the schema migration.",
        ),
        message(
            "r1@acme.io",
            "Bob <bob@acme.io>",
            "Re: Release plan",
            "In-Reply-To: <root@acme.io>\nReferences: <root@acme.io>\n",
            "Agreed, the backfill runs overnight on the replica.",
        ),
        message(
            "r2@acme.io",
            "Cy <cy@acme.io>",
            "Re: Release plan",
            "In-Reply-To: <r1@acme.io>\nReferences: <root@acme.io> <r1@acme.io>\n",
            "Rate limits on the export endpoint stay at fifty per second.",
        ),
    ]
}

fn key(s: &str) -> NodeKey {
    NodeKey::from_canonical(s)
}

#[tokio::test]
async fn an_mbox_is_read_once_then_only_what_was_appended_and_threads_are_built() {
    let h = harness().await;
    let path = h.dir.path().join("team.mbox");
    let msgs = thread();
    // The root twice (a duplicate Message-ID): written once.
    let text: String = [&msgs[0], &msgs[1], &msgs[0], &msgs[2]]
        .iter()
        .map(|m| mbox_entry(m))
        .collect();
    std::fs::write(&path, &text).expect("write");
    let src = h.register("mbox", json!({"path": path})).await;
    assert_eq!(src.id, "acme.team");

    let first = h.poll(&src.id).await.expect("poll");
    assert_eq!(first["messages"], 4);
    let d = h.drain().await;
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    assert_eq!(
        h.urns("mail:acme.team:").await,
        vec![
            "mail:acme.team:r1@acme.io",
            "mail:acme.team:r2@acme.io",
            "mail:acme.team:root@acme.io"
        ]
    );

    // Nothing changed: the file is not read.
    let again = h.poll(&src.id).await.expect("poll");
    assert_eq!(again["messages"], 0);
    assert_eq!(again["unchangedFiles"], 1);

    // Appended: only the last known message (re-read, unchanged) and the new one.
    let late = message(
        "r3@acme.io",
        "Dee <dee@acme.io>",
        "Re: Release plan",
        "In-Reply-To: <r2@acme.io>\nReferences: <root@acme.io> <r1@acme.io> <r2@acme.io>\n",
        "Late reply.",
    );
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("open")
        .write_all(mbox_entry(&late).as_bytes())
        .expect("append");
    let appended = h.poll(&src.id).await.expect("poll");
    assert_eq!(appended["messages"], 2, "{appended}");
    assert_eq!(appended["rereadFiles"], 0);
    assert!(h.drain().await.errors.is_empty());
    assert_eq!(h.urns("mail:acme.team:").await.len(), 4);

    // The thread, exactly: every message in it, each reply pointing at its parent.
    let vis = Visibility::of(h.scope());
    let thread_key = evident_extract::mail::thread_key("root@acme.io");
    let sub =
        h.kb.stores()
            .graph
            .traverse(
                &vis,
                std::slice::from_ref(&thread_key),
                &TraverseOptions {
                    max_depth: 1,
                    direction: Direction::In,
                    edge_types: vec!["in_thread".into()],
                    ..Default::default()
                },
            )
            .await
            .expect("traverse");
    let mut members: Vec<String> = sub.edges.iter().map(|e| e.from.to_string()).collect();
    members.sort();
    let m = |id: &str| evident_extract::mail::message_key(id).to_string();
    let mut want = vec![
        m("root@acme.io"),
        m("r1@acme.io"),
        m("r2@acme.io"),
        m("r3@acme.io"),
    ];
    want.sort();
    assert_eq!(members, want);
    for (child, parent) in [
        ("r1@acme.io", "root@acme.io"),
        ("r2@acme.io", "r1@acme.io"),
        ("r3@acme.io", "r2@acme.io"),
    ] {
        let sub =
            h.kb.stores()
                .graph
                .traverse(
                    &vis,
                    &[key(&m(child))],
                    &TraverseOptions {
                        max_depth: 1,
                        direction: Direction::Out,
                        edge_types: vec!["replies_to".into()],
                        ..Default::default()
                    },
                )
                .await
                .expect("traverse");
        let parents: Vec<String> = sub.edges.iter().map(|e| e.to.to_string()).collect();
        assert_eq!(parents, vec![m(parent)], "{child}");
    }

    // Searchable with a citation of the message.
    let pack = h.retrieve("backfill overnight replica", &[]).await;
    let top = &pack.items[0];
    assert_eq!(top.source_urn, "mail:acme.team:r1@acme.io");
    assert_eq!(
        support::locator_json(&top.locator)["messageId"],
        "r1@acme.io"
    );
}

#[tokio::test]
async fn a_rewritten_mbox_is_read_again_without_duplicates() {
    let h = harness().await;
    let path = h.dir.path().join("box.mbox");
    let msgs = thread();
    std::fs::write(&path, mbox_entry(&msgs[0]) + &mbox_entry(&msgs[1])).expect("write");
    let src = h.register("mbox", json!({"path": path})).await;
    h.poll(&src.id).await.expect("poll");
    h.drain().await;
    // A mail client compacts the file: the first message removed, another added in front.
    std::fs::write(&path, mbox_entry(&msgs[2]) + &mbox_entry(&msgs[1]) + "\n").expect("rewrite");
    let r = h.poll(&src.id).await.expect("poll");
    assert_eq!(r["rereadFiles"], 1, "{r}");
    assert_eq!(r["messages"], 2);
    let d = h.drain().await;
    assert!(d.errors.is_empty());
    assert_eq!(
        h.urns("mail:acme.box:").await.len(),
        3,
        "kept, added, none twice"
    );
}

fn maildir(root: &std::path::Path) {
    for sub in ["cur", "new", "tmp"] {
        std::fs::create_dir_all(root.join(sub)).expect("mkdir");
    }
}

#[tokio::test]
async fn a_maildir_picks_up_deliveries_and_folders_and_skips_flag_changes() {
    let h = harness().await;
    let root = h.dir.path().join("Maildir");
    maildir(&root);
    maildir(&root.join(".Archive"));
    let msgs = thread();
    std::fs::write(root.join("new/1.host"), &msgs[0]).expect("w");
    std::fs::write(root.join(".Archive/cur/2.host:2,S"), &msgs[1]).expect("w");
    let src = h.register("maildir", json!({"path": root})).await;
    let first = h.poll(&src.id).await.expect("poll");
    assert_eq!(first["messages"], 2);
    assert_eq!(first["mailboxes"], 2);
    assert!(h.drain().await.errors.is_empty());

    // Delivery of a new message; the client reads the first one (new/ → cur/ with a flag).
    std::fs::write(root.join("new/3.host"), &msgs[2]).expect("w");
    std::fs::rename(root.join("new/1.host"), root.join("cur/1.host:2,S")).expect("mv");
    let second = h.poll(&src.id).await.expect("poll");
    assert_eq!(second["messages"], 2, "the delivery and the renamed file");
    assert!(h.drain().await.errors.is_empty());
    assert_eq!(
        h.urns("mail:acme.maildir:").await.len(),
        3,
        "the renamed one is not new"
    );
    let quiet = h.poll(&src.id).await.expect("poll");
    assert_eq!(quiet["messages"], 0);
}

#[tokio::test]
async fn bad_messages_fail_alone_and_a_huge_attachment_is_cut_off() {
    let h = harness().await;
    let root = h.dir.path().join("Maildir");
    maildir(&root);
    // Not a message at all.
    std::fs::write(
        root.join("new/1.bad"),
        "\u{0}\u{1}binary junk with no header\n",
    )
    .expect("w");
    // Truncated MIME: the multipart ends in the middle of a part, no closing boundary.
    std::fs::write(
        root.join("new/2.truncated"),
        "Message-ID: <cut@acme.io>\nFrom: Ann <ann@acme.io>\nSubject: Quarterly numbers\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"b1\"\n\n--b1\nContent-Type: text/plain; charset=utf-8\n\nRevenue grew in the third quarter, see the attached sheet.\n--b1\nContent-Type: application/pdf; name=\"q3.pdf\"\nContent-Transfer-Encoding: base64\n\nJVBERi0xLjQK",
    )
    .expect("w");
    // Wrong charset label: declared ISO-8859-1, really UTF-8.
    std::fs::write(
        root.join("new/3.charset"),
        "Message-ID: <latin@acme.io>\nFrom: Zoë <zoe@acme.io>\nSubject: Café menu\nContent-Type: text/plain; charset=iso-8859-1\n\nThe café opens at nine; crème brûlée on Fridays.\n",
    )
    .expect("w");
    // A 200 MB attachment behind a short text part.
    {
        let mut f = std::fs::File::create(root.join("new/4.huge")).expect("create");
        write!(
            f,
            "Message-ID: <huge@acme.io>\nFrom: Bob <bob@acme.io>\nSubject: Raw capture\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"zz\"\n\n--zz\nContent-Type: text/plain\n\nThe packet capture from the outage is attached.\n--zz\nContent-Type: application/octet-stream; name=\"capture.pcap\"\nContent-Transfer-Encoding: base64\n\n"
        )
        .expect("head");
        let line = format!("{}\n", "A".repeat(76));
        let block: String = line.repeat(1 << 14);
        let mut written = 0usize;
        while written < 200 * 1024 * 1024 {
            f.write_all(block.as_bytes()).expect("body");
            written += block.len();
        }
        writeln!(f, "--zz--").expect("end");
    }
    std::fs::write(
        root.join("new/5.fine"),
        message(
            "fine@acme.io",
            "Cy <cy@acme.io>",
            "All good",
            "",
            "Nothing to see.",
        ),
    )
    .expect("w");
    let src = h
        .register("maildir", json!({"path": root, "maxMessageBytes": 1048576}))
        .await;
    let r = h.poll(&src.id).await.expect("poll");
    assert_eq!(r["messages"], 5);
    let d = h.drain().await;
    assert_eq!(d.errors.len(), 1, "{:?}", d.errors);
    let reason = d.errors[0].last_error.clone().unwrap_or_default();
    assert!(reason.contains("not an e-mail message"), "{reason}");
    let urns = h.urns("mail:acme.maildir:").await;
    for id in [
        "cut@acme.io",
        "latin@acme.io",
        "huge@acme.io",
        "fine@acme.io",
    ] {
        assert!(
            urns.contains(&format!("mail:acme.maildir:{id}")),
            "{id} in {urns:?}"
        );
    }
    let pack = h.retrieve("packet capture outage", &[]).await;
    assert_eq!(pack.items[0].source_urn, "mail:acme.maildir:huge@acme.io");
    let node =
        h.kb.stores()
            .graph
            .get_nodes(
                &Visibility::of(h.scope()),
                &[evident_extract::mail::message_key("huge@acme.io")],
            )
            .await
            .expect("node");
    let skipped = node[0].props["skippedAttachments"].to_string();
    assert!(
        skipped.contains("capture.pcap") && skipped.contains("cut off"),
        "{skipped}"
    );
    assert_eq!(node[0].props["truncatedAt"], 1_048_576);
    let pack = h.retrieve("crème brûlée Fridays", &[]).await;
    assert_eq!(pack.items[0].source_urn, "mail:acme.maildir:latin@acme.io");
    assert!(
        pack.items[0].content.contains("café"),
        "{}",
        pack.items[0].content
    );
    let pack = h.retrieve("Revenue grew third quarter", &[]).await;
    assert_eq!(pack.items[0].source_urn, "mail:acme.maildir:cut@acme.io");
}

#[tokio::test]
async fn a_missing_mailbox_is_a_poll_error_and_registration_checks_settings() {
    let h = harness().await;
    let src = h
        .register("mbox", json!({"path": h.dir.path().join("nope.mbox")}))
        .await;
    let err = h.poll(&src.id).await.expect_err("missing");
    assert!(err.to_string().contains("nope.mbox"), "{err}");
    let s = h.source(&src.id).await;
    assert!(s.status.last_error.is_some());
    let bad = evident_indexers::sources::SourceRequest::from_json(
        json!({"clientId": "acme", "path": "relative.mbox"}),
    )
    .expect("req")
    .to_source("mbox", 0)
    .expect_err("relative");
    assert!(bad.to_string().contains("absolute"), "{bad}");
}
