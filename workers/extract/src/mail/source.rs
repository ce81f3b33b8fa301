//! A message as prepared sources: keys and URNs, thread, people, links, and attachments as documents.

use super::*;

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

/// Most ids of a message's ancestry kept: the first (the root, which RFC 5322 §3.6.4 has
/// mailers keep when they shorten `References`) and the last ones.
pub const MAX_ANCESTORS: usize = 256;

/// The message's ancestry as JWZ threading reads it (and notmuch and mutt with it): every id
/// of `References` in order, oldest first, then the `In-Reply-To` ids not among them (mailers
/// that write only `In-Reply-To`); without the message's own id or repeats. Ancestors that
/// were never received are placeholders: they still join the message to its thread.
pub fn ancestors(e: &Email) -> Vec<&str> {
    let mut seen = std::collections::HashSet::from([e.message_id.as_str()]);
    let mut out: Vec<&str> = e
        .references
        .iter()
        .chain(&e.in_reply_to)
        .map(String::as_str)
        .filter(|id| !id.is_empty() && seen.insert(id))
        .collect();
    if out.len() > MAX_ANCESTORS {
        out.drain(1..out.len() - (MAX_ANCESTORS - 1));
    }
    out
}

/// The thread's root as far as this message knows: its oldest ancestor, else itself. The
/// thread node is keyed by it whether or not the root was received; messages that know
/// different roots of one thread are merged by [`thread_keys`].
pub fn thread_root(e: &Email) -> &str {
    ancestors(e)
        .first()
        .copied()
        .unwrap_or(e.message_id.as_str())
}

/// The thread keys this message ties together, most senior first: its ancestors' (received or
/// not) and its own. Written as one identity (`PreparedSource::merges`), so the thread is the
/// union of every message's ancestry — what JWZ threading computes with placeholder
/// containers — whatever order the messages arrive in.
///
/// Why the state lives in the alias registry: messages are extracted one queue task at a time,
/// in any order, across polls and restarts, by any worker; no task sees the others. Each
/// `thread:{id}` key of an ancestry is an identity in the registry (the same one that joins a
/// person's names and addresses), and each message merges the keys it knows into one canonical
/// key. Two partial chains that meet later (a reply whose parent was absent, then the parent
/// naming the root) merge their canonical keys then, and the thread node written under the
/// junior key is folded into the senior one (`GraphStore::fold_node`).
pub fn thread_keys(e: &Email) -> Vec<NodeKey> {
    let mut seen = std::collections::HashSet::new();
    ancestors(e)
        .into_iter()
        .chain(std::iter::once(e.message_id.as_str()))
        .map(thread_key)
        .filter(|k| seen.insert(k.clone()))
        .collect()
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
    let person_keys = person_keys(e);
    let header = header_text(e);
    let mut chunks = vec![header_chunk(e, ctx, &header, &msg_key, &person_keys)];
    let redacted = push_body_chunks(e, ctx, &msg_key, &mut chunks);
    let attachments = attachment_sources(e, ctx, &urn);

    let mut graph = Graph {
        nodes: vec![message_node(e, ctx, &attachments.skipped)],
        ..Graph::default()
    };
    graph.add_people(&msg_key, &person_keys);
    graph.add_thread(e, &msg_key);
    graph.add_links(e, &msg_key, &chunks);
    for att in &attachments.keys {
        // The attachment's node is evidenced by its own source; the message names it.
        graph.edges.push(edge(
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
        fingerprint: fingerprint(e, ctx, redacted, &header, &attachments),
        observed_at: e.date.clone(),
        chunks,
        nodes: graph.nodes,
        edges: graph.edges,
        aliases: graph.aliases,
        merges: Some(thread_keys(e))
            .filter(|k| k.len() > 1)
            .into_iter()
            .collect(),
    }];
    out.extend(attachments.sources);
    out
}

/// The people a message names, with how (`sent_by`, `sent_to`, `cc`) and their node keys:
/// senders, then recipients, then copies; addresses without a usable key are left out.
fn person_keys(e: &Email) -> Vec<(&'static str, NodeKey, &EmailAddress)> {
    let people = (e.from.iter().map(|a| ("sent_by", a)))
        .chain(e.to.iter().map(|a| ("sent_to", a)))
        .chain(e.cc.iter().map(|a| ("cc", a)));
    people
        .filter_map(|(rel, a)| {
            keys::person(a.name.as_deref(), a.email.as_deref()).map(|k| (rel, k, a))
        })
        .collect()
}

/// The message's header lines (`From`, `To`, `Cc`, `Date`, `Subject`), each ending in a newline.
fn header_text(e: &Email) -> String {
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
    header
}

/// Chunk 0: the header, so who wrote to whom, when, about what is itself citable. It refers
/// to the message and to every person named.
fn header_chunk(
    e: &Email,
    ctx: &MailContext<'_>,
    header: &str,
    msg_key: &NodeKey,
    person_keys: &[(&str, NodeKey, &EmailAddress)],
) -> PreparedChunk {
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
    head
}

/// Appends the chunks of the message's text parts (secrets redacted), each referring to the
/// message and to what its text names. Whether anything was redacted.
fn push_body_chunks(
    e: &Email,
    ctx: &MailContext<'_>,
    msg_key: &NodeKey,
    chunks: &mut Vec<PreparedChunk>,
) -> bool {
    let mut redacted = false;
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
    redacted
}

/// A message's attachments: the sources of those extracted, their node keys, and why the
/// others were not (`name: reason`).
struct Attachments {
    sources: Vec<PreparedSource>,
    keys: Vec<NodeKey>,
    skipped: Vec<String>,
}

/// Extracts each attachment as a document source of its own, or says why it was skipped.
fn attachment_sources(e: &Email, ctx: &MailContext<'_>, urn: &str) -> Attachments {
    let mut out = Attachments {
        sources: Vec::new(),
        keys: Vec::new(),
        skipped: Vec::new(),
    };
    for (i, a) in e.attachments.iter().enumerate() {
        let name = a
            .filename
            .clone()
            .unwrap_or_else(|| format!("part {}", a.part));
        let cut_off = ctx.truncated_at.filter(|_| i + 1 == e.attachments.len());
        if let Some(limit) = cut_off {
            out.skipped.push(format!(
                "{name}: cut off (the message is larger than the {limit}-byte limit)"
            ));
            continue;
        }
        if let Some(why) = attachment_skip(a, ctx.max_attachment_bytes) {
            out.skipped.push(format!("{name}: {why}"));
            continue;
        }
        let format = Format::from_mime(&a.content_type)
            .or_else(|| a.filename.as_deref().and_then(Format::from_name))
            .unwrap_or(Format::Text);
        let doc = match extract(format, &a.data) {
            Ok(d) => d,
            Err(err) => {
                out.skipped.push(format!("{name}: {err}"));
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
            out.keys.push(att_key);
            out.sources.push(src);
        }
    }
    out
}

/// The message's own node: id, subject, date, mailbox, links, truncation and skipped
/// attachments, evidenced by all its chunks.
fn message_node(e: &Email, ctx: &MailContext<'_>, skipped_attachments: &[String]) -> PreparedNode {
    PreparedNode {
        key: message_key(&e.message_id),
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
                    Value::from(skipped_attachments.to_vec())
                },
            ),
        ]),
        evidence: EvidenceSpec::AllChunks,
    }
}

