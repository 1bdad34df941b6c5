//! Kubernetes quantities (`100m`, `0.5`, `64Mi`, `1G`, `1e3`) read back as
//! the contract's base units: CPU in millicores, memory and storage in
//! bytes. The API server may rewrite what Apply wrote (`67108864` comes
//! back as `64Mi`), so usage reads every form it can send.

/// A quantity scaled by `scale` (1000 for CPU millicores, 1 for bytes),
/// rounded up as Kubernetes rounds; `None` when it cannot be read.
pub fn parse(text: &str, scale: u64) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let factor: f64 = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        "Pi" => 1024.0 * 1024.0 * 1024.0 * 1024.0 * 1024.0,
        s if s.starts_with(['e', 'E']) => 10f64.powi(s[1..].parse().ok()?),
        _ => return None,
    };
    let value = (number * factor * scale as f64).ceil();
    (value.is_finite() && value >= 0.0).then_some(value as u64)
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn reads_cpu_as_millicores() {
        assert_eq!(parse("100m", 1000), Some(100));
        assert_eq!(parse("1", 1000), Some(1000));
        assert_eq!(parse("0.5", 1000), Some(500));
    }

    #[test]
    fn reads_memory_as_bytes() {
        assert_eq!(parse("64Mi", 1), Some(64 << 20));
        assert_eq!(parse("67108864", 1), Some(64 << 20));
        assert_eq!(parse("1G", 1), Some(1_000_000_000));
        assert_eq!(parse("1e3", 1), Some(1000));
        assert_eq!(parse("lots", 1), None);
    }
}
