//! Every AQL query this crate sends: fixed templates, values and collection names only ever
//! as bind parameters (`@name`, `@@collection`). Each template is one line (the `\` line
//! continuations drop the newline), so the wire fixtures can pin its exact text.
//!
//! Visibility is evaluated inside the query: `@vis` is the reader's
//! [`Visibility::clauses`](evident_core::Visibility::clauses) as
//! `[{clientId, projectId, groupId, anyGroup}]`, and an evidence item `x` is admitted when
//! some clause has `clientId == x.clientId && projectId == x.projectId && (anyGroup ||
//! groupId == x.groupId)` — exactly `VisibilityClause::matches` (a missing field is `null`).
//!
//! ArangoDB allows one data-modification operation per collection per query, and no read of
//! a collection after it was modified; every template respects that.

/// The visibility test of one evidence item `x` (see above), in every read that filters
/// evidence: `FILTER` on `@vis` admitting `x`.
macro_rules! admits_x {
    () => {
        "FILTER LENGTH(@vis[* FILTER CURRENT.clientId == x.clientId AND CURRENT.projectId == x.projectId AND (CURRENT.anyGroup OR CURRENT.groupId == x.groupId)]) > 0 "
    };
}

/// Keeps the document `d` only when `@vis` admits one of its evidence items.
macro_rules! visible_d {
    () => {
        concat!(
            "LET ev = (FOR x IN d.evidence ",
            admits_x!(),
            "LIMIT 1 RETURN 1) FILTER LENGTH(ev) > 0 "
        )
    };
}

/// One partition's page of [`LIST_NODES`]: the visible keys of `$coll` after `@after`.
macro_rules! list_page {
    ($coll:literal) => {
        concat!(
            "(FOR d IN ",
            $coll,
            " FILTER @type == null OR d.type == @type FILTER d.key > @after ",
            visible_d!(),
            "SORT d.key LIMIT @limit RETURN d.key) "
        )
    };
}

/// One collection's count in [`COUNT_GRAPH`]: the visible documents of `$coll` whose `_key`
/// no collection named in `$before` holds visibly.
macro_rules! count_new {
    ($coll:literal, $before:literal) => {
        concat!(
            "FIRST(FOR d IN ",
            $coll,
            " ",
            visible_d!(),
            "LET dup = (FOR c IN ",
            $before,
            " LET o = DOCUMENT(c, d._key) FOR x IN NOT_NULL(o.evidence, []) ",
            admits_x!(),
            "LIMIT 1 RETURN 1) FILTER LENGTH(dup) == 0 COLLECT WITH COUNT INTO k RETURN k) "
        )
    };
}

/// Upserts a batch of nodes (`@nodes`) and then of edges (`@edges`) of one partition.
/// A node write with `describe == false` (a mention or an edge endpoint) only adds evidence;
/// props merge like JSON merge-patch: an existing document is updated with the combined patch
/// `props` (`mergeObjects` + `keepNull: false` delete the attributes it sets to `null`), a new
/// one is inserted with `insertProps`, the same patch with its `null`s removed at every depth
/// (`keepNull` applies to the UPDATE branch only); evidence is appended for chunk ids not
/// present yet (the first scope recorded for a chunk stays).
pub const UPSERT_GRAPH: &str = "LET n = (FOR w IN @nodes \
UPSERT { _key: w._key } \
INSERT { _key: w._key, key: w.key, type: w.type, label: w.label, props: w.insertProps, evidence: w.evidence, updatedAt: DATE_NOW() } \
UPDATE (w.describe \
? { type: w.type, label: w.label, props: w.props, evidence: APPEND(OLD.evidence, w.evidence[* FILTER CURRENT.chunkId NOT IN OLD.evidence[*].chunkId]), updatedAt: DATE_NOW() } \
: { evidence: APPEND(OLD.evidence, w.evidence[* FILTER CURRENT.chunkId NOT IN OLD.evidence[*].chunkId]) }) \
IN @@nodes OPTIONS { keepNull: false } RETURN 1) \
LET e = (FOR v IN @edges \
UPSERT { _key: v._key } \
INSERT { _key: v._key, _from: v._from, _to: v._to, fromKey: v.fromKey, toKey: v.toKey, edgeType: v.edgeType, props: v.insertProps, evidence: v.evidence } \
UPDATE { props: v.props, evidence: APPEND(OLD.evidence, v.evidence[* FILTER CURRENT.chunkId NOT IN OLD.evidence[*].chunkId]) } \
IN @@edges OPTIONS { keepNull: false } RETURN 1) \
RETURN { nodes: LENGTH(n), edges: LENGTH(e) }";

