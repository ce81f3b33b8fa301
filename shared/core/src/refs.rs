//! Graph references: canonical node keys, entity-type and relation aliases, relationship
//! parsing, and `namespace:value` refs found in free text.
//!
//! Everything here is a pure function of its input (no I/O, no clocks), never panics, and
//! runs in time roughly linear in the input, so it can be fed whole documents and fuzzed.
//!
//! # Node keys (reference behaviour §1, with Evident's Unicode fix)
//!
//! A free-text ref such as `User:John  Smith` becomes the canonical key `user:john_smith`:
//!
//! * split at the first `:` into namespace and value. A string without `:` is a value in
//!   the namespace `entity` (`John Smith` → `entity:john_smith`);
//! * namespace: NFC, lowercase, keep letters, digits and `_` (Unicode, not only ASCII), then
//!   the entity-type alias ([`canonical_entity_type`]: `person` → `user`, `ticket` → `jira`, …);
//!   a namespace with nothing left becomes `entity`;
//! * value: NFC, lowercase; whitespace, `/`, `\`, `.`, `@` become `_`; keep letters, digits,
//!   `_` and `-`; collapse `_` runs; trim `_` at both ends;
//! * canonicalise: drop a redundant `{ns}_` prefix from the value
//!   (`order:order_530798957` → `order:530798957`). Evident repeats this until nothing more
//!   can be dropped (the reference dropped it once, so its output was not a fixed point), and
//!   also drops the prefix of the namespace as written (`person:person_jan` → `user:jan`);
//! * a value with nothing left (no letter or digit) gives just the namespace (`User:` → `user`).
//!
//! The reference kept only `[a-z0-9]`, so `Ž:Příliš žluťoučký` became `:pli_luouk`. Evident
//! keeps every Unicode letter and digit (and combining marks that follow one), in NFC, giving
//! `ž:příliš_žluťoučký`; [`ascii_fold_key`] yields `z:prilis_zlutoucky`, which callers register
//! as an alias of it so either spelling finds the node.
//!
//! [`normalize_ref`] is idempotent on every key that has a value. A namespace-only key
//! (`user`) cannot be told from a bare value, so re-normalising it gives `entity:user`; keys
//! read back from storage must be rebuilt with [`NodeKey::from_canonical`], never re-normalised.
//!
//! # Relations
//!
//! [`canonical_relation`] turns `Depends On`, `depends-on`, `dependsOn` into `depends_on` and
//! applies the reference's relation aliases (`requires` → `depends_on`, `written_by` →
//! `created_by`, …). Evident's fixes: `calls`, `references` and `affects` stay their own
//! types (the reference folded them into `uses` / `modifies` and lost their meaning), so does
//! `authored_by` (the git vocabulary's commit → person edge: who wrote a change is not who
//! created a document), and `A blocked_by B` is stored as `B blocks A` (the reference folded it into `blocks` without
//! swapping the ends, which reversed the edge). Aliases that would reverse direction
//! (`needed_by`, `responsible_for`) or change meaning (`overrides`, `reports_to`) are not
//! applied: they stay as written.
//!
//! # Relationship formats
//!
//! * pipe `from|EDGE|to`, arrow `from->EDGE->to`, bracket `from -[EDGE]-> to`;
//! * a metadata block in content: `relationships: [ "a|B|c", "x->Y->z" ]` (JSON-ish, may span
//!   lines; `"relationships": [...]` and `**Relationships:**` too) or YAML-style
//!   `relationships:` followed by `- a|B|c` / `- "a|B|c"` lines (`*` and `+` bullets too);
//! * short-hand: a bare id equal to the main node's value (`TASK-123` when the main node is
//!   `jira:task-123`) expands to the main node; other bare ids become `entity:<id>`.
//!
//! The reference documented these formats but never produced edges from content; Evident
//! does, so [`find_relationships`] must be strict about what counts in free text:
//!
//! * the edge is an identifier (letters, digits, `_`, `-`; at most 64 chars; has a letter);
//! * pipe and arrow relationships are single whitespace-free tokens (`a | b | c` is a shell
//!   pipe or a table, `input -> output` is prose); exactly three parts (`a->b->c->d` is a
//!   path or a state chain, not a relationship);
//! * endpoints are tokens without whitespace or brackets; one that contains `:` must be a
//!   plausible ref (`ns:value`, namespace starting with a letter), never a URL, time or path;
//! * Markdown table rows (lines starting or ending with `|`, lines of a table introduced by a
//!   `---|---` delimiter row) never yield pipe relationships;
//! * in free text a pipe or arrow relationship whose two ends are both bare ids (`file|sort|uniq`,
//!   `Home->Settings->Privacy`) counts only when the edge is written in capitals
//!   (`ServiceA|DEPENDS_ON|ServiceB`); with at least one `ns:value` end or the main node's id
//!   it always counts. The bracket format is distinctive enough to need no such guard;
//! * entries of a metadata block are explicit, so they are parsed leniently with
//!   [`parse_relationship`] (spaces allowed around separators and inside ref values, as in
//!   `user:John Smith|KNOWS|user:jane`).
//!
//! # Refs in text
//!
//! [`extract_refs`] finds `namespace:value` tokens (the reference regex was
//! `[a-zA-Z0-9]+:[a-zA-Z0-9_-]+`). Evident accepts Unicode and rejects what is not a ref:
//!
//! * namespace: letters, digits and `_`, starting with a letter, 2–32 chars; a single letter
//!   is accepted only when it is non-ASCII (`Ž:Příliš`), so drive letters (`C:\x`, `C:/x`) fail;
//!   it must not follow `.`, `/`, `\`, `:`, `@`, `-`, `_`, `#`, `$`, `%`, `&`, `+`, `~`, `^`, `;`
//!   (host names, paths, chains, CSS properties);
//! * the value starts right after the colon with a letter or digit (`key: value` is not a
//!   ref), continues with letters, digits, `_`, `-`, `.` and `@` (the latter only between
//!   letters/digits, so `user:john.doe@example.com` is one ref); a trailing `.` or `-` is
//!   trimmed;
//! * not a ref when the value is followed by `/` or `\` (paths, `data:image/png`), by `:` and
//!   more (times `10:30:15`, IPv6, `urn:isbn:…`), by `;` and more (CSS), or when the namespace
//!   ends in a digit and the value is all digits (`T10:30`);
//! * nothing inside a URL: from the scheme of any `://` (or a `www.`) to the end of the
//!   whitespace-delimited word is skipped;
//! * URL schemes without `//` (`mailto:`, `tel:`, `data:`, `javascript:`, `urn:`, `about:`,
//!   `localhost:`, …, see `URL_SCHEMES`) end the scan of their word; mail subject prefixes
//!   (`Re:`, `Fwd:`, …) are skipped. `file:` is *not* blocked: `file:Service.kt` is one of
//!   Evident's own namespaces, and `file:///x` is already excluded by the `/` rule.
//!
//! Times (`10:30`), ratios (`16:9`) and emoji shortcodes (`:smile:`) fail the namespace rule.

use std::collections::HashSet;
use std::fmt;

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// Namespace of refs that carry none.
const ENTITY: &str = "entity";
/// Longest edge name accepted, in chars.
const MAX_EDGE_CHARS: usize = 64;
/// Longest endpoint accepted in free text, in bytes.
const MAX_TOKEN_ENDPOINT_BYTES: usize = 256;
/// Longest endpoint accepted in an explicit relationship, in bytes.
const MAX_LIST_ENDPOINT_BYTES: usize = 1024;
/// Longest namespace recognised by [`extract_refs`], in chars.
const MAX_NS_CHARS: usize = 32;
/// Keyword that opens a metadata block of relationships.
const BLOCK_KEYWORD: &[u8] = b"relationships";

/// URL schemes (and scheme-like prefixes) that are never a ref namespace in text.
const URL_SCHEMES: &[&str] = &[
    "http",
    "https",
    "ftp",
    "ftps",
    "sftp",
    "mailto",
    "tel",
    "sms",
    "data",
    "javascript",
    "vbscript",
    "about",
    "blob",
    "urn",
    "ws",
    "wss",
    "ldap",
    "magnet",
    "xmpp",
    "jdbc",
    "localhost",
    "cid",
    "mid",
    "webcal",
];

/// Mail subject prefixes (`Re:Meeting`) that look like refs but are prose.
const PROSE_PREFIXES: &[&str] = &["re", "fw", "fwd", "aw"];

// ---------------------------------------------------------------------------------------
// NodeKey
// ---------------------------------------------------------------------------------------

/// A normalised, canonical graph key `namespace:value` (namespace `entity` when none was
/// given), or a bare namespace when the value was empty.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct NodeKey(String);

impl NodeKey {
    /// The key as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The part before the first `:` (the whole key when it has no `:`).
    pub fn namespace(&self) -> &str {
        match self.0.find(':') {
            Some(i) => &self.0[..i],
            None => &self.0,
        }
    }

