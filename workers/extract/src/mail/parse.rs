//! A message parsed: its text parts, attachments, links and structure.

use super::*;

/// Collects the readable text and the attachments of an entity tree.
pub(super) fn collect(
    n: &Node<'_>,
    texts: &mut Vec<TextPart>,
    attachments: &mut Vec<Attachment>,
    links: &mut Vec<String>,
) {
    let ct = n.content_type.as_str();
    if ct == "multipart/alternative" {
        // The plain text if there is one, else the richest other alternative.
        let pick = n
            .children
            .iter()
            .find(|c| c.content_type == "text/plain")
            .or_else(|| n.children.iter().find(|c| c.content_type == "text/html"))
            .or_else(|| n.children.last());
        if let Some(c) = pick {
            collect(c, texts, attachments, links);
        }
        return;
    }
    if ct.starts_with("multipart/") {
        for c in &n.children {
            collect(c, texts, attachments, links);
        }
        return;
    }
    if ct == "message/rfc822" || ct == "message/global" {
        collect_forwarded(n, texts, attachments, links);
        return;
    }
    collect_leaf(n, texts, attachments, links);
}

/// A message forwarded inside another (`message/rfc822`): one text part of its From, To and
/// Subject over its own texts; its attachments and links join the outer message's.
fn collect_forwarded(
    n: &Node<'_>,
    texts: &mut Vec<TextPart>,
    attachments: &mut Vec<Attachment>,
    links: &mut Vec<String>,
) {
    if let Some(inner) = n.children.first() {
        let fields = header_fields(inner.head);
        let get = |name: &str| {
            fields
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        let mut head = String::new();
        for (label, key) in [("From", "from"), ("To", "to"), ("Subject", "subject")] {
            if let Some(v) = get(key) {
                head.push_str(&format!("{label}: {}\n", decode_header_text(&v)));
            }
        }
        let mut inner_texts = Vec::new();
        collect(inner, &mut inner_texts, attachments, links);
        let body: String = inner_texts
            .iter()
            .map(|t| t.text.as_str())
            .collect::<Vec<_>>()
            .join("\n\n");
        if !(head.is_empty() && body.trim().is_empty()) {
            texts.push(TextPart {
                part: n.number.clone(),
                text: format!("{head}\n{body}"),
            });
        }
    }
}

/// A leaf part: inline text or HTML (converted, its links kept) as a text part, anything
/// else an attachment.
fn collect_leaf(
    n: &Node<'_>,
    texts: &mut Vec<TextPart>,
    attachments: &mut Vec<Attachment>,
    links: &mut Vec<String>,
) {
    let ct = n.content_type.as_str();
    let (decoded, name) = decode_leaf(n);
    let inline_text =
        !n.attachment && (ct == "text/plain" || ct == "text/html" || ct == "text/enriched");
    match decoded {
        Decoded::Text(t) if inline_text => {
            if !t.trim().is_empty() {
                texts.push(TextPart {
                    part: n.number.clone(),
                    text: t,
                });
            }
        }
        Decoded::Html(h) if inline_text => {
            let converted = html_to_text(&h);
            links.extend(converted.links);
            if !converted.text.trim().is_empty() {
                texts.push(TextPart {
                    part: n.number.clone(),
                    text: converted.text,
                });
            }
        }
        other => {
            let data = match other {
                Decoded::Text(t) | Decoded::Html(t) => t.into_bytes(),
                Decoded::Bytes(b) => b,
            };
            attachments.push(Attachment {
                part: n.number.clone(),
                filename: name,
                content_type: n.content_type.clone(),
                data,
            });
        }
    }
}

/// RFC 2047 words in a header value, decoded (through mail-parser).
pub(super) fn decode_header_text(v: &str) -> String {
    let mini = format!("Subject: {v}\r\n\r\n");
    MessageParser::default()
        .parse(mini.as_bytes())
        .and_then(|m| m.subject().map(str::to_string))
        .unwrap_or_else(|| v.to_string())
}

/// `Mon, 3 Jun 1996 …` → `Mon, 03 Jun 1996 …` (both are RFC 5322; most mailers pad).
pub(super) fn pad_day(date: &str) -> String {
    match date.split_once(", ") {
        Some((dow, rest)) if rest.as_bytes().get(1) == Some(&b' ') => format!("{dow}, 0{rest}"),
        _ => date.to_string(),
    }
}

/// Parses one RFC 5322 / MIME message. The entity tree is walked here (boundaries, nested
/// messages, numbering); mail-parser decodes headers (RFC 2047, addresses, dates) and each
/// leaf's transfer encoding and charset. (Its own tree walk loses parts after deeply nested
/// `message/rfc822` entities in 0.11, which real mail has.)
pub fn parse_email(raw: &[u8]) -> Result<Email, MailError> {
    let raw = raw.strip_prefix(b"\xef\xbb\xbf").unwrap_or(raw);
    if raw.iter().all(u8::is_ascii_whitespace) {
        return Err(MailError::Unparsable("empty".into()));
    }
    let (head, _) = split_head_body(raw);
    if header_fields(head).is_empty() {
        return Err(MailError::Unparsable("no header section".into()));
    }
    let mut head_only = head.to_vec();
    head_only.extend_from_slice(b"\r\n");
    // A third-party parser's panic on hostile input must not take the indexer down with it.
    let parsed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        MessageParser::default().parse(&head_only)
    }))
    .map_err(|_| MailError::Unparsable("the header parser failed on this message".into()))?;
    let msg = parsed.ok_or_else(|| MailError::Unparsable("no header section".into()))?;

    let root_ct = header_fields(head)
        .into_iter()
        .find(|(n, _)| n == "content-type")
        .map(|(_, v)| parse_content_type(&v).0)
        .unwrap_or_default();
    let tree = parse_node(
        raw,
        if root_ct.starts_with("multipart/") {
            String::new()
        } else {
            "1".into()
        },
        0,
    );
    let structure = structure_of(&tree);
    let (mut texts, mut attachments, mut links) = (Vec::new(), Vec::new(), Vec::new());
    collect(&tree, &mut texts, &mut attachments, &mut links);
    for t in &texts {
        links.extend(URL.find_iter(&t.text).map(|m| m.as_str().to_string()));
    }
    let mut seen = std::collections::HashSet::new();
    links.retain(|l| {
        (l.starts_with("http://") || l.starts_with("https://")) && seen.insert(l.clone())
    });

    let message_id = msg
        .message_id()
        .map(|m| m.trim().trim_matches(['<', '>']).to_string())
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| {
            let h = content_hash(&String::from_utf8_lossy(raw));
            format!("evident-{}", &h[7..31])
        });
    Ok(Email {
        message_id,
        subject: msg.subject().map(|s| s.trim().to_string()),
        from: addresses(msg.from()),
        to: addresses(msg.to()),
        cc: addresses(msg.cc()),
        date: msg.date().map(|d| d.to_rfc3339()),
        date_rfc822: msg.date().map(|d| pad_day(&d.to_rfc822())),
        in_reply_to: id_list(msg.in_reply_to()),
        references: id_list(msg.references()),
        texts,
        attachments,
        links,
        structure,
    })
}
