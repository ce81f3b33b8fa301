//! The collections Evident keeps in Weaviate, their migration, and the vector-space record.
//!
//! Migration never loses data: a missing collection is created; an existing one gets any
//! missing property added (`POST /v1/schema/{class}/properties`); anything that cannot be
//! fixed in place — a property of another type, an exact-match property tokenised by words,
//! another distance metric, a vectorizer, a null state that is not indexed, the other
//! tenancy mode — refuses to connect with `Incompatible`, naming every problem.

use evident_store::{ErrorKind, Result, StoreError, VectorSpace};
use reqwest::Method;
use serde_json::{Value, json};

use crate::Inner;
use crate::client::{Client, Reply};
use crate::error;
use crate::ids::meta_object_id;

/// One property Evident needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PropSpec {
    pub name: &'static str,
    /// `text`, `text[]`, `int` or `number`.
    pub data_type: &'static str,
    /// `field` (exact match: the whole value is one token) or `word` (full text).
    pub tokenization: Option<&'static str>,
    pub filterable: bool,
    pub searchable: bool,
}

const fn exact(name: &'static str, filterable: bool) -> PropSpec {
    PropSpec {
        name,
        data_type: "text",
        tokenization: Some("field"),
        filterable,
        searchable: false,
    }
}

const fn words(name: &'static str) -> PropSpec {
    PropSpec {
        name,
        data_type: "text",
        tokenization: Some("word"),
        filterable: false,
        searchable: true,
    }
}

const fn int(name: &'static str, filterable: bool) -> PropSpec {
    PropSpec {
        name,
        data_type: "int",
        tokenization: None,
        filterable,
        searchable: false,
    }
}

/// A 64-bit float: exact for integers up to 2^53. Used for epoch-based values, because
/// GraphQL `Int` is 32-bit and Weaviate answers larger `int` values as `null` in `Get`.
const fn number(name: &'static str) -> PropSpec {
    PropSpec {
        name,
        data_type: "number",
        tokenization: None,
        filterable: false,
        searchable: false,
    }
}

/// Properties of a chunk object. Ids and scope are exact-match (`field`) and filterable;
/// only `title` and `content` are BM25-searchable; JSON-encoded values are stored, not indexed.
/// `createdAt` (epoch ms) and `seq` (the newest-first key) are `number`s, see [`number`].
pub(crate) const CHUNK_PROPS: &[PropSpec] = &[
    exact("chunkId", true),
    exact("partition", true),
    exact("clientId", true),
    exact("projectId", true),
    exact("groupId", true),
    exact("sourceUrn", true),
    exact("kind", true),
    words("title"),
    words("content"),
    exact("contentHash", false),
    exact("locator", false),
    PropSpec {
        name: "graphRefs",
        data_type: "text[]",
        tokenization: Some("field"),
        filterable: true,
        searchable: false,
    },
    exact("metadata", false),
    exact("observedAt", true),
    int("ordinal", true),
    number("createdAt"),
    number("seq"),
    // Typed-knowledge labels (issue 17), copied out of `metadata` so `where` filters them
    // exactly; see `chunks::labels`.
    exact("knowledgeType", true),
    exact("infoType", true),
    PropSpec {
        name: "tags",
        data_type: "text[]",
        tokenization: Some("field"),
        filterable: true,
        searchable: false,
    },
    exact("entity", true),
];

/// Properties that may be added to a collection already holding objects, because the
/// adapter back-fills them (`chunks::labels`): they are derived from the stored `metadata`,
/// and re-writing them on each object that has a value makes Weaviate index it.
pub(crate) const BACKFILLED_PROPS: &[&str] = &["knowledgeType", "infoType", "tags", "entity"];

/// Properties of a record in the meta collection.
pub(crate) const META_PROPS: &[PropSpec] = &[exact("key", true), exact("value", false)];

impl PropSpec {
    pub fn to_json(self) -> Value {
        let mut p = json!({
            "name": self.name,
            "dataType": [self.data_type],
            "indexFilterable": self.filterable,
        });
        if let Some(t) = self.tokenization {
            p["tokenization"] = json!(t);
            p["indexSearchable"] = json!(self.searchable);
        }
        p
    }

