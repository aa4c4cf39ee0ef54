public import Crypto
public import _CryptoExtras
import Foundation

/// A compact JWT whose signature verified.
public struct VerifiedJWT: Sendable {
    /// The decoded header as JSON text.
    public let headerJSON: String
    /// The decoded claims (payload) as JSON text.
    public let claimsJSON: String

    private let header: [String: JSONValue]
    private let claims: [String: JSONValue]

    fileprivate init(headerJSON: String, header: [String: JSONValue], claimsJSON: String, claims: [String: JSONValue]) {
        self.headerJSON = headerJSON
        self.header = header
        self.claimsJSON = claimsJSON
        self.claims = claims
    }

    /// A string header field, such as "alg", "kid" or "typ".
    ///
    /// - Parameter key: The field name.
    /// - Returns: The value, or nil if the field is missing or not a string.
    public func headerString(_ key: String) -> String? {
        header[key]?.string
    }

    /// A string claim, such as "iss", "scope" or "aud".
    ///
    /// - Parameter key: The claim name.
    /// - Returns: The value, or nil if the claim is missing or not a string.
    public func claimString(_ key: String) -> String? {
        claims[key]?.string
    }

    /// An integer claim, such as "iat" or "exp".
    ///
    /// - Parameter key: The claim name.
    /// - Returns: The value, or nil if the claim is missing or not an integer.
    public func claimInteger(_ key: String) -> Int? {
        claims[key]?.integer
    }
}

/// Verifies the JWTs the sinks sign, with the public halves of ``TestCredentials``' keys.
public enum JWTVerification {
    /// Verifies an RS256 compact JWT (RSASSA-PKCS1-v1_5 with SHA-256), as used for Google OAuth assertions.
    ///
    /// - Parameters:
    ///   - token: The compact token, "header.claims.signature" in base64url.
    ///   - publicKey: The RSA public key that should have signed it.
    /// - Returns: The decoded header and claims.
    /// - Throws: ``SinkTestSupportError`` saying why, if the token is malformed, its header `alg` is not "RS256",
    ///   or the signature does not verify.
    public static func verifyRS256(_ token: String, publicKey: _RSA.Signing.PublicKey) throws -> VerifiedJWT {
        let parts = try CompactJWT(token, expectedAlgorithm: "RS256")
        let signature = _RSA.Signing.RSASignature(rawRepresentation: parts.signature)
        let digest = SHA256.hash(data: parts.signingInput)
        guard publicKey.isValidSignature(signature, for: digest, padding: .insecurePKCS1v1_5) else {
            throw SinkTestSupportError("the RS256 signature does not verify with the given public key")
        }
        return parts.verified
    }

    /// Verifies an ES256 compact JWT (ECDSA P-256 with SHA-256, a 64-byte r||s signature), as used for APNs.
    ///
    /// - Parameters:
    ///   - token: The compact token, "header.claims.signature" in base64url.
    ///   - publicKey: The P-256 public key that should have signed it.
    /// - Returns: The decoded header and claims.
    /// - Throws: ``SinkTestSupportError`` saying why, if the token is malformed, its header `alg` is not "ES256",
    ///   the signature is not 64 bytes, or it does not verify.
    public static func verifyES256(_ token: String, publicKey: P256.Signing.PublicKey) throws -> VerifiedJWT {
        let parts = try CompactJWT(token, expectedAlgorithm: "ES256")
        guard parts.signature.count == 64 else {
            throw SinkTestSupportError(
                "an ES256 signature must be 64 bytes (r||s), but this one is \(parts.signature.count) bytes"
                    + " (a DER-encoded signature?)"
            )
        }
        let signature: P256.Signing.ECDSASignature
        do {
            signature = try P256.Signing.ECDSASignature(rawRepresentation: parts.signature)
        } catch {
            throw SinkTestSupportError("the ES256 signature is not a valid r||s pair: \(error)")
        }
        guard publicKey.isValidSignature(signature, for: SHA256.hash(data: parts.signingInput)) else {
            throw SinkTestSupportError("the ES256 signature does not verify with the given public key")
        }
        return parts.verified
    }
}

/// The three parts of a compact JWT, decoded and checked for shape, before the signature is checked.
private struct CompactJWT {
    let verified: VerifiedJWT
    let signingInput: Data
    let signature: Data

    init(_ token: String, expectedAlgorithm: String) throws {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw SinkTestSupportError("a compact JWT has 3 dot-separated parts, but this one has \(parts.count)")
        }
        let headerData = try Self.decodeBase64URL(parts[0], part: "header")
        let claimsData = try Self.decodeBase64URL(parts[1], part: "claims")
        signature = try Self.decodeBase64URL(parts[2], part: "signature")
        signingInput = Data("\(parts[0]).\(parts[1])".utf8)

        let header = try Self.decodeObject(headerData, part: "header")
        let claims = try Self.decodeObject(claimsData, part: "claims")
        guard let algorithm = header["alg"]?.string else {
            throw SinkTestSupportError("the JWT header has no string \"alg\" field")
        }
        guard algorithm == expectedAlgorithm else {
            throw SinkTestSupportError("the JWT header says alg \"\(algorithm)\", expected \"\(expectedAlgorithm)\"")
        }
        verified = VerifiedJWT(
            headerJSON: String(decoding: headerData, as: UTF8.self),
            header: header,
            claimsJSON: String(decoding: claimsData, as: UTF8.self),
            claims: claims
        )
    }

    private static func decodeBase64URL(_ text: Substring, part: String) throws -> Data {
        let allowed = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
        guard !text.isEmpty, text.allSatisfy({ allowed.contains($0) }), text.count % 4 != 1 else {
            throw SinkTestSupportError("the JWT \(part) is not unpadded base64url text")
        }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64) else {
            throw SinkTestSupportError("the JWT \(part) is not valid base64url")
        }
        return data
    }

    private static func decodeObject(_ data: Data, part: String) throws -> [String: JSONValue] {
        do {
            return try JSONDecoder().decode([String: JSONValue].self, from: data)
        } catch {
            throw SinkTestSupportError(
                "the JWT \(part) is not a JSON object: \(String(decoding: data, as: UTF8.self)) (\(error))"
            )
        }
    }
}