/// Step 1 of removing the evidence of `@chunks`: deletes the edges and nodes that have
/// evidence of `@chunks` and no other (found through the `evidence[*].chunkId` indexes);
/// returns how many of each. Each document goes by its own evidence, as in the embedded store.
///
/// Deleting first and stripping second ([`STRIP_EVIDENCE`]) keeps the pair retry-safe: each
/// step is idempotent and, whichever fails, running both again finds the same documents by
/// the chunk ids they still hold. (ArangoDB allows one modification per collection and
/// query, so deleting and updating a collection takes two queries.)
pub const REMOVE_EMPTIED: &str = "LET ek = (FOR c IN @chunks FOR d IN @@edges FILTER c IN d.evidence[*].chunkId \
FILTER LENGTH(d.evidence[* FILTER CURRENT.chunkId NOT IN @chunks]) == 0 RETURN DISTINCT d._key) \
LET nk = (FOR c IN @chunks FOR d IN @@nodes FILTER c IN d.evidence[*].chunkId \
FILTER LENGTH(d.evidence[* FILTER CURRENT.chunkId NOT IN @chunks]) == 0 RETURN DISTINCT d._key) \
LET e = (FOR d IN @@edges FILTER d._key IN ek REMOVE d IN @@edges RETURN 1) \
LET n = (FOR d IN @@nodes FILTER d._key IN nk REMOVE d IN @@nodes RETURN 1) \
RETURN { edges: LENGTH(e), nodes: LENGTH(n) }";

/// Step 2 of removing the evidence of `@chunks`: drops it from the nodes and edges that keep
/// other evidence. A document that would be left with none is not touched (only a write
/// racing step 1 makes one) and is counted in the single result, for step 1 to run again.
pub const STRIP_EVIDENCE: &str = "LET nk = (FOR c IN @chunks FOR d IN @@nodes FILTER c IN d.evidence[*].chunkId RETURN DISTINCT d._key) \
LET ek = (FOR c IN @chunks FOR d IN @@edges FILTER c IN d.evidence[*].chunkId RETURN DISTINCT d._key) \
LET n = (FOR d IN @@nodes FILTER d._key IN nk \
LET kept = d.evidence[* FILTER CURRENT.chunkId NOT IN @chunks] \
FILTER LENGTH(kept) > 0 \
UPDATE d WITH { evidence: kept } IN @@nodes RETURN 1) \
LET e = (FOR d IN @@edges FILTER d._key IN ek \
LET kept = d.evidence[* FILTER CURRENT.chunkId NOT IN @chunks] \
FILTER LENGTH(kept) > 0 \
UPDATE d WITH { evidence: kept } IN @@edges RETURN 1) \
RETURN LENGTH(nk) - LENGTH(n) + LENGTH(ek) - LENGTH(e)";

/// Deletes edges by `_key`; one row per edge deleted.
pub const REMOVE_EDGES: &str =
    "FOR d IN @@edges FILTER d._key IN @keys REMOVE d IN @@edges RETURN 1";

/// The node being folded (`@key`) and every edge touching it (`@id` = its `_id`).
pub const FOLD_READ: &str = "LET f = (FOR d IN @@nodes FILTER d._key == @key \
RETURN { type: d.type, label: d.label, props: d.props, evidence: d.evidence }) \
LET es = (FOR d IN @@edges FILTER d._from == @id OR d._to == @id \
RETURN { _key: d._key, fromKey: d.fromKey, toKey: d.toKey, edgeType: d.edgeType, props: d.props, evidence: d.evidence }) \
RETURN { node: f[0], edges: es }";

