use super::scanners::has_digit;
use super::*;

#[test]
fn redaction_keeps_lines_and_everything_else() {
    let text = "host = db\npassword = \"hunter2-very-secret\"\nport = 5432\n";
    let (red, classes) = redact(text).expect("a credential");
    assert_eq!(red.lines().count(), text.lines().count());
    assert!(red.contains("host = db") && red.contains("port = 5432"));
    assert!(!red.contains("hunter2"), "{red}");
    assert_eq!(classes, vec![SecretClass::PasswordAssignment]);
    assert!(find_secrets(&red).is_empty());
    assert!(redact("nothing to see").is_none());
    let pem = "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAxq3Jw9vWzT8ZkR2bYQfLmN0pHcUe4sVdGa7KjX1\n-----END RSA PRIVATE KEY-----\nb";
    let (red, _) = redact(pem).expect("a key");
    assert_eq!(red.lines().count(), pem.lines().count());
    assert!(
        red.starts_with("a\n") && red.ends_with("\nb") && !red.contains("MIIE"),
        "{red}"
    );
}

/// The (class, secret text) pairs found; test tokens are built at run time so this source
/// file itself contains nothing that looks like a live credential.
fn found(text: &str) -> Vec<(SecretClass, String)> {
    find_secrets(text)
        .into_iter()
        .map(|f| (f.class, text[f.byte_start..f.byte_end].to_string()))
        .collect()
}

fn assert_finds(text: &str, class: SecretClass, secret: &str) {
    let f = found(text);
    assert!(
        f.iter().any(|(c, s)| *c == class && s == secret),
        "expected {class} {secret:?} in {text:?}, got {f:?}"
    );
}

fn assert_clean(text: &str) {
    let f = found(text);
    assert!(f.is_empty(), "expected no finding in {text:?}, got {f:?}");
}

fn alnum(n: usize, seed: u64) -> String {
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            CHARS[((s >> 33) % CHARS.len() as u64) as usize] as char
        })
        .collect()
}

#[test]
fn class_names_are_stable_and_match_serde() {
    for c in SecretClass::ALL {
        let json = serde_json::to_string(&c).expect("serialise");
        assert_eq!(json, format!("\"{}\"", c.as_str()));
        assert!(!c.description().is_empty());
        assert_eq!(c.to_string(), c.as_str());
    }
    assert_eq!(SecretClass::OpenAiKey.as_str(), "openai_key");
}

#[test]
fn private_keys() {
    for kind in ["", "RSA ", "EC ", "DSA ", "OPENSSH ", "ENCRYPTED "] {
        let block = format!(
            "-----BEGIN {kind}PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC{}\n{}==\n-----END {kind}PRIVATE KEY-----",
            alnum(32, 40),
            alnum(40, 41)
        );
        let text = format!("config:\n{block}\ntrailing text\n");
        let f = find_secrets(&text);
        assert_eq!(f.len(), 1, "{kind}: {f:?}");
        assert_eq!(f[0].class, SecretClass::PrivateKey);
        assert_eq!(&text[f[0].byte_start..f[0].byte_end], block);
        assert_eq!(f[0].line, 2);
    }
    let pgp = format!(
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\nlQOYBF{}\n=Xq2P\n-----END PGP PRIVATE KEY BLOCK-----",
        alnum(58, 30)
    );
    assert_finds(&pgp, SecretClass::PrivateKey, &pgp);
    // Legacy encrypted PEM with RFC 1421 headers, and a key inside a JSON string.
    let legacy = format!(
        "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,3F17F5316E2BAC89\n\n{}\n-----END RSA PRIVATE KEY-----",
        alnum(64, 31)
    );
    assert_finds(&legacy, SecretClass::PrivateKey, &legacy);
    let json_key = format!(
        "-----BEGIN EC PRIVATE KEY-----\\n{}\\n-----END EC PRIVATE KEY-----",
        alnum(64, 32)
    );
    assert_finds(
        &format!("{{\"privateKey\": \"{json_key}\"}}"),
        SecretClass::PrivateKey,
        &json_key,
    );
    // Without a footer (truncated paste), the header alone is reported.
    let header = "-----BEGIN RSA PRIVATE KEY-----";
    assert_finds(
        &format!("pasted: {header}\n{}", alnum(64, 33)),
        SecretClass::PrivateKey,
        header,
    );
    // Code and docs that only name the markers are not keys.
    assert_clean(
        "when your file has '-----BEGIN RSA PRIVATE KEY-----' and\n'-----END RSA PRIVATE KEY-----' markers",
    );
    assert_clean(
        "_SK_START = b\"-----BEGIN OPENSSH PRIVATE KEY-----\"\n_SK_END = b\"-----END OPENSSH PRIVATE KEY-----\"",
    );
    assert_clean(
        "\"PrivateKey\": \"-----BEGIN RSA PRIVATE KEY-----\\nkey omitted\\n-----END RSA PRIVATE KEY-----\"",
    );
    // Public keys and certificates are not secrets.
    assert_clean("-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkq\n-----END PUBLIC KEY-----");
    assert_clean("-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+g\n-----END CERTIFICATE-----");
}

