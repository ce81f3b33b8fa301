//! E-mail: mbox splitting (mboxo, mboxrd, Content-Length), MIME parsing (mail-parser:
//! charsets, RFC 2047 headers, multipart, nested messages), and a message as prepared sources —
//! the message with its header and body chunks (`{messageId, mailbox, part, charStart,
//! charEnd}`), its people, its thread, its links, and each attachment as a document.

use std::collections::HashMap;
use std::sync::LazyLock;

use evident_core::chunking::{ChunkingConfig, chunk_text};
use evident_core::hashing::content_hash;
use evident_core::prepared::props;
use evident_core::secrets::redact;
use evident_core::{
    EvidenceSpec, Locator, NodeKey, PreparedChunk, PreparedEdge, PreparedNode, PreparedSource,
    Scope, keys, refs,
};
use mail_parser::{Address, HeaderValue, MessageParser, MimeHeaders, PartType};
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::document::{DocumentMeta, Format, document_source, extract};
use crate::html::html_to_text;

/// Bump when what a message becomes changes.
pub const MAIL_VERSION: &str = "mail-v1";

/// One message of an mbox file: its envelope line (`From sender date`) and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MboxEntry {
    pub envelope: String,
    /// Byte offset of the envelope line in the file.
    pub offset: usize,
    pub bytes: Vec<u8>,
}

fn lines_with_offsets(data: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at >= data.len() {
            return None;
        }
        let end = data[at..]
            .iter()
            .position(|b| *b == b'\n')
            .map_or(data.len(), |i| at + i + 1);
        let line = (at, &data[at..end]);
        at = end;
        Some(line)
    })
}

fn trim_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Splits an mbox file into messages. A message starts at a line beginning `From `; a
/// `Content-Length` header is trusted when it lands on the next `From ` line (mboxcl2 bodies
/// may contain unescaped `From ` lines) and ignored otherwise (real files carry wrong ones);
/// `>From`-quoted lines (mboxrd, mboxo) lose one `>`.
pub fn split_mbox(data: &[u8]) -> Vec<MboxEntry> {
    let data = data.strip_prefix(b"\xef\xbb\xbf").unwrap_or(data);
    let starts_message = |at: usize| data[at..].starts_with(b"From ");
    let mut out = Vec::new();
    // Find the first envelope.
    let mut pos = match lines_with_offsets(data).find(|(at, _)| starts_message(*at)) {
        Some((at, _)) => at,
        None => return out,
    };
    while pos < data.len() {
        let env_end = data[pos..]
            .iter()
            .position(|b| *b == b'\n')
            .map_or(data.len(), |i| pos + i + 1);
        let envelope = String::from_utf8_lossy(trim_eol(&data[pos..env_end])).to_string();
        let start = env_end;
        // Headers end at the first blank line.
        let mut headers_end = data.len();
        let mut content_length: Option<usize> = None;
        for (at, line) in lines_with_offsets(&data[start..]) {
            let l = trim_eol(line);
            if l.is_empty() {
                headers_end = start + at + line.len();
                break;
            }
            if l.len() > 15 && l[..15].eq_ignore_ascii_case(b"content-length:") {
                content_length = String::from_utf8_lossy(&l[15..]).trim().parse().ok();
            }
        }
        // Where the next message begins.
        let by_length = content_length.and_then(|n| {
            let end = headers_end.checked_add(n)?;
            if end > data.len() {
                return None;
            }
            let mut next = end;
            while next < data.len() && (data[next] == b'\n' || data[next] == b'\r') {
                next += 1;
            }
            (next == data.len() || starts_message(next)).then_some((end, next))
        });
        let (end, next) = by_length.unwrap_or_else(|| {
            // Without a trustworthy length, every line starting `From ` begins a message (the
            // mbox rule; writers escape such lines in bodies as `>From `).
            let next = lines_with_offsets(&data[headers_end..])
                .map(|(at, _)| headers_end + at)
                .find(|abs| starts_message(*abs))
                .unwrap_or(data.len());
            (next, next)
        });
        let mut bytes = Vec::with_capacity(end.saturating_sub(start));
        let body_from = headers_end.min(end);
        bytes.extend_from_slice(&data[start..body_from]);
        for (_, line) in lines_with_offsets(&data[body_from..end]) {
            let quoted = line.iter().take_while(|b| **b == b'>').count();
            if quoted > 0 && line[quoted..].starts_with(b"From ") && content_length.is_none() {
                bytes.extend_from_slice(&line[1..]);
            } else {
                bytes.extend_from_slice(line);
            }
        }
        out.push(MboxEntry {
            envelope,
            offset: pos,
            bytes,
        });
        pos = next.max(env_end);
    }
    out
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmailAddress {
    pub name: Option<String>,
    pub email: Option<String>,
}

impl EmailAddress {
    /// `"Name" <addr>`, `addr`, or `Name`.
    pub fn render(&self) -> String {
        match (&self.name, &self.email) {
            (Some(n), Some(e)) => format!("\"{n}\" <{e}>"),
            (None, Some(e)) => e.clone(),
            (Some(n), None) => n.clone(),
            (None, None) => String::new(),
        }
    }
}

/// The MIME structure: a content type and the parts inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MimeNode {
    pub content_type: String,
    pub children: Vec<MimeNode>,
}

