//! Typed-knowledge labels (`evident_core::typed`) as properties of their own.
//!
//! The labels live in a chunk's `metadata` (the JSON every backend keeps), and are copied on
//! every write into the `field`-tokenised, filterable properties `knowledgeType`, `infoType`,
//! `tags` (`text[]`) and `entity`, so a [`TypedFilter`] becomes part of Weaviate's `where`:
//! exact, and applied before the search's `limit` rather than on a candidate list after it.
//!
//! # Collections from before the labels
//!
//! Weaviate indexes a property added to a populated collection only for objects written
//! afterwards (`POST /v1/schema/{class}/properties`). So for such a collection the adapter
//! (1) records a `typed_labels_backfill` marker in the meta collection, (2) adds the four
//! properties, (3) walks every object (per tenant) with the cursor API (`Get` with `after`,
//! reading only `metadata` and the id) and PATCHes the labels onto each object that has any —
//! an update re-indexes the object — and (4) deletes the marker. A connect that finds the
//! marker (an earlier process stopped midway) runs the walk again; objects without labels need
//! nothing, since a label filter never admits them.

use evident_core::{Typed, TypedFilter};

use super::*;
use crate::ids::meta_object_id;
use crate::query::gql_string;
use crate::schema::{PropSpec, add_property};

/// Key of the back-fill marker in the meta collection.
const BACKFILL_KEY: &str = "typed_labels_backfill";

/// The label properties of a chunk whose metadata is `metadata`. With `clear`, absent labels
/// are `null` (a PATCH then removes them); otherwise they are left out.
pub(super) fn label_properties(metadata: &Map<String, Value>, clear: bool) -> Map<String, Value> {
    let typed = Typed::from_metadata(metadata);
    let mut p = Map::new();
    let mut put = |name: &str, value: Option<Value>| match value {
        Some(v) => {
            p.insert(name.to_string(), v);
        }
        None if clear => {
            p.insert(name.to_string(), Value::Null);
        }
        None => {}
    };
    put(
        "knowledgeType",
        typed.knowledge_type.map(|k| json!(k.as_str())),
    );
    put("infoType", typed.info_type.as_deref().map(|i| json!(i)));
    put("tags", (!typed.tags.is_empty()).then(|| json!(typed.tags)));
    put("entity", typed.entity.as_ref().map(|e| json!(e.as_str())));
    p
}

