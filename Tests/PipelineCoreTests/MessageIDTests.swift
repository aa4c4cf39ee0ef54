@testable import PipelineCore
import Crypto
import TestSupport
import Testing

@Suite("SHA-1 and message ids")
struct MessageIDTests {
    func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    @Test(arguments: [
        ("", "da39a3ee5e6b4b0d3255bfef95601890afd80709"),
        ("abc", "a9993e364706816aba3e25717850c26c9cd0d89d"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "84983e441c3bd26ebaae4aa1f95129e5e54670f1"),
        ("The quick brown fox jumps over the lazy dog", "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12"),
    ])
    func sha1MatchesStandardVectors(_ message: String, _ digest: String) {
        #expect(hex(SHA1.hash(Array(message.utf8))) == digest)
    }

    @Test func sha1OfAMillionAs() {
        #expect(hex(SHA1.hash([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000))) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f")
    }

    /// Fed in pieces (split anywhere, across block boundaries too), the hash is swift-crypto's SHA-1 of the whole,
    /// for every length around the padding's boundaries.
    @Test func sha1FedInPiecesMatchesSwiftCrypto() {
        var rng = SeededGenerator(seed: 0x5_4A1)
        for length in Array(0...130) + [191, 192, 193, 300, 1_000] {
            let message = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            var sha = SHA1()
            var start = 0
            while start < message.count {
                let end = min(message.count, start + Int.random(in: 0...70, using: &rng))
                if end - start == 1, Bool.random(using: &rng) {
                    sha.update(byte: message[start])
                } else {
                    sha.update(message[start..<end].span)
                }
                start = end
            }
            let digest = sha.finalize()
            #expect(hex(digest.indices.map { digest[$0] }) == hex(Array(Insecure.SHA1.hash(data: message))), "length \(length)")
        }
    }

    @Test func uuidV5MatchesRFCExample() {
        // The DNS namespace and "python.org" (a widely published v5 example).
        let dns: [UInt8] = [0x6B, 0xA7, 0xB8, 0x10, 0x9D, 0xAD, 0x11, 0xD1, 0x80, 0xB4, 0x00, 0xC0, 0x4F, 0xD4, 0x30, 0xC8]
        #expect(MessageID.uuidV5(namespace: dns, name: Array("python.org".utf8)) == "886313e1-3b8a-5372-9b90-0c9aee199e5d")
    }

    @Test func messageIdIsDeterministicPerEventAndPlatform() {
        let fcm = MessageID.make(eventId: "7f3c2a9e", platform: .fcm)
        #expect(fcm == MessageID.make(eventId: "7f3c2a9e", platform: .fcm))
        #expect(fcm != MessageID.make(eventId: "7f3c2a9e", platform: .apns))
        #expect(fcm != MessageID.make(eventId: "7f3c2a9f", platform: .fcm))
        #expect(fcm.count == 36)
        #expect(Array(fcm)[14] == "5", "version 5")
        #expect("89ab".contains(Array(fcm)[19]), "RFC 4122 variant")
    }
}
