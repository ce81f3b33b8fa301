//! The prepared source: an issue as chunks, nodes, edges and aliases.

use super::*;

/// Where an issue comes from.
#[derive(Debug, Clone, Copy)]
pub struct TrackerContext<'a> {
    pub scope: &'a Scope,
    /// The registered source's id (URNs: `tracker:{source}:{key}`).
    pub source_id: &'a str,
    pub chunking: &'a ChunkingConfig,
}

/// A person seen in the issue, and the chunks that show them.
pub(super) struct Seen {
    key: NodeKey,
    who: TrackerPerson,
    chunks: BTreeSet<usize>,
}

/// Builds one issue's chunks while recording who appears where.
pub(super) struct Builder<'a> {
    issue: &'a Issue,
    chunking: &'a ChunkingConfig,
    key: NodeKey,
    numbers: Option<IssueContext>,
    title: String,
    chunks: Vec<PreparedChunk>,
    people: Vec<Seen>,
    /// Comment authors and the chunks of their comments.
    commented: Vec<(NodeKey, Vec<usize>)>,
    /// Issues the description and comments mention.
    mentions: Mentions,
    redacted: bool,
}

impl<'a> Builder<'a> {
    pub(super) fn new(issue: &'a Issue, chunking: &'a ChunkingConfig) -> Self {
        Builder {
            issue,
            chunking,
            key: issue_key(issue),
            numbers: number_context(issue),
            title: exact_line(&format!("{}: {}", display_key(issue), issue.title)),
            chunks: Vec::new(),
            people: Vec::new(),
            commented: Vec::new(),
            mentions: Mentions::default(),
            redacted: false,
        }
    }

    /// Text with credentials redacted (whole lines, like every indexer), noting that it was.
    pub(super) fn clean(&mut self, text: &str) -> String {
        match redact(text) {
            Some((clean, _)) => {
                self.redacted = true;
                clean
            }
            None => text.to_string(),
        }
    }

    /// Records that `p` appears in chunk `at`; their key.
    pub(super) fn see(&mut self, p: &TrackerPerson, at: usize) -> Option<NodeKey> {
        let key = person_key(p)?;
        match self.people.iter_mut().find(|s| s.key == key) {
            Some(s) => {
                s.who.fill(p);
                s.chunks.insert(at);
            }
            None => self.people.push(Seen {
                key: key.clone(),
                who: p.clone(),
                chunks: BTreeSet::from([at]),
            }),
        }
        Some(key)
    }

    /// The issue (or one of its comments) as a citation names it.
    pub(super) fn locator(&self, comment_id: Option<&str>) -> Locator {
        Locator::Issue {
            tracker: self.issue.tracker.as_str().to_string(),
            issue_key: locator_key(self.issue),
            comment_id: comment_id.map(str::to_string),
        }
    }

    /// Adds a chunk (redacted again as a whole: headers and prefixes are text too); refs are
    /// the issue, `people`, and what the text names. Returns its index.
    pub(super) fn push(
        &mut self,
        text: &str,
        kind: Option<&str>,
        comment_id: Option<&str>,
        people: Vec<NodeKey>,
    ) -> usize {
        let text = self.clean(&text.replace('\0', ""));
        let mut refs = vec![self.key.clone()];
        refs.extend(people);
        refs.extend(text_refs(&text, self.numbers.as_ref()));
        let mut c = PreparedChunk::new(text, self.locator(comment_id));
        c.kind = kind.map(str::to_string);
        c.refs = dedup(refs);
        c.context = Some(self.title.clone());
        self.chunks.push(c);
        self.chunks.len() - 1
    }

