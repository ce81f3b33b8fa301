//! The shape of a value: generated (a password, a key) or written (a word, a version, a
//! compound like `sha256-hashed`). Used where the context alone does not make a value a
//! credential: after a `key:` that does not end its line, after a sentence such as "the
//! password is", and for high-entropy values without digits.

/// Which kinds of character a value has.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Classes {
    pub(super) lower: bool,
    pub(super) upper: bool,
    pub(super) digit: bool,
    pub(super) symbol: bool,
}

impl Classes {
    pub(super) fn of(v: &str) -> Classes {
        let mut c = Classes::default();
        for ch in v.chars() {
            if ch.is_lowercase() {
                c.lower = true;
            } else if ch.is_uppercase() {
                c.upper = true;
            } else if ch.is_ascii_digit() {
                c.digit = true;
            } else if !ch.is_alphanumeric() {
                c.symbol = true;
            }
        }
        c
    }

    fn count(self) -> usize {
        [self.lower, self.upper, self.digit, self.symbol]
            .into_iter()
            .filter(|b| *b)
            .count()
    }

    fn letter(self) -> bool {
        self.lower || self.upper
    }
}

/// Shannon entropy of the value's bytes, in bits per byte.
pub(super) fn entropy(v: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in v.bytes() {
        counts[usize::from(b)] += 1;
    }
    let n = v.len() as f64;
    counts
        .iter()
        .filter(|c| **c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// A long value with upper- and lower-case letters mixed and high entropy, digits or not (a
/// base64 secret): `kQwPzXrTbNmLsVdHgFjK`; at least 16 chars and 3.5 bits per byte.
pub(super) fn high_entropy(v: &str) -> bool {
    let upper = v.chars().filter(char::is_ascii_uppercase).count();
    let lower = v.chars().filter(char::is_ascii_lowercase).count();
    // Random letters are about half capitals; a camelCase name (`MyKubernetesSecretName`)
    // has a capital per word.
    let mixed = upper * 4 >= upper + lower && lower * 4 >= upper + lower;
    v.chars().count() >= 16 && mixed && !v.contains('_') && entropy(v) >= 3.5
}

/// Looks generated rather than written: at least `min_chars`, letters with digits or three
/// kinds of character (or [`high_entropy`]), and not [`wordish`]. `hunter2`,
/// `Qz7W7hipTgad!` and `8f14e45fceea167a` pass; `re-enter`, `expire`, `sha256-hashed`,
/// `v2-compatible` and `1.2.3` do not.
pub(super) fn looks_random(v: &str, min_chars: usize) -> bool {
    if v.chars().count() < min_chars || wordish(v) {
        return false;
    }
    let c = Classes::of(v);
    (c.letter() && c.digit) || c.count() >= 3 || high_entropy(v)
}

/// Written, not generated: words, acronyms and numbers joined by `-`, `_`, `.` or `/`
/// (`sha256-hashed`, `SHA-256`, `utf-8`, `read-only`, `v1.2.3`), an acronym with a number
/// (`HS256`, `X509`), and a number with a short unit (`3600s`, `256bit`).
pub(super) fn wordish(v: &str) -> bool {
    let parts: Vec<&str> = v
        .split(['-', '_', '.', '/'])
        .filter(|p| !p.is_empty())
        .collect();
    if parts.len() >= 2 {
        return parts.iter().all(|p| written(p));
    }
    let letters = v.trim_end_matches(|c: char| c.is_ascii_digit());
    let digits = &v[letters.len()..];
    let acronym = (1..=6).contains(&letters.len())
        && letters.chars().all(|c| c.is_ascii_uppercase())
        && (1..=4).contains(&digits.len());
    let number = v.trim_end_matches(char::is_alphabetic);
    let unit = v.len() - number.len();
    let measure = !number.is_empty()
        && number.chars().all(|c| c.is_ascii_digit())
        && (1..=4).contains(&unit)
        && v[number.len()..].chars().all(|c| c.is_ascii_lowercase());
    acronym || measure
}

/// One part of a compound: a word (lower case, upper case or Capitalised, at most 12
/// letters, with a vowel unless an acronym) and a number of at most 4 digits, either or
/// both, in either order.
fn written(p: &str) -> bool {
    // Words have vowels (random consonant runs like `Wq` or `Gqbwmb` are not words);
    // acronyms (`SHA`, `TLS`) and single letters (`v2`) need none.
    let word = |w: &str| {
        let n = w.chars().count();
        let vowel = w
            .chars()
            .any(|c| "aeiouyAEIOUY".contains(c) || !c.is_ascii());
        w.len() <= 12
            && w.chars().all(char::is_alphabetic)
            && ((w.chars().all(char::is_lowercase) && (vowel || n <= 1))
                || (w.chars().all(char::is_uppercase) && (vowel || n <= 5))
                || (w.chars().skip(1).all(char::is_lowercase) && (vowel || n <= 1)))
    };
    let number = |n: &str| n.len() <= 4 && n.chars().all(|c| c.is_ascii_digit());
    let split = |at: usize| p.is_char_boundary(at).then(|| p.split_at(at));
    let letters_first = p.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let digits_first = p.len() - p.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    [
        split(letters_first),
        split(digits_first).map(|(a, b)| (b, a)),
    ]
    .into_iter()
    .flatten()
    .any(|(w, n)| word(w) && number(n))
}
