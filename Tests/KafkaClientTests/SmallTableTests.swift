@testable import KafkaClient
import Testing

/// The Kafka layer's per-message lookups (topic handles by name, names by handle) give what a dictionary gives, below
/// the size at which keys are compared one by one and past it.
@Suite("Small tables")
struct SmallTableTests {
    @Test(arguments: [0, 1, 15, 16, 17, 40])
    func everyEntryIsFoundAndNoOther(_ count: Int) {
        var table = SmallTable<String, Int>()
        var dictionary: [String: Int] = [:]
        for index in 0..<count {
            let key = "topic.\(index)"
            #expect(table[key] == nil)
            table.add(index * 10, for: key)
            dictionary[key] = index * 10
            // Every key added so far, looked up with a String of its own (not the instance the table holds).
            for earlier in 0...index {
                #expect(table[String(decoding: Array("topic.\(earlier)".utf8), as: UTF8.self)] == dictionary["topic.\(earlier)"])
            }
        }
        #expect(table.count == count)
        #expect(table.allValues == (0..<count).map { $0 * 10 })
        #expect(table["topic.\(count)"] == nil)
        #expect(table["Topic.0"] == nil)
    }
}