    /// Chunk 0 — the header, then the description's first piece — and the rest of the
    /// description.
    pub(super) fn description(&mut self) {
        let (header, people) = self.header();
        let issue = self.issue;
        let body = self.clean(&issue.body);
        let mut pieces = chunk_text(&body, self.chunking).into_iter();
        let first = match pieces.next() {
            Some(p) => {
                self.mentions.scan(issue, &self.key, &p.text, 0);
                format!("{header}\n\n{}", p.text)
            }
            None => header,
        };
        self.push(&first, None, None, people);
        for p in pieces {
            let at = self.push(&p.text, None, None, Vec::new());
            self.mentions.scan(issue, &self.key, &p.text, at);
        }
    }

    /// The header text, and the keys of the people it names (reporter, assignees).
    pub(super) fn header(&mut self) -> (String, Vec<NodeKey>) {
        let issue = self.issue;
        let kind = if issue.is_pull_request {
            "pull request"
        } else {
            "issue"
        };
        let mut lines = vec![
            self.title.clone(),
            format!(
                "{} {kind} in {}",
                issue.tracker.display_name(),
                one_line(&issue.project, 200)
            ),
        ];
        let mut field = |name: &str, value: Option<&str>| {
            if let Some(v) = value.map(|v| one_line(v, 500)).filter(|v| !v.is_empty()) {
                lines.push(format!("{name}: {v}"));
            }
        };
        field("State", Some(issue.state.as_str()));
        field("Type", issue.issue_type.as_deref());
        field("Priority", issue.priority.as_deref());
        field("Labels", Some(issue.labels.join(", ").as_str()));
        let milestones: Vec<&str> = issue.milestones.iter().map(|m| m.title.as_str()).collect();
        field("Milestone", Some(milestones.join(", ").as_str()));
        let mut people = Vec::new();
        let reporter = issue.reporter.as_ref().map(TrackerPerson::display);
        field("Reporter", reporter.as_deref());
        let assignees: Vec<String> = issue.assignees.iter().map(TrackerPerson::display).collect();
        field("Assignees", Some(assignees.join(", ").as_str()));
        let links: Vec<String> = issue.links.iter().map(|l| self.link_text(l)).collect();
        field("Links", Some(links.join(", ").as_str()));
        field("Created", issue.created.as_deref());
        field("Updated", issue.updated.as_deref());
        for p in issue.reporter.iter().chain(&issue.assignees) {
            people.extend(self.see(p, 0));
        }
        (lines.join("\n"), people)
    }

    /// `blocks SHOP-12`, `relates to #7`.
    pub(super) fn link_text(&self, l: &IssueLink) -> String {
        let target =
            if self.issue.tracker.numbered() && l.target.bytes().all(|b| b.is_ascii_digit()) {
                format!("#{}", l.target)
            } else {
                l.target.clone()
            };
        format!("{} {target}", l.relation.replace('_', " "))
    }

    /// One chunk per comment (several for a long one), each starting `Author, date:` so a
    /// chunk read alone still says who said it and when. Empty comments make none.
    pub(super) fn comment(&mut self, c: &IssueComment) {
        let body = self.clean(&c.body);
        let who = c
            .author
            .as_ref()
            .map_or_else(|| "Someone".to_string(), TrackerPerson::display);
        let prefix = match &c.created {
            Some(d) => format!("{who}, {}:", one_line(d, 64)),
            None => format!("{who}:"),
        };
        let id = one_line(&c.id, 128);
        for piece in chunk_text(&body, self.chunking) {
            let at = self.chunks.len();
            let author = c.author.as_ref().and_then(|p| self.see(p, at));
            let text = format!("{prefix}\n{}", piece.text);
            let i = self.push(
                &text,
                Some("issue-comment"),
                Some(&id),
                author.iter().cloned().collect(),
            );
            self.mentions.scan(self.issue, &self.key, &piece.text, i);
            let meta = &mut self.chunks[i].metadata;
            put_prop(meta, "commentId", id.clone());
            put_prop(meta, "author", who.clone());
            put_prop(
                meta,
                "created",
                c.created.clone().map_or(Value::Null, Value::from),
            );
            put_prop(meta, "url", c.url.clone().map_or(Value::Null, Value::from));
            if let Some(a) = author {
                match self.commented.iter_mut().find(|(k, _)| *k == a) {
                    Some((_, chunks)) => chunks.push(i),
                    None => self.commented.push((a, vec![i])),
                }
            }
        }
    }

