//! [`SourceRegistry`] and [`SourceRecordWriter`] (the last step of a
//! [`SequencedWriter`](evident_store::SequencedWriter)) on MongoDB.
//!
//! `sources`: `_id: {partition, sourceUrn}`, `partition`, `sourceUrn`, scope fields, `kind`,
//! `title`, `contentHash`, `status` (`indexed` | `error`), `chunkCount`, `lastIndexedAt`,
//! `lastError`. A put replaces the whole record (upsert), so re-applying a write converges.
//! `list_prefix` is a range scan on the unique (partition, sourceUrn) index; strings compare
//! by their UTF-8 bytes, as in the embedded store.

use async_trait::async_trait;
use bson::{Document, doc};
use evident_core::Visibility;
use evident_store::{Result, SourceRecord, SourceRecordWriter, SourceRegistry, SourceStatus};

use crate::MongoStore;
use crate::fields::*;
use crate::schema::SOURCES;

const PREFIX_MAX: usize = 100_000;

pub(crate) fn source_id(partition: &str, urn: &str) -> Document {
    doc! {"partition": partition, "sourceUrn": urn}
}

pub(crate) fn get_command(partition: &str, urn: &str) -> Document {
    doc! {"find": SOURCES, "filter": {"_id": source_id(partition, urn)}, "limit": 1, "singleBatch": true}
}

/// The visibility rule ([`Visibility::clauses`]) as a filter: a field a clause wants absent
/// is matched with `null` (absent or null).
pub(crate) fn visibility_filter(vis: &Visibility) -> Document {
    let clauses: Vec<Document> = vis
        .clauses()
        .into_iter()
        .map(|c| {
            let mut d = doc! {
                "clientId": c.client_id.map(bson::Bson::String).unwrap_or(bson::Bson::Null),
                "projectId": c.project_id.map(bson::Bson::String).unwrap_or(bson::Bson::Null),
            };
            if let Some(group) = c.group_id {
                d.insert(
                    "groupId",
                    group.map(bson::Bson::String).unwrap_or(bson::Bson::Null),
                );
            }
            d
        })
        .collect();
    doc! {"$or": clauses}
}

pub(crate) fn list_command(vis: &Visibility, limit: usize) -> Document {
    doc! {
        "find": SOURCES,
        "filter": visibility_filter(vis),
        "sort": {"lastIndexedAt": -1, "sourceUrn": 1},
        "limit": limit.min(PREFIX_MAX) as i64,
    }
}