/// Creates or extends the fold target `@node` (its own props win) and re-points the folded
/// node's edges (`@edges`, existing props win, evidence merged).
pub const FOLD_WRITE: &str = "LET n = (UPSERT { _key: @node._key } \
INSERT MERGE(@node, { updatedAt: DATE_NOW() }) \
UPDATE { props: MERGE_RECURSIVE(@node.props, OLD.props), evidence: APPEND(OLD.evidence, @node.evidence[* FILTER CURRENT.chunkId NOT IN OLD.evidence[*].chunkId]), updatedAt: DATE_NOW() } \
IN @@nodes RETURN 1) \
LET e = (FOR v IN @edges \
UPSERT { _key: v._key } \
INSERT v \
UPDATE { props: MERGE_RECURSIVE(v.props, OLD.props), evidence: APPEND(OLD.evidence, v.evidence[* FILTER CURRENT.chunkId NOT IN OLD.evidence[*].chunkId]) } \
IN @@edges RETURN 1) \
RETURN { nodes: LENGTH(n), edges: LENGTH(e) }";

/// Deletes the folded node and its old edges; returns how many nodes were deleted.
pub const FOLD_REMOVE: &str = "LET e = (FOR d IN @@edges FILTER d._key IN @edges REMOVE d IN @@edges RETURN 1) \
LET n = (FOR d IN @@nodes FILTER d._key == @key REMOVE d IN @@nodes RETURN 1) \
RETURN LENGTH(n)";

/// Nodes among `@keys` (their `_key`s) with the evidence `@vis` admits; invisible ones skipped.
pub const GET_NODES: &str = concat!(
    "FOR d IN @@nodes FILTER d._key IN @keys LET ev = (FOR x IN d.evidence ",
    admits_x!(),
    "RETURN x.chunkId) FILTER LENGTH(ev) > 0 \
RETURN { key: d.key, type: d.type, label: d.label, props: d.props, evidence: ev }"
);

/// Edges at the nodes `@ids` of one partition, outgoing when `@outbound`, incoming when
/// `@inbound`, of `@types` (all when empty), at most `@perNode` per node and direction, each
/// with the evidence `@vis` admits (possibly none).
pub const EDGES_AT: &str = concat!(
    "FOR id IN @ids \
LET outs = (FOR o IN @@edges FILTER @outbound AND o._from == id FILTER LENGTH(@types) == 0 OR o.edgeType IN @types LIMIT @perNode RETURN o) \
LET ins = (FOR i IN @@edges FILTER @inbound AND i._to == id FILTER LENGTH(@types) == 0 OR i.edgeType IN @types LIMIT @perNode RETURN i) \
FOR e IN APPEND(outs, ins) LET ev = (FOR x IN e.evidence ",
    admits_x!(),
    "RETURN x.chunkId) \
RETURN { id: e._key, from: e.fromKey, to: e.toKey, edgeType: e.edgeType, props: e.props, evidence: ev }"
);

/// Evidence back-links of one partition: for each chunk id of `@chunks`, the nodes and the
/// edges whose evidence item for that chunk `@vis` admits. `c IN d.evidence[*].chunkId` is
/// the form the persistent array index on `evidence[*].chunkId` serves (ArangoDB "Indexing
/// array values"), so no collection is scanned.
pub const EVIDENCED_BY: &str = concat!(
    "LET n = (FOR c IN @chunks FOR d IN @@nodes FILTER c IN d.evidence[*].chunkId \
FOR x IN d.evidence FILTER x.chunkId == c ",
    admits_x!(),
    "RETURN DISTINCT { chunk: c, key: d.key }) \
LET e = (FOR c IN @chunks FOR d IN @@edges FILTER c IN d.evidence[*].chunkId \
FOR x IN d.evidence FILTER x.chunkId == c ",
    admits_x!(),
    "RETURN DISTINCT { chunk: c, from: d.fromKey, edgeType: d.edgeType, to: d.toKey }) \
RETURN { nodes: n, edges: e }"
);

