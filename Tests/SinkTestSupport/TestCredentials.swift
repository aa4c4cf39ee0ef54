public import Crypto
public import _CryptoExtras
import Foundation

/// Keys and credentials that tests generate for the FCM and APNs sinks.
///
/// Verify the tokens the sinks sign with the public halves, through ``JWTVerification``.
public enum TestCredentials {
    /// Makes a Google service-account JSON key file with a fresh RSA-2048 key.
    ///
    /// The JSON has the fields of a real key file: `type` ("service_account"), `project_id`, `private_key_id`,
    /// `private_key` (a PKCS#8 PEM, "-----BEGIN PRIVATE KEY-----"), `client_email`, `client_id` ("1") and `token_uri`.
    ///
    /// - Parameters:
    ///   - projectID: The `project_id`.
    ///   - clientEmail: The `client_email`, which the sink puts in the assertion's `iss` claim.
    ///   - tokenURI: The `token_uri`, usually a ``LocalHTTPServer``'s `baseURL` plus "/token".
    /// - Returns: The file's contents, its `private_key_id` (the JWT `kid`) and the public key to verify assertions.
    /// - Throws: ``SinkTestSupportError`` if the key could not be made or the JSON could not be encoded.
    public static func makeServiceAccount(
        projectID: String,
        clientEmail: String,
        tokenURI: String
    ) throws -> (json: String, privateKeyID: String, publicKey: _RSA.Signing.PublicKey) {
        let key: _RSA.Signing.PrivateKey
        do {
            key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        } catch {
            throw SinkTestSupportError("could not make an RSA-2048 key: \(error)")
        }
        let privateKeyID = randomHex(byteCount: 20)
        let fields: [String: String] = [
            "type": "service_account",
            "project_id": projectID,
            "private_key_id": privateKeyID,
            "private_key": endingWithNewline(key.pkcs8PEMRepresentation),
            "client_email": clientEmail,
            "client_id": "1",
            "token_uri": tokenURI,
        ]
        let data: Data
        do {
            data = try JSONSerialization.data(
                withJSONObject: fields,
                options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            )
        } catch {
            throw SinkTestSupportError("could not encode the service-account JSON: \(error)")
        }
        return (json: String(decoding: data, as: UTF8.self), privateKeyID: privateKeyID, publicKey: key.publicKey)
    }

    /// Makes an APNs auth key like the .p8 file Apple gives out.
    ///
    /// - Returns: The key as PKCS#8 PEM ("-----BEGIN PRIVATE KEY-----") of a P-256 key, and its public key.
    public static func makeAPNsKey() -> (p8: String, publicKey: P256.Signing.PublicKey) {
        let key = P256.Signing.PrivateKey()
        return (p8: endingWithNewline(key.pemRepresentation), publicKey: key.publicKey)
    }

    /// Real key files end the PEM with a newline.
    private static func endingWithNewline(_ pem: String) -> String {
        pem.hasSuffix("\n") ? pem : pem + "\n"
    }

    private static func randomHex(byteCount: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef")
        var text = ""
        for _ in 0..<byteCount {
            let byte = UInt8.random(in: .min ... .max, using: &generator)
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return text
    }
}
