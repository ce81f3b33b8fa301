//! The entity index ([`GraphStore::match_entities`](evident_store::GraphStore::match_entities)):
//! every node's names analysed as chunks are (`evident_analysis`), in SQLite beside the
//! graph and written in the same transaction as the node.
//!
//! - `entity_terms(term, nid)`: the terms of all of a node's names and of its key's other
//!   segments (a file's directories, a symbol's package), one row each — the postings a
//!   query's terms are looked up in;
//! - `entity_names(nid, sig, names)`: the node's names (one per line) and a signature of
//!   them, so a node written again with the same names (a re-index, the common case) costs
//!   one lookup and no rewrite.
//!
//! (Tables in [`crate::schema::DDL`].) Both reference `nodes(nid) ON DELETE CASCADE`: a node deleted by a purge, a fold or an
//! explicit removal takes its postings with it. The index is versioned in `meta`
//! (`entity_index`: [`VERSION`] and the analysis fingerprint): a data dir from before it, or
//! built with another analysis, is indexed again at open ([`ensure_built`]).

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use evident_analysis::{Language, Term};
use evident_core::{NodeKey, Visibility};
use evident_store::{EntityMatch, Result};
use rusqlite::{Connection, OptionalExtension};
use serde_json::{Map, Value as Json};

use crate::sqlite_err;

/// Bump when what is indexed per node changes.
pub const VERSION: u32 = 1;

/// Props whose string values name a node.
const NAME_PROPS: &[&str] = &["name", "title", "displayName", "login"];
/// A query term in more nodes than this finds no candidates of its own (it still counts in
/// the coverage of a node found by another term): `src`, `java`, `test`.
const DF_CAP: usize = 2000;
/// Candidates read back (names analysed, visibility checked) per query, best matched mass
/// first.
const CANDIDATES: usize = 64;
/// The least share of a name the query must cover (a surname alone covers about half of
/// a two-word name, a little less when the surname is the commoner word).
pub const MIN_COVERAGE: f32 = 0.45;
/// The nominal node count the IDF is taken over (only ratios between terms matter).
const NOMINAL_NODES: f64 = 1e6;

fn marker() -> String {
    format!("{VERSION}:{}", evident_analysis::fingerprint())
}

/// Creates the tables and indexes every node when the data dir's index is missing or was
/// built by another version or analysis (the migration of data dirs from before it).
pub(crate) fn ensure_built(conn: &Connection) -> Result<()> {
    let have: Option<String> = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'entity_index'",
            [],
            |r| r.get(0),
        )
        .optional()
        .map_err(sqlite_err)?;
    if have.as_deref() == Some(marker().as_str()) {
        return Ok(());
    }
    let tx = conn.unchecked_transaction().map_err(sqlite_err)?;
    tx.execute_batch("DELETE FROM entity_terms; DELETE FROM entity_names;")
        .map_err(sqlite_err)?;
    let mut indexed = 0usize;
    {
        let mut stmt = tx
            .prepare("SELECT nid, partition, key, label, props FROM nodes")
            .map_err(sqlite_err)?;
        let mut rows = stmt.query([]).map_err(sqlite_err)?;
        while let Some(r) = rows.next().map_err(sqlite_err)? {
            let (nid, partition, key, label, props): (i64, String, String, String, String) = (
                r.get(0).map_err(sqlite_err)?,
                r.get(1).map_err(sqlite_err)?,
                r.get(2).map_err(sqlite_err)?,
                r.get(3).map_err(sqlite_err)?,
                r.get(4).map_err(sqlite_err)?,
            );
            index_node(&tx, nid, &partition, &key, &label, &props)?;
            indexed += 1;
        }
    }
    tx.execute(
        "INSERT INTO meta(key, value) VALUES ('entity_index', ?1) \
         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        [marker()],
    )
    .map_err(sqlite_err)?;
    tx.commit().map_err(sqlite_err)?;
    tracing::info!(nodes = indexed, "entity index built");
    Ok(())
}

