//! Offline static sentence embedder (model2vec-style, distilled from all-MiniLM-L6-v2).
//!
//! A sentence embedding is the mean of the per-token rows of a static table,
//! L2-normalised: no neural network runs at query time. The table was
//! produced by `tools/distill/distill.py` with the model2vec method (each
//! WordPiece token passed through all-MiniLM-L6-v2 as `[CLS] token [SEP]`,
//! mean-pooled, PCA to 256 dims, SIF/Zipf-weighted, int8-quantised); see
//! `tools/distill/README.md` and `assets/README.md`. Tokenization is
//! [`WordPiece`], which reproduces the model's HuggingFace tokenizer.
//!
//! # Asset format (`assets/minilm-m2v-256.bin`, all little-endian)
//!
//! | offset            | size             | content                                   |
//! |-------------------|------------------|-------------------------------------------|
//! | 0                 | 8                | magic `EVM2V001` (ASCII)                  |
//! | 8                 | 4                | `u32` dim (256)                           |
//! | 12                | 4                | `u32` vocab_size (30522)                  |
//! | 16                | 4 × vocab_size   | `f32` scale of each row                   |
//! | 16 + 4·vocab_size | dim × vocab_size | `i8` values, row-major (row = token id)   |
//!
//! Row `i` dequantises to `value[i][j] as f32 * scale[i]`. The file is exactly
//! `16 + vocab_size * (4 + dim)` bytes. Row `i` belongs to line `i` (0-based)
//! of the vocabulary file `assets/minilm-vocab.txt`. Rows of tokens that can
//! never be produced (`[unused*]`) are all-zero with scale 0.
//!
//! # Embedding rule
//!
//! `embed_into` tokenizes the text, skips `[UNK]` and the other special tokens
//! (`[PAD]`, `[CLS]`, `[SEP]`, `[MASK]`), averages the dequantised rows of the
//! remaining tokens in `f32` and L2-normalises the result, so the cosine
//! similarity of two embeddings is their dot product. If no token contributes
//! (empty or whitespace-only text, or only unknown/special tokens), the
//! output is the **all-zero vector**; its cosine with anything is 0. Any
//! `&str` is accepted, of any length.

use std::cell::RefCell;
use std::fmt;
use std::sync::OnceLock;

use crate::wordpiece::WordPiece;

/// Identity of the built-in table; store it next to vector indexes built with
/// [`StaticEmbedder::builtin`] and rebuild them when it changes.
pub const BUILTIN_IDENTITY: &str = "static:minilm-m2v-256-i8:v1";
/// Identity reported by embedders built with [`StaticEmbedder::from_parts`]
/// unless [`StaticEmbedder::with_identity`] sets another one.
pub const CUSTOM_IDENTITY: &str = "static:custom-m2v-i8:v1";
/// Magic bytes at the start of an asset.
pub const ASSET_MAGIC: &[u8; 8] = b"EVM2V001";
/// Size of the fixed asset header (magic, dim, vocab_size).
const HEADER_LEN: usize = 16;
/// Token-id buffers larger than this are released instead of cached.
const MAX_RETAINED_IDS: usize = 1 << 16;

static BUILTIN_ASSET: &[u8] = include_bytes!("../assets/minilm-m2v-256.bin");
static BUILTIN_VOCAB: &str = include_str!("../assets/minilm-vocab.txt");

/// Why an embedding asset was rejected by [`StaticEmbedder::from_parts`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AssetError {
    /// Shorter than the 16-byte header.
    #[error("embedding asset is truncated: {len} bytes, the header alone is 16")]
    Truncated { len: usize },
    /// Does not start with `EVM2V001`.
    #[error("embedding asset has a bad magic number (expected \"EVM2V001\")")]
    BadMagic,
    /// The header declares a dimension of zero.
    #[error("embedding asset declares dimension 0")]
    ZeroDim,
    /// File length does not match `16 + vocab_size * (4 + dim)`.
    #[error("embedding asset is {actual} bytes, expected {expected} for dim {dim} and {rows} rows")]
    BadLength {
        expected: u64,
        actual: usize,
        dim: usize,
        rows: usize,
    },
    /// The vocabulary has a different number of tokens than the table has rows.
    #[error("embedding asset has {rows} rows but the vocabulary has {vocab} tokens")]
    VocabMismatch { rows: usize, vocab: usize },
    /// A row scale is negative, NaN or infinite.
    #[error("embedding asset row {row} has an invalid scale {scale}")]
    BadScale { row: usize, scale: f32 },
}

