//! The MIME tree: addresses and ids from headers, header blocks, content types and multipart bodies.

use super::*;

pub(super) fn addresses(a: Option<&Address<'_>>) -> Vec<EmailAddress> {
    let mut out = Vec::new();
    let mut push = |name: Option<&str>, email: Option<&str>| {
        let name = name
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(str::to_string);
        let email = email
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(str::to_string);
        if name.is_some() || email.is_some() {
            out.push(EmailAddress { name, email });
        }
    };
    match a {
        Some(Address::List(list)) => {
            for x in list {
                push(x.name.as_deref(), x.address.as_deref());
            }
        }
        Some(Address::Group(groups)) => {
            for g in groups {
                for x in &g.addresses {
                    push(x.name.as_deref(), x.address.as_deref());
                }
            }
        }
        None => {}
    }
    out
}

pub(super) fn id_list(v: &HeaderValue<'_>) -> Vec<String> {
    let clean = |s: &str| s.trim().trim_matches(['<', '>']).to_string();
    match v {
        HeaderValue::Text(t) => t
            .split_whitespace()
            .map(clean)
            .filter(|s| !s.is_empty())
            .collect(),
        HeaderValue::TextList(l) => l
            .iter()
            .map(|s| clean(s))
            .filter(|s| !s.is_empty())
            .collect(),
        _ => Vec::new(),
    }
}

pub(super) static URL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"https?://[^\s<>"'()\[\]{}]+[^\s<>"'()\[\]{}.,;:!?]"#).expect("static regex")
});

/// Header block and body of a message or part (split at the first empty line).
pub(super) fn split_head_body(bytes: &[u8]) -> (&[u8], &[u8]) {
    let mut at = 0;
    for (off, line) in lines_with_offsets(bytes) {
        if trim_eol(line).is_empty() {
            return (&bytes[..off], &bytes[off + line.len()..]);
        }
        at = off + line.len();
    }
    (&bytes[..at], &[])
}

/// Unfolded header fields, names lower-cased.
pub(super) fn header_fields(head: &[u8]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (_, line) in lines_with_offsets(head) {
        let l = String::from_utf8_lossy(trim_eol(line)).to_string();
        if l.starts_with([' ', '\t']) {
            if let Some(last) = out.last_mut() {
                last.1.push(' ');
                last.1.push_str(l.trim());
            }
        } else if let Some((name, value)) = l.split_once(':') {
            out.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
    }
    out
}

/// `type/subtype; a=b; c="d; e"` → (`type/subtype`, params with lower-cased names).
pub(super) fn parse_content_type(value: &str) -> (String, HashMap<String, String>) {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in value.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                cur.push(c);
            }
            ';' if !quoted => parts.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    parts.push(cur);
    let mime = parts
        .first()
        .map(|m| m.trim().to_ascii_lowercase())
        .unwrap_or_default();
    let mut params = HashMap::new();
    for p in parts.iter().skip(1) {
        if let Some((k, v)) = p.split_once('=') {
            let v = v.trim();
            let v = v
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(v);
            params.insert(k.trim().to_ascii_lowercase(), v.to_string());
        }
    }
    (mime, params)
}

/// The body parts of a multipart body, between `--boundary` delimiter lines.
pub(super) fn split_multipart<'a>(body: &'a [u8], boundary: &str) -> Vec<&'a [u8]> {
    let delim = format!("--{boundary}");
    let mut parts = Vec::new();
    let mut start: Option<usize> = None;
    for (off, line) in lines_with_offsets(body) {
        let l = trim_eol(line);
        if l.starts_with(delim.as_bytes()) {
            let rest = &l[delim.len()..];
            let closing = rest.starts_with(b"--");
            if closing || rest.iter().all(u8::is_ascii_whitespace) {
                if let Some(s) = start {
                    // The line break before a delimiter belongs to the delimiter.
                    let mut end = off;
                    if end > s && body[end - 1] == b'\n' {
                        end -= 1;
                        if end > s && body[end - 1] == b'\r' {
                            end -= 1;
                        }
                    }
                    parts.push(&body[s..end.max(s)]);
                }
                if closing {
                    return parts;
                }
                start = Some(off + line.len());
            }
        }
    }
    // No closing delimiter (a truncated message): keep what was there.
    if let Some(s) = start {
        parts.push(&body[s..]);
    }
    parts
}

/// One MIME entity with its place in the tree.
pub(super) struct Node<'a> {
    pub(super) number: String,
    pub(super) content_type: String,
    pub(super) head: &'a [u8],
    pub(super) body: &'a [u8],
    pub(super) attachment: bool,
    pub(super) children: Vec<Node<'a>>,
}

/// Deepest nesting followed (hostile input must not exhaust the stack).
pub(super) const MAX_DEPTH: usize = 32;

pub(super) fn parse_node<'a>(bytes: &'a [u8], number: String, depth: usize) -> Node<'a> {
    let (head, body) = split_head_body(bytes);
    let fields = header_fields(head);
    let get = |name: &str| {
        fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    let (mut content_type, params) = get("content-type")
        .map(parse_content_type)
        .unwrap_or_default();
    if content_type.is_empty() || !content_type.contains('/') {
        content_type = "text/plain".into();
    }
    let disposition = get("content-disposition").map(parse_content_type);
    let attachment = disposition
        .as_ref()
        .is_some_and(|(d, p)| d == "attachment" || p.contains_key("filename"))
        || params.contains_key("name");
    let child_number = |i: usize| {
        if number.is_empty() {
            (i + 1).to_string()
        } else {
            format!("{number}.{}", i + 1)
        }
    };
    let children = if depth >= MAX_DEPTH {
        Vec::new()
    } else if content_type.starts_with("multipart/") {
        match params.get("boundary").filter(|b| !b.is_empty()) {
            Some(b) => split_multipart(body, b)
                .into_iter()
                .enumerate()
                .map(|(i, part)| parse_node(part, child_number(i), depth + 1))
                .collect(),
            None => Vec::new(),
        }
    } else if content_type == "message/rfc822" || content_type == "message/global" {
        // The nested message's root carries this part's number (IMAP numbering).
        let inner = parse_node(body, number.clone(), depth + 1);
        let inner_root_number = if inner.content_type.starts_with("multipart/") {
            number.clone()
        } else {
            child_number(0)
        };
        vec![Node {
            number: inner_root_number,
            ..inner
        }]
    } else {
        Vec::new()
    };
    Node {
        number,
        content_type,
        head,
        body,
        attachment,
        children,
    }
}

pub(super) fn structure_of(n: &Node<'_>) -> MimeNode {
    MimeNode {
        content_type: n.content_type.clone(),
        children: n.children.iter().map(structure_of).collect(),
    }
}
