//! [`NodeKey`]: the canonical `namespace:value` graph key.

use std::fmt;

/// A normalised, canonical graph key `namespace:value` (namespace `entity` when none was
/// given), or a bare namespace when the value was empty.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct NodeKey(pub(super) String);

impl NodeKey {
    /// The key as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The part before the first `:` (the whole key when it has no `:`).
    pub fn namespace(&self) -> &str {
        match self.0.find(':') {
            Some(i) => &self.0[..i],
            None => &self.0,
        }
    }

    /// The part after the first `:` (`""` when the key has no `:`).
    pub fn value(&self) -> &str {
        match self.0.find(':') {
            Some(i) => &self.0[i + 1..],
            None => "",
        }
    }

    /// Wrap an already-canonical string without re-normalising it (for keys read back from
    /// storage). Use [`normalize_ref`] for anything a person or a model wrote.
    ///
    /// [`normalize_ref`]: super::normalize_ref
    pub fn from_canonical(s: impl Into<String>) -> NodeKey {
        NodeKey(s.into())
    }
}

impl fmt::Display for NodeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