/// A static token-embedding table plus its WordPiece tokenizer.
///
/// `Send + Sync`; per-call scratch buffers are thread-local, so one instance
/// (e.g. [`StaticEmbedder::builtin`]) can serve all threads.
pub struct StaticEmbedder {
    wordpiece: WordPiece,
    dim: usize,
    rows: usize,
    /// One dequantisation scale per row.
    scales: Vec<f32>,
    /// `rows * dim` quantised values, row-major.
    table: Vec<i8>,
    /// `true` for rows that never contribute (special tokens, `[UNK]`).
    skip: Vec<bool>,
    identity: &'static str,
}

impl fmt::Debug for StaticEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticEmbedder")
            .field("identity", &self.identity)
            .field("dim", &self.dim)
            .field("rows", &self.rows)
            .finish()
    }
}

impl StaticEmbedder {
    /// The built-in all-MiniLM-L6-v2 model2vec table (256 dims, int8), parsed
    /// once on first use from the asset compiled into the binary.
    pub fn builtin() -> &'static StaticEmbedder {
        static BUILTIN: OnceLock<StaticEmbedder> = OnceLock::new();
        BUILTIN.get_or_init(|| {
            StaticEmbedder::from_parts(BUILTIN_ASSET, BUILTIN_VOCAB)
                .expect("the built-in static embedding asset is valid")
                .with_identity(BUILTIN_IDENTITY)
        })
    }

    /// Parses an `EVM2V001` asset (see the module docs) and its vocabulary
    /// (one token per line, line number = row). The data is copied, so the
    /// inputs need not outlive the embedder. Its identity is
    /// [`CUSTOM_IDENTITY`] until changed with [`with_identity`](Self::with_identity).
    pub fn from_parts(asset: &[u8], vocab: &str) -> Result<StaticEmbedder, AssetError> {
        if asset.len() < HEADER_LEN {
            return Err(AssetError::Truncated { len: asset.len() });
        }
        if asset[..8] != ASSET_MAGIC[..] {
            return Err(AssetError::BadMagic);
        }
        let dim = u32::from_le_bytes([asset[8], asset[9], asset[10], asset[11]]) as usize;
        let rows = u32::from_le_bytes([asset[12], asset[13], asset[14], asset[15]]) as usize;
        if dim == 0 {
            return Err(AssetError::ZeroDim);
        }
        // Checked u64 arithmetic: a hostile header cannot overflow it.
        let expected = (rows as u64)
            .checked_mul(4 + dim as u64)
            .and_then(|n| n.checked_add(HEADER_LEN as u64));
        if expected != Some(asset.len() as u64) {
            return Err(AssetError::BadLength {
                expected: expected.unwrap_or(u64::MAX),
                actual: asset.len(),
                dim,
                rows,
            });
        }
        let wordpiece = WordPiece::from_vocab_text(vocab);
        if wordpiece.vocab_size() != rows {
            return Err(AssetError::VocabMismatch {
                rows,
                vocab: wordpiece.vocab_size(),
            });
        }

        let values_start = HEADER_LEN + 4 * rows;
        let mut scales = Vec::with_capacity(rows);
        for (row, bytes) in asset[HEADER_LEN..values_start].chunks_exact(4).enumerate() {
            let scale = f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            if !scale.is_finite() || scale < 0.0 {
                return Err(AssetError::BadScale { row, scale });
            }
            scales.push(scale);
        }
        let table: Vec<i8> = asset[values_start..].iter().map(|&b| b as i8).collect();

        let mut skip = vec![false; rows];
        for (id, flag) in skip.iter_mut().enumerate() {
            let id = id as u32;
            *flag = id == wordpiece.unk_id() || wordpiece.is_special(id);
        }

        Ok(StaticEmbedder {
            wordpiece,
            dim,
            rows,
            scales,
            table,
            skip,
            identity: CUSTOM_IDENTITY,
        })
    }

    /// Replaces the identity string reported by [`identity`](Self::identity).
    pub fn with_identity(mut self, identity: &'static str) -> StaticEmbedder {
        self.identity = identity;
        self
    }

    /// Embedding dimension (256 for the built-in table).
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Stable identifier of the table (and embedding rule); store it with
    /// vector indexes. The built-in table reports [`BUILTIN_IDENTITY`].
    pub fn identity(&self) -> &'static str {
        self.identity
    }

    /// The tokenizer used by this embedder.
    pub fn wordpiece(&self) -> &WordPiece {
        &self.wordpiece
    }

    /// Writes the L2-normalised mean of the token rows of `text` into `out`
    /// (the all-zero vector if no token contributes, see the module docs).
    ///
    /// # Panics
    ///
    /// If `out.len() != self.dim()`.
    pub fn embed_into(&self, text: &str, out: &mut [f32]) {
        assert_eq!(
            out.len(),
            self.dim,
            "embed_into: output length must equal dim()"
        );
        out.fill(0.0);
        with_id_buffer(|ids| {
            self.wordpiece.tokenize_ids(text, ids);
            self.accumulate(ids.as_slice(), &mut *out);
        });
        // Dividing by the token count does not change the direction, so the
        // sum is normalised directly.
        let norm_sq: f32 = out.iter().map(|x| x * x).sum();
        if norm_sq > 0.0 && norm_sq.is_finite() {
            let inv = 1.0 / norm_sq.sqrt();
            for x in out.iter_mut() {
                *x *= inv;
            }
        } else {
            out.fill(0.0);
        }
    }

    /// Like [`embed_into`](Self::embed_into), returning a new vector of length `dim()`.
    pub fn embed(&self, text: &str) -> Vec<f32> {
        let mut out = vec![0.0f32; self.dim];
        self.embed_into(text, &mut out);
        out
    }

    /// Adds the dequantised rows of `ids` to `acc` (skipping special/unknown ids).
    #[inline]
    fn accumulate(&self, ids: &[u32], acc: &mut [f32]) {
        let dim = self.dim;
        for &id in ids {
            let row = id as usize;
            if row >= self.rows || self.skip[row] {
                continue;
            }
            let scale = self.scales[row];
            if scale == 0.0 {
                continue;
            }
            let values = &self.table[row * dim..(row + 1) * dim];
            for (a, &q) in acc.iter_mut().zip(values) {
                *a += f32::from(q) * scale;
            }
        }
    }
}

