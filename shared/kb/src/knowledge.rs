//! Knowledge an agent stores by subject: one source per subject, so two subjects never
//! overwrite each other and storing the same subject again updates it.

use evident_core::refs;
use evident_core::validate::{self, FieldError};

use crate::{KbError, Result};

/// The source URN of the knowledge stored about `subject`: `knowledge:{normalised subject}`.
/// The subject is normalised as a ref (case, spacing and punctuation do not make another
/// subject): `Payment retries` → `knowledge:payment_retries`, `service:Payments` →
/// `knowledge:service:payments`.
pub fn knowledge_urn(subject: &str) -> Result<String> {
    Ok(format!("knowledge:{}", normalised_subject(subject)?))
}

/// A subject in its normalised spelling (the part of [`knowledge_urn`] after `knowledge:`),
/// shared by every URN derived from a subject.
pub(crate) fn normalised_subject(subject: &str) -> Result<String> {
    validate::identifier("subject", subject)?;
    let key = refs::normalize_ref(subject).ok_or(KbError::Field(FieldError::Invalid {
        field: "subject",
        reason: "has no letters or digits".into(),
    }))?;
    let normalised = if subject.contains(':') {
        key.as_str()
    } else {
        key.value()
    };
    Ok(normalised.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_normalise_to_one_urn_each() {
        let a = knowledge_urn("Payment retries").expect("urn");
        assert_eq!(a, "knowledge:payment_retries");
        assert_eq!(knowledge_urn("  payment   RETRIES ").expect("urn"), a);
        assert_ne!(knowledge_urn("Refund policy").expect("urn"), a);
        assert_eq!(
            knowledge_urn("service:Payments").expect("urn"),
            "knowledge:service:payments"
        );
        assert!(knowledge_urn("").is_err());
        assert!(knowledge_urn("!!!").is_err());
    }
}
