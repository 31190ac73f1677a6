//! One CLI session: splitting a line into `;`-separated commands and words,
//! finding the command, checking the level, and HAProxy's framing (an
//! empty line after each command's output, the `> ` prompt, closing after
//! the line in non-interactive mode). A command ending with `<<` takes the
//! lines that follow, up to an empty line, as its payload (`+ ` is the
//! prompt meanwhile).

use crate::api::AdminApi;
use crate::commands::{all_commands, Command};
use crate::Level;
use std::sync::Arc;

/// HAProxy's limit on words per command.
const MAX_ARGS: usize = 64;

/// Interaction mode of a session (`prompt n|i|p`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One line, then the connection closes (the default).
    NonInteractive,
    /// Several lines, no prompt.
    Interactive,
    /// Several lines, `> ` before each.
    Prompt,
}

/// What one input line produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// Bytes to send back.
    pub output: String,
    /// Close the connection after sending them.
    pub close: bool,
}

/// The state of one CLI connection.
pub struct Session {
    pub(crate) api: Arc<dyn AdminApi>,
    pub(crate) level: Level,
    mode: Mode,
    timed: bool,
    /// The payload of the command being run, for it to take.
    pub(crate) payload: Option<String>,
    /// A command ending with `<<` and the payload lines read so far.
    gathering: Option<(String, String)>,
}

/// The result of one command.
pub(crate) enum Outcome {
    Output(String),
    Quit,
}

const ALWAYS: [(&str, &str); 3] = [
    ("help [<command>]", "list matching or all commands"),
    (
        "prompt [help | n | i | p | timed]*",
        "toggle interactive mode with prompt",
    ),
    ("quit", "disconnect"),
];

const PROMPT_USAGE: &str = "Usage: prompt [help | n | i | p | timed]*\n\
Changes the interactive mode and the prompt. Options:\n\
\x20 help    display this help\n\
\x20 n       single-command mode (no prompt, closes after the line)\n\
\x20 i       interactive mode (no prompt, several commands)\n\
\x20 p       interactive mode with a prompt\n\
\x20 timed   toggle displaying the uptime in the prompt\n\
Without any argument, toggles between n/i->p and p->n.\n";

fn usage_line(usage: &str, help: &str) -> String {
    format!("  {usage:<40}: {help}\n")
}