    /// The part after the first `:` (`""` when the key has no `:`).
    pub fn value(&self) -> &str {
        match self.0.find(':') {
            Some(i) => &self.0[i + 1..],
            None => "",
        }
    }

    /// Wrap an already-canonical string without re-normalising it (for keys read back from
    /// storage). Use [`normalize_ref`] for anything a person or a model wrote.
    pub fn from_canonical(s: impl Into<String>) -> NodeKey {
        NodeKey(s.into())
    }
}

impl fmt::Display for NodeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

// ---------------------------------------------------------------------------------------
// Normalisation
// ---------------------------------------------------------------------------------------

fn nfc(s: &str) -> String {
    s.nfc().collect()
}

fn has_alnum(s: &str) -> bool {
    s.chars().any(char::is_alphanumeric)
}

/// Namespace part: NFC, lowercase, keep letters/digits/`_` (and combining marks right after
/// a kept letter or digit). Empty when no letter or digit remains.
fn normalize_namespace(raw: &str) -> String {
    let lower = nfc(raw).to_lowercase();
    let mut out = String::with_capacity(lower.len());
    let mut after_base = false;
    for c in lower.chars() {
        if c.is_alphanumeric() {
            out.push(c);
            after_base = true;
        } else if c == '_' {
            out.push(c);
            after_base = false;
        } else if after_base && is_combining_mark(c) {
            out.push(c);
        } else {
            after_base = false;
        }
    }
    if !has_alnum(&out) {
        return String::new();
    }
    nfc(&out)
}

/// Value part: NFC, lowercase; whitespace `/` `\` `.` `@` become `_`; keep letters, digits,
/// `_`, `-` (and combining marks right after a kept letter or digit); collapse `_` runs; trim
/// `_`. Empty when no letter or digit remains.
fn normalize_value(raw: &str) -> String {
    let lower = nfc(raw).to_lowercase();
    let mut out = String::with_capacity(lower.len());
    let mut after_base = false;
    for c in lower.chars() {
        if c.is_alphanumeric() {
            out.push(c);
            after_base = true;
        } else if c == '-' {
            out.push('-');
            after_base = false;
        } else if c == '_' || c.is_whitespace() || matches!(c, '/' | '\\' | '.' | '@') {
            if !out.is_empty() && !out.ends_with('_') {
                out.push('_');
            }
            after_base = false;
        } else if after_base && is_combining_mark(c) {
            out.push(c);
        } else {
            after_base = false;
        }
    }
    while out.ends_with('_') {
        out.pop();
    }
    if !has_alnum(&out) {
        return String::new();
    }
    nfc(&out)
}

/// Drop redundant `{ns}_` prefixes from a normalised value, as long as something with a
/// letter or digit remains.
fn strip_namespace_prefixes(mut value: String, namespaces: &[&str]) -> String {
    loop {
        let mut changed = false;
        for &ns in namespaces {
            if ns.is_empty() {
                continue;
            }
            let next: Option<String> = value
                .strip_prefix(ns)
                .and_then(|rest| rest.strip_prefix('_'))
                .filter(|rest| has_alnum(rest))
                .map(str::to_string);
            if let Some(rest) = next {
                value = rest;
                changed = true;
            }
        }
        if !changed {
            return value;
        }
    }
}

/// Build a canonical key from a raw namespace and a raw value.
/// `allow_namespace_only`: an empty value yields the bare namespace (else `None`).
fn key_from_parts(ns_raw: &str, value_raw: &str, allow_namespace_only: bool) -> Option<NodeKey> {
    let ns_written = normalize_namespace(ns_raw);
    let ns = canonical_entity_type(&ns_written);
    let value = normalize_value(value_raw);
    if value.is_empty() {
        if !allow_namespace_only || ns_written.is_empty() {
            return None;
        }
        return Some(NodeKey(ns));
    }
    let value = strip_namespace_prefixes(value, &[ns.as_str(), ns_written.as_str()]);
    Some(NodeKey(format!("{ns}:{value}")))
}

/// Normalise and canonicalise a free-text ref (see the module docs for the rules).
///
/// `User:John  Smith` → `user:john_smith`; `Ž:Příliš žluťoučký` → `ž:příliš_žluťoučký`;
/// `John Smith` (no `:`) → `entity:john_smith`; `User:` → `user`. `None` when nothing remains
/// (empty input, only punctuation, or an empty namespace and an empty value).
pub fn normalize_ref(raw: &str) -> Option<NodeKey> {
    match raw.find(':') {
        Some(i) => key_from_parts(&raw[..i], &raw[i + 1..], true),
        None => key_from_parts(ENTITY, raw, false),
    }
}

/// ASCII replacement of a non-ASCII letter that has no canonical decomposition.
fn ascii_fold_char(c: char) -> Option<&'static str> {
    let s = match c {
        'ł' | 'Ł' | 'ŀ' | 'Ŀ' => "l",
        'ß' | 'ẞ' => "ss",
        'æ' | 'Æ' => "ae",
        'ø' | 'Ø' => "o",
        'đ' | 'Đ' | 'ð' | 'Ð' => "d",
        'œ' | 'Œ' => "oe",
        'þ' | 'Þ' => "th",
        'ħ' | 'Ħ' => "h",
        'ı' => "i",
        'ŧ' | 'Ŧ' => "t",
        'ŋ' | 'Ŋ' => "n",
        'ĳ' | 'Ĳ' => "ij",
        'ſ' => "s",
        _ => return None,
    };
    Some(s)
}

/// Fold to ASCII: NFD, drop combining marks, map the letters of `ascii_fold_char`, drop
/// other non-ASCII punctuation. `None` when a non-ASCII letter or digit would be lost (a
/// Cyrillic or CJK name has no ASCII spelling; dropping it would alias distinct keys).
fn fold_ascii(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    for c in s.nfd() {
        if c.is_ascii() {
            out.push(c);
        } else if is_combining_mark(c) {
            continue;
        } else if let Some(rep) = ascii_fold_char(c) {
            out.push_str(rep);
        } else if c.is_alphanumeric() {
            return None;
        }
    }
    Some(out)
}

/// The ASCII-folded form of a key (NFD, combining marks dropped, `ł`→`l`, `ß`→`ss`, `æ`→`ae`,
/// `ø`→`o`, `đ`→`d`, …), normalised like any key; `None` when it equals the key itself (an
/// ASCII key), or when folding would lose a letter or digit that has no ASCII spelling
/// (`user:иван` has no ASCII alias).
///
/// `ž:příliš_žluťoučký` → `z:prilis_zlutoucky`.
pub fn ascii_fold_key(key: &NodeKey) -> Option<NodeKey> {
    if key.as_str().is_ascii() {
        return None;
    }
    let ns = fold_ascii(key.namespace())?;
    if normalize_namespace(&ns).is_empty() {
        return None;
    }
    let value = fold_ascii(key.value())?;
    let folded = if key.value().is_empty() {
        key_from_parts(&ns, "", true)?
    } else {
        key_from_parts(&ns, &value, false)?
    };
    if folded == *key { None } else { Some(folded) }
}

/// The canonical entity type for a namespace word (reference aliases, kept):
/// user ← person, developer, engineer, author, assignee, reporter, member;
/// jira ← ticket, issue, bug, task, story; file ← source, code, module, script;
/// confluence ← page, doc, document, wiki; commit ← revision, changeset;
/// concept ← topic, idea; technology ← framework, library, tool, language, protocol;
/// client ← customer; organization ← company, team; event ← deadline; `""` → `entity`.
/// Other words are returned trimmed and lower-cased.
pub fn canonical_entity_type(ns: &str) -> String {
    let lower = ns.trim().to_lowercase();
    if lower.is_empty() {
        return ENTITY.to_string();
    }
    let canonical = match lower.as_str() {
        "person" | "developer" | "engineer" | "author" | "assignee" | "reporter" | "member" => {
            "user"
        }
        "ticket" | "issue" | "bug" | "task" | "story" => "jira",
        "source" | "code" | "module" | "script" => "file",
        "page" | "doc" | "document" | "wiki" => "confluence",
        "revision" | "changeset" => "commit",
        "topic" | "idea" => "concept",
        "framework" | "library" | "tool" | "language" | "protocol" => "technology",
        "customer" => "client",
        "company" | "team" => "organization",
        "deadline" => "event",
        _ => return lower,
    };
    canonical.to_string()
}