#[test]
fn many_pem_headers_stay_linear() {
    let body = format!("\n{}\n", alnum(64, 34));
    let text = format!("-----BEGIN PRIVATE KEY-----{body}").repeat(20_000);
    assert_eq!(find_secrets(&text).len(), 20_000);
    // Headers that name no key material at all cost as little.
    assert!(find_secrets(&"-----BEGIN PRIVATE KEY----- ".repeat(50_000)).is_empty());
}

#[test]
fn aws_access_keys() {
    let key = format!("AKIA{}", "Q3EGRRDH4J2KXW7N");
    assert_finds(
        &format!("aws_access_key_id = {key}\n"),
        SecretClass::AwsAccessKey,
        &key,
    );
    assert_finds(
        &format!("export AWS_ACCESS_KEY_ID=\"{key}\""),
        SecretClass::AwsAccessKey,
        &key,
    );
    let temp = format!("ASIA{}", "Y7LQ2ZK4M9TR3WXB");
    assert_finds(&format!("key {temp}."), SecretClass::AwsAccessKey, &temp);
    // AWS's documented example key, and keys glued into longer words.
    assert_clean(&format!("aws_access_key_id = AKIA{}", "IOSFODNN7EXAMPLE"));
    assert_clean(&format!(
        "X-Amz-Credential=AKIA{}%2F20210621",
        "EXAMPLE123456789"
    ));
    assert_clean(&format!("X{key}"));
    assert_clean(&format!("{key}Z"));
}

#[test]
fn github_tokens() {
    let classic = format!("ghp_{}", alnum(36, 1));
    assert_finds(
        &format!("token: {classic}"),
        SecretClass::GithubToken,
        &classic,
    );
    let oauth = format!("gho_{}", alnum(40, 2));
    assert_finds(
        &format!("git clone https://x-access-token:{oauth}@github.com/o/r"),
        SecretClass::GithubToken,
        &oauth,
    );
    let pat = format!("github_pat_{}_{}", alnum(22, 3), alnum(59, 4));
    assert_finds(&format!("GH_TOKEN={pat}"), SecretClass::GithubToken, &pat);
    assert_clean(&format!("ghp_{}", alnum(20, 5)));
    assert_clean(&format!("xghp_{}", alnum(36, 6)));
}

#[test]
fn slack_tokens() {
    let bot = format!(
        "xoxb-{}-{}-{}",
        "123456789012",
        "1234567890123",
        alnum(24, 7)
    );
    assert_finds(
        &format!("SLACK_BOT_TOKEN={bot}"),
        SecretClass::SlackToken,
        &bot,
    );
    let user = format!(
        "xoxp-{}",
        "2837461928-4738291047-5930184756-abcdef0123456789abcdef0123456789"
    );
    assert_finds(
        &format!("slack user token {user}"),
        SecretClass::SlackToken,
        &user,
    );
    assert_clean("see the xoxb-token-format-docs page");
}

#[test]
fn google_api_keys() {
    let key = format!("AIza{}", "SyD4-7xQm2_Lk9PzR3tVw8NcHj5bGf1eUo0");
    assert_eq!(key.len(), 39);
    assert_finds(
        &format!("maps.googleapis.com/maps/api/js?key={key}&callback=x"),
        SecretClass::GoogleApiKey,
        &key,
    );
    assert_clean(&format!("AIza{}", "short-key"));
}

#[test]
fn stripe_keys() {
    let key = format!("sk_{}_{}", "live", "4eC39HqLyjWDarjtT1zdp7dc");
    assert_finds(
        &format!("Stripe.api_key = '{key}'"),
        SecretClass::StripeKey,
        &key,
    );
    let restricted = format!("rk_{}_{}", "live", alnum(24, 8));
    assert_finds(
        &format!("STRIPE_KEY={restricted}"),
        SecretClass::StripeKey,
        &restricted,
    );
}

