@testable import PipelineCore
import TestSupport
import Testing

@Suite("Payload objects written as they are set")
struct PayloadObjectTests {
    /// Keys that are equal to another in the pool only under `String` equality (KELVIN SIGN and "K", precomposed
    /// and combining accents), that need escapes, or that share a tag (length, first and last byte).
    static let keys = ["K", "\u{212A}", "é", "e\u{301}", "adb_title", "adb_tatle", "a\"b", "a\\b", "", "aps", "x", "\u{01}"]

    static func randomValue(_ rng: inout SeededGenerator) -> JSONValue {
        switch Int.random(in: 0...4, using: &rng) {
        case 0: .string(JSONFuzzTests.randomString(&rng))
        case 1: .int(Int.random(in: -1_000...1_000, using: &rng))
        case 2: .null
        case 3: .array([.string(JSONFuzzTests.randomString(&rng)), .bool(true)])
        default: ["nested": .string(JSONFuzzTests.randomString(&rng))]
        }
    }

    /// Random sequences of sets, through every setter (by `String` and by prepared ``PayloadObject/MemberName``),
    /// against a ``JSONObject`` given the same sets: the bytes are what the tree writer writes for it, and lookups
    /// agree.
    @Test func writesWhatTheTreeWriterWritesForTheSameSets() {
        var rng = SeededGenerator(seed: 0x5EED_0A11)
        for _ in 0..<3_000 {
            var payload = PayloadObject()
            var tree = JSONObject()
            for _ in 0..<Int.random(in: 0...10, using: &rng) {
                let key = Self.keys.randomElement(using: &rng) ?? "x"
                switch Int.random(in: 0...4, using: &rng) {
                case 0:
                    let text = Bool.random(using: &rng) ? JSONFuzzTests.randomString(&rng) : nil
                    if Bool.random(using: &rng) {
                        payload.set(key, text)
                    } else {
                        payload.set(PayloadObject.MemberName(key), text)
                    }
                    tree.set(key, text)
                case 1:
                    let number = Int.random(in: -99...99, using: &rng)
                    payload.set(key, number)
                    tree[key] = .int(number)
                case 2:
                    let value = Self.randomValue(&rng)
                    payload.set(key, value)
                    tree[key] = value
                case 3:
                    // A value written by a writer: inserted as is, or as a string holding its text (FCM data).
                    let value = Self.randomValue(&rng)
                    var json = JSONWriter()
                    json.write(value)
                    let asText = Bool.random(using: &rng)
                    switch (asText, Bool.random(using: &rng)) {
                    case (false, false): payload.set(key, json: json)
                    case (false, true): payload.set(PayloadObject.MemberName(key), json: json)
                    case (true, false): payload.set(key, jsonText: json)
                    case (true, true): payload.set(PayloadObject.MemberName(key), jsonText: json)
                    }
                    tree[key] = asText ? .string(value.jsonString) : value
                default:
                    var inner = PayloadObject()
                    inner.set("t", JSONFuzzTests.randomString(&rng))
                    payload.set(key, object: inner)
                    tree[key] = .object(inner.object)
                }
            }
            var writer = JSONWriter()
            writer.write(object: tree)
            #expect("{" + String(decoding: payload.bytes, as: UTF8.self) + "}" == String(decoding: writer.bytes, as: UTF8.self))
            #expect(payload.count == tree.count)
            #expect(payload.object.keys == tree.keys)
            #expect(payload == PayloadObject(tree))
            for key in Self.keys {
                #expect(payload.contains(key) == tree.contains(key), "\(key.debugDescription)")
                #expect(payload.contains(PayloadObject.MemberName(key)) == tree.contains(key), "\(key.debugDescription)")
                #expect(payload[key] == tree[key], "\(key.debugDescription)")
            }
            #expect(payload.firstNonStringKey == tree.first { $0.1.stringValue == nil }?.0)
            let removed = payload.removing("aps")
            var treeWithout = tree
            treeWithout["aps"] = nil
            #expect(removed.object.keys == treeWithout.keys)
            #expect(removed.object == treeWithout)
        }
    }

    @Test func setsAgainInPlaceAndMovesTheLaterMembers() {
        var data: PayloadObject = ["a": "1", "b": 2, "c": "3"]
        data.set("b", "a much longer value than before")
        data.set("a", nil as String?)
        data.set("d", ["x": true])
        #expect(String(decoding: data.bytes, as: UTF8.self) == #""a":"1","b":"a much longer value than before","c":"3","d":{"x":true}"#)
        #expect(data["c"] == "3")
        #expect(data.firstNonStringKey == "d")
        data.set("d", "now a string")
        #expect(data.firstNonStringKey == nil)
    }
}