/// The canonical relation (edge) type.
///
/// Case, spaces, hyphens and camelCase become snake_case (`Depends On`, `depends-on`,
/// `dependsOn`, `DEPENDS_ON` → `depends_on`), then the reference aliases apply:
/// depends_on ← requires, dependency, relies_on; uses ← utilizes, employs, invokes;
/// contains ← has, includes, comprises, consists_of; belongs_to ← part_of, member_of,
/// owned_by; created_by ← written_by, developed_by; modifies ← changes,
/// updates, edits; extends ← inherits; fixes ← resolves, patches; related_to ←
/// associated_with, linked_to, connected_to; deployed_to ← runs_on, hosted_on, installed_on;
/// blocks ← prevents.
///
/// Evident's fixes: `calls`, `references`, `affects` and `authored_by` stay themselves; `blocked_by` is
/// returned as `blocked_by` (it is a direction, not a type: [`parse_relationship`] and
/// [`find_relationships`] store `A blocked_by B` as `B blocks A`).
///
/// `None` for an empty name, a name longer than 64 chars, one without a letter, or one with
/// characters other than letters, digits, `_`, `-` and spaces.
pub fn canonical_relation(raw: &str) -> Option<String> {
    let trimmed = raw.trim();
    if trimmed.is_empty() || trimmed.chars().count() > MAX_EDGE_CHARS {
        return None;
    }
    let mut out = String::with_capacity(trimmed.len() + 4);
    let mut prev_lower = false;
    let mut after_base = false;
    for c in trimmed.nfc() {
        if c.is_whitespace() || c == '-' || c == '_' {
            if !out.is_empty() && !out.ends_with('_') {
                out.push('_');
            }
            prev_lower = false;
            after_base = false;
        } else if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower && !out.ends_with('_') {
                out.push('_');
            }
            prev_lower = c.is_lowercase();
            out.extend(c.to_lowercase());
            after_base = true;
        } else if after_base && is_combining_mark(c) {
            out.push(c);
        } else {
            return None;
        }
    }
    while out.ends_with('_') {
        out.pop();
    }
    if !out.chars().any(char::is_alphabetic) {
        return None;
    }
    let canonical = match out.as_str() {
        "requires" | "dependency" | "relies_on" => "depends_on",
        "utilizes" | "employs" | "invokes" => "uses",
        "has" | "includes" | "comprises" | "consists_of" => "contains",
        "part_of" | "member_of" | "owned_by" => "belongs_to",
        "written_by" | "developed_by" => "created_by",
        "changes" | "updates" | "edits" => "modifies",
        "inherits" => "extends",
        "resolves" | "patches" => "fixes",
        "associated_with" | "linked_to" | "connected_to" => "related_to",
        "runs_on" | "hosted_on" | "installed_on" => "deployed_to",
        "prevents" => "blocks",
        _ => return Some(out),
    };
    Some(canonical.to_string())
}

// ---------------------------------------------------------------------------------------
// Relationships
// ---------------------------------------------------------------------------------------

/// A directed, typed relationship between two canonical keys.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Relationship {
    pub from: NodeKey,
    pub edge_type: String,
    pub to: NodeKey,
}

/// A relationship found inside a text, with the byte span (`start..end`) of the text that
/// states it, so a caller can tell which chunk evidences it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundRelationship {
    pub rel: Relationship,
    pub start: usize,
    pub end: usize,
}

/// The main node of a document, for short-hand expansion.
struct MainNode {
    /// Canonical form of the main key; `None` when there is no main node or it has no value.
    key: Option<NodeKey>,
}

impl MainNode {
    fn new(main: Option<&NodeKey>) -> MainNode {
        let key = main.and_then(|m| {
            if m.value().is_empty() {
                None
            } else {
                key_from_parts(m.namespace(), m.value(), false)
            }
        });
        MainNode { key }
    }

    /// The main key when `bare` (an id without `:`) names it.
    fn expand(&self, bare: &str) -> Option<NodeKey> {
        let main = self.key.as_ref()?;
        let candidate = key_from_parts(main.namespace(), bare, false)?;
        if candidate == *main {
            Some(candidate)
        } else {
            None
        }
    }
}

/// Resolve one endpoint; the flag tells whether it is anchored (an explicit `ns:value` or
/// the main node) rather than a bare `entity:` id.
fn resolve_endpoint(raw: &str, main: &MainNode) -> Option<(NodeKey, bool)> {
    let raw = raw.trim();
    if raw.is_empty() {
        return None;
    }
    if raw.contains(':') {
        return normalize_ref(raw).map(|k| (k, true));
    }
    if let Some(k) = main.expand(raw) {
        return Some((k, true));
    }
    key_from_parts(ENTITY, raw, false).map(|k| (k, false))
}

/// Build a relationship from its three raw parts; the flag tells whether an end is anchored.
fn build_relationship(
    from: &str,
    edge: &str,
    to: &str,
    main: &MainNode,
) -> Option<(Relationship, bool)> {
    let edge_type = canonical_relation(edge)?;
    let (from_key, from_anchored) = resolve_endpoint(from, main)?;
    let (to_key, to_anchored) = resolve_endpoint(to, main)?;
    let rel = if edge_type == "blocked_by" {
        Relationship {
            from: to_key,
            edge_type: "blocks".to_string(),
            to: from_key,
        }
    } else {
        Relationship {
            from: from_key,
            edge_type,
            to: to_key,
        }
    };
    Some((rel, from_anchored || to_anchored))
}

/// Strip one layer of matching quotes or backticks around `s`.
fn strip_matching_quotes(s: &str) -> &str {
    let b = s.as_bytes();
    if b.len() >= 2 && b[0] == b[b.len() - 1] && matches!(b[0], b'"' | b'\'' | b'`') {
        &s[1..s.len() - 1]
    } else {
        s
    }
}

/// Split `s` into exactly three trimmed parts at `sep`.
fn split3<'a>(s: &'a str, sep: &str) -> Option<(&'a str, &'a str, &'a str)> {
    let mut it = s.splitn(4, sep);
    let a = it.next()?;
    let b = it.next()?;
    let c = it.next()?;
    if it.next().is_some() {
        return None;
    }
    Some((a.trim(), b.trim(), c.trim()))
}

/// Split an explicit relationship string: bracket, then pipe, then arrow.
fn split_relationship(s: &str) -> Option<(&str, &str, &str)> {
    if let Some(open) = s.find("-[") {
        let after = &s[open + 2..];
        let close = after.find(']')?;
        let edge = &after[..close];
        let rest = &after[close + 1..];
        let to = rest.strip_prefix("->").or_else(|| rest.strip_prefix('>'))?;
        return Some((s[..open].trim(), edge.trim(), to.trim()));
    }
    if s.contains('|') {
        return split3(s, "|");
    }
    if s.contains("->") {
        return split3(s, "->");
    }
    None
}

/// An endpoint of an explicit relationship: no separators or brackets, no URL, and no
/// whitespace in its namespace (or anywhere, for a bare id); spaces inside a ref value are
/// allowed (`user:John Smith`).
fn list_endpoint_ok(e: &str) -> bool {
    if e.is_empty() || e.len() > MAX_LIST_ENDPOINT_BYTES || e.contains("->") || e.contains("://") {
        return false;
    }
    if e.contains(|c: char| matches!(c, '|' | '[' | ']') || c.is_control()) {
        return false;
    }
    let head = match e.find(':') {
        Some(i) => &e[..i],
        None => e,
    };
    !head.contains(char::is_whitespace) && has_alnum(e)
}

fn parse_relationship_with(s: &str, main: &MainNode) -> Option<Relationship> {
    let s = strip_matching_quotes(s.trim()).trim();
    if s.is_empty() || s.contains(['\n', '\r']) {
        return None;
    }
    let (from, edge, to) = split_relationship(s)?;
    if !list_endpoint_ok(from) || !list_endpoint_ok(to) {
        return None;
    }
    build_relationship(from, edge, to, main).map(|(rel, _)| rel)
}

/// Parse ONE explicit relationship: pipe `a|EDGE|b`, arrow `a->EDGE->b` or bracket
/// `a -[EDGE]-> b` (one layer of surrounding quotes is ignored; spaces around separators are
/// allowed).
///
/// Endpoints are normalised with [`normalize_ref`] after short-hand expansion: a bare id (no
/// `:`) that names the main node's value (`TASK-123` for `jira:task-123`, compared after
/// normalising both) becomes the main key (canonical form); other bare ids become
/// `entity:<id>`. The edge goes through [`canonical_relation`]; `A|blocked_by|B` is returned
/// as `B blocks A`.
///
/// `None` unless the string is exactly one well-formed relationship (three non-empty parts,
/// a valid edge, endpoints without separators, brackets, URLs or line breaks).
pub fn parse_relationship(s: &str, main: Option<&NodeKey>) -> Option<Relationship> {
    parse_relationship_with(s, &MainNode::new(main))
}

