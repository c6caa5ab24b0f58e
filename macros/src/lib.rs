//! The procedural half of `namedtensor::dims!`.
//!
//! Use the macro through `namedtensor::dims!`, never directly: that `macro_rules!`
//! wrapper passes `$crate` in front of the user's input, so the generated code names the
//! library correctly even when the dependency is renamed in `Cargo.toml`:
//!
//! ```text
//! namedtensor::dims! { pub Batch, Cols = 0x1234 }
//!   => namedtensor::named::__dims! { $crate ; pub Batch, Cols = 0x1234 }
//! ```
//!
//! Every declared name becomes a unit struct implementing `namedtensor::Dim` with its
//! name, a 64-bit id, the same id as sixteen hexadecimal digit types (the form the
//! compile-time name algebra compares) and its first digit alone (compared first). The id is a hash of where the name is declared
//! (package, version, crate, file relative to the package root, line, column, name), so
//! it is the same on every machine and two declarations of one name in two places are two
//! different dimensions. `Name = 0x…` gives an explicit id instead.
//!
//! The grammar is small enough to parse with `proc_macro` alone; without `syn` and
//! `quote` this crate compiles in well under a second.

extern crate proc_macro;

use proc_macro::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};
use std::path::{Path, PathBuf};

/// Expands `$crate ; <declarations>` into dimension types. Called by `namedtensor::dims!`.
#[doc(hidden)]
#[proc_macro]
pub fn __dims(input: TokenStream) -> TokenStream {
    match expand(input) {
        Ok(out) => out,
        Err(e) => e.into_tokens(),
    }
}

/// A compile error attached to the token that caused it.
struct Error {
    span: Span,
    message: String,
}

impl Error {
    fn new(span: Span, message: impl Into<String>) -> Self {
        Error {
            span,
            message: message.into(),
        }
    }

    /// `::core::compile_error! { "message" }` with every token at the offending span, so
    /// rustc underlines the user's token.
    fn into_tokens(self) -> TokenStream {
        let mut message = Literal::string(&format!("dims!: {}", self.message));
        message.set_span(self.span);
        let mut body = Group::new(Delimiter::Brace, TokenTree::Literal(message).into());
        body.set_span(self.span);
        let mut out: Vec<TokenTree> = Vec::new();
        for (i, seg) in ["core", "compile_error"].iter().enumerate() {
            out.push(punct(':', Spacing::Joint, self.span));
            out.push(punct(':', Spacing::Alone, self.span));
            out.push(TokenTree::Ident(Ident::new(seg, self.span)));
            if i == 1 {
                out.push(punct('!', Spacing::Alone, self.span));
            }
        }
        out.push(TokenTree::Group(body));
        out.into_iter().collect()
    }
}

fn punct(ch: char, spacing: Spacing, span: Span) -> TokenTree {
    let mut p = Punct::new(ch, spacing);
    p.set_span(span);
    TokenTree::Punct(p)
}

/// One declared dimension.
struct Decl {
    /// `#[...]` attributes, doc comments included, as written.
    attrs: Vec<TokenTree>,
    /// `pub`, `pub(crate)`, … as written; empty for private.
    vis: Vec<TokenTree>,
    name: Ident,
    /// The name without a `r#` prefix.
    bare_name: String,
    /// `Name = 0x…` and the literal's span.
    explicit_id: Option<(u64, Span)>,
}

fn expand(input: TokenStream) -> Result<TokenStream, Error> {
    let tokens: Vec<TokenTree> = input.into_iter().collect();
    let semi = tokens
        .iter()
        .position(|t| is_punct(t, ';'))
        .ok_or_else(|| Error::new(Span::call_site(), "internal error: expected `$crate ;` first; call `namedtensor::dims!`, not this macro"))?;
    let krate: TokenStream = tokens[..semi].iter().cloned().collect();
    let decls = parse_decls(&tokens[semi + 1..])?;

    let mut out = TokenStream::new();
    for decl in &decls {
        let id = match decl.explicit_id {
            Some((id, _)) => id,
            None => site_id(decl),
        };
        out.extend(render(&krate, decl, id));
    }
    Ok(out)
}

fn is_punct(t: &TokenTree, ch: char) -> bool {
    matches!(t, TokenTree::Punct(p) if p.as_char() == ch)
}

