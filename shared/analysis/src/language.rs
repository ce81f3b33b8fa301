//! The language of a text, for its stemmer: English unless enough of the text's words are
//! another language's function words. Counting function words is cheap (one lookup per
//! word), reliable on a sentence or more, and says nothing about a few keywords — which then
//! stay English: a query of a few words is stemmed as English, and a word another language's
//! stemmer changed in a document is still found through its exact form (see
//! [`crate::query_terms`]).

use rust_stemmers::Algorithm;
use unicode_segmentation::UnicodeSegmentation;

/// The languages with a stemmer here (Snowball's, through `rust-stemmers`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Language {
    English = 0,
    German,
    French,
    Spanish,
    Italian,
    Portuguese,
    Dutch,
    Swedish,
    Russian,
}

/// Words examined at most (the start of a long text decides).
const SAMPLE: usize = 400;
/// Another language needs this many function words, and more than twice English's.
const MIN_HITS: usize = 3;

impl Language {
    pub const ALL: [Language; 9] = [
        Language::English,
        Language::German,
        Language::French,
        Language::Spanish,
        Language::Italian,
        Language::Portuguese,
        Language::Dutch,
        Language::Swedish,
        Language::Russian,
    ];

    pub(crate) fn algorithm(self) -> Algorithm {
        match self {
            Language::English => Algorithm::English,
            Language::German => Algorithm::German,
            Language::French => Algorithm::French,
            Language::Spanish => Algorithm::Spanish,
            Language::Italian => Algorithm::Italian,
            Language::Portuguese => Algorithm::Portuguese,
            Language::Dutch => Algorithm::Dutch,
            Language::Swedish => Algorithm::Swedish,
            Language::Russian => Algorithm::Russian,
        }
    }

    /// Frequent function words, lower-case, that are not English words too.
    fn markers(self) -> &'static [&'static str] {
        match self {
            Language::English => &[
                "the", "and", "of", "to", "is", "in", "that", "it", "for", "with", "are", "this",
                "was", "be", "on", "not", "by", "which", "from", "or",
            ],
            Language::German => &[
                "der", "die", "das", "und", "ist", "nicht", "mit", "den", "dem", "ein", "eine",
                "sich", "auf", "auch", "wird", "werden", "sind", "wurde", "zu", "von",
            ],
            Language::French => &[
                "le", "la", "les", "et", "est", "des", "une", "du", "dans", "pour", "que", "qui",
                "sur", "pas", "sont", "avec", "ce", "cette", "au", "aux",
            ],
            Language::Spanish => &[
                "el", "los", "las", "y", "es", "del", "una", "en", "para", "que", "por", "con",
                "como", "pero", "sus", "se", "lo", "al", "está", "son",
            ],
            Language::Italian => &[
                "il", "gli", "della", "di", "che", "è", "per", "una", "sono", "con", "non", "del",
                "nel", "alla", "anche", "questo", "ma", "le", "dei", "si",
            ],
            Language::Portuguese => &[
                "os", "da", "do", "das", "dos", "uma", "não", "para", "com", "que", "em", "é",
                "mais", "como", "ao", "pelo", "pela", "são", "foi", "seu",
            ],
            Language::Dutch => &[
                "de", "het", "een", "en", "van", "niet", "zijn", "voor", "met", "op", "dat", "die",
                "wordt", "ook", "aan", "maar", "bij", "naar", "worden", "deze",
            ],
            Language::Swedish => &[
                "och", "att", "det", "som", "en", "på", "är", "av", "för", "med", "till", "den",
                "inte", "har", "om", "ett", "var", "jag", "men", "kan",
            ],
            Language::Russian => &[
                "и", "в", "не", "на", "что", "с", "как", "по", "это", "он", "из", "но", "для",
                "то", "так", "все", "она", "к", "его", "же",
            ],
        }
    }

    /// The language of `text` (see the module documentation).
    pub fn detect(text: &str) -> Language {
        let mut hits = [0usize; 9];
        for word in text.unicode_words().take(SAMPLE) {
            if word.len() > 8 {
                continue;
            }
            let lower = word.to_lowercase();
            for l in Language::ALL {
                if l.markers().contains(&lower.as_str()) {
                    hits[l as usize] += 1;
                }
            }
        }
        let english = hits[0];
        Language::ALL[1..]
            .iter()
            .copied()
            .filter(|l| hits[*l as usize] >= MIN_HITS && hits[*l as usize] > 2 * english)
            .max_by_key(|l| (hits[*l as usize], std::cmp::Reverse(*l as u8)))
            .unwrap_or(Language::English)
    }
}
