//! The tokens of the option enums, each written once: [`token_enum!`] declares a unit-variant
//! enum from one list of `Variant => "token" | "alias"` lines and derives from it the canonical
//! token (`name()`, `form()`), the lists (`ALL`, `TOKENS`, `FORMS`, `SPELLINGS`), the lookup
//! (`from_token`) and, where asked, `FromStr` (its error naming the flag and listing the tokens)
//! and `Display`. The command line's help and value parsers, the GUI's menus, the flags that
//! rebuild a scenario and the probe read these lists instead of spelling the tokens again.

/// A value written as one of a known list of forms: what a front lists (the command line's
/// possible values, completions). A unit-variant [`token_enum!`] gets it from its `FORMS`; an
/// enum with data (`every:K`) names the forms of its keywords.
pub trait Forms {
    /// The forms in menu order: each token, `word:ARG` where a number follows the keyword.
    fn forms() -> &'static [&'static str];
}

/// How a generated `FromStr` reads a token, and what its error says: `unknown WHAT "s" (a, b, c)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parse {
    what: &'static str,
    any_case: bool,
    list_aliases: bool,
}

impl Parse {
    /// Exact tokens and aliases; the error names `what` (`"optimizer"`, `"--base-quant"`) and
    /// lists the canonical tokens.
    pub const fn named(what: &'static str) -> Self {
        Self { what, any_case: false, list_aliases: false }
    }

    /// Tokens in any ASCII case (`BF16` reads as `bf16`).
    pub const fn any_case(self) -> Self {
        Self { any_case: true, ..self }
    }

    /// The error lists the aliases too, in the order written (vLLM's `fp8_e4m3` beside `fp8`).
    pub const fn listing_aliases(self) -> Self {
        Self { list_aliases: true, ..self }
    }

    /// The value `s` spells, or the error.
    pub fn read<T: Copy>(self, s: &str, spellings: &[(&str, T)], tokens: &[&str]) -> Result<T, String> {
        find(spellings, s, self.any_case).ok_or_else(|| {
            let listed: Vec<&str> =
                if self.list_aliases { spellings.iter().map(|(t, _)| *t).collect() } else { tokens.to_vec() };
            format!("unknown {} \"{s}\" ({})", self.what, listed.join(", "))
        })
    }
}

/// The value a spelling names (`any_case`: in any ASCII case).
pub fn find<T: Copy>(spellings: &[(&str, T)], s: &str, any_case: bool) -> Option<T> {
    spellings
        .iter()
        .find(|(t, _)| if any_case { t.eq_ignore_ascii_case(s) } else { *t == s })
        .map(|(_, v)| *v)
}