    /// The history, one line per change in time order, packed into chunks up to the token
    /// budget (never cut inside a line, so each actor's evidence is exact).
    pub(super) fn history(&mut self) {
        let issue = self.issue;
        let mut changes: Vec<&IssueChange> = issue.history.iter().collect();
        changes.sort_by(|a, b| a.at.cmp(&b.at));
        let max = self.chunking.max_tokens.max(1);
        let mut lines: Vec<String> = Vec::new();
        let mut actors: Vec<&TrackerPerson> = Vec::new();
        let mut tokens = 0;
        for ch in changes {
            let line = change_line(ch);
            if line.is_empty() {
                continue;
            }
            let t = estimate_tokens(&line);
            if !lines.is_empty() && tokens + t > max {
                self.flush_history(&mut lines, &mut actors);
                tokens = 0;
            }
            tokens += t;
            lines.push(line);
            actors.extend(ch.actor.as_ref());
        }
        self.flush_history(&mut lines, &mut actors);
    }

    /// Makes the lines so far one history chunk, evidence for their actors.
    pub(super) fn flush_history(
        &mut self,
        lines: &mut Vec<String>,
        actors: &mut Vec<&TrackerPerson>,
    ) {
        if lines.is_empty() {
            return;
        }
        let at = self.chunks.len();
        let who: Vec<NodeKey> = actors.drain(..).filter_map(|p| self.see(p, at)).collect();
        let text = lines.join("\n");
        lines.clear();
        self.push(&text, Some("issue-history"), None, who);
    }
}

/// One history line: `2026-01-12T08:45:12Z ghopper: added assignee jnovak` (empty when the
/// change says nothing printable).
pub(super) fn change_line(ch: &IssueChange) -> String {
    let what = change_text(ch);
    if what.is_empty() {
        return String::new();
    }
    let mut line = String::new();
    if let Some(when) = ch
        .at
        .as_deref()
        .map(|a| one_line(a, 64))
        .filter(|a| !a.is_empty())
    {
        line.push_str(&when);
        line.push(' ');
    }
    if let Some(who) = &ch.actor {
        line.push_str(&who.display());
        line.push_str(": ");
    }
    line.push_str(&what);
    if let Some(c) = ch
        .commit
        .as_deref()
        .map(|c| one_line(c, 80))
        .filter(|c| !c.is_empty())
    {
        line.push_str(&format!(" (commit {c})"));
    }
    line
}

/// Fields that hold several values, where a change adds or removes one.
pub(super) const MULTI_VALUED: &[&str] = &["label", "labels", "assignee", "assignees"];

/// What changed, worded for the field: `added label bug`, `status: To Do → Done`, a note's
/// text as is.
pub(super) fn change_text(ch: &IssueChange) -> String {
    let v = |s: &Option<String>| {
        s.as_deref()
            .map(|x| one_line(x, MAX_HISTORY_VALUE_CHARS))
            .filter(|x| !x.is_empty())
    };
    let field = one_line(&ch.field, 64);
    let multi = MULTI_VALUED.contains(&field.as_str());
    match (v(&ch.from), v(&ch.to)) {
        (_, Some(t)) if field == "note" => t,
        (None, Some(t)) if multi => format!("added {field} {t}"),
        (Some(f), None) if multi => format!("removed {field} {f}"),
        (Some(f), Some(t)) => format!("{field}: {f} → {t}"),
        (None, Some(t)) => format!("{field}: {t}"),
        (Some(f), None) => format!("{field}: {f} → none"),
        (None, None) => field,
    }
}

