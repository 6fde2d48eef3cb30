//! The YAML frontmatter of a `SKILL.md`: a parser for the block-style subset skill
//! authors write (mappings, sequences, plain, quoted and block scalars, flow
//! collections of scalars), typed as YAML 1.2's core schema, and the Agent Skills
//! rules a frontmatter must satisfy.
//!
//! Anchors, aliases, tags and multi-document streams are refused with an error naming
//! the line, never guessed at: a frontmatter this parser cannot read is not served.

use std::fmt;

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Number, Value};

mod rules;

pub(crate) use rules::{Checked, check};
pub use rules::{MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, check_skill_name};

/// A frontmatter value: maps keep their keys in document order (the JSON rendering of
/// an entry's `frontmatter` follows the file).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Seq(Vec<Node>),
    Map(Vec<(String, Node)>),
}

impl Node {
    /// The value as JSON (maps lose their order: `serde_json::Map` sorts keys).
    pub(crate) fn to_value(&self) -> Value {
        match self {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(*b),
            Node::Number(n) => Value::Number(n.clone()),
            Node::String(s) => Value::String(s.clone()),
            Node::Seq(items) => Value::Array(items.iter().map(Node::to_value).collect()),
            Node::Map(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_value()))
                    .collect(),
            ),
        }
    }

    pub(super) fn get(&self, key: &str) -> Option<&Node> {
        match self {
            Node::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

impl Serialize for Node {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Node::Null => serializer.serialize_unit(),
            Node::Bool(b) => serializer.serialize_bool(*b),
            Node::Number(n) => n.serialize(serializer),
            Node::String(s) => serializer.serialize_str(s),
            Node::Seq(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Node::Map(entries) => {
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

/// Why a frontmatter could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParseError {
    /// The line of the `SKILL.md` (1-based), when one is to blame.
    pub(crate) line: Option<usize>,
    pub(crate) message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

fn error<T>(line: usize, message: impl Into<String>) -> Result<T, ParseError> {
    Err(ParseError {
        line: Some(line),
        message: message.into(),
    })
}

/// The frontmatter of a `SKILL.md`: the mapping between its opening `---` line and the
/// next `---` line.
pub(crate) fn parse(markdown: &str) -> Result<Node, ParseError> {
    let text = markdown.strip_prefix('\u{feff}').unwrap_or(markdown);
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(ParseError {
            line: Some(1),
            message: "SKILL.md must begin with YAML frontmatter (a `---` line)".to_owned(),
        });
    }
    let mut block = Vec::new();
    let mut closed = false;
    for (i, raw) in lines.enumerate() {
        let number = i + 2;
        if raw.trim_end() == "---" {
            closed = true;
            break;
        }
        if raw.trim_end() == "..." {
            return error(number, "`...` ends the frontmatter: close it with `---`");
        }
        let indent = raw.len() - raw.trim_start_matches(' ').len();
        if raw[indent..].starts_with('\t') {
            return error(number, "tabs are not allowed in YAML indentation");
        }
        block.push(Line {
            number,
            indent,
            text: raw[indent..].trim_end().to_owned(),
        });
    }
    if !closed {
        return Err(ParseError {
            line: None,
            message: "the frontmatter is not closed by a `---` line".to_owned(),
        });
    }
    let mut parser = Parser {
        lines: block,
        pos: 0,
    };
    parser.skip_blank();
    if parser.pos >= parser.lines.len() {
        return Ok(Node::Map(Vec::new()));
    }
    let first = &parser.lines[parser.pos];
    if first.indent != 0 {
        return error(
            first.number,
            "the frontmatter's top level must not be indented",
        );
    }
    if is_seq_item(&first.text) {
        return error(
            first.number,
            "the frontmatter must be a mapping, not a sequence",
        );
    }
    let node = parser.map(0)?;
    parser.skip_blank();
    if let Some(line) = parser.lines.get(parser.pos) {
        return error(line.number, "unexpected indentation");
    }
    Ok(node)
}

#[derive(Debug, Clone)]
struct Line {
    number: usize,
    indent: usize,
    text: String,
}

struct Parser {
    lines: Vec<Line>,
    pos: usize,
}

fn is_blank(text: &str) -> bool {
    text.is_empty() || text.starts_with('#')
}

fn is_seq_item(text: &str) -> bool {
    text == "-" || text.starts_with("- ")
}

/// Where the key of a mapping entry ends (the `:` followed by a space or the end), if
/// the text is one.
fn key_end(text: &str) -> Option<usize> {
    if text.starts_with('"') || text.starts_with('\'') {
        let quote = text.as_bytes()[0];
        let mut i = 1;
        let bytes = text.as_bytes();
        while i < bytes.len() {
            if bytes[i] == b'\\' && quote == b'"' {
                i += 2;
                continue;
            }
            if bytes[i] == quote {
                if quote == b'\'' && bytes.get(i + 1) == Some(&b'\'') {
                    i += 2;
                    continue;
                }
                let rest = &text[i + 1..];
                let trimmed = rest.trim_start();
                return trimmed
                    .starts_with(':')
                    .then(|| i + 1 + (rest.len() - trimmed.len()));
            }
            i += 1;
        }
        return None;
    }
    let bytes = text.as_bytes();
    (0..bytes.len()).find(|&i| {
        bytes[i] == b':' && (i + 1 == bytes.len() || bytes[i + 1] == b' ')
            // a comment before the colon means there is no key here
            && !text[..i].contains(" #")
    })
}

impl Parser {
    fn skip_blank(&mut self) {
        while self.lines.get(self.pos).is_some_and(|l| is_blank(&l.text)) {
            self.pos += 1;
        }
    }

    /// The next significant line, if any.
    fn peek(&mut self) -> Option<&Line> {
        self.skip_blank();
        self.lines.get(self.pos)
    }

    fn map(&mut self, indent: usize) -> Result<Node, ParseError> {
        let mut entries: Vec<(String, Node)> = Vec::new();
        while let Some(line) = self.peek().cloned() {
            if line.indent < indent {
                break;
            }
            if line.indent > indent {
                return error(line.number, "unexpected indentation");
            }
            if is_seq_item(&line.text) {
                return error(
                    line.number,
                    "a sequence item where a mapping key was expected",
                );
            }
            let Some(end) = key_end(&line.text) else {
                return error(
                    line.number,
                    format!("expected `key: value`, found {:?}", line.text),
                );
            };
            let key = key_text(&line.text[..end], line.number)?;
            if entries.iter().any(|(k, _)| *k == key) {
                return error(line.number, format!("duplicate key {key:?}"));
            }
            let rest = line.text[end + 1..].trim_start().to_owned();
            self.pos += 1;
            let value = self.value_after_key(&rest, indent, line.number)?;
            entries.push((key, value));
        }
        Ok(Node::Map(entries))
    }

    /// The value of a key at `indent` whose line continues with `rest`.
    fn value_after_key(
        &mut self,
        rest: &str,
        indent: usize,
        number: usize,
    ) -> Result<Node, ParseError> {
        if rest.is_empty() || rest.starts_with('#') {
            let Some(next) = self.peek().cloned() else {
                return Ok(Node::Null);
            };
            if next.indent == indent && is_seq_item(&next.text) {
                return self.seq(indent);
            }
            if next.indent <= indent {
                return Ok(Node::Null);
            }
            if is_seq_item(&next.text) {
                return self.seq(next.indent);
            }
            if key_end(&next.text).is_some() {
                return self.map(next.indent);
            }
            return self.plain_continued(String::new(), indent, next.number);
        }
        self.inline_value(rest, indent, number)
    }

    /// A value that starts on its key's (or item's) line; `indent` is the key's.
    fn inline_value(
        &mut self,
        rest: &str,
        indent: usize,
        number: usize,
    ) -> Result<Node, ParseError> {
        match rest.as_bytes()[0] {
            b'|' | b'>' => self.block_scalar(rest, indent, number),
            b'"' | b'\'' => self.quoted(rest, indent, number),
            b'[' | b'{' => {
                let text = strip_comment(rest);
                let mut flow = Flow {
                    chars: text.chars().collect(),
                    pos: 0,
                    line: number,
                };
                let node = flow.value()?;
                flow.skip_spaces();
                if flow.pos != flow.chars.len() {
                    return error(number, "unexpected text after a flow collection");
                }
                Ok(node)
            }
            b'&' | b'*' | b'!' => error(
                number,
                "YAML anchors, aliases and tags are not supported in skill frontmatter",
            ),
            _ => {
                let first = strip_comment(rest).to_owned();
                self.plain_continued(first, indent, number)
            }
        }
    }

    /// A plain scalar, continued on the more-indented lines that follow (folded with
    /// single spaces).
    fn plain_continued(
        &mut self,
        mut text: String,
        indent: usize,
        number: usize,
    ) -> Result<Node, ParseError> {
        while let Some(next) = self.lines.get(self.pos) {
            if next.text.is_empty() || next.indent <= indent || next.text.starts_with('#') {
                break;
            }
            if key_end(&next.text).is_some() {
                return error(next.number, "a mapping key inside a plain scalar");
            }
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(strip_comment(&next.text));
            self.pos += 1;
        }
        plain(&text, number)
    }

    fn seq(&mut self, indent: usize) -> Result<Node, ParseError> {
        let mut items = Vec::new();
        while let Some(line) = self.peek().cloned() {
            if line.indent < indent || (line.indent == indent && !is_seq_item(&line.text)) {
                break;
            }
            if line.indent > indent {
                return error(line.number, "unexpected indentation");
            }
            let rest = line.text[1..].trim_start();
            if rest.is_empty() || rest.starts_with('#') {
                self.pos += 1;
                let next = self.peek().cloned();
                match next {
                    Some(next) if next.indent > indent => {
                        items.push(if is_seq_item(&next.text) {
                            self.seq(next.indent)?
                        } else {
                            self.map(next.indent)?
                        });
                    }
                    _ => items.push(Node::Null),
                }
                continue;
            }
            let offset = line.text.len() - rest.len();
            if is_seq_item(rest) || (key_end(rest).is_some() && !starts_flow_or_quote(rest)) {
                // `- key: value` (or `- - item`): the item is a collection whose first
                // line is the rest of this one, indented where the rest begins.
                self.lines[self.pos] = Line {
                    number: line.number,
                    indent: line.indent + offset,
                    text: rest.to_owned(),
                };
                let inner = line.indent + offset;
                items.push(if is_seq_item(rest) {
                    self.seq(inner)?
                } else {
                    self.map(inner)?
                });
                continue;
            }
            self.pos += 1;
            items.push(self.inline_value(rest, indent, line.number)?);
        }
        Ok(Node::Seq(items))
    }

    fn block_scalar(
        &mut self,
        header: &str,
        indent: usize,
        number: usize,
    ) -> Result<Node, ParseError> {
        let header = strip_comment(header);
        let folded = header.starts_with('>');
        let mut chomp = ' ';
        let mut explicit = None;
        for c in header[1..].chars() {
            match c {
                '-' | '+' if chomp == ' ' => chomp = c,
                '1'..='9' if explicit.is_none() => explicit = c.to_digit(10).map(|d| d as usize),
                _ => return error(number, format!("invalid block scalar header {header:?}")),
            }
        }
        // The content: every following line more indented than the key, or blank.
        let start = self.pos;
        let mut end = start;
        while let Some(line) = self.lines.get(end) {
            if !line.text.is_empty() && line.indent <= indent {
                break;
            }
            end += 1;
        }
        let content_indent = match explicit {
            Some(n) => indent + n,
            None => self.lines[start..end]
                .iter()
                .find(|l| !l.text.is_empty())
                .map_or(indent + 1, |l| l.indent),
        };
        let mut out: Vec<String> = Vec::new();
        for line in &self.lines[start..end] {
            if line.text.is_empty() {
                out.push(String::new());
            } else if line.indent < content_indent {
                return error(
                    line.number,
                    "a block scalar line is less indented than its first",
                );
            } else {
                out.push(format!(
                    "{}{}",
                    " ".repeat(line.indent - content_indent),
                    line.text
                ));
            }
        }
        self.pos = end;
        let trailing = out.iter().rev().take_while(|l| l.is_empty()).count();
        let body = &out[..out.len() - trailing];
        let mut text = if folded { fold(body) } else { body.join("\n") };
        match chomp {
            '-' => {}
            '+' => {
                if !body.is_empty() {
                    text.push('\n');
                }
                text.push_str(&"\n".repeat(trailing));
            }
            _ => {
                if !body.is_empty() {
                    text.push('\n');
                }
            }
        }
        Ok(Node::String(text))
    }

    fn quoted(&mut self, rest: &str, indent: usize, number: usize) -> Result<Node, ParseError> {
        let mut text = rest.to_owned();
        loop {
            if let Some((value, after)) = quoted_scalar(&text, number)? {
                let after = after.trim_start();
                if !after.is_empty() && !after.starts_with('#') {
                    return error(number, "unexpected text after a quoted scalar");
                }
                return Ok(Node::String(value));
            }
            // Not closed on this line: a multi-line quoted scalar (folded with spaces).
            match self.lines.get(self.pos) {
                Some(next) if next.indent > indent || next.text.is_empty() => {
                    text.push(' ');
                    text.push_str(&next.text);
                    self.pos += 1;
                }
                _ => return error(number, "a quoted scalar is not closed"),
            }
        }
    }
}

fn starts_flow_or_quote(text: &str) -> bool {
    matches!(text.as_bytes().first(), Some(b'"' | b'\'' | b'[' | b'{'))
}

/// Folds the lines of a `>` block scalar: lines joined by spaces, `n` blank lines
/// between two lines `n` newlines, more-indented lines kept on lines of their own.
fn fold(lines: &[String]) -> String {
    let mut out = String::new();
    let mut previous: Option<&str> = None;
    let mut blanks = 0;
    for line in lines {
        if line.is_empty() {
            blanks += 1;
            continue;
        }
        match previous {
            None => out.push_str(&"\n".repeat(blanks)),
            Some(prev) => {
                if prev.starts_with(' ') || line.starts_with(' ') {
                    out.push_str(&"\n".repeat(blanks + 1));
                } else if blanks > 0 {
                    out.push_str(&"\n".repeat(blanks));
                } else {
                    out.push(' ');
                }
            }
        }
        blanks = 0;
        out.push_str(line);
        previous = Some(line);
    }
    out
}

/// Text up to an unquoted ` #` comment, trimmed.
fn strip_comment(text: &str) -> &str {
    match text.find(" #") {
        Some(i) => text[..i].trim_end(),
        None => text.trim_end(),
    }
}

fn key_text(raw: &str, number: usize) -> Result<String, ParseError> {
    let raw = raw.trim_end();
    if raw.starts_with('"') || raw.starts_with('\'') {
        return match quoted_scalar(raw, number)? {
            Some((key, rest)) if rest.trim().is_empty() => Ok(key),
            _ => error(number, "malformed quoted key"),
        };
    }
    if raw.is_empty() {
        return error(number, "an empty mapping key");
    }
    if raw.starts_with(['&', '*', '!', '?', '[', '{']) {
        return error(number, format!("unsupported mapping key {raw:?}"));
    }
    Ok(raw.to_owned())
}

/// A quoted scalar at the start of `text`: its value and what follows it, or `None`
/// when the closing quote is not on this text.
fn quoted_scalar(text: &str, number: usize) -> Result<Option<(String, &str)>, ParseError> {
    let mut chars = text.char_indices();
    let Some((_, quote)) = chars.next() else {
        return Ok(None);
    };
    let mut out = String::new();
    while let Some((i, c)) = chars.next() {
        if c == quote {
            if quote == '\'' && text[i + 1..].starts_with('\'') {
                chars.next();
                out.push('\'');
                continue;
            }
            return Ok(Some((out, &text[i + 1..])));
        }
        if c == '\\' && quote == '"' {
            let Some((_, e)) = chars.next() else {
                return Ok(None);
            };
            match e {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                '0' => out.push('\0'),
                '"' => out.push('"'),
                '\\' => out.push('\\'),
                '/' => out.push('/'),
                ' ' => out.push(' '),
                'u' | 'x' | 'U' => {
                    let len = match e {
                        'x' => 2,
                        'u' => 4,
                        _ => 8,
                    };
                    let mut hex = String::new();
                    for _ in 0..len {
                        match chars.next() {
                            Some((_, h)) => hex.push(h),
                            None => return error(number, "a truncated escape"),
                        }
                    }
                    let code = u32::from_str_radix(&hex, 16)
                        .ok()
                        .and_then(char::from_u32)
                        .ok_or_else(|| ParseError {
                            line: Some(number),
                            message: format!("invalid escape \\{e}{hex}"),
                        })?;
                    out.push(code);
                }
                other => return error(number, format!("unknown escape \\{other}")),
            }
            continue;
        }
        out.push(c);
    }
    Ok(None)
}

/// A plain scalar typed by YAML 1.2's core schema: null, booleans, integers (decimal,
/// `0o` octal, `0x` hex) and floats; anything else is a string.
fn plain(text: &str, number: usize) -> Result<Node, ParseError> {
    let t = text.trim();
    if t.starts_with(['&', '*', '!']) {
        return error(
            number,
            "YAML anchors, aliases and tags are not supported in skill frontmatter",
        );
    }
    Ok(match t {
        "" | "~" | "null" | "Null" | "NULL" => Node::Null,
        "true" | "True" | "TRUE" => Node::Bool(true),
        "false" | "False" | "FALSE" => Node::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" | "-.inf" | "-.Inf" | "-.INF"
        | ".nan" | ".NaN" | ".NAN" => {
            return error(number, format!("{t} has no JSON rendering"));
        }
        _ => number_of(t).map_or_else(|| Node::String(t.to_owned()), Node::Number),
    })
}

fn number_of(t: &str) -> Option<Number> {
    let digits = |s: &str, radix: u32| !s.is_empty() && s.chars().all(|c| c.is_digit(radix));
    if let Some(oct) = t.strip_prefix("0o") {
        return digits(oct, 8)
            .then(|| u64::from_str_radix(oct, 8).ok())
            .flatten()
            .map(Number::from);
    }
    if let Some(hex) = t.strip_prefix("0x") {
        return digits(hex, 16)
            .then(|| u64::from_str_radix(hex, 16).ok())
            .flatten()
            .map(Number::from);
    }
    let unsigned = t.strip_prefix(['-', '+']).unwrap_or(t);
    if digits(unsigned, 10) {
        if let Ok(i) = t.parse::<i64>() {
            return Some(Number::from(i));
        }
        if let Ok(u) = t.parse::<u64>() {
            return Some(Number::from(u));
        }
        return t.parse::<f64>().ok().and_then(Number::from_f64);
    }
    // [-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(i) => (&unsigned[..i], Some(&unsigned[i + 1..])),
        None => (unsigned, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some((int, frac)) => {
            (int.is_empty() && digits(frac, 10))
                || (digits(int, 10) && (frac.is_empty() || digits(frac, 10)))
        }
        None => digits(mantissa, 10),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e), 10));
    if !(mantissa_ok && exponent_ok && mantissa.contains(|c: char| c.is_ascii_digit())) {
        return None;
    }
    t.parse::<f64>().ok().and_then(Number::from_f64)
}

/// A flow collection (`[a, b]`, `{k: v}`) on one line.
struct Flow {
    chars: Vec<char>,
    pos: usize,
    line: usize,
}

impl Flow {
    fn skip_spaces(&mut self) {
        while self.chars.get(self.pos) == Some(&' ') {
            self.pos += 1;
        }
    }

    fn value(&mut self) -> Result<Node, ParseError> {
        self.skip_spaces();
        match self.chars.get(self.pos) {
            Some('[') => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    self.skip_spaces();
                    if self.chars.get(self.pos) == Some(&']') {
                        self.pos += 1;
                        return Ok(Node::Seq(items));
                    }
                    items.push(self.value()?);
                    self.skip_spaces();
                    match self.chars.get(self.pos) {
                        Some(',') => self.pos += 1,
                        Some(']') => {}
                        _ => return error(self.line, "expected `,` or `]` in a flow sequence"),
                    }
                }
            }
            Some('{') => {
                self.pos += 1;
                let mut entries: Vec<(String, Node)> = Vec::new();
                loop {
                    self.skip_spaces();
                    if self.chars.get(self.pos) == Some(&'}') {
                        self.pos += 1;
                        return Ok(Node::Map(entries));
                    }
                    let key = match self.value()? {
                        Node::String(s) => s,
                        Node::Null => String::new(),
                        other => other.to_value().to_string(),
                    };
                    self.skip_spaces();
                    if self.chars.get(self.pos) != Some(&':') {
                        return error(self.line, "expected `:` in a flow mapping");
                    }
                    self.pos += 1;
                    let value = self.value()?;
                    if entries.iter().any(|(k, _)| *k == key) {
                        return error(self.line, format!("duplicate key {key:?}"));
                    }
                    entries.push((key, value));
                    self.skip_spaces();
                    match self.chars.get(self.pos) {
                        Some(',') => self.pos += 1,
                        Some('}') => {}
                        _ => return error(self.line, "expected `,` or `}` in a flow mapping"),
                    }
                }
            }
            Some('"' | '\'') => {
                let rest: String = self.chars[self.pos..].iter().collect();
                match quoted_scalar(&rest, self.line)? {
                    Some((value, after)) => {
                        self.pos = self.chars.len() - after.chars().count();
                        Ok(Node::String(value))
                    }
                    None => error(self.line, "a quoted scalar is not closed"),
                }
            }
            _ => {
                let start = self.pos;
                while let Some(&c) = self.chars.get(self.pos) {
                    if matches!(c, ',' | ']' | '}') {
                        break;
                    }
                    if c == ':'
                        && matches!(
                            self.chars.get(self.pos + 1),
                            None | Some(' ' | ',' | '}' | ']')
                        )
                    {
                        break;
                    }
                    self.pos += 1;
                }
                let text: String = self.chars[start..self.pos].iter().collect();
                plain(&text, self.line)
            }
        }
    }
}