fn parse_decls(tokens: &[TokenTree]) -> Result<Vec<Decl>, Error> {
    let mut decls: Vec<Decl> = Vec::new();
    for chunk in tokens.split(|t| is_punct(t, ',')) {
        if chunk.is_empty() {
            // `A,, B` is an empty declaration; a single trailing comma is fine.
            continue;
        }
        let decl = parse_decl(chunk)?;
        if let Some(first) = decls.iter().find(|d| d.bare_name == decl.bare_name) {
            // Mention the first spelling only when it differs (`r#Batch` vs `Batch`).
            let (first, this) = (first.name.to_string(), decl.name.to_string());
            let first_as = if first == this {
                String::new()
            } else {
                format!(" (first as `{first}`)")
            };
            return Err(Error::new(
                decl.name.span(),
                format!(
                    "`{}` is declared twice in this call{first_as}",
                    decl.bare_name
                ),
            ));
        }
        if let Some((id, span)) = decl.explicit_id
            && let Some(other) = decls
                .iter()
                .find(|d| matches!(d.explicit_id, Some((o, _)) if o == id))
        {
            return Err(Error::new(
                span,
                format!(
                    "`{}` and `{}` would have the same id {id:#x}; dimension ids must differ",
                    other.bare_name, decl.bare_name
                ),
            ));
        }
        decls.push(decl);
    }
    Ok(decls)
}

/// `#[attr]* vis? Name (= literal)?`
fn parse_decl(chunk: &[TokenTree]) -> Result<Decl, Error> {
    let mut i = 0;
    let mut attrs = Vec::new();
    while let Some(TokenTree::Punct(p)) = chunk.get(i) {
        if p.as_char() != '#' {
            break;
        }
        match chunk.get(i + 1) {
            Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Bracket => {
                attrs.extend_from_slice(&chunk[i..i + 2]);
                i += 2;
            }
            Some(t) => {
                return Err(Error::new(
                    t.span(),
                    "expected `[` after `#`: only outer attributes `#[...]` may precede a dimension",
                ));
            }
            None => return Err(Error::new(p.span(), "expected an attribute after `#`")),
        }
    }

    let mut vis = Vec::new();
    if let Some(TokenTree::Ident(id)) = chunk.get(i)
        && id.to_string() == "pub"
    {
        vis.push(chunk[i].clone());
        i += 1;
        if let Some(TokenTree::Group(g)) = chunk.get(i)
            && g.delimiter() == Delimiter::Parenthesis
        {
            vis.push(chunk[i].clone());
            i += 1;
        }
    }

    let name = match chunk.get(i) {
        Some(TokenTree::Ident(id)) => id.clone(),
        Some(t) => {
            return Err(Error::new(
                t.span(),
                format!("expected a dimension name (an identifier), found `{t}`"),
            ));
        }
        None => {
            let span = chunk.last().map_or_else(Span::call_site, TokenTree::span);
            return Err(Error::new(
                span,
                "expected a dimension name after the attributes and visibility",
            ));
        }
    };
    let text = name.to_string();
    let bare_name = text.strip_prefix("r#").unwrap_or(&text).to_string();
    if !text.starts_with("r#") && (KEYWORDS.contains(&text.as_str()) || text == "_") {
        return Err(Error::new(
            name.span(),
            format!("`{text}` is a keyword, not a dimension name"),
        ));
    }
    i += 1;

    let mut explicit_id = None;
    if let Some(t) = chunk.get(i) {
        if !is_punct(t, '=') {
            return Err(Error::new(
                t.span(),
                format!("expected `,` or `= <id>` after `{bare_name}`, found `{t}`"),
            ));
        }
        match chunk.get(i + 1) {
            Some(TokenTree::Literal(lit)) => {
                let id = parse_id(&lit.to_string()).map_err(|why| Error::new(lit.span(), why))?;
                explicit_id = Some((id, lit.span()));
            }
            Some(t) => {
                return Err(Error::new(
                    t.span(),
                    format!("expected an integer id such as `0x1234` after `=`, found `{t}`"),
                ));
            }
            None => {
                return Err(Error::new(
                    t.span(),
                    "expected an integer id such as `0x1234` after `=`",
                ));
            }
        }
        if let Some(t) = chunk.get(i + 2) {
            return Err(Error::new(
                t.span(),
                format!("expected `,` after the id of `{bare_name}`, found `{t}`"),
            ));
        }
    }
    Ok(Decl {
        attrs,
        vis,
        name,
        bare_name,
        explicit_id,
    })
}

/// Keywords that cannot name a struct (strict and reserved, all editions).
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "box", "break", "const", "continue", "crate", "do", "dyn", "else",
    "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl", "in", "let", "loop",
    "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref", "return", "self",
    "Self", "static", "struct", "super", "trait", "true", "try", "type", "typeof", "unsafe",
    "unsized", "use", "virtual", "where", "while", "yield", "abstract", "become",
];

