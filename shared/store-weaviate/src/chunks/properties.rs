//! A chunk as Weaviate object properties and back, and the small readers of stored values.

use super::*;

/// The visibility filter narrowed to the given kinds (exact match; empty = all kinds).
pub(super) fn with_kinds(visibility: Filter, kinds: &[String]) -> Filter {
    if kinds.is_empty() {
        visibility
    } else {
        Filter::all(vec![visibility, Filter::ContainsAny("kind", unique(kinds))])
    }
}

/// `ids` without repeats, first occurrence kept.
pub(super) fn unique(ids: &[String]) -> Vec<String> {
    let mut seen = HashSet::new();
    ids.iter()
        .filter(|id| seen.insert(id.as_str()))
        .cloned()
        .collect()
}

pub(super) fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

pub(super) fn json_text<T: serde::Serialize>(value: &T, what: &str) -> Result<String> {
    serde_json::to_string(value)
        .map_err(|e| StoreError::invalid(format!("{what} cannot be written: {e}")))
}

pub(super) fn ordinal_of(chunk: &Chunk) -> Result<i64> {
    i64::try_from(chunk.ordinal)
        .map_err(|_| StoreError::invalid(format!("chunk `{}`: ordinal too large", chunk.id)))
}

/// Every property of a new object (absent optional fields are left out: no value).
pub(super) fn chunk_properties(chunk: &Chunk, created_at: i64, seq: i64) -> Result<Value> {
    let mut p = Map::new();
    p.insert("chunkId".into(), json!(chunk.id));
    p.insert("partition".into(), json!(chunk.scope.partition()));
    put_opt(&mut p, "clientId", chunk.scope.client_id.as_deref());
    put_opt(&mut p, "projectId", chunk.scope.project_id.as_deref());
    put_opt(&mut p, "groupId", chunk.scope.group_id.as_deref());
    p.insert("sourceUrn".into(), json!(chunk.source_urn));
    p.insert("kind".into(), json!(chunk.kind));
    put_opt(&mut p, "title", chunk.title.as_deref());
    p.insert("content".into(), json!(chunk.content));
    p.insert("contentHash".into(), json!(chunk.content_hash));
    p.insert(
        "locator".into(),
        json!(json_text(&chunk.locator, "locator")?),
    );
    p.insert("graphRefs".into(), json!(refs(chunk)));
    p.insert(
        "metadata".into(),
        json!(json_text(&chunk.metadata, "metadata")?),
    );
    put_opt(&mut p, "observedAt", chunk.observed_at.as_deref());
    p.insert("ordinal".into(), json!(ordinal_of(chunk)?));
    p.insert("createdAt".into(), json!(created_at));
    p.insert("seq".into(), json!(seq));
    p.extend(label_properties(&chunk.metadata, false));
    Ok(Value::Object(p))
}

/// What a relocation changes: everything but id, text, hash and vector (and the newest-first
/// key, which belongs to the upsert). Absent optional fields are `null`: PATCH removes them.
pub(super) fn relocation_properties(chunk: &Chunk) -> Result<Value> {
    let mut p = json!({
        "partition": chunk.scope.partition(),
        "clientId": chunk.scope.client_id,
        "projectId": chunk.scope.project_id,
        "groupId": chunk.scope.group_id,
        "sourceUrn": chunk.source_urn,
        "kind": chunk.kind,
        "title": chunk.title,
        "locator": json_text(&chunk.locator, "locator")?,
        "graphRefs": refs(chunk),
        "metadata": json_text(&chunk.metadata, "metadata")?,
        "observedAt": chunk.observed_at,
        "ordinal": ordinal_of(chunk)?,
    });
    if let Value::Object(map) = &mut p {
        map.extend(label_properties(&chunk.metadata, true));
    }
    Ok(p)
}

pub(super) fn refs(chunk: &Chunk) -> Vec<&str> {
    chunk.graph_refs.iter().map(NodeKey::as_str).collect()
}

pub(super) fn put_opt(p: &mut Map<String, Value>, key: &str, value: Option<&str>) {
    if let Some(v) = value {
        p.insert(key.to_string(), json!(v));
    }
}

/// A text property, or `None` when absent, null or empty (Weaviate treats "" as null).
pub(super) fn opt_text(row: &Value, name: &str) -> Option<String> {
    row.get(name)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

pub(super) fn text_field(row: &Value, name: &str) -> Result<String> {
    row.get(name)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| error::corrupt(format!("object without `{name}`: {row}")))
}

pub(super) fn int_field(row: &Value, name: &str) -> Result<i64> {
    let v = row.get(name);
    v.and_then(Value::as_i64)
        .or_else(|| {
            v.and_then(Value::as_f64)
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                .map(|f| f as i64)
        })
        .ok_or_else(|| error::corrupt(format!("object without integer `{name}`: {row}")))
}

/// A score or distance: GraphQL answers `score` as a string and `distance` as a number.
pub(super) fn number(v: Option<&Value>) -> Option<f32> {
    match v? {
        Value::Number(n) => n.as_f64().map(|f| f as f32),
        Value::String(s) => s.trim().parse::<f32>().ok(),
        _ => None,
    }
}

/// Rebuilds a chunk from its object's properties.
pub(crate) fn decode_chunk(row: &Value) -> Result<Chunk> {
    let locator = text_field(row, "locator")?;
    let metadata = opt_text(row, "metadata");
    let ordinal = int_field(row, "ordinal")?;
    Ok(Chunk {
        id: text_field(row, "chunkId")?,
        scope: Scope {
            client_id: opt_text(row, "clientId"),
            project_id: opt_text(row, "projectId"),
            group_id: opt_text(row, "groupId"),
        },
        source_urn: text_field(row, "sourceUrn")?,
        kind: text_field(row, "kind")?,
        title: opt_text(row, "title"),
        content: row
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        content_hash: text_field(row, "contentHash")?,
        locator: serde_json::from_str(&locator)
            .map_err(|e| error::corrupt(format!("locator `{locator}`: {e}")))?,
        graph_refs: row
            .get("graphRefs")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(NodeKey::from_canonical)
                    .collect()
            })
            .unwrap_or_default(),
        metadata: match metadata {
            Some(m) => serde_json::from_str(&m)
                .map_err(|e| error::corrupt(format!("metadata `{m}`: {e}")))?,
            None => Map::new(),
        },
        observed_at: opt_text(row, "observedAt"),
        ordinal: usize::try_from(ordinal)
            .map_err(|_| error::corrupt(format!("negative ordinal {ordinal}")))?,
    })
}
