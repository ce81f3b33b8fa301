//! Content hashes and deterministic chunk ids.
//!
//! Re-ingesting a source must be idempotent and cheap: a source whose [`content_hash`] is
//! unchanged is skipped, and within a changed source only chunks whose id is new are embedded
//! and written (ids that disappeared are removed together with the evidence that cites them).
//! That only works if ids are a pure function of what identifies a chunk, so [`chunk_id`]
//! hashes the tenant, the source, the chunk's content hash and its occurrence number, and
//! nothing else (no ordinal, no offsets, no time): a chunk that merely moves because text was
//! inserted above it keeps its id. Boundary stability itself is the chunker's job
//! (see [`crate::chunking`]).
//!
//! The fields are joined with a 0x00 byte, so `("ab", "c")` and `("a", "bc")` hash
//! differently. Ids are not secret and not meant to resist a party who controls the inputs
//! (a NUL byte inside a field could still be used to forge a collision); they only have to be
//! stable and practically collision-free, which 128 bits of SHA-256 are.

use sha2::{Digest, Sha256};

/// Hex SHA-256 of the UTF-8 bytes of `text`, prefixed `"sha256:"` (71 chars).
#[must_use]
pub fn content_hash(text: &str) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(text.as_bytes())))
}

/// Deterministic chunk id: the first 16 bytes of SHA-256 over
/// `client_id 0x00 source_urn 0x00 chunk_content_hash 0x00 occurrence` (occurrence in decimal),
/// as 32 lowercase hex chars.
///
/// `occurrence` tells identical chunk texts within one source apart: 0 for the first chunk with
/// that content hash, 1 for the second, and so on in document order.
#[must_use]
pub fn chunk_id(
    client_id: &str,
    source_urn: &str,
    chunk_content_hash: &str,
    occurrence: usize,
) -> String {
    let mut hasher = Sha256::new();
    hasher.update(client_id.as_bytes());
    hasher.update([0u8]);
    hasher.update(source_urn.as_bytes());
    hasher.update([0u8]);
    hasher.update(chunk_content_hash.as_bytes());
    hasher.update([0u8]);
    hasher.update(occurrence.to_string().as_bytes());
    let digest = hasher.finalize();
    hex::encode(&digest[..16])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_hash_known_vectors() {
        assert_eq!(
            content_hash(""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            content_hash("hello"),
            "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        assert_eq!(
            content_hash("Příliš žluťoučký kůň 東京 😀"),
            "sha256:a03e5ac21491902e08a35abc5eed9af03876ed4b24b0445549763d504e192389"
        );
    }

    #[test]
    fn chunk_id_known_vectors() {
        let h = content_hash("hello");
        assert_eq!(
            chunk_id("client-a", "urn:evident:doc:1", &h, 0),
            "1e71f322b2eef4b9cf8a5ab14074e0b1"
        );
        assert_eq!(
            chunk_id("client-a", "urn:evident:doc:1", &h, 1),
            "445809cda43e25a32039ace5f9dc2417"
        );
        assert_eq!(
            chunk_id("client-a", "urn:evident:doc:1", &h, 10),
            "f55aebfb49337302f56347f455485835"
        );
    }

    #[test]
    fn chunk_id_shape_and_determinism() {
        let id = chunk_id("c", "urn:x", &content_hash("t"), 0);
        assert_eq!(id.len(), 32);
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );
        assert_eq!(id, chunk_id("c", "urn:x", &content_hash("t"), 0));
    }

    #[test]
    fn every_field_matters() {
        let h = content_hash("text");
        let base = chunk_id("c1", "urn:a", &h, 0);
        assert_ne!(base, chunk_id("c2", "urn:a", &h, 0));
        assert_ne!(base, chunk_id("c1", "urn:b", &h, 0));
        assert_ne!(base, chunk_id("c1", "urn:a", &content_hash("other"), 0));
        assert_ne!(base, chunk_id("c1", "urn:a", &h, 1));
    }

    #[test]
    fn separator_prevents_concatenation_collisions() {
        assert_ne!(chunk_id("ab", "c", "h", 0), chunk_id("a", "bc", "h", 0));
        assert_ne!(
            chunk_id("c", "urn:ab", "c", 0),
            chunk_id("c", "urn:a", "bc", 0)
        );
        assert_ne!(chunk_id("c", "u", "h1", 1), chunk_id("c", "u", "h", 11));
        assert_ne!(chunk_id("", "ab", "h", 0), chunk_id("ab", "", "h", 0));
    }
}
