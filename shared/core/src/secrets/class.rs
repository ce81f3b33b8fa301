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
    /// Evident's own API keys (`evd_…`).
    EvidentToken,
    GitlabToken,
    NpmToken,
    PypiToken,
    HuggingFaceToken,
    SlackWebhook,
    SendgridKey,
    GoogleOauthSecret,
    DigitaloceanToken,
    ShopifyToken,
    BearerToken,
    PasswordAssignment,
    ApiKeyAssignment,
    ConnectionStringPassword,
}

impl SecretClass {
    /// Every class, in order of specificity (the order overlaps are resolved in).
    pub const ALL: [SecretClass; 22] = [
        SecretClass::PrivateKey,
        SecretClass::AwsAccessKey,
        SecretClass::GithubToken,
        SecretClass::SlackToken,
        SecretClass::GoogleApiKey,
        SecretClass::StripeKey,
        SecretClass::OpenAiKey,
        SecretClass::JwtToken,
        SecretClass::EvidentToken,
        SecretClass::GitlabToken,
        SecretClass::NpmToken,
        SecretClass::PypiToken,
        SecretClass::HuggingFaceToken,
        SecretClass::SlackWebhook,
        SecretClass::SendgridKey,
        SecretClass::GoogleOauthSecret,
        SecretClass::DigitaloceanToken,
        SecretClass::ShopifyToken,
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
            SecretClass::EvidentToken => "evident_token",
            SecretClass::GitlabToken => "gitlab_token",
            SecretClass::NpmToken => "npm_token",
            SecretClass::PypiToken => "pypi_token",
            SecretClass::HuggingFaceToken => "hugging_face_token",
            SecretClass::SlackWebhook => "slack_webhook",
            SecretClass::SendgridKey => "sendgrid_key",
            SecretClass::GoogleOauthSecret => "google_oauth_secret",
            SecretClass::DigitaloceanToken => "digitalocean_token",
            SecretClass::ShopifyToken => "shopify_token",
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
            SecretClass::EvidentToken => "Evident API key (evd_...)",
            SecretClass::GitlabToken => "GitLab personal access token",
            SecretClass::NpmToken => "npm access token",
            SecretClass::PypiToken => "PyPI API token",
            SecretClass::HuggingFaceToken => "Hugging Face access token",
            SecretClass::SlackWebhook => "Slack incoming-webhook URL",
            SecretClass::SendgridKey => "SendGrid API key",
            SecretClass::GoogleOauthSecret => "Google OAuth client secret",
            SecretClass::DigitaloceanToken => "DigitalOcean token",
            SecretClass::ShopifyToken => "Shopify access token",
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
