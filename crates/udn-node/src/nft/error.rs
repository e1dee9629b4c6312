//! What can go wrong building or running an nft transaction, and reading nft's error text.

/// An nft transaction that could not be rendered or run, or a listing that failed.
#[derive(Debug, thiserror::Error)]
pub enum NftError {
    /// An operation the builder refuses (rendering it would give nft something else than
    /// meant, or nft would refuse it).
    #[error("cannot {verb} {kind} {name:?}: {reason}")]
    Invalid {
        /// The operation.
        verb: &'static str,
        /// The object kind.
        kind: &'static str,
        /// The object's name (a rule: its chain).
        name: String,
        /// Why.
        reason: String,
    },
    /// nft could not be run to its end (not started, killed at its deadline, ...).
    #[error(transparent)]
    Command(#[from] crate::command::CommandError),
    /// nft refused the transaction or the command.
    #[error("{0}")]
    Failed(Box<NftFailure>),
}

/// What nft said when it refused a transaction or a command.
#[derive(Debug, thiserror::Error)]
#[error("{command} failed ({status}){}: {message}", at_line(.line))]
pub struct NftFailure {
    /// The command line.
    pub command: String,
    /// Its exit status.
    pub status: String,
    /// The input line nft named first, when it named one.
    pub line: Option<FailedLine>,
    /// nft's first error message (without the `Error: ` prefix).
    pub message: String,
    /// nft's whole standard error.
    pub stderr: String,
}

/// A line of a transaction nft refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailedLine {
    /// 1-based line number in the transaction text.
    pub number: usize,
    /// The line.
    pub text: String,
}

fn at_line(line: &Option<FailedLine>) -> String {
    match line {
        Some(line) => format!(" at line {} `{}`", line.number, line.text),
        None => String::new(),
    }
}

impl NftError {
    /// nft's message when nft itself refused something, else `None`.
    pub fn nft_message(&self) -> Option<&str> {
        match self {
            Self::Failed(failure) => Some(&failure.message),
            _ => None,
        }
    }

    /// The refused line, when nft named one.
    pub fn failed_line(&self) -> Option<&FailedLine> {
        match self {
            Self::Failed(failure) => failure.line.as_ref(),
            _ => None,
        }
    }

    /// Whether nft said the object does not exist (`No such file or directory`), as it does
    /// when listing a table that is not there.
    pub fn is_not_found(&self) -> bool {
        self.nft_message()
            .is_some_and(|message| message.ends_with("No such file or directory"))
    }
}

/// The first error of nft's standard error: the input line it names (looked up in `input`,
/// the text given to `nft -f -`) and its message.
///
/// nft writes `/dev/stdin:3:61-68: Error: Could not process rule: No such file or directory`,
/// then the line and a caret marker; errors without a location are just `Error: ...`.
pub(crate) fn first_error(stderr: &str, input: Option<&str>) -> (Option<FailedLine>, String) {
    let Some((location, message)) = stderr.lines().find_map(|line| {
        let index = line.find("Error: ")?;
        Some((&line[..index], line[index + "Error: ".len()..].trim()))
    }) else {
        return (None, stderr.trim().to_owned());
    };
    let number = location
        .trim_end_matches(": ")
        .split(':')
        .nth(1)
        .and_then(|n| n.parse::<usize>().ok());
    let line = number.and_then(|number| {
        let text = input?.lines().nth(number.checked_sub(1)?)?;
        Some(FailedLine {
            number,
            text: text.to_owned(),
        })
    });
    (line, message.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_error_names_the_line_and_message() {
        let input = "add table inet t\nadd element inet t s { 10.0.0.1 }\ndelete element inet t s { 10.0.0.2 }\n";
        let stderr = "/dev/stdin:3:27-34: Error: Could not process rule: No such file or directory\n\
                      delete element inet t s { 10.0.0.2 }\n                          ^^^^^^^^\n";
        let (line, message) = first_error(stderr, Some(input));
        assert_eq!(
            line,
            Some(FailedLine {
                number: 3,
                text: "delete element inet t s { 10.0.0.2 }".to_owned()
            })
        );
        assert_eq!(message, "Could not process rule: No such file or directory");
    }

    #[test]
    fn first_error_without_location_or_prefix() {
        let (line, message) = first_error(
            "Error: No such file or directory\nlist table inet x\n",
            None,
        );
        assert_eq!(line, None);
        assert_eq!(message, "No such file or directory");
        let (line, message) = first_error("  something odd\n", None);
        assert_eq!(line, None);
        assert_eq!(message, "something odd");
    }

    #[test]
    fn failed_display_names_command_line_and_message() {
        let error = NftError::Failed(Box::new(NftFailure {
            command: "nft -f -".to_owned(),
            status: "exit status: 1".to_owned(),
            line: Some(FailedLine {
                number: 2,
                text: "add rule inet t c bogus".to_owned(),
            }),
            message: "syntax error, unexpected string".to_owned(),
            stderr: String::new(),
        }));
        assert_eq!(
            error.to_string(),
            "nft -f - failed (exit status: 1) at line 2 `add rule inet t c bogus`: syntax error, unexpected string"
        );
        assert!(!error.is_not_found());
    }
}
