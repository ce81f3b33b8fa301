//! Git's rename similarity, so a commit's file list agrees with `git show -M --name-status`.
//!
//! libgit2 proposes renames with its own similarity signature, which scores some pairs above
//! the 50% threshold that git scores below it (a file split into a directory module: git says
//! `D` + `A`, libgit2 `R`). Each rename libgit2 finds between different blobs is checked
//! again with git's estimate (`diffcore-delta.c` / `diffcore-rename.c`): the blobs cut into
//! spans at each newline or every 64 bytes, each span hashed, the bytes of spans both sides
//! share counted; the score is those bytes over the larger size. Below git's default minimum
//! (50%) the pair is reported as a deletion and an addition, as git reports it.

use std::collections::HashMap;

/// `diffcore-delta.c`'s `HASHBASE`.
const HASHBASE: u32 = 107_927;
/// `diffcore.h`'s `MAX_SCORE`, and git's default minimum rename score (50%).
const MAX_SCORE: u64 = 60_000;
const MINIMUM_SCORE: u64 = 30_000;
/// Git looks for a NUL in this many first bytes to call a blob binary.
const BINARY_PROBE: usize = 8000;

/// Whether git would call `old` → `new` a rename (score at least 50%).
pub(crate) fn git_would_rename(old: &[u8], new: &[u8]) -> bool {
    let max = old.len().max(new.len()) as u64;
    let base = old.len().min(new.len()) as u64;
    if max == 0 {
        return true;
    }
    // Sizes too far apart for the minimum score are not compared (as git does).
    if max * (MAX_SCORE - MINIMUM_SCORE) < (max - base) * MAX_SCORE {
        return false;
    }
    let (a, b) = (spans(old), spans(new));
    let copied: u64 = a
        .iter()
        .map(|(h, n)| b.get(h).map_or(0, |m| (*n).min(*m)))
        .sum();
    copied * MAX_SCORE / max >= MINIMUM_SCORE
}

/// Bytes per span hash (`hash_chars`): spans end at a newline or after 64 bytes; in text, a
/// CR before LF is not counted.
fn spans(buf: &[u8]) -> HashMap<u32, u64> {
    let text = !buf[..buf.len().min(BINARY_PROBE)].contains(&0);
    let mut out: HashMap<u32, u64> = HashMap::new();
    let (mut accum1, mut accum2, mut n) = (0u32, 0u32, 0u64);
    let mut add = |accum1: u32, accum2: u32, n: u64| {
        let hash = accum1.wrapping_add(accum2.wrapping_mul(0x61)) % HASHBASE;
        *out.entry(hash).or_default() += n;
    };
    let mut i = 0;
    while i < buf.len() {
        let c = buf[i];
        i += 1;
        if text && c == b'\r' && buf.get(i) == Some(&b'\n') {
            continue;
        }
        let old1 = accum1;
        accum1 = (accum1 << 7) ^ (accum2 >> 25);
        accum2 = (accum2 << 7) ^ (old1 >> 25);
        accum1 = accum1.wrapping_add(u32::from(c));
        n += 1;
        if n < 64 && c != b'\n' {
            continue;
        }
        add(accum1, accum2, n);
        (accum1, accum2, n) = (0, 0, 0);
    }
    if n > 0 {
        add(accum1, accum2, n);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(range: std::ops::Range<usize>) -> Vec<u8> {
        range
            .map(|i| format!("line number {i} of the file\n"))
            .collect::<String>()
            .into_bytes()
    }

    #[test]
    fn scores_follow_the_shared_spans() {
        let whole = lines(0..100);
        // (old, new, git calls it a rename)
        let cases: [(Vec<u8>, Vec<u8>, bool); 6] = [
            (whole.clone(), whole.clone(), true),
            (whole.clone(), lines(100..200), false),
            // 60 of 100 lines kept: 60%.
            (
                whole.clone(),
                [lines(0..60), lines(200..240)].concat(),
                true,
            ),
            // 40 of 100 lines kept: 40%.
            (
                whole.clone(),
                [lines(0..40), lines(200..260)].concat(),
                false,
            ),
            // Half the file moved out: sizes too far apart already.
            (whole.clone(), lines(0..45), false),
            (Vec::new(), Vec::new(), true),
        ];
        for (i, (old, new, want)) in cases.iter().enumerate() {
            assert_eq!(git_would_rename(old, new), *want, "case {i}");
        }
    }

    #[test]
    fn crlf_counts_as_lf_in_text() {
        let lf = lines(0..50);
        let crlf: Vec<u8> = String::from_utf8(lf.clone())
            .expect("utf-8")
            .replace('\n', "\r\n")
            .into_bytes();
        assert_eq!(spans(&lf), spans(&crlf));
    }
}
