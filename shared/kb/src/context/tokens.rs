//! The tokenizer context budgets are counted in: the built-in embedder's WordPiece
//! (`evident_ai::StaticEmbedder::builtin().wordpiece()`, the all-MiniLM-L6-v2 vocabulary,
//! lowercased BERT pre-tokenisation), without `[CLS]`/`[SEP]`. It is compiled in, so a count
//! never depends on configuration; LLM tokenizers count within a few percent of it on
//! English prose (a budget is a bound in these tokens, not in a model's).
//!
//! Counts add up over lines: WordPiece splits on whitespace first, so the tokens of lines
//! joined by `\n` are the sum of each line's tokens (tested), which lets a section be cut
//! line by line and still be counted exactly.

use evident_ai::StaticEmbedder;

/// Tokens of `text`.
pub fn count(text: &str) -> usize {
    let mut ids = Vec::new();
    StaticEmbedder::builtin()
        .wordpiece()
        .tokenize_ids(text, &mut ids);
    ids.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_over_lines() {
        let lines = [
            "[procedure] Initialize transient LES from converged RANS -- cuts spin-up by ~40% [1]",
            "specialization: turbomachinery [2]",
            "user:alice -[SPECIALIZES_IN]-> technique:les [3]",
        ];
        let sum: usize = lines.iter().map(|l| count(l)).sum();
        assert_eq!(count(&lines.join("\n")), sum);
        assert!(count(lines[0]) > 10);
        assert_eq!(count(""), 0);
    }
}