/// The frontmatter of a fetched `SKILL.md` as JSON, for comparison with an entry's.
pub(crate) fn as_json(markdown: &str) -> Result<Map<String, Value>, ParseError> {
    match parse(markdown)?.to_value() {
        Value::Object(map) => Ok(map),
        _ => Err(ParseError {
            line: None,
            message: "the frontmatter is not a mapping".to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fm(body: &str) -> Value {
        parse(&format!("---\n{body}\n---\n# Body\n"))
            .unwrap_or_else(|e| panic!("{e}"))
            .to_value()
    }

    #[test]
    fn reads_the_agent_skills_fields() {
        let v = fm("name: pdf-processing\n\
             description: Extract, fill, and assemble PDF documents\n\
             license: Apache-2.0\n\
             metadata:\n  version: \"2.1.0\"\n  author: acme # a comment\n\
             allowed-tools: Bash(git:*) Read");
        assert_eq!(
            v,
            json!({
                "name": "pdf-processing",
                "description": "Extract, fill, and assemble PDF documents",
                "license": "Apache-2.0",
                "metadata": {"version": "2.1.0", "author": "acme"},
                "allowed-tools": "Bash(git:*) Read"
            })
        );
    }

    #[test]
    fn types_scalars_as_the_core_schema_does() {
        let v =
            fm("a: 1\nb: -2.5\nc: true\nd: ~\ne: 0x1f\nf: '01'\ng: 1e3\nh: 2.1.0\ni: \"yes\"\nj:");
        assert_eq!(
            v,
            json!({"a": 1, "b": -2.5, "c": true, "d": null, "e": 31, "f": "01",
                   "g": 1000.0, "h": "2.1.0", "i": "yes", "j": null})
        );
    }

    #[test]
    fn reads_sequences_block_scalars_and_flow_collections() {
        let v = fm(
            "tags:\n  - one\n  - \"two\"\nitems:\n- k: v\n  w: 2\nlit: |\n  line one\n  line two\n\
                    folded: >-\n  a\n  b\n\n  c\nflow: [x, 'y', 3]\nmap: {k: v, n: 1}\nempty: []",
        );
        assert_eq!(
            v,
            json!({
                "tags": ["one", "two"],
                "items": [{"k": "v", "w": 2}],
                "lit": "line one\nline two\n",
                "folded": "a b\nc",
                "flow": ["x", "y", 3],
                "map": {"k": "v", "n": 1},
                "empty": []
            })
        );
    }

    #[test]
    fn a_long_description_may_wrap() {
        let v = fm("name: x\ndescription: first part\n  second part");
        assert_eq!(v["description"], "first part second part");
    }

    #[test]
    fn keeps_the_documents_key_order() {
        let node = parse("---\nname: z\nmetadata:\n  zeta: 1\n  alpha: 2\n---\n").unwrap();
        assert_eq!(
            serde_json::to_string(&node).unwrap(),
            r#"{"name":"z","metadata":{"zeta":1,"alpha":2}}"#
        );
    }

    #[test]
    fn refuses_what_it_does_not_read() {
        for (text, needle) in [
            ("no frontmatter", "must begin"),
            ("---\nname: x\n", "not closed"),
            ("---\nname: x\nname: y\n---\n", "duplicate key"),
            ("---\nanchor: &a 1\n---\n", "anchors"),
            ("---\n\tname: x\n---\n", "tabs"),
            ("---\nname: x\n  bad: 1\n---\n", "line"),
            ("---\n- a\n---\n", "mapping"),
            ("---\nv: .inf\n---\n", "JSON"),
            ("---\nq: \"open\n---\n", "not closed"),
        ] {
            let err = parse(text).expect_err(text).to_string();
            assert!(err.contains(needle), "{text:?}: {err}");
        }
    }
}
