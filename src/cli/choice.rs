//! A flag whose value is one of a core type's tokens: parsed by the type's own `FromStr` (its
//! error as clap prints any value's), listed in `--help` from the type's one token list
//! ([`Forms`]), each value with a note where the flag explains it.

use clap::builder::{PossibleValue, TypedValueParser};
use std::marker::PhantomData;
use std::str::FromStr;
use vramscope::tokens::Forms;

/// What a form means for this flag: (the form, as the core's `name()` or `FORMS` gives it; the
/// note).
pub type Notes = &'static [(&'static str, &'static str)];

/// The value parser of a flag taking a `T`.
pub struct Choice<T> {
    notes: Notes,
    value: PhantomData<fn() -> T>,
}

impl<T> Clone for Choice<T> {
    fn clone(&self) -> Self {
        Self { notes: self.notes, value: PhantomData }
    }
}

/// The parser of a `T` flag, its help listing `T`'s forms.
pub const fn choice<T>() -> Choice<T> {
    Choice { notes: &[], value: PhantomData }
}

impl<T> Choice<T> {
    /// The help says what each of these forms means.
    pub const fn notes(self, notes: Notes) -> Self {
        Self { notes, ..self }
    }
}

impl<T> TypedValueParser for Choice<T>
where
    T: Forms + FromStr<Err = String> + Clone + Send + Sync + 'static,
{
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        // the parser clap derives for a FromStr type, so the error reads as before
        let parse: fn(&str) -> Result<T, String> = T::from_str;
        parse.parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(T::forms().iter().map(|form| {
            let value = PossibleValue::new(*form);
            match self.notes.iter().find(|(f, _)| f == form) {
                Some((_, note)) => value.help(*note),
                None => value,
            }
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, Command};
    use vramscope::estimate::{AttentionImpl, Checkpointing};

    fn command<T>(p: Choice<T>) -> Command
    where
        Choice<T>: TypedValueParser,
    {
        Command::new("t").arg(Arg::new("x").long("x").value_parser(p))
    }

    fn parse<T>(p: Choice<T>, value: &str) -> Result<Option<T>, clap::Error>
    where
        Choice<T>: TypedValueParser<Value = T>,
        T: Clone + Send + Sync + 'static,
    {
        command(p).try_get_matches_from(["t", "--x", value]).map(|m| m.get_one::<T>("x").cloned())
    }

    #[test]
    fn values_parse_as_the_core_reads_them() {
        assert_eq!(parse(choice::<AttentionImpl>(), "fa2").ok(), Some(Some(AttentionImpl::Flash)));
        assert_eq!(parse(choice::<Checkpointing>(), "every:3").ok(), Some(Some(Checkpointing::Every(3))));
        let Err(e) = parse(choice::<AttentionImpl>(), "xformers") else { panic!("xformers parsed") };
        assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation);
        assert!(e.to_string().contains("unknown attention \"xformers\" (eager, sdpa, flash)"), "{e}");
    }

    #[test]
    fn the_help_lists_the_forms_with_their_notes() {
        const NOTES: Notes = &[(AttentionImpl::Eager.name(), "explicit softmax")];
        let mut cmd = command(choice::<AttentionImpl>().notes(NOTES));
        let help = cmd.render_long_help().to_string();
        assert!(help.contains("eager: explicit softmax"), "{help}");
        assert!(help.contains("- sdpa") && help.contains("- flash"), "{help}");
        let mut cmd = command(choice::<Checkpointing>());
        let help = cmd.render_help().to_string();
        assert!(help.contains("[possible values: none, full, every:K, segments:N, selective]"), "{help}");
    }
}
