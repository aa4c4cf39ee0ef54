import NIOHTTP1
@testable import PlatformSinks
import PushSinks
import Testing

/// Which dead-token answers show the sink's configuration right (``SinkFailure/confirmsConfiguration``): only those
/// that say a token once known to the sink's environment, topic or project is no longer registered. The others are
/// what a wrong configuration gives for every token, and count towards the sink's refusal limit.
@Suite("Dead-token answers that show the configuration right")
struct TokenAnswerClassificationTests {
    static func reply(_ status: Int, _ body: String) -> HTTPReply {
        HTTPReply(status: status, headers: HTTPHeaders(), body: Array(body.utf8))
    }

    @Test(arguments: [
        (410, #"{"reason":"Unregistered","timestamp":1763800000123}"#, true),
        (410, #"{"reason":"ExpiredToken"}"#, true),
        (400, #"{"reason":"BadDeviceToken"}"#, false),
        (400, #"{"reason":"DeviceTokenNotForTopic"}"#, false),
    ])
    func apns(status: Int, body: String, confirms: Bool) {
        let failure = APNsSender.classify(Self.reply(status, body))
        #expect(failure.code == .invalidToken)
        #expect(failure.confirmsConfiguration == confirms, "\(failure)")
    }

    @Test(arguments: [
        (404, "UNREGISTERED", "NOT_FOUND", true),
        (403, "SENDER_ID_MISMATCH", "PERMISSION_DENIED", false),
        (400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", false),
    ])
    func fcm(status: Int, errorCode: String, statusName: String, confirms: Bool) {
        let body = #"{"error":{"code":\#(status),"message":"The registration token is not a valid FCM registration token","status":"\#(statusName)","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#(errorCode)"}]}}"#
        let failure = FCMSender.classify(Self.reply(status, body))
        #expect(failure.code == .invalidToken, "\(failure)")
        #expect(failure.confirmsConfiguration == confirms, "\(failure)")
    }
}
