//! The classes of credential [`find_secrets`](super::find_secrets) reports.

use std::fmt;

use serde::Serialize;

/// The kind of credential found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SecretClass {
    PrivateKey,
    AwsAccessKey,
    GithubToken,
    SlackToken,
    GoogleApiKey,
    StripeKey,
    /// Serialised as `openai_key` (not `open_ai_key`), like [`SecretClass::as_str`].
    #[serde(rename = "openai_key")]
    OpenAiKey,
    JwtToken,
    BearerToken,
    PasswordAssignment,
    ApiKeyAssignment,
    ConnectionStringPassword,
}

impl SecretClass {
    /// Every class, in order of specificity (the order overlaps are resolved in).
    pub const ALL: [SecretClass; 12] = [
        SecretClass::PrivateKey,
        SecretClass::AwsAccessKey,
        SecretClass::GithubToken,
        SecretClass::SlackToken,
        SecretClass::GoogleApiKey,
        SecretClass::StripeKey,
        SecretClass::OpenAiKey,
        SecretClass::JwtToken,
        SecretClass::ConnectionStringPassword,
        SecretClass::BearerToken,
        SecretClass::ApiKeyAssignment,
        SecretClass::PasswordAssignment,
    ];

    /// Stable snake_case name, identical to the serde representation.
    #[must_use]
    pub fn as_str(&self) -> &'static str {
        match self {
            SecretClass::PrivateKey => "private_key",
            SecretClass::AwsAccessKey => "aws_access_key",
            SecretClass::GithubToken => "github_token",
            SecretClass::SlackToken => "slack_token",
            SecretClass::GoogleApiKey => "google_api_key",
            SecretClass::StripeKey => "stripe_key",
            SecretClass::OpenAiKey => "openai_key",
            SecretClass::JwtToken => "jwt_token",
            SecretClass::BearerToken => "bearer_token",
            SecretClass::PasswordAssignment => "password_assignment",
            SecretClass::ApiKeyAssignment => "api_key_assignment",
            SecretClass::ConnectionStringPassword => "connection_string_password",
        }
    }

    /// Human-readable description for messages and UIs.
    #[must_use]
    pub fn description(&self) -> &'static str {
        match self {
            SecretClass::PrivateKey => "PEM, OpenSSH or PGP private key",
            SecretClass::AwsAccessKey => "AWS access key id",
            SecretClass::GithubToken => "GitHub access token",
            SecretClass::SlackToken => "Slack API token",
            SecretClass::GoogleApiKey => "Google API key",
            SecretClass::StripeKey => "Stripe live secret or restricted key",
            SecretClass::OpenAiKey => "OpenAI-style API key (sk-...)",
            SecretClass::JwtToken => "JSON Web Token",
            SecretClass::BearerToken => "bearer token (Authorization header)",
            SecretClass::PasswordAssignment => {
                "password or secret assigned in configuration or code"
            }
            SecretClass::ApiKeyAssignment => {
                "API key or access token assigned in configuration or code"
            }
            SecretClass::ConnectionStringPassword => {
                "password embedded in a connection string or URL"
            }
        }
    }

    /// Lower is more specific; used to resolve overlapping findings.
    pub(super) fn priority(self) -> usize {
        SecretClass::ALL
            .iter()
            .position(|c| *c == self)
            .unwrap_or(usize::MAX)
    }
}

impl fmt::Display for SecretClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
