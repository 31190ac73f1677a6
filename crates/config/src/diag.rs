//! Diagnostic collection: every error and warning found while parsing is
//! pushed here, and sorted into file order at the end.

use crate::model::{Diagnostic, Level, Location};

/// Collects diagnostics; `order` remembers which source a file name came
/// from so that the final list can be sorted in file order.
#[derive(Debug, Default)]
pub(crate) struct Diags {
    pub list: Vec<Diagnostic>,
}

impl Diags {
    pub fn alert(&mut self, loc: &Location, msg: impl Into<String>) {
        self.list.push(Diagnostic {
            level: Level::Alert,
            location: loc.clone(),
            message: msg.into(),
        });
    }

    pub fn warn(&mut self, loc: &Location, msg: impl Into<String>) {
        self.list.push(Diagnostic {
            level: Level::Warning,
            location: loc.clone(),
            message: msg.into(),
        });
    }

    pub fn has_alerts(&self) -> bool {
        self.list.iter().any(|d| d.level == Level::Alert)
    }

    /// Sorts (stably) by source order then line, using `files` to rank
    /// file names in the order the sources were given.
    pub fn sorted(mut self, files: &[String]) -> Vec<Diagnostic> {
        let rank = |name: &str| files.iter().position(|f| f == name).unwrap_or(usize::MAX);
        self.list
            .sort_by_key(|d| (rank(&d.location.file), d.location.line));
        // A defaults section's lines are compiled again in each proxy that
        // inherits them: report each message once.
        let mut seen = std::collections::HashSet::new();
        self.list
            .retain(|d| seen.insert((d.location.clone(), d.message.clone(), d.level)));
        self.list
    }
}
