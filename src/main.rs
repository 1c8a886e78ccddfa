//! `vramscope`: the command-line front on the core (`vramscope --help`).

#![deny(clippy::unwrap_used, clippy::expect_used)]

mod cli;

use clap::Parser;
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = match cli::Cli::try_parse() {
        Ok(a) => a,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                // a closed pipe (`vramscope --help | head`) is not an error
                let _ = std::io::stdout().lock().write_all(e.to_string().as_bytes());
                return ExitCode::SUCCESS;
            }
            // one line naming the problem, as the CLI contract promises: clap's first line, with
            // the indented list under it ("required arguments were not provided: --model") joined
            let text = e.to_string();
            let mut lines = text.lines();
            let mut line = lines.next().unwrap_or("error: invalid arguments").trim_end().to_owned();
            for l in lines.take_while(|l| !l.trim().is_empty()).filter(|l| l.starts_with(' ')) {
                line.push(' ');
                line.push_str(l.trim());
            }
            // clap's "tip: a similar argument exists" sits below a blank line: keep it on the line
            if let Some(tip) = suggestion(&e)
                && !line.contains(&tip)
            {
                line.push_str(&format!(" (did you mean {tip}?)"));
            }
            eprintln!("{line}");
            return ExitCode::from(2);
        }
    };
    let result = match &args.command {
        Some(cli::Command::Estimate(a)) => cli::run_estimate(a),
        Some(cli::Command::Presets) => Ok(cli::list_presets()),
        Some(cli::Command::Gpus) => Ok(cli::list_gpus()),
        Some(cli::Command::Default) => cli::run_estimate(&cli::default_args()),
        Some(cli::Command::Plan(a)) => cli::run_plan(a),
        Some(cli::Command::Diagnose(a)) => cli::run_diagnose(a),
        Some(cli::Command::Monitor(a)) => cli::run_monitor(a),
        Some(cli::Command::Export(a)) => cli::run_export(a),
        Some(cli::Command::Serve(a)) => cli::run_serve(a),
        Some(cli::Command::Timeline(a)) => cli::run_timeline(a),
        Some(cli::Command::Probe(a)) => cli::run_probe(a),
        Some(cli::Command::Calibrate(a)) => cli::run_calibrate(a),
        Some(cli::Command::Trace(a)) => cli::run_trace(a),
        None if args.slide.is_some() => {
            let path = args.slide.as_deref().unwrap_or(std::path::Path::new("slide.png"));
            vramscope::gui::slide::write_file(path, args.open.as_deref(), args.lang.unwrap_or_default())
                .map(|()| format!("slide written to {}\n", path.display()))
        }
        None => match vramscope::gui::run(vramscope::gui::Launch {
            screenshot: args.screenshot.clone(),
            frames: args.frames,
            chart_only: args.chart_only,
            tab: args.tab,
            serve: args.serve,
            open: args.open.clone(),
            recording: args.recording.clone(),
            lang: args.lang,
            presentation: args.presentation,
            light: args.light,
            lesson: args.lesson,
        }) {
            Ok(()) => Ok(String::new()),
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(out) => {
            let mut stdout = std::io::stdout().lock();
            // a closed pipe (`| head`) is not an error worth a panic
            let _ = stdout.write_all(out.as_bytes());
            ExitCode::SUCCESS
        }
        Err(e) => {
            // `serve` of a server that would not start: its answer as usual, the reason, exit 3
            if let Some(w) = e.downcast_ref::<cli::WouldNotStart>() {
                let _ = std::io::stdout().lock().write_all(w.output.as_bytes());
                eprintln!("error: {}", w.reason);
                return ExitCode::from(3);
            }
            eprintln!("error: {}", message(&e));
            // a missing or failing driver is not a usage error: scripts can tell them apart
            if e.downcast_ref::<vramscope::monitor::MonitorError>().is_some() {
                ExitCode::from(3)
            } else {
                ExitCode::from(2)
            }
        }
    }
}

/// The flag, value or subcommand clap suggests for a misspelled one (`--bacth` → `--batch`).
fn suggestion(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    [ContextKind::SuggestedArg, ContextKind::SuggestedValue, ContextKind::SuggestedSubcommand]
        .iter()
        .find_map(|k| match e.get(*k)? {
            ContextValue::String(s) => Some(s.clone()),
            ContextValue::Strings(v) => v.first().cloned(),
            _ => None,
        })
}

/// The error and its causes on one line, a cause left out when the text before already says it
/// ("x: Not a directory (os error 20)" is not followed by ": Not a directory (os error 20)").
fn message(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let c = cause.to_string();
        if out.contains(&c) {
            continue;
        }
        if !out.is_empty() {
            out += ": ";
        }
        out += &c;
    }
    out
}