#[test]
fn openai_style_keys() {
    let legacy = format!("sk-{}T3BlbkFJ{}", alnum(20, 9), alnum(20, 10));
    assert_finds(
        &format!("OPENAI_API_KEY={legacy}"),
        SecretClass::OpenAiKey,
        &legacy,
    );
    let project = format!(
        "sk-proj-{}-{}_{}",
        alnum(30, 11),
        alnum(30, 12),
        alnum(20, 13)
    );
    assert_finds(
        &format!("client = OpenAI(api_key=\"{project}\")"),
        SecretClass::OpenAiKey,
        &project,
    );
    // Slugs and words that merely start with "sk-".
    assert_clean("see https://example.org/task-abcdefghijklmnopqrstuvwxyz123 for details");
    assert_clean("pip install sk-learn-tutorial-for-beginners-2024");
    assert_clean("sk-abcdefghijklmnopqrstuvwxyz is not a key (no digit)");
}

fn sample_jwt() -> String {
    [
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
        "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ",
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    ]
    .join(".")
}

#[test]
fn jwts() {
    let jwt = sample_jwt();
    assert_finds(
        &format!("cookie: session={jwt}; Path=/"),
        SecretClass::JwtToken,
        &jwt,
    );
    // After `Bearer`, the more specific class wins and the token is reported once.
    let text = format!("Authorization: Bearer {jwt}");
    assert_eq!(found(&text), vec![(SecretClass::JwtToken, jwt.clone())]);
    assert_clean("eyJhbGciOiJIUzI1NiJ9 alone is just a base64 header");
}

#[test]
fn bearer_tokens() {
    let opaque = alnum(32, 14)
        .to_lowercase()
        .replace(|c: char| c.is_ascii_digit(), "a");
    assert!(!has_digit(&opaque));
    assert_finds(
        &format!("Authorization: Bearer {opaque}"),
        SecretClass::BearerToken,
        &opaque,
    );
    let tok = "9f8e7d6c5b4a39281706f5e4d3c2b1a0";
    assert_finds(
        &format!("curl -H \"authorization: bearer {tok}\" https://api"),
        SecretClass::BearerToken,
        tok,
    );
    assert_finds(
        &format!("{{\"Authorization\": \"Bearer {tok}\"}}"),
        SecretClass::BearerToken,
        tok,
    );
    assert_finds(
        &format!("then use bearer {tok} to call it"),
        SecretClass::BearerToken,
        tok,
    );
    for clean in [
        "a bearer token is required for every request",
        "Bearer authentication (also called token authentication) is an HTTP scheme",
        "Authorization: Bearer <token>",
        "Authorization: Bearer ${ACCESS_TOKEN}",
        "Authorization: Bearer $TOKEN",
        "Authorization: Bearer YOUR_ACCESS_TOKEN_HERE",
        "the cupbearer a1b2c3d4e5f6g7h8i9j0 arrived",
    ] {
        assert_clean(clean);
    }
}

#[test]
fn password_assignments() {
    let cases = [
        ("password = \"Tr0ub4dor&3\"", "Tr0ub4dor&3"),
        ("DB_PASSWORD=s3cr3t-Pa55", "s3cr3t-Pa55"),
        ("{\"password\": \"hunter2hunter2\"}", "hunter2hunter2"),
        ("db:\n  password: Xk9#mPq2\n  user: app", "Xk9#mPq2"),
        ("client_secret: \"9f8e7d6c5b4a3921\"", "9f8e7d6c5b4a3921"),
        ("passwd='Zz8!Zz8!'", "Zz8!Zz8!"),
        ("$pwd := \"Gx7&kL2p\";", "Gx7&kL2p"),
        ("mysql --user=root --password=R00tPw!x db", "R00tPw!x"),
        ("jwt_secret => 'k3y-for-signing-42'", "k3y-for-signing-42"),
        ("Your new password: Qw3rty!9\n", "Qw3rty!9"),
    ];
    for (text, secret) in cases {
        assert_finds(text, SecretClass::PasswordAssignment, secret);
    }
}

