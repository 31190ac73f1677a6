//! `balance static-rr`: weighted round robin whose weights are fixed at
//! start-up.
//!
//! It walks the same smooth schedule as [`crate::roundrobin`], but, as in
//! HAProxy, the weights are static: a run-time weight change (agent weight,
//! slowstart ramp, `set server weight`) has no effect, except that an
//! effective weight of 0 takes the server out of the rotation (down,
//! drain) and any non-zero value puts it back with its configured weight
//! (a server configured with weight 0 thus never receives traffic).
//! The same rule applies to `hash-type map-based`.

/// The weight a static algorithm uses when the effective weight becomes
/// `eweight`, for a server configured with `configured`.
pub fn static_weight(configured: u32, eweight: u32) -> u32 {
    if eweight == 0 {
        0
    } else {
        configured
    }
}