/// A body (or nested message body) as text, with its MIME part number (`1`, `2.1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextPart {
    pub part: String,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    pub part: String,
    pub filename: Option<String>,
    pub content_type: String,
    pub data: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Email {
    /// Without angle brackets; synthesised from the content when the message has none.
    pub message_id: String,
    pub subject: Option<String>,
    pub from: Vec<EmailAddress>,
    pub to: Vec<EmailAddress>,
    pub cc: Vec<EmailAddress>,
    /// RFC 3339.
    pub date: Option<String>,
    /// As RFC 5322 writes it (`Fri, 26 Sep 2025 10:18:40 -0700`).
    pub date_rfc822: Option<String>,
    pub in_reply_to: Vec<String>,
    pub references: Vec<String>,
    pub texts: Vec<TextPart>,
    pub attachments: Vec<Attachment>,
    pub links: Vec<String>,
    pub structure: MimeNode,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MailError {
    #[error("not an e-mail message: {0}")]
    Unparsable(String),
}

fn addresses(a: Option<&Address<'_>>) -> Vec<EmailAddress> {
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

fn id_list(v: &HeaderValue<'_>) -> Vec<String> {
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

static URL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"https?://[^\s<>"'()\[\]{}]+[^\s<>"'()\[\]{}.,;:!?]"#).expect("static regex")
});

/// Header block and body of a message or part (split at the first empty line).
fn split_head_body(bytes: &[u8]) -> (&[u8], &[u8]) {
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
fn header_fields(head: &[u8]) -> Vec<(String, String)> {
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
fn parse_content_type(value: &str) -> (String, HashMap<String, String>) {
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
fn split_multipart<'a>(body: &'a [u8], boundary: &str) -> Vec<&'a [u8]> {
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
struct Node<'a> {
    number: String,
    content_type: String,
    head: &'a [u8],
    body: &'a [u8],
    attachment: bool,
    children: Vec<Node<'a>>,
}

/// Deepest nesting followed (hostile input must not exhaust the stack).
const MAX_DEPTH: usize = 32;

fn parse_node<'a>(bytes: &'a [u8], number: String, depth: usize) -> Node<'a> {
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

fn structure_of(n: &Node<'_>) -> MimeNode {
    MimeNode {
        content_type: n.content_type.clone(),
        children: n.children.iter().map(structure_of).collect(),
    }
}

/// A leaf decoded by mail-parser (transfer encoding, charset): text, HTML, or bytes, and the
/// attachment name (RFC 2047/2231 decoded).
enum Decoded {
    Text(String),
    Html(String),
    Bytes(Vec<u8>),
}

/// Charset labels that mislabelled UTF-8 usually carries (a client that writes UTF-8 and
/// declares its locale's legacy charset).
const LEGACY_LABELS: [&str; 6] = [
    "iso-8859-1",
    "iso-8859-15",
    "latin1",
    "windows-1252",
    "us-ascii",
    "ascii",
];

