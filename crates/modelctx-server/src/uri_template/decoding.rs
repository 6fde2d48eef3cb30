//! What percent-decoding makes of any stretch of a URI, as lookups.

/// What percent-decoding makes of every stretch of a URI, worked out once per match
/// so that whether `uri[l..j]` decodes to UTF-8, and to how many characters, is a
/// lookup (the same answer as `percent_decode` on that stretch).
///
/// The URI is read left to right as tokens: a `%XX` (two digits `u8::from_str_radix`
/// takes), a lone `%` (which never decodes), or a character. A stretch decodes when
/// it holds no bad token (a lone `%`, a byte that is never UTF-8, a lead byte without
/// its continuations, a continuation without its lead), starts at a token that does
/// not continue a sequence begun before it and ends where such a token starts (or at
/// the end). A stretch starting inside a `%XX` reads those digits as characters and
/// the tokens from the end of that `%XX` on.
pub(super) struct Decoding {
    len: usize,
    /// Where tokens resume at or after each position: the position itself, or the end
    /// of the `%XX` whose digits it falls on.
    pub(super) resume: Vec<usize>,
    /// A stretch may start or end here: the end, or the start of a token that does not
    /// continue a multi-byte sequence.
    pub(super) clean: Vec<bool>,
    /// The first bad token at or after each position; `len + 1` for none.
    pub(super) next_bad: Vec<usize>,
    /// How many decoded characters start before each position.
    chars_before: Vec<u32>,
    /// Where each decoded character starts, in order.
    char_starts: Vec<usize>,
}

#[derive(Clone, Copy)]
enum Token {
    Char,
    Byte(u8),
    LonePercent,
}

impl Decoding {
    pub(super) fn new(uri: &str) -> Self {
        let bytes = uri.as_bytes();
        let len = bytes.len();
        let mut resume: Vec<usize> = (0..=len).collect();
        let mut tokens: Vec<(usize, Token)> = Vec::with_capacity(len);
        let mut p = 0;
        while p < len {
            if bytes[p] == b'%' {
                let byte = uri
                    .get(p + 1..p + 3)
                    .and_then(|hex| u8::from_str_radix(hex, 16).ok());
                if let Some(b) = byte {
                    tokens.push((p, Token::Byte(b)));
                    resume[p + 1] = p + 3;
                    resume[p + 2] = p + 3;
                    p += 3;
                } else {
                    tokens.push((p, Token::LonePercent));
                    p += 1;
                }
            } else {
                tokens.push((p, Token::Char));
                p += uri[p..].chars().next().map_or(1, char::len_utf8);
            }
        }
        // UTF-8 over the decoded bytes: each lead byte checked against the tokens after
        // it, in order, so a continuation knows whether a valid sequence claimed it.
        let mut bad = vec![false; tokens.len()];
        let mut continues = vec![false; tokens.len()];
        for t in 0..tokens.len() {
            let Token::Byte(b) = tokens[t].1 else {
                bad[t] = matches!(tokens[t].1, Token::LonePercent);
                continue;
            };
            let (need, second) = match b {
                0x00..=0x7F => continue,
                0x80..=0xBF => {
                    bad[t] = !continues[t];
                    continue;
                }
                0xC2..=0xDF => (2, 0x80..=0xBF),
                0xE0 => (3, 0xA0..=0xBF),
                0xE1..=0xEC | 0xEE..=0xEF => (3, 0x80..=0xBF),
                0xED => (3, 0x80..=0x9F),
                0xF0 => (4, 0x90..=0xBF),
                0xF1..=0xF3 => (4, 0x80..=0xBF),
                0xF4 => (4, 0x80..=0x8F),
                _ => {
                    bad[t] = true;
                    continue;
                }
            };
            let whole = (1..need).all(|d| match tokens.get(t + d) {
                Some(&(_, Token::Byte(c))) if d == 1 => second.contains(&c),
                Some(&(_, Token::Byte(c))) => (0x80..=0xBF).contains(&c),
                _ => false,
            });
            if whole {
                for flag in &mut continues[t + 1..t + need] {
                    *flag = true;
                }
            } else {
                bad[t] = true;
            }
        }
        let mut clean = vec![false; len + 1];
        clean[len] = true;
        let mut bad_at = vec![false; len];
        let mut starts_char = vec![false; len];
        for (t, &(at, token)) in tokens.iter().enumerate() {
            clean[at] = !continues[t];
            bad_at[at] = bad[t];
            starts_char[at] = !matches!(token, Token::Byte(0x80..=0xBF));
        }
        let mut next_bad = vec![len + 1; len + 1];
        for p in (0..len).rev() {
            next_bad[p] = if bad_at[p] { p } else { next_bad[p + 1] };
        }
        let mut chars_before = Vec::with_capacity(len + 1);
        let mut char_starts = Vec::new();
        let mut count = 0u32;
        for (p, &starts) in starts_char.iter().enumerate() {
            chars_before.push(count);
            if starts {
                count += 1;
                char_starts.push(p);
            }
        }
        chars_before.push(count);
        Self {
            len,
            resume,
            clean,
            next_bad,
            chars_before,
            char_starts,
        }
    }

    /// Whether `uri[l..j]` percent-decodes to UTF-8 (`l` and `j` character boundaries).
    pub(super) fn decodes(&self, l: usize, j: usize) -> bool {
        let from = self.resume[l];
        j <= from || (self.clean[from] && self.next_bad[from] >= j && self.clean[j])
    }

    /// How many characters `uri[l..j]` decodes to, when it decodes.
    pub(super) fn chars(&self, l: usize, j: usize) -> usize {
        let from = self.resume[l];
        if j <= from {
            return j - l;
        }
        (from - l) + (self.chars_before[j] - self.chars_before[from]) as usize
    }

    /// The furthest end `j` for which `uri[l..j]`, if it decodes, holds at most `max`
    /// characters.
    pub(super) fn char_limit(&self, l: usize, max: usize) -> usize {
        let from = self.resume[l];
        let raw = from - l;
        if max <= raw {
            return l + max;
        }
        let index = self.chars_before[from] as usize + (max - raw);
        self.char_starts.get(index).copied().unwrap_or(self.len)
    }
}
