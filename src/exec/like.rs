//! LIKE and ILIKE over vectors: a pattern compiled once per batch (per row when the
//! pattern varies), matched a row at a time; NULL rows stay NULL. A pattern ending in its
//! escape character is an error.

use super::error::ExecError;
use crate::location::Location;
use crate::storage::Value;
use crate::vector::Datum;
use crate::vector::kernels::{bools, both_valid, text_at};

type Result<T> = std::result::Result<T, ExecError>;

/// How a LIKE compares: negated (NOT LIKE), ILIKE, and the ESCAPE character.
#[derive(Clone, Copy, Debug)]
pub struct LikeMode {
    pub negated: bool,
    pub case_insensitive: bool,
    pub escape: Option<char>,
}

/// One piece of a pattern: a literal character, `_` (any one character) or `%` (any run).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Token {
    Char(char),
    One,
    Run,
}

/// A LIKE pattern compiled once per batch (per row when the pattern varies); patterns of
/// literals and `%` only at the ends take the fast string paths.
#[derive(Debug)]
enum Pattern {
    Exact(String),
    Prefix(String),
    Suffix(String),
    Contains(String),
    General(Vec<Token>),
}

impl Pattern {
    /// Compiles `p`; `fold` lowercases literal characters (ILIKE). Errs when the pattern
    /// ends in its escape character, which then escapes nothing.
    fn compile(p: &str, escape: Option<char>, fold: bool) -> std::result::Result<Pattern, String> {
        let mut tokens = Vec::with_capacity(p.len());
        let mut chars = p.chars();
        while let Some(c) = chars.next() {
            let literal = if Some(c) == escape {
                match chars.next() {
                    Some(next) => next,
                    None => return Err(format!("LIKE pattern {p:?} ends with its escape character")),
                }
            } else if c == '%' {
                // `%%` is one run.
                if tokens.last() != Some(&Token::Run) {
                    tokens.push(Token::Run);
                }
                continue;
            } else if c == '_' {
                tokens.push(Token::One);
                continue;
            } else {
                c
            };
            if fold {
                tokens.extend(literal.to_lowercase().map(Token::Char));
            } else {
                tokens.push(Token::Char(literal));
            }
        }
        if tokens.contains(&Token::One) {
            return Ok(Pattern::General(tokens));
        }
        let pieces: Vec<String> = tokens
            .split(|t| *t == Token::Run)
            .map(|part| {
                part.iter()
                    .map(|t| match t {
                        Token::Char(c) => *c,
                        _ => '_',
                    })
                    .collect()
            })
            .collect();
        Ok(match pieces.as_slice() {
            [exact] => Pattern::Exact(exact.clone()),
            [first, suffix] if first.is_empty() => Pattern::Suffix(suffix.clone()),
            [prefix, last] if last.is_empty() => Pattern::Prefix(prefix.clone()),
            [first, middle, last] if first.is_empty() && last.is_empty() => Pattern::Contains(middle.clone()),
            _ => Pattern::General(tokens),
        })
    }

    fn matches(&self, s: &str) -> bool {
        match self {
            Pattern::Exact(x) => s == x,
            Pattern::Prefix(x) => s.starts_with(x.as_str()),
            Pattern::Suffix(x) => s.ends_with(x.as_str()),
            Pattern::Contains(x) => s.contains(x.as_str()),
            Pattern::General(p) => {
                let text: Vec<char> = s.chars().collect();
                like_general(&text, p)
            }
        }
    }
}

/// Iterative matcher with one backtrack point, the last `%`: on a mismatch the run takes
/// one more character and matching resumes after it. Linear for one `%`, at worst
/// text × pattern; never recursive.
fn like_general(s: &[char], p: &[Token]) -> bool {
    let (mut i, mut j) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        match p.get(j) {
            Some(Token::Run) => {
                star = Some((j, i));
                j += 1;
            }
            Some(Token::One) => {
                i += 1;
                j += 1;
            }
            Some(Token::Char(c)) if *c == s[i] => {
                i += 1;
                j += 1;
            }
            _ => match star {
                Some((sj, si)) => {
                    j = sj + 1;
                    i = si + 1;
                    star = Some((sj, si + 1));
                }
                None => return false,
            },
        }
    }
    p[j..].iter().all(|t| *t == Token::Run)
}

/// `s LIKE p` over a batch: NULL where either side is NULL.
pub fn like<'a>(s: &Datum<'_>, p: &Datum<'_>, how: LikeMode, len: usize, at: Location) -> Result<Datum<'a>> {
    if matches!(s, Datum::Scalar(Value::Null)) || matches!(p, Datum::Scalar(Value::Null)) {
        return Ok(Datum::Scalar(Value::Null));
    }
    let fold = how.case_insensitive;
    let compile = |t: &str| Pattern::compile(t, how.escape, fold).map_err(|m| ExecError::constraint(at, m));
    let scalar = matches!((s, p), (Datum::Scalar(_), Datum::Scalar(_)));
    let n = if scalar { 1 } else { len };
    let valid = if scalar { None } else { both_valid(s, p, len) };
    let is_valid = |i: usize| valid.as_ref().is_none_or(|v| v[i]);
    let constant = match p {
        Datum::Scalar(Value::Text(t)) => Some(compile(t)?),
        _ => None,
    };
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        if !is_valid(i) {
            out.push(false);
            continue;
        }
        let folded;
        let text = if fold {
            folded = text_at(s, i).to_lowercase();
            folded.as_str()
        } else {
            text_at(s, i)
        };
        let hit = match &constant {
            Some(pat) => pat.matches(text),
            None => compile(text_at(p, i))?.matches(text),
        };
        out.push(hit != how.negated);
    }
    let d = bools(out, valid);
    Ok(if scalar { Datum::Scalar(d.get(0)) } else { d })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_patterns() {
        for (s, p, want) in [
            ("ziggy", "zig%", true),
            ("ziggy", "%gy", true),
            ("ziggy", "%ggy%", true),
            ("ziggy", "z_ggy", true),
            ("ziggy", "z%y", true),
            ("ziggy", "z%x", false),
            ("ziggy", "ziggy", true),
            ("ziggy", "zig", false),
            ("", "%", true),
            ("abc", "%", true),
            ("abc", "a%b%c", true),
            ("abcb", "a%b", true),
            ("ab", "a%b%c", false),
            // A literal `%` or `_` in the text where the pattern has its wildcard.
            ("x%ay", "x%y", true),
            ("x%y", "x%y", true),
            ("x_y", "x_y", true),
            ("a%b%c", "a%%c", true),
            ("aXbXc", "a%b%c", true),
            ("aaa", "a%a%a", true),
            ("aa", "a%a%a", false),
            ("mississippi", "%iss%ppi", true),
            ("mississippi", "m%iss%iss%pi", true),
            // Escapes: the next `%`, `_` or escape is literal.
            ("50%", "50\\%", true),
            ("500", "50\\%", false),
            ("a_b", "a\\_b", true),
            ("axb", "a\\_b", false),
            ("a\\b", "a\\\\b", true),
            ("x%y%z", "%\\%y\\%%", true),
        ] {
            let pattern = Pattern::compile(p, Some('\\'), false).expect("compiles");
            assert_eq!(pattern.matches(s), want, "{s} LIKE {p}");
        }
    }

    #[test]
    fn a_pattern_ending_in_its_escape_is_refused() {
        assert!(Pattern::compile("ab\\", Some('\\'), false).is_err());
        assert!(Pattern::compile("ab\\", None, false).is_ok());
    }
}