    /// Why an existing property cannot serve as this one (`None`: it can).
    fn incompatibility(&self, existing: &Value) -> Option<String> {
        let types: Vec<&str> = existing
            .get("dataType")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if types != [self.data_type] {
            return Some(format!(
                "property `{}` is {:?}, Evident needs [\"{}\"]",
                self.name, types, self.data_type
            ));
        }
        if self.filterable
            && existing.get("indexFilterable").and_then(Value::as_bool) == Some(false)
        {
            return Some(format!(
                "property `{}` is not filterable (indexFilterable: false)",
                self.name
            ));
        }
        if self.searchable
            && existing.get("indexSearchable").and_then(Value::as_bool) == Some(false)
        {
            return Some(format!(
                "property `{}` is not searchable (indexSearchable: false)",
                self.name
            ));
        }
        if self.filterable && self.tokenization == Some("field") {
            let got = existing.get("tokenization").and_then(Value::as_str);
            if got != Some("field") {
                return Some(format!(
                    "property `{}` is tokenised as `{}`, so filters on it would not be exact \
                     (Evident needs `field`)",
                    self.name,
                    got.unwrap_or("word")
                ));
            }
        }
        None
    }
}

/// The chunk collection: vectors supplied by Evident (no vectorizer), cosine distance, BM25,
/// null state indexed (global data is "no clientId").
pub(crate) fn chunk_class(name: &str, multi_tenancy: bool) -> Value {
    json!({
        "class": name,
        "description": "Evident chunks: text, scope, source and locator of each chunk, with the vector Evident computed for it",
        "vectorizer": "none",
        "vectorIndexType": "hnsw",
        "vectorIndexConfig": {"distance": "cosine"},
        "invertedIndexConfig": {
            "bm25": {"b": 0.75, "k1": 1.2},
            "indexNullState": true,
            "stopwords": {"preset": "en"}
        },
        "multiTenancyConfig": {"enabled": multi_tenancy},
        "properties": CHUNK_PROPS.iter().copied().map(PropSpec::to_json).collect::<Vec<_>>(),
    })
}

/// The meta collection: small records keyed by `key` (today: the vector space).
pub(crate) fn meta_class(name: &str, chunk_class: &str) -> Value {
    json!({
        "class": name,
        "description": format!("Evident: settings of collection {chunk_class} (its vector space)"),
        "vectorizer": "none",
        "multiTenancyConfig": {"enabled": false},
        "properties": META_PROPS.iter().copied().map(PropSpec::to_json).collect::<Vec<_>>(),
    })
}

/// What an existing collection must be like besides its properties.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rules {
    pub multi_tenancy: bool,
    /// The chunk collection: vectors, distance and null-state checks apply.
    pub chunks: bool,
}

/// Properties to add to `existing`, or `Incompatible` naming every problem.
pub(crate) fn plan_migration<'a>(
    existing: &Value,
    props: &'a [PropSpec],
    rules: Rules,
) -> Result<Vec<&'a PropSpec>> {
    let name = existing.get("class").and_then(Value::as_str).unwrap_or("?");
    let mut problems = if rules.chunks {
        vector_problems(existing)
    } else {
        Vec::new()
    };
    problems.extend(tenancy_problem(existing, rules.multi_tenancy));
    let present: Vec<&Value> = existing
        .get("properties")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let mut missing = Vec::new();
    for spec in props {
        let found = present.iter().find(|p| {
            p.get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| n == spec.name)
        });
        match found {
            Some(p) => {
                if let Some(problem) = spec.incompatibility(p) {
                    problems.push(problem);
                }
            }
            None => missing.push(spec),
        }
    }
    if problems.is_empty() {
        Ok(missing)
    } else {
        Err(StoreError::incompatible(format!(
            "collection `{name}` cannot be used as it is: {}",
            problems.join("; ")
        )))
    }
}

/// What keeps an existing chunk collection from holding Evident's vectors and scope
/// filters: a vectorizer, named vectors, a distance other than cosine, null state not
/// indexed.
fn vector_problems(existing: &Value) -> Vec<String> {
    let mut problems: Vec<String> = Vec::new();
    if let Some(v) = existing.get("vectorizer").and_then(Value::as_str)
        && v != "none"
    {
        problems.push(format!(
            "vectorizer is `{v}`, but Evident supplies the vectors (needs `none`)"
        ));
    }
    if existing
        .get("vectorConfig")
        .and_then(Value::as_object)
        .is_some_and(|m| !m.is_empty())
    {
        problems.push("it uses named vectors; Evident needs the single default vector".into());
    }
    if let Some(d) = existing
        .pointer("/vectorIndexConfig/distance")
        .and_then(Value::as_str)
        && d != "cosine"
    {
        problems.push(format!("vector distance is `{d}`, scores need `cosine`"));
    }
    if existing
        .pointer("/invertedIndexConfig/indexNullState")
        .and_then(Value::as_bool)
        != Some(true)
    {
        problems.push(
            "null state is not indexed (invertedIndexConfig.indexNullState), so scope \
             filters cannot tell global from client data"
                .into(),
        );
    }
    problems
}

