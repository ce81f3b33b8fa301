//! Leaves decoded: transfer encoding and charset (mislabelled UTF-8 recovered), as text, HTML or bytes.

use super::*;

/// A leaf decoded by mail-parser (transfer encoding, charset): text, HTML, or bytes, and the
/// attachment name (RFC 2047/2231 decoded).
pub(super) enum Decoded {
    Text(String),
    Html(String),
    Bytes(Vec<u8>),
}

/// Charset labels that mislabelled UTF-8 usually carries (a client that writes UTF-8 and
/// declares its locale's legacy charset).
pub(super) const LEGACY_LABELS: [&str; 6] = [
    "iso-8859-1",
    "iso-8859-15",
    "latin1",
    "windows-1252",
    "us-ascii",
    "ascii",
];

/// The `charset=` label of a leaf's header, lower-cased.
pub(super) fn declared_charset(head: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(head).to_ascii_lowercase();
    let at = text.find("charset=")? + "charset=".len();
    let value: String = text[at..]
        .trim_start_matches('"')
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
        .collect();
    (!value.is_empty()).then_some(value)
}

/// The same leaf with its charset label replaced by UTF-8.
pub(super) fn relabelled_utf8(head: &[u8], label: &str) -> Vec<u8> {
    let text = String::from_utf8_lossy(head);
    let lower = text.to_ascii_lowercase();
    match lower
        .find(&format!("charset={label}"))
        .or_else(|| lower.find(&format!("charset=\"{label}")))
    {
        Some(at) => {
            let end = at + lower[at..].find(label).unwrap_or(0) + label.len();
            format!(
                "{}charset=utf-8{}",
                &text[..at],
                &text[end..].trim_start_matches('"')
            )
            .into_bytes()
        }
        None => head.to_vec(),
    }
}

pub(super) fn decode_leaf(n: &Node<'_>) -> (Decoded, Option<String>) {
    let (decoded, name) = decode_leaf_as(n.head, n.body);
    // Mislabelled UTF-8: declared a legacy single-byte charset, yet the bytes are valid UTF-8
    // with non-ASCII text (real Latin-1 text is almost never valid UTF-8). Read as UTF-8.
    if let (Decoded::Text(t) | Decoded::Html(t), Some(label)) = (&decoded, declared_charset(n.head))
        && LEGACY_LABELS.contains(&label.as_str())
        && !t.is_ascii()
    {
        let head = relabelled_utf8(n.head, &label);
        if let (Decoded::Text(u) | Decoded::Html(u), _) = decode_leaf_as(&head, n.body)
            && !u.contains('\u{fffd}')
            && u != *t
        {
            let again = match decoded {
                Decoded::Html(_) => Decoded::Html(u),
                _ => Decoded::Text(u),
            };
            return (again, name);
        }
    }
    (decoded, name)
}

pub(super) fn decode_leaf_as(head: &[u8], body: &[u8]) -> (Decoded, Option<String>) {
    let mut mini = Vec::with_capacity(head.len() + body.len() + 4);
    mini.extend_from_slice(head);
    mini.extend_from_slice(b"\r\n");
    mini.extend_from_slice(body);
    let parsed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        MessageParser::default().parse(&mini)
    }))
    .ok()
    .flatten();
    let Some(msg) = parsed else {
        return (Decoded::Bytes(body.to_vec()), None);
    };
    let Some(part) = msg.parts.first() else {
        return (Decoded::Bytes(body.to_vec()), None);
    };
    let name = part.attachment_name().map(str::to_string);
    let decoded = match &part.body {
        PartType::Text(t) => Decoded::Text(t.to_string()),
        PartType::Html(h) => Decoded::Html(h.to_string()),
        _ => Decoded::Bytes(part.contents().to_vec()),
    };
    (decoded, name)
}
