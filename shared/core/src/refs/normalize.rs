//! Normalisation: node keys from free-text refs, their ASCII-folded aliases, and the
//! canonical entity types and relation names.

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

use super::key::NodeKey;
use super::{ENTITY, MAX_EDGE_CHARS};

fn nfc(s: &str) -> String {
    s.nfc().collect()
}

pub(super) fn has_alnum(s: &str) -> bool {
    s.chars().any(char::is_alphanumeric)
}

/// NFC and lowercase `raw`, keeping its letters and digits and the combining marks right
/// after a kept letter or digit; every other character goes to `other`, which may write a
/// replacement to the output.
fn keep_alnum(raw: &str, mut other: impl FnMut(char, &mut String)) -> String {
    let lower = nfc(raw).to_lowercase();
    let mut out = String::with_capacity(lower.len());
    let mut after_base = false;
    for c in lower.chars() {
        if c.is_alphanumeric() {
            out.push(c);
            after_base = true;
        } else if after_base && is_combining_mark(c) {
            out.push(c);
        } else {
            other(c, &mut out);
            after_base = false;
        }
    }
    out
}

/// Namespace part: NFC, lowercase, keep letters/digits/`_` (and combining marks right after
/// a kept letter or digit). Empty when no letter or digit remains.
fn normalize_namespace(raw: &str) -> String {
    let out = keep_alnum(raw, |c, out| {
        if c == '_' {
            out.push(c);
        }
    });
    if !has_alnum(&out) {
        return String::new();
    }
    nfc(&out)
}

/// Value part: NFC, lowercase; whitespace `/` `\` `.` `@` become `_`; keep letters, digits,
/// `_`, `-` (and combining marks right after a kept letter or digit); collapse `_` runs; trim
/// `_`. Empty when no letter or digit remains.
fn normalize_value(raw: &str) -> String {
    let mut out = keep_alnum(raw, |c, out| {
        if c == '-' {
            out.push('-');
        } else if (c == '_' || c.is_whitespace() || matches!(c, '/' | '\\' | '.' | '@'))
            && !out.is_empty()
            && !out.ends_with('_')
        {
            out.push('_');
        }
    });
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
pub(super) fn key_from_parts(
    ns_raw: &str,
    value_raw: &str,
    allow_namespace_only: bool,
) -> Option<NodeKey> {
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
///
/// [`parse_relationship`]: super::parse_relationship
/// [`find_relationships`]: super::find_relationships
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
