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
                switch Int.random(in: 0...5, using: &rng) {
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
                    if Bool.random(using: &rng) {
                        payload.set(key, number)
                    } else {
                        payload.set(PayloadObject.MemberName(key), number)
                    }
                    tree[key] = .int(number)
                case 2:
                    let value = Self.randomValue(&rng)
                    if Bool.random(using: &rng) {
                        payload.set(key, value)
                    } else {
                        payload.set(PayloadObject.MemberName(key), value)
                    }
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
                case 4:
                    // Written straight into the payload, as JSON or as a string holding its text; or declined
                    // after writing, which leaves the object as it was.
                    let value = Self.randomValue(&rng)
                    let asText = Bool.random(using: &rng)
                    let keep = Int.random(in: 0...3, using: &rng) > 0
                    let write: (inout JSONWriter) -> Bool = { writer in
                        writer.write(value)
                        return keep
                    }
                    if asText {
                        payload.set(PayloadObject.MemberName(key), jsonTextWrittenBy: write)
                    } else {
                        payload.set(PayloadObject.MemberName(key), jsonWrittenBy: write)
                    }
                    if keep { tree[key] = asText ? .string(value.jsonString) : value }
                default:
                    var inner = PayloadObject()
                    inner.set("t", JSONFuzzTests.randomString(&rng))
                    if Bool.random(using: &rng) {
                        payload.set(key, object: inner)
                    } else {
                        payload.set(PayloadObject.MemberName(key), object: inner)
                    }
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

    /// Values streamed in place by closures that write in pieces: after another streamed member (no comma owed to
    /// it), declined after writing part of a value, and declined as the first member (no comma before it). (A raw
    /// control character, which only a raw write makes, is not valid JSON and stops a debug build here; its quoting
    /// is tested on the writer, `SWARTests`.)
    @Test func writesStreamedValuesInPlaceAsAWriterOfTheirOwnWould() {
        var rng = SeededGenerator(seed: 0x57_8EA3)
        for _ in 0..<2_000 {
            var payload = PayloadObject()
            var tree = JSONObject()
            for index in 0..<Int.random(in: 1...6, using: &rng) {
                let key = "k\(index)"
                let elements = (0..<Int.random(in: 0...3, using: &rng)).map { _ in JSONFuzzTests.randomString(&rng) }
                let keep = Bool.random(using: &rng)
                let asText = Bool.random(using: &rng)
                let write: (inout JSONWriter) -> Bool = { writer in
                    writer.beginArray()
                    for element in elements {
                        writer.nextElement()
                        writer.beginObject()
                        writer.member("t", element)
                        writer.endObject()
                    }
                    guard keep else { return false }  // declined half-way: the array is not even closed
                    writer.endArray()
                    return true
                }
                if asText {
                    payload.set(key, jsonTextWrittenBy: write)
                } else {
                    payload.set(PayloadObject.MemberName(key), jsonWrittenBy: write)
                }
                let value = JSONValue.array(elements.map { ["t": .string($0)] })
                if keep { tree[key] = asText ? .string(value.jsonString) : value }
            }
            var writer = JSONWriter()
            writer.write(object: tree)
            #expect("{" + String(decoding: payload.bytes, as: UTF8.self) + "}" == String(decoding: writer.bytes, as: UTF8.self))
            #expect(payload.object == tree)
        }
    }

    /// A nested value written in place into a payload that already has members, then the members after it: the
    /// in-place string and the declined member leave the others where they belong.
    @Test func writesNestedValuesInPlaceBetweenOtherMembers() {
        var data = PayloadObject()
        data.set("a", "1")
        data.set(PayloadObject.MemberName("items"), jsonTextWrittenBy: { writer in
            writer.beginArray()
            writer.nextElement()
            writer.beginObject()
            writer.member("t", "say \"hi\"\n")
            writer.endObject()
            writer.endArray()
            return true
        })
        data.set(PayloadObject.MemberName("gone"), jsonWrittenBy: { writer in
            writer.write(.array([.int(1)]))
            return false
        })
        data.set(PayloadObject.MemberName("list"), jsonWrittenBy: { writer in
            writer.write(.array([.string("x")]))
            return true
        })
        // Streamed from where a writer of its own starts: no comma owed to the array streamed before it.
        data.set(PayloadObject.MemberName("n"), jsonWrittenBy: { writer in
            writer.nextElement()
            writer.write(.int(5))
            return true
        })
        data.set("b", 2)
        #expect(String(decoding: data.bytes, as: UTF8.self) == #""a":"1","items":"[{\"t\":\"say \\\"hi\\\"\\n\"}]","list":["x"],"n":5,"b":2"#)
        #expect(data["items"] == .string(#"[{"t":"say \"hi\"\n"}]"#))
        #expect(data["list"] == .array([.string("x")]))
        #expect(data.contains("gone") == false)
        #expect(data.firstNonStringKey == "list")
        // Set again: written aside and put in its place.
        data.set(PayloadObject.MemberName("items"), jsonTextWrittenBy: { writer in
            writer.write(.int(7))
            return true
        })
        #expect(String(decoding: data.bytes, as: UTF8.self) == #""a":"1","items":"7","list":["x"],"n":5,"b":2"#)
    }
}