/// A node's names: its label, its name props, its key value's last segment (and that
/// segment without its extension or parameter list), and the values of the aliases the
/// registry maps to it.
fn names_of(
    conn: &Connection,
    partition: &str,
    key: &str,
    label: &str,
    props: &str,
) -> Result<Vec<String>> {
    let mut names: Vec<String> = vec![label.to_string()];
    if props.len() > 2 && NAME_PROPS.iter().any(|p| props.contains(p)) {
        let props: Map<String, Json> = serde_json::from_str(props).unwrap_or_default();
        for p in NAME_PROPS {
            if let Some(Json::String(v)) = props.get(*p) {
                names.push(v.clone());
            }
        }
    }
    let k = NodeKey::from_canonical(key);
    names.push(last_segment(k.value()).to_string());
    // An exact key's aliases are its folded spellings (`keys::folded`): no new names.
    if evident_core::keys::is_exact(&k) {
        let mut seen = HashSet::new();
        names.retain(|n| !n.trim().is_empty() && seen.insert(n.clone()));
        return Ok(names);
    }
    let mut aliases = conn
        .prepare_cached(
            "SELECT alias_key FROM aliases WHERE client = ?1 AND canonical_key = ?2 LIMIT 16",
        )
        .map_err(sqlite_err)?;
    let found: Vec<String> = aliases
        .query_map([partition, key], |r| r.get(0))
        .map_err(sqlite_err)?
        .collect::<rusqlite::Result<_>>()
        .map_err(sqlite_err)?;
    for a in found {
        names.push(NodeKey::from_canonical(a).value().to_string());
    }
    let mut seen = HashSet::new();
    names.retain(|n| !n.trim().is_empty() && seen.insert(n.clone()));
    Ok(names)
}

/// The name a key's value ends with: a path's file name, a qualified name's last part
/// (`repo/com.acme.FieldSpec` → `FieldSpec`, `…Cart.add(Item,int)` → `add`).
fn last_segment(value: &str) -> &str {
    let v = value.split('(').next().unwrap_or(value);
    let v = v.rsplit('/').next().unwrap_or(v);
    // A file name keeps its extension (`mbox.rs`); a dotted qualified name gives its last part.
    let parts: Vec<&str> = v.split('.').collect();
    if parts.len() > 2 || (parts.len() == 2 && parts[1].len() > 4) {
        parts[parts.len() - 1]
    } else {
        v
    }
}

/// The terms of a name: stems and whole identifiers (exact forms add nothing to a name).
pub fn name_terms(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    evident_analysis::document_terms(text, Language::English, |t: &str, kind| {
        if matches!(kind, Term::Word | Term::Whole) && !out.iter().any(|o| o == t) {
            out.push(t.to_string());
        }
    });
    out
}

fn signature(names: &[String], context: &[String]) -> i64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    names.hash(&mut h);
    context.hash(&mut h);
    h.finish() as i64
}

/// (Re)indexes node `nid` when its names changed since it was last indexed. Runs inside the
/// caller's transaction.
pub(crate) fn index_node(
    conn: &Connection,
    nid: i64,
    partition: &str,
    key: &str,
    label: &str,
    props: &str,
) -> Result<()> {
    let names = names_of(conn, partition, key, label, props)?;
    // The key value's other segments: context terms (a file's directories), not names.
    let k = NodeKey::from_canonical(key);
    let context: Vec<String> = k
        .value()
        .split('/')
        .rev()
        .skip(1)
        .take(6)
        .map(str::to_string)
        .collect();
    let sig = signature(&names, &context);
    let stored: Option<i64> = conn
        .prepare_cached("SELECT sig FROM entity_names WHERE nid = ?1")
        .map_err(sqlite_err)?
        .query_row([nid], |r| r.get(0))
        .optional()
        .map_err(sqlite_err)?;
    if stored == Some(sig) {
        return Ok(());
    }
    conn.prepare_cached("DELETE FROM entity_terms WHERE nid = ?1")
        .map_err(sqlite_err)?
        .execute([nid])
        .map_err(sqlite_err)?;
    let mut terms: HashSet<String> = HashSet::new();
    for text in names.iter().chain(context.iter()) {
        terms.extend(name_terms(text));
    }
    let mut insert = conn
        .prepare_cached("INSERT OR IGNORE INTO entity_terms(term, nid) VALUES (?1, ?2)")
        .map_err(sqlite_err)?;
    for t in &terms {
        insert
            .execute(rusqlite::params![t, nid])
            .map_err(sqlite_err)?;
    }
    conn.prepare_cached(
        "INSERT INTO entity_names(nid, sig, names) VALUES (?1, ?2, ?3) \
         ON CONFLICT(nid) DO UPDATE SET sig = excluded.sig, names = excluded.names",
    )
    .map_err(sqlite_err)?
    .execute(rusqlite::params![nid, sig, names.join("\n")])
    .map_err(sqlite_err)?;
    Ok(())
}

