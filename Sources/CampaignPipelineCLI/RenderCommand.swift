import ArgumentParser
import Foundation
import PipelineCore
import PipelineRuntime
import PlatformSinks

/// `campaign-pipeline render`: renders events from files or standard input to payload JSON lines.
struct RenderCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "render",
        abstract: "Render push.requested events into FCM or APNs payloads, one JSON line each.",
        discussion: """
            Reads events from each FILE (one JSON object per file, or JSON lines), or from standard \
            input when no file or '-' is given, renders each with its template for its \
            recipient.platform, and writes one line per event to standard output: the FCM HTTP v1 \
            request body, or the APNs JSON payload.

            An event that cannot be rendered is reported on standard error as \
            'error: <eventId>: <path>: <reason>' (one line per problem) and the command exits with \
            status 1 after processing the rest. Warnings (missing personalization attributes, text \
            longer than the platform guideline, ignored fields) go to standard error as \
            'warning: <eventId>: <path>: <message>', unless --envelope puts them in the output. With \
            --strict, an event rendered with a warning also makes the command exit with status 1 (to \
            check campaign content before it is sent, where a misspelt key is only a warning).

            An event without content of its own renders its campaign's stored content when --definitions \
            gives the campaign events (as on campaign.definitions; Config/demo/definitions.jsonl is an \
            example): the version the event names, or the latest defined by the event's time.

            Rendering only: whether `run` would send an event is not judged here. A send past its expiresAt \
            or of a cancelled campaign renders like any other (a timer over before the event was made, with \
            a warning), where `run` ends them as push.expired or push.suppressed.
            """
    )

    @Argument(help: "Event files to render; '-' or none reads standard input.")
    var files: [String] = []

    @Flag(help: "Wrap each output as {\"platform\",\"messageId\",\"token\",\"headers\",\"payload\",\"warnings\"}.")
    var envelope = false

    @Flag(help: "Exit with status 1 also when an event rendered with a warning.")
    var strict = false

    @Option(
        help: ArgumentHelp(
            "Campaign events (JSON lines, as on campaign.definitions) for events without content of their own, which render their campaign's stored content.",
            valueName: "file"
        )
    )
    var definitions: String?

    func run() async throws {
        let campaigns = try definitions.map(Self.campaigns(from:))
        let runner = RenderRunner(registry: BuiltinTemplates.registry, isEnvelope: envelope, campaigns: campaigns)
        Self.reportOverrides(of: runner, to: .standardError)
        var stdout = OutputBuffer(handle: .standardOutput)
        var stderr = OutputBuffer(handle: .standardError)
        var failed = 0
        var warned = 0
        for file in files.isEmpty ? ["-"] : files {
            let input: [UInt8]
            if file == "-" {
                input = Array(FileHandle.standardInput.readDataToEndOfFile())
            } else {
                do {
                    input = try UnreadableFile.contents(of: file)
                } catch {
                    stderr.writeLine("error: \(file): cannot read: \(error.reason)")
                    failed += 1
                    continue
                }
            }
            let summary = runner.run(
                input: input,
                source: file,
                output: { stdout.writeLine($0) },
                diagnostics: { stderr.writeLine($0) }
            )
            failed += summary.failed
            warned += summary.warned
        }
        stdout.flush()
        stderr.flush()
        if failed > 0 || (strict && warned > 0) { throw ExitCode(1) }
    }
}

extension RenderCommand {
    /// Writes a warning for each name a later registration took from an earlier template (``RenderRunner/overrideWarnings``)
    /// to `handle` at once, so that it comes before any output even when both streams go to one terminal or file.
    static func reportOverrides(of runner: RenderRunner, to handle: FileHandle) {
        let warnings = runner.overrideWarnings
        guard !warnings.isEmpty else { return }
        handle.write(Data(warnings.map { $0 + "\n" }.joined().utf8))
    }

    /// The campaign table of the definitions file at `path`: one campaign event per line.
    static func campaigns(from path: String) throws -> CampaignTable {
        let data: [UInt8]
        do {
            data = try UnreadableFile.contents(of: path)
        } catch {
            throw CommandError("--definitions: \(error)")
        }
        var table = CampaignTable()
        for (index, line) in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() where !line.allSatisfy({ $0 == 0x20 || $0 == 0x0D }) {
            do throws(PipelineError) {
                try table.apply(json: Array(line))
            } catch {
                throw CommandError("--definitions: \(path), line \(index + 1): \(error.issues.map(\.description).joined(separator: "; "))")
            }
        }
        return table
    }
}

/// Buffers lines and writes them to a file handle in large chunks.
private struct OutputBuffer {
    let handle: FileHandle
    private var bytes: [UInt8] = []

    init(handle: FileHandle) {
        self.handle = handle
    }

    mutating func writeLine(_ line: String) {
        bytes.append(contentsOf: line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        if bytes.count >= 1 << 16 { flush() }
    }

    mutating func flush() {
        guard !bytes.isEmpty else { return }
        handle.write(Data(bytes))
        bytes.removeAll(keepingCapacity: true)
    }
}
