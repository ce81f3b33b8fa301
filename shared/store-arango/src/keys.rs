//! How Evident's names become ArangoDB names (reference-behaviour §3, §4).
//!
//! **Document keys.** A canonical [`NodeKey`] (`user:jan_novák`, `file:shop/src/Main.rs`)
//! becomes a `_key` of at most 254 bytes of `[A-Za-z0-9_\-:.@()+,=;$!*'%]`:
//! every byte outside that set, and `%` itself, is written `%` + two upper-case hex digits
//! (`user:jan_nov%C3%A1k`), which is reversible. An encoding longer than
//! [`MAX_PLAIN_KEY_BYTES`] keeps its first 198–200 bytes (never splitting an escape) plus `_`
//! and 16 hex digits of the SHA-256 of the canonical key; plain encodings are never longer
//! than 200 bytes and hashed ones always are, so the two forms cannot meet. The empty key is
//! `%` (no other encoding is a lone `%`). Either way the canonical key is stored in the
//! document's `key` field and every read uses that field; `_key` is never decoded.
//!
//! **Edge keys.** An edge is identified by (from, edge type, to): its `_key` is the SHA-256
//! hex of the JSON array `[from, edgeType, to]`, so upserting the same edge always hits one
//! document.
//!
//! **Collection names.** Partition (client) `""` uses `global_nodes`, `global_edges` and the
//! graph `global_graph`; client `C` uses `c{C'}_nodes`, `c{C'}_edges`, `c{C'}_graph` where
//! `C'` keeps ASCII letters, digits and `-` and writes every other byte as `_` + two
//! lower-case hex digits (`acme.eu` → `cacme_2eeu_nodes`). A stem longer than 200 bytes
//! becomes `h` + a readable prefix + `-` + 32 hex digits of the SHA-256 of the client id.
//! Names always start with a letter and stay within 256 bytes of `[A-Za-z0-9_-]`.

use evident_core::NodeKey;
use sha2::{Digest, Sha256};

/// Longest `_key` kept readable; longer encodings get a hash suffix.
pub const MAX_PLAIN_KEY_BYTES: usize = 200;
/// ArangoDB's limit on `_key`.
pub const MAX_KEY_BYTES: usize = 254;
/// Longest collection-name stem kept readable.
const MAX_PLAIN_STEM_BYTES: usize = 200;
/// Readable prefix kept in a hashed stem.
const HASHED_STEM_PREFIX_BYTES: usize = 120;

/// Whether ArangoDB accepts this byte in a document key.
pub fn is_key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'_' | b'-'
                | b':'
                | b'.'
                | b'@'
                | b'('
                | b')'
                | b'+'
                | b','
                | b'='
                | b';'
                | b'$'
                | b'!'
                | b'*'
                | b'\''
                | b'%'
        )
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";
const HEX_LOWER: &[u8; 16] = b"0123456789abcdef";

/// Appends byte `b` escaped as `{esc}XX`, the digits from `hex`.
fn push_escaped(out: &mut String, esc: char, hex: &[u8; 16], b: u8) {
    out.push(esc);
    out.push(char::from(hex[usize::from(b >> 4)]));
    out.push(char::from(hex[usize::from(b & 0x0f)]));
}

/// `limit`, moved back where a cut there would split an `{esc}XX` escape of `encoded`.
fn cut_outside_escape(encoded: &str, limit: usize, esc: u8) -> usize {
    let bytes = encoded.as_bytes();
    if bytes[limit - 1] == esc {
        limit - 1
    } else if bytes[limit - 2] == esc {
        limit - 2
    } else {
        limit
    }
}

/// The `_key` of the node with canonical key `key`.
pub fn node_key(key: &NodeKey) -> String {
    encode_key(key.as_str())
}

/// Encodes any string as a document key (see the module docs).
pub fn encode_key(s: &str) -> String {
    if s.is_empty() {
        return "%".to_string();
    }
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if is_key_byte(b) && b != b'%' {
            out.push(char::from(b));
        } else {
            push_escaped(&mut out, '%', HEX_UPPER, b);
        }
    }
    if out.len() <= MAX_PLAIN_KEY_BYTES {
        return out;
    }
    // Cut at 200 bytes, but never inside a `%XX` escape (readability only: the hash decides).
    let cut = cut_outside_escape(&out, MAX_PLAIN_KEY_BYTES, b'%');
    let digest = Sha256::digest(s.as_bytes());
    format!("{}_{}", &out[..cut], hex::encode(&digest[..8]))
}