/// Find relationships in free content (see the module docs for what counts): metadata blocks
/// (`relationships: [ "a|B|c", … ]`, YAML-style `relationships:` + `- a|B|c` lines), and
/// pipe, arrow or bracket relationships inline. Results are in order of appearance; spans are
/// byte ranges of `text` (for block entries, the entry inside its quotes). The same
/// relationship stated twice is returned twice, with both spans.
pub fn find_relationships(text: &str, main: Option<&NodeKey>) -> Vec<FoundRelationship> {
    let main = MainNode::new(main);
    let mut found = Vec::new();
    let regions = scan_metadata_blocks(text, &main, &mut found);
    scan_inline(text, &main, &regions, &mut found);
    found.sort_by_key(|f| (f.start, f.end));
    found
}

/// Byte offset of `sub` inside `text`; `sub` must be a subslice of `text`.
fn offset_in(text: &str, sub: &str) -> usize {
    (sub.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize)
}

struct BlockItem {
    start: usize,
    end: usize,
    text: String,
}

enum BlockScan {
    Found { end: usize, items: Vec<BlockItem> },
    NotBlock { scanned_to: usize },
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// Find metadata blocks, push their relationships, and return the byte regions they cover
/// (sorted, disjoint) so the inline scan skips them.
fn scan_metadata_blocks(
    text: &str,
    main: &MainNode,
    found: &mut Vec<FoundRelationship>,
) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let klen = BLOCK_KEYWORD.len();
    let mut regions = Vec::new();
    let mut i = 0usize;
    while i + klen <= bytes.len() {
        let b = bytes[i];
        if (b == b'r' || b == b'R')
            && bytes[i..i + klen].eq_ignore_ascii_case(BLOCK_KEYWORD)
            && (i == 0 || !is_ident_byte(bytes[i - 1]))
        {
            match parse_block(text, i + klen) {
                BlockScan::Found { end, items } => {
                    for item in items {
                        if let Some(rel) = parse_relationship_with(&item.text, main) {
                            found.push(FoundRelationship {
                                rel,
                                start: item.start,
                                end: item.end,
                            });
                        }
                    }
                    regions.push((i, end));
                    i = end.max(i + 1);
                }
                BlockScan::NotBlock { scanned_to } => {
                    i = scanned_to.max(i + 1);
                }
            }
            continue;
        }
        i += 1;
    }
    regions
}

/// After the keyword: an optional closing quote or Markdown emphasis (`"relationships":`,
/// `**Relationships:**`), `:` or `=`, then `[` (JSON-ish list, possibly on the next line) or
/// the end of the line (YAML-style list on the following lines).
fn parse_block(text: &str, mut pos: usize) -> BlockScan {
    let bytes = text.as_bytes();
    let len = bytes.len();
    let skip_wrappers = |mut p: usize| {
        let mut n = 0;
        while p < len && n < 3 && matches!(bytes[p], b'"' | b'\'' | b'*' | b'_') {
            p += 1;
            n += 1;
        }
        p
    };
    let skip_blanks = |mut p: usize| {
        while p < len && (bytes[p] == b' ' || bytes[p] == b'\t') {
            p += 1;
        }
        p
    };
    pos = skip_blanks(skip_wrappers(pos));
    if pos >= len || !(bytes[pos] == b':' || bytes[pos] == b'=') {
        return BlockScan::NotBlock { scanned_to: pos };
    }
    pos = skip_blanks(skip_wrappers(pos + 1));
    let mut q = pos;
    while q < len && bytes[q].is_ascii_whitespace() {
        q += 1;
    }
    if q < len && bytes[q] == b'[' {
        return parse_json_list(text, q + 1);
    }
    let mut p = pos;
    if p < len && bytes[p] == b'\r' {
        p += 1;
    }
    if p >= len || bytes[p] != b'\n' {
        return BlockScan::NotBlock {
            scanned_to: p.min(len),
        };
    }
    parse_yaml_list(text, p + 1)
}

/// Replace backslash escapes in a quoted list entry (`\"` → `"`, `\n` → space, …).
fn unescape(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n' | 'r' | 't') => out.push(' '),
                Some(other) => out.push(other),
                None => {}
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `[ "a|B|c", 'x->Y->z' ]` starting just after `[`. Only quoted entries, commas and
/// whitespace (including line breaks) are allowed; an entry may not span lines.
fn parse_json_list(text: &str, mut pos: usize) -> BlockScan {
    let bytes = text.as_bytes();
    let len = bytes.len();
    let mut items = Vec::new();
    loop {
        while pos < len && (bytes[pos].is_ascii_whitespace() || bytes[pos] == b',') {
            pos += 1;
        }
        if pos >= len {
            return BlockScan::NotBlock { scanned_to: len };
        }
        match bytes[pos] {
            b']' => {
                return BlockScan::Found {
                    end: pos + 1,
                    items,
                };
            }
            quote @ (b'"' | b'\'') => {
                let start = pos + 1;
                let mut j = start;
                let mut escaped = false;
                loop {
                    if j >= len {
                        return BlockScan::NotBlock { scanned_to: len };
                    }
                    let c = bytes[j];
                    if c == b'\\' {
                        escaped = true;
                        j += 2;
                        continue;
                    }
                    if c == quote {
                        break;
                    }
                    if c == b'\n' {
                        return BlockScan::NotBlock { scanned_to: j };
                    }
                    j += 1;
                }
                let raw = &text[start..j];
                let item_text = if escaped {
                    unescape(raw)
                } else {
                    raw.to_string()
                };
                items.push(BlockItem {
                    start,
                    end: j,
                    text: item_text,
                });
                pos = j + 1;
            }
            _ => return BlockScan::NotBlock { scanned_to: pos },
        }
    }
}

/// `- a|B|c` / `- "a|B|c"` lines (also `*` or `+` bullets) starting at `pos` (the line after
/// `relationships:`); the list ends at the first line that is not such an item.
fn parse_yaml_list(text: &str, mut pos: usize) -> BlockScan {
    let len = text.len();
    let mut items = Vec::new();
    let mut end = pos;
    while pos < len {
        let line_end = text[pos..].find('\n').map_or(len, |k| pos + k);
        let line = &text[pos..line_end];
        let t = line.trim_start_matches([' ', '\t']);
        let Some(rest) = t.strip_prefix(['-', '*', '+']) else {
            break;
        };
        if !(rest.starts_with(' ') || rest.starts_with('\t')) {
            break;
        }
        let item = strip_matching_quotes(rest.trim()).trim();
        if !item.is_empty() {
            let start = offset_in(text, item);
            items.push(BlockItem {
                start,
                end: start + item.len(),
                text: item.to_string(),
            });
        }
        end = line_end;
        pos = line_end + 1;
    }
    if items.is_empty() {
        BlockScan::NotBlock {
            scanned_to: pos.min(len),
        }
    } else {
        BlockScan::Found { end, items }
    }
}

fn in_regions(regions: &[(usize, usize)], pos: usize) -> bool {
    let idx = regions.partition_point(|&(_, end)| end <= pos);
    idx < regions.len() && regions[idx].0 <= pos
}

/// A Markdown table delimiter row such as `|---|:--:|` or `-|-`.
fn is_table_delimiter(t: &str) -> bool {
    t.contains('|')
        && t.contains('-')
        && t.chars().all(|c| matches!(c, '|' | '-' | ':' | ' ' | '\t'))
}

/// Which lines belong to a Markdown table (pipe relationships are not read there).
fn table_flags(lines: &[&str]) -> Vec<bool> {
    let mut flags = vec![false; lines.len()];
    let mut in_table = false;
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        if is_table_delimiter(t) {
            flags[i] = true;
            if i > 0 && lines[i - 1].contains('|') {
                flags[i - 1] = true;
            }
            in_table = true;
            continue;
        }
        let outer_pipe = t.starts_with('|') || t.ends_with('|');
        if outer_pipe || (in_table && t.contains('|')) {
            flags[i] = true;
        } else {
            in_table = false;
        }
    }
    flags
}

fn scan_inline(
    text: &str,
    main: &MainNode,
    regions: &[(usize, usize)],
    found: &mut Vec<FoundRelationship>,
) {
    let lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let tables = table_flags(&lines);
    for (idx, line) in lines.iter().enumerate() {
        let has_pipe = line.contains('|');
        let has_arrow = line.contains("->");
        if !has_pipe && !has_arrow {
            continue;
        }
        if has_arrow {
            scan_brackets(text, line, main, regions, found);
        }
        scan_tokens(text, line, !tables[idx], main, regions, found);
    }
}

/// Leading and trailing punctuation that wraps a token in prose or Markdown.
fn strip_token_punct(tok: &str) -> &str {
    tok.trim_start_matches(['"', '\'', '`', '(', '[', '{', '*'])
        .trim_end_matches([
            '"', '\'', '`', ')', ']', '}', '*', ',', ';', '.', '!', '?', ':',
        ])
}

/// An edge written inline: an identifier of letters, digits, `_` and `-`, starting with a
/// letter or digit, containing a letter, at most 64 chars.
fn token_edge_ok(edge: &str) -> bool {
    if edge.is_empty() || edge.len() > MAX_EDGE_CHARS * 4 {
        return false;
    }
    let mut count = 0usize;
    for c in edge.chars() {
        count += 1;
        if count > MAX_EDGE_CHARS || !(c.is_alphanumeric() || c == '_' || c == '-') {
            return false;
        }
    }
    edge.chars().next().is_some_and(char::is_alphanumeric) && edge.chars().any(char::is_alphabetic)
}

