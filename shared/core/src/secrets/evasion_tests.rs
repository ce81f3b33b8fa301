//! Issue 29, item 2: forms that slipped past the detector, the false positives it must still
//! avoid, and the property that no decoy hides a credential (12,000 generated cases).

use super::samples::{forms, sample};
use super::*;
use proptest::prelude::*;

fn secrets_in(text: &str) -> Vec<String> {
    find_secrets(text)
        .iter()
        .map(|f| text[f.byte_start..f.byte_end].to_string())
        .collect()
}

/// Some finding covers `secret` (its last occurrence in `text`).
fn covered(text: &str, secret: &str) -> bool {
    let Some(start) = text.rfind(secret) else {
        return false;
    };
    let end = start + secret.len();
    find_secrets(text)
        .iter()
        .any(|f| f.byte_start <= start && f.byte_end >= end)
}

#[test]
fn a_decoy_pair_does_not_hide_the_pair_after_it() {
    for text in [
        "pwd: db_password = Qz7W7hipTgad!",
        "pwd: db_password=Qz7W7hipTgad!",
        "user: admin, pass: true, db_password = Qz7W7hipTgad!",
        "token: <token> api_key = Zx81bQ92kLm3Tq7",
        "password = ${DB_PASS}; password = Qz7W7hipTgad!",
        "secret: my-db-secret\nsecret: Qz7W7hipTgad9",
        "pw = getpass() # then: password = \"Qz7W7hipTgad!\"",
    ] {
        let want = ["Qz7W7hipTgad!", "Zx81bQ92kLm3Tq7", "Qz7W7hipTgad9"];
        assert!(
            want.iter().any(|w| covered(text, w)),
            "{text}: {:?}",
            secrets_in(text)
        );
    }
}

#[test]
fn natural_language_forms() {
    for (text, secret) in [
        ("The password is Qz7W7hipTgad!", "Qz7W7hipTgad!"),
        ("the password is hunter2.", "hunter2"),
        ("Password: Qz7W7hipTgad! (prod db)", "Qz7W7hipTgad!"),
        (
            "the password for the prod db is Qz7W7hipTgad!",
            "Qz7W7hipTgad!",
        ),
        ("Password for root: x9Kq2mLw", "x9Kq2mLw"),
        ("my pw was changed to x9Kq2mLw, do not share", "x9Kq2mLw"),
        (
            "The API key is now 8f14e45fceea167a5a36.",
            "8f14e45fceea167a5a36",
        ),
        ("the secret is Tr0ub4dor&3 - rotate it", "Tr0ub4dor&3"),
    ] {
        assert_eq!(secrets_in(text), vec![secret.to_string()], "{text}");
    }
}

#[test]
fn natural_language_that_is_prose() {
    for text in [
        "The password is stored hashed with bcrypt.",
        "the token is valid for 3600 seconds",
        "The secret is SHA-256-hashed before it is stored.",
        "the token is HS256-signed",
        "Password: please reset it every 90 days (prod db)",
        "the password is in the vault",
        "the API key is v2-compatible",
        "the password is 8 characters long",
        "pass: all-tests, fail: none",
        "the secret is out",
        "Password: re-enter it below",
    ] {
        assert_eq!(secrets_in(text), Vec::<String>::new(), "{text}");
    }
}

#[test]
fn short_and_suffixed_key_names() {
    for (text, secret) in [
        ("pass=Qz7W7hipTg", "Qz7W7hipTg"),
        ("pw=Qz7W7hipTg", "Qz7W7hipTg"),
        ("db_pass: Qz7W7hipTg", "Qz7W7hipTg"),
        ("DB_PASS=Qz7W7hipTg", "Qz7W7hipTg"),
        ("dbPass = \"x9Kq2mLw\"", "x9Kq2mLw"),
        ("admin_pw: x9Kq2mLw", "x9Kq2mLw"),
        ("MYSQL_PWD=Secr3t!x", "Secr3t!x"),
        ("passcode: 83x9Kq2m", "83x9Kq2m"),
        ("passphrase = \"correct horse 9 staple\"", ""),
    ] {
        let found = secrets_in(text);
        if secret.is_empty() {
            assert!(found.is_empty(), "{text}: {found:?}");
        } else {
            assert_eq!(found, vec![secret.to_string()], "{text}");
        }
    }
    for text in [
        "bypass=Qz7W7hipTg",
        "compass: N4Ew2x",
        "pass = getpass()",
        "pw = getpass()",
        "password = request.form['password']",
        "pass: true",
        "password: <password>",
        "DB_PASS=${DB_PASS}",
        "db_pass: changeme",
        "ARANGO_PASSWORD: ${ARANGO_ROOT_PASSWORD:-evident-dev}",
        "pw: &pw,",
        "let pass = Pass::First;",
    ] {
        assert_eq!(secrets_in(text), Vec::<String>::new(), "{text}");
    }
}