/// The original string of a plain (unhashed) key; `None` for hashed or malformed keys.
pub fn decode_key(k: &str) -> Option<String> {
    if k == "%" {
        return Some(String::new());
    }
    if k.len() > MAX_PLAIN_KEY_BYTES {
        return None;
    }
    let bytes = k.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hi = hex_value(*bytes.get(i + 1)?)?;
            let lo = hex_value(*bytes.get(i + 2)?)?;
            out.push((hi << 4) | lo);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// The `_key` of the edge `from -edge_type-> to`.
pub fn edge_key(from: &NodeKey, edge_type: &str, to: &NodeKey) -> String {
    let identity = serde_json::json!([from.as_str(), edge_type, to.as_str()]).to_string();
    hex::encode(Sha256::digest(identity.as_bytes()))
}

/// The collections and graph of one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionNames {
    pub nodes: String,
    pub edges: String,
    pub graph: String,
}

/// Collection and graph names of partition `partition` (`""` = global).
pub fn partition_names(partition: &str) -> PartitionNames {
    let stem = partition_stem(partition);
    PartitionNames {
        nodes: format!("{stem}_nodes"),
        edges: format!("{stem}_edges"),
        graph: format!("{stem}_graph"),
    }
}

fn partition_stem(partition: &str) -> String {
    if partition.is_empty() {
        return "global".to_string();
    }
    let mut enc = String::with_capacity(partition.len() + 1);
    enc.push('c');
    for b in partition.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' {
            enc.push(char::from(b));
        } else {
            push_escaped(&mut enc, '_', HEX_LOWER, b);
        }
    }
    if enc.len() <= MAX_PLAIN_STEM_BYTES {
        return enc;
    }
    let cut = cut_outside_escape(&enc, HASHED_STEM_PREFIX_BYTES, b'_');
    let digest = Sha256::digest(partition.as_bytes());
    format!("h{}-{}", &enc[1..cut], hex::encode(&digest[..16]))
}

