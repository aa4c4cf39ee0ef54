@testable import CampaignPipelineCLI
import TestSupport
import Foundation
import PipelineCore
import Testing

/// Throws 10,000 random, truncated and mutated events at the decoder and the shipped renderers.
/// Nothing may crash; every failure must be a typed ``PipelineError`` with a known code and at least
/// one issue; every success must be valid JSON within the size limit.
@Suite("Render fuzzing (seeded, 10,000 inputs)")
struct RenderFuzzTests {
    static let knownCodes: Set<PipelineError.Code> = [
        .invalidJSON, .missingField, .invalidField, .unknownTemplate, .payloadTooLarge, .validationFailed,
    ]

    static func randomValue(_ rng: inout SeededGenerator) -> JSONValue {
        switch Int.random(in: 0...9, using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2: return .int(Int.random(in: -3...12, using: &rng))
        case 3: return .double(1.5)
        case 4: return ["{{name}}", "", "#00FF00", "WEBURL", "auto", "filmstrip", "2030-01-01T00:00:00Z", "{{#x}}", "x"].randomElement(using: &rng).map(JSONValue.string) ?? .null
        case 5: return .string(String(repeating: "é", count: Int.random(in: 0...3000, using: &rng)))
        case 6: return .array((0..<Int.random(in: 0...7, using: &rng)).map { _ in ["image": "https://i.test/x.png", "label": "l", "type": "OPENAPP"] })
        case 7: return ["durationSeconds": .int(Int.random(in: -1...100, using: &rng))]
        case 8: return .array([])
        default: return .object([:])
        }
    }

    /// Replaces or removes a random member somewhere inside `value`.
    static func mutate(_ value: JSONValue, _ rng: inout SeededGenerator, depth: Int = 0) -> JSONValue {
        switch value {
        case .object(var object) where !object.isEmpty:
            let key = object.keys[Int.random(in: 0..<object.count, using: &rng)]
            let roll = Int.random(in: 0...9, using: &rng)
            if roll == 0 {
                object[key] = nil
            } else if roll < 4 || depth > 3 {
                object[key] = randomValue(&rng)
            } else if let member = object[key] {
                object[key] = mutate(member, &rng, depth: depth + 1)
            }
            return .object(object)
        case .array(var elements) where !elements.isEmpty:
            let index = Int.random(in: 0..<elements.count, using: &rng)
            elements[index] = mutate(elements[index], &rng, depth: depth + 1)
            return .array(elements)
        default:
            return randomValue(&rng)
        }
    }

    @Test func tenThousandInputs() async throws {
        let registry = BuiltinTemplates.registry
        let corpus = try Paths.samples().map { try JSONValue(parsing: Data(contentsOf: $0)) }
        let corpusBytes = corpus.map { $0.encoded() }
        var rng = SeededGenerator(seed: 0xCA4_9A16)
        var rendered = 0
        var failedCodes: [PipelineError.Code: Int] = [:]
        // One scratch through all the inputs, as a worker keeps one: each outcome must be the one a new scratch gives.
        let scratch = RenderScratch()

        for iteration in 0..<10_000 {
            // Seconds of work: let the parallel run's other tests (two cooperative threads here) take turns.
            if iteration % 100 == 0 { await Task.yield() }
            let sampleIndex = Int.random(in: 0..<corpus.count, using: &rng)
            var bytes: [UInt8]
            switch iteration % 4 {
            case 0:  // truncated
                let source = corpusBytes[sampleIndex]
                bytes = Array(source.prefix(Int.random(in: 0...source.count, using: &rng)))
            case 1:  // byte noise
                bytes = corpusBytes[sampleIndex]
                for _ in 0..<Int.random(in: 1...4, using: &rng) {
                    let position = Int.random(in: 0..<bytes.count, using: &rng)
                    bytes[position] = Array(#"{}[]":,\0a"#.utf8 + [0xFF, 0x00]).randomElement(using: &rng) ?? 0
                }
            case 2:  // random bytes
                bytes = (0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            default:  // valid JSON, mutated structure: reaches the renderers
                var value = corpus[sampleIndex]
                for _ in 0..<Int.random(in: 1...3, using: &rng) { value = Self.mutate(value, &rng) }
                bytes = value.encoded()
            }

            let outcome = registry.render(eventBytes: bytes)
            // The event renders exactly as the same event parsed into a tree (which is encoded again to be read in
            // place): key order, strings and numbers survive the round trip.
            let treeOutcome: RenderOutcome
            do throws(JSONParseError) {
                treeOutcome = registry.render(event: try JSONValue(parsing: bytes))
            } catch {
                treeOutcome = .failed(PipelineError(.invalidJSON, at: .root, "invalid JSON: \(error)"))
            }
            #expect(outcomeSummary(outcome) == outcomeSummary(treeOutcome), "input \(iteration)")
            #expect(outcomeSummary(registry.render(eventBytes: bytes, scratch: scratch)) == outcomeSummary(outcome), "input \(iteration), reused scratch")

            switch outcome {
            case .rendered(let notification):
                rendered += 1
                let payload = try JSONValue(parsing: notification.payloadBytes)
                if case .fcm(let message) = notification.payload {
                    #expect(message.data.values.allSatisfy { $0.stringValue != nil })
                    #expect(message.dataSize <= registry.maximumPayloadSize)
                    #expect(payload.objectValue?["message"] != nil)
                } else {
                    #expect(notification.payloadBytes.count <= registry.maximumPayloadSize)
                    #expect(payload.objectValue?["aps"]?.objectValue?["category"] == "AEPNotification")
                }
            case .failed(let error):
                #expect(Self.knownCodes.contains(error.code))
                #expect(!error.issues.isEmpty)
                #expect(error.issues.allSatisfy { !$0.reason.isEmpty })
                failedCodes[error.code, default: 0] += 1
            }
        }
        // The fuzzer must exercise both outcomes and the renderers' validation, not just the parser.
        #expect(rendered > 200)
        #expect(failedCodes[.invalidJSON, default: 0] > 1_000)
        #expect(failedCodes[.invalidField, default: 0] + failedCodes[.missingField, default: 0] > 300)
    }
}
