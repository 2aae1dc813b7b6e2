//! What a `LIKE` pattern says about the strings it can match: the literal characters it
//! starts with. Every match of `'abc%x'` starts with `abc`, so lies in `['abc', 'abd')`, which
//! is what statistics (min and max) can prove absent. Used by pruning (row groups, pages) and
//! by the table formats to skip files; the exact match is always arrow's `like` kernel.
//!
//! The pattern syntax is [`Expr::Like`](super::Expr::Like)'s, the same as arrow's kernels:
//! `%` any run of characters, `_` one character, `\` makes the next character literal.
//! A trailing lone `\` ends the prefix (arrow takes it as a literal backslash; the prefix
//! stops short, which can only keep more).

/// The literal start of a `LIKE` pattern, and what follows it.
///
/// ```
/// use rayquet::expr::{LikePrefix, LikeRest};
/// let p = LikePrefix::of("ab\\%c%");
/// assert_eq!((p.prefix.as_str(), p.rest), ("ab%c", LikeRest::AnyTail));
/// assert_eq!(p.upper_bound().as_deref(), Some("ab%d"));
/// assert_eq!(LikePrefix::of("ab_c").rest, LikeRest::Pattern);
/// assert_eq!(LikePrefix::of("abc").rest, LikeRest::Nothing);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LikePrefix {
    /// The characters every match starts with, escapes resolved (may be empty).
    pub prefix: String,
    /// What the pattern holds after [`LikePrefix::prefix`].
    pub rest: LikeRest,
}

/// What a `LIKE` pattern holds after its literal prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LikeRest {
    /// Nothing: the pattern matches its prefix alone (`'abc'`, equality).
    Nothing,
    /// Only `%`: the pattern matches every string that starts with the prefix (`'abc%'`).
    AnyTail,
    /// More wildcards or characters (`'abc_'`, `'abc%x'`): a match starts with the prefix,
    /// but not every string that does matches.
    Pattern,
}

impl LikePrefix {
    /// The literal prefix of `pattern`. It bounds case-sensitive `LIKE` only: under `ILIKE`
    /// a letter of the prefix also matches its other case.
    pub fn of(pattern: &str) -> LikePrefix {
        let mut prefix = String::new();
        let mut it = pattern.char_indices();
        while let Some((i, c)) = it.next() {
            let stop = match c {
                '%' | '_' => true,
                '\\' => match it.next() {
                    Some((_, e)) => {
                        prefix.push(e);
                        continue;
                    }
                    None => true,
                },
                c => {
                    prefix.push(c);
                    continue;
                }
            };
            debug_assert!(stop);
            let tail = &pattern[i..];
            let rest = if tail.chars().all(|c| c == '%') {
                LikeRest::AnyTail
            } else {
                LikeRest::Pattern
            };
            return LikePrefix { prefix, rest };
        }
        LikePrefix {
            prefix,
            rest: LikeRest::Nothing,
        }
    }

    /// The smallest string greater than every string that starts with the prefix:
    /// [`prefix_upper_bound`] of it.
    pub fn upper_bound(&self) -> Option<String> {
        prefix_upper_bound(&self.prefix)
    }
}

/// The smallest string greater than every string that starts with `prefix`: `prefix` cut
/// after its last character that has a successor, that character replaced by the next one
/// (`"abc"` → `"abd"`). `None` when `prefix` is empty or made only of `char::MAX`. Byte order
/// of UTF-8 is code point order, so this bounds strings compared as bytes too (as Parquet,
/// Iceberg and Delta statistics are).
pub fn prefix_upper_bound(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(c) = chars.pop() {
        let next = match c {
            '\u{D7FF}' => Some('\u{E000}'),
            c => char::from_u32(c as u32 + 1),
        };
        if let Some(n) = next {
            chars.push(n);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(p: &str) -> (String, LikeRest) {
        let l = LikePrefix::of(p);
        (l.prefix, l.rest)
    }

    #[test]
    fn prefixes() {
        use LikeRest::*;
        assert_eq!(of("abc"), ("abc".into(), Nothing));
        assert_eq!(of(""), ("".into(), Nothing));
        assert_eq!(of("abc%"), ("abc".into(), AnyTail));
        assert_eq!(of("abc%%"), ("abc".into(), AnyTail));
        assert_eq!(of("%abc"), ("".into(), Pattern));
        assert_eq!(of("%"), ("".into(), AnyTail));
        assert_eq!(of("ab_"), ("ab".into(), Pattern));
        assert_eq!(of("ab%c%"), ("ab".into(), Pattern));
        assert_eq!(of("a\\%b"), ("a%b".into(), Nothing));
        assert_eq!(of("a\\_b%"), ("a_b".into(), AnyTail));
        assert_eq!(of("a\\\\b%"), ("a\\b".into(), AnyTail));
        assert_eq!(of("a\\xb"), ("axb".into(), Nothing));
        // A trailing lone escape: the prefix stops before it, and nothing more is claimed.
        assert_eq!(of("ab\\"), ("ab".into(), Pattern));
        assert_eq!(of("é€%"), ("é€".into(), AnyTail));
    }

    #[test]
    fn upper_bounds() {
        let ub = |p: &str| {
            LikePrefix {
                prefix: p.into(),
                rest: LikeRest::AnyTail,
            }
            .upper_bound()
        };
        assert_eq!(ub("abc").as_deref(), Some("abd"));
        assert_eq!(ub("az").as_deref(), Some("a{"));
        assert_eq!(ub("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(ub("\u{D7FF}").as_deref(), Some("\u{E000}"));
        assert_eq!(ub("\u{10FFFF}\u{10FFFF}"), None);
        assert_eq!(ub(""), None);
        // Every string starting with the prefix sorts (as bytes) in [prefix, upper bound).
        for p in ["abc", "a\u{7F}", "é", "a\u{10FFFF}", "\u{D7FF}x\u{10FFFF}"] {
            let u = ub(p).unwrap();
            for tail in ["", "\0", "zzz", "\u{10FFFF}\u{10FFFF}", "é"] {
                let s = format!("{p}{tail}");
                assert!(
                    p.as_bytes() <= s.as_bytes() && s.as_bytes() < u.as_bytes(),
                    "{s:?} not in [{p:?}, {u:?})"
                );
            }
        }
    }
}