/// Runs `f` with a cleared, thread-locally cached `Vec<u32>` (or a fresh one if
/// the cache is unavailable, e.g. on re-entrant use or during thread teardown).
fn with_id_buffer<R>(mut f: impl FnMut(&mut Vec<u32>) -> R) -> R {
    thread_local! {
        static IDS: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
    }
    let pooled = IDS
        .try_with(|cell| match cell.try_borrow_mut() {
            Ok(mut ids) => {
                ids.clear();
                let result = f(&mut ids);
                if ids.capacity() > MAX_RETAINED_IDS {
                    *ids = Vec::new();
                }
                Some(result)
            }
            Err(_) => None,
        })
        .ok()
        .flatten();
    match pooled {
        Some(result) => result,
        None => f(&mut Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cos(a: &[f32], b: &[f32]) -> f32 {
        // Embeddings are unit length (or zero), so the dot product is the cosine.
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    fn norm(a: &[f32]) -> f32 {
        a.iter().map(|x| x * x).sum::<f32>().sqrt()
    }

    #[test]
    fn identity_and_dim() {
        let e = StaticEmbedder::builtin();
        assert_eq!(e.identity(), "static:minilm-m2v-256-i8:v1");
        assert_eq!(e.identity(), BUILTIN_IDENTITY);
        assert_eq!(e.dim(), 256);
        assert_eq!(e.embed("hello world").len(), 256);
        assert!(std::ptr::eq(e, StaticEmbedder::builtin()));
    }

    const PASSWORD: &str = "How do I reset my password?";
    const RECOVER: &str = "Steps to recover account login credentials";
    const PARIS: &str = "The weather in Paris is sunny";

    /// (a, b, cosine printed by the Python quality check on the same int8
    /// table, tools/distill/distill.py); each related pair is followed by
    /// unrelated ones.
    const PAIRS: &[(&str, &str, f32)] = &[
        (PASSWORD, RECOVER, 0.5551),
        (PASSWORD, PARIS, 0.0491),
        (RECOVER, PARIS, 0.0056),
        (
            "The weather is lovely today.",
            "It's so sunny outside!",
            0.4405,
        ),
        (
            "The weather is lovely today.",
            "He drove to the stadium.",
            0.2695,
        ),
        (
            "A man is playing a guitar.",
            "Someone is performing music on a guitar.",
            0.7484,
        ),
        (
            "A man is playing a guitar.",
            "The stock market fell sharply on Monday.",
            0.1221,
        ),
        (
            "What is the capital of France?",
            "Paris is the capital and largest city of France.",
            0.8032,
        ),
        (
            "What is the capital of France?",
            "Photosynthesis converts light into chemical energy.",
            -0.0999,
        ),
        (
            "How can I speed up my database queries?",
            "Add an index to make SQL lookups faster.",
            0.5321,
        ),
        (
            "How can I speed up my database queries?",
            "My cat likes to sleep in the sun.",
            0.2303,
        ),
    ];

    #[test]
    fn matches_python_quality_check() {
        let e = StaticEmbedder::builtin();
        for &(a, b, expected) in PAIRS {
            let got = cos(&e.embed(a), &e.embed(b));
            assert!(
                (got - expected).abs() < 0.01,
                "{a:?} ~ {b:?}: {got:.4}, python {expected:.4}"
            );
        }
    }

    #[test]
    fn paraphrases_beat_unrelated_by_a_clear_margin() {
        let e = StaticEmbedder::builtin();
        let c = |a: &str, b: &str| cos(&e.embed(a), &e.embed(b));
        let related = c(PASSWORD, RECOVER);
        assert!(related > c(PASSWORD, PARIS) + 0.3, "{related}");
        assert!(related > c(RECOVER, PARIS) + 0.3, "{related}");
        let guitar = "A man is playing a guitar.";
        assert!(
            c(guitar, "Someone is performing music on a guitar.")
                > c(guitar, "The stock market fell sharply on Monday.") + 0.3
        );
        let france = "What is the capital of France?";
        assert!(
            c(france, "Paris is the capital and largest city of France.")
                > c(
                    france,
                    "Photosynthesis converts light into chemical energy."
                ) + 0.3
        );
        let weather = "The weather is lovely today.";
        assert!(
            c(weather, "It's so sunny outside!") > c(weather, "He drove to the stadium.") + 0.1
        );
    }

    #[test]
    fn embeddings_are_unit_length() {
        let e = StaticEmbedder::builtin();
        for text in [
            "hello",
            "How do I reset my password?",
            "Příliš žluťoučký kůň",
            "東京",
        ] {
            let v = e.embed(text);
            assert!((norm(&v) - 1.0).abs() < 1e-4, "{text:?}: {}", norm(&v));
        }
    }

    #[test]
    fn empty_and_contentless_inputs_give_zero_vector() {
        let e = StaticEmbedder::builtin();
        for text in [
            "",
            "   \t\n",
            "[CLS] [SEP] [MASK] [PAD]",
            "\u{1f980}\u{1f980}",
        ] {
            let v = e.embed(text);
            assert_eq!(v.len(), 256);
            assert!(v.iter().all(|&x| x == 0.0), "{text:?}");
        }
    }

    #[test]
    fn embed_into_overwrites_previous_contents() {
        let e = StaticEmbedder::builtin();
        let mut out = vec![f32::NAN; e.dim()];
        e.embed_into("", &mut out);
        assert!(out.iter().all(|&x| x == 0.0));
        e.embed_into("database index", &mut out);
        assert_eq!(out, e.embed("database index"));
    }

    #[test]
    #[should_panic]
    fn embed_into_rejects_wrong_length() {
        let mut out = vec![0.0f32; 3];
        StaticEmbedder::builtin().embed_into("hello", &mut out);
    }

    #[test]
    fn one_megabyte_input() {
        let e = StaticEmbedder::builtin();
        let sentence = "The quick brown fox jumps over the lazy dog. ";
        let text = sentence.repeat((1 << 20) / sentence.len() + 1);
        assert!(text.len() >= 1 << 20);
        let big = e.embed(&text);
        assert!((norm(&big) - 1.0).abs() < 1e-3);
        // Every repetition has the same tokens, so the mean has the same direction.
        assert!(cos(&big, &e.embed(sentence)) > 0.999);
    }

    fn tiny_asset(dim: u32, scales: &[f32], values: &[i8]) -> Vec<u8> {
        let mut asset = Vec::new();
        asset.extend_from_slice(b"EVM2V001");
        asset.extend_from_slice(&dim.to_le_bytes());
        asset.extend_from_slice(&(scales.len() as u32).to_le_bytes());
        for s in scales {
            asset.extend_from_slice(&s.to_le_bytes());
        }
        asset.extend(values.iter().map(|&v| v as u8));
        asset
    }

    #[test]
    fn from_parts_tiny_table() {
        let vocab = "[UNK]\nhello\nworld\n";
        let asset = tiny_asset(2, &[1.0, 0.5, 0.25], &[100, 100, 2, 0, 0, 4]);
        let e = StaticEmbedder::from_parts(&asset, vocab).expect("tiny asset is valid");
        assert_eq!(e.dim(), 2);
        assert_eq!(e.identity(), CUSTOM_IDENTITY);
        // hello = (1, 0), world = (0, 1): mean direction (1, 1) / sqrt 2; [UNK] is skipped.
        let v = e.embed("Hello, WORLD zzz");
        let h = std::f32::consts::FRAC_1_SQRT_2;
        assert!((v[0] - h).abs() < 1e-6 && (v[1] - h).abs() < 1e-6, "{v:?}");
        assert_eq!(e.embed("zzz"), vec![0.0, 0.0]);
        let e = e.with_identity("static:test:v9");
        assert_eq!(e.identity(), "static:test:v9");
    }

    #[test]
    fn from_parts_rejects_bad_assets() {
        let vocab = "[UNK]\nhello\nworld\n";
        let good = tiny_asset(2, &[1.0, 0.5, 0.25], &[0; 6]);
        assert!(StaticEmbedder::from_parts(&good, vocab).is_ok());

        assert_eq!(
            StaticEmbedder::from_parts(&good[..10], vocab).expect_err("asset must be rejected"),
            AssetError::Truncated { len: 10 }
        );
        let mut bad = good.clone();
        bad[0] = b'X';
        assert_eq!(
            StaticEmbedder::from_parts(&bad, vocab).expect_err("asset must be rejected"),
            AssetError::BadMagic
        );
        assert!(matches!(
            StaticEmbedder::from_parts(&good[..good.len() - 1], vocab),
            Err(AssetError::BadLength { .. })
        ));
        assert_eq!(
            StaticEmbedder::from_parts(&tiny_asset(0, &[], &[]), "")
                .expect_err("asset must be rejected"),
            AssetError::ZeroDim
        );
        assert_eq!(
            StaticEmbedder::from_parts(&good, "[UNK]\nhello\n")
                .expect_err("asset must be rejected"),
            AssetError::VocabMismatch { rows: 3, vocab: 2 }
        );
        let nan = tiny_asset(2, &[1.0, f32::NAN, 0.25], &[0; 6]);
        assert!(matches!(
            StaticEmbedder::from_parts(&nan, vocab),
            Err(AssetError::BadScale { row: 1, .. })
        ));
    }

    #[test]
    fn builtin_asset_header() {
        assert_eq!(&BUILTIN_ASSET[..8], &b"EVM2V001"[..]);
        assert_eq!(BUILTIN_ASSET.len(), 16 + 30522 * (4 + 256));
    }
}
