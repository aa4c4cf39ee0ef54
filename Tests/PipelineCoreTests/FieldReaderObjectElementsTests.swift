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

    @Test func countsEveryElementAndReadsEachObject() {
        let read = outcome(#"[{"known":"k"},{"inner":{"known":"k"}},{}]"#, streamed: true)
        #expect(read.contains(#""count":"3","read":"3""#), "\(read)")
        let failed = outcome(#"[{"known":"k"},1,{"known":"k"}]"#, streamed: true)
        #expect(failed.hasPrefix("failed: ") && failed.contains("content.list[1]") && failed.contains("expected an object, found a number"), "\(failed)")
    }
}
