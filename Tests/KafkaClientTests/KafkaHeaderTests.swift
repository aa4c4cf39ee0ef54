import KafkaClient
import Testing

@Suite("Record headers: made from text or bytes, the same header")
struct KafkaHeaderTests {
    @Test("a header from a string equals and hashes like one from its UTF-8 bytes")
    func textEqualsBytes() {
        let text = KafkaHeader(key: "messageId", string: "6f1c-é")
        let bytes = KafkaHeader(key: "messageId", value: Array("6f1c-é".utf8))
        #expect(text == bytes)
        #expect(Set([text, bytes]).count == 1)
        #expect(text.value == Array("6f1c-é".utf8))
        #expect(text.stringValue == "6f1c-é")
        #expect(bytes.stringValue == "6f1c-é")
    }

    @Test("no value, an empty value and invalid UTF-8 stay distinct")
    func absentEmptyAndBinary() {
        let absent = KafkaHeader(key: "k", value: nil)
        let empty = KafkaHeader(key: "k", string: "")
        #expect(absent.value == nil)
        #expect(empty.value == [])
        #expect(absent != empty)
        #expect(KafkaHeader(key: "k", value: [0xFF]).stringValue == nil)
        var changed = empty
        changed.value = [1, 2]
        #expect(changed == KafkaHeader(key: "k", value: [1, 2]))
        changed.value = nil
        #expect(changed == absent)
    }
}
