//! Feature hashing: words and character trigrams hashed into signed buckets. Deterministic,
//! instant, no asset — and no semantics beyond shared surface forms. For tests and for
//! deployments that want BM25-like behaviour from the vector channel.

use async_trait::async_trait;

use crate::{EmbedError, Embedder, Priority, run_cpu};

#[derive(Debug, Clone)]
pub struct HashingEmbedder {
    dim: usize,
    identity: String,
}

/// FNV-1a, 64 bit: stable across platforms and releases (unlike std's hasher).
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl HashingEmbedder {
    pub fn new(dim: usize) -> Result<Self, String> {
        if !(8..=4096).contains(&dim) {
            return Err(format!(
                "hashing embedder dimension must be 8..=4096, got {dim}"
            ));
        }
        Ok(HashingEmbedder {
            dim,
            identity: format!("hashing:fnv1a-word-trigram:v1:{dim}"),
        })
    }

    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0.0f32; self.dim];
        let mut add = |feature: &[u8], weight: f32| {
            let h = fnv1a(feature);
            let sign = if h >> 63 == 0 { 1.0 } else { -1.0 };
            v[(h % self.dim as u64) as usize] += sign * weight;
        };
        for word in text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            let lower = word.to_lowercase();
            add(lower.as_bytes(), 1.0);
            let chars: Vec<char> = format!("#{lower}#").chars().collect();
            for w in chars.windows(3) {
                let tri: String = w.iter().collect();
                add(tri.as_bytes(), 0.3);
            }
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        }
        v
    }
}

#[async_trait]
impl Embedder for HashingEmbedder {
    fn identity(&self) -> &str {
        &self.identity
    }
    fn dim(&self) -> usize {
        self.dim
    }
    async fn embed(
        &self,
        texts: &[String],
        _priority: Priority,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let me = self.clone();
        run_cpu(texts, move |t| me.embed_one(t)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cos(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn deterministic_normalised_and_surface_similar() {
        let e = HashingEmbedder::new(64).expect("dim ok");
        let a = e.embed_one("Parsing the configuration file");
        assert_eq!(a, e.embed_one("Parsing the configuration file"));
        assert!((cos(&a, &a) - 1.0).abs() < 1e-5);
        let near = e.embed_one("parse configuration files");
        let far = e.embed_one("zebra migration season");
        assert!(cos(&a, &near) > cos(&a, &far));
        assert!(e.embed_one("").iter().all(|x| *x == 0.0));
        assert!(HashingEmbedder::new(4).is_err());
    }
}