/// A multi-tenancy setting other than the configuration's.
fn tenancy_problem(existing: &Value, multi_tenancy: bool) -> Option<String> {
    let mt = existing
        .pointer("/multiTenancyConfig/enabled")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    (mt != multi_tenancy).then(|| {
        format!(
            "multi-tenancy is {}, the configuration says {}",
            if mt { "enabled" } else { "disabled" },
            if multi_tenancy { "enabled" } else { "disabled" }
        )
    })
}

/// What [`ensure_class`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ensured {
    /// The collection was created with every property.
    Created,
    /// The collection existed; missing properties were added, except `deferred`: back-filled
    /// properties missing on a collection that holds objects, which the caller adds together
    /// with their back-fill. `had_backfilled`: every back-filled property was there already.
    Existing {
        deferred: Vec<PropSpec>,
        had_backfilled: bool,
    },
}

/// Creates `def`'s collection when missing, else checks it and adds missing properties.
pub(crate) async fn ensure_class(
    client: &Client,
    def: &Value,
    props: &[PropSpec],
    rules: Rules,
) -> Result<Ensured> {
    let name = def.get("class").and_then(Value::as_str).unwrap_or_default();
    let Some(existing) = existing_or_create(client, def, name).await? else {
        return Ok(Ensured::Created);
    };
    let missing = plan_migration(&existing, props, rules)?;
    let had_backfilled = !missing.iter().any(|p| BACKFILLED_PROPS.contains(&p.name));
    // Weaviate indexes a property added after import only for objects written later: the
    // objects already there would silently drop out of every filter (and BM25) on it.
    let indexed: Vec<&str> = missing
        .iter()
        .filter(|p| p.filterable || p.searchable)
        .map(|p| p.name)
        .collect();
    let populated = !indexed.is_empty() && holds_objects(client, name, rules.multi_tenancy).await?;
    let refused: Vec<&str> = indexed
        .iter()
        .copied()
        .filter(|n| !BACKFILLED_PROPS.contains(n))
        .collect();
    if populated && !refused.is_empty() {
        return Err(StoreError::incompatible(format!(
            "collection `{name}` lacks the indexed properties {} and already holds objects; \
             Weaviate would not index them for those objects, which would vanish from filtered \
             reads. Point `[weaviate] collection` at a new collection and re-index",
            refused.join(", ")
        )));
    }
    let mut deferred = Vec::new();
    for spec in missing {
        if populated && BACKFILLED_PROPS.contains(&spec.name) {
            deferred.push(*spec);
        } else {
            add_property(client, name, spec).await?;
        }
    }
    Ok(Ensured::Existing {
        deferred,
        had_backfilled,
    })
}

/// The collection's definition, or `None` after creating it from `def`.
async fn existing_or_create(client: &Client, def: &Value, name: &str) -> Result<Option<Value>> {
    let path = format!("/v1/schema/{name}");
    let reply = client.send(Method::GET, &path, &[], None).await?;
    match reply.status {
        200 if !reply.body.is_null() => Ok(Some(reply.body)),
        200 | 404 => {
            let created = client
                .send(Method::POST, "/v1/schema", &[], Some(def))
                .await?;
            if created.is_success() {
                tracing::info!(collection = name, "created Weaviate collection");
                return Ok(None);
            }
            if created.status == 422 && created.message().to_lowercase().contains("already exists")
            {
                // Another process created it meanwhile: check theirs like any existing one.
                Ok(Some(
                    client
                        .send(Method::GET, &path, &[], None)
                        .await?
                        .ok(&format!("reading collection `{name}`"))?,
                ))
            } else {
                Err(error::status(
                    &format!("creating collection `{name}`"),
                    created.status,
                    &created.body,
                ))
            }
        }
        s => Err(error::status(
            &format!("reading collection `{name}`"),
            s,
            &reply.body,
        )),
    }
}

