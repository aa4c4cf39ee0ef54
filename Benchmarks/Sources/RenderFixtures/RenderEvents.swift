public import PipelineCore

/// The events the render suite measures: one per template and platform, 1-1.5 KB of compact JSON.
///
/// They follow `Config/samples/*.json` (same fields and values), made heavier the way production
/// traffic is: `recipient.attributes` with `{{placeholders}}` in the texts, a five-item carousel,
/// two buttons plus remind-later, a timer with alternate content, options and custom keys. They
/// are embedded as literals so the benchmark does not depend on the working directory; every
/// event is checked to render without issue or warning before anything is measured.
public enum RenderEvents {
    /// A benchmark case: a name like `basic/fcm` and the event's compact UTF-8 bytes.
    public struct Event: Sendable {
        /// `<template>/<platform>`.
        public let name: String
        /// The compact UTF-8 JSON of the event.
        public let bytes: [UInt8]
    }

    /// All six events, in template × platform order.
    public static let all: [Event] = templates.flatMap { template, content in
        Platform.allCases.map { platform in
            Event(name: "\(template)/\(platform)", bytes: makeEvent(template: template, platform: platform, content: content))
        }
    }

    /// The event for `template` on `platform`.
    public static func event(_ template: String, _ platform: Platform) -> Event {
        guard let event = all.first(where: { $0.name == "\(template)/\(platform)" }) else {
            fatalError("no benchmark event \(template)/\(platform)")
        }
        return event
    }

    /// Wraps `content` in a `push.requested` envelope and minifies it (Kafka events are compact).
    private static func makeEvent(template: String, platform: Platform, content: String) -> [UInt8] {
        let token = platform == .fcm
            ? "fGx3kP0qRzC:APA91bH4nQ7vX2mL8sT1wY6eJ0rK5uD9cB3aF7gH2iN4oP6qS8tU0vW1xY3zA5bC7dE9f"
            : "7f3c9a1e5b2d4f6a8c0e2b4d6f8a0c2e4b6d8f0a2c4e6b8d0f2a4c6e8b0d2f4a"
        let json = """
            {
              "specVersion": "1",
              "type": "push.requested",
              "eventId": "6f1c2b7e-3d4a-4e5f-9a8b-7c6d5e4f3a2b",
              "occurredAt": "2023-12-20T10:00:00Z",
              "campaignId": "winter-sale-2023",
              "campaignVersion": 3,
              "template": "\(template)",
              "recipient": {
                "id": "user-8812734",
                "platform": "\(platform)",
                "token": "\(token)",
                "attributes": {"firstName": "Ada", "lastName": "Lovelace", "city": "London", "tier": "gold"}
              },
              "options": {"collapseKey": "winter-sale", "priority": "high", "ttlSeconds": 3600},
              "content": \(content),
              "custom": {"campaign_source": "crm", "experiment_arm": "b"}
            }
            """
        do throws(JSONParseError) {
            return try JSONValue(parsing: Array(json.utf8)).encoded()
        } catch {
            fatalError("benchmark event \(template)/\(platform) is not JSON: \(error)")
        }
    }

    private static let templates: [(String, String)] = [("basic", basic), ("carousel", carousel), ("timer", timer)]

    private static let basic = """
        {
          "version": "1",
          "title": "{{firstName}}, game request",
          "subtitle": "From Bob in {{city}}",
          "body": "Shall we play a game, {{firstName}}?",
          "sound": "bingBong",
          "smallIcon": "ic_knight",
          "largeIcon": "https://pictureofchess.com/logo.png",
          "badge": 1,
          "threadId": "games",
          "notificationPriority": "PRIORITY_LOW",
          "channelId": "a3b80ef",
          "image": "https://pictureofchess.com/board.png",
          "link": {"uri": "https://chess.com/games", "type": "WEBURL"},
          "buttons": [
            {"label": "accept", "uri": "https://chess.com/games/552", "type": "DEEPLINK"},
            {"label": "decline", "uri": "", "type": "OPENAPP"}
          ],
          "tag": "24",
          "sticky": true,
          "ticker": "Play a game?",
          "expandedBody": "Bob wants to play a game of chess with you, {{firstName}}. Click 'accept' to start!",
          "colors": {"title": "AABBCC", "body": "00EE00", "smallIcon": "123456", "background": "000000"},
          "remindLater": {"label": "Remind me", "at": "2023-12-25T00:00:00Z"}
        }
        """

    private static let carousel = """
        {
          "version": "1",
          "title": "New shoes for you, {{firstName}}!",
          "body": "Hot deals in {{city}}!",
          "sound": "sneakerSqueaker",
          "smallIcon": "chat_bubble",
          "link": {"uri": "https://sneakerland.com/newReleases", "type": "WEBURL"},
          "expandedBody": "New inventory you'll like, {{firstName}}.",
          "colors": {"title": "AABBCC", "body": "00EE00", "smallIcon": "123456", "background": "000000"},
          "mode": "auto",
          "layout": "default",
          "items": [
            {"image": "https://sneakerland.com/img/shoe1.png", "text": "Shoe 1 for {{firstName}}", "uri": "https://sneakerland.com/p/shoe1"},
            {"image": "https://sneakerland.com/img/shoe2.png", "text": "Shoe 2 by Lame Sneakers", "uri": "https://sneakerland.com/p/shoe2"},
            {"image": "https://sneakerland.com/img/shoe3.png", "text": "Shoe 3 by Average Sneakers"},
            {"image": "https://sneakerland.com/img/shoe4.png", "text": "Shoe 4, {{tier}} members only"},
            {"image": "https://sneakerland.com/img/shoe5.png", "text": "Shoe 5 by Cool Sneakers", "uri": "https://sneakerland.com/p/shoe5"}
          ]
        }
        """

    private static let timer = """
        {
          "version": "1",
          "title": "Limited offer, {{firstName}}!",
          "subtitle": "Click for more information",
          "body": "Don't miss out on your chance for deep discounts.",
          "expandedTitle": "The sale is on in {{city}}!",
          "expandedBody": "These discounts won't be around for long, {{firstName}}: tap to check out the sale.",
          "alternate": {
            "title": "You missed out on the sale.",
            "body": "Our next flash sale will be sometime next month.",
            "expandedBody": "Sorry you missed us this time, {{firstName}}. Check back next month for deep discounts.",
            "image": "https://bigboxretailer.com/sale_ended.png"
          },
          "sound": "chaChing",
          "icon": "ic_dollar",
          "badge": 1,
          "threadId": "sales",
          "notificationPriority": "PRIORITY_LOW",
          "image": "https://bigboxretailer.com/sale.png",
          "link": {"uri": "https://bigboxretailer.com/sale", "type": "WEBURL"},
          "colors": {"title": "AABBCC", "body": "00EE00", "smallIcon": "123456", "background": "000000", "timer": "FFFFFF"},
          "timer": {"endsAt": "2023-12-25T00:00:00Z"}
        }
        """
}
