//! Building [`EmbeddedOptions`]: every caller names a directory and a vector space; only
//! tests that drive the vector index themselves turn the background indexer off.

use std::path::PathBuf;

use evident_store::VectorSpace;

use crate::EmbeddedOptions;

impl EmbeddedOptions {
    /// A store in `dir` holding vectors of `vector_space`, indexed by the background thread.
    pub fn new(dir: impl Into<PathBuf>, vector_space: VectorSpace) -> Self {
        EmbeddedOptions {
            dir: dir.into(),
            vector_space,
            background_indexer: true,
        }
    }

    /// The same with the background indexer on or off (off: the caller drains the vector
    /// index with [`EmbeddedStore::drain_vector_index`](crate::EmbeddedStore::drain_vector_index)).
    pub fn background_indexer(mut self, on: bool) -> Self {
        self.background_indexer = on;
        self
    }
}