/// `POST /v1/schema/{class}/properties`.
pub(crate) async fn add_property(client: &Client, class: &str, spec: &PropSpec) -> Result<()> {
    client
        .send(
            Method::POST,
            &format!("/v1/schema/{class}/properties"),
            &[],
            Some(&spec.to_json()),
        )
        .await?
        .ok(&format!(
            "adding property `{}` to collection `{class}`",
            spec.name
        ))?;
    tracing::info!(
        collection = class,
        property = spec.name,
        "added property to Weaviate collection"
    );
    Ok(())
}

/// Whether the collection may hold objects: one object listed, or (multi-tenant, where
/// listing needs a tenant) any tenant at all.
async fn holds_objects(client: &Client, name: &str, multi_tenancy: bool) -> Result<bool> {
    if multi_tenancy {
        let tenants = client
            .send(
                Method::GET,
                &format!("/v1/schema/{name}/tenants"),
                &[],
                None,
            )
            .await?
            .ok(&format!("listing the tenants of collection `{name}`"))?;
        return Ok(tenants.as_array().is_some_and(|t| !t.is_empty()));
    }
    let listed = client
        .send(
            Method::GET,
            "/v1/objects",
            &[("class", name), ("limit", "1")],
            None,
        )
        .await?
        .ok(&format!("listing objects of collection `{name}`"))?;
    Ok(listed
        .get("objects")
        .and_then(Value::as_array)
        .is_some_and(|o| !o.is_empty()))
}

/// Oldest Weaviate this adapter works with: 1.24, where `relativeScoreFusion` became the
/// hybrid default and a hybrid query with an empty text acts as a vector search (field
/// tokenisation, `ContainsAny` and multi-tenancy are older).
const MIN_VERSION: (u32, u32) = (1, 24);

/// Checks `GET /v1/meta`; returns the server version.
pub(crate) async fn check_version(client: &Client) -> Result<String> {
    let meta = client
        .send(Method::GET, "/v1/meta", &[], None)
        .await?
        .ok("reading Weaviate meta")?;
    let version = meta
        .get("version")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut parts = version.split(['.', '-']).map(|p| p.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor)) if (major, minor) < MIN_VERSION => {
            Err(StoreError::incompatible(format!(
                "Weaviate {version} is too old: Evident needs {}.{} or newer",
                MIN_VERSION.0, MIN_VERSION.1
            )))
        }
        (Some(_), Some(_)) => Ok(version),
        _ => {
            tracing::warn!(version = %version, "unrecognised Weaviate version, continuing");
            Ok(version)
        }
    }
}

/// Key of the vector-space record in the meta collection.
const SPACE_KEY: &str = "vector_space";

impl Inner {
    /// Creates or checks both collections, then adds and back-fills the typed-label
    /// properties of a populated collection from before them (or finishes a back-fill an
    /// earlier process left unfinished).
    pub(crate) async fn migrate(&self) -> Result<()> {
        let chunks = ensure_class(
            &self.client,
            &chunk_class(&self.class, self.multi_tenancy),
            CHUNK_PROPS,
            Rules {
                multi_tenancy: self.multi_tenancy,
                chunks: true,
            },
        )
        .await?;
        ensure_class(
            &self.client,
            &meta_class(&self.meta_class, &self.class),
            META_PROPS,
            Rules {
                multi_tenancy: false,
                chunks: false,
            },
        )
        .await?;
        match chunks {
            Ensured::Created => Ok(()),
            Ensured::Existing {
                deferred,
                had_backfilled,
            } => {
                if !deferred.is_empty() {
                    self.add_backfilled(&deferred).await
                } else if had_backfilled {
                    self.resume_backfill().await
                } else {
                    Ok(()) // added just now to an empty collection: nothing to back-fill
                }
            }
        }
    }