/// The smallest string greater than every string starting with `prefix`: `prefix` with its
/// last character incremented (`None` when there is none, e.g. an empty prefix).
pub(crate) fn prefix_upper_bound(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let mut next = last as u32 + 1;
        if (0xD800..=0xDFFF).contains(&next) {
            next = 0xE000;
        }
        if let Some(c) = char::from_u32(next) {
            chars.push(c);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

pub(crate) fn list_prefix_command(
    partition: &str,
    prefix: &str,
    after: Option<&str>,
    limit: usize,
) -> Document {
    let mut range = match after {
        Some(a) if a >= prefix => doc! {"$gt": a},
        _ => doc! {"$gte": prefix},
    };
    if let Some(upper) = prefix_upper_bound(prefix) {
        range.insert("$lt", upper);
    }
    doc! {
        "find": SOURCES,
        "filter": {"partition": partition, "sourceUrn": range},
        "sort": {"sourceUrn": 1},
        "limit": limit.clamp(1, PREFIX_MAX) as i64,
    }
}

fn status_str(s: SourceStatus) -> &'static str {
    match s {
        SourceStatus::Indexed => "indexed",
        SourceStatus::Error => "error",
    }
}

/// Replaces (or creates) the record.
pub(crate) fn put_command(rec: &SourceRecord) -> Document {
    let partition = rec.scope.partition();
    let mut d = doc! {"partition": partition, "sourceUrn": rec.source_urn.as_str()};
    insert_scope(&rec.scope, &mut d);
    d.insert("kind", rec.kind.as_str());
    if let Some(t) = &rec.title {
        d.insert("title", t.as_str());
    }
    d.extend(doc! {
        "contentHash": rec.content_hash.as_str(),
        "status": status_str(rec.status),
        "chunkCount": i64::try_from(rec.chunk_count).unwrap_or(i64::MAX),
        "lastIndexedAt": rec.last_indexed_at.as_str(),
    });
    if let Some(e) = &rec.last_error {
        d.insert("lastError", e.as_str());
    }
    doc! {
        "update": SOURCES,
        "updates": [{"q": {"_id": source_id(partition, &rec.source_urn)}, "u": d, "upsert": true}],
    }
}

pub(crate) fn remove_command(partition: &str, urn: &str) -> Document {
    doc! {"delete": SOURCES, "deletes": [{"q": {"_id": source_id(partition, urn)}, "limit": 1}]}
}

fn record_from_doc(d: &Document) -> Result<SourceRecord> {
    const WHAT: &str = "source record";
    Ok(SourceRecord {
        scope: scope_of(d),
        source_urn: req_str(d, "sourceUrn", WHAT)?,
        kind: req_str(d, "kind", WHAT)?,
        title: opt_str(d, "title"),
        content_hash: req_str(d, "contentHash", WHAT)?,
        status: if opt_str(d, "status").as_deref() == Some("error") {
            SourceStatus::Error
        } else {
            SourceStatus::Indexed
        },
        chunk_count: req_i64(d, "chunkCount", WHAT)?.max(0) as usize,
        last_indexed_at: req_str(d, "lastIndexedAt", WHAT)?,
        last_error: opt_str(d, "lastError"),
    })
}

#[async_trait]
impl SourceRegistry for MongoStore {
    async fn get(&self, partition: &str, source_urn: &str) -> Result<Option<SourceRecord>> {
        self.db()
            .find_one("get source record", get_command(partition, source_urn))
            .await?
            .map(|d| record_from_doc(&d))
            .transpose()
    }

    async fn list(&self, vis: &Visibility, limit: usize) -> Result<Vec<SourceRecord>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        self.db()
            .find_decoded(
                "list source records",
                list_command(vis, limit),
                record_from_doc,
            )
            .await
    }

    async fn list_prefix(
        &self,
        partition: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SourceRecord>> {
        let all = self
            .db()
            .find_decoded(
                "list source records",
                list_prefix_command(partition, prefix, after, limit),
                record_from_doc,
            )
            .await?;
        Ok(all
            .into_iter()
            .filter(|r| r.source_urn.starts_with(prefix))
            .collect())
    }
}

#[async_trait]
impl SourceRecordWriter for MongoStore {
    async fn put(&self, record: &SourceRecord) -> Result<()> {
        // Two puts of one new record at once: the retry replaces the winner's document (last
        // writer wins, as in SQL).
        self.db()
            .upsert("put source record", put_command(record))
            .await
    }

    async fn remove(&self, partition: &str, source_urn: &str) -> Result<()> {
        self.db()
            .write(
                "remove source record",
                remove_command(partition, source_urn),
            )
            .await
            .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use evident_core::Scope;

    #[test]
    fn prefix_ranges_cover_exactly_the_prefix() {
        assert_eq!(
            prefix_upper_bound("git:s:blob:main:").as_deref(),
            Some("git:s:blob:main;")
        );
        assert_eq!(prefix_upper_bound("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(prefix_upper_bound(""), None);
        assert_eq!(
            list_prefix_command("c1", "p:", Some("p:a"), 1),
            doc! {
                "find": "sources",
                "filter": {"partition": "c1", "sourceUrn": {"$gt": "p:a", "$lt": "p;"}},
                "sort": {"sourceUrn": 1},
                "limit": 1i64,
            }
        );
        // An `after` before the prefix starts the range at the prefix itself.
        assert_eq!(
            list_prefix_command("c1", "p:", Some("a"), 5)
                .get_document("filter")
                .and_then(|f| f.get_document("sourceUrn"))
                .cloned()
                .expect("range"),
            doc! {"$gte": "p:", "$lt": "p;"}
        );
    }

    #[test]
    fn visibility_clauses_become_an_or_filter() {
        let f = visibility_filter(&Visibility::of(Scope::client("c1").with_group("g1")));
        assert_eq!(
            f,
            doc! {"$or": [
                {"clientId": null, "projectId": null, "groupId": null},
                {"clientId": "c1", "projectId": null, "groupId": null},
                {"clientId": "c1", "projectId": null, "groupId": "g1"},
            ]}
        );
    }
}
