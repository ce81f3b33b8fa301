//! Typed knowledge (seed 000): *what* a piece of knowledge is (`knowledgeType`, a closed
//! enum) apart from *where it goes in an agent's prompt* (`infoType`, a free string such as
//! `user_profile`, `instructions`, `context`, `skills`), with tags and the entity (a node
//! key) the piece is about.
//!
//! Stored on chunks inside their metadata under one reserved key ([`METADATA_KEY`]), so
//! every backend keeps it with no schema of its own; backends index it for filtering through
//! [`Typed::facets`] (one exact string per value) and [`TypedFilter::admits`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::refs::{NodeKey, normalize_ref};
use crate::validate::{self, FieldError};

/// The chunk-metadata key typed knowledge is stored under; reserved (a document's own
/// metadata may not use it).
pub const METADATA_KEY: &str = "knowledge";
/// Most tags on one piece.
pub const MAX_TAGS: usize = 32;
/// Longest tag or info type.
pub const MAX_LABEL_LEN: usize = 64;

/// What a piece of knowledge is (the seed's `knowledge_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KnowledgeType {
    /// A factual statement.
    Fact,
    /// A behavioural directive.
    Instruction,
    /// An opinion or preference.
    Preference,
    /// A multi-step workflow.
    Procedure,
    /// A general observation.
    Note,
    /// A record of a past event.
    Episodic,
}

impl KnowledgeType {
    pub const ALL: [KnowledgeType; 6] = [
        KnowledgeType::Fact,
        KnowledgeType::Instruction,
        KnowledgeType::Preference,
        KnowledgeType::Procedure,
        KnowledgeType::Note,
        KnowledgeType::Episodic,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            KnowledgeType::Fact => "fact",
            KnowledgeType::Instruction => "instruction",
            KnowledgeType::Preference => "preference",
            KnowledgeType::Procedure => "procedure",
            KnowledgeType::Note => "note",
            KnowledgeType::Episodic => "episodic",
        }
    }

    /// Parses the enum's name (case-insensitive), naming the accepted values otherwise.
    pub fn parse(field: &'static str, raw: &str) -> Result<KnowledgeType, FieldError> {
        let lower = raw.trim().to_ascii_lowercase();
        KnowledgeType::ALL
            .into_iter()
            .find(|k| k.as_str() == lower)
            .ok_or_else(|| FieldError::Invalid {
                field,
                reason: format!(
                    "`{raw}` is not a knowledge type (one of {})",
                    KnowledgeType::ALL.map(KnowledgeType::as_str).join(", ")
                ),
            })
    }
}

/// The typed labels of one piece, as stored (normalised: tags lowercased, sorted, unique;
/// the entity a normalised node key).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Typed {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knowledge_type: Option<KnowledgeType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info_type: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entity: Option<NodeKey>,
}