    /// Records `space` as the collection's vector space, or checks it against the one
    /// recorded. The record is created with `POST /v1/objects` under a fixed id, which
    /// Weaviate refuses when it exists: two processes binding at once cannot both win.
    pub(crate) async fn bind_vector_space(&self, space: &VectorSpace) -> Result<()> {
        if space.dim == 0 || space.embedder.trim().is_empty() {
            return Err(StoreError::invalid(
                "a vector space needs an embedder name and a dimension above 0",
            ));
        }
        let id = meta_object_id(SPACE_KEY);
        let path = format!("/v1/objects/{}/{id}", self.meta_class);
        let level = [("consistency_level", self.consistency.as_str())];
        for attempt in 0..2 {
            let reply = self.client.send(Method::GET, &path, &level, None).await?;
            match reply.status {
                200 => {
                    let stored = recorded_space(&reply)?;
                    if &stored != space {
                        return Err(StoreError::incompatible(format!(
                            "collection `{}` holds vectors of `{}` ({} dims), caller embeds \
                             with `{}` ({} dims)",
                            self.class, stored.embedder, stored.dim, space.embedder, space.dim
                        )));
                    }
                    *self.space.lock() = Some(stored);
                    return Ok(());
                }
                404 => {
                    let value = serde_json::to_string(space).map_err(|e| {
                        StoreError::invalid(format!("vector space cannot be written: {e}"))
                    })?;
                    let body = json!({
                        "class": self.meta_class,
                        "id": id,
                        "properties": {"key": SPACE_KEY, "value": value},
                    });
                    let created = self
                        .client
                        .send(Method::POST, "/v1/objects", &level, Some(&body))
                        .await?;
                    if created.is_success() {
                        tracing::info!(
                            collection = %self.class,
                            embedder = %space.embedder,
                            dim = space.dim,
                            "recorded the vector space of the Weaviate collection"
                        );
                        *self.space.lock() = Some(space.clone());
                        return Ok(());
                    }
                    if created.status == 422 && attempt == 0 {
                        continue; // recorded by someone else meanwhile: compare with theirs
                    }
                    return Err(error::status(
                        "recording the vector space",
                        created.status,
                        &created.body,
                    ));
                }
                s => {
                    return Err(error::status("reading the vector space", s, &reply.body));
                }
            }
        }
        Err(StoreError::new(
            ErrorKind::Conflict,
            "the vector-space record changed while it was being written; retry",
        ))
    }
}

fn recorded_space(reply: &Reply) -> Result<VectorSpace> {
    let value = reply
        .body
        .pointer("/properties/value")
        .and_then(Value::as_str)
        .ok_or_else(|| error::unexpected("reading the vector space", &reply.body))?;
    serde_json::from_str(value)
        .map_err(|e| StoreError::corrupt(format!("recorded vector space `{value}`: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn existing_chunk_class() -> Value {
        chunk_class("EvidentChunk", false)
    }

    #[test]
    fn a_class_as_created_needs_nothing() {
        let plan = plan_migration(
            &existing_chunk_class(),
            CHUNK_PROPS,
            Rules {
                multi_tenancy: false,
                chunks: true,
            },
        )
        .expect("compatible");
        assert!(plan.is_empty());
    }

    #[test]
    fn missing_properties_are_planned() {
        let mut class = existing_chunk_class();
        let props = class["properties"].as_array_mut().expect("array");
        props.retain(|p| p["name"] != "seq" && p["name"] != "createdAt");
        let plan = plan_migration(
            &class,
            CHUNK_PROPS,
            Rules {
                multi_tenancy: false,
                chunks: true,
            },
        )
        .expect("compatible");
        let names: Vec<&str> = plan.iter().map(|p| p.name).collect();
        assert_eq!(names, vec!["createdAt", "seq"]);
    }

    #[test]
    fn word_tokenised_ids_and_other_problems_are_all_named() {
        let mut class = existing_chunk_class();
        for p in class["properties"].as_array_mut().expect("array") {
            if p["name"] == "sourceUrn" {
                p["tokenization"] = json!("word");
            }
            if p["name"] == "ordinal" {
                p["dataType"] = json!(["number"]);
            }
        }
        class["vectorIndexConfig"]["distance"] = json!("dot");
        let err = plan_migration(
            &class,
            CHUNK_PROPS,
            Rules {
                multi_tenancy: true,
                chunks: true,
            },
        )
        .expect_err("incompatible");
        assert_eq!(err.kind, ErrorKind::Incompatible);
        for needle in ["sourceUrn", "ordinal", "dot", "multi-tenancy"] {
            assert!(err.message.contains(needle), "{needle}: {}", err.message);
        }
    }

    #[test]
    fn property_json_has_tokenization_only_for_text() {
        assert_eq!(
            exact("chunkId", true).to_json(),
            json!({"name": "chunkId", "dataType": ["text"], "tokenization": "field",
                   "indexFilterable": true, "indexSearchable": false})
        );
        assert_eq!(
            int("ordinal", true).to_json(),
            json!({"name": "ordinal", "dataType": ["int"], "indexFilterable": true})
        );
    }
}
