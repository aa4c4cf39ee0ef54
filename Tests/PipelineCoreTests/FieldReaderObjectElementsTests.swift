@testable import PipelineCore
import Testing

@Suite("Arrays of objects read element by element")
struct FieldReaderObjectElementsTests {
    /// Lists with non-object elements, objects nested in elements, more elements than a render keeps places for
    /// inline (16), and lists that are absent, `null`, empty or not arrays.
    static let lists: [String?] = [
        nil,
        "null",
        "[]",
        #""text""#,
        #"[{"known":"k"}]"#,
        #"[{"known":"k","x":1},2,{"inner":{"known":"k","ix":1},"y":2},null,[],{"known":7}]"#,
        "[" + (0..<20).map { #"{"known":"k","l\#($0)":1,"inner":{"known":"k","ix":\#($0)}}"# }.joined(separator: ",") + "]",
        #"["a",{"z":1},true]"#,
    ]

    func outcome(_ list: String?, streamed: Bool) -> String {
        let content = #"{"title":"T""# + (list.map { #","list":\#($0)"# } ?? "") + "}"
        let registry = TemplateRegistry([ListTemplate(streamed: streamed)])
        switch registry.render(eventBytes: Array(eventJSON(template: "list", content: content).utf8)) {
        case .rendered(let notification):
            let warnings = notification.warnings.map { "\($0.path): \($0.message)" }
            return String(decoding: notification.payloadBytes, as: UTF8.self) + "\n" + warnings.joined(separator: "\n")
        case .failed(let error):
            return "failed: \(error)"
        }
    }

    /// The readers, issues and warnings are those of the array of readers: the non-object elements' issues come
    /// first, and the unread keys are warned about in the same order, though each element's reader is made after the
    /// objects read below the one before it.
    @Test(arguments: lists)
    func readsAsTheArrayOfReadersDoes(list: String?) {
        let streamed = outcome(list, streamed: true)
        #expect(streamed == outcome(list, streamed: false))
        if list == nil || list == "null" || list == #""text""# { #expect(streamed.hasPrefix("failed: ")) }
    }

    /// The paths themselves, not only their agreement with `objects`, which is built on the same sequence: each
    /// element's index and the objects below it, in the order the elements come.
    @Test func namesEachElementByItsIndexInTheArray() {
        let list = #"[{"known":"k","x":1},{"inner":{"known":"k","ix":1},"y":2},{"known":"k"},{"z":3}]"#
        let text = outcome(list, streamed: true)
        let warnings = text.split(separator: "\n").dropFirst().map { String($0.prefix { $0 != ":" }) }
        #expect(warnings == ["content.title", "content.list[0].x", "content.list[1].y", "content.list[1].inner.ix", "content.list[3].z"], "\(text)")
        let failed = outcome(#"[1,{"known":"k"},"two",{"known":7}]"#, streamed: true)
        let issues = ["content.list[0]: expected an object, found a number", "content.list[2]: expected an object, found a string", "content.list[3].known"]
        for issue in issues { #expect(failed.contains(issue), "\(issue) in \(failed)") }
        let order = issues.compactMap { failed.firstRange(of: $0)?.lowerBound }
        #expect(order == order.sorted(), "non-object elements first, then what reading the objects found: \(failed)")
    }

    @Test func countsEveryElementAndReadsEachObject() {
        let read = outcome(#"[{"known":"k"},{"inner":{"known":"k"}},{}]"#, streamed: true)
        #expect(read.contains(#""count":"3","read":"3""#), "\(read)")
        let failed = outcome(#"[{"known":"k"},1,{"known":"k"}]"#, streamed: true)
        #expect(failed.hasPrefix("failed: ") && failed.contains("content.list[1]") && failed.contains("expected an object, found a number"), "\(failed)")
    }
}
