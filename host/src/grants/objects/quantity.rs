//! Kubernetes resource quantities (`500m`, `1Gi`, `1e3`), read exactly
//! enough to compare with a ceiling from the grants: in billionths, rounded
//! up, saturating far above any real ceiling.

/// A quantity in billionths of its unit (`1` is 1 000 000 000).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Quantity(u128);

impl Quantity {
    /// Parses `s` as the API server's quantity syntax; `Err` says what is
    /// wrong with it.
    pub(crate) fn parse(s: &str) -> Result<Quantity, String> {
        let s = s.trim();
        let body = s.strip_prefix('+').unwrap_or(s);
        if body.starts_with('-') {
            return Err(format!("`{}` is negative", super::fields::shown(s)));
        }
        let end = body
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(body.len());
        let (number, suffix) = body.split_at(end);
        let (int, frac) = number.split_once('.').unwrap_or((number, ""));
        if (int.is_empty() && frac.is_empty()) || frac.contains('.') {
            return Err(format!("`{}` is not a quantity", super::fields::shown(s)));
        }
        // Scale: a power of ten (decimal suffixes, exponents) or of 1024.
        let (ten, two): (i32, u32) = match suffix {
            "" => (0, 0),
            "n" => (-9, 0),
            "u" => (-6, 0),
            "m" => (-3, 0),
            "k" => (3, 0),
            "M" => (6, 0),
            "G" => (9, 0),
            "T" => (12, 0),
            "P" => (15, 0),
            "E" => (18, 0),
            "Ki" => (0, 10),
            "Mi" => (0, 20),
            "Gi" => (0, 30),
            "Ti" => (0, 40),
            "Pi" => (0, 50),
            "Ei" => (0, 60),
            e if e.starts_with(['e', 'E']) => match e[1..].parse::<i32>() {
                Ok(x) if (-40..=40).contains(&x) => (x, 0),
                _ => return Err(format!("`{}` is not a quantity", super::fields::shown(s))),
            },
            _ => return Err(format!("`{}` is not a quantity", super::fields::shown(s))),
        };
        // digits × 10^(ten + 9 - frac.len()) × 2^two, rounded up.
        let digits = format!("{int}{frac}");
        let digits = digits.trim_start_matches('0');
        let mut value: u128 = 0;
        for d in digits.bytes() {
            value = value
                .saturating_mul(10)
                .saturating_add(u128::from(d - b'0'));
        }
        let power = ten + 9 - i32::try_from(frac.len()).unwrap_or(i32::MAX);
        let mut v = value;
        if power >= 0 {
            for _ in 0..power {
                v = v.saturating_mul(10);
            }
        } else {
            let mut div: u128 = 1;
            for _ in 0..(-power).min(38) {
                div = div.saturating_mul(10);
            }
            v = v.div_ceil(div);
            if -power > 38 && value > 0 {
                v = 1;
            }
        }
        Ok(Quantity(v.saturating_mul(1u128 << two)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).expect(s)
    }

    #[test]
    fn quantities_compare_as_the_api_server_reads_them() {
        assert_eq!(q("1Gi"), q("1073741824"));
        assert_eq!(q("1k"), q("1000"));
        assert_eq!(q("1e3"), q("1k"));
        assert_eq!(q("1E3"), q("1000"));
        assert_eq!(q("500m"), q("0.5"));
        assert!(q("1Ti") > q("1T"));
        assert!(q("1025Mi") > q("1Gi"));
        assert!(q("64Gi") < q("65Gi"));
        assert!(q("1Ei") > q("1024Pi") || q("1Ei") == q("1024Pi"));
        assert_eq!(q("1n").0, 1);
        assert_eq!(q("0.1n").0, 1, "rounded up");
        assert_eq!(q("2Gi").0, (2u128 << 30) * 1_000_000_000);
        assert!(q("99999999999999999999999999999999999999999999Ei") > q("1Ei"));
        for bad in ["", "-1", "1Xi", "1.2.3", "abc", "1e999", "."] {
            assert!(Quantity::parse(bad).is_err(), "{bad}");
        }
    }
}
