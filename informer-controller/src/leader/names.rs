//! Lease names (S8): kube-apiserver takes only a lowercase RFC 1123 subdomain of at most 253
//! characters as a Lease's name (and refuses anything else with 422 on every write), while an
//! identity is free text (controller-runtime's default `<hostname>_<uuid>` has an underscore,
//! hostnames may be uppercase). Names the caller chooses are checked up front; identities that
//! become part of a name are encoded.

use informer_runtime::shard::fnv1a64;

/// The longest Lease name kube-apiserver takes.
pub(crate) const NAME_MAX: usize = 253;

/// The longest label value (a shard set's name is one, on every Lease of the set).
pub(crate) const LABEL_VALUE_MAX: usize = 63;

/// Whether `s` is a lowercase RFC 1123 label: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
fn is_label(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    b.first().is_some_and(alnum)
        && b.last().is_some_and(alnum)
        && b.iter().all(|c| alnum(c) || *c == b'-')
}

/// Whether `s` is a lowercase RFC 1123 subdomain of at most `max` characters.
pub(crate) fn is_subdomain(s: &str, max: usize) -> bool {
    s.len() <= max && s.split('.').all(is_label)
}

/// Checks a name the caller chose (a Lease, a shard set) against what kube-apiserver takes; the
/// error says what is wrong.
pub(crate) fn check(what: &str, name: &str, max: usize) -> Result<(), String> {
    if is_subdomain(name, max) {
        return Ok(());
    }
    Err(format!(
        "{what} {name:?} is not a valid Lease name: it must be a lowercase RFC 1123 subdomain \
         (lower case alphanumeric characters, '-' or '.', starting and ending with an alphanumeric \
         character) of at most {max} characters"
    ))
}

/// `identity` as the tail of a Lease name of at most `max` characters (S8): itself when it is a
/// valid subdomain that fits, otherwise its lowercase alphanumeric runs joined by `-`, cut to
/// fit, with 8 hex digits of its hash, so identities that differ only in case or punctuation
/// (`Host_A`, `host-a`) keep different names.
pub(crate) fn encode_identity(identity: &str, max: usize) -> String {
    if is_subdomain(identity, max) {
        return identity.to_owned();
    }
    let mut out = String::with_capacity(identity.len());
    for c in identity.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let hash = format!("{:08x}", fnv1a64(identity) as u32);
    // Room for `-` and the hash.
    out.truncate(max.saturating_sub(hash.len() + 1));
    let out = out.trim_end_matches('-');
    if out.is_empty() {
        hash
    } else {
        format!("{out}-{hash}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s8_valid_identities_are_kept_and_others_encoded_apart() {
        assert_eq!(encode_identity("replica-0", 100), "replica-0");
        assert_eq!(encode_identity("10.0.0.1", 100), "10.0.0.1");
        let upper = encode_identity("Host_A", 100);
        let lower = encode_identity("host-a", 100);
        assert_eq!(lower, "host-a");
        assert!(upper.starts_with("host-a-") && upper.len() == "host-a-".len() + 8);
        assert_ne!(upper, lower);
        let uuid = encode_identity(
            "ip-10-0-1-7.EC2.internal_3f2a9c1e-77b0-4c9e-9a51-0d1b2c3d4e5f",
            100,
        );
        assert!(is_subdomain(&uuid, 100), "{uuid}");
        let long = encode_identity(&"A".repeat(300), 40);
        assert!(long.len() <= 40 && is_subdomain(&long, 40), "{long}");
        assert!(is_subdomain(&encode_identity("___", 40), 40));
        for id in ["Host_A", "a b", "ÜBER", "-x-", "x."] {
            let name = format!("set-member-{}", encode_identity(id, 100));
            assert!(is_subdomain(&name, NAME_MAX), "{id}: {name}");
        }
    }

    #[test]
    fn s8_chosen_names_are_checked() {
        assert!(check("lease", "my-operator", NAME_MAX).is_ok());
        assert!(check("lease", "my.operator", NAME_MAX).is_ok());
        for bad in ["My-Operator", "my_operator", "", "-x", "x-", "a..b"] {
            let err = check("lease", bad, NAME_MAX).unwrap_err();
            assert!(err.contains("lowercase RFC 1123 subdomain"), "{err}");
        }
        assert!(check("set", &"s".repeat(64), LABEL_VALUE_MAX).is_err());
    }
}