/// Levenshtein distance of two spellings (insertions, deletions and substitutions), for "did
/// you mean".
pub fn edit_distance(a: &[char], b: &[char]) -> usize {
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The tokens as a sentence's list: `a`, `a or b`, `a, b or c`.
pub fn or_list(tokens: &[&str]) -> String {
    match tokens.split_last() {
        None => String::new(),
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// Declares a unit-variant option enum and its tokens, from one list:
///
/// ```text
/// crate::tokens::token_enum! {
///     /// Attention implementation.
///     #[derive(Clone, Copy, Debug, PartialEq, Eq)]
///     pub enum AttentionImpl {
///         /// Explicit softmax.
///         Eager => "eager",
///         Sdpa => "sdpa",
///         Flash => "flash" | "flash_attention_2" | "fa2",
///     }
///     impl FromStr = Parse::named("attention");
///     impl Display;
/// }
/// ```
///
/// The first string of a line is the variant's canonical token, the others aliases the parser
/// accepts too. A keyword followed by a number writes its placeholder after a colon
/// (`Every => "every": "K"`, whose form is `every:K`). Generated: `ALL` (the variants in the
/// order written), `TOKENS`, `FORMS`, `SPELLINGS` (tokens and aliases), `name()`, `form()`, `from_token()`,
/// [`Forms`]; with `impl FromStr = PARSE;` a `FromStr` reading through that [`Parse`]; with
/// `impl Display;` a `Display` writing the token.
macro_rules! token_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident => $token:literal $(| $alias:literal)* $(: $arg:literal)?
            ),+ $(,)?
        }
        $($extra:tt)*
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every value, in menu order.
            pub const ALL: [Self; [$($token),+].len()] = [$(Self::$variant),+];
            /// The canonical tokens, in [`Self::ALL`]'s order.
            pub const TOKENS: [&'static str; [$($token),+].len()] = [$($token),+];
            /// The forms as the help and the errors write them: each token, `word:ARG` where a
            /// number follows.
            pub const FORMS: [&'static str; [$($token),+].len()] =
                [$($crate::tokens::token_enum!(@form $token $($arg)?)),+];
            /// Every spelling the parser accepts (the tokens and their aliases) with its value.
            pub const SPELLINGS: [(&'static str, Self); [$($token, $($alias,)*)+].len()] =
                [$(($token, Self::$variant), $(($alias, Self::$variant),)*)+];

            /// The canonical token (the command line's name).
            pub const fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $token,)+
                }
            }

            /// The form as the help writes it: the token, `word:ARG` where a number follows.
            pub const fn form(self) -> &'static str {
                match self {
                    $(Self::$variant => $crate::tokens::token_enum!(@form $token $($arg)?),)+
                }
            }

            /// The value a token or an alias names (exact case).
            pub fn from_token(s: &str) -> Option<Self> {
                $crate::tokens::find(&Self::SPELLINGS, s, false)
            }
        }

        impl $crate::tokens::Forms for $name {
            fn forms() -> &'static [&'static str] {
                &Self::FORMS
            }
        }

        $crate::tokens::token_enum!(@extra $name $($extra)*);
    };
    (@form $token:literal) => { $token };
    (@form $token:literal $arg:literal) => { concat!($token, ":", $arg) };
    (@extra $name:ident) => {};
    (@extra $name:ident impl FromStr = $parse:expr; $($rest:tt)*) => {
        impl ::std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $parse.read(s, &Self::SPELLINGS, &Self::TOKENS)
            }
        }
        $crate::tokens::token_enum!(@extra $name $($rest)*);
    };
    (@extra $name:ident impl Display; $($rest:tt)*) => {
        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.name())
            }
        }
        $crate::tokens::token_enum!(@extra $name $($rest)*);
    };
}
pub(crate) use token_enum;

// the test enums use part of what the macro generates
#[allow(dead_code)]
#[cfg(test)]
mod tests {
    use super::*;

    token_enum! {
        /// A test enum: aliases, a keyword with a number, Display.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        enum Pick {
            /// First.
            One => "one" | "1" | "uno",
            Every => "every": "K",
            Last => "last",
        }
        impl FromStr = Parse::named("--pick");
        impl Display;
    }

    token_enum! {
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        enum Loud {
            Low => "low" | "quiet",
            High => "HIGH",
        }
        impl FromStr = Parse::named("volume").any_case().listing_aliases();
    }

    #[test]
    fn one_list_gives_every_list() {
        assert_eq!(Pick::ALL, [Pick::One, Pick::Every, Pick::Last]);
        assert_eq!(Pick::TOKENS, ["one", "every", "last"]);
        assert_eq!(Pick::FORMS, ["one", "every:K", "last"]);
        assert_eq!(Pick::Every.form(), "every:K");
        assert_eq!(<Pick as Forms>::forms(), ["one", "every:K", "last"]);
        assert_eq!(Pick::SPELLINGS.map(|(t, _)| t), ["one", "1", "uno", "every", "last"]);
        for p in Pick::ALL {
            assert_eq!(p.name().parse::<Pick>(), Ok(p));
            assert_eq!(p.to_string(), p.name());
        }
    }

    #[test]
    fn aliases_parse_and_errors_list_the_tokens() {
        assert_eq!("uno".parse::<Pick>(), Ok(Pick::One));
        assert_eq!(Pick::from_token("1"), Some(Pick::One));
        assert_eq!(Pick::from_token("ONE"), None);
        assert_eq!("ONE".parse::<Pick>(), Err("unknown --pick \"ONE\" (one, every, last)".to_owned()));
        assert_eq!("quiet".parse::<Loud>(), Ok(Loud::Low));
        assert_eq!("high".parse::<Loud>(), Ok(Loud::High));
        assert_eq!("Quiet".parse::<Loud>(), Ok(Loud::Low));
        assert_eq!("mid".parse::<Loud>(), Err("unknown volume \"mid\" (low, quiet, HIGH)".to_owned()));
    }

    #[test]
    fn lists_read_as_sentences() {
        assert_eq!(or_list(&[]), "");
        assert_eq!(or_list(&["en"]), "en");
        assert_eq!(or_list(&["en", "zh-CN"]), "en or zh-CN");
        assert_eq!(or_list(&["auto", "bfloat16", "float16"]), "auto, bfloat16 or float16");
    }
}
