import ArgumentParser

/// A failure a command reports in one sentence, without the usage text (which is for mistakes in the
/// command line itself: those are `ValidationError`s).
struct CommandError: Error, CustomStringConvertible {
    var description: String
    /// Whether the failure is a setting the command cannot use (a file, a variable), which ends it with
    /// ``CampaignPipelineCommand/configurationStatus``.
    var isAboutConfiguration = false

    init(_ description: String) {
        self.description = description
    }

    /// A setting the command cannot use: running it again changes nothing until the setting does.
    static func configuration(_ description: String) -> CommandError {
        var error = CommandError(description)
        error.isAboutConfiguration = true
        return error
    }
}

/// Checks a number of seconds given with `option`: positive, finite and at most about 31 years. The option is parsed
/// as a `Double`, which also reads `nan`, `inf` and `1e300`, on which the conversion to milliseconds traps.
///
/// - Throws: `ValidationError` naming the option and the value.
func validateSeconds(_ seconds: Double, option: String) throws {
    guard seconds.isFinite, seconds > 0, seconds <= 1e9 else {
        throw ValidationError("\(option) must be a positive number of seconds (at most 1e9), not \(seconds)")
    }
}