/// Canonical keys of visible nodes whose key or label contains `@q` (lower-cased), of type
/// `@type` unless it is null; shortest keys first, at most `@limit`.
pub const SEARCH_NODES: &str = concat!(
    "FOR d IN @@nodes \
FILTER CONTAINS(LOWER(d.key), @q) OR CONTAINS(LOWER(d.label), @q) \
FILTER @type == null OR d.type == @type ",
    visible_d!(),
    "SORT LENGTH(d.key), d.key LIMIT @limit RETURN d.key"
);

/// Canonical keys of the visible nodes of type `@type` (every type when null) after `@after`
/// in `@@first` and `@@second` (the reader's two partitions, or one given twice), merged:
/// ascending, each once, at most `@limit`. Both partitions in one query so that the
/// server's collation orders the merged page exactly as it orders each partition's range.
/// `@after` null lists from the start: in AQL `null` is less than every string.
pub const LIST_NODES: &str = concat!(
    "LET a = ",
    list_page!("@@first"),
    "LET b = ",
    list_page!("@@second"),
    "FOR k IN UNION_DISTINCT(a, b) SORT k LIMIT @limit RETURN k"
);

/// How many nodes and edges of one partition (`@@nodes`, `@@edges`) `@vis` sees, leaving out
/// the keys already counted in the reader's earlier partitions (`@beforeNodes`,
/// `@beforeEdges`: collection names; a document with the same `_key` there that `@vis`
/// sees), so a key in both partitions counts once. `COLLECT WITH COUNT INTO` counts on
/// the server; nothing but the two numbers comes back.
pub const COUNT_GRAPH: &str = concat!(
    "LET n = ",
    count_new!("@@nodes", "@beforeNodes"),
    "LET e = ",
    count_new!("@@edges", "@beforeEdges"),
    "RETURN { nodes: NOT_NULL(n, 0), edges: NOT_NULL(e, 0) }"
);

/// Known aliases among `@aliases` of client `@client`, as `{alias, canonical}`.
pub const ALIAS_RESOLVE: &str = "FOR a IN @aliases \
FOR d IN @@aliases FILTER d.clientId == @client AND d.aliasKey == a \
RETURN { alias: d.aliasKey, canonical: d.canonicalKey }";

/// Inserts or re-points `@alias → @canonical`, counting it as seen once more.
pub const ALIAS_PUT: &str = "LET now = DATE_ISO8601(DATE_NOW()) \
UPSERT { clientId: @client, aliasKey: @alias } \
INSERT { clientId: @client, aliasKey: @alias, canonicalKey: @canonical, seenCount: 1, firstSeenAt: now, lastSeenAt: now } \
UPDATE { canonicalKey: @canonical, seenCount: OLD.seenCount + 1, lastSeenAt: now } \
IN @@aliases \
RETURN NEW";

/// Points every alias of `@from` (except `@to` itself) at `@to`; one row per alias moved.
pub const ALIAS_REPOINT: &str = "FOR d IN @@aliases \
FILTER d.clientId == @client AND d.canonicalKey == @from AND d.aliasKey != @to \
UPDATE d WITH { canonicalKey: @to } IN @@aliases \
RETURN 1";

/// Removes the alias entry of `@alias` (a key that became canonical).
pub const ALIAS_REMOVE: &str = "FOR d IN @@aliases \
FILTER d.clientId == @client AND d.aliasKey == @alias \
REMOVE d IN @@aliases \
RETURN 1";

/// Entries whose canonical key is `@canonical`.
pub const ALIAS_LIST: &str = "FOR d IN @@aliases \
FILTER d.clientId == @client AND d.canonicalKey == @canonical \
SORT d.aliasKey \
RETURN d";

