//! Tokens from an identity provider: JWTs signed RS256 or ES256 (keys from a JWKS document)
//! or HS256 (a shared secret from the environment), verified with `ring`.
//!
//! Claim → grant mapping (documented in the README):
//! - `sub` (required) names the caller (`jwt:{sub}` in the audit log);
//! - `exp` (required) and `nbf` (optional) bound its life, with 60 s of clock skew;
//! - `iss` and `aud` must match `[auth.jwt] issuer` / `audience` when those are set;
//! - `evident_role`: `read` (default), `write`, `admin` or `operator`;
//! - `evident_client`: the client (required unless the role is `operator`);
//! - `evident_projects`, `evident_groups`: narrow the grant, as for API keys.

use std::collections::HashMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use evident_core::access::{Grant, Role};
use ring::signature::{self, UnparsedPublicKey};
use serde::Deserialize;

use super::Principal;

const SKEW_MS: i64 = 60_000;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum JwtError {
    #[error("malformed JWT: {0}")]
    Malformed(String),
    #[error("JWT algorithm `{0}` is not accepted (RS256, ES256, HS256 as configured)")]
    Algorithm(String),
    #[error("no key for the JWT (kid {0:?})")]
    UnknownKey(Option<String>),
    #[error("JWT signature does not verify")]
    Signature,
    #[error("JWT has expired")]
    Expired,
    #[error("JWT is not valid yet")]
    NotYetValid,
    #[error("JWT claim `{0}` does not match the configuration")]
    Claim(&'static str),
    #[error("JWT grant is invalid: {0}")]
    Grant(String),
    #[error("JWKS: {0}")]
    Jwks(String),
}

enum Key {
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
    },
    /// Uncompressed P-256 point (0x04 ‖ x ‖ y).
    P256(Vec<u8>),
}

/// Verifies JWTs against configured keys and maps their claims to a grant.
pub struct JwtVerifier {
    /// Replaced whole when the JWKS is fetched again (key rotation).
    keys: parking_lot::RwLock<Vec<(Option<String>, Key)>>,
    hs256: Option<ring::hmac::Key>,
    issuer: Option<String>,
    audience: Option<String>,
}

#[derive(Deserialize)]
struct Header {
    alg: String,
    #[serde(default)]
    kid: Option<String>,
}

#[derive(Deserialize)]
struct Jwks {
    keys: Vec<Jwk>,
}

