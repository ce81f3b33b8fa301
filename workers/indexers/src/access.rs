//! What sources may reach (the egress policy, `[sources] roots`): defined with registration in
//! `evident-sources` ([`evident_sources::access`]); the pollers check it again at every poll.

pub use evident_sources::access::*;

impl From<AccessError> for crate::poll::PollError {
    fn from(e: AccessError) -> crate::poll::PollError {
        crate::poll::PollError::Refused(e.to_string())
    }
}