/// Parses an explicit id: a decimal, `0x`, `0o` or `0b` integer literal, `_` separators
/// allowed, optionally suffixed `u64`.
fn parse_id(lit: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "`{lit}` is not a valid id: expected an unsigned integer literal such as `0x1234` (at most 64 bits)"
        )
    };
    if lit.starts_with(['"', '\'', 'b', 'c', 'r']) {
        return Err(bad());
    }
    let digits = lit.replace('_', "");
    let (radix, body) = match digits.get(..2) {
        Some("0x") => (16, &digits[2..]),
        Some("0o") => (8, &digits[2..]),
        Some("0b") => (2, &digits[2..]),
        _ => (10, &digits[..]),
    };
    let body = match body.find(|c: char| !c.is_digit(radix)) {
        None => body,
        Some(at) if &body[at..] == "u64" => &body[..at],
        Some(at) => {
            let rest = &body[at..];
            return Err(if rest.starts_with(['u', 'i']) {
                format!("`{lit}`: an id must be a `u64`, not `{rest}`")
            } else {
                bad()
            });
        }
    };
    u64::from_str_radix(body, radix).map_err(|_| bad())
}

/// The id of a declaration without an explicit one: a hash of the declaration site.
fn site_id(decl: &Decl) -> u64 {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let span = decl.name.span();
    let file = relative_file(span);
    let (line, column) = (span.line().to_string(), span.column().to_string());
    hash64(&[
        &var("CARGO_PKG_NAME"),
        &var("CARGO_PKG_VERSION"),
        &var("CARGO_CRATE_NAME"),
        &file,
        &line,
        &column,
        &decl.bare_name,
    ])
}

/// The declaring file relative to the package root (`src/model.rs`), with `/`
/// separators. Never an absolute path, so ids do not depend on where the sources are.
fn relative_file(span: Span) -> String {
    let display = span.file();
    let Some(path) = span.local_file() else {
        // Not a file on disk (e.g. a doctest): rustc's name for it is already relative.
        return display.replace('\\', "/");
    };
    let path = if path.is_relative() {
        std::env::current_dir()
            .map(|d| d.join(&path))
            .unwrap_or(path)
    } else {
        path
    };
    let under = |root: &str, tag: &str| -> Option<String> {
        let rel = path.strip_prefix(Path::new(root)).ok()?;
        Some(format!("{tag}{}", rel.to_string_lossy().replace('\\', "/")))
    };
    std::env::var("CARGO_MANIFEST_DIR")
        .ok()
        .and_then(|root| under(&root, ""))
        .or_else(|| {
            std::env::var("OUT_DIR")
                .ok()
                .and_then(|root| under(&root, "$OUT_DIR/"))
        })
        .unwrap_or_else(|| {
            path.file_name()
                .map(PathBuf::from)
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        })
}

