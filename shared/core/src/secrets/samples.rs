//! Generated credentials of every form the detector claims to catch, each behind random
//! decoys (pairs and sentences that look like credentials and are not), for property tests
//! here and through the API (`tests/e2e`): `sample(form, seed, decoys)` is deterministic.
//!
//! Generated values use consonants, digits and a few symbols only, so no example word
//! (`your`, `example`, `dummy`, …) the detector treats as a placeholder can appear by chance.

use super::SecretClass;

/// A text holding one credential.
#[derive(Debug, Clone)]
pub struct Sample {
    /// The form's name (`aws_access_key`, `assignment:db_pass: `, `prose:the password is`).
    pub form: String,
    /// Decoys, then the credential in its form.
    pub text: String,
    /// The credential itself, as it appears in `text`.
    pub secret: String,
}

/// xorshift64*: deterministic without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
    fn from(&mut self, alphabet: &str, n: usize) -> String {
        let chars: Vec<char> = alphabet.chars().collect();
        (0..n).map(|_| chars[self.below(chars.len())]).collect()
    }
}

const LOWER: &str = "bcdfghjkmnpqrstvwz";
const UPPER: &str = "BCDFGHJKLMNPQRSTVWZ";
const DIGITS: &str = "23456789";
const ALNUM: &str = "bcdfghjkmnpqrstvwzBCDFGHJKLMNPQRSTVWZ23456789";
const SYMBOLS: &str = "!@^~+-";

/// A generated password: lower, upper and digit at least once each, maybe a symbol.
fn password(r: &mut Rng, len: usize) -> String {
    let mut s = format!(
        "{}{}{}",
        r.from(UPPER, 1),
        r.from(LOWER, 1),
        r.from(DIGITS, 1)
    );
    if r.below(2) == 0 {
        s.push_str(&r.from(SYMBOLS, 1));
    }
    s.push_str(&r.from(ALNUM, len.saturating_sub(s.len())));
    s
}

/// The known token formats: (class, generator).
type Maker = fn(&mut Rng) -> String;
const TOKENS: [(SecretClass, Maker); 22] = [
    (SecretClass::AwsAccessKey, |r| {
        format!("AKIA{}", r.from("BCDFGHJKLMNPQRSTVWZ234567", 16))
    }),
    (SecretClass::AwsAccessKey, |r| {
        format!("ASIA{}", r.from("BCDFGHJKLMNPQRSTVWZ234567", 16))
    }),
    (SecretClass::GithubToken, |r| {
        format!("ghp_{}", r.from(ALNUM, 36))
    }),
    (SecretClass::GithubToken, |r| {
        format!("gho_{}", r.from(ALNUM, 36))
    }),
    (SecretClass::GithubToken, |r| {
        format!("github_pat_{}_{}", r.from(ALNUM, 22), r.from(ALNUM, 59))
    }),
    (SecretClass::SlackToken, |r| {
        format!(
            "xoxb-{}-{}-{}",
            r.from(DIGITS, 12),
            r.from(DIGITS, 12),
            r.from(ALNUM, 24)
        )
    }),
    (SecretClass::GoogleApiKey, |r| {
        format!("AIza{}", r.from(ALNUM, 35))
    }),
    (SecretClass::StripeKey, |r| {
        format!("sk_live_{}", r.from(ALNUM, 24))
    }),
    (SecretClass::OpenAiKey, |r| {
        format!(
            "sk-proj-{}{}{}",
            r.from(DIGITS, 2),
            r.from(LOWER, 2),
            r.from(ALNUM, 40)
        )
    }),
    (SecretClass::JwtToken, |r| {
        format!(
            "eyJhbGciOiJIUzI1NiJ9.eyJ{}.{}",
            r.from(ALNUM, 24),
            r.from(ALNUM, 43)
        )
    }),
    (SecretClass::EvidentToken, |r| {
        format!("evd_{}", r.from(ALNUM, 43))
    }),
    (SecretClass::GitlabToken, |r| {
        format!("glpat-{}", r.from(ALNUM, 20))
    }),
    (SecretClass::NpmToken, |r| {
        format!("npm_{}", r.from(ALNUM, 36))
    }),
    (SecretClass::PypiToken, |r| {
        format!("pypi-AgEIcHlwaS5vcmc{}", r.from(ALNUM, 60))
    }),
    (SecretClass::HuggingFaceToken, |r| {
        format!(
            "hf_{}{}{}",
            r.from(UPPER, 2),
            r.from(LOWER, 2),
            r.from(ALNUM, 30)
        )
    }),
    (SecretClass::SlackWebhook, |r| {
        format!(
            "https://hooks.slack.com/services/T{}/B{}/{}",
            r.from("BCDFGHJKLMNPQRSTVWZ23456789", 9),
            r.from("BCDFGHJKLMNPQRSTVWZ23456789", 9),
            r.from(ALNUM, 24)
        )
    }),
    (SecretClass::SendgridKey, |r| {
        format!("SG.{}.{}", r.from(ALNUM, 22), r.from(ALNUM, 43))
    }),
    (SecretClass::GoogleOauthSecret, |r| {
        format!("GOCSPX-{}", r.from(ALNUM, 28))
    }),
    (SecretClass::DigitaloceanToken, |r| {
        format!("dop_v1_{}", r.from("0123456789abcdef", 64))
    }),
    (SecretClass::ShopifyToken, |r| {
        format!("shpat_{}", r.from("0123456789abcdef", 32))
    }),
    (SecretClass::PrivateKey, |r| {
        let lines: Vec<String> = (0..4).map(|_| r.from(ALNUM, 64)).collect();
        format!(
            "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----",
            lines.join("\n")
        )
    }),
    (SecretClass::BearerToken, |r| r.from(ALNUM, 32)),
];