/// Splits a line on the `;` that are not escaped by a backslash. Escapes
/// are kept for [`words`].
pub(crate) fn split_commands(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                cur.push(c);
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            ';' => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// Splits one command into words on spaces and tabs; a backslash makes the
/// next character literal (`\;`, `\\`, `\ `).
pub(crate) fn words(cmd: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = cmd.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\\' => {
                in_word = true;
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            _ => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    out
}

/// Output framing: non-empty output ends with one newline and contains no
/// empty line (an empty line marks the end of a command's output).
fn normalize(text: String) -> String {
    if text.is_empty() {
        return text;
    }
    let body = text.trim_end_matches(['\n', '\r']);
    if body.is_empty() {
        return String::new();
    }
    let mut out = String::with_capacity(body.len() + 1);
    for line in body.split('\n') {
        if line.is_empty() || line == "\r" {
            out.push(' ');
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

impl Session {
    /// A new session in non-interactive mode at `level`.
    pub fn new(api: Arc<dyn AdminApi>, level: Level) -> Session {
        Session {
            api,
            level,
            mode: Mode::NonInteractive,
            timed: false,
            payload: None,
            gathering: None,
        }
    }

    /// The level in force (it may only go down, with `operator`/`user`).
    pub fn level(&self) -> Level {
        self.level
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    fn prompt(&self) -> String {
        if self.timed {
            let up = self.api.uptime().as_secs();
            format!(
                "\n[{}:{:02}:{:02}:{:02}]> ",
                up / 86400,
                up / 3600 % 24,
                up / 60 % 60,
                up % 60
            )
        } else {
            "\n> ".into()
        }
    }

    /// Runs one input line (without its line feed): every `;`-separated
    /// command in order, each output followed by an empty line (or the
    /// prompt after the last one in prompt mode). `quit` closes at once;
    /// in non-interactive mode the connection closes after the line.
    pub fn handle_line(&mut self, line: &str) -> Reply {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if self.gathering.is_some() {
            return self.gather(line);
        }
        let cmds = split_commands(line);
        let mut output = String::new();
        let n = cmds.len();
        for (i, cmd) in cmds.iter().enumerate() {
            if cmd.ends_with("<<") {
                // Payload mode: what follows on this line is payload too.
                let rest = cmds[i + 1..].join(";");
                let first = if rest.is_empty() { rest } else { rest + "\n" };
                self.gathering = Some((cmd.clone(), first));
                if self.mode == Mode::Prompt {
                    output.push_str("+ ");
                }
                return Reply {
                    output,
                    close: false,
                };
            }
            let w = words(cmd);
            if w.is_empty() && n > 1 {
                continue;
            }
            match self.execute(&w) {
                Outcome::Quit => {
                    return Reply {
                        output,
                        close: true,
                    }
                }
                Outcome::Output(text) => output.push_str(&normalize(text)),
            }
            let last = cmds[i + 1..].iter().all(|c| words(c).is_empty());
            if self.mode == Mode::Prompt && last {
                output.push_str(&self.prompt());
            } else {
                output.push('\n');
            }
        }
        Reply {
            output,
            close: self.mode == Mode::NonInteractive,
        }
    }

    /// One line while gathering a payload: an empty line ends it and runs
    /// the command.
    fn gather(&mut self, line: &str) -> Reply {
        let Some((cmd, mut payload)) = self.gathering.take() else {
            return self.handle_line(line);
        };
        if !line.is_empty() {
            payload.push_str(line);
            payload.push('\n');
            self.gathering = Some((cmd, payload));
            let output = if self.mode == Mode::Prompt { "+ " } else { "" };
            return Reply {
                output: output.into(),
                close: false,
            };
        }
        let mut w = words(&cmd);
        if w.last().is_some_and(|l| l == "<<") {
            w.pop();
            payload.pop();
            self.payload = Some(payload);
        }
        let outcome = self.execute(&w);
        self.payload = None;
        let mut output = match outcome {
            Outcome::Quit => {
                return Reply {
                    output: String::new(),
                    close: true,
                }
            }
            Outcome::Output(text) => normalize(text),
        };
        if self.mode == Mode::Prompt {
            output.push_str(&self.prompt());
        } else {
            output.push('\n');
        }
        Reply {
            output,
            close: self.mode == Mode::NonInteractive,
        }
    }

    /// Runs one command given as words.
    pub(crate) fn execute(&mut self, w: &[String]) -> Outcome {
        let Some(first) = w.first() else {
            return Outcome::Output(String::new());
        };
        if w.len() > MAX_ARGS {
            return Outcome::Output(format!(
                "Too many arguments. Commands must have at most {MAX_ARGS} arguments.\n"
            ));
        }
        match first.as_str() {
            "quit" => return Outcome::Quit,
            "help" => return Outcome::Output(self.usage(&w[1..], true)),
            "prompt" => return Outcome::Output(self.set_prompt(&w[1..])),
            _ => {}
        }
        let found = all_commands()
            .filter(|c| c.words.len() <= w.len() && c.words.iter().zip(w).all(|(a, b)| a == b))
            .max_by_key(|c| c.words.len());
        match found {
            None => Outcome::Output(self.usage(w, false)),
            Some(c) if c.level > self.level => Outcome::Output("Permission denied\n".into()),
            Some(c) => Outcome::Output((c.run)(self, w)),
        }
    }

    fn set_prompt(&mut self, args: &[String]) -> String {
        let mut mode = None;
        let mut timed = false;
        for a in args {
            match a.as_str() {
                "n" => mode = Some(Mode::NonInteractive),
                "i" => mode = Some(Mode::Interactive),
                "p" => mode = Some(Mode::Prompt),
                "timed" => timed = true,
                "help" => return PROMPT_USAGE.into(),
                _ => return PROMPT_USAGE.into(),
            }
        }
        if timed {
            self.timed = !self.timed;
            mode = mode.or(Some(Mode::Prompt));
        }
        self.mode = match mode {
            Some(m) => m,
            None if self.mode == Mode::Prompt => Mode::NonInteractive,
            None => Mode::Prompt,
        };
        String::new()
    }

    /// The commands this session may run.
    fn visible(&self) -> impl Iterator<Item = &'static Command> + '_ {
        all_commands().filter(move |c| c.level <= self.level)
    }

    /// `help [<words>]`, or the message for an unknown command `args`.
    pub(crate) fn usage(&self, args: &[String], is_help: bool) -> String {
        let matching = |c: &Command| {
            c.words
                .iter()
                .zip(args)
                .take_while(|(a, b)| *a == *b)
                .count()
        };
        let length = self.visible().map(matching).max().unwrap_or(0);
        let mut out = if is_help {
            String::from("The following commands are valid at this level:\n")
        } else if args.is_empty() {
            String::from("Unknown command: ''. Please enter one of the following commands only:\n")
        } else {
            format!(
                "Unknown command: '{}', but maybe one of the following ones is a better match:\n",
                args[0]
            )
        };
        let mut entries: Vec<&Command> = self.visible().filter(|c| matching(c) >= length).collect();
        if !is_help && args.len() > length {
            // Fuzzy-match what follows the words that matched exactly.
            let typed = args[length..].join(" ");
            let mut close: Vec<(usize, &Command)> = entries
                .iter()
                .map(|c| {
                    let rest = c.words.get(length..).unwrap_or(&[]).join(" ");
                    (levenshtein(&typed, &rest), *c)
                })
                .filter(|(d, c)| {
                    let rest_len = c.words.get(length..).map_or(0, |r| r.join(" ").len());
                    *d * 2 <= typed.len().max(rest_len)
                })
                .collect();
            if !close.is_empty() {
                close.sort_by_key(|(d, _)| *d);
                let best = close[0].0;
                entries = close
                    .into_iter()
                    .filter(|(d, _)| *d <= best * 5 / 2)
                    .map(|(_, c)| c)
                    .collect();
            }
        }
        entries.sort_by_key(|c| c.usage);
        for c in entries {
            out.push_str(&usage_line(c.usage, c.help));
        }
        for (u, h) in ALWAYS {
            out.push_str(&usage_line(u, h));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitting_and_escapes() {
        assert_eq!(
            split_commands("show info;show stat ; help"),
            ["show info", "show stat ", " help"]
        );
        assert_eq!(split_commands(r"set a\;b;x"), [r"set a\;b", "x"]);
        assert_eq!(words(r"  set  a\;b\\c\ d  "), ["set", "a;b\\c d"]);
        assert_eq!(words("\t"), Vec::<String>::new());
    }

    #[test]
    fn framing_never_emits_empty_lines() {
        assert_eq!(normalize("a\n\nb\n\n\n".into()), "a\n \nb\n");
        assert_eq!(normalize("x".into()), "x\n");
        assert_eq!(normalize("\n".into()), "");
    }

    #[test]
    fn edit_distance() {
        assert_eq!(levenshtein("info", "infos"), 1);
        assert_eq!(levenshtein("", "abc"), 3);
        assert_eq!(levenshtein("kitten", "sitting"), 3);
    }
}