/// Whether `name` follows ArangoDB's traditional naming rules for collections and graphs.
pub fn is_valid_collection_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 256
        && name.as_bytes()[0].is_ascii_alphabetic()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn valid_key(k: &str) -> bool {
        !k.is_empty() && k.len() <= MAX_KEY_BYTES && k.bytes().all(is_key_byte)
    }

    #[test]
    fn readable_keys_stay_readable() {
        assert_eq!(encode_key("file:shop_src_main_rs"), "file:shop_src_main_rs");
        assert_eq!(encode_key("github:acme_shop_12"), "github:acme_shop_12");
        assert_eq!(encode_key("user:jan_novák"), "user:jan_nov%C3%A1k");
        assert_eq!(encode_key("a%b"), "a%25b");
        assert_eq!(encode_key("a/b c"), "a%2Fb%20c");
        assert_eq!(encode_key(""), "%");
        for k in ["user:jan_novák", "a%b", "a/b c", "", "ž:příliš_žluťoučký"] {
            assert_eq!(decode_key(&encode_key(k)).as_deref(), Some(k));
        }
    }

    #[test]
    fn exact_structural_keys_stay_distinct_and_reversible() {
        // Exact keys of the git vocabulary keep `/`, `.`, `()` and upper case
        // (`evident_core::keys`): each is one `_key`, different from its folded spelling.
        let keys = [
            "file:shop/src/Cart.java",
            "file:shop/src/cart.java",
            "file:r/a/b_c.rs",
            "file:r/a_b/c.rs",
            "symbol:shop/com.acme.Cart.Builder",
            "symbol:shop/com.acme.Cart.builder()",
            "import:std.sync.Arc",
            "import:r/./util",
            "file:a%2Fb/c.rs",
        ];
        let encoded: Vec<String> = keys.iter().map(|k| encode_key(k)).collect();
        assert_eq!(encoded[0], "file:shop%2Fsrc%2FCart.java");
        assert_eq!(encoded[5], "symbol:shop%2Fcom.acme.Cart.builder()");
        for (k, e) in keys.iter().zip(&encoded) {
            assert!(valid_key(e), "{e}");
            assert_eq!(decode_key(e).as_deref(), Some(*k));
        }
        let distinct: std::collections::HashSet<&String> = encoded.iter().collect();
        assert_eq!(distinct.len(), keys.len());
        assert_ne!(encode_key("file:shop_src_cart_java"), encoded[0]);
    }

    #[test]
    fn long_keys_get_a_hash_suffix() {
        let long = format!("file:{}", "x".repeat(300));
        let k = encode_key(&long);
        assert!(k.len() > MAX_PLAIN_KEY_BYTES && k.len() <= MAX_KEY_BYTES);
        assert!(k.starts_with("file:xxx"));
        assert!(valid_key(&k));
        assert_eq!(decode_key(&k), None, "hashed keys are not decoded");
        let other = format!("file:{}y", "x".repeat(299));
        assert_ne!(encode_key(&other), k);
        // An escape is never cut in half.
        let accented = "é".repeat(100);
        let k = encode_key(&accented);
        let prefix = &k[..k.len() - 17];
        assert!(prefix.len().is_multiple_of(3) && prefix.ends_with("%A9"));
    }

    #[test]
    fn edge_keys_identify_the_triple() {
        let (a, b) = (
            NodeKey::from_canonical("file:a"),
            NodeKey::from_canonical("file:b"),
        );
        let k = edge_key(&a, "imports", &b);
        assert_eq!(k.len(), 64);
        assert!(valid_key(&k));
        assert_eq!(k, edge_key(&a, "imports", &b));
        assert_ne!(k, edge_key(&b, "imports", &a));
        assert_ne!(k, edge_key(&a, "uses", &b));
    }

    #[test]
    fn collection_names() {
        assert_eq!(
            partition_names(""),
            PartitionNames {
                nodes: "global_nodes".into(),
                edges: "global_edges".into(),
                graph: "global_graph".into(),
            }
        );
        assert_eq!(partition_names("c1").nodes, "cc1_nodes");
        assert_eq!(partition_names("acme.eu").edges, "cacme_2eeu_edges");
        assert_eq!(partition_names("a_b").graph, "ca_5fb_graph");
        assert_eq!(partition_names("Ž").nodes, "c_c5_bd_nodes");
        let long = partition_names(&"é".repeat(200));
        assert!(long.nodes.starts_with('h') && long.nodes.len() <= 256);
        assert!(is_valid_collection_name(&long.edges));
    }

    proptest! {
        #[test]
        fn keys_are_valid_and_reversible_or_hashed(s in "\\PC{0,120}|[a-z:_]{150,400}") {
            let k = encode_key(&s);
            prop_assert!(valid_key(&k), "invalid key {k:?}");
            if k.len() <= MAX_PLAIN_KEY_BYTES {
                prop_assert_eq!(decode_key(&k), Some(s.clone()));
            } else {
                prop_assert!(k.len() > MAX_PLAIN_KEY_BYTES);
            }
        }

        #[test]
        fn distinct_keys_never_meet(a in "\\PC{0,80}|[a-z%]{190,260}", b in "\\PC{0,80}|[a-z%]{190,260}") {
            prop_assume!(a != b);
            prop_assert_ne!(encode_key(&a), encode_key(&b));
        }

        #[test]
        fn collection_names_are_valid_and_distinct(a in "\\PC{0,100}|[a-z._]{150,300}", b in "\\PC{0,100}|[a-z._]{150,300}") {
            let (na, nb) = (partition_names(&a), partition_names(&b));
            for n in [&na.nodes, &na.edges, &na.graph] {
                prop_assert!(is_valid_collection_name(n), "invalid name {n:?}");
            }
            if a != b {
                prop_assert_ne!(&na.nodes, &nb.nodes);
                prop_assert_ne!(&na.edges, &nb.edges);
                prop_assert_ne!(&na.graph, &nb.graph);
            }
            prop_assert_ne!(&na.nodes, &na.edges);
        }
    }
}