#[test]
fn high_entropy_values_after_secret_names() {
    for (text, secret) in [
        ("secret: kQwPzXrTbNmLsVdHgFjK", "kQwPzXrTbNmLsVdHgFjK"),
        (
            "signing_key = \"q8Zr4Lm2Xw9Tn3Bv7Kc5Hd1F\"",
            "q8Zr4Lm2Xw9Tn3Bv7Kc5Hd1F",
        ),
        (
            "AccountKey=Zq8r4Lm2Xw9Tn3Bv7Kc5Hd1FpQ==",
            "Zq8r4Lm2Xw9Tn3Bv7Kc5Hd1FpQ==",
        ),
        (
            "api_token: kQwPzXrTbNmLsVdHgFjKzQ",
            "kQwPzXrTbNmLsVdHgFjKzQ",
        ),
    ] {
        assert_eq!(secrets_in(text), vec![secret.to_string()], "{text}");
    }
    for text in [
        "primary_key = \"id\"",
        "cache_key = \"user_profile_cache\"",
        "sort_key: createdAt",
        "access_key = \"AccessKeyIdentifier\"",
        "client_key: client.key",
        "secret: MyKubernetesSecretName",
    ] {
        assert_eq!(secrets_in(text), Vec::<String>::new(), "{text}");
    }
}

#[test]
fn more_token_formats_and_lower_cased_aws_key_ids() {
    for form in 0..22 {
        let s = sample(form, 11, 0);
        assert!(covered(&s.text, &s.secret), "{s:?}");
    }
    // A normalised node key keeps an AWS key id lower-cased: still a key.
    assert_eq!(
        secrets_in("key:akiaz3mhq7rt2lqkxw5p"),
        vec!["akiaz3mhq7rt2lqkxw5p".to_string()]
    );
    for text in [
        "asiapacificregions",
        "AKIAIOSFODNN7EXAMPLE",
        "akiaiosfodnn7example",
        "evd_",
        "the hf_hub_download function",
        "SG.thing",
    ] {
        assert_eq!(secrets_in(text), Vec::<String>::new(), "{text}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12_000))]

    /// Every form of credential the detector claims, behind up to 6 random decoys (pairs and
    /// sentences that look like credentials and are not), is found, and covered whole.
    #[test]
    fn no_decoy_hides_a_credential(form in 0..forms(), seed in any::<u64>(), decoys in 0usize..7) {
        let s = sample(form, seed, decoys);
        prop_assert!(covered(&s.text, &s.secret), "{} not found in {:?}: {:?}", s.form, s.text, find_secrets(&s.text));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// The decoys alone are not credentials, in any order and combination.
    #[test]
    fn decoys_alone_are_clean(seed in any::<u64>(), decoys in 1usize..9) {
        let s = sample(0, seed, decoys);
        let prefix = &s.text[..s.text.len() - s.secret.len() - 1];
        prop_assert!(find_secrets(prefix).is_empty(), "{:?}: {:?}", prefix, secrets_in(prefix));
    }
}

/// A generated value followed by a suffix (a URL's `.git`) is no dotted reference.
#[test]
fn a_generated_value_with_a_suffix_is_still_a_value() {
    for text in [
        "pass= db_pass := Cc4n5zTmC9gjC.git",
        "https://example.com/db_pass := Cc4n5zTmC9gjC.git",
    ] {
        assert_eq!(
            secrets_in(text),
            vec!["Cc4n5zTmC9gjC.git".to_string()],
            "{text}"
        );
    }
    for text in [
        "password = self.password",
        "pw = args.pw",
        "secret: config.client_secret",
    ] {
        assert!(secrets_in(text).is_empty(), "{text}");
    }
}
