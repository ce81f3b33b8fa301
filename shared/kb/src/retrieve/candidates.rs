//! Step 1: the RAG candidates, BM25 and vector search run concurrently, and the BM25
//! candidates the query's exact phrases are verified in.

use evident_ai::Priority;
use evident_core::Visibility;
use evident_store::{ChunkFilter, ScoredId};

use super::phrase::{PHRASE_CANDIDATES, Phrases};
use crate::{Kb, KbError, Result};

/// Candidates taken from (BM25, vector) for fusion. BM25 is cheap per candidate; a filtered
/// HNSW search pays for every extra neighbour, and fusion of a top-10 rarely reaches past the
/// thirtieth vector candidate.
pub fn channel_depths(max_results: usize) -> (usize, usize) {
    (
        (max_results * 5).clamp(50, 200),
        (max_results * 3).clamp(30, 150),
    )
}

/// The ranked hits of the two RAG channels, best first, and the pool of chunks to verify
/// the query's phrases in.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Candidates {
    pub bm25: Vec<ScoredId>,
    pub vector: Vec<ScoredId>,
    /// BM25 candidates for the phrases (empty when the query has none): of the phrases'
    /// words when quoted, else the query's own BM25 list taken deeper.
    pub phrase_pool: Vec<ScoredId>,
}

impl Kb {
    /// BM25 and vector search over the visible chunks, concurrently, each to the depth
    /// [`channel_depths`] gives for `max_results`; with phrases, the phrase pool too (a third
    /// concurrent BM25 search for quoted phrases; the query's own BM25 list taken to
    /// [`PHRASE_CANDIDATES`] for a verbatim query, the channel still cut at its depth).
    pub(crate) async fn candidates(
        &self,
        vis: &Visibility,
        query: &str,
        filter: &ChunkFilter,
        max_results: usize,
        phrases: &Phrases,
    ) -> Result<Candidates> {
        let (text_depth, vector_depth) = channel_depths(max_results);
        let verbatim = !phrases.is_empty() && !phrases.quoted;
        let bm25_depth = if verbatim {
            text_depth.max(PHRASE_CANDIDATES)
        } else {
            text_depth
        };
        let chunks = &self.stores.chunks;
        let bm25 = chunks.search_text(vis, query, filter, bm25_depth);
        let vector = self.vector_candidates(vis, query, filter, vector_depth);
        let quoted = async {
            if !phrases.quoted {
                return Ok(Vec::new());
            }
            let text = phrases.search_text();
            chunks
                .search_text(vis, &text, filter, PHRASE_CANDIDATES)
                .await
        };
        let (bm25, vector, quoted) = tokio::join!(bm25, vector, quoted);
        let mut bm25 = bm25?;
        let phrase_pool = if verbatim { bm25.clone() } else { quoted? };
        bm25.truncate(text_depth);
        Ok(Candidates {
            bm25,
            vector: vector?,
            phrase_pool,
        })
    }

    /// Embeds the query and searches the vector index; no hits when the embedder knows
    /// none of the query's words (an all-zero vector carries no signal).
    async fn vector_candidates(
        &self,
        vis: &Visibility,
        query: &str,
        filter: &ChunkFilter,
        depth: usize,
    ) -> Result<Vec<ScoredId>> {
        let v = self
            .embedder
            .embed(&[query.to_string()], Priority::INTERACTIVE)
            .await?;
        let v = v
            .into_iter()
            .next()
            .ok_or_else(|| KbError::Invalid("embedder returned no vector".into()))?;
        if v.iter().all(|x| *x == 0.0) {
            return Ok(Vec::new());
        }
        Ok(self
            .stores
            .chunks
            .search_vector(vis, &v, filter, depth)
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_depths_scale_with_the_page_within_bounds() {
        for (max, want) in [
            (1, (50, 30)),
            (10, (50, 30)),
            (20, (100, 60)),
            (100, (200, 150)),
        ] {
            assert_eq!(channel_depths(max), want, "max_results {max}");
        }
    }
}