/// FNV-1a over the parts (each followed by a 0xff separator, a byte that never occurs in
/// UTF-8), then the splitmix64 finaliser: FNV alone leaves the high bits, which the type-level
/// comparison looks at first, poorly mixed.
fn hash64(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.bytes().chain([0xff]) {
            h ^= u64::from(byte);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// The struct and its `Dim` impl. Generated code is parsed from a template whose
/// placeholders (`__KRATE`, `__NAME`, …) are replaced by the caller's own tokens, so the
/// name keeps its span and `$crate` keeps its meaning.
fn render(krate: &TokenStream, decl: &Decl, id: u64) -> TokenStream {
    let name_tokens: TokenStream = TokenTree::Ident(decl.name.clone()).into();
    let mut attrs: TokenStream = decl.attrs.iter().cloned().collect();
    if !decl.attrs.iter().any(is_doc_attr) {
        let doc = format!(
            " The dimension `{}`, declared with `dims!`.",
            decl.bare_name
        );
        attrs.extend(template(
            "#[doc = __DOC]",
            &[("__DOC", TokenTree::Literal(Literal::string(&doc)).into())],
        ));
    }
    let vis: TokenStream = decl.vis.iter().cloned().collect();
    let name_literal: TokenStream = TokenTree::Literal(Literal::string(&decl.bare_name)).into();
    let id_literal: TokenStream = TokenTree::Literal(Literal::u64_suffixed(id)).into();
    let mut digits = String::new();
    for k in (0..16).rev() {
        digits.push_str(&format!(
            "__KRATE::named::id::I<__KRATE::named::id::X{:X}, ",
            (id >> (4 * k)) & 0xf
        ));
    }
    digits.push_str("__KRATE::named::id::IEnd");
    digits.push_str(&">".repeat(16));

    let lead = id >> 60;
    let code = format!(
        "__ATTRS
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        __VIS struct __NAME;
        impl __KRATE::named::Dim for __NAME {{
            const NAME: &'static str = __NAME_STR;
            const ID: u64 = __ID;
            type Id = {digits};
            type Lead = __KRATE::named::id::X{lead:X};
        }}"
    );
    template(
        &code,
        &[
            ("__ATTRS", attrs),
            ("__VIS", vis),
            ("__NAME", name_tokens),
            ("__NAME_STR", name_literal),
            ("__ID", id_literal),
            ("__KRATE", krate.clone()),
        ],
    )
}

fn is_doc_attr(t: &TokenTree) -> bool {
    matches!(t, TokenTree::Group(g) if g.stream().into_iter().next().is_some_and(|first| first.to_string() == "doc"))
}

/// Parses `code` and replaces every identifier equal to a placeholder by its tokens.
fn template(code: &str, subs: &[(&str, TokenStream)]) -> TokenStream {
    fn walk(stream: TokenStream, subs: &[(&str, TokenStream)]) -> TokenStream {
        let mut out = TokenStream::new();
        for tree in stream {
            match tree {
                TokenTree::Ident(ref id) => {
                    match subs.iter().find(|(key, _)| id.to_string() == *key) {
                        Some((_, with)) => out.extend(with.clone()),
                        None => out.extend([tree]),
                    }
                }
                TokenTree::Group(g) => {
                    let mut inner = Group::new(g.delimiter(), walk(g.stream(), subs));
                    inner.set_span(g.span());
                    out.extend([TokenTree::Group(inner)]);
                }
                other => out.extend([other]),
            }
        }
        out
    }
    walk(
        code.parse().expect("dims!: internal template must parse"),
        subs,
    )
}

#[cfg(test)]
mod tests {
    use super::{KEYWORDS, hash64, parse_id};

    #[test]
    fn ids_parse_in_every_radix() {
        assert_eq!(parse_id("0x1234"), Ok(0x1234));
        assert_eq!(parse_id("0xDEAD_beef"), Ok(0xdead_beef));
        assert_eq!(parse_id("4660"), Ok(4660));
        assert_eq!(parse_id("1_000u64"), Ok(1000));
        assert_eq!(parse_id("0o17"), Ok(0o17));
        assert_eq!(parse_id("0b1010"), Ok(10));
        assert_eq!(parse_id("0xffff_ffff_ffff_ffff"), Ok(u64::MAX));
    }

    #[test]
    fn bad_ids_are_rejected_with_a_reason() {
        assert!(
            parse_id("0x1_0000_0000_0000_0000")
                .unwrap_err()
                .contains("at most 64 bits")
        );
        assert!(parse_id("5i32").unwrap_err().contains("not `i32`"));
        assert!(parse_id("7u8").unwrap_err().contains("not `u8`"));
        assert!(parse_id("\"12\"").is_err());
        assert!(parse_id("b'a'").is_err());
        assert!(parse_id("1.5").is_err());
        assert!(parse_id("0x").is_err());
        assert!(parse_id("0xg1").is_err());
    }

    #[test]
    fn hash_is_fixed_and_separates_parts() {
        // Fixed values (computed independently): ids must not change between compiler
        // versions or machines.
        assert_eq!(hash64(&[]), 0xf52a_15e9_a9b5_e89b);
        let site = [
            "namedtensor",
            "0.1.0",
            "namedtensor",
            "src/lib.rs",
            "3",
            "5",
            "Batch",
        ];
        assert_eq!(hash64(&site), 0xf234_b337_1832_2534);
        // The separator keeps ("ab", "c") and ("a", "bc") apart.
        assert_ne!(hash64(&["ab", "c"]), hash64(&["a", "bc"]));
        // Neighbouring declarations differ in the first hex digit more often than not.
        let top = |col: u32| hash64(&["p", "v", "f", "1", &col.to_string(), "X"]) >> 60;
        let differing = (1..200).filter(|&c| top(c) != top(c + 1)).count();
        assert!(differing > 170, "{differing}");
    }

    #[test]
    fn keywords_include_reserved_ones() {
        for kw in [
            "struct", "type", "Self", "async", "gen", "abstract", "yield",
        ] {
            assert!(KEYWORDS.contains(&kw), "{kw}");
        }
    }
}
