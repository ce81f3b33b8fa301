//! Typed knowledge on the read side: the filters `retrieve` and `by-kind` take, checked and
//! normalised the way ingest stores the labels (`evident_core::typed`).

use evident_core::typed::{MAX_TAGS, entity_key, normalise_tags};
use evident_core::validate::{self, FieldError};
use evident_core::{KnowledgeType, TypedFilter};

use crate::Result;

/// A typed-knowledge filter from a request's fields: knowledge types (the enum), info types
/// (free strings), tags (any of them; normalised as stored) and entities (node keys,
/// normalised like every key).
pub fn typed_filter(
    knowledge_types: &[KnowledgeType],
    info_types: &[String],
    tags: &[String],
    entities: &[String],
) -> Result<TypedFilter> {
    for i in info_types {
        validate::bounded_text("infoTypes", i, evident_core::typed::MAX_LABEL_LEN)?;
    }
    if entities.len() > MAX_TAGS {
        return Err(FieldError::TooLong {
            field: "entities",
            len: entities.len(),
            max: MAX_TAGS,
        }
        .into());
    }
    let mut knowledge_types = knowledge_types.to_vec();
    knowledge_types.sort();
    knowledge_types.dedup();
    let mut info_types: Vec<String> = info_types.iter().map(|i| i.trim().to_string()).collect();
    info_types.sort();
    info_types.dedup();
    let mut keys = Vec::with_capacity(entities.len());
    for e in entities {
        keys.push(entity_key("entity", e)?);
    }
    keys.sort();
    keys.dedup();
    Ok(TypedFilter {
        knowledge_types,
        info_types,
        tags: normalise_tags("tags", tags)?,
        entities: keys,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_are_normalised_like_stored_labels() {
        let f = typed_filter(
            &[KnowledgeType::Fact, KnowledgeType::Fact],
            &[" context ".into()],
            &["LES".into()],
            &["User:Alice".into()],
        )
        .expect("valid");
        assert_eq!(f.knowledge_types, vec![KnowledgeType::Fact]);
        assert_eq!(f.info_types, vec!["context"]);
        assert_eq!(f.tags, vec!["les"]);
        assert_eq!(f.entities[0].as_str(), "user:alice");
        assert!(typed_filter(&[], &["".into()], &[], &[]).is_err());
        assert!(typed_filter(&[], &[], &[], &["***".into()]).is_err());
    }
}