/// An edge without properties.
fn edge(from: &NodeKey, t: &str, to: NodeKey, evidence: EvidenceSpec) -> PreparedEdge {
    PreparedEdge {
        from: from.clone(),
        to,
        edge_type: t.into(),
        props: Map::new(),
        evidence,
    }
}

/// The nodes, edges and aliases of the message's source, built up in order.
#[derive(Default)]
struct Graph {
    nodes: Vec<PreparedNode>,
    edges: Vec<PreparedEdge>,
    aliases: Vec<(NodeKey, NodeKey)>,
}

impl Graph {
    /// A node per person named, their aliases, and an edge from the message saying how.
    fn add_people(&mut self, msg_key: &NodeKey, person_keys: &[(&str, NodeKey, &EmailAddress)]) {
        for (rel, key, a) in person_keys {
            self.nodes.push(PreparedNode {
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
                self.aliases
                    .extend(keys::person_aliases(key, a.name.as_deref(), &[]));
            }
            self.edges
                .push(edge(msg_key, rel, key.clone(), EvidenceSpec::chunk(0)));
        }
    }

    /// `replies_to` from the message to its parent and along its `References` chain, and
    /// `in_thread` to its thread.
    fn add_thread(&mut self, e: &Email, msg_key: &NodeKey) {
        if let Some(parent) = parent_of(e) {
            self.edges.push(edge(
                msg_key,
                "replies_to",
                message_key(parent),
                EvidenceSpec::chunk(0),
            ));
        }
        // JWZ's placeholder containers: `References` is the chain from the root down, so each
        // of its ids answers the one before it, received or not (an absent message is a
        // `message` node evidenced by the header that names it).
        let mut seen = std::collections::HashSet::from([e.message_id.as_str()]);
        let chain: Vec<&str> = (e.references.iter().map(String::as_str))
            .filter(|id| !id.is_empty() && seen.insert(id))
            .collect();
        for pair in chain.windows(2).take(MAX_ANCESTORS) {
            self.edges.push(edge(
                &message_key(pair[1]),
                "replies_to",
                message_key(pair[0]),
                EvidenceSpec::chunk(0),
            ));
        }
        self.edges.push(edge(
            msg_key,
            "in_thread",
            thread_key(thread_root(e)),
            EvidenceSpec::chunk(0),
        ));
    }

    /// A `url` node per link (the first 200), evidenced by the first chunk that contains it,
    /// and `links_to` from the message.
    fn add_links(&mut self, e: &Email, msg_key: &NodeKey, chunks: &[PreparedChunk]) {
        for link in e.links.iter().take(200) {
            if let Some(url_key) = refs::normalize_ref(&format!("url:{link}")) {
                let at = chunks
                    .iter()
                    .position(|c| c.text.contains(link.as_str()))
                    .unwrap_or(0);
                self.nodes.push(PreparedNode {
                    key: url_key.clone(),
                    node_type: "url".into(),
                    label: link.clone(),
                    props: props([("url", link.clone().into())]),
                    evidence: EvidenceSpec::chunk(at),
                });
                self.edges
                    .push(edge(msg_key, "links_to", url_key, EvidenceSpec::chunk(at)));
            }
        }
    }
}

/// The message source's fingerprint: what it was prepared from, so a change to any of it
/// (or to the preparation, `MAIL_VERSION`) re-ingests it.
fn fingerprint(
    e: &Email,
    ctx: &MailContext<'_>,
    redacted: bool,
    header: &str,
    attachments: &Attachments,
) -> String {
    content_hash(&format!(
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
            &attachments.skipped,
            &attachments.keys
        ),
        ctx.truncated_at
    ))
}