/// RFC 3339 as `observed_at` needs it: Jira writes offsets without a colon
/// (`2026-01-08T15:03:10.566+0100` → `+01:00`); others pass through.
pub(super) fn rfc3339(at: &str) -> String {
    let b = at.as_bytes();
    let n = b.len();
    let compact_offset = n > 16
        && at.contains('T')
        && matches!(b[n - 5], b'+' | b'-')
        && b[n - 4..].iter().all(u8::is_ascii_digit);
    if compact_offset {
        format!("{}:{}", &at[..n - 2], &at[n - 2..])
    } else {
        at.to_string()
    }
}

/// An edge without props.
pub(super) fn edge(
    from: &NodeKey,
    edge_type: &str,
    to: NodeKey,
    evidence: EvidenceSpec,
) -> PreparedEdge {
    PreparedEdge {
        from: from.clone(),
        to,
        edge_type: edge_type.into(),
        props: Map::new(),
        evidence,
    }
}

/// An optional string as a prop value (null is skipped by [`props`]).
pub(crate) fn opt(v: &Option<String>) -> Value {
    v.clone().map_or(Value::Null, Value::from)
}

/// The issue's own node.
pub(super) fn issue_node(issue: &Issue, key: &NodeKey, title: &str) -> PreparedNode {
    let label = if issue.title.trim().is_empty() {
        title.to_string()
    } else {
        exact_line(&issue.title)
    };
    PreparedNode {
        key: key.clone(),
        node_type: "issue".into(),
        label,
        props: props([
            ("tracker", issue.tracker.as_str().into()),
            ("project", issue.project.clone().into()),
            ("key", issue.key.clone().into()),
            ("title", exact_text(&issue.title).into()),
            ("number", issue.number.map_or(Value::Null, Value::from)),
            ("state", issue.state.clone().into()),
            (
                "labels",
                if issue.labels.is_empty() {
                    Value::Null
                } else {
                    Value::from(issue.labels.clone())
                },
            ),
            ("type", opt(&issue.issue_type)),
            ("priority", opt(&issue.priority)),
            ("url", opt(&issue.url)),
            ("created", opt(&issue.created)),
            ("updated", opt(&issue.updated)),
            (
                "pullRequest",
                if issue.is_pull_request {
                    Value::Bool(true)
                } else {
                    Value::Null
                },
            ),
        ]),
        evidence: EvidenceSpec::AllChunks,
    }
}

/// A person's node. The login is kept per tracker (`githubLogin`), since props merge across
/// sources and one person has a login on each.
pub(super) fn person_node(s: &Seen, tracker: TrackerKind) -> PreparedNode {
    let mut p = props([
        ("name", opt(&s.who.name)),
        (
            "email",
            s.who
                .email
                .as_ref()
                .map_or(Value::Null, |e| Value::from(e.to_lowercase())),
        ),
    ]);
    put_prop(
        &mut p,
        &format!("{}Login", tracker.as_str()),
        opt(&s.who.login),
    );
    PreparedNode {
        key: s.key.clone(),
        node_type: "person".into(),
        label: s.who.display(),
        props: p,
        evidence: EvidenceSpec::Chunks(s.chunks.iter().copied().collect()),
    }
}

/// The login and display name resolve to the person's canonical key (their e-mail identity
/// when known, else their login).
pub(super) fn aliases_of(people: &[Seen]) -> Vec<(NodeKey, NodeKey)> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for s in people {
        let handles: Vec<&str> = s.who.login.as_deref().into_iter().collect();
        for pair in keys::person_aliases(&s.key, s.who.name.as_deref(), &handles) {
            if fits(&pair.0) && seen.insert(pair.clone()) {
                out.push(pair);
            }
        }
    }
    out
}

