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
//!   (`Re:`, `Fwd:`, …) are skipped. `file:///x` is excluded by the `/` rule;
//! * the reserved namespaces of the structural vocabulary (`crate::keys::RESERVED_NAMESPACES`:
//!   `repository`, `branch`, `file`, `symbol`, `import`, `commit`, `message`, `thread`,
//!   `attachment`, `meeting`, `url`, checked after the entity-type aliases, so `module:x` and
//!   `revision:x` are reserved too) are never refs in text: `notmuch show thread:abc` or a
//!   note saying `commit:abc` makes no node. Their nodes come only from extractors and explicit
//!   relationships (a document's `relationships`, `a|REL|b` in its text);
//!   [`extract_query_refs`] keeps them, for looking up what a question names;
//! * command lines (a line opening with a shell prompt: `$ `, `% `, `PS> `) hold no refs.
//!
//! Times (`10:30`), ratios (`16:9`) and emoji shortcodes (`:smile:`) fail the namespace rule.

mod block;
mod inline;
mod key;
mod normalize;
mod relationship;
mod text;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;

pub use key::NodeKey;
pub use normalize::{ascii_fold_key, canonical_entity_type, canonical_relation, normalize_ref};
pub use relationship::{FoundRelationship, Relationship, find_relationships, parse_relationship};
pub use text::{FoundRef, extract_query_refs, extract_refs, is_command_line};

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

/// Byte offset of `sub` inside `text`; `sub` must be a subslice of `text`.
fn offset_in(text: &str, sub: &str) -> usize {
    (sub.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize)
}
