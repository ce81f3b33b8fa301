//! Deterministic object ids and tenant names.
//!
//! Object ids are UUIDs derived from `(partition, chunk id)`: the first 16 bytes of
//! SHA-256 over `evident-chunk:{len(partition)}:{partition}:{chunk id}` with the version
//! nibble set to 5 and the RFC 4122 variant bits set (a name-based UUID in the shape of v5,
//! with SHA-256 instead of SHA-1). The length prefix makes the pair → name mapping injective,
//! so the same chunk always lands on the same object (an upsert replaces it) and two
//! partitions never collide.

use sha2::{Digest, Sha256};

/// Tenant holding the global partition (multi-tenant collections).
pub(crate) const GLOBAL_TENANT: &str = "global";

/// Longest client id used verbatim in a tenant name (Weaviate allows 64 characters).
const MAX_VERBATIM: usize = 62;

/// The object id of chunk `chunk_id` of `partition` (`""` = global).
pub fn object_id(partition: &str, chunk_id: &str) -> String {
    let name = format!("evident-chunk:{}:{partition}:{chunk_id}", partition.len());
    uuid_from(name.as_bytes())
}

/// The object id of a record in the meta collection.
pub(crate) fn meta_object_id(key: &str) -> String {
    uuid_from(format!("evident-meta:{key}").as_bytes())
}

fn uuid_from(name: &[u8]) -> String {
    let digest = Sha256::digest(name);
    let mut b = [0u8; 16];
    b.copy_from_slice(&digest[..16]);
    b[6] = (b[6] & 0x0f) | 0x50;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex::encode(b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// The tenant of a partition. Weaviate tenant names are `[A-Za-z0-9_-]{1,64}`:
/// - the global partition is `global`;
/// - a client id of at most 62 such characters is `c-{id}`;
/// - any other client id is `h-` + 40 hex digits of its SHA-256.
///
/// The three forms cannot collide (`global` has no dash; the prefixes differ), and the
/// `c-` form keeps tenant names readable for the usual ids.
pub fn tenant_name(partition: &str) -> String {
    if partition.is_empty() {
        return GLOBAL_TENANT.to_string();
    }
    let verbatim = partition.len() <= MAX_VERBATIM
        && partition
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if verbatim {
        format!("c-{partition}")
    } else {
        let h = hex::encode(Sha256::digest(partition.as_bytes()));
        format!("h-{}", &h[..40])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn is_v5_shape(id: &str) -> bool {
        let parts: Vec<&str> = id.split('-').collect();
        parts.iter().map(|p| p.len()).collect::<Vec<_>>() == vec![8, 4, 4, 4, 12]
            && id
                .chars()
                .all(|c| c == '-' || c.is_ascii_digit() || ('a'..='f').contains(&c))
            && parts[2].starts_with('5')
            && matches!(parts[3].chars().next(), Some('8' | '9' | 'a' | 'b'))
    }

    #[test]
    fn object_ids_are_deterministic_v5_shaped_and_partitioned() {
        let a = object_id("c1", "a1");
        assert_eq!(a, object_id("c1", "a1"));
        assert!(is_v5_shape(&a), "{a}");
        assert_ne!(a, object_id("c2", "a1"), "partitions never collide");
        assert_ne!(a, object_id("", "a1"));
        // Without the length prefix these two would hash the same name.
        assert_ne!(object_id("a:b", "c"), object_id("a", "b:c"));
        assert!(is_v5_shape(&meta_object_id("vector_space")));
        assert_ne!(
            meta_object_id("vector_space"),
            object_id("", "vector_space")
        );
    }

    #[test]
    fn tenant_names_are_valid_and_distinct() {
        assert_eq!(tenant_name(""), "global");
        assert_eq!(tenant_name("acme"), "c-acme");
        assert_eq!(tenant_name("acme-corp_2"), "c-acme-corp_2");
        let hashed = tenant_name("Příliš žluťoučký");
        assert!(hashed.starts_with("h-") && hashed.len() == 42, "{hashed}");
        assert_ne!(tenant_name("global"), tenant_name(""));
        let long = "x".repeat(63);
        assert!(tenant_name(&long).starts_with("h-"));
    }

    proptest! {
        #[test]
        fn every_id_is_v5_shaped(p in ".{0,20}", c in ".{0,40}") {
            prop_assert!(is_v5_shape(&object_id(&p, &c)));
        }

        #[test]
        fn every_tenant_name_is_accepted_by_weaviate(p in ".{0,80}") {
            let t = tenant_name(&p);
            prop_assert!(!t.is_empty() && t.len() <= 64);
            prop_assert!(t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
        }

        #[test]
        fn distinct_partitions_get_distinct_tenants(a in "[a-z_-]{0,6}", b in "[a-z_-]{0,6}") {
            prop_assume!(a != b);
            prop_assert_ne!(tenant_name(&a), tenant_name(&b));
        }
    }
}
