//! The analysis's switches. The shipped values are [`Options::default`]; a benchmark may set
//! others once, before anything is analysed, to measure a variant (they enter the
//! [`crate::fingerprint`], so an index built with other options is rebuilt, never mixed).

use std::sync::OnceLock;

/// What the analysis does; see the crate documentation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Snowball stemming (else a word is its own term).
    pub stem: bool,
    /// Exact forms kept beside their stems.
    pub exact: bool,
    /// English function words dropped ([`crate::STOPWORDS`]).
    pub stopwords: bool,
    /// A query's exact-form terms count this much of a stem's BM25 contribution (0.25:
    /// chosen on the even CISI queries among 0, 0.25 and 0.5; `docs/benchmarks.md`).
    pub exact_weight: f32,
    /// A query's defined-name terms (`#tokenhash`) count this much (0: not asked).
    pub definition_weight: f32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            stem: true,
            exact: true,
            stopwords: true,
            exact_weight: 0.25,
            definition_weight: 1.0,
        }
    }
}

static OPTIONS: OnceLock<Options> = OnceLock::new();

/// The options in force (the defaults unless [`set_options`] ran first).
pub fn options() -> Options {
    *OPTIONS.get_or_init(Options::default)
}

/// Sets the options for this process, for measuring a variant; false (and nothing changed)
/// when options were already read or set.
pub fn set_options(o: Options) -> bool {
    OPTIONS.set(o).is_ok()
}
