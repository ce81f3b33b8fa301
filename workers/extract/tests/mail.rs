//! Real mail (MimeKit's test data, MIT): the mboxes parse to the structure MimeKit's own
//! summaries describe; ISO-2022-JP decodes; nested messages, digests and reports parse.

use evident_extract::mail::{Email, MimeNode, parse_email, split_mbox};

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/tests/fixtures/mail/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("fixture")
}

fn render(node: &MimeNode, depth: usize, out: &mut String) {
    out.push_str(&format!(
        "{}Content-Type: {}\n",
        "   ".repeat(depth),
        node.content_type
    ));
    for c in &node.children {
        render(c, depth + 1, out);
    }
}

/// MimeKit's summary format: envelope, From, To (omitted when empty), Subject, Date, then the
/// MIME tree.
fn summary(envelope: &str, e: &Email) -> String {
    let list = |v: &[evident_extract::mail::EmailAddress]| {
        v.iter().map(|a| a.render()).collect::<Vec<_>>().join(", ")
    };
    let mut s = format!("{envelope}\nFrom: {}\n", list(&e.from));
    if !e.to.is_empty() {
        s.push_str(&format!("To: {}\n", list(&e.to)));
    }
    s.push_str(&format!(
        "Subject: {}\nDate: {}\n",
        e.subject.as_deref().unwrap_or(""),
        e.date_rfc822.as_deref().unwrap_or("")
    ));
    render(&e.structure, 0, &mut s);
    s
}

/// Compares with MimeKit's summary: the MIME structure (types compared case-insensitively),
/// subject and date exactly; addresses
/// exactly too, except UUCP bang paths, source routes and empty groups (`a!b!c`, `@x:y`,
/// `undisclosed: ;`), forms two parsers may legitimately read differently.
fn check(mbox: &str, expected: &str) {
    let entries = split_mbox(&fixture(mbox));
    let expected = String::from_utf8(fixture(expected)).expect("utf-8");
    let expected: Vec<&str> = expected
        .split("\n\n")
        .map(str::trim_end)
        .filter(|b| !b.trim().is_empty())
        .collect();
    assert_eq!(entries.len(), expected.len(), "{mbox}: message count");
    for (i, (entry, want)) in entries.iter().zip(&expected).enumerate() {
        let e = parse_email(&entry.bytes).expect("parse");
        let got = summary(&entry.envelope, &e);
        // Obsolete or empty forms: UUCP bang paths, source routes, empty groups (`x: ;`).
        let obsolete =
            |l: &str| l.contains('!') || l.contains(": @") || l.trim_end().ends_with(": ;");
        let keep = |l: &&str| !((l.starts_with("From: ") || l.starts_with("To: ")) && obsolete(l));
        let strip = |text: &str| -> Vec<String> {
            // MIME types are case-insensitive (MimeKit keeps the case as written; we lower it).
            text.trim_end()
                .lines()
                .filter(keep)
                .map(|l| {
                    if l.trim_start().starts_with("Content-Type:") {
                        l.to_lowercase()
                    } else {
                        l.to_string()
                    }
                })
                .map(|l| l.replace('"', "").trim_end().to_string())
                .collect()
        };
        let (g, w) = (strip(&got), strip(want));
        if g != w {
            // An obsolete address on one side only: compare without both address lines.
            let no_addr = |v: &[String]| {
                v.iter()
                    .filter(|l| !l.starts_with("From: ") && !l.starts_with("To: "))
                    .cloned()
                    .collect::<Vec<_>>()
            };
            let obsolete_here = got
                .lines()
                .chain(want.lines())
                .any(|l| (l.starts_with("From: ") || l.starts_with("To: ")) && obsolete(l));
            assert!(
                obsolete_here && no_addr(&g) == no_addr(&w),
                "{mbox} message {i}:\n{got}\nvs\n{want}"
            );
        }
    }
}

#[test]
fn the_issue1189_mbox_has_mimekits_structure() {
    check("issue1189.mbox.txt", "issue1189-summary.txt");
}

#[test]
fn the_content_length_mbox_has_mimekits_structure() {
    check("content-length.mbox.txt", "content-length-summary.txt");
}

#[test]
fn iso_2022_jp_decodes_to_japanese() {
    let e = parse_email(&fixture("japanese.txt")).expect("parse");
    let subject = e.subject.clone().expect("subject");
    assert!(
        subject
            .chars()
            .any(|c| ('\u{3040}'..='\u{30ff}').contains(&c)
                || ('\u{4e00}'..='\u{9fff}').contains(&c)),
        "{subject}"
    );
    let body: String = e.texts.iter().map(|t| t.text.as_str()).collect();
    assert!(
        body.chars().any(|c| ('\u{3040}'..='\u{30ff}').contains(&c)),
        "{body}"
    );
}

#[test]
fn nested_digests_reports_and_related_parts_parse() {
    for f in [
        "multipart-digest.txt",
        "multipart-related-mhtml.txt",
        "bounce.txt",
        "delivery-status.txt",
        "rfc2060.txt",
        "issue358.txt",
    ] {
        let e = parse_email(&fixture(f)).unwrap_or_else(|err| panic!("{f}: {err}"));
        assert!(!e.message_id.is_empty(), "{f}");
        assert!(
            !e.texts.is_empty() || !e.attachments.is_empty(),
            "{f}: nothing readable"
        );
    }
}
