@testable import PipelineCore
import Testing

@Suite("StandardFields: texts read, changed and written")
struct StandardFieldsTests {
    /// Plain text (kept in the event's bytes), escaped text, personalized text, and a link.
    static let content = #"""
        {"title":"Hi {{name}}","body":"Line\none","subtitle":"Plain","expandedTitle":"Big","image":"https://i/1.png",
         "link":{"uri":"https://l/1","type":"WEBURL"},"sound":"ding","threadId":"t1","tag":"7","channelId":"c"}
        """#

    static func read(_ platform: Platform = .fcm) throws -> StandardFields {
        let reader = try ContentTextTests.reader(content)
        return StandardFields(reading: reader, platform: platform, features: [.image, .expandedBodyOnAPNs], guidelines: .fcm)
    }

    @Test func readsEachKindOfText() throws {
        let standard = try Self.read()
        #expect(standard.title?.string == "Hi Ada")
        #expect(standard.body?.string == "Line\none")
        #expect(standard.subtitle?.string == "Plain")
        #expect(standard.link?.uri.string == "https://l/1")
        #expect(standard.link?.type == .webURL)
        #expect(standard.expandedBody == nil)
        #expect(standard.icon == nil)
    }

    @Test func fieldsSetAfterReadingAreWritten() throws {
        var standard = try Self.read()
        standard.title = ContentText("New title")
        standard.subtitle = "Sub"
        standard.image = nil
        standard.expandedBody = "More"
        standard.link?.uri = "https://l/2"
        standard.sound = standard.threadId  // a text kept in the event, moved to another field
        #expect(standard.title?.string == "New title")
        #expect(standard.link?.uri.string == "https://l/2")
        #expect(standard.link?.type == .webURL)
        #expect(standard.sound?.string == "t1")

        let data = standard.fcmData(templateType: "basic")
        #expect(data["adb_title"] == .string("New title"))
        #expect(data["adb_body"] == .string("Line\none"))
        #expect(data["adb_body_ex"] == .string("More"))
        #expect(data["adb_image"] == nil)
        #expect(data["adb_uri"] == .string("https://l/2"))
        #expect(data["adb_a_type"] == .string("WEBURL"))
        #expect(data["adb_sound"] == .string("t1"))
        #expect(data["adb_channel_id"] == .string("c"))

        let aps = standard.apnsAps()
        #expect(aps["alert"] == .object(["title": .string("New title"), "subtitle": .string("Sub"), "body": .string("Line\none")]))
        #expect(aps["sound"] == .string("t1"))
        #expect(aps["thread-id"] == .string("t1"))
        let fields = standard.apnsFields(templateType: "basic")
        #expect(fields["adb_title_ex"] == .string("Big"))
        #expect(fields["adb_body_ex"] == .string("More"))
        #expect(fields["adb_uri"] == .string("https://l/2"))
    }

    @Test func removingTheLinkRemovesItsType() throws {
        var standard = try Self.read()
        standard.link = nil
        #expect(standard.link == nil)
        let data = standard.fcmData(templateType: "basic")
        #expect(data["adb_uri"] == nil)
        #expect(data["adb_a_type"] == nil)
        #expect(data["adb_body_ex"] == .string("Line\none"))  // falls back to the body
    }
}