/// The `where` conditions of a label filter: one per non-empty group (any value of the group
/// matches), all required; `None` for an empty filter.
pub(super) fn label_filter(filter: &TypedFilter) -> Option<Filter> {
    fn one_of(path: &'static str, values: Vec<String>) -> Option<Filter> {
        match values.len() {
            0 => None,
            1 if path != "tags" => Some(Filter::EqualText(path, values[0].clone())),
            _ => Some(Filter::ContainsAny(path, unique(&values))),
        }
    }
    let parts: Vec<Filter> = [
        one_of(
            "knowledgeType",
            filter
                .knowledge_types
                .iter()
                .map(|k| k.as_str().to_string())
                .collect(),
        ),
        one_of("infoType", filter.info_types.clone()),
        one_of("tags", filter.tags.clone()),
        one_of(
            "entity",
            filter
                .entities
                .iter()
                .map(|e| e.as_str().to_string())
                .collect(),
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!parts.is_empty()).then(|| Filter::all(parts))
}

/// `visibility` narrowed to `filter`'s kinds and labels.
pub(super) fn with_filter(visibility: Filter, filter: &ChunkFilter) -> Filter {
    let narrowed = with_kinds(visibility, &filter.kinds);
    match label_filter(&filter.typed) {
        None => narrowed,
        Some(labels) => match narrowed {
            Filter::And(mut parts) => {
                parts.push(labels);
                Filter::And(parts)
            }
            other => Filter::all(vec![other, labels]),
        },
    }
}

impl Inner {
    /// Adds the label properties to a populated collection and back-fills them (see the
    /// module documentation), the marker bracketing the work.
    pub(crate) async fn add_backfilled(&self, props: &[PropSpec]) -> Result<()> {
        self.set_backfill_marker().await?;
        for spec in props {
            add_property(&self.client, &self.class, spec).await?;
        }
        self.backfill_labels().await
    }

    /// Finishes a back-fill an earlier process left unfinished (its marker is still there).
    pub(crate) async fn resume_backfill(&self) -> Result<()> {
        let reply = self
            .client
            .send(Method::GET, &self.marker_path(), &self.level(), None)
            .await?;
        match reply.status {
            404 => Ok(()),
            200 => {
                tracing::warn!(collection = %self.class, "resuming an unfinished typed-label back-fill");
                self.backfill_labels().await
            }
            s => Err(error::status(
                "reading the typed-label back-fill marker",
                s,
                &reply.body,
            )),
        }
    }

    fn marker_path(&self) -> String {
        format!(
            "/v1/objects/{}/{}",
            self.meta_class,
            meta_object_id(BACKFILL_KEY)
        )
    }

    fn level(&self) -> [(&'static str, &'static str); 1] {
        [("consistency_level", self.consistency.as_str())]
    }

    async fn set_backfill_marker(&self) -> Result<()> {
        let body = json!({
            "class": self.meta_class,
            "id": meta_object_id(BACKFILL_KEY),
            "properties": {"key": BACKFILL_KEY, "value": "pending"},
        });
        let reply = self
            .client
            .send(Method::POST, "/v1/objects", &self.level(), Some(&body))
            .await?;
        // 422: the marker of an earlier, unfinished back-fill is still there.
        if reply.is_success() || reply.status == 422 {
            Ok(())
        } else {
            Err(error::status(
                "recording the typed-label back-fill marker",
                reply.status,
                &reply.body,
            ))
        }
    }

    /// Walks every object of every tenant and writes the labels of those that have any, then
    /// removes the marker.
    async fn backfill_labels(&self) -> Result<()> {
        let tenants: Vec<Option<String>> = if self.multi_tenancy {
            self.tenant_names().await?.into_iter().map(Some).collect()
        } else {
            vec![None]
        };
        let mut written = 0usize;
        for tenant in &tenants {
            written += self.backfill_tenant(tenant.as_deref()).await?;
        }
        let reply = self
            .client
            .send(Method::DELETE, &self.marker_path(), &self.level(), None)
            .await?;
        if !(reply.is_success() || reply.status == 404) {
            return Err(error::status(
                "removing the typed-label back-fill marker",
                reply.status,
                &reply.body,
            ));
        }
        tracing::info!(collection = %self.class, objects = written, "back-filled typed labels");
        Ok(())
    }

    /// The collection's tenants, by name.
    pub(super) async fn tenant_names(&self) -> Result<Vec<String>> {
        let listed = self
            .client
            .send(
                Method::GET,
                &format!("/v1/schema/{}/tenants", self.class),
                &[],
                None,
            )
            .await?
            .ok("listing tenants")?;
        Ok(listed
            .as_array()
            .map(|all| {
                all.iter()
                    .filter_map(|t| t.get("name").and_then(Value::as_str))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default())
    }

    /// One tenant (or the whole single-tenant collection) through the cursor API: pages of
    /// `Get(limit, after)` — which takes no filter or sort — in id order.
    async fn backfill_tenant(&self, tenant: Option<&str>) -> Result<usize> {
        let page = self.batch_size.min(MAX_RESULTS);
        let mut after: Option<String> = None;
        let mut written = 0usize;
        loop {
            let mut args = Vec::new();
            if let Some(t) = tenant {
                args.push(format!("tenant:{}", gql_string(t)));
            }
            args.push(format!("limit:{page}"));
            if let Some(a) = &after {
                args.push(format!("after:{}", gql_string(a)));
            }
            let query = format!(
                "{{Get{{{}({}){{metadata _additional{{id}}}}}}}}",
                self.class,
                args.join(",")
            );
            let rows = self.rows(tenant, &query).await?;
            for row in &rows {
                let id = row
                    .pointer("/_additional/id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| error::unexpected("object without an id", row))?;
                let metadata: Map<String, Value> = opt_text(row, "metadata")
                    .and_then(|m| serde_json::from_str(&m).ok())
                    .unwrap_or_default();
                let labels = label_properties(&metadata, false);
                if !labels.is_empty() {
                    self.patch_labels(tenant, id, labels).await?;
                    written += 1;
                }
                after = Some(id.to_string());
            }
            if rows.len() < page {
                return Ok(written);
            }
        }
    }

    async fn patch_labels(
        &self,
        tenant: Option<&str>,
        id: &str,
        labels: Map<String, Value>,
    ) -> Result<()> {
        let mut body = json!({"class": self.class, "id": id, "properties": labels});
        if let Some(t) = tenant {
            body["tenant"] = json!(t);
        }
        let reply = self
            .client
            .send(
                Method::PATCH,
                &format!("/v1/objects/{}/{id}", self.class),
                &self.level(),
                Some(&body),
            )
            .await?;
        // 404: deleted since it was listed.
        if reply.is_success() || reply.status == 404 {
            Ok(())
        } else {
            Err(error::status(
                &format!("back-filling the labels of object {id}"),
                reply.status,
                &reply.body,
            ))
        }
    }
}