#[test]
fn password_negatives() {
    for text in [
        "the password is reset daily",
        "Password: please reset it every 90 days",
        "Your password: must be at least 8 characters long.",
        "Enter password: ******",
        "password = os.environ[\"PW\"]",
        "password = os.environ.get('DB_PASSWORD')",
        "password = getenv(\"X\")",
        "password: ${DB_PASSWORD}",
        "password: \"${DB_PASSWORD}\"",
        "PASSWORD=$DB_PASS",
        "password = \"<your password>\"",
        "password = \"xxxxxx\"",
        "password: \"********\"",
        "password = \"changeme\"",
        "password: \"{{ vault_db_password }}\"",
        "password: \"%(db_password)s\"",
        "password = self.password",
        "password: process.env.DB_PASS",
        "password = config.get('db_password')",
        "password = None",
        "password = user_password",
        "pub password: String,",
        "password: str",
        "def login(user: str, password: str) -> bool:",
        "fn check(password: &str) -> bool",
        "password_hash = \"argon2id-v19\"",
        "<input type=\"password\" name=\"password\" value=\"\">",
        "password: \"Password\"",
        "password: \"Mot de passe\"",
        "PWD=/home/me/projects/evident",
        "secret: my-db-secret",
        "secretName: postgres-credentials",
        "password == \"\"",
        "if password != confirm_password:",
        "FORCE_CHANGE_PASSWORD = \"FORCE_CHANGE_PASSWORD\"",
        "NOPASSWORD = \"no-password-required\"",
        "AttributeOID.CHALLENGE_PASSWORD: \"challengePassword\",",
        "\"IAMUserChangePassword\": \"arn:aws:iam::aws:policy/IAMUserChangePassword\",",
        "\"AWS::MSK::BatchScramSecret\": \"ff2b807a577495b0\",",
        "events={'(?i)password': 'secret\\n'}",
        "password = \"user_name_field\"",
    ] {
        assert_clean(text);
    }
}

#[test]
fn api_key_assignments() {
    let cases = [
        ("api_key = \"f3a9c2e7b1d84a6c9e2f\"", "f3a9c2e7b1d84a6c9e2f"),
        ("X-API-Key: 8b7a6c5d4e3f2a1b0c9d\n", "8b7a6c5d4e3f2a1b0c9d"),
        ("ACCESS_TOKEN=ya29a0AfH6SMB3x9q", "ya29a0AfH6SMB3x9q"),
        ("auth_token: 'a1b2c3d4e5f6'", "a1b2c3d4e5f6"),
        (
            "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXKEY01",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXKEY01",
        ),
        (
            "https://api.example.org/v1?access_token=Ab12Cd34Ef56&page=2",
            "Ab12Cd34Ef56",
        ),
    ];
    for (text, secret) in cases {
        assert_finds(text, SecretClass::ApiKeyAssignment, secret);
    }
    for text in [
        "api_key = os.environ[\"API_KEY\"]",
        "apiKey: process.env.API_KEY",
        "api_key = \"YOUR_API_KEY\"",
        "api_key = \"<api key>\"",
        "access_token = response.json()[\"access_token\"]",
        "accessToken: string;",
        "auth_token = token",
        "API_KEY=your-api-key-here",
        "refresh_token: \"{{ refresh }}\"",
        "the api key: ask the admin for one",
        "\"AWS::ApiGateway::ApiKey\": \"48205d4ffd7feba3\",",
    ] {
        assert_clean(text);
    }
}

#[test]
fn connection_strings() {
    assert_finds(
        "DATABASE_URL=postgres://app:Sup3rS3cret@db.internal:5432/app",
        SecretClass::ConnectionStringPassword,
        "Sup3rS3cret",
    );
    assert_finds(
        "mongodb+srv://admin:p%40ss%3Aw0rd@cluster0.example.net/?retryWrites=true",
        SecretClass::ConnectionStringPassword,
        "p%40ss%3Aw0rd",
    );
    assert_finds(
        "redis://:Redis2024pw@cache:6379/0",
        SecretClass::ConnectionStringPassword,
        "Redis2024pw",
    );
    for text in [
        "postgres://user:password@localhost/db",
        "postgres://user:<password>@host/db",
        "postgres://${DB_USER}:${DB_PASS}@host/db",
        "https://example.com:8080/path",
        "git@github.com:org/repo.git",
        "http://user@host/",
        "amqp://guest:****@rabbit:5672",
    ] {
        assert_clean(text);
    }
}

#[test]
fn hashes_and_ids_are_not_secrets() {
    for text in [
        "commit 3f786850e387550fdab836ed7e6dc881de23001b\nAuthor: A <a@b.c>",
        "Merge: 3f78685 9fceb02",
        "id = \"123e4567-e89b-12d3-a456-426614174000\"",
        "request-id: 123e4567-e89b-12d3-a456-426614174000",
        "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "\"checksum\": \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"",
        "integrity=\"sha512-dGhpcyBpcyBhIHRlc3Q=\"",
        "The key decision: we keep the password policy as is.",
    ] {
        assert_clean(text);
    }
}