/// An edge in capitals (`DEPENDS_ON`, `MENTIONS`): how people and models write edge types.
fn is_shouty(edge: &str) -> bool {
    edge.chars().filter(|c| c.is_alphabetic()).count() >= 2 && !edge.chars().any(char::is_lowercase)
}

fn is_url_scheme(ns: &str) -> bool {
    URL_SCHEMES.iter().any(|s| s.eq_ignore_ascii_case(ns))
}

fn is_prose_prefix(ns: &str) -> bool {
    PROSE_PREFIXES.iter().any(|s| s.eq_ignore_ascii_case(ns))
}

/// `T10:30`, `h2:45`: a namespace ending in a digit with an all-digit value is a time.
fn looks_like_time(ns: &str, value: &str) -> bool {
    ns.chars().last().is_some_and(|c| c.is_ascii_digit())
        && !value.is_empty()
        && value.bytes().all(|b| b.is_ascii_digit())
}

/// A namespace as it may appear in text: starts with a letter, letters/digits/`_`, at most
/// 32 chars; a single ASCII letter (a drive letter) is not one; no URL scheme.
fn text_namespace_ok(ns: &str) -> bool {
    let mut chars = ns.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    if !first.is_alphabetic() {
        return false;
    }
    let mut count = 1usize;
    for c in chars {
        count += 1;
        if count > MAX_NS_CHARS || !(c.is_alphanumeric() || c == '_' || is_combining_mark(c)) {
            return false;
        }
    }
    if count == 1 && first.is_ascii() {
        return false;
    }
    !is_url_scheme(ns)
}

/// An endpoint written inline: a whitespace-free token without separators, brackets or
/// quotes, with a letter or digit; when it has a `:`, a plausible ref (not a URL, time, path).
fn token_endpoint_ok(e: &str) -> bool {
    if e.is_empty() || e.len() > MAX_TOKEN_ENDPOINT_BYTES || e.contains("->") || e.contains("://") {
        return false;
    }
    let bad = |c: char| {
        c.is_whitespace()
            || c.is_control()
            || matches!(
                c,
                '|' | '[' | ']' | '<' | '>' | '"' | '`' | '(' | ')' | '{' | '}' | ',' | ';'
            )
    };
    if e.contains(bad) || !has_alnum(e) {
        return false;
    }
    match e.split_once(':') {
        Some((ns, value)) => {
            text_namespace_ok(ns)
                && value.chars().next().is_some_and(char::is_alphanumeric)
                && !value.contains(':')
                && !looks_like_time(ns, value)
        }
        None => true,
    }
}

/// Pipe and arrow relationships: single whitespace-free tokens.
fn scan_tokens(
    text: &str,
    line: &str,
    pipes_allowed: bool,
    main: &MainNode,
    regions: &[(usize, usize)],
    found: &mut Vec<FoundRelationship>,
) {
    for tok in line.split(char::is_whitespace) {
        if tok.len() < 5 || tok.contains("-[") {
            continue;
        }
        let pipe = pipes_allowed && tok.contains('|');
        if !pipe && !tok.contains("->") {
            continue;
        }
        let tok_start = offset_in(text, tok);
        if in_regions(regions, tok_start) || in_regions(regions, tok_start + tok.len() - 1) {
            continue;
        }
        let core = strip_token_punct(tok);
        if core.is_empty() {
            continue;
        }
        let parts = if pipe {
            split3(core, "|")
        } else {
            split3(core, "->")
        };
        let Some((from, edge, to)) = parts else {
            continue;
        };
        if !token_edge_ok(edge) || !token_endpoint_ok(from) || !token_endpoint_ok(to) {
            continue;
        }
        let Some((rel, anchored)) = build_relationship(from, edge, to, main) else {
            continue;
        };
        if !anchored && !is_shouty(edge) {
            continue;
        }
        let start = offset_in(text, core);
        found.push(FoundRelationship {
            rel,
            start,
            end: start + core.len(),
        });
    }
}

/// The whitespace-free token at the end of `s`, if short enough.
fn last_token(s: &str) -> Option<&str> {
    let mut start = s.len();
    for (i, c) in s.char_indices().rev() {
        if c.is_whitespace() {
            break;
        }
        start = i;
        if s.len() - start > MAX_TOKEN_ENDPOINT_BYTES + 8 {
            return None;
        }
    }
    if start == s.len() {
        None
    } else {
        Some(&s[start..])
    }
}

/// The whitespace-free token at the start of `s`, if short enough.
fn first_token(s: &str) -> Option<&str> {
    let mut end = 0usize;
    for (i, c) in s.char_indices() {
        if c.is_whitespace() {
            break;
        }
        end = i + c.len_utf8();
        if end > MAX_TOKEN_ENDPOINT_BYTES + 8 {
            return None;
        }
    }
    if end == 0 { None } else { Some(&s[..end]) }
}

/// Bracket relationships `from -[EDGE]-> to` (spaces or tabs around the arrow optional).
fn scan_brackets(
    text: &str,
    line: &str,
    main: &MainNode,
    regions: &[(usize, usize)],
    found: &mut Vec<FoundRelationship>,
) {
    for (p, _) in line.match_indices("-[") {
        if in_regions(regions, offset_in(text, line) + p) {
            continue;
        }
        let after = &line[p + 2..];
        let mut edge_end = 0usize;
        let mut count = 0usize;
        for (i, c) in after.char_indices() {
            if !(c.is_alphanumeric() || c == '_' || c == '-') {
                break;
            }
            count += 1;
            if count > MAX_EDGE_CHARS {
                break;
            }
            edge_end = i + c.len_utf8();
        }
        if count == 0 || count > MAX_EDGE_CHARS {
            continue;
        }
        let edge = &after[..edge_end];
        let Some(rest) = after[edge_end..].strip_prefix("]->") else {
            continue;
        };
        let left = line[..p].trim_end_matches([' ', '\t']);
        let right = rest.trim_start_matches([' ', '\t']);
        let (Some(from_tok), Some(to_tok)) = (last_token(left), first_token(right)) else {
            continue;
        };
        let from = strip_token_punct(from_tok);
        let to = strip_token_punct(to_tok);
        if !token_edge_ok(edge) || !token_endpoint_ok(from) || !token_endpoint_ok(to) {
            continue;
        }
        let Some((rel, _)) = build_relationship(from, edge, to, main) else {
            continue;
        };
        let start = offset_in(text, from);
        let end = offset_in(text, to) + to.len();
        found.push(FoundRelationship { rel, start, end });
    }
}

// ---------------------------------------------------------------------------------------
// Refs in text
// ---------------------------------------------------------------------------------------

/// A `namespace:value` ref found in text, with its byte span (`start..end`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundRef {
    pub key: NodeKey,
    pub start: usize,
    pub end: usize,
}

/// Extract `namespace:value` refs from free text (rules in the module docs): `jira:TASK-1`,
/// `user:jan.novak`, `Ž:Příliš` are refs; URLs and anything inside them, times, Windows
/// paths, IPv6 addresses, `key: value`, ratios, emoji shortcodes and URL schemes are not.
/// Keys are normalised with [`normalize_ref`]; results are deduplicated by key (first
/// occurrence kept) in order of appearance.
pub fn extract_refs(text: &str) -> Vec<FoundRef> {
    let mut out = Vec::new();
    let mut seen: HashSet<NodeKey> = HashSet::new();
    for word in text.split(char::is_whitespace) {
        if word.len() < 3 || !word.contains(':') {
            continue;
        }
        scan_word_refs(text, word, &mut out, &mut seen);
    }
    out
}

/// Where the URL part of a whitespace-delimited word starts (its length when none).
fn url_cut(word: &str) -> usize {
    let bytes = word.as_bytes();
    let mut cut = word.len();
    if let Some(p) = word.find("://") {
        let mut s = p;
        while s > 0
            && (bytes[s - 1].is_ascii_alphanumeric() || matches!(bytes[s - 1], b'+' | b'.' | b'-'))
        {
            s -= 1;
        }
        cut = s;
    }
    for (p, _) in word.match_indices("www.") {
        if p >= cut {
            break;
        }
        if p == 0 || !bytes[p - 1].is_ascii_alphanumeric() {
            cut = p;
            break;
        }
    }
    cut
}

