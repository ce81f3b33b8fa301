use super::*;
use proptest::prelude::*;

const PIECES: &[&str] = &[
    "password",
    "PASSWORD",
    "secret",
    "pwd",
    "api_key",
    "access_token",
    "Authorization: ",
    "Bearer ",
    "bearer ",
    " = ",
    ": ",
    ":",
    "=",
    "=>",
    ":=",
    "\"",
    "'",
    "`",
    " ",
    "\n",
    "\r\n",
    "\t",
    "${",
    "}",
    "(",
    ")",
    "[",
    "]",
    "<",
    ">",
    "abc",
    "Xy9",
    "12345678",
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----END RSA PRIVATE KEY-----",
    "-----END ",
    "AKIA",
    "ABCDEFGH23456789",
    "ghp_",
    "sk-",
    "sk-proj-",
    "eyJ",
    "eyJhbGciOi",
    ".",
    "xoxb-",
    "AIza",
    "sk_live_",
    "postgres://",
    "u",
    "@",
    "/",
    "é",
    "東京",
    "😀",
];

fn structured() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PIECES.to_vec()), 0..80).prop_map(|v| v.concat())
}

fn check(text: &str) {
    let findings = find_secrets(text);
    let mut prev_end = 0;
    for f in &findings {
        assert!(f.byte_start < f.byte_end && f.byte_end <= text.len());
        assert!(
            f.byte_start >= prev_end,
            "overlap or disorder: {findings:?}"
        );
        assert!(text.is_char_boundary(f.byte_start) && text.is_char_boundary(f.byte_end));
        assert_eq!(f.line, text[..f.byte_start].matches('\n').count() + 1);
        prev_end = f.byte_end;
    }
    let redacted = redact_secrets(text, &findings);
    assert!(
        redacted.len()
            + findings
                .iter()
                .map(|f| f.byte_end - f.byte_start)
                .sum::<usize>()
            >= text.len()
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn never_panics_on_arbitrary_strings(s in any::<String>()) {
        check(&s);
    }

    #[test]
    fn never_panics_on_secretish_strings(s in structured()) {
        check(&s);
    }
}