/// Edges to labels (and their nodes), evidenced by the header.
pub(super) fn label_graph(
    issue: &Issue,
    key: &NodeKey,
    nodes: &mut Vec<PreparedNode>,
    edges: &mut Vec<PreparedEdge>,
) {
    let mut seen = HashSet::new();
    for name in &issue.labels {
        let Some(label) = label_key(issue, name).filter(|k| seen.insert(k.clone())) else {
            continue;
        };
        nodes.push(PreparedNode {
            key: label.clone(),
            node_type: "label".into(),
            label: one_line(name, 200),
            props: props([
                ("name", name.clone().into()),
                ("tracker", issue.tracker.as_str().into()),
                ("project", issue.project.clone().into()),
            ]),
            evidence: EvidenceSpec::chunk(0),
        });
        edges.push(edge(key, "labeled", label, EvidenceSpec::chunk(0)));
    }
}

/// Edges of the issue's links, evidenced by the header that lists them.
pub(super) fn link_edges(issue: &Issue, key: &NodeKey) -> Vec<PreparedEdge> {
    let mut out: Vec<PreparedEdge> = Vec::new();
    for l in &issue.links {
        let Some(other) = link_target_key(issue, &l.target).filter(|k| fits(k) && k != key) else {
            continue;
        };
        let (edge_type, reversed) = link_edge(&l.relation);
        let mut e = if reversed {
            edge(&other, &edge_type, key.clone(), EvidenceSpec::chunk(0))
        } else {
            edge(key, &edge_type, other, EvidenceSpec::chunk(0))
        };
        if l.relation != edge_type {
            put_prop(&mut e.props, "relation", l.relation.clone());
        }
        let duplicate = out
            .iter()
            .any(|x| x.from == e.from && x.to == e.to && x.edge_type == e.edge_type);
        if !duplicate {
            out.push(e);
        }
    }
    out
}

/// An issue as a prepared source: header and description, comments, history; the issue,
/// its people, labels and links as the graph.
pub fn issue_source(issue: &Issue, ctx: &TrackerContext<'_>) -> PreparedSource {
    let mut b = Builder::new(issue, ctx.chunking);
    b.description();
    for c in &issue.comments {
        b.comment(c);
    }
    b.history();

    let key = b.key.clone();
    let mut nodes = vec![issue_node(issue, &key, &b.title)];
    nodes.extend(b.people.iter().map(|s| person_node(s, issue.tracker)));
    let mut edges = Vec::new();
    let mut assigned = HashSet::new();
    if let Some(r) = issue.reporter.as_ref().and_then(person_key) {
        edges.push(edge(&key, "reported_by", r, EvidenceSpec::chunk(0)));
    }
    for a in issue.assignees.iter().filter_map(person_key) {
        if assigned.insert(a.clone()) {
            edges.push(edge(&key, "assigned_to", a, EvidenceSpec::chunk(0)));
        }
    }
    for (person, at) in &b.commented {
        edges.push(edge(
            &key,
            "commented_by",
            person.clone(),
            EvidenceSpec::Chunks(at.clone()),
        ));
    }
    edges.extend(link_edges(issue, &key));
    edges.extend(b.mentions.edges(&key));
    label_graph(issue, &key, &mut nodes, &mut edges);
    milestone_graph(issue, &key, &mut nodes, &mut edges);

    let fingerprint = content_hash(&format!(
        "{TRACKER_VERSION}\0{}\0{}/{}\0{}\0{issue:?}",
        ctx.source_id, ctx.chunking.max_tokens, ctx.chunking.min_tokens, b.redacted
    ));
    PreparedSource {
        scope: ctx.scope.clone(),
        source_urn: issue_urn(ctx.source_id, issue),
        kind: "issue".into(),
        title: Some(b.title.clone()),
        fingerprint,
        observed_at: issue
            .updated
            .as_deref()
            .or(issue.created.as_deref())
            .map(rfc3339),
        aliases: aliases_of(&b.people),
        merges: Vec::new(),
        chunks: b.chunks,
        nodes,
        edges,
    }
}