#[test]
fn findings_are_sorted_with_lines_and_no_overlap() {
    let gh = format!("ghp_{}", alnum(36, 20));
    let text = format!(
        "line one\npassword = \"Tr0ub4dor&3\"\n\nGITHUB_TOKEN={gh}\nurl: postgres://a:Sup3rS3cret@h/db\n"
    );
    let f = find_secrets(&text);
    let classes: Vec<SecretClass> = f.iter().map(|x| x.class).collect();
    assert_eq!(
        classes,
        vec![
            SecretClass::PasswordAssignment,
            SecretClass::GithubToken,
            SecretClass::ConnectionStringPassword
        ]
    );
    assert_eq!(f.iter().map(|x| x.line).collect::<Vec<_>>(), vec![2, 4, 5]);
    // An API key assignment whose value is a recognisable token is reported once, as the token.
    let text = format!("api_key = \"{gh}\"");
    assert_eq!(found(&text), vec![(SecretClass::GithubToken, gh.clone())]);
}

#[test]
fn findings_do_not_reveal_the_secret() {
    let secret = "Tr0ub4dor&3";
    let text = format!("password = \"{secret}\"");
    let f = find_secrets(&text);
    assert_eq!(f.len(), 1);
    assert!(!format!("{:?}", f[0]).contains(secret));
    assert!(!format!("{}", f[0]).contains(secret));
    assert!(
        !serde_json::to_string(&f[0])
            .expect("serialise")
            .contains(secret)
    );
    assert_eq!(
        redact_secrets(&text, &f),
        "password = \"[REDACTED:password_assignment]\""
    );
}

/// Assignments inside quoted strings (a constant holding a config line, JSON inside a
/// string literal, a command line) are found and their lines redacted.
#[test]
fn assignments_inside_quotes_are_found_and_redacted() {
    let cases = [
        (
            r#"SECRET = 'password = "hunter2longvalue"'"#,
            SecretClass::PasswordAssignment,
            "hunter2longvalue",
        ),
        (
            r#"body = "{\"api_key\": \"Zx81bQ92kLm3Tq7\"}""#,
            SecretClass::ApiKeyAssignment,
            "Zx81bQ92kLm3Tq7",
        ),
        (
            r#"let payload = r"{"api_key": "Zx81bQ92kLm3Tq7"}";"#,
            SecretClass::ApiKeyAssignment,
            "Zx81bQ92kLm3Tq7",
        ),
        (
            r#"run("curl -d token='q7Wm2Xk9Lp4Rz8Tn' https://example.com/hook")"#,
            SecretClass::ApiKeyAssignment,
            "q7Wm2Xk9Lp4Rz8Tn",
        ),
        (
            r#"CMD = "deploy --env prod token='q7Wm2Xk9Lp4Rz8Tn' --fast""#,
            SecretClass::ApiKeyAssignment,
            "q7Wm2Xk9Lp4Rz8Tn",
        ),
        (
            r#"conf = 'db: {pwd: "s3cr3t-Value!"}'"#,
            SecretClass::PasswordAssignment,
            "s3cr3t-Value!",
        ),
    ];
    for (line, class, secret) in cases {
        let text = format!("fn main() {{\n    {line}\n}}\n");
        assert!(
            found(&text).iter().any(|(c, s)| *c == class && s == secret),
            "{line}: {:?}",
            found(&text)
        );
        let (red, _) = redact(&text).expect("redacted");
        assert!(!red.contains(secret), "{red}");
        assert_eq!(red.lines().count(), text.lines().count());
        assert!(
            red.starts_with("fn main() {\n") && red.ends_with("\n}\n"),
            "{red}"
        );
    }
    // Still nothing in ordinary quoted prose and code.
    for quiet in [
        r#"msg = 'the password = field must be filled'"#,
        r#"label = "token: required""#,
        r#"let next_token = tokens.next();"#,
        r#"help = "set token=<your token> in the config""#,
    ] {
        assert!(found(quiet).is_empty(), "{quiet}: {:?}", found(quiet));
    }
}

#[test]
fn redact_ignores_findings_that_do_not_fit() {
    let bogus = [
        SecretFinding {
            class: SecretClass::JwtToken,
            byte_start: 1,
            byte_end: 2,
            line: 1,
        },
        SecretFinding {
            class: SecretClass::JwtToken,
            byte_start: 0,
            byte_end: 99,
            line: 1,
        },
    ];
    assert_eq!(redact_secrets("é!", &bogus), "é!");
}

#[test]
fn large_input_without_secrets() {
    let mut text = String::new();
    while text.len() < 3_000_000 {
        text.push_str("The password policy: rotate keys (see AKIA docs) and the bearer token flow; sk- prefix. ");
        text.push_str(
            "Příliš žluťoučký kůň 東京 😀 commit 3f786850e387550fdab836ed7e6dc881de23001b\n",
        );
    }
    assert!(find_secrets(&text).is_empty());
}