/// Start of the namespace that ends at `colon` (letters, digits, `_`, combining marks; at
/// most 32 chars; starting with a letter; a single ASCII letter is a drive letter).
fn namespace_start(w: &str, colon: usize) -> Option<usize> {
    let mut start = colon;
    let mut count = 0usize;
    for (i, c) in w[..colon].char_indices().rev() {
        if c.is_alphanumeric() || c == '_' || is_combining_mark(c) {
            count += 1;
            if count > MAX_NS_CHARS {
                return None;
            }
            start = i;
        } else {
            break;
        }
    }
    let first = w[start..colon].chars().next()?;
    if !first.is_alphabetic() || (count == 1 && first.is_ascii()) {
        return None;
    }
    Some(start)
}

/// Characters that, right before a namespace, show it is part of something else (a host
/// name, a path, a chain, a CSS declaration, an identifier).
fn is_denied_before_namespace(c: char) -> bool {
    matches!(
        c,
        '_' | '-' | '.' | '/' | '\\' | ':' | '@' | '#' | '$' | '%' | '&' | '+' | '~' | '^' | ';'
    )
}

/// Scan a ref value starting at `start`: returns (raw end, end with trailing `.`/`-` trimmed).
/// The value must start with a letter or digit (else both ends equal `start`).
fn scan_ref_value(w: &str, start: usize) -> (usize, usize) {
    let s = &w[start..];
    let mut end = 0usize;
    let mut iter = s.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        let ok = if i == 0 {
            c.is_alphanumeric()
        } else if c.is_alphanumeric() || matches!(c, '_' | '-' | '.') || is_combining_mark(c) {
            true
        } else if c == '@' {
            matches!(iter.peek(), Some(&(_, next)) if next.is_alphanumeric())
        } else {
            false
        };
        if !ok {
            break;
        }
        end = i + c.len_utf8();
    }
    let trimmed = s[..end].trim_end_matches(['.', '-']);
    (start + end, start + trimmed.len())
}

/// What follows a ref value shows it was part of a path, a chain or a declaration list.
fn value_followed_badly(rest: &str) -> bool {
    let mut it = rest.chars();
    match it.next() {
        Some('/' | '\\') => true,
        Some(':') => {
            matches!(it.next(), Some(c) if c.is_alphanumeric() || matches!(c, ':' | '/' | '\\'))
        }
        Some(';') => matches!(it.next(), Some(c) if c.is_alphanumeric()),
        _ => false,
    }
}

fn scan_word_refs(text: &str, word: &str, out: &mut Vec<FoundRef>, seen: &mut HashSet<NodeKey>) {
    let base = offset_in(text, word);
    let w = &word[..url_cut(word)];
    let mut search_from = 0usize;
    while let Some(rel) = w[search_from..].find(':') {
        let colon = search_from + rel;
        search_from = colon + 1;
        let Some(ns_start) = namespace_start(w, colon) else {
            continue;
        };
        if w[..ns_start]
            .chars()
            .next_back()
            .is_some_and(is_denied_before_namespace)
        {
            continue;
        }
        let ns = &w[ns_start..colon];
        if is_url_scheme(ns) {
            // `mailto:a@b?subject=re:x`, `javascript:…`: nothing else in this word is a ref.
            return;
        }
        if is_prose_prefix(ns) {
            continue;
        }
        let (raw_end, end) = scan_ref_value(w, colon + 1);
        if end <= colon + 1 {
            continue;
        }
        let value = &w[colon + 1..end];
        if !has_alnum(value) || value_followed_badly(&w[raw_end..]) || looks_like_time(ns, value) {
            continue;
        }
        if let Some(key) = normalize_ref(&w[ns_start..end])
            && seen.insert(key.clone())
        {
            out.push(FoundRef {
                key,
                start: base + ns_start,
                end: base + end,
            });
        }
    }
}