/// Totals of one client and its `@top` most seen aliases.
pub const ALIAS_STATS: &str = "LET total = (FOR d IN @@aliases FILTER d.clientId == @client COLLECT WITH COUNT INTO c RETURN c) \
LET uniq = (FOR d IN @@aliases FILTER d.clientId == @client COLLECT k = d.canonicalKey RETURN 1) \
LET top = (FOR d IN @@aliases FILTER d.clientId == @client SORT d.seenCount DESC, d.aliasKey LIMIT @top RETURN d) \
RETURN { total: NOT_NULL(total[0], 0), unique: LENGTH(uniq), top: top }";

/// Adds accumulated seen counts (`@pending`: `[{clientId, aliasKey, count}]`).
pub const ALIAS_FLUSH: &str = "LET now = DATE_ISO8601(DATE_NOW()) \
FOR p IN @pending \
FOR d IN @@aliases FILTER d.clientId == p.clientId AND d.aliasKey == p.aliasKey \
UPDATE d WITH { seenCount: d.seenCount + p.count, lastSeenAt: now } IN @@aliases \
RETURN 1";

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: &[&str] = &[
        UPSERT_GRAPH,
        REMOVE_EMPTIED,
        STRIP_EVIDENCE,
        REMOVE_EDGES,
        FOLD_READ,
        FOLD_WRITE,
        FOLD_REMOVE,
        GET_NODES,
        EDGES_AT,
        SEARCH_NODES,
        LIST_NODES,
        COUNT_GRAPH,
        EVIDENCED_BY,
        ALIAS_RESOLVE,
        ALIAS_PUT,
        ALIAS_REPOINT,
        ALIAS_REMOVE,
        ALIAS_LIST,
        ALIAS_STATS,
        ALIAS_FLUSH,
    ];

    #[test]
    fn templates_are_single_lines_without_literals() {
        for q in ALL {
            assert!(!q.contains('\n'), "{q}");
            assert!(!q.contains("  "), "double space in {q}");
            // Values only ever come in as bind parameters: no string literals in templates.
            assert!(!q.contains('"') && !q.contains('\''), "{q}");
        }
    }

    /// `keepNull: false` only applies to UPSERT's UPDATE branch: new documents must be
    /// inserted from the null-free props, updates must get the patch with its nulls.
    #[test]
    fn inserts_take_null_free_props_and_updates_the_patch() {
        for (q, var) in [(UPSERT_GRAPH, "w"), (UPSERT_GRAPH, "v")] {
            let insert = q
                .split(&format!("INSERT {{ _key: {var}._key"))
                .nth(1)
                .and_then(|rest| rest.split(" UPDATE ").next())
                .unwrap_or_default();
            assert!(
                insert.contains(&format!("props: {var}.insertProps,")),
                "{insert}"
            );
            assert!(!insert.contains(&format!("props: {var}.props")), "{insert}");
        }
        assert_eq!(UPSERT_GRAPH.matches("props: w.props").count(), 1);
        assert_eq!(UPSERT_GRAPH.matches("props: v.props").count(), 1);
        assert_eq!(UPSERT_GRAPH.matches("keepNull: false").count(), 2);
    }

    /// Removal deletes before it strips, and never writes an empty evidence array: whatever
    /// step fails, the documents concerned still hold the chunk ids a retry looks for.
    #[test]
    fn evidence_removal_deletes_first_and_never_empties() {
        assert!(REMOVE_EMPTIED.contains("REMOVE d IN @@edges"));
        assert!(REMOVE_EMPTIED.contains("REMOVE d IN @@nodes"));
        assert!(!REMOVE_EMPTIED.contains("UPDATE"));
        assert!(!STRIP_EVIDENCE.contains("REMOVE"));
        assert_eq!(
            STRIP_EVIDENCE
                .matches("FILTER LENGTH(kept) > 0 UPDATE d WITH { evidence: kept }")
                .count(),
            2
        );
    }
}
