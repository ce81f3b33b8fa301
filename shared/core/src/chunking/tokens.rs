//! Token counting behind [`estimate_tokens`](super::estimate_tokens) and the packing budget.

/// Additive token accounting: word and CJK counts of disjoint, whitespace-separated parts add up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct TokenCount {
    pub(super) words: usize,
    pub(super) cjk: usize,
}

impl TokenCount {
    pub(super) fn of(s: &str) -> Self {
        let mut words = 0;
        let mut cjk = 0;
        let mut in_counted_word = false;
        for c in s.chars() {
            if c.is_whitespace() {
                if in_counted_word {
                    words += 1;
                }
                in_counted_word = false;
            } else if is_cjk(c) {
                cjk += 1;
            } else {
                in_counted_word = true;
            }
        }
        if in_counted_word {
            words += 1;
        }
        Self { words, cjk }
    }

    pub(super) fn estimate(self) -> usize {
        (self.words * 4).div_ceil(3) + self.cjk
    }

    /// The estimate in thirds of a token, without rounding (for anchor probabilities).
    pub(super) fn thirds(self) -> u64 {
        self.words as u64 * 4 + self.cjk as u64 * 3
    }

    pub(super) fn plus(self, o: Self) -> Self {
        Self {
            words: self.words + o.words,
            cjk: self.cjk + o.cjk,
        }
    }

    pub(super) fn minus(self, o: Self) -> Self {
        Self {
            words: self.words.saturating_sub(o.words),
            cjk: self.cjk.saturating_sub(o.cjk),
        }
    }
}

/// Han, kana, Hangul, CJK symbols/punctuation, full-width forms: scripts written without spaces
/// (or, for Hangul, tokenised per syllable) that word-piece tokenisers split per character.
pub(super) fn is_cjk(c: char) -> bool {
    let u = c as u32;
    if u < 0x1100 {
        return false;
    }
    matches!(
        u,
        0x1100..=0x11FF
            | 0x2E80..=0x2FDF
            | 0x3000..=0x303F
            | 0x3040..=0x30FF
            | 0x3100..=0x318F
            | 0x31A0..=0x31FF
            | 0x3200..=0x32FF
            | 0x3400..=0x4DBF
            | 0x4E00..=0x9FFF
            | 0xA960..=0xA97F
            | 0xAC00..=0xD7FF
            | 0xF900..=0xFAFF
            | 0xFE30..=0xFE4F
            | 0xFF00..=0xFFEF
            | 0x20000..=0x3FFFF
    )
}