/// Key names of assignments, each with the length of value it needs.
const KEYS: [(&str, usize); 28] = [
    ("password", 10),
    ("passwd", 10),
    ("passphrase", 14),
    ("passcode", 10),
    ("pwd", 10),
    ("pass", 10),
    ("pw", 10),
    ("secret", 12),
    ("db_password", 12),
    ("DB_PASSWORD", 12),
    ("db_pass", 10),
    ("DB_PASS", 10),
    ("dbPassword", 12),
    ("adminPass", 10),
    ("mysql_pwd", 10),
    ("admin_pw", 10),
    ("client_secret", 20),
    ("api_key", 20),
    ("apiKey", 20),
    ("API_TOKEN", 20),
    ("access_token", 24),
    ("auth_token", 24),
    ("token", 20),
    ("github_token", 24),
    ("secret_key", 24),
    ("signing_key", 24),
    ("AccountKey", 32),
    ("encryption_key", 32),
];

const SEPARATORS: [&str; 7] = ["=", " = ", ": ", ":", " => ", " := ", "="];

/// Sentences around a value (`{}`), and the minimum value length they need.
const PROSE: [&str; 9] = [
    "The password is {}.",
    "the password for the prod db is {}",
    "Password: {} (prod db)",
    "DB password: {}",
    "Password for root: {}",
    "my pw was changed to {}, do not share",
    "The API key is now {}.",
    "new passphrase: {}",
    "the secret is {} - rotate it monthly",
];

/// Pairs and sentences that look like credentials and are not: none may hide what follows.
const DECOYS: [&str; 24] = [
    "pwd: db_password",
    "user = admin",
    "pass: true",
    "token: <token>",
    "password = ${DB_PASS}",
    "secret: my-db-secret",
    "The password is stored in the vault.",
    "api_key: YOUR_API_KEY",
    "pw = getpass()",
    "password = request.form['password']",
    "Password: please reset it every 90 days",
    "passwd: ******",
    "key = value",
    "host=db.internal",
    "port: 5432",
    "password_policy = strict",
    "token=",
    "the token is valid for 3600 seconds",
    "secret: SHA-256",
    "pass=",
    "pw:",
    "db_pass: changeme",
    "password: <password>",
    "PASSWORD: ${PASSWORD:-dev}",
];

const JOINS: [&str; 6] = [" ", "; ", ", ", "\n", " & ", "\t"];

/// How many forms [`sample`] knows: every token format, every key with every separator
/// (quoted and not), every sentence, and connection strings.
pub fn forms() -> usize {
    TOKENS.len() + KEYS.len() * SEPARATORS.len() * 3 + PROSE.len() + 1
}

/// Form `form % forms()`, its values drawn from `seed`, behind `decoys` decoys.
pub fn sample(form: usize, seed: u64, decoys: usize) -> Sample {
    let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut prefix = String::new();
    for _ in 0..decoys {
        prefix.push_str(r.pick(&DECOYS));
        prefix.push_str(r.pick(&JOINS));
    }
    let (name, body, secret) = credential(form % forms(), &mut r);
    Sample {
        form: name,
        text: format!("{prefix}{body}"),
        secret,
    }
}

/// (form name, the credential in its form, the credential).
fn credential(form: usize, r: &mut Rng) -> (String, String, String) {
    if let Some((class, make)) = TOKENS.get(form) {
        let token = make(r);
        return if *class == SecretClass::BearerToken {
            let text = format!("Authorization: Bearer {token}");
            ("bearer_token".into(), text, token)
        } else {
            (class.as_str().to_string(), format!("{token} "), token)
        };
    }
    let form = form - TOKENS.len();
    let assignments = KEYS.len() * SEPARATORS.len() * 3;
    if form < assignments {
        let (key, len) = KEYS[form / (SEPARATORS.len() * 3)];
        let sep = SEPARATORS[form / 3 % SEPARATORS.len()];
        let extra = r.below(6);
        let value = password(r, len + extra);
        let text = match form % 3 {
            0 => format!("{key}{sep}{value}"),
            1 => format!("{key}{sep}\"{value}\""),
            _ => format!(
                "\"{key}\"{}\"{value}\"",
                if sep.contains('=') { sep } else { ": " }
            ),
        };
        return (format!("assignment:{key}{sep}"), text, value);
    }
    let form = form - assignments;
    if let Some(sentence) = PROSE.get(form) {
        let extra = r.below(8);
        let value = password(r, 10 + extra);
        let text = sentence.replace("{}", &value);
        return (format!("prose:{sentence}"), text, value);
    }
    // No `@` in a URL's password (it would end it).
    let pw = format!("{}{}", r.from(DIGITS, 2), r.from(ALNUM, 12));
    let text = format!("postgres://app:{pw}@db.internal:5432/app");
    ("connection_string".into(), text, pw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_is_deterministic_and_holds_its_secret() {
        for form in 0..forms() {
            let a = sample(form, 7, 3);
            assert_eq!(a.text, sample(form, 7, 3).text);
            assert!(a.text.contains(&a.secret), "{a:?}");
        }
    }
}