/// The `charset=` label of a leaf's header, lower-cased.
fn declared_charset(head: &[u8]) -> Option<String> {
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
fn relabelled_utf8(head: &[u8], label: &str) -> Vec<u8> {
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

fn decode_leaf(n: &Node<'_>) -> (Decoded, Option<String>) {
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

fn decode_leaf_as(head: &[u8], body: &[u8]) -> (Decoded, Option<String>) {
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

/// Collects the readable text and the attachments of an entity tree.
fn collect(
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
        return;
    }
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
fn decode_header_text(v: &str) -> String {
    let mini = format!("Subject: {v}\r\n\r\n");
    MessageParser::default()
        .parse(mini.as_bytes())
        .and_then(|m| m.subject().map(str::to_string))
        .unwrap_or_else(|| v.to_string())
}

/// `Mon, 3 Jun 1996 …` → `Mon, 03 Jun 1996 …` (both are RFC 5322; most mailers pad).
fn pad_day(date: &str) -> String {
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

/// Where a message was read, and how it is stored.
pub struct MailContext<'a> {
    pub scope: &'a Scope,
    /// The registered source's id (URNs: `mail:{source}:{message-id}`).
    pub source_id: &'a str,
    /// Mailbox or folder name (`INBOX`, `archive.mbox`).
    pub mailbox: &'a str,
    /// Attachments larger than this are not extracted (their name is still listed).
    pub max_attachment_bytes: usize,
    pub chunking: &'a ChunkingConfig,
    /// Set when only the first this-many bytes of the message were read (it was over the
    /// source's size limit): the last attachment is then incomplete and is not extracted.
    pub truncated_at: Option<u64>,
}

pub fn message_urn(source_id: &str, message_id: &str) -> String {
    format!("mail:{source_id}:{message_id}")
}

pub fn message_key(message_id: &str) -> NodeKey {
    refs::normalize_ref(&format!("message:{message_id}"))
        .unwrap_or_else(|| NodeKey::from_canonical("message"))
}

pub fn thread_key(root_id: &str) -> NodeKey {
    refs::normalize_ref(&format!("thread:{root_id}"))
        .unwrap_or_else(|| NodeKey::from_canonical("thread"))
}

/// The message a reply answers: the last `In-Reply-To` id, else the last of `References`.
pub fn parent_of(e: &Email) -> Option<&str> {
    e.in_reply_to
        .last()
        .or(e.references.last())
        .map(String::as_str)
}

/// The thread's root: the first of `References`, else the parent, else the message itself.
pub fn thread_root(e: &Email) -> &str {
    e.references
        .first()
        .or(e.in_reply_to.first())
        .map_or(e.message_id.as_str(), String::as_str)
}

/// Why an attachment was not extracted, if it was not.
pub fn attachment_skip(a: &Attachment, max_bytes: usize) -> Option<String> {
    if a.data.len() > max_bytes {
        return Some(format!(
            "{} bytes, over the {max_bytes}-byte limit",
            a.data.len()
        ));
    }
    let format = Format::from_mime(&a.content_type)
        .or_else(|| a.filename.as_deref().and_then(Format::from_name));
    format
        .is_none()
        .then(|| format!("{} is not a document type Evident reads", a.content_type))
}

/// A message as prepared sources: the message itself, then one per extracted attachment.
/// Attachments that cannot be read are listed on the message (`skippedAttachments`), not lost.
pub fn email_sources(e: &Email, ctx: &MailContext<'_>) -> Vec<PreparedSource> {
    let msg_key = message_key(&e.message_id);
    let urn = message_urn(ctx.source_id, &e.message_id);
    let mut chunks = Vec::new();
    let mut redacted = false;
    let people: Vec<(&str, &EmailAddress)> = e
        .from
        .iter()
        .map(|a| ("sent_by", a))
        .chain(e.to.iter().map(|a| ("sent_to", a)))
        .chain(e.cc.iter().map(|a| ("cc", a)))
        .collect();
    let mut person_keys: Vec<(&str, NodeKey, &EmailAddress)> = Vec::new();
    for (rel, a) in &people {
        if let Some(k) = keys::person(a.name.as_deref(), a.email.as_deref()) {
            person_keys.push((rel, k, a));
        }
    }

    // Chunk 0: the header, so who wrote to whom, when, about what is itself citable.
    let mut header = String::new();
    for (label, list) in [("From", &e.from), ("To", &e.to), ("Cc", &e.cc)] {
        if !list.is_empty() {
            header.push_str(&format!(
                "{label}: {}\n",
                list.iter()
                    .map(EmailAddress::render)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    if let Some(d) = &e.date_rfc822 {
        header.push_str(&format!("Date: {d}\n"));
    }
    header.push_str(&format!(
        "Subject: {}\n",
        e.subject.as_deref().unwrap_or("(no subject)")
    ));
    let mut head = PreparedChunk::new(
        header.trim_end().to_string(),
        Locator::Email {
            message_id: e.message_id.clone(),
            mailbox: Some(ctx.mailbox.to_string()),
            part: Some("headers".into()),
            char_start: 0,
            char_end: header.trim_end().chars().count(),
        },
    );
    head.refs = std::iter::once(msg_key.clone())
        .chain(person_keys.iter().map(|(_, k, _)| k.clone()))
        .collect();
    head.kind = Some("mail-header".into());
    chunks.push(head);

    for part in &e.texts {
        let text = match redact(&part.text) {
            Some((clean, _)) => {
                redacted = true;
                clean
            }
            None => part.text.clone(),
        };
        for piece in chunk_text(&text, ctx.chunking) {
            let mut c = PreparedChunk::new(
                piece.text.clone(),
                Locator::Email {
                    message_id: e.message_id.clone(),
                    mailbox: Some(ctx.mailbox.to_string()),
                    part: Some(part.part.clone()),
                    char_start: piece.char_start,
                    char_end: piece.char_end,
                },
            );
            c.refs = std::iter::once(msg_key.clone())
                .chain(refs::extract_refs(&piece.text).into_iter().map(|f| f.key))
                .collect();
            c.context = e.subject.clone();
            chunks.push(c);
        }
    }

    let mut skipped_attachments = Vec::new();
    let mut attachment_sources = Vec::new();
    let mut attachment_edges = Vec::new();
    for (i, a) in e.attachments.iter().enumerate() {
        let name = a
            .filename
            .clone()
            .unwrap_or_else(|| format!("part {}", a.part));
        let cut_off = ctx.truncated_at.filter(|_| i + 1 == e.attachments.len());
        if let Some(limit) = cut_off {
            skipped_attachments.push(format!(
                "{name}: cut off (the message is larger than the {limit}-byte limit)"
            ));
            continue;
        }
        if let Some(why) = attachment_skip(a, ctx.max_attachment_bytes) {
            skipped_attachments.push(format!("{name}: {why}"));
            continue;
        }
        let format = Format::from_mime(&a.content_type)
            .or_else(|| a.filename.as_deref().and_then(Format::from_name))
            .unwrap_or(Format::Text);
        let doc = match extract(format, &a.data) {
            Ok(d) => d,
            Err(err) => {
                skipped_attachments.push(format!("{name}: {err}"));
                continue;
            }
        };
        let att_urn = format!("{urn}:attachment:{}", a.part);
        let att_key = refs::normalize_ref(&format!("attachment:{}/{}", e.message_id, a.part))
            .unwrap_or_else(|| NodeKey::from_canonical("attachment"));
        let uri = format!("mid:{}/{}", e.message_id, name);
        let meta = DocumentMeta {
            scope: ctx.scope,
            source_urn: &att_urn,
            uri: &uri,
            kind: "mail-attachment",
            title: Some(&name),
            observed_at: e.date.as_deref(),
            node: Some(att_key.clone()),
        };
        if let Some(src) = document_source(&meta, &doc, ctx.chunking) {
            attachment_edges.push(att_key);
            attachment_sources.push(src);
        }
    }

    let mut nodes = vec![PreparedNode {
        key: msg_key.clone(),
        node_type: "message".into(),
        label: e.subject.clone().unwrap_or_else(|| "(no subject)".into()),
        props: props([
            ("messageId", e.message_id.clone().into()),
            (
                "subject",
                e.subject.clone().map(Value::from).unwrap_or(Value::Null),
            ),
            (
                "date",
                e.date.clone().map(Value::from).unwrap_or(Value::Null),
            ),
            ("mailbox", ctx.mailbox.into()),
            (
                "links",
                if e.links.is_empty() {
                    Value::Null
                } else {
                    Value::from(e.links.clone())
                },
            ),
            (
                "truncatedAt",
                ctx.truncated_at.map(Value::from).unwrap_or(Value::Null),
            ),
            (
                "skippedAttachments",
                if skipped_attachments.is_empty() {
                    Value::Null
                } else {
                    Value::from(skipped_attachments.clone())
                },
            ),
        ]),
        evidence: EvidenceSpec::AllChunks,
    }];
    let mut edges = Vec::new();
    let mut aliases = Vec::new();
    let edge = |from: &NodeKey, t: &str, to: NodeKey, evidence: EvidenceSpec| PreparedEdge {
        from: from.clone(),
        to,
        edge_type: t.into(),
        props: Map::new(),
        evidence,
    };
    for (rel, key, a) in &person_keys {
        nodes.push(PreparedNode {
            key: key.clone(),
            node_type: "person".into(),
            label: a.name.clone().or(a.email.clone()).unwrap_or_default(),
            props: props([
                (
                    "name",
                    a.name.clone().map(Value::from).unwrap_or(Value::Null),
                ),
                (
                    "email",
                    a.email
                        .as_ref()
                        .map(|m| Value::from(m.to_lowercase()))
                        .unwrap_or(Value::Null),
                ),
            ]),
            evidence: EvidenceSpec::chunk(0),
        });
        if a.email.is_some() {
            aliases.extend(keys::person_aliases(key, a.name.as_deref(), &[]));
        }
        edges.push(edge(&msg_key, rel, key.clone(), EvidenceSpec::chunk(0)));
    }
    if let Some(parent) = parent_of(e) {
        edges.push(edge(
            &msg_key,
            "replies_to",
            message_key(parent),
            EvidenceSpec::chunk(0),
        ));
    }
    edges.push(edge(
        &msg_key,
        "in_thread",
        thread_key(thread_root(e)),
        EvidenceSpec::chunk(0),
    ));
    for link in e.links.iter().take(200) {
        if let Some(url_key) = refs::normalize_ref(&format!("url:{link}")) {
            let at = chunks
                .iter()
                .position(|c| c.text.contains(link.as_str()))
                .unwrap_or(0);
            nodes.push(PreparedNode {
                key: url_key.clone(),
                node_type: "url".into(),
                label: link.clone(),
                props: props([("url", link.clone().into())]),
                evidence: EvidenceSpec::chunk(at),
            });
            edges.push(edge(&msg_key, "links_to", url_key, EvidenceSpec::chunk(at)));
        }
    }
    for att in &attachment_edges {
        // The attachment's node is evidenced by its own source; the message names it.
        edges.push(edge(
            &msg_key,
            "has_attachment",
            att.clone(),
            EvidenceSpec::chunk(0),
        ));
    }
    let mut out = vec![PreparedSource {
        scope: ctx.scope.clone(),
        source_urn: urn,
        kind: "mail".into(),
        title: e.subject.clone(),
        fingerprint: content_hash(&format!(
            "{MAIL_VERSION}\0{}\0{redacted}\0{header}\0{}\0{:?}\0{:?}",
            e.message_id,
            e.texts
                .iter()
                .map(|t| t.text.as_str())
                .collect::<Vec<_>>()
                .join("\u{c}"),
            (
                &e.in_reply_to,
                &e.references,
                &skipped_attachments,
                &attachment_edges
            ),
            ctx.truncated_at
        )),
        observed_at: e.date.clone(),
        chunks,
        nodes,
        edges,
        aliases,
    }];
    out.extend(attachment_sources);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const THREAD: &str = "From a@x Mon Jan  5 10:00:00 2026\nMessage-ID: <root@x>\nFrom: Ann <ann@x.io>\nTo: Bob <bob@x.io>\nSubject: Plan\nDate: Mon, 05 Jan 2026 10:00:00 +0000\n\nLet's plan. See https://example.com/plan.\n\nFrom b@x Mon Jan  5 11:00:00 2026\nMessage-ID: <r1@x>\nIn-Reply-To: <root@x>\nReferences: <root@x>\nFrom: Bob <bob@x.io>\nTo: Ann <ann@x.io>\nSubject: Re: Plan\nDate: Mon, 05 Jan 2026 11:00:00 +0000\n\nAgreed.\n>From the archive: quoted.\n\nFrom c@x Mon Jan  5 12:00:00 2026\nMessage-ID: <r2@x>\nIn-Reply-To: <r1@x>\nReferences: <root@x> <r1@x>\nFrom: Cy <cy@x.io>\nSubject: Re: Plan\n\nMe too.\n";

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
        let scope = Scope::client("acme");
        let chunking = ChunkingConfig::default();
        let ctx = MailContext {
            scope: &scope,
            source_id: "acme.mail",
            mailbox: "INBOX",
            max_attachment_bytes: 1 << 20,
            truncated_at: None,
            chunking: &chunking,
        };
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
            "Subject: m\nContent-Type: text/plain; charset=\"ISO-8859-1\"\n\ncrème brûlée"
                .as_bytes();
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
}