impl Typed {
    /// Checks and normalises raw labels (as an ingest body gives them).
    pub fn from_raw(
        knowledge_type: Option<KnowledgeType>,
        info_type: Option<&str>,
        tags: &[String],
        entity: Option<&str>,
    ) -> Result<Typed, FieldError> {
        let info_type = match info_type {
            None => None,
            Some(i) => {
                validate::bounded_text("infoType", i, MAX_LABEL_LEN)?;
                Some(i.trim().to_string())
            }
        };
        Ok(Typed {
            knowledge_type,
            info_type,
            tags: normalise_tags("tags", tags)?,
            entity: entity.map(|e| entity_key("entity", e)).transpose()?,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.knowledge_type.is_none()
            && self.info_type.is_none()
            && self.tags.is_empty()
            && self.entity.is_none()
    }

    /// The labels stored in a chunk's metadata (default when there are none or they do not
    /// parse: a chunk written before typed knowledge existed has none).
    pub fn from_metadata(metadata: &Map<String, Value>) -> Typed {
        metadata
            .get(METADATA_KEY)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    }

    /// Writes the labels into chunk metadata (nothing when there are none).
    pub fn insert_into(&self, metadata: &mut Map<String, Value>) {
        if !self.is_empty()
            && let Ok(v) = serde_json::to_value(self)
        {
            metadata.insert(METADATA_KEY.to_string(), v);
        }
    }

    /// One exact string per label (`kt:fact`, `it:instructions`, `tag:les`,
    /// `entity:user:alice`), sorted: what a backend indexes for [`TypedFilter`].
    pub fn facets(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        if let Some(k) = self.knowledge_type {
            out.push(format!("kt:{}", k.as_str()));
        }
        if let Some(i) = &self.info_type {
            out.push(format!("it:{i}"));
        }
        out.extend(self.tags.iter().map(|t| format!("tag:{t}")));
        if let Some(e) = &self.entity {
            out.push(format!("entity:{}", e.as_str()));
        }
        out.sort();
        out
    }
}

/// Tags lowercased, trimmed, sorted and unique; each 1..=64 bytes, at most [`MAX_TAGS`].
pub fn normalise_tags(field: &'static str, tags: &[String]) -> Result<Vec<String>, FieldError> {
    if tags.len() > MAX_TAGS {
        return Err(FieldError::TooLong {
            field,
            len: tags.len(),
            max: MAX_TAGS,
        });
    }
    let mut out = Vec::with_capacity(tags.len());
    for t in tags {
        validate::bounded_text(field, t, MAX_LABEL_LEN)?;
        out.push(t.trim().to_lowercase());
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// An entity as a node key, normalised like every other key (`User:Alice` → `user:alice`).
pub fn entity_key(field: &'static str, raw: &str) -> Result<NodeKey, FieldError> {
    validate::identifier(field, raw)?;
    normalize_ref(raw).ok_or(FieldError::Invalid {
        field,
        reason: "has no letters or digits".into(),
    })
}

/// A filter over typed labels: every non-empty group must match (within a group any value
/// does). Empty: admits everything, typed or not.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct TypedFilter {
    pub knowledge_types: Vec<KnowledgeType>,
    pub info_types: Vec<String>,
    /// Any of these tags (normalised as stored).
    pub tags: Vec<String>,
    pub entities: Vec<NodeKey>,
}

impl TypedFilter {
    pub fn is_empty(&self) -> bool {
        self.knowledge_types.is_empty()
            && self.info_types.is_empty()
            && self.tags.is_empty()
            && self.entities.is_empty()
    }

    pub fn admits(&self, t: &Typed) -> bool {
        (self.knowledge_types.is_empty()
            || t.knowledge_type
                .is_some_and(|k| self.knowledge_types.contains(&k)))
            && (self.info_types.is_empty()
                || t.info_type
                    .as_ref()
                    .is_some_and(|i| self.info_types.contains(i)))
            && (self.tags.is_empty() || t.tags.iter().any(|x| self.tags.contains(x)))
            && (self.entities.is_empty()
                || t.entity.as_ref().is_some_and(|e| self.entities.contains(e)))
    }

    /// The same test over [`Typed::facets`] (what a backend that indexes facets evaluates):
    /// each group as the facet strings any of which must be present.
    pub fn facet_groups(&self) -> Vec<Vec<String>> {
        let groups = [
            self.knowledge_types
                .iter()
                .map(|k| format!("kt:{}", k.as_str()))
                .collect::<Vec<_>>(),
            self.info_types.iter().map(|i| format!("it:{i}")).collect(),
            self.tags.iter().map(|t| format!("tag:{t}")).collect(),
            self.entities
                .iter()
                .map(|e| format!("entity:{}", e.as_str()))
                .collect(),
        ];
        groups.into_iter().filter(|g| !g.is_empty()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed() -> Typed {
        Typed::from_raw(
            Some(KnowledgeType::Procedure),
            Some("instructions"),
            &["RANS".into(), "les".into(), "les".into()],
            Some("User:Alice"),
        )
        .expect("valid")
    }

    #[test]
    fn labels_are_normalised_and_round_trip_through_metadata() {
        let t = typed();
        assert_eq!(t.tags, vec!["les", "rans"]);
        assert_eq!(t.entity.as_ref().map(NodeKey::as_str), Some("user:alice"));
        let mut m = Map::new();
        t.insert_into(&mut m);
        assert_eq!(m[METADATA_KEY]["knowledgeType"], "procedure");
        assert_eq!(Typed::from_metadata(&m), t);
        assert_eq!(Typed::from_metadata(&Map::new()), Typed::default());
    }

    #[test]
    fn knowledge_type_is_the_closed_enum() {
        assert_eq!(
            KnowledgeType::parse("knowledgeType", "Fact"),
            Ok(KnowledgeType::Fact)
        );
        let err = KnowledgeType::parse("knowledgeType", "rumour").expect_err("refused");
        assert!(err.to_string().contains("episodic"), "{err}");
        assert!(serde_json::from_value::<KnowledgeType>("rumour".into()).is_err());
    }

    #[test]
    fn filter_groups_and_facets_agree() {
        let t = typed();
        let facets = t.facets();
        let cases = [
            (TypedFilter::default(), true),
            (
                TypedFilter {
                    knowledge_types: vec![KnowledgeType::Procedure, KnowledgeType::Fact],
                    ..Default::default()
                },
                true,
            ),
            (
                TypedFilter {
                    knowledge_types: vec![KnowledgeType::Fact],
                    ..Default::default()
                },
                false,
            ),
            (
                TypedFilter {
                    info_types: vec!["instructions".into()],
                    tags: vec!["zzz".into(), "rans".into()],
                    ..Default::default()
                },
                true,
            ),
            (
                TypedFilter {
                    entities: vec![normalize_ref("user:bob").expect("key")],
                    ..Default::default()
                },
                false,
            ),
        ];
        for (f, want) in cases {
            assert_eq!(f.admits(&t), want, "{f:?}");
            let by_facets = f
                .facet_groups()
                .iter()
                .all(|g| g.iter().any(|x| facets.contains(x)));
            assert_eq!(by_facets, want, "facets {f:?}");
        }
        assert!(
            !TypedFilter {
                tags: vec!["les".into()],
                ..Default::default()
            }
            .admits(&Typed::default())
        );
    }

    #[test]
    fn bad_labels_are_refused() {
        assert!(Typed::from_raw(None, Some(""), &[], None).is_err());
        let many: Vec<String> = (0..40).map(|i| format!("t{i}")).collect();
        assert!(Typed::from_raw(None, None, &many, None).is_err());
        assert!(Typed::from_raw(None, None, &[], Some("!!!")).is_err());
    }
}
