import Foundation
import Testing

/// Swift 6.3's optimizer miscompiles a tuple that an async closure returns through its (generic) result when part of
/// the tuple is known before a suspension and the rest only after it: `do { return (partition, .success(try await
/// …)) } catch { … }` in a task group's task came back, in release builds only, with the partition replaced by the
/// bytes of a captured string (swiftlang/swift#91911, a fix reverted in #92155). The state topic's catch-up then
/// never saw a partition reach its end and waited out its 10 s on every new assignment. Debug builds, which the tests
/// run, are correct, so no behaviour test can see it: this test keeps the shape out of the code instead. Bind the
/// awaited value to a name first (`let marks = try await …; return (partition, marks)`).
@Suite("the sources avoid the async tuple miscompile")
struct AsyncTupleMiscompileTests {
    @Test("no tuple literal in the package's sources holds an await")
    func noAwaitInsideATupleLiteral() throws {
        var found: [String] = []
        for directory in ["Sources", "Plugins", "Tests", "Benchmarks/Sources", "Benchmarks/Benchmarks"] {
            let root = repositoryRoot.appendingPathComponent(directory)
            guard let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil) else { continue }
            for case let file as URL in files where file.pathExtension == "swift" {
                let text = try String(contentsOf: file, encoding: .utf8)
                let relative = String(file.path.dropFirst(repositoryRoot.path.count + 1))
                found += Self.tuplesHoldingAwait(in: text).map { "\(relative):\($0)" }
            }
        }
        #expect(found.isEmpty, "bind the awaited value to a name before making the tuple: \(found)")
    }

    @Test("the scan finds the shape that was miscompiled, and leaves calls and bound values alone")
    func scanFindsTheShape() {
        let miscompiled = """
            group.addTask {
                do throws(KafkaError) {
                    return (partition, .success(try await consumer.watermarks(topic: topic, partition: partition)))
                } catch {
                    return (partition, .failure(error))
                }
            }
            """
        #expect(Self.tuplesHoldingAwait(in: miscompiled) == [3])
        #expect(Self.tuplesHoldingAwait(in: "let pair = (\n  name,\n  await value()\n)") == [1])
        // Found by review: the `await` in front of the tuple (miscompiled the same way), and a tuple after `?`.
        #expect(Self.tuplesHoldingAwait(in: "do { return try await (partition, .success(marks(partition))) } catch {}") == [1])
        #expect(Self.tuplesHoldingAwait(in: "let pair = await (name, value())") == [1])
        #expect(Self.tuplesHoldingAwait(in: "return ready ? (partition, await value()) : (partition, nil)") == [1])
        #expect(Self.tuplesHoldingAwait(in: "let value = await (compute())\nlet other = try await f?(x, await g())").isEmpty)
        #expect(Self.tuplesHoldingAwait(in: "for await (partition, result) in group {}\nfor try await (a, b) in stream {}").isEmpty)
        let fine = """
            let marks = try await consumer.watermarks(topic: topic, partition: partition)
            return (partition, .success(marks))
            let sum = await add(first, second)
            try await withTaskGroup(of: (Int, String).self) { group in }
            // (a comment, await x)
            let text = "(quoted, await)"
            """
        #expect(Self.tuplesHoldingAwait(in: fine).isEmpty)
    }

    /// The lines of `text` where a parenthesised list of two or more elements (a tuple, not a call's arguments)
    /// holds an `await`, in itself or in a call within it. Comments and string literals are skipped (roughly: `//`
    /// to the end of the line, `"…"` on one line, and the lines of a `"""` literal).
    static func tuplesHoldingAwait(in text: String) -> [Int] {
        let code = Array(Self.blankingCommentsAndStrings(text).utf8)
        let awaitWord = Array("await".utf8)
        var lines: Set<Int> = []
        var index = 0
        while index + awaitWord.count <= code.count {
            defer { index += 1 }
            guard code[index..<index + awaitWord.count].elementsEqual(awaitWord),
                index == 0 || !isIdentifier(code[index - 1]),
                index + awaitWord.count == code.count || !isIdentifier(code[index + awaitWord.count])
            else { continue }
            // A tuple the `await` covers: `await (a, f())`, `try await (a, .success(f()))`.
            var next = index + awaitWord.count
            while next < code.count, code[next] == UInt8(ascii: " ") || code[next] == UInt8(ascii: "\n") { next += 1 }
            if next < code.count, code[next] == UInt8(ascii: "("), !isLoopPattern(code, await: index), hasTopLevelComma(code, after: next) {
                lines.insert(line(of: next, in: code))
            }
            // Out through each enclosing parenthesis, up to the closure, block or array around the expression.
            var position = index - 1
            while let open = enclosingOpener(in: code, before: position), code[open] == UInt8(ascii: "(") {
                if !isCall(code, open: open), hasTopLevelComma(code, after: open) {
                    lines.insert(line(of: open, in: code))
                }
                position = open - 1
            }
        }
        return lines.sorted()
    }

    /// The line (from 1) of the byte at `index`.
    private static func line(of index: Int, in code: [UInt8]) -> Int {
        code[..<index].count(where: { $0 == UInt8(ascii: "\n") }) + 1
    }

    /// `text` with comments and string literals replaced by spaces (line breaks kept).
    private static func blankingCommentsAndStrings(_ text: String) -> String {
        var result = ""
        var inMultilineString = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.contains("\"\"\"") {
                inMultilineString.toggle()
                result += "\n"
                continue
            }
            if inMultilineString {
                result += "\n"
                continue
            }
            var blanked = ""
            var inString = false
            var previous: Character = " "
            for character in line {
                if !inString, character == "/", previous == "/" {
                    blanked.removeLast()
                    break
                }
                if character == "\"", previous != "\\" { inString.toggle() }
                blanked.append(inString || character == "\"" ? " " : character)
                previous = character
            }
            result += blanked + "\n"
        }
        return result
    }

    private static func isIdentifier(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "_") || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            || (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "z"))
    }

    /// Whether the `await` at `index` is a loop's (`for await (a, b) in …`, `for try await …`): a pattern follows,
    /// not a tuple.
    private static func isLoopPattern(_ code: [UInt8], await index: Int) -> Bool {
        var words: [String] = []
        var end = index
        while words.count < 2 {
            while end > 0, code[end - 1] == UInt8(ascii: " ") { end -= 1 }
            var start = end
            while start > 0, isIdentifier(code[start - 1]) { start -= 1 }
            guard start < end else { break }
            words.append(String(decoding: code[start..<end], as: UTF8.self))
            end = start
        }
        return words.first == "for" || words == ["try", "for"]
    }

    /// The index of the unmatched `(`, `[` or `{` before `position`.
    private static func enclosingOpener(in code: [UInt8], before position: Int) -> Int? {
        var depth = 0
        var index = position
        while index >= 0 {
            switch code[index] {
            case UInt8(ascii: ")"), UInt8(ascii: "]"), UInt8(ascii: "}"): depth += 1
            case UInt8(ascii: "("), UInt8(ascii: "["), UInt8(ascii: "{"):
                if depth == 0 { return index }
                depth -= 1
            default: break
            }
            index -= 1
        }
        return nil
    }

    /// Whether the `(` at `open` starts a call's arguments (an identifier, `)`, `]`, `>`, `?` or `!` before it) rather
    /// than a tuple (after `return`, `in`, `=`, `,`, `(`, …).
    private static func isCall(_ code: [UInt8], open: Int) -> Bool {
        var index = open - 1
        while index >= 0, code[index] == UInt8(ascii: " ") || code[index] == UInt8(ascii: "\n") || code[index] == UInt8(ascii: "\t") {
            index -= 1
        }
        guard index >= 0 else { return false }
        let byte = code[index]
        // `c ? (a, b) : …`: a `?` after a space is the conditional operator, not optional chaining (`f?(…)`).
        if byte == UInt8(ascii: "?"), index > 0, code[index - 1] == UInt8(ascii: " ") { return false }
        if [UInt8(ascii: ")"), UInt8(ascii: "]"), UInt8(ascii: ">"), UInt8(ascii: "?"), UInt8(ascii: "!")].contains(byte) { return true }
        guard isIdentifier(byte) else { return false }
        var start = index
        while start > 0, isIdentifier(code[start - 1]) { start -= 1 }
        let word = String(decoding: code[start...index], as: UTF8.self)
        return !["return", "in", "await", "try", "throw", "case", "yield"].contains(word)
    }

    /// Whether the parentheses opened at `open` hold a comma outside any nested brackets.
    private static func hasTopLevelComma(_ code: [UInt8], after open: Int) -> Bool {
        var depth = 0
        var index = open + 1
        while index < code.count {
            switch code[index] {
            case UInt8(ascii: "("), UInt8(ascii: "["), UInt8(ascii: "{"): depth += 1
            case UInt8(ascii: ")"), UInt8(ascii: "]"), UInt8(ascii: "}"):
                if depth == 0 { return false }
                depth -= 1
            case UInt8(ascii: ","):
                if depth == 0 { return true }
            default: break
            }
            index += 1
        }
        return false
    }
}