#[derive(Deserialize)]
struct Jwk {
    kty: String,
    #[serde(default)]
    kid: Option<String>,
    #[serde(default)]
    crv: Option<String>,
    #[serde(default)]
    n: Option<String>,
    #[serde(default)]
    e: Option<String>,
    #[serde(default)]
    x: Option<String>,
    #[serde(default)]
    y: Option<String>,
    #[serde(default, rename = "use")]
    key_use: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Audience {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
struct Claims {
    sub: String,
    exp: i64,
    #[serde(default)]
    nbf: Option<i64>,
    #[serde(default)]
    iss: Option<String>,
    #[serde(default)]
    aud: Option<Audience>,
    #[serde(default)]
    evident_role: Option<String>,
    #[serde(default)]
    evident_client: Option<String>,
    #[serde(default)]
    evident_projects: Vec<String>,
    #[serde(default)]
    evident_groups: Vec<String>,
}

fn b64(s: &str, what: &str) -> Result<Vec<u8>, JwtError> {
    URL_SAFE_NO_PAD
        .decode(s.trim_end_matches('='))
        .map_err(|e| JwtError::Malformed(format!("{what}: {e}")))
}

impl JwtVerifier {
    /// `jwks`: a JWKS document (RSA and P-256 keys; others are skipped); `hs256_secret`: the
    /// shared secret, when HS256 is accepted.
    pub fn new(
        jwks: Option<&str>,
        hs256_secret: Option<&[u8]>,
        issuer: Option<String>,
        audience: Option<String>,
    ) -> Result<JwtVerifier, JwtError> {
        let keys = match jwks {
            Some(text) => parse_jwks(text)?,
            None => Vec::new(),
        };
        Ok(JwtVerifier {
            keys: parking_lot::RwLock::new(keys),
            hs256: hs256_secret.map(|s| ring::hmac::Key::new(ring::hmac::HMAC_SHA256, s)),
            issuer,
            audience,
        })
    }

    /// Replaces the signing keys with those of a newly fetched JWKS document (a document
    /// without a usable key is refused and the old keys stay).
    pub fn replace_keys(&self, jwks: &str) -> Result<usize, JwtError> {
        let keys = parse_jwks(jwks)?;
        let n = keys.len();
        *self.keys.write() = keys;
        Ok(n)
    }
}

fn parse_jwks(text: &str) -> Result<Vec<(Option<String>, Key)>, JwtError> {
    let mut keys = Vec::new();
    let doc: Jwks = serde_json::from_str(text).map_err(|e| JwtError::Jwks(e.to_string()))?;
    for k in doc.keys {
        if k.key_use.as_deref().is_some_and(|u| u != "sig") {
            continue;
        }
        match (k.kty.as_str(), k.crv.as_deref()) {
            ("RSA", _) => {
                let (Some(n), Some(e)) = (&k.n, &k.e) else {
                    return Err(JwtError::Jwks("an RSA key needs `n` and `e`".into()));
                };
                keys.push((
                    k.kid.clone(),
                    Key::Rsa {
                        n: b64(n, "n")?,
                        e: b64(e, "e")?,
                    },
                ));
            }
            ("EC", Some("P-256")) => {
                let (Some(x), Some(y)) = (&k.x, &k.y) else {
                    return Err(JwtError::Jwks("an EC key needs `x` and `y`".into()));
                };
                let mut point = vec![4u8];
                point.extend(b64(x, "x")?);
                point.extend(b64(y, "y")?);
                keys.push((k.kid.clone(), Key::P256(point)));
            }
            _ => {}
        }
    }
    if keys.is_empty() {
        return Err(JwtError::Jwks(
            "no RSA or P-256 signing key in the document".into(),
        ));
    }
    Ok(keys)
}

impl JwtVerifier {
    /// The principal of a valid token at `now_ms`.
    pub fn verify(&self, token: &str, now_ms: i64) -> Result<Principal, JwtError> {
        let mut parts = token.split('.');
        let (Some(h), Some(p), Some(s), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(JwtError::Malformed(
                "expected three dot-separated parts".into(),
            ));
        };
        let header: Header = serde_json::from_slice(&b64(h, "header")?)
            .map_err(|e| JwtError::Malformed(format!("header: {e}")))?;
        let signed = &token.as_bytes()[..h.len() + 1 + p.len()];
        let sig = b64(s, "signature")?;
        self.check_signature(header, signed, &sig)?;
        let claims: Claims = serde_json::from_slice(&b64(p, "payload")?)
            .map_err(|e| JwtError::Malformed(format!("claims: {e}")))?;
        self.check_claims(&claims, now_ms)?;
        principal(claims)
    }

    /// Checks the signature over `signed` by the header's algorithm: HS256 with the shared
    /// secret, RS256 / ES256 with a key of the set (the header's `kid`, or any key of the
    /// algorithm's type when it names none).
    fn check_signature(&self, header: Header, signed: &[u8], sig: &[u8]) -> Result<(), JwtError> {
        match header.alg.as_str() {
            "HS256" => {
                let key = self
                    .hs256
                    .as_ref()
                    .ok_or_else(|| JwtError::Algorithm(header.alg.clone()))?;
                ring::hmac::verify(key, signed, sig).map_err(|_| JwtError::Signature)?;
            }
            "RS256" | "ES256" => {
                let keys = self.keys.read();
                let candidates: Vec<&Key> = keys
                    .iter()
                    .filter(|(kid, k)| {
                        (header.kid.is_none() || kid == &header.kid)
                            && matches!(
                                (header.alg.as_str(), k),
                                ("RS256", Key::Rsa { .. }) | ("ES256", Key::P256(_))
                            )
                    })
                    .map(|(_, k)| k)
                    .collect();
                if candidates.is_empty() {
                    return Err(JwtError::UnknownKey(header.kid));
                }
                let ok = candidates.iter().any(|k| match k {
                    Key::Rsa { n, e } => signature::RsaPublicKeyComponents { n, e }
                        .verify(&signature::RSA_PKCS1_2048_8192_SHA256, signed, sig)
                        .is_ok(),
                    Key::P256(point) => {
                        UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point)
                            .verify(signed, sig)
                            .is_ok()
                    }
                });
                if !ok {
                    return Err(JwtError::Signature);
                }
            }
            other => return Err(JwtError::Algorithm(other.to_string())),
        }
        Ok(())
    }

    /// Checks the registered claims: expiry and not-before (with the allowed skew), and the
    /// issuer and audience when configured.
    fn check_claims(&self, claims: &Claims, now_ms: i64) -> Result<(), JwtError> {
        if now_ms >= claims.exp.saturating_mul(1000).saturating_add(SKEW_MS) {
            return Err(JwtError::Expired);
        }
        if claims
            .nbf
            .is_some_and(|nbf| now_ms + SKEW_MS < nbf.saturating_mul(1000))
        {
            return Err(JwtError::NotYetValid);
        }
        if let Some(iss) = &self.issuer
            && claims.iss.as_ref() != Some(iss)
        {
            return Err(JwtError::Claim("iss"));
        }
        if let Some(aud) = &self.audience {
            let ok = match &claims.aud {
                Some(Audience::One(a)) => a == aud,
                Some(Audience::Many(v)) => v.contains(aud),
                None => false,
            };
            if !ok {
                return Err(JwtError::Claim("aud"));
            }
        }
        Ok(())
    }
}

/// The principal the `evident_*` claims grant (read by default); a grant must be well formed.
fn principal(claims: Claims) -> Result<Principal, JwtError> {
    let role = match claims.evident_role.as_deref() {
        None => Role::Read,
        Some(r) => Role::parse(r)
            .ok_or_else(|| JwtError::Grant(format!("evident_role `{r}` is not a role")))?,
    };
    let grant = Grant {
        role,
        client_id: claims.evident_client,
        projects: claims.evident_projects,
        groups: claims.evident_groups,
    };
    if !grant.is_well_formed() {
        return Err(JwtError::Grant(
            "evident_client is required (and only operators name none)".into(),
        ));
    }
    Ok(Principal {
        id: format!("jwt:{}", claims.sub),
        name: claims.sub,
        grant,
        expires_at: Some(claims.exp.saturating_mul(1000)),
        depth: 0,
    })
}

/// Keys by id, for tests that build JWKS documents.
pub fn jwks_document(keys: &HashMap<String, serde_json::Value>) -> String {
    serde_json::json!({ "keys": keys.values().collect::<Vec<_>>() }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::KeyPair;

    fn encode(v: &serde_json::Value) -> String {
        URL_SAFE_NO_PAD.encode(v.to_string())
    }

    fn claims(exp: i64) -> serde_json::Value {
        serde_json::json!({
            "sub": "alice", "exp": exp, "iss": "idp", "aud": ["evident"],
            "evident_role": "write", "evident_client": "c1", "evident_projects": ["p1"]
        })
    }

    fn hs256(secret: &[u8], payload: &serde_json::Value) -> String {
        let signing = format!(
            "{}.{}",
            encode(&serde_json::json!({"alg": "HS256", "typ": "JWT"})),
            encode(payload)
        );
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret);
        let tag = ring::hmac::sign(&key, signing.as_bytes());
        format!("{signing}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
    }

    #[test]
    fn hs256_tokens_map_claims_to_a_grant_and_are_checked() {
        let v = JwtVerifier::new(
            None,
            Some(b"s3cret"),
            Some("idp".into()),
            Some("evident".into()),
        )
        .expect("verifier");
        let now = 1_000_000_000;
        let p = v
            .verify(&hs256(b"s3cret", &claims(now / 1000 + 600)), now)
            .expect("valid");
        assert_eq!(p.id, "jwt:alice");
        assert_eq!(p.grant.role, Role::Write);
        assert_eq!(p.grant.client_id.as_deref(), Some("c1"));
        assert_eq!(p.grant.projects, vec!["p1".to_string()]);
        assert_eq!(
            v.verify(&hs256(b"other", &claims(now / 1000 + 600)), now)
                .err(),
            Some(JwtError::Signature)
        );
        assert_eq!(
            v.verify(&hs256(b"s3cret", &claims(now / 1000 - 120)), now)
                .err(),
            Some(JwtError::Expired)
        );
        let mut wrong_aud = claims(now / 1000 + 600);
        wrong_aud["aud"] = "someone-else".into();
        assert_eq!(
            v.verify(&hs256(b"s3cret", &wrong_aud), now).err(),
            Some(JwtError::Claim("aud"))
        );
        let mut no_client = claims(now / 1000 + 600);
        no_client
            .as_object_mut()
            .map(|o| o.remove("evident_client"));
        assert!(matches!(
            v.verify(&hs256(b"s3cret", &no_client), now),
            Err(JwtError::Grant(_))
        ));
        // `alg: none` and unknown algorithms are refused.
        let none = format!(
            "{}.{}.",
            encode(&serde_json::json!({"alg": "none"})),
            encode(&claims(now / 1000 + 600))
        );
        assert!(matches!(
            v.verify(&none, now),
            Err(JwtError::Algorithm(_)) | Err(JwtError::Malformed(_))
        ));
    }

    #[test]
    fn es256_tokens_verify_against_the_jwks_key() {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = signature::EcdsaKeyPair::generate_pkcs8(
            &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            &rng,
        )
        .expect("key");
        let pair = signature::EcdsaKeyPair::from_pkcs8(
            &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            pkcs8.as_ref(),
            &rng,
        )
        .expect("pair");
        let public = pair.public_key().as_ref();
        let jwk = serde_json::json!({
            "kty": "EC", "crv": "P-256", "kid": "k1",
            "x": URL_SAFE_NO_PAD.encode(&public[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&public[33..65]),
        });
        let jwks = jwks_document(&HashMap::from([("k1".to_string(), jwk)]));
        let v = JwtVerifier::new(Some(&jwks), None, None, None).expect("verifier");
        let now = 5_000_000;
        let signing = format!(
            "{}.{}",
            encode(&serde_json::json!({"alg": "ES256", "kid": "k1"})),
            encode(&claims(now / 1000 + 60))
        );
        let sig = pair.sign(&rng, signing.as_bytes()).expect("sign");
        let token = format!("{signing}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()));
        assert_eq!(v.verify(&token, now).expect("valid").name, "alice");
        let tampered = token.replacen(
            &encode(&claims(now / 1000 + 60)),
            &encode(&claims(now / 1000 + 6000)),
            1,
        );
        assert_eq!(v.verify(&tampered, now).err(), Some(JwtError::Signature));
        // HS256 is refused when no secret is configured (no algorithm confusion).
        assert!(matches!(
            v.verify(&hs256(b"x", &claims(now / 1000 + 60)), now),
            Err(JwtError::Algorithm(_))
        ));
    }
}