// ---------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key(s: &str) -> NodeKey {
        NodeKey::from_canonical(s)
    }

    fn norm(s: &str) -> String {
        normalize_ref(s)
            .map(|k| k.as_str().to_string())
            .unwrap_or_default()
    }

    fn rel(from: &str, edge: &str, to: &str) -> Relationship {
        Relationship {
            from: key(from),
            edge_type: edge.to_string(),
            to: key(to),
        }
    }

    fn rels(found: &[FoundRelationship]) -> Vec<Relationship> {
        found.iter().map(|f| f.rel.clone()).collect()
    }

    fn ref_keys(text: &str) -> Vec<String> {
        extract_refs(text)
            .into_iter()
            .map(|r| r.key.as_str().to_string())
            .collect()
    }

    // --- normalisation: the table of reference-behaviour §1 ---

    #[test]
    fn reference_table_rows() {
        assert_eq!(norm("User:John  Smith"), "user:john_smith");
        assert_eq!(norm("JIRA:TASK-123"), "jira:task-123");
        assert_eq!(norm("order:order_530798957"), "order:530798957");
        assert_eq!(
            norm("user:john.doe@example.com"),
            "user:john_doe_example_com"
        );
        assert_eq!(norm("Ž:Příliš žluťoučký"), "ž:příliš_žluťoučký");
    }

    #[test]
    fn unicode_fix_ascii_fold() {
        let k = normalize_ref("Ž:Příliš žluťoučký").expect("key");
        assert_eq!(ascii_fold_key(&k), Some(key("z:prilis_zlutoucky")));
        assert_eq!(
            ascii_fold_key(&key("ž:příliš_žluťoučký")),
            Some(key("z:prilis_zlutoucky"))
        );
        // Decomposed input gives the same key (NFC).
        assert_eq!(norm("Z\u{30c}:Pr\u{30c}i\u{301}lis\u{30c}"), "ž:příliš");
        assert_eq!(
            ascii_fold_key(&key("user:łukasz_straße")),
            Some(key("user:lukasz_strasse"))
        );
        assert_eq!(
            ascii_fold_key(&key("user:søren_æbelø")),
            Some(key("user:soren_aebelo"))
        );
        assert_eq!(ascii_fold_key(&key("user:đorđe")), Some(key("user:dorde")));
        // Nothing to fold, or no ASCII spelling: no alias.
        assert_eq!(ascii_fold_key(&key("user:john")), None);
        assert_eq!(ascii_fold_key(&key("user:иван")), None);
        assert_eq!(ascii_fold_key(&key("user:jan_иван")), None);
        assert_eq!(ascii_fold_key(&key("пользователь:ivan")), None);
    }

    #[test]
    fn normalisation_details() {
        assert_eq!(norm("John Smith"), "entity:john_smith");
        assert_eq!(norm("User:"), "user");
        assert_eq!(norm("User:  !!! "), "user");
        assert_eq!(norm(":foo"), "entity:foo");
        assert_eq!(norm("!!!:foo"), "entity:foo");
        assert_eq!(normalize_ref(""), None);
        assert_eq!(normalize_ref("   "), None);
        assert_eq!(normalize_ref("!!!"), None);
        assert_eq!(normalize_ref(":"), None);
        assert_eq!(normalize_ref("---"), None);
        assert_eq!(norm("order:order_order_5"), "order:5");
        assert_eq!(norm("order:order_"), "order:order");
        assert_eq!(norm("user:__a__b__"), "user:a_b");
        assert_eq!(norm("file:src/main/Service.kt"), "file:src_main_service_kt");
        assert_eq!(norm("file:C:\\x\\y.rs"), "file:c_x_y_rs");
        assert_eq!(norm("User Name:John\tSmith"), "username:john_smith");
        assert_eq!(norm("entity_foo"), "entity:foo");
        // Entity-type alias applies to the namespace, and its prefix is dropped too.
        assert_eq!(norm("Person:John"), "user:john");
        assert_eq!(norm("person:person_jan"), "user:jan");
        assert_eq!(norm("Ticket:ABC-1"), "jira:abc-1");
        assert_eq!(norm("ΟΔΟΣ:Σοφία"), "οδος:σοφία");
    }

    #[test]
    fn node_key_accessors() {
        let k = normalize_ref("JIRA:TASK-123").expect("key");
        assert_eq!(k.namespace(), "jira");
        assert_eq!(k.value(), "task-123");
        assert_eq!(k.to_string(), "jira:task-123");
        let ns_only = normalize_ref("User:").expect("key");
        assert_eq!(ns_only.namespace(), "user");
        assert_eq!(ns_only.value(), "");
        assert_eq!(
            NodeKey::from_canonical("Not:Normalised").as_str(),
            "Not:Normalised"
        );
    }

    #[test]
    fn entity_type_aliases() {
        for (word, want) in [
            ("person", "user"),
            ("Developer", "user"),
            ("assignee", "user"),
            ("member", "user"),
            ("ticket", "jira"),
            ("BUG", "jira"),
            ("story", "jira"),
            ("module", "file"),
            ("script", "file"),
            ("wiki", "confluence"),
            ("doc", "confluence"),
            ("changeset", "commit"),
            ("revision", "commit"),
            ("topic", "concept"),
            ("framework", "technology"),
            ("protocol", "technology"),
            ("customer", "client"),
            ("team", "organization"),
            ("company", "organization"),
            ("deadline", "event"),
            ("", "entity"),
            ("  ", "entity"),
            ("user", "user"),
            ("jira", "jira"),
            ("Widget", "widget"),
        ] {
            assert_eq!(canonical_entity_type(word), want, "{word}");
        }
    }

    #[test]
    fn relation_aliases_and_fixes() {
        for (raw, want) in [
            ("requires", "depends_on"),
            ("dependency", "depends_on"),
            ("Depends On", "depends_on"),
            ("depends-on", "depends_on"),
            ("DEPENDS_ON", "depends_on"),
            ("dependsOn", "depends_on"),
            ("authored_by", "authored_by"),
            ("writtenBy", "created_by"),
            ("utilizes", "uses"),
            ("invokes", "uses"),
            ("has", "contains"),
            ("part_of", "belongs_to"),
            ("changes", "modifies"),
            ("inherits", "extends"),
            ("resolves", "fixes"),
            ("linked_to", "related_to"),
            ("runs_on", "deployed_to"),
            ("MENTIONS", "mentions"),
            ("MODIFIED_BY", "modified_by"),
            // Evident's fixes: kept as their own types.
            ("calls", "calls"),
            ("CALLS", "calls"),
            ("references", "references"),
            ("affects", "affects"),
            ("blocked_by", "blocked_by"),
            ("needed_by", "needed_by"),
        ] {
            assert_eq!(canonical_relation(raw).as_deref(), Some(want), "{raw}");
        }
        let too_long = "x".repeat(65);
        for bad in ["", "   ", "a.b", "a|b", "123", "--", too_long.as_str()] {
            assert_eq!(canonical_relation(bad), None, "{bad}");
        }
    }

    // --- explicit relationships ---

    #[test]
    fn parses_the_three_formats() {
        assert_eq!(
            parse_relationship("jira:TASK-123|MENTIONS|user:john", None),
            Some(rel("jira:task-123", "mentions", "user:john"))
        );
        assert_eq!(
            parse_relationship("file:Service.kt->MODIFIED_BY->commit:abc123", None),
            Some(rel("file:service_kt", "modified_by", "commit:abc123"))
        );
        assert_eq!(
            parse_relationship("class:UserService -[CALLS]-> method:authenticate", None),
            Some(rel("class:userservice", "calls", "method:authenticate"))
        );
        assert_eq!(
            parse_relationship("\"user:John Smith | authored_by | doc:Guide\"", None),
            Some(rel("user:john_smith", "authored_by", "confluence:guide"))
        );
        assert_eq!(
            parse_relationship("a -> depends on -> b", None),
            Some(rel("entity:a", "depends_on", "entity:b"))
        );
    }

    #[test]
    fn shorthand_expands_to_the_main_node() {
        let main = key("jira:task-123");
        assert_eq!(
            parse_relationship("TASK-123|MENTIONS|user:john", Some(&main)),
            Some(rel("jira:task-123", "mentions", "user:john"))
        );
        assert_eq!(
            parse_relationship("file:Service.kt|RELATED_TO|task-123", Some(&main)),
            Some(rel("file:service_kt", "related_to", "jira:task-123"))
        );
        assert_eq!(
            parse_relationship("OTHER-9|RELATED_TO|TASK-123", Some(&main)),
            Some(rel("entity:other-9", "related_to", "jira:task-123"))
        );
        // Without a main node a bare id is an entity.
        assert_eq!(
            parse_relationship("TASK-123|MENTIONS|user:john", None),
            Some(rel("entity:task-123", "mentions", "user:john"))
        );
        // A non-canonical main key still matches.
        let raw_main = key("JIRA:TASK-123");
        assert_eq!(
            parse_relationship("TASK-123|MENTIONS|user:john", Some(&raw_main)),
            Some(rel("jira:task-123", "mentions", "user:john"))
        );
    }

    #[test]
    fn blocked_by_is_reversed() {
        assert_eq!(
            parse_relationship("jira:A-1|BLOCKED_BY|jira:B-2", None),
            Some(rel("jira:b-2", "blocks", "jira:a-1"))
        );
        assert_eq!(
            parse_relationship("jira:A-1|blocks|jira:B-2", None),
            Some(rel("jira:a-1", "blocks", "jira:b-2"))
        );
        assert_eq!(
            parse_relationship("jira:A-1 -[blocked-by]-> jira:B-2", None),
            Some(rel("jira:b-2", "blocks", "jira:a-1"))
        );
    }

    #[test]
    fn rejects_malformed_relationships() {
        for bad in [
            "",
            "a|b",
            "a|b|c|d",
            "|b|c",
            "a||c",
            "a|b|",
            "just some text",
            "a -[]-> b",
            "a -[X] b",
            "a|b.c|d",
            "a->b",
            "a->b->c->d",
            "see jira:A|blocks|jira:B",
            "http://x.com|links|y",
            "a|B|c\nd",
            "!!!|B|c",
        ] {
            assert_eq!(parse_relationship(bad, None), None, "{bad:?}");
        }
    }

    // --- relationships in content ---

    const SEED_DOC: &str = "# TASK-123: Fix login bug\n\n**Assignee:** John Doe\n\n\
        The issue affects UserService.kt authentication flow.\nWe need to modify the login() method.\n\n\
        relationships: [\n  \"TASK-123|ASSIGNED_TO|user:john\",\n  \"TASK-123|AFFECTS|file:UserService.kt\",\n  \
        \"TASK-123|AFFECTS|method:UserService.login\"\n]\n";

    #[test]
    fn metadata_block_with_shorthand() {
        let main = key("jira:task-123");
        let found = find_relationships(SEED_DOC, Some(&main));
        assert_eq!(
            rels(&found),
            vec![
                rel("jira:task-123", "assigned_to", "user:john"),
                rel("jira:task-123", "affects", "file:userservice_kt"),
                rel("jira:task-123", "affects", "method:userservice_login"),
            ]
        );
        assert_eq!(
            &SEED_DOC[found[0].start..found[0].end],
            "TASK-123|ASSIGNED_TO|user:john"
        );
        assert_eq!(
            &SEED_DOC[found[2].start..found[2].end],
            "TASK-123|AFFECTS|method:UserService.login"
        );
    }

    #[test]
    fn metadata_block_json_and_yaml() {
        let json = r#"{"title": "x", "relationships": ["user:John Smith -[AUTHORED_BY]-> doc:Guide", 'a->uses->b', "nonsense"]}"#;
        let found = find_relationships(json, None);
        assert_eq!(
            rels(&found),
            vec![
                rel("user:john_smith", "authored_by", "confluence:guide"),
                rel("entity:a", "uses", "entity:b"),
            ]
        );
        assert_eq!(&json[found[1].start..found[1].end], "a->uses->b");

        let yaml = "Notes\nRelationships:\n  - jira:A-1|BLOCKED_BY|jira:B-2\n  - \"x->CALLS->y\"\nOther text a|b|c\n";
        let found = find_relationships(yaml, None);
        assert_eq!(
            rels(&found),
            vec![
                rel("jira:b-2", "blocks", "jira:a-1"),
                rel("entity:x", "calls", "entity:y")
            ]
        );
        assert_eq!(
            &yaml[found[0].start..found[0].end],
            "jira:A-1|BLOCKED_BY|jira:B-2"
        );
        assert_eq!(&yaml[found[1].start..found[1].end], "x->CALLS->y");
    }

    #[test]
    fn metadata_block_markdown_variants() {
        let md = "## Notes\n**Relationships:**\n* jira:A-1|BLOCKED_BY|jira:B-2\n+ user:jan -[OWNS]-> repo:evident\n\nDone.";
        let found = find_relationships(md, None);
        assert_eq!(
            rels(&found),
            vec![
                rel("jira:b-2", "blocks", "jira:a-1"),
                rel("user:jan", "owns", "repo:evident")
            ]
        );
        let next_line = "relationships:\n  [\"a|uses|b\",\r\n   \"c|uses|d\"]\r\n";
        let found = find_relationships(next_line, None);
        assert_eq!(
            rels(&found),
            vec![
                rel("entity:a", "uses", "entity:b"),
                rel("entity:c", "uses", "entity:d")
            ]
        );
        assert_eq!(&next_line[found[1].start..found[1].end], "c|uses|d");
        let escaped = r#"relationships = ["user:O\"Brien|AUTHORED_BY|doc:x"]"#;
        assert_eq!(
            rels(&find_relationships(escaped, None)),
            vec![rel("user:obrien", "authored_by", "confluence:x")]
        );
        // Prose after the keyword is not a block, and prose list items are not relationships.
        assert!(find_relationships("Relationships: none yet.\n- a|b|c\n", None).is_empty());
        assert!(
            find_relationships(
                "relationships:\n- Alice manages Bob -> weekly -> CEO\n",
                None
            )
            .is_empty()
        );
    }

    #[test]
    fn inline_formats_with_spans() {
        let text = "The ticket jira:TASK-1|BLOCKS|jira:TASK-2 is urgent; also (file:a.rs->CALLS->file:b.rs).\n\
                    And class:UserService -[CALLS]-> method:authenticate.\n";
        let found = find_relationships(text, None);
        assert_eq!(
            rels(&found),
            vec![
                rel("jira:task-1", "blocks", "jira:task-2"),
                rel("file:a_rs", "calls", "file:b_rs"),
                rel("class:userservice", "calls", "method:authenticate"),
            ]
        );
        let spans: Vec<&str> = found.iter().map(|f| &text[f.start..f.end]).collect();
        assert_eq!(
            spans,
            vec![
                "jira:TASK-1|BLOCKS|jira:TASK-2",
                "file:a.rs->CALLS->file:b.rs",
                "class:UserService -[CALLS]-> method:authenticate",
            ]
        );
    }

    #[test]
    fn inline_shorthand_and_bare_ids() {
        let main = key("jira:task-123");
        let found = find_relationships("See TASK-123->MENTIONS->user:john today", Some(&main));
        assert_eq!(
            rels(&found),
            vec![rel("jira:task-123", "mentions", "user:john")]
        );
        // Both ends bare: counts only with an edge in capitals.
        let found = find_relationships("ServiceA|DEPENDS_ON|ServiceB", None);
        assert_eq!(
            rels(&found),
            vec![rel("entity:servicea", "depends_on", "entity:serviceb")]
        );
        assert!(find_relationships("ServiceA|depends_on|ServiceB", None).is_empty());
    }

    #[test]
    fn no_relationships_from_tables_pipes_and_prose() {
        for text in [
            "| from | edge | to |\n|------|------|----|\n| a | b | c |\n|a|b|c|\n|jira:a|b|jira:c|\n",
            "x|y|z\n-|-|-\njira:a|b|jira:c\n",
            "cat x | grep y",
            "cat file|sort|uniq and ls -la|grep foo|wc -l",
            "input -> output, then Home->Settings->Privacy and a->b->c->d",
            "jira:A->B->C->jira:D",
            "see https://example.com/a|b|c and http://x.org/p->q->r for more",
            "ratio a|b|c or 10:30|at|11:45",
            "Just prose: users relate to tickets -> somehow.",
            "relationships are important: we have none",
            "relationships: [ \"a|B|c\" unclosed",
            "C:\\x|COPIED_TO|D:\\y",
            "a -[ CALLS ]-> b and a -[CALLS]- b",
        ] {
            assert!(
                find_relationships(text, None).is_empty(),
                "{text:?}: {:?}",
                find_relationships(text, None)
            );
        }
    }

    #[test]
    fn block_entries_are_not_counted_twice() {
        let text = "relationships: [\"jira:A|BLOCKS|jira:B\"]\nAlso jira:C|BLOCKS|jira:D.";
        let found = find_relationships(text, None);
        assert_eq!(
            rels(&found),
            vec![
                rel("jira:a", "blocks", "jira:b"),
                rel("jira:c", "blocks", "jira:d")
            ]
        );
    }

    #[test]
    fn pathological_inputs_are_fast_enough() {
        let patterns = [
            "a-[b",
            "relationships: [\"",
            "x|",
            "->",
            "relationships:\n- ",
            "jira:a|B|",
            "www.a:b",
            "a:b:",
        ];
        for p in patterns {
            let text = p.repeat(200_000 / p.len());
            let _ = find_relationships(&text, None);
            let _ = extract_refs(&text);
        }
        let long_token = "x".repeat(500_000) + "|B|" + &"y".repeat(500_000);
        assert!(find_relationships(&long_token, None).is_empty());
    }

    // --- refs in text ---

    #[test]
    fn extract_refs_positives() {
        let text = "Assigned to user:jan.novak, see jira:TASK-1 and Ž:Příliš žluťoučký. \
                    Again JIRA:task-1 (person:Jan). Mail **user:john.doe@example.com**.";
        let found = extract_refs(text);
        let keys: Vec<&str> = found.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(
            keys,
            vec![
                "user:jan_novak",
                "jira:task-1",
                "ž:příliš",
                "user:jan",
                "user:john_doe_example_com"
            ]
        );
        let spans: Vec<&str> = found.iter().map(|r| &text[r.start..r.end]).collect();
        assert_eq!(
            spans,
            vec![
                "user:jan.novak",
                "jira:TASK-1",
                "Ž:Příliš",
                "person:Jan",
                "user:john.doe@example.com"
            ]
        );
        assert_eq!(
            ref_keys("[link](jira:ABC-12) \"file:Service.kt\""),
            vec!["jira:abc-12", "file:service_kt"]
        );
        assert_eq!(
            ref_keys("end of sentence jira:ABC-12."),
            vec!["jira:abc-12"]
        );
        assert_eq!(ref_keys("TASK-1|MENTIONS|user:john"), vec!["user:john"]);
    }

    #[test]
    fn extract_refs_negatives() {
        for text in [
            "http://example.com:8080/path",
            "https://x.org/?q=jira:TASK-1&u=user:john",
            "see (https://x.org/a:b) now",
            "mailto:john@example.com",
            "file:///etc/passwd file:/tmp/x",
            "at 10:30 or 10:30:15 or T10:30",
            "2024-01-01T10:30:15Z",
            "C:\\Users\\x and C:/x and d:\\y",
            "fe80::1 and 2001:db8::ff00:42:8329 and fe80:0:0:0:202:b3ff:fe1e:8329 [::1]",
            "key: value and name:  John",
            "ratio 16:9 and 4:3",
            ":smile: :+1: :white_check_mark:",
            "std::collections::HashMap and Foo::bar",
            "data:image/png;base64,xyz",
            "javascript:alert(1)",
            "urn:isbn:0451450523",
            "localhost:8080",
            "www.example.com/a?ref=jira:X",
            "example.com:443 and host.name:8080",
            "Re:Meeting Fwd:Notes",
            "font-weight:bold;font-style:italic",
            "user@host:path",
        ] {
            assert!(
                extract_refs(text).is_empty(),
                "{text:?}: {:?}",
                extract_refs(text)
            );
        }
    }

    // --- properties ---

    fn check_spans_rel(text: &str) -> Result<(), TestCaseError> {
        for f in find_relationships(text, None) {
            prop_assert!(f.start <= f.end && f.end <= text.len());
            prop_assert!(text.is_char_boundary(f.start) && text.is_char_boundary(f.end));
        }
        let main = key("jira:task-1");
        for f in find_relationships(text, Some(&main)) {
            prop_assert!(text.is_char_boundary(f.start) && text.is_char_boundary(f.end));
        }
        Ok(())
    }

    fn check_spans_refs(text: &str) -> Result<(), TestCaseError> {
        for r in extract_refs(text) {
            prop_assert!(r.start < r.end && r.end <= text.len());
            prop_assert!(text.is_char_boundary(r.start) && text.is_char_boundary(r.end));
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn normalize_is_idempotent(s in ".*") {
            if let Some(k) = normalize_ref(&s)
                && k.as_str().contains(':')
            {
                prop_assert_eq!(normalize_ref(k.as_str()), Some(k.clone()));
            }
        }

        #[test]
        fn normalize_is_idempotent_on_ref_like_input(s in "[A-Za-zŽžŘřÍíŠšŤťŮůÝýÉéÆæØøßł0-9 _.:@/\\\\-]{0,40}") {
            if let Some(k) = normalize_ref(&s) {
                if k.as_str().contains(':') {
                    prop_assert_eq!(normalize_ref(k.as_str()), Some(k.clone()));
                }
                if let Some(f) = ascii_fold_key(&k) {
                    prop_assert!(f.as_str().is_ascii());
                }
            }
        }

        #[test]
        fn parsers_never_panic(s in ".*") {
            let _ = parse_relationship(&s, None);
            let _ = parse_relationship(&s, Some(&key("jira:task-1")));
            let _ = canonical_relation(&s);
            check_spans_rel(&s)?;
            check_spans_refs(&s)?;
        }

        #[test]
        fn parsers_never_panic_on_any_chars(v in proptest::collection::vec(any::<char>(), 0..200)) {
            let s: String = v.into_iter().collect();
            let _ = parse_relationship(&s, None);
            if let Some(k) = normalize_ref(&s) {
                let _ = ascii_fold_key(&k);
            }
            check_spans_rel(&s)?;
            check_spans_refs(&s)?;
        }

        #[test]
        fn parsers_never_panic_on_syntax_soup(s in "[a-zA-Z0-9:|\\-\\[\\]>\" \n,_.Ž/]{0,120}") {
            let _ = parse_relationship(&s, None);
            check_spans_rel(&s)?;
            check_spans_refs(&s)?;
            let wrapped = format!("relationships: [\"{s}\"]\nrelationships:\n - {s}\n");
            check_spans_rel(&wrapped)?;
        }
    }
}
