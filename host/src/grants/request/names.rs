//! The spellings Kubernetes accepts for the parts of a path.

/// The longest segment Kubernetes accepts (a DNS subdomain).
pub(super) const MAX_SEGMENT: usize = 253;

/// Uppercase is refused outright in group, version and resource: there is
/// one spelling, and the checker compares strings.
pub(super) fn check_lowercase(part: &str, s: &str) -> Result<(), String> {
    if s.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err(format!(
            "uppercase letters are refused in a {part} (one spelling only: lowercase)"
        ));
    }
    Ok(())
}

/// A DNS label (RFC 1123): 1–63 of `[a-z0-9-]`, alphanumeric at both ends.
pub(crate) fn check_dns_label(s: &str) -> Result<(), String> {
    if s.is_empty() || s.len() > 63 {
        return Err("a DNS label has 1 to 63 characters".into());
    }
    if !s
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err("a DNS label has only lowercase letters, digits and `-`".into());
    }
    if s.starts_with('-') || s.ends_with('-') {
        return Err("a DNS label starts and ends with a letter or digit".into());
    }
    Ok(())
}

/// A DNS subdomain (RFC 1123): at most 253 characters, dot-separated DNS
/// labels.
pub(crate) fn check_dns_subdomain(s: &str) -> Result<(), String> {
    if s.is_empty() || s.len() > MAX_SEGMENT {
        return Err("a DNS subdomain has 1 to 253 characters".into());
    }
    for label in s.split('.') {
        check_dns_label(label)
            .map_err(|why| format!("a DNS subdomain is dot-separated DNS labels ({why})"))?;
    }
    Ok(())
}