/// Re-indexes the node of `(partition, key)` from its stored row (after a fold, or an alias
/// registered for it); nothing when it does not exist.
pub(crate) fn reindex_key(conn: &Connection, partition: &str, key: &str) -> Result<()> {
    if evident_core::keys::is_exact(&NodeKey::from_canonical(key)) {
        return Ok(()); // its aliases add no names (see `names_of`), a fold of one is rare
    }
    let row: Option<(i64, String, String)> = conn
        .prepare_cached("SELECT nid, label, props FROM nodes WHERE partition = ?1 AND key = ?2")
        .map_err(sqlite_err)?
        .query_row([partition, key], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()
        .map_err(sqlite_err)?;
    match row {
        Some((nid, label, props)) => index_node(conn, nid, partition, key, &label, &props),
        None => Ok(()),
    }
}

fn idf(df: usize) -> f64 {
    (1.0 + NOMINAL_NODES / df.max(1) as f64).ln()
}

/// The query's terms to look up: its words' stems, its whole identifiers and the names its
/// consecutive words make (`field spec` → `fieldspec`), each once.
fn lookup_terms(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for q in evident_analysis::query_terms(query) {
        let t = match q.kind {
            Term::Word | Term::Whole => q.text,
            Term::Defines => q
                .text
                .trim_start_matches(evident_analysis::DEFINES)
                .to_string(),
            Term::Exact => continue,
        };
        if !t.is_empty() && !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// Matched query-term indexes per node id, and each query term's document frequency.
type Postings = (HashMap<i64, Vec<usize>>, Vec<usize>);

/// Candidate nodes per query term: (nid → matched terms), with each term's document
/// frequency (terms past [`DF_CAP`] find nothing of their own).
fn postings(conn: &Connection, terms: &[String]) -> Result<Postings> {
    let mut by_node: HashMap<i64, Vec<usize>> = HashMap::new();
    let mut dfs = Vec::with_capacity(terms.len());
    let mut stmt = conn
        .prepare_cached("SELECT nid FROM entity_terms WHERE term = ?1 LIMIT ?2")
        .map_err(sqlite_err)?;
    for (i, t) in terms.iter().enumerate() {
        let nids: Vec<i64> = stmt
            .query_map(rusqlite::params![t, (DF_CAP + 1) as i64], |r| r.get(0))
            .map_err(sqlite_err)?
            .collect::<rusqlite::Result<_>>()
            .map_err(sqlite_err)?;
        dfs.push(nids.len());
        if nids.len() > DF_CAP {
            continue;
        }
        for nid in nids {
            by_node.entry(nid).or_default().push(i);
        }
    }
    Ok((by_node, dfs))
}

/// The best coverage of a node's names by the query terms (IDF-weighted), and the terms
/// matched in that name. Terms unknown to the index weigh as the rarest.
fn coverage(names: &str, terms: &[String], dfs: &[usize]) -> (f32, Vec<String>) {
    let weight = |t: &str| {
        terms
            .iter()
            .position(|q| q == t)
            .map_or(idf(1), |i| idf(dfs[i]))
    };
    let mut best = (0.0f32, Vec::new());
    for name in names.lines() {
        let nt = name_terms(name);
        if nt.is_empty() {
            continue;
        }
        // A whole identifier stands for its parts: matched whole, the name is covered.
        let total: f64 = nt.iter().map(|t| weight(t)).sum();
        let matched: Vec<String> = terms.iter().filter(|q| nt.contains(q)).cloned().collect();
        let whole = nt.len() > 1
            && matched
                .iter()
                .any(|m| nt.iter().all(|t| t == m || m.contains(t.as_str())));
        let got: f64 = matched.iter().map(|t| weight(t)).sum();
        let cov = if whole {
            1.0
        } else {
            (got / total).min(1.0) as f32
        };
        if cov > best.0 {
            best = (cov, matched);
        }
    }
    best
}

/// See [`GraphStore::match_entities`](evident_store::GraphStore::match_entities).
pub(crate) fn match_entities(
    conn: &Connection,
    vis: &Visibility,
    query: &str,
    limit: usize,
) -> Result<Vec<EntityMatch>> {
    let terms = lookup_terms(query);
    if terms.is_empty() || limit == 0 {
        return Ok(Vec::new());
    }
    let (by_node, dfs) = postings(conn, &terms)?;
    // Best matched mass first: the candidates worth reading.
    let mut ranked: Vec<(f64, i64)> = by_node
        .iter()
        .map(|(nid, ts)| (ts.iter().map(|i| idf(dfs[*i])).sum(), *nid))
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    ranked.truncate(CANDIDATES);
    let parts = vis.partitions();
    let mut scored: Vec<(f32, Vec<String>, NodeKey)> = Vec::new();
    let mut read = conn
        .prepare_cached(
            "SELECT n.partition, n.key, en.names FROM nodes n JOIN entity_names en ON en.nid = n.nid \
             WHERE n.nid = ?1",
        )
        .map_err(sqlite_err)?;
    for (_, nid) in &ranked {
        let Some((partition, key, names)) = read
            .query_row([nid], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .optional()
            .map_err(sqlite_err)?
        else {
            continue;
        };
        if !parts.contains(&partition.as_str()) {
            continue;
        }
        let (cov, matched) = coverage(&names, &terms, &dfs);
        if cov >= MIN_COVERAGE && !scored.iter().any(|s| s.2.as_str() == key) {
            scored.push((cov, matched, NodeKey::from_canonical(key)));
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.2.cmp(&b.2)));
    scored.truncate(limit.saturating_mul(2));
    let keys: Vec<NodeKey> = scored.iter().map(|s| s.2.clone()).collect();
    let mut nodes: HashMap<String, evident_core::Node> =
        crate::graph::read_nodes(conn, vis, &keys)?
            .into_iter()
            .map(|n| (n.key.as_str().to_string(), n))
            .collect();
    let mut out = Vec::new();
    for (coverage, matched, key) in scored {
        if let Some(node) = nodes.remove(key.as_str()) {
            out.push(EntityMatch {
                node,
                matched,
                coverage,
            });
        }
        if out.len() >= limit {
            break;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_end_in_their_keys_last_segment() {
        assert_eq!(last_segment("r/src/mail/mbox.rs"), "mbox.rs");
        assert_eq!(last_segment("r/com.acme.FieldSpec"), "FieldSpec");
        assert_eq!(last_segment("r/com.acme.Cart.add(Item,int)"), "add");
        assert_eq!(last_segment("billing"), "billing");
        assert_eq!(
            last_segment("jan_novak_example_com"),
            "jan_novak_example_com"
        );
    }

    #[test]
    fn identifiers_in_words_cover_their_name() {
        let terms = lookup_terms("how does the field spec work");
        let dfs = vec![1; terms.len()];
        let (cov, matched) = coverage("FieldSpec", &terms, &dfs);
        assert!(cov >= 0.99, "{cov} {matched:?} {terms:?}");
        let (cov, _) = coverage(
            "Jan Novák",
            &lookup_terms("what did jan novak change"),
            &[1; 8],
        );
        assert!(cov >= 0.99, "{cov}");
        let q = lookup_terms("what did novak change");
        let (cov, _) = coverage("Jan Novák", &q, &vec![1; q.len()]);
        assert!((0.4..0.6).contains(&cov), "{cov}");
        let q = lookup_terms("the weather today");
        let (cov, _) = coverage("FieldSpec", &q, &vec![1; q.len()]);
        assert_eq!(cov, 0.0);
    }
}
